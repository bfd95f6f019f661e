//! `vps.instances`: makes and destroys Droplets. A create sends the name derived from the
//! instance id and this deployment's ownership tag, so a create whose answer was lost is found by
//! name (and something under that name without the tag is never adopted). A delete is one
//! selective destroy naming the instance's deleteWithInstance volumes (only this deployment's,
//! attached to that Droplet), or a plain delete when there is nothing to name; a Droplet whose tag
//! is gone is left running and the instance finishes as a detach. When a delete finishes, the
//! instance's attachments are no longer wanted, its deleteWithInstance volumes go to deleting,
//! and every volume it had is woken to settle.
mod aws;
mod decide;

use super::{ACTION_POLL_MS, Next, Reconciler, Run, again_if_changed};
use crate::error::Result;
use crate::provider::digitalocean::DigitalOcean;
use crate::provider::{Droplet, DropletCreate, Provider, ProviderError, ownership_tag};
use crate::store::entity::instance;
use crate::store::instances::{self as store, RECONCILER};
use crate::store::state::{Assignment, Desired, OnDelete, State};
use crate::store::status::StatusWrite;
use crate::store::{addresses as store_addresses, attachments, lock, queue, volumes as store_volumes};
use decide::{DeleteStep, waiting};

pub struct InstanceReconciler;

/// The message of an instance whose machine's delete was sent.
pub(super) const DELETE_ASKED: &str = "the machine is being deleted";

/// The instance fields a run writes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Observed {
    pub(super) state: State,
    pub(super) provider_id: Option<String>,
    pub(super) create_attempts: i32,
    pub(super) lost: bool,
    pub(super) message: Option<String>,
}

impl Observed {
    pub(super) fn of(i: &instance::Model) -> Self {
        Observed {
            state: i.state,
            provider_id: i.provider_id.clone(),
            create_attempts: i.create_attempts,
            lost: i.lost,
            message: i.message.clone(),
        }
    }

    pub(super) fn state(mut self, state: State, message: Option<String>) -> Self {
        self.state = state;
        self.message = message;
        self
    }

    /// The row's write: the machine as facts, its state and message as decided.
    fn status(&self, i: &instance::Model) -> StatusWrite {
        StatusWrite::of(&i.id, i.generation)
            .fact(instance::Column::ProviderId, self.provider_id.clone())
            .fact(instance::Column::CreateAttempts, self.create_attempts)
            .fact(instance::Column::Lost, self.lost)
            .decided(instance::Column::Message, self.message.clone())
            .state(self.state)
    }
}

#[async_trait::async_trait]
impl Reconciler for InstanceReconciler {
    fn kind(&self) -> &'static str {
        RECONCILER
    }

    async fn run(&self, run: &Run<'_>) -> Result<Next> {
        let db = &run.services.db;
        let Some(current) = store::find(db, run.resource_id()).await? else {
            return Ok(Next::Done);
        };
        if current.state == State::Deleted {
            return Ok(Next::Done);
        }
        let provider = run.provider(&current.provider_account_id).await?;
        let api = match provider.as_ref() {
            Provider::Aws(cloud) => return aws::run(run, cloud, &current).await,
            Provider::DigitalOcean(cloud) => cloud.as_ref(),
        };
        let tag = ownership_tag(&run.services.deployment);
        if current.desired_state == Desired::Absent {
            return delete(run, api, &current, &tag).await;
        }
        if current.lost {
            return Ok(Next::Drift);
        }
        let (observed, next) = match &current.provider_id {
            None => return create(run, api, &current, &tag).await,
            Some(id) => decide::looked(&current, api.droplet_get(id).await),
        };
        write(run, &current, observed, next).await
    }
}

async fn create(run: &Run<'_>, api: &DigitalOcean, current: &instance::Model, tag: &str) -> Result<Next> {
    if current.create_attempts > 0 {
        let found = api.droplet_find_by_name(&current.provider_name).await;
        if let Some((observed, next)) = decide::found_by_name(current, found, tag) {
            return write(run, current, observed, next).await;
        }
    }
    make(run, api, current, tag).await
}

