//! Provider snapshots in `vps.provider-resources`: made once the volume exists at the provider
//! (by a name derived from the snapshot id, so a lost answer is found), then read until ready and
//! hourly for drift (the GiB the provider bills can grow); one gone outside goes to error.
use sea_orm::{ColumnTrait, EntityTrait, QueryFilter};

use super::{ACTION_POLL_MS, ERROR_RETRY_MS, Next, Run, again_if_changed, is_failure, retry_after};
use crate::error::{Error, Result};
use crate::provider::{ProviderError, ProviderResult, ShareAction, Snapshot, Snapshots, Volumes, ownership_tag};
use crate::service::rows;
use crate::service::snapshots as svc;
use crate::store::entity::{provider_snapshot as snapshot, provider_volume as volume};
use crate::store::queue;
use crate::store::state::{Desired, State, VolumeKind};
use crate::store::status::StatusWrite;

#[derive(Clone, Debug, PartialEq)]
struct Observed {
    state: State,
    provider_id: Option<String>,
    size_gib: Option<f64>,
    /// The volume's asked size when the snapshot was recorded, then the provider's word.
    min_disk_size: i64,
    create_attempts: i32,
    lost: bool,
    message: Option<String>,
}

impl Observed {
    fn of(s: &snapshot::Model) -> Self {
        Observed {
            state: s.state,
            provider_id: s.provider_id.clone(),
            size_gib: s.size_gib,
            min_disk_size: s.min_disk_size,
            create_attempts: s.create_attempts,
            lost: s.lost,
            message: s.message.clone(),
        }
    }

    fn state(mut self, state: State, message: Option<String>) -> Self {
        self.state = state;
        self.message = message;
        self
    }

    fn seen(self, found: &Snapshot) -> Self {
        let state = match (found.ready, found.failed) {
            (_, true) => State::Error,
            (true, _) => State::Ready,
            _ => State::Pending,
        };
        let message = found.failed.then(|| "the provider failed to make the snapshot".to_owned());
        Observed {
            provider_id: Some(found.id.clone()),
            size_gib: Some(found.size_gib),
            min_disk_size: found.min_disk_size.unwrap_or(self.min_disk_size),
            ..self.state(state, message)
        }
    }

    /// The row's write: the provider's snapshot as facts, its state and message as decided.
    fn status(&self, s: &snapshot::Model) -> StatusWrite {
        StatusWrite::of(&s.id, s.generation)
            .fact(snapshot::Column::ProviderId, self.provider_id.clone())
            .fact(snapshot::Column::SizeGib, self.size_gib)
            .fact(snapshot::Column::MinDiskSize, self.min_disk_size)
            .fact(snapshot::Column::CreateAttempts, self.create_attempts)
            .fact(snapshot::Column::Lost, self.lost)
            .decided(snapshot::Column::Message, self.message.clone())
            .state(self.state)
    }
}

struct Ctx<'a> {
    snapshots: &'a dyn Snapshots,
    volumes: &'a dyn Volumes,
    block: bool,
    region: String,
}

impl Ctx<'_> {
    async fn get(&self, id: &str) -> ProviderResult<Option<Snapshot>> {
        if self.block {
            self.snapshots.volume_snapshot_get(id).await
        } else {
            self.snapshots.share_snapshot_get(id, &self.region).await
        }
    }

    async fn find(&self, volume_provider_id: &str, name: &str) -> ProviderResult<Option<Snapshot>> {
        if self.block {
            self.snapshots.volume_snapshot_find(volume_provider_id, name).await
        } else {
            self.snapshots.share_snapshot_find(volume_provider_id, name, &self.region).await
        }
    }

    async fn delete(&self, id: &str) -> ProviderResult<bool> {
        if self.block {
            self.snapshots.volume_snapshot_delete(id).await
        } else {
            self.snapshots.share_snapshot_delete(id, &self.region).await
        }
    }
}

pub async fn run(run: &Run<'_>) -> Result<Next> {
    let db = &run.services.db;
    let Some(s) = snapshot::Entity::find_by_id(run.resource_id().to_owned()).one(db).await? else {
        return Ok(Next::Done);
    };
    if s.state == State::Deleted {
        return Ok(Next::Done);
    }
    let source = volume::Entity::find_by_id(s.volume_id.clone()).one(db).await?;
    let provider = run.provider(&s.provider_account_id).await?;
    let (Some(snapshots), Some(volumes)) = (provider.snapshots.clone(), provider.volumes.clone()) else {
        return Err(Error::internal(format!("account {} offers no snapshots", s.provider_account_id)));
    };
    let ctx = Ctx {
        snapshots: snapshots.as_ref(),
        volumes: volumes.as_ref(),
        block: s.volume_kind == VolumeKind::Block,
        region: s.region.clone(),
    };
    let volume_provider_id = source.as_ref().and_then(|v| v.provider_id.clone());
    let (observed, next) = if s.desired_state == Desired::Absent {
        delete(&ctx, &s, volume_provider_id.as_deref()).await
    } else if s.lost {
        return Ok(Next::Drift);
    } else if let Some(id) = &s.provider_id {
        match ctx.get(id).await {
            Ok(Some(found)) => {
                let observed = Observed::of(&s).seen(&found);
                let next = if observed.state == State::Pending { Next::After(ACTION_POLL_MS) } else { Next::Drift };
                (observed, next)
            }
            Ok(None) => {
                let message = "the snapshot was deleted at the provider outside vps-graph".to_owned();
                (Observed { lost: true, ..Observed::of(&s).state(State::Error, Some(message)) }, Next::Drift)
            }
            Err(err) => (Observed { message: Some(err.message().to_owned()), ..Observed::of(&s) }, retry_after(&err)),
        }
    } else {
        match (source, volume_provider_id) {
            (Some(v), Some(vid)) if !v.lost => return take(run, &ctx, &s, &vid).await,
            (Some(v), _) if v.desired_state == Desired::Present && !v.lost => (
                // The volume wakes its snapshots once it is made; this is the safety net.
                Observed { message: Some("waiting for the volume to be made".into()), ..Observed::of(&s) },
                Next::After(ERROR_RETRY_MS),
            ),
            _ => {
                let message = "the volume was gone before the snapshot was taken".to_owned();
                (Observed { lost: true, ..Observed::of(&s).state(State::Error, Some(message)) }, Next::Drift)
            }
        }
    };
    write(run, &s, observed, next).await
}

