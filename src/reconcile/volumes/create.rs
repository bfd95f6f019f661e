//! A volume's create: made once by the name derived from its id (a lost answer is found by
//! that name, never made twice), a restore from its snapshot, a share read until active (one the
//! provider failed is deleted and made again by the periodic pass). What each look and answer
//! means is decided in `decide`; this module reads and calls.
use super::*;
use crate::error::Code;
use crate::store::state::VolumeFilesystem;
use decide::RestoreSource;

pub(super) async fn create(ctx: &Ctx<'_>, v: &volume::Model) -> Result<Next> {
    let run = ctx.run;
    if v.create_attempts > 0 {
        let found = find_by_name(ctx, v).await;
        if let Some((observed, next)) = decide::looked_up(v, found, &ctx.marker(v), &ctx.tag, ctx.once_ready) {
            return write(run, v, observed, next).await;
        }
    }
    let snapshot_id = match &v.source_snapshot_id {
        None => None,
        Some(source) => {
            let snapshot = snapshots::find(&run.services.db, source).await?;
            match decide::restore_source(v, source, snapshot.as_ref()) {
                RestoreSource::Ready(provider_id) => Some(provider_id),
                RestoreSource::Grow(size_gib) => return grow_to_snapshot(run, v, source, size_gib).await,
                RestoreSource::Not((observed, next)) => return write(run, v, observed, next).await,
            }
        }
    };
    let share_vpc = match &v.network_id {
        Some(network_id) if v.kind != VolumeKind::Block => {
            match crate::store::networks::ready_subnet_vpc(&run.services.db, network_id, &v.region).await? {
                Some(vpc) => Some(vpc),
                None => {
                    let (observed, next) = decide::waiting_for_subnet(v);
                    return write(run, v, observed, next).await;
                }
            }
        }
        _ => None,
    };
    let Some(marked) = mark_create_attempt(run, v).await? else { return Ok(Next::Now) };
    let answer = match &share_vpc {
        None => {
            let tags = vec![ctx.tag.clone()];
            let description = ctx.marker(v);
            let request = VolumeCreate {
                name: &marked.provider_name,
                region: &marked.region,
                size_gib: marked.size_gib,
                description: &description,
                // A restore is never formatted: that could wipe the restored data.
                filesystem: marked.filesystem.map(VolumeFilesystem::as_str).filter(|_| snapshot_id.is_none()),
                snapshot_id: snapshot_id.as_deref(),
                tags: &tags,
            };
            ctx.cloud.volume_create(&request).await.map(Made::Block)
        }
        Some(vpc) => {
            ctx.cloud.share_create(&marked.provider_name, &marked.region, marked.size_gib, vpc).await.map(Made::Share)
        }
    };
    let (observed, next) = decide::created(&marked, answer, ctx.once_ready);
    write(run, &marked, observed, next).await
}

/// The volume or share named as this volume's, whoever made it.
pub(super) async fn find_by_name(ctx: &Ctx<'_>, v: &volume::Model) -> ProviderResult<Option<Made>> {
    match v.kind {
        VolumeKind::Block => {
            ctx.cloud.volume_find_by_name(&v.provider_name, &v.region).await.map(|f| f.map(Made::Block))
        }
        _ => ctx.cloud.share_find_by_name(&v.provider_name, &v.region).await.map(|f| f.map(Made::Share)),
    }
}

/// A volume made but not seen ready yet (a share being made, or one in error): read it until it
/// is; a share the provider failed to make goes, to be made again.
pub(super) async fn settle_created(ctx: &Ctx<'_>, v: &volume::Model) -> Result<Next> {
    let id = v.provider_id.clone().unwrap_or_default();
    let seen = match v.kind {
        VolumeKind::Block => ctx.cloud.volume_get(&id).await.map(|b| b.map(Made::Block)),
        _ => ctx.cloud.share_get(&id, &v.region).await.map(|s| s.map(Made::Share)),
    };
    let (observed, next) = match decide::settled(v, seen, ctx.once_ready) {
        Ok(decided) => decided,
        Err(()) => decide::remade(v, ctx.cloud.share_delete(&id, &v.region).await),
    };
    write(ctx.run, v, observed, next).await
}

/// Records a create attempt before the call (see `Run::mark_attempt`).
async fn mark_create_attempt(run: &Run<'_>, v: &volume::Model) -> Result<Option<volume::Model>> {
    run.mark_attempt::<volume::Entity>(
        &[("provider_volumes", &v.id)],
        &v.id,
        v.generation,
        volume::Column::CreateAttempts,
    )
    .await
}

/// A restore that named no size takes its snapshot's size as the provider reports it: the
/// difference is booked and the size recorded in one transaction (the run then goes again with
/// the new size), or the volume is an error, tried again later, when the quota does not allow it.
async fn grow_to_snapshot(run: &Run<'_>, v: &volume::Model, source: &str, size_gib: i64) -> Result<Next> {
    let services = run.services;
    let txn = services.begin().await?;
    crate::store::lock(&txn, "provider_volumes", &v.id).await?;
    match rows::find(&txn, &v.id).await? {
        Some(current) if current.generation == v.generation => {}
        _ => return Ok(Next::Now),
    }
    if !queue::fence(&txn, run.claimed).await? {
        return Ok(Next::Now);
    }
    match rows::book(&txn, v, size_gib).await {
        Ok(()) => {
            let grown = rows::mark_resized(&txn, v, size_gib, services.clock.now()).await?;
            let attached = live_attachments(&txn, &v.id).await?;
            services.commit(txn, vec![crate::views::volumes::event("updated", &grown, &attached)]).await?;
            Ok(Next::Now)
        }
        Err(err) if err.code == Code::QuotaExceeded => {
            drop(txn);
            let (observed, next) = decide::restore_over_quota(v, source, size_gib);
            write(run, v, observed, next).await
        }
        Err(err) => Err(err),
    }
}