/// Creates the Droplet, in the network's subnet VPC when the instance is on a network.
async fn make(run: &Run<'_>, api: &DigitalOcean, current: &instance::Model, tag: &str) -> Result<Next> {
    let vpc_id = match &current.network_id {
        None => None,
        Some(network_id) => {
            match crate::store::networks::ready_subnet_vpc(&run.services.db, network_id, &current.region).await? {
                Some(vpc) => Some(vpc),
                None => {
                    let observed =
                        Observed { message: Some("waiting for the network's subnet".into()), ..Observed::of(current) };
                    return write(run, current, observed, Next::After(ACTION_POLL_MS)).await;
                }
            }
        }
    };
    let Some(marked) = mark_create_attempt(run, current).await? else { return Ok(Next::Now) };
    let mut tags = vec![tag.to_owned()];
    tags.extend(born_with(run, &marked).await?.0);
    let request = DropletCreate {
        name: &marked.provider_name,
        region: &marked.region,
        size: &marked.size,
        image: &marked.image,
        vpc_id: vpc_id.as_deref(),
        tags: &tags,
        user_data: marked.user_data.as_deref(),
    };
    let (observed, next) = decide::created(&marked, api.droplet_create(&request).await);
    write(run, &marked, observed, next).await
}

/// Deletes the machine: one selective destroy naming the instance's deleteWithInstance volumes
/// (only ours, on that Droplet), or a plain delete when there is nothing to name. A machine
/// whose ownership tag is gone is left running: the instance finishes as a detach.
async fn delete(run: &Run<'_>, api: &DigitalOcean, current: &instance::Model, tag: &str) -> Result<Next> {
    if current.on_delete == OnDelete::Detach {
        // `onDelete: DETACH`: the machine is left running, and nothing is asked of it.
        return finish_delete(run, current, Finish::AsDetach).await;
    }
    let droplet_id = match (&current.provider_id, current.create_attempts) {
        _ if current.lost => None,
        (Some(id), _) => Some(id.clone()),
        (None, 0) => None,
        (None, _) => match api.droplet_find_by_name(&current.provider_name).await {
            Ok(found) => found.filter(|d| d.tags.iter().any(|t| t == tag)).map(|d| d.id),
            Err(err) => return write(run, current, waiting(current, err).0, Next::After(super::RETRY_LATER_MS)).await,
        },
    };
    if let Some(id) = droplet_id {
        let droplet = match decide::before_delete(current, api.droplet_get(&id).await, tag) {
            DeleteStep::Finish(finish) => return finish_delete(run, current, finish).await,
            DeleteStep::Write((observed, next)) => return write(run, current, observed, next).await,
            DeleteStep::Send(droplet) => droplet,
        };
        let named = match going_with(run, api, current, &droplet, tag).await? {
            Ok(named) => named,
            Err(err) => return write(run, current, waiting(current, err).0, Next::After(super::RETRY_LATER_MS)).await,
        };
        let asked = match named.is_empty() {
            true => api.droplet_delete(&id).await,
            false => api.droplet_destroy_with_volumes(&id, &named).await,
        };
        let (observed, next) = decide::delete_sent(current, asked);
        return write(run, current, observed, next).await;
    }
    finish_delete(run, current, Finish::Deleted).await
}

/// How an instance's delete ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Finish {
    /// The machine is gone: deleteWithInstance volumes go with it.
    Deleted,
    /// The machine is left running: every volume is only detached.
    AsDetach,
}

