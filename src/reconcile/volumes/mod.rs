//! Provider volumes in `vps.provider-resources`: a block volume or a share is made once (by the
//! name derived from its id, so a lost answer is found, never made twice), then only read; one
//! gone at the provider goes to error for good. Each run does at most one provider step: the
//! create, a running action's poll, a resize, one attachment's attach or detach, the delete, or
//! the hourly drift read. Provider actions never block a run: it looks again 5 s later.
mod attachments;
mod create;
mod resize;

use sea_orm::{ColumnTrait, EntityTrait, QueryFilter};

use super::{ACTION_POLL_MS, ERROR_RETRY_MS, Next, RETRY_LATER_MS, Run, again_if_changed, is_failure, retry_after};
use crate::error::{Error, Result};
use crate::provider::{
    ActionStatus, Actions, BlockVolume, Instances, Provider, ProviderError, Refusal, Share, ShareAction, VolumeAction,
    VolumeActionKind, VolumeCreate, Volumes, ownership_tag,
};
use crate::service::rows;
use crate::service::volumes::{self as svc, live_attachments, share_tag};
use crate::store::entity::{instance, provider_snapshot, provider_volume as volume, volume_attachment as attachment};
use crate::store::state::{Desired, State, VolumeKind};
use crate::store::status::StatusWrite;
use crate::store::{queue, quota};
use attachments::*;
use create::*;
use resize::*;

/// The volume fields a run writes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Observed {
    pub state: State,
    pub provider_id: Option<String>,
    pub observed_size_gib: Option<i64>,
    pub device: Option<String>,
    pub mount_source: Option<String>,
    pub create_attempts: i32,
    pub lost: bool,
    pub action_id: Option<String>,
    pub message: Option<String>,
}

impl Observed {
    fn of(v: &volume::Model) -> Self {
        Observed {
            state: v.state,
            provider_id: v.provider_id.clone(),
            observed_size_gib: v.observed_size_gib,
            device: v.device.clone(),
            mount_source: v.mount_source.clone(),
            create_attempts: v.create_attempts,
            lost: v.lost,
            action_id: v.action_id.clone(),
            message: v.message.clone(),
        }
    }

    fn state(mut self, state: State, message: Option<String>) -> Self {
        self.state = state;
        self.message = message;
        self
    }

    fn said(mut self, message: impl Into<String>) -> Self {
        self.message = Some(message.into());
        self
    }

    /// The row's write: what the provider holds and did as facts, the state and message as
    /// decided at the generation the run read.
    fn status(&self, v: &volume::Model) -> StatusWrite {
        StatusWrite::of(&v.id, v.generation)
            .fact(volume::Column::ProviderId, self.provider_id.clone())
            .fact(volume::Column::ObservedSizeGib, self.observed_size_gib)
            .fact(volume::Column::Device, self.device.clone())
            .fact(volume::Column::MountSource, self.mount_source.clone())
            .fact(volume::Column::CreateAttempts, self.create_attempts)
            .fact(volume::Column::Lost, self.lost)
            .fact(volume::Column::ActionId, self.action_id.clone())
            .decided(volume::Column::Message, self.message.clone())
            .state(self.state)
    }
}

/// The attachment fields a run writes.
#[derive(Clone, Debug, PartialEq, Eq)]
struct AttachmentObserved {
    state: State,
    action_id: Option<String>,
    message: Option<String>,
}

impl AttachmentObserved {
    fn of(a: &attachment::Model) -> Self {
        AttachmentObserved { state: a.state, action_id: a.action_id.clone(), message: a.message.clone() }
    }

    fn state(mut self, state: State, message: Option<String>) -> Self {
        self.state = state;
        self.message = message;
        if state == State::Ready || state == State::Deleted {
            self.action_id = None;
        }
        self
    }
}

/// The device path the guest sees a DigitalOcean block volume at.
pub fn device_path(provider_name: &str) -> String {
    format!("/dev/disk/by-id/scsi-0DO_Volume_{provider_name}")
}

/// The description this deployment writes on the volumes it makes.
pub fn marker(deployment: &str, volume_id: &str) -> String {
    format!("vps-graph {deployment} {volume_id}")
}

struct Ctx<'a> {
    run: &'a Run<'a>,
    volumes: &'a dyn Volumes,
    actions: &'a dyn Actions,
    instances: &'a dyn Instances,
    tag: String,
    /// When a volume becomes ready: `Now` if an attachment or a resize waits, else the drift
    /// read (a volume just read needs no second read now).
    once_ready: Next,
}

