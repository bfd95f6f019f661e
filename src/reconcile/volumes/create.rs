//! A volume's create: made once by the name derived from its id (a lost answer is found by
//! that name, never made twice), a restore from its snapshot, a share read until active (one the
//! provider failed is deleted and made again by the periodic pass).
use super::*;
use crate::store::state::{Desired, State, VolumeFilesystem, VolumeKind};

pub(super) async fn create(ctx: &Ctx<'_>, v: &volume::Model) -> Result<Next> {
    let run = ctx.run;
    if v.create_attempts > 0 {
        let found = match v.kind {
            VolumeKind::Block => {
                ctx.volumes.volume_find_by_name(&v.provider_name, &v.region).await.map(|f| f.map(Made::Block))
            }
            _ => ctx.volumes.share_find_by_name(&v.provider_name, &v.region).await.map(|f| f.map(Made::Share)),
        };
        match found {
            Err(err) => return write(run, v, failed(v, &err).0, failed(v, &err).1).await,
            Ok(Some(made)) if made.is_ours(&marker(&run.services.deployment, &v.id), &ctx.tag) => {
                let observed = made.observed(v);
                let next = ctx.once_made(v, &observed);
                return write(run, v, observed, next).await;
            }
            Ok(Some(_)) => {
                let message = format!("a volume named {} exists that this deployment did not make", v.provider_name);
                return write(run, v, Observed::of(v).state(State::Error, Some(message)), Next::After(ERROR_RETRY_MS))
                    .await;
            }
            Ok(None) => {}
        }
    }
    let snapshot_id = match &v.source_snapshot_id {
        None => None,
        Some(source) => match restore_source(run, v, source).await? {
            Ok(provider_id) => Some(provider_id),
            Err((observed, next)) => return write(run, v, observed, next).await,
        },
    };
    let share_vpc = match &v.network_id {
        Some(network_id) if v.kind != VolumeKind::Block => {
            match crate::store::networks::ready_subnet_vpc(&run.services.db, network_id, &v.region).await? {
                Some(vpc) => Some(vpc),
                None => {
                    return write(
                        run,
                        v,
                        Observed::of(v).said("waiting for the network's subnet"),
                        Next::After(ACTION_POLL_MS),
                    )
                    .await;
                }
            }
        }
        _ => None,
    };
    let Some(marked) = mark_create_attempt(run, v).await? else { return Ok(Next::Now) };
    let tags = vec![ctx.tag.clone()];
    let description = marker(&run.services.deployment, &v.id);
    let answer = match &share_vpc {
        None => ctx
            .volumes
            .volume_create(&VolumeCreate {
                name: &marked.provider_name,
                region: &marked.region,
                size_gib: marked.size_gib,
                description: &description,
                // A restore is never formatted: that could wipe the restored data.
                filesystem: marked.filesystem.map(VolumeFilesystem::as_str).filter(|_| snapshot_id.is_none()),
                snapshot_id: snapshot_id.as_deref(),
                tags: &tags,
            })
            .await
            .map(Made::Block),
        Some(vpc) => {
            ctx.volumes.share_create(&marked.provider_name, &marked.region, marked.size_gib, vpc).await.map(Made::Share)
        }
    };
    let (observed, next) = match answer {
        Ok(made) => {
            let observed = made.observed(&marked);
            let next = if observed.state == State::Ready {
                ctx.once_made(&marked, &observed)
            } else {
                Next::After(ACTION_POLL_MS)
            };
            (observed, next)
        }
        Err(ProviderError::Refused { message, .. }) => {
            // Refused: this attempt made nothing (an earlier one whose answer was lost may have:
            // its count stays, and the retry looks by name first). Retried by the periodic pass.
            let now = Observed { create_attempts: marked.create_attempts - 1, ..Observed::of(&marked) };
            (now.state(State::Error, Some(message)), Next::After(ERROR_RETRY_MS))
        }
        Err(err) => {
            let message =
                format!("{} (the volume is looked up by its name before anything is sent again)", err.message());
            (Observed::of(&marked).said(message), retry_after(&err))
        }
    };
    write(run, &marked, observed, next).await
}

/// What a create or a lookup by name found.
pub(super) enum Made {
    Block(BlockVolume),
    Share(Share),
}

impl Made {
    pub(super) fn is_ours(&self, marker: &str, tag: &str) -> bool {
        match self {
            Made::Block(b) => b.description == marker || b.tags.iter().any(|t| t == tag),
            // A share carries no tag or description: its name, derived from the volume id, is
            // unique to this volume.
            Made::Share(_) => true,
        }
    }