/// The provider ids of the deleteWithInstance volumes the machine's delete names: attached to
/// that Droplet, wanted there until the delete (not detached before it), without deletion
/// protection, and carrying this deployment's tag at the provider (a volume attached by hand is
/// never named).
async fn going_with(
    run: &Run<'_>,
    api: &DigitalOcean,
    current: &instance::Model,
    droplet: &Droplet,
    tag: &str,
) -> Result<std::result::Result<Vec<String>, ProviderError>> {
    let db = &run.services.db;
    let wanted: Vec<String> =
        attachments::wanted_on_instance(db, &current.id).await?.into_iter().map(|a| a.volume_id).collect();
    let candidates = store_volumes::going_with_instance(db, wanted).await?;
    let mut named = Vec::new();
    // A volume with deletion protection stays: the machine's delete leaves it, detached.
    for v in candidates.into_iter().filter(|v| !v.deletion_protection) {
        let Some(provider_id) = v.provider_id.filter(|id| droplet.volume_ids.contains(id)) else { continue };
        match api.volume_get(&provider_id).await {
            Ok(Some(found)) if found.tags.iter().any(|t| t == tag) => named.push(provider_id),
            Ok(_) => {}
            Err(err) => return Ok(Err(err)),
        }
    }
    Ok(Ok(named))
}

/// The instance's delete is done: it is deleted, its attachments are no longer wanted, and every
/// volume it had is woken. When its machine is gone, its deleteWithInstance volumes (not detached
/// before) go to deleting; a machine left running (`AsDetach`) only lets its volumes go.
pub(super) async fn finish_delete(run: &Run<'_>, current: &instance::Model, finish: Finish) -> Result<Next> {
    let services = run.services;
    let txn = services.begin().await?;
    let attached = attachments::live_on_instance_by_volume(&txn, &current.id).await?;
    // Volumes first, then the instance: the order the mutations take their locks in.
    for a in &attached {
        lock(&txn, "provider_volumes", &a.volume_id).await?;
    }
    // Addresses before the instance too, as an assign takes them. None can be added meanwhile
    // (an assign to an instance being deleted is refused), but one may have let go of it before
    // its lock was taken: read them again once locked.
    for a in store_addresses::on_instance(&txn, &current.id).await? {
        lock(&txn, "provider_addresses", &a.id).await?;
    }
    let assigned = store_addresses::on_instance(&txn, &current.id).await?;
    lock(&txn, "instances", &current.id).await?;
    if !queue::fence(&txn, run.claimed).await? {
        return Ok(Next::Now);
    }
    let now = services.clock.now();
    let mut events = Vec::new();
    for a in &attached {
        // A volume whose detach was asked before the instance's delete is never deleted with it.
        let wanted = a.desired_state == Desired::Present;
        if wanted {
            attachments::mark_detach(&txn, a, now).await?;
        }
        let Some(v) = store_volumes::find(&txn, &a.volume_id).await? else { continue };
        let goes = v.delete_with_instance && !v.deletion_protection && v.desired_state == Desired::Present;
        if finish == Finish::Deleted && wanted && goes {
            let going = store_volumes::mark_deleting(&txn, &v, now).await?;
            let live = store_volumes::live_attachments(&txn, &v.id).await?;
            events.push(crate::views::volumes::event("deleting", &going, &live));
        }
        queue::wake(&txn, store_volumes::RECONCILER, &a.volume_id, services.clock.now_ms()).await?;
    }
    // Its addresses let go of it and stay reserved.
    for a in &assigned {
        if a.assignment_state != Assignment::Deleting {
            events
                .push(crate::views::addresses::event("updated", &store_addresses::mark_unassign(&txn, a, now).await?));
        }
        queue::wake(&txn, store_volumes::RECONCILER, &a.id, services.clock.now_ms()).await?;
    }
    let deleted = store::mark_deleted(&txn, &current.id, now).await?;
    wake_network(&txn, current, services.clock.now_ms()).await?;
    // Its machine is gone (or, on a tenant's own account, left running): what it booked is free.
    let refunds = [(store::QUOTA, 0), (store_volumes::QUOTA, 0)];
    crate::store::quota::hold_all(&txn, &current.tenant_id, &current.pool_id, &current.id, &refunds).await?;
    events.push(crate::views::instances::event("deleted", &deleted));
    services.commit_and_wake(txn, events).await?;
    Ok(Next::Done)
}

