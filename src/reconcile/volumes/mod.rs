//! Provider volumes in `vps.provider-resources`: a block volume or a share is made once (by the
//! name derived from its id, so a lost answer is found, never made twice), then only read; one
//! gone at the provider goes to error for good. Each run does at most one provider step: the
//! create, a running action's poll, a resize, one attachment's attach or detach, the delete, or
//! the hourly drift read. Provider actions never block a run: it looks again 5 s later.
mod attachments;
mod create;
mod decide;
mod phase;
mod resize;
#[cfg(test)]
pub(super) mod tests;

use super::{Next, RETRY_LATER_MS, Run, again_if_changed};
use crate::error::{Error, Result};
use crate::provider::digitalocean::DigitalOcean;
use crate::provider::{
    Provider, ProviderResult, ShareAction, VolumeAction, VolumeActionKind, VolumeCreate, ownership_tag,
};
use crate::store::entity::{provider_volume as volume, volume_attachment as attachment};
use crate::store::queue;
use crate::store::state::{Desired, State, VolumeKind};
use crate::store::status::StatusWrite;
use crate::store::volumes::{RECONCILER, live_attachments, share_tag};
use crate::store::{instances, snapshots, volumes as rows};
use attachments::decide::AttachmentObserved;
use attachments::*;
use create::*;
use decide::{DeleteTarget, Made, Observed, Pending};
use phase::{Phase, Seen};
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
    cloud: &'a DigitalOcean,
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
    let cloud = match provider.as_ref() {
        Provider::DigitalOcean(cloud) => cloud.as_ref(),
        Provider::Aws(_) => return Err(super::not_offered("volumes", &v.provider_account_id)),
    };
    let attached = live_attachments(db, &v.id).await?;
    let ready_instances = ready_instances(db, &attached).await?;
    let seen = Seen {
        attached: &attached,
        machine_going: machine_going(db, &attached).await?,
        ready_instances: &ready_instances,
    };
    let ctx =
        Ctx { run, cloud, tag: ownership_tag(&run.services.deployment), once_ready: phase::once_ready(&v, &attached) };
    match phase::phase(&v, &seen) {
        Phase::WaitForMachine => Ok(Next::After(RETRY_LATER_MS)),
        Phase::Lost => Ok(Next::Drift),
        Phase::FinishUnwanted(a) => {
            let detached = AttachmentObserved::of(a).state(State::Deleted, None);
            write_attachment(run, &v, a, detached, Next::Now).await
        }
        Phase::Delete => delete(&ctx, &v).await,
        Phase::Create => create(&ctx, &v).await,
        Phase::FollowAction => follow_action(&ctx, &v).await,
        Phase::Settle => settle_created(&ctx, &v).await,
        Phase::Converge(a) => converge_attachment(&ctx, &v, a).await,
        Phase::Resize => resize(&ctx, &v).await,
        Phase::Drift => drift(&ctx, &v, &attached).await,
    }
}

/// Whether an instance the volume is wanted on is being deleted.
async fn machine_going(db: &sea_orm::DatabaseConnection, attached: &[attachment::Model]) -> Result<bool> {
    let on = attached.iter().filter(|a| a.desired_state == Desired::Present).map(|a| a.instance_id.clone());
    instances::any_going(db, on.collect()).await
}

/// The ready instances among those more than one waiting attach is for (with one, there is
/// nothing to choose).
async fn ready_instances(
    db: &sea_orm::DatabaseConnection,
    attached: &[attachment::Model],
) -> Result<std::collections::HashSet<String>> {
    let waiting = phase::waiting(attached);
    if waiting.len() <= 1 {
        return Ok(Default::default());
    }
    let ids: Vec<String> = waiting.iter().map(|a| a.instance_id.clone()).collect();
    Ok(instances::ready_of(db, ids).await?.into_iter().collect())
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
        Some(id) if v.kind == VolumeKind::Block => ctx.cloud.volume_delete(&id).await.map(drop),
        Some(id) => match ctx.cloud.share_delete(&id, &v.region).await {
            Ok(_) => ctx.cloud.tag_delete(&share_tag(&v.id)).await,
            Err(err) => Err(err),
        },
    };
    let (observed, next) = decide::deleted(v, answer);
    write(ctx.run, v, observed, next).await
}

/// A settled volume's own drift read (when the account's listing did not show it as recorded,
/// or no listing came): one gone outside is lost for good; a share's ready attachments whose
/// Droplet's VPC is off the share are attached again, by their own runs.
async fn drift(ctx: &Ctx<'_>, v: &volume::Model, attached: &[attachment::Model]) -> Result<Next> {
    let id = v.provider_id.clone().unwrap_or_default();
    let (size, vpcs) = match v.kind {
        VolumeKind::Block => (ctx.cloud.volume_get(&id).await.map(|b| b.map(|b| b.size_gib)), None),
        _ => match ctx.cloud.share_get(&id, &v.region).await {
            Ok(share) => {
                let vpcs = share.as_ref().map(|s| s.vpc_ids.clone());
                (Ok(share.map(|s| s.size_gib)), vpcs)
            }
            Err(err) => (Err(err), None),
        },
    };
    let observed = match decide::drifted(v, size) {
        Ok(observed) => observed,
        Err(next) => return Ok(next),
    };
    if observed != Observed::of(v) {
        return write(ctx.run, v, observed, Next::Drift).await;
    }
    let Some(vpcs) = vpcs else { return Ok(Next::Drift) };
    for a in attached.iter().filter(|a| a.state == State::Ready && a.desired_state == Desired::Present) {
        let Some(droplet) = instances::find(&ctx.run.services.db, &a.instance_id).await?.and_then(|i| i.provider_id)
        else {
            continue;
        };
        let seen = ctx.cloud.droplet_get(&droplet).await;
        if let Some((observed, next)) = attachments::decide::vpc_taken_off(&AttachmentObserved::of(a), &vpcs, seen) {
            return write_attachment(ctx.run, v, a, observed, next).await;
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
        rows::book(&txn, v, 0).await?;
    }
    let attached = live_attachments(&txn, &v.id).await?;
    let event = crate::views::volumes::event(decide::event_type(v, &Observed::of(&written)), &written, &attached);
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