    fn observed(&self, v: &volume::Model) -> Observed {
        let now = Observed::of(v);
        match self {
            Made::Block(b) => Observed {
                provider_id: Some(b.id.clone()),
                observed_size_gib: Some(b.size_gib),
                device: Some(device_path(&b.name)),
                ..now.state(State::Ready, None)
            },
            Made::Share(s) => share_observed(Observed { provider_id: Some(s.id.clone()), ..now }, s),
        }
    }
}

/// A share's state: ready once active with its NFS source, pending while it is being made.
pub(super) fn share_observed(now: Observed, s: &Share) -> Observed {
    let source = match (&s.host, &s.mount_path) {
        (Some(host), Some(path)) => Some(format!("{host}:{path}")),
        _ => None,
    };
    match (s.status.as_str(), source) {
        ("ACTIVE" | "INACTIVE", Some(source)) => Observed {
            observed_size_gib: Some(s.size_gib),
            device: Some(source.clone()),
            mount_source: Some(source),
            ..now.state(State::Ready, None)
        },
        ("FAILED", _) => now.state(State::Error, Some("the provider failed to make the share".into())),
        _ => Observed { observed_size_gib: Some(s.size_gib), ..now },
    }
}

/// The snapshot a restore is made from: its provider id once ready; waits while it is pending,
/// and fails for good when it was deleted first.
pub(super) async fn restore_source(
    run: &Run<'_>,
    v: &volume::Model,
    source: &str,
) -> Result<std::result::Result<String, (Observed, Next)>> {
    let snapshot = provider_snapshot::Entity::find_by_id(source.to_owned()).one(&run.services.db).await?;
    Ok(match snapshot {
        // The provider's min_disk_size may be above the size recorded when the restore was asked
        // (the volume grew before the provider took the snapshot): the provider would refuse it.
        Some(s) if s.state == State::Ready && s.min_disk_size > v.size_gib => {
            let message = format!(
                "snapshot {source} holds {} GiB, more than the {} GiB this restore asked: nothing was made; delete it and restore again",
                s.min_disk_size, v.size_gib
            );
            Err((Observed::of(v).state(State::Error, Some(message)), Next::After(ERROR_RETRY_MS)))
        }
        Some(s) if s.desired_state == Desired::Present && s.state == State::Ready && s.provider_id.is_some() => {
            Ok(s.provider_id.unwrap_or_default())
        }
        Some(s) if s.desired_state == Desired::Present && !s.lost => Err((
            Observed::of(v).said(format!("waiting for snapshot {source} to be ready")),
            Next::After(ACTION_POLL_MS),
        )),
        _ => {
            let message = format!("snapshot {source} was deleted before the restore: nothing was made");
            Err((Observed { lost: true, ..Observed::of(v).state(State::Error, Some(message)) }, Next::Drift))
        }
    })
}

/// A share made but not active yet: read it until it is.
pub(super) async fn settle_created(ctx: &Ctx<'_>, v: &volume::Model) -> Result<Next> {
    let id = v.provider_id.clone().unwrap_or_default();
    let (observed, next) = match v.kind {
        VolumeKind::Block => match ctx.volumes.volume_get(&id).await {
            Ok(Some(b)) => {
                let observed = Made::Block(b).observed(v);
                let next = ctx.once_made(v, &observed);
                (observed, next)
            }
            Ok(None) => lost(v),
            Err(err) => failed(v, &err),
        },
        _ => match ctx.volumes.share_get(&id, &v.region).await {
            // The retry of a share the provider failed to make: the failed one goes, and the
            // next run makes it again (looked up by name first, as after any attempt).
            Ok(Some(s)) if s.status == "FAILED" && v.state == State::Error => {
                match ctx.volumes.share_delete(&id, &v.region).await {
                    Ok(_) => (Observed { provider_id: None, ..Observed::of(v).said(REMADE) }, Next::Now),
                    Err(err) => failed(v, &err),
                }
            }
            Ok(Some(s)) => {
                let observed = share_observed(Observed::of(v), &s);
                let next = match observed.state {
                    State::Ready => ctx.once_made(v, &observed),
                    State::Error => Next::After(ERROR_RETRY_MS),
                    _ => Next::After(ACTION_POLL_MS),
                };
                (observed, next)
            }
            Ok(None) => lost(v),
            Err(err) => failed(v, &err),
        },
    };
    write(ctx.run, v, observed, next).await
}

/// Said of a volume whose failed share was deleted to be made again.
pub(super) const REMADE: &str = "the share the provider failed to make was deleted; it is made again";

/// Records a create attempt before the call (see `Run::mark_attempt`).
pub(super) async fn mark_create_attempt(run: &Run<'_>, v: &volume::Model) -> Result<Option<volume::Model>> {
    run.mark_attempt::<volume::Entity>(
        &[("provider_volumes", &v.id)],
        &v.id,
        v.generation,
        volume::Column::CreateAttempts,
    )
    .await
}