/// Wakes the instance's network, whose firewall rules set what its machines carry (and name
/// their addresses as peers at AWS) once they are made, and again once they are gone.
async fn wake_network(txn: &sea_orm::DatabaseTransaction, current: &instance::Model, due: i64) -> Result<()> {
    match &current.network_id {
        Some(network_id) => queue::wake(txn, crate::store::networks::RECONCILER, network_id, due).await,
        None => Ok(()),
    }
}

/// What a new machine carries from birth for the network's rules (so no moment passes without
/// them), as the networks reconciler would set it: DigitalOcean tags (the network's and the
/// instance's once the network has a rule; the open egress tag when the made rules that apply
/// let nothing out), or AWS security groups (those of the made rules that apply, and the open
/// egress one as needed).
pub(super) async fn born_with(run: &Run<'_>, current: &instance::Model) -> Result<(Vec<String>, Vec<String>)> {
    use crate::views::firewall_rules::targets;
    let Some(network_id) = &current.network_id else { return Ok((Vec::new(), Vec::new())) };
    let db = &run.services.db;
    let rules = crate::store::firewall_rules::live_of(db, network_id).await?;
    let rules: Vec<_> = rules.into_iter().filter(|r| !r.lost).collect();
    if rules.is_empty() {
        return Ok((Vec::new(), Vec::new()));
    }
    let made: Vec<_> = targets::applying(&rules, Some(&current.id))
        .into_iter()
        .filter(|r| r.provider_id.is_some() && r.state != State::Error)
        .collect();
    let egress = crate::store::networks::find(db, network_id).await?.and_then(|n| n.egress_provider_id);
    let egress = egress.filter(|_| targets::needs_egress(&made));
    let mut tags = vec![targets::network_tag(network_id), targets::instance_tag(&current.id)];
    tags.extend(egress.as_ref().map(|_| targets::egress_tag(network_id)));
    let mut groups: Vec<String> = made.iter().filter_map(|r| r.provider_id.clone()).collect();
    groups.extend(egress);
    Ok((tags, groups))
}

/// Records a create attempt before the call (see `Run::mark_attempt`), so a lost answer leaves
/// a trace and the machine is looked up by name instead of made twice.
pub(super) async fn mark_create_attempt(run: &Run<'_>, current: &instance::Model) -> Result<Option<instance::Model>> {
    let (id, generation) = (&current.id, current.generation);
    run.mark_attempt::<instance::Entity>(&[("instances", id)], id, generation, instance::Column::CreateAttempts).await
}

/// Writes what was observed, with its event, if the run still holds its lease
/// (`store::status`); a newly ready instance wakes its volumes (their attachments wait on it).
pub(super) async fn write(run: &Run<'_>, current: &instance::Model, observed: Observed, next: Next) -> Result<Next> {
    if observed == Observed::of(current) {
        return Ok(next);
    }
    let services = run.services;
    let txn = services.begin().await?;
    lock(&txn, "instances", &current.id).await?;
    let Some(written) =
        observed.status(current).write::<instance::Entity>(&txn, run.claimed, services.clock.now()).await?
    else {
        return Ok(Next::Now);
    };
    let became_ready = written.state == State::Ready && current.state != State::Ready;
    if became_ready {
        let attached = attachments::live_on_instance(&txn, &current.id).await?;
        for a in attached {
            queue::wake(&txn, store_volumes::RECONCILER, &a.volume_id, services.clock.now_ms()).await?;
        }
        for a in store_addresses::on_instance(&txn, &current.id).await? {
            queue::wake(&txn, store_volumes::RECONCILER, &a.id, services.clock.now_ms()).await?;
        }
        wake_network(&txn, current, services.clock.now_ms()).await?;
    }
    let event_type = match written.state {
        s if s != current.state && (s == State::Ready || s == State::Error) => s.as_str(),
        _ => "updated",
    };
    services.commit_and_wake(txn, vec![crate::views::instances::event(event_type, &written)]).await?;
    Ok(again_if_changed(next, current.generation, written.generation))
}