impl Ctx<'_> {
    /// When to look again at a volume just seen made: now when a resize asked meanwhile (while
    /// the create was in flight, or its answer lost) is still owed, else as the run planned.
    fn once_made(&self, v: &volume::Model, seen: &Observed) -> Next {
        let owed = seen.observed_size_gib.is_some_and(|size| size < v.size_gib) && v.desired_state == Desired::Present;
        if owed { Next::Now } else { self.once_ready }
    }
}

pub async fn run(run: &Run<'_>) -> Result<Next> {
    let db = &run.services.db;
    let Some(v) = volume::Entity::find_by_id(run.resource_id().to_owned()).one(db).await? else {
        return Ok(Next::Done);
    };
    if v.state == State::Deleted {
        return Ok(Next::Done);
    }
    let provider = run.provider(&v.provider_account_id).await?;
    let Provider { volumes: Some(volumes), actions: Some(actions), instances: Some(instances), .. } = provider.as_ref()
    else {
        return Err(Error::internal(format!("account {} offers no volumes", v.provider_account_id)));
    };
    let ctx = Ctx {
        run,
        volumes: volumes.as_ref(),
        actions: actions.as_ref(),
        instances: instances.as_ref(),
        tag: ownership_tag(&run.services.deployment),
        once_ready: Next::Drift,
    };
    let attached = live_attachments(db, &v.id).await?;
    if v.delete_with_instance && v.desired_state == Desired::Present && machine_going(db, &attached).await? {
        // It goes with its machine: no provider call meanwhile (an ensure by name could make
        // again a volume the machine's delete already took). The instance wakes it when done.
        return Ok(Next::After(RETRY_LATER_MS));
    }
    let restoring = v.source_snapshot_id.is_some() && v.provider_id.is_none();
    let ctx =
        Ctx { once_ready: if restoring || attached.iter().any(needs_work) { Next::Now } else { Next::Drift }, ..ctx };
    let unwanted = attached.iter().find(|a| a.desired_state == Desired::Absent);
    if let Some(a) = unwanted.filter(|_| v.lost || v.provider_id.is_none()) {
        // Nothing at the provider to act on (lost, or never made, so never attached there):
        // an unwanted attachment finishes without a call.
        let detached = AttachmentObserved::of(a).state(State::Deleted, None);
        return write_attachment(run, &v, a, detached, Next::Now).await;
    }
    if v.desired_state == Desired::Absent && attached.is_empty() {
        return delete(&ctx, &v).await;
    }
    if v.lost {
        return Ok(Next::Drift);
    }
    if v.provider_id.is_none() {
        return create(&ctx, &v).await;
    }
    if v.action_id.is_some() {
        return follow_action(&ctx, &v).await;
    }
    if v.state == State::Pending || v.state == State::Error {
        return settle_created(&ctx, &v).await;
    }
    // Detaches before a resize, so a resize the provider keeps refusing never keeps a volume
    // from being detached (and deleted).
    if let Some(a) = unwanted {
        return converge_attachment(&ctx, &v, a).await;
    }
    if v.observed_size_gib.is_some_and(|seen| seen < v.size_gib) && v.desired_state == Desired::Present {
        return resize(&ctx, &v).await;
    }
    if let Some(a) = next_attach(db, &attached).await? {
        return converge_attachment(&ctx, &v, a).await;
    }
    drift(&ctx, &v, &attached).await
}

/// Whether an instance the volume is wanted on is being deleted.
async fn machine_going(db: &sea_orm::DatabaseConnection, attached: &[attachment::Model]) -> Result<bool> {
    let on: Vec<String> =
        attached.iter().filter(|a| a.desired_state == Desired::Present).map(|a| a.instance_id.clone()).collect();
    if on.is_empty() {
        return Ok(false);
    }
    let going = instance::Entity::find()
        .filter(instance::Column::Id.is_in(on))
        .filter(instance::Column::DesiredState.eq(Desired::Absent))
        .filter(instance::Column::State.ne(State::Deleted))
        .one(db)
        .await?;
    Ok(going.is_some())
}

