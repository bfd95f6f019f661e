//! Provider volumes in `vps.provider-resources`: a block volume or a share is made once (by the
//! name derived from its id, so a lost answer is found, never made twice), then only read; one
//! gone at the provider goes to error for good. Each run does at most one provider step: the
//! create, a running action's poll, a resize, one attachment's attach or detach, the delete, or
//! the hourly drift read. Provider actions never block a run: it looks again 5 s later.
mod attachments;
mod create;
mod decide;
mod resize;
#[cfg(test)]
pub(super) mod tests;

use super::{Next, RETRY_LATER_MS, Run, again_if_changed};
use crate::error::{Error, Result};
use crate::provider::{
    Actions, Instances, Provider, ProviderResult, ShareAction, VolumeAction, VolumeActionKind, VolumeCreate, Volumes,
    ownership_tag,
};
use crate::service::volumes as svc;
use crate::store::entity::{provider_volume as volume, volume_attachment as attachment};
use crate::store::state::{Desired, State, VolumeKind};
use crate::store::status::StatusWrite;
use crate::store::volumes::{QUOTA, RECONCILER, live_attachments, share_tag};
use crate::store::{instances, snapshots, volumes as rows};
use crate::store::{queue, quota};
use attachments::decide::AttachmentObserved;
use attachments::*;
use create::*;
use decide::{DeleteTarget, Made, Observed, Pending};
use resize::*;

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
    /// The description this deployment writes on `v` at the provider.
    fn marker(&self, v: &volume::Model) -> String {
        marker(&self.run.services.deployment, &v.id)
    }
}

pub async fn run(run: &Run<'_>) -> Result<Next> {
    let db = &run.services.db;
    let Some(v) = rows::find(db, run.resource_id()).await? else {
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
    let on = attached.iter().filter(|a| a.desired_state == Desired::Present).map(|a| a.instance_id.clone());
    instances::any_going(db, on.collect()).await
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
    let ready = instances::ready_of(db, ids).await?;
    Ok(waiting.iter().find(|a| ready.contains(&a.instance_id)).or(waiting.first()).copied())
}

fn needs_work(a: &attachment::Model) -> bool {
    match a.desired_state {
        Desired::Absent => a.state != State::Deleted,
        _ => a.state != State::Ready,
    }
}

async fn delete(ctx: &Ctx<'_>, v: &volume::Model) -> Result<Next> {
    let provider_id = match decide::delete_target(v) {
        DeleteTarget::Nothing => None,
        DeleteTarget::Known(id) => Some(id),
        DeleteTarget::LookUp => match decide::delete_found(v, find_by_name(ctx, v).await, &ctx.marker(v), &ctx.tag) {
            Ok(found) => found,
            Err((observed, next)) => return write(ctx.run, v, observed, next).await,
        },
    };
    let answer = match provider_id {
        None => Ok(()),
        Some(id) if v.kind == VolumeKind::Block => ctx.volumes.volume_delete(&id).await.map(drop),
        Some(id) => match ctx.volumes.share_delete(&id, &v.region).await {
            Ok(_) => ctx.instances.tag_delete(&share_tag(&v.id)).await,
            Err(err) => Err(err),
        },
    };
    let (observed, next) = decide::deleted(v, answer);
    write(ctx.run, v, observed, next).await
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
    let observed = match decide::drifted(v, seen) {
        Ok(observed) => observed,
        Err(next) => return Ok(next),
    };
    if observed != Observed::of(v) {
        return write(ctx.run, v, observed, Next::Drift).await;
    }
    if v.kind != VolumeKind::Block {
        for a in attached.iter().filter(|a| a.state == State::Ready && a.desired_state == Desired::Present) {
            let Some(on) = instances::find(&ctx.run.services.db, &a.instance_id).await? else {
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

/// Writes what was observed of the volume with its event, if this run still holds its lease
/// (`store::status`); a deleted volume's diskGiB is refunded in the same transaction. Nothing
/// changed: nothing written.
async fn write(run: &Run<'_>, v: &volume::Model, observed: Observed, next: Next) -> Result<Next> {
    if observed == Observed::of(v) {
        return Ok(next);
    }
    let services = run.services;
    let txn = services.begin().await?;
    crate::store::lock(&txn, "provider_volumes", &v.id).await?;
    let Some(written) = observed.status(v).write::<volume::Entity>(&txn, run.claimed, services.clock.now()).await?
    else {
        return Ok(Next::Now);
    };
    let made = written.state == State::Ready && v.state != State::Ready;
    if made {
        wake_snapshots(&txn, &v.id, services.clock.now_ms()).await?;
    }
    if written.state == State::Deleted {
        let holding = quota::Holding { tenant_id: &v.tenant_id, pool_id: &v.pool_id, quota: QUOTA, resource_id: &v.id };
        quota::hold(&txn, &holding, 0).await?;
    }
    let attached = live_attachments(&txn, &v.id).await?;
    let event = svc::event(decide::event_type(v, &Observed::of(&written)), &written, &attached);
    if made {
        services.commit_and_wake(txn, vec![event]).await?;
    } else {
        services.commit(txn, vec![event]).await?;
    }
    Ok(again_if_changed(next, v.generation, written.generation))
}

/// Snapshots asked before their volume was made wait for it: wake them once it is.
async fn wake_snapshots(txn: &sea_orm::DatabaseTransaction, volume_id: &str, now_ms: i64) -> Result<()> {
    for s in snapshots::waiting_for_volume(txn, volume_id).await? {
        queue::wake(txn, RECONCILER, &s.id, now_ms).await?;
    }
    Ok(())
}