/// Takes the snapshot (looking it up by name first when an earlier attempt may have made it).
async fn take(run: &Run<'_>, ctx: &Ctx<'_>, s: &snapshot::Model, volume_provider_id: &str) -> Result<Next> {
    if s.create_attempts > 0 {
        match ctx.find(volume_provider_id, &s.provider_name).await {
            Ok(Some(found)) => return write(run, s, Observed::of(s).seen(&found), Next::Now).await,
            Ok(None) => {}
            Err(err) => {
                return write(
                    run,
                    s,
                    Observed { message: Some(err.message().to_owned()), ..Observed::of(s) },
                    retry_after(&err),
                )
                .await;
            }
        }
    }
    let Some(marked) = mark_create_attempt(run, s).await? else { return Ok(Next::Now) };
    let answer = if ctx.block {
        let tags = vec![ownership_tag(&run.services.deployment)];
        ctx.snapshots.volume_snapshot_create(volume_provider_id, &marked.provider_name, &tags).await.map(Some)
    } else {
        let action = ShareAction::Snapshot { name: marked.provider_name.clone() };
        ctx.volumes.share_action(volume_provider_id, &action).await.map(|id| {
            id.map(|id| Snapshot {
                id,
                name: marked.provider_name.clone(),
                size_gib: 0.0,
                min_disk_size: None,
                ready: false,
                failed: false,
            })
        })
    };
    let now = Observed::of(&marked);
    let (observed, next) = match answer {
        Ok(Some(found)) => {
            let observed = now.seen(&found);
            let next = if observed.state == State::Pending { Next::After(ACTION_POLL_MS) } else { Next::Drift };
            (observed, next)
        }
        Ok(None) => (now, Next::After(ACTION_POLL_MS)),
        Err(ProviderError::Refused { message, .. }) => {
            // This attempt made nothing; retried by the periodic pass (by name first when an
            // earlier attempt may have made it).
            let now = Observed { create_attempts: marked.create_attempts - 1, ..now };
            (now.state(State::Error, Some(message)), Next::After(ERROR_RETRY_MS))
        }
        Err(err) => (Observed { message: Some(err.message().to_owned()), ..now }, retry_after(&err)),
    };
    write(run, &marked, observed, next).await
}

async fn delete(ctx: &Ctx<'_>, s: &snapshot::Model, volume_provider_id: Option<&str>) -> (Observed, Next) {
    let now = Observed::of(s);
    let id = match (&s.provider_id, s.create_attempts, volume_provider_id) {
        _ if s.lost => None,
        (Some(id), _, _) => Some(id.clone()),
        (None, attempts, Some(vid)) if attempts > 0 => match ctx.find(vid, &s.provider_name).await {
            Ok(found) => found.map(|f| f.id),
            Err(err) => {
                return (Observed { message: Some(err.message().to_owned()), ..now }, retry_after(&err));
            }
        },
        _ => None,
    };
    if let Some(id) = id
        && let Err(err) = ctx.delete(&id).await
    {
        let next = if is_failure(&err) { Next::After(ERROR_RETRY_MS) } else { retry_after(&err) };
        return (Observed { message: Some(err.message().to_owned()), ..now }, next);
    }
    (now.state(State::Deleted, None), Next::Done)
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
    rows::lock(&txn, "provider_snapshots", &s.id).await?;
    let Some(written) = observed.status(s).write::<snapshot::Entity>(&txn, run.claimed, services.clock.now()).await?
    else {
        return Ok(Next::Now);
    };
    let became = (written.state != s.state).then_some(written.state);
    let event_type = match became {
        Some(st @ (State::Ready | State::Error | State::Deleted)) => st.as_str(),
        _ => "updated",
    };
    // A restore waits for its snapshot: wake the volumes made from it.
    let mut wakes = Vec::new();
    if matches!(became, Some(State::Ready | State::Deleted)) {
        wakes = volume::Entity::find()
            .filter(volume::Column::SourceSnapshotId.eq(s.id.clone()))
            .filter(volume::Column::ProviderId.is_null())
            .all(&txn)
            .await?;
    }
    for v in &wakes {
        queue::wake(&txn, crate::service::volumes::RECONCILER, &v.id, services.clock.now_ms()).await?;
    }
    services.commit_and_wake(txn, vec![svc::event(event_type, &written)]).await?;
    Ok(again_if_changed(next, s.generation, written.generation))
}