/// The attach to work on: one whose instance is ready before one still waiting for its
/// instance, so one instance that never becomes ready does not hold back the others.
async fn next_attach<'a>(
    db: &sea_orm::DatabaseConnection,
    attached: &'a [attachment::Model],
) -> Result<Option<&'a attachment::Model>> {
    let waiting: Vec<&attachment::Model> =
        attached.iter().filter(|a| a.desired_state == Desired::Present && needs_work(a)).collect();
    if waiting.len() <= 1 {
        return Ok(waiting.first().copied());
    }
    let ids: Vec<String> = waiting.iter().map(|a| a.instance_id.clone()).collect();
    let ready: Vec<String> = instance::Entity::find()
        .filter(instance::Column::Id.is_in(ids))
        .filter(instance::Column::State.eq(State::Ready))
        .all(db)
        .await?
        .into_iter()
        .map(|i| i.id)
        .collect();
    Ok(waiting.iter().find(|a| ready.contains(&a.instance_id)).or(waiting.first()).copied())
}

fn needs_work(a: &attachment::Model) -> bool {
    match a.desired_state {
        Desired::Absent => a.state != State::Deleted,
        _ => a.state != State::Ready,
    }
}

/// A provider error while looking or acting: wait and say why, or show a refusal as an error.
fn failed(v: &volume::Model, err: &ProviderError) -> (Observed, Next) {
    let now = Observed::of(v);
    if is_failure(err) {
        return (now.state(State::Error, Some(err.message().to_owned())), Next::After(ERROR_RETRY_MS));
    }
    (now.said(err.message()), retry_after(err))
}

fn lost(v: &volume::Model) -> (Observed, Next) {
    let message = "the volume was deleted at the provider outside vps-graph; its data is gone and it is not made again: delete it".to_owned();
    (Observed { lost: true, action_id: None, ..Observed::of(v).state(State::Error, Some(message)) }, Next::Drift)
}

async fn delete(ctx: &Ctx<'_>, v: &volume::Model) -> Result<Next> {
    let run = ctx.run;
    let provider_id = match (&v.provider_id, v.create_attempts) {
        _ if v.lost => None,
        (Some(id), _) => Some(id.clone()),
        // Never created, or refused: nothing to call.
        (None, 0) => None,
        // A create whose answer was lost: look it up by name, never create it to delete it.
        (None, _) => {
            let found = match v.kind {
                VolumeKind::Block => {
                    ctx.volumes.volume_find_by_name(&v.provider_name, &v.region).await.map(|f| f.map(Made::Block))
                }
                _ => ctx.volumes.share_find_by_name(&v.provider_name, &v.region).await.map(|f| f.map(Made::Share)),
            };
            match found {
                Ok(found) => {
                    found.filter(|m| m.is_ours(&marker(&run.services.deployment, &v.id), &ctx.tag)).map(|m| match m {
                        Made::Block(b) => b.id,
                        Made::Share(s) => s.id,
                    })
                }
                Err(err) => {
                    return write(run, v, Observed::of(v).said(err.message()), retry_after(&err)).await;
                }
            }
        }
    };
    if let Some(id) = provider_id {
        let answer = match v.kind {
            VolumeKind::Block => ctx.volumes.volume_delete(&id).await.map(drop),
            _ => match ctx.volumes.share_delete(&id, &v.region).await {
                Ok(_) => ctx.instances.tag_delete(&share_tag(&v.id)).await,
                Err(err) => Err(err),
            },
        };
        if let Err(err) = answer {
            // An attached volume (409, its Droplet just deleted) or a busy provider: again later.
            let next = if is_failure(&err) { Next::After(RETRY_LATER_MS) } else { retry_after(&err) };
            return write(run, v, Observed::of(v).said(err.message()), next).await;
        }
    }
    let observed = Observed { action_id: None, ..Observed::of(v).state(State::Deleted, None) };
    write(run, v, observed, Next::Done).await
}

/// A settled volume, read once an hour: one gone outside is lost for good; a share's ready
/// attachments are asked again (an attach is idempotent), which puts back a VPC a racing detach
/// took off.
async fn drift(ctx: &Ctx<'_>, v: &volume::Model, attached: &[attachment::Model]) -> Result<Next> {
    let id = v.provider_id.clone().unwrap_or_default();
    let seen = match v.kind {
        VolumeKind::Block => ctx.volumes.volume_get(&id).await.map(|b| b.map(|b| b.size_gib)),
        _ => ctx.volumes.share_get(&id, &v.region).await.map(|s| s.map(|s| s.size_gib)),
    };
    let observed = match seen {
        Err(_) => return Ok(Next::After(RETRY_LATER_MS)),
        Ok(None) => lost(v).0,
        Ok(Some(size)) => Observed { observed_size_gib: Some(size), ..Observed::of(v) },
    };
    if observed != Observed::of(v) {
        return write(ctx.run, v, observed, Next::Drift).await;
    }
    if v.kind != VolumeKind::Block {
        for a in attached.iter().filter(|a| a.state == State::Ready && a.desired_state == Desired::Present) {
            let Some(on) = instance::Entity::find_by_id(a.instance_id.clone()).one(&ctx.run.services.db).await? else {
                continue;
            };
            let Some(droplet) = on.provider_id.clone() else { continue };
            let (observed, _) = attach_share(ctx, v, a, &droplet).await;
            if observed != AttachmentObserved::of(a) {
                return write_attachment(ctx.run, v, a, observed, Next::Now).await;
            }
        }
    }
    Ok(Next::Drift)
}

