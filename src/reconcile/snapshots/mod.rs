//! Provider snapshots in `vps.provider-resources`: made once the volume exists at the provider
//! (by a name derived from the snapshot id, so a lost answer is found), then read until ready and
//! hourly for drift (the GiB the provider bills can grow); one gone outside goes to error.
//!
//! Each run observes (the row, its volume's, then the provider's snapshot), decides (`decide`),
//! acts (at most one call: the snapshot, or its delete) and writes back.
mod decide;
#[cfg(test)]
pub(super) mod tests;

use super::{Next, Run, again_if_changed};
use crate::error::Result;
use crate::provider::digitalocean::DigitalOcean;
use crate::provider::{Provider, ProviderResult, ShareAction, Snapshot, ownership_tag};
use crate::store::entity::provider_snapshot as snapshot;
use crate::store::state::{Desired, State, VolumeKind};
use crate::store::{queue, snapshots, volumes};
use decide::{DeleteTarget, Observed};

struct Ctx<'a> {
    cloud: &'a DigitalOcean,
    block: bool,
    region: String,
}

impl Ctx<'_> {
    async fn get(&self, id: &str) -> ProviderResult<Option<Snapshot>> {
        if self.block {
            self.cloud.volume_snapshot_get(id).await
        } else {
            self.cloud.share_snapshot_get(id, &self.region).await
        }
    }

    async fn find(&self, volume_provider_id: &str, name: &str) -> ProviderResult<Option<Snapshot>> {
        if self.block {
            self.cloud.volume_snapshot_find(volume_provider_id, name).await
        } else {
            self.cloud.share_snapshot_find(volume_provider_id, name, &self.region).await
        }
    }

    async fn delete(&self, id: &str) -> ProviderResult<bool> {
        if self.block {
            self.cloud.volume_snapshot_delete(id).await
        } else {
            self.cloud.share_snapshot_delete(id, &self.region).await
        }
    }
}

pub async fn run(run: &Run<'_>) -> Result<Next> {
    let db = &run.services.db;
    let Some(s) = snapshots::find(db, run.resource_id()).await? else {
        return Ok(Next::Done);
    };
    if s.state == State::Deleted {
        return Ok(Next::Done);
    }
    let source = volumes::find(db, &s.volume_id).await?;
    let provider = run.provider(&s.provider_account_id).await?;
    let cloud = match provider.as_ref() {
        Provider::DigitalOcean(cloud) => cloud.as_ref(),
        Provider::Aws(_) => return Err(super::not_offered("snapshots", &s.provider_account_id)),
    };
    let ctx = Ctx { cloud, block: s.volume_kind == VolumeKind::Block, region: s.region.clone() };
    let (observed, next) = if s.desired_state == Desired::Absent {
        let volume_provider_id = source.as_ref().and_then(|v| v.provider_id.clone());
        delete(&ctx, &s, volume_provider_id.as_deref()).await
    } else if s.lost {
        return Ok(Next::Drift);
    } else if let Some(id) = &s.provider_id {
        decide::read(&s, ctx.get(id).await)
    } else {
        match decide::before_take(&s, source.as_ref()) {
            Ok(volume_provider_id) => return take(run, &ctx, &s, &volume_provider_id).await,
            Err(decided) => decided,
        }
    };
    write(run, &s, observed, next).await
}

/// Takes the snapshot (looking it up by name first when an earlier attempt may have made it).
async fn take(run: &Run<'_>, ctx: &Ctx<'_>, s: &snapshot::Model, volume_provider_id: &str) -> Result<Next> {
    if s.create_attempts > 0
        && let Some((observed, next)) = decide::looked_up(s, ctx.find(volume_provider_id, &s.provider_name).await)
    {
        return write(run, s, observed, next).await;
    }
    let Some(marked) = mark_create_attempt(run, s).await? else { return Ok(Next::Now) };
    let answer = if ctx.block {
        let tags = vec![ownership_tag(&run.services.deployment)];
        ctx.cloud.volume_snapshot_create(volume_provider_id, &marked.provider_name, &tags).await.map(Some)
    } else {
        let action = ShareAction::Snapshot { name: marked.provider_name.clone() };
        let started = ctx.cloud.share_action(volume_provider_id, &action).await;
        started.map(|id| id.map(|id| Snapshot::started(id, &marked.provider_name)))
    };
    let (observed, next) = decide::taken(&marked, answer);
    write(run, &marked, observed, next).await
}

async fn delete(ctx: &Ctx<'_>, s: &snapshot::Model, volume_provider_id: Option<&str>) -> (Observed, Next) {
    let id = match decide::delete_target(s, volume_provider_id) {
        DeleteTarget::Nothing => None,
        DeleteTarget::Known(id) => Some(id),
        DeleteTarget::LookUp(vid) => match decide::delete_found(s, ctx.find(&vid, &s.provider_name).await) {
            Ok(found) => found,
            Err(decided) => return decided,
        },
    };
    let answer = match id {
        Some(id) => ctx.delete(&id).await,
        None => Ok(true),
    };
    decide::deleted(s, answer)
}

async fn mark_create_attempt(run: &Run<'_>, s: &snapshot::Model) -> Result<Option<snapshot::Model>> {
    run.mark_attempt::<snapshot::Entity>(
        &[("provider_snapshots", &s.id)],
        &s.id,
        s.generation,
        snapshot::Column::CreateAttempts,
    )
    .await
}

async fn write(run: &Run<'_>, s: &snapshot::Model, observed: Observed, next: Next) -> Result<Next> {
    if observed == Observed::of(s) {
        return Ok(next);
    }
    let services = run.services;
    let txn = services.begin().await?;
    crate::store::lock(&txn, "provider_snapshots", &s.id).await?;
    let Some(written) = observed.status(s).write::<snapshot::Entity>(&txn, run.claimed, services.clock.now()).await?
    else {
        return Ok(Next::Now);
    };
    let became = (written.state != s.state).then_some(written.state);
    let event_type = decide::event_type(s.state, written.state);
    // A restore waits for its snapshot: wake the volumes made from it.
    if matches!(became, Some(State::Ready | State::Deleted)) {
        for v in volumes::restores_waiting_for(&txn, &s.id).await? {
            queue::wake(&txn, volumes::RECONCILER, &v.id, services.clock.now_ms()).await?;
        }
    }
    services.commit_and_wake(txn, vec![crate::views::snapshots::event(event_type, &written)]).await?;
    Ok(again_if_changed(next, s.generation, written.generation))
}