/// The event a volume's change publishes.
fn event_type(before: &volume::Model, after: &Observed) -> &'static str {
    let grown = before.observed_size_gib.is_some_and(|was| after.observed_size_gib.is_some_and(|now| now > was));
    match (before.state, after.state) {
        (State::Ready, State::Ready) if grown => "resized",
        (b, a) if b == a => "updated",
        (State::Updating, State::Ready) => "resized",
        (_, State::Ready) => "ready",
        (_, State::Error) => "error",
        (_, State::Deleted) => "deleted",
        _ => "updated",
    }
}

/// Writes what was observed of the volume with its event, if this run still holds its lease
/// (`store::status`); a deleted volume's diskGiB is refunded in the same transaction. Nothing
/// changed: nothing written.
async fn write(run: &Run<'_>, v: &volume::Model, observed: Observed, next: Next) -> Result<Next> {
    if observed == Observed::of(v) {
        return Ok(next);
    }
    let services = run.services;
    let txn = services.begin().await?;
    rows::lock(&txn, "provider_volumes", &v.id).await?;
    let Some(written) = observed.status(v).write::<volume::Entity>(&txn, run.claimed, services.clock.now()).await?
    else {
        return Ok(Next::Now);
    };
    let made = written.state == State::Ready && v.state != State::Ready;
    if made {
        wake_snapshots(&txn, &v.id, services.clock.now_ms()).await?;
    }
    if written.state == State::Deleted {
        let holding =
            quota::Holding { tenant_id: &v.tenant_id, pool_id: &v.pool_id, quota: svc::QUOTA, resource_id: &v.id };
        quota::hold(&txn, &holding, 0).await?;
    }
    let attached = live_attachments(&txn, &v.id).await?;
    let event = svc::event(event_type(v, &Observed::of(&written)), &written, &attached);
    if made {
        services.commit_and_wake(txn, vec![event]).await?;
    } else {
        services.commit(txn, vec![event]).await?;
    }
    Ok(again_if_changed(next, v.generation, written.generation))
}

/// Snapshots asked before their volume was made wait for it: wake them once it is.
async fn wake_snapshots(txn: &sea_orm::DatabaseTransaction, volume_id: &str, now_ms: i64) -> Result<()> {
    let waiting = provider_snapshot::Entity::find()
        .filter(provider_snapshot::Column::VolumeId.eq(volume_id))
        .filter(provider_snapshot::Column::ProviderId.is_null())
        .filter(provider_snapshot::Column::DesiredState.eq(Desired::Present))
        .all(txn)
        .await?;
    for s in waiting {
        queue::wake(txn, crate::service::volumes::RECONCILER, &s.id, now_ms).await?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(names: &[&str]) -> Vec<String> {
        names.iter().map(|n| n.to_string()).collect()
    }

    #[test]
    fn a_vpc_no_tagged_droplet_is_left_in_comes_off_the_share_but_the_last_stays() {
        let cases: [(&[&str], &[&str], Option<&str>); 6] = [
            (&["a"], &[], None),
            (&["a"], &["a"], None),
            (&["a", "b"], &["a"], Some("b")),
            (&["a", "b"], &["a", "b"], None),
            (&["a", "b"], &[], Some("a")),
            (&["b"], &[], None),
        ];
        for (share, used, expected) in cases {
            assert_eq!(vpc_to_take_off(&ids(share), &ids(used)).as_deref(), expected, "{share:?} {used:?}");
        }
    }

    #[test]
    fn a_block_volume_is_seen_at_the_path_the_guest_sees() {
        assert_eq!(device_path("bc-pvol-01"), "/dev/disk/by-id/scsi-0DO_Volume_bc-pvol-01");
    }
}
