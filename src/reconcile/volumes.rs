//! Provider volumes in `vps.provider-resources`: a block volume or a share is made once (by the
//! name derived from its id, so a lost answer is found, never made twice), then only read; one
//! gone at the provider goes to error for good. Each run does at most one provider step: the
//! create, a running action's poll, a resize, one attachment's attach or detach, the delete, or
//! the hourly drift read. Provider actions never block a run: it looks again 5 s later.
use sea_orm::sea_query::{Expr, ExprTrait};
use sea_orm::{ColumnTrait, EntityTrait, QueryFilter};

use super::{ACTION_POLL_MS, ERROR_RETRY_MS, Next, RETRY_LATER_MS, Run, is_failure, retry_after};
use crate::error::{Error, Result};
use crate::provider::{
    ActionStatus, Actions, BlockVolume, Instances, Provider, ProviderError, Refusal, Share, ShareAction, VolumeAction,
    VolumeActionKind, VolumeCreate, Volumes, ownership_tag,
};
use crate::service::networks::state;
use crate::service::rows;
use crate::service::volumes::{self as svc, BLOCK, UPDATING, live_attachments, share_tag};
use crate::store::entity::{
    instance, network_subnet, provider_snapshot, provider_volume as volume, volume_attachment as attachment,
};
use crate::store::{queue, quota};

/// The volume fields a run writes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Observed {
    pub state: String,
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
            state: v.state.clone(),
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

    fn state(mut self, state: &str, message: Option<String>) -> Self {
        self.state = state.to_owned();
        self.message = message;
        self
    }

    fn said(mut self, message: impl Into<String>) -> Self {
        self.message = Some(message.into());
        self
    }
}

/// The attachment fields a run writes.
#[derive(Clone, Debug, PartialEq, Eq)]
struct AttachmentObserved {
    state: String,
    action_id: Option<String>,
    message: Option<String>,
}

impl AttachmentObserved {
    fn of(a: &attachment::Model) -> Self {
        AttachmentObserved { state: a.state.clone(), action_id: a.action_id.clone(), message: a.message.clone() }
    }

    fn state(mut self, state: &str, message: Option<String>) -> Self {
        self.state = state.to_owned();
        self.message = message;
        if state == state::READY || state == state::DELETED {
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
        let owed = seen.observed_size_gib.is_some_and(|size| size < v.size_gib) && v.desired_state == state::PRESENT;
        if owed { Next::Now } else { self.once_ready }
    }
}

pub async fn run(run: &Run<'_>) -> Result<Next> {
    let db = &run.services.db;
    let Some(v) = volume::Entity::find_by_id(run.resource_id().to_owned()).one(db).await? else {
        return Ok(Next::Done);
    };
    if v.state == state::DELETED {
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
    if v.delete_with_instance && v.desired_state == state::PRESENT && machine_going(db, &attached).await? {
        // It goes with its machine: no provider call meanwhile (an ensure by name could make
        // again a volume the machine's delete already took). The instance wakes it when done.
        return Ok(Next::After(RETRY_LATER_MS));
    }
    let restoring = v.source_snapshot_id.is_some() && v.provider_id.is_none();
    let ctx =
        Ctx { once_ready: if restoring || attached.iter().any(needs_work) { Next::Now } else { Next::Drift }, ..ctx };
    let unwanted = attached.iter().find(|a| a.desired_state == state::ABSENT);
    if let Some(a) = unwanted.filter(|_| v.lost || v.provider_id.is_none()) {
        // Nothing at the provider to act on (lost, or never made, so never attached there):
        // an unwanted attachment finishes without a call.
        let detached = AttachmentObserved::of(a).state(state::DELETED, None);
        return write_attachment(run, &v, a, detached, Next::Now).await;
    }
    if v.desired_state == state::ABSENT && attached.is_empty() {
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
    if v.state == state::PENDING || v.state == state::ERROR {
        return settle_created(&ctx, &v).await;
    }
    // Detaches before a resize, so a resize the provider keeps refusing never keeps a volume
    // from being detached (and deleted).
    if let Some(a) = unwanted {
        return converge_attachment(&ctx, &v, a).await;
    }
    if v.observed_size_gib.is_some_and(|seen| seen < v.size_gib) && v.desired_state == state::PRESENT {
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
        attached.iter().filter(|a| a.desired_state == state::PRESENT).map(|a| a.instance_id.clone()).collect();
    if on.is_empty() {
        return Ok(false);
    }
    let going = instance::Entity::find()
        .filter(instance::Column::Id.is_in(on))
        .filter(instance::Column::DesiredState.eq(state::ABSENT))
        .filter(instance::Column::State.ne(state::DELETED))
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
        attached.iter().filter(|a| a.desired_state == state::PRESENT && needs_work(a)).collect();
    if waiting.len() <= 1 {
        return Ok(waiting.first().copied());
    }
    let ids: Vec<String> = waiting.iter().map(|a| a.instance_id.clone()).collect();
    let ready: Vec<String> = instance::Entity::find()
        .filter(instance::Column::Id.is_in(ids))
        .filter(instance::Column::State.eq(state::READY))
        .all(db)
        .await?
        .into_iter()
        .map(|i| i.id)
        .collect();
    Ok(waiting.iter().find(|a| ready.contains(&a.instance_id)).or(waiting.first()).copied())
}

fn needs_work(a: &attachment::Model) -> bool {
    match a.desired_state.as_str() {
        state::ABSENT => a.state != state::DELETED,
        _ => a.state != state::READY,
    }
}

/// A provider error while looking or acting: wait and say why, or show a refusal as an error.
fn failed(v: &volume::Model, err: &ProviderError) -> (Observed, Next) {
    let now = Observed::of(v);
    if is_failure(err) {
        return (now.state(state::ERROR, Some(err.message().to_owned())), Next::After(ERROR_RETRY_MS));
    }
    (now.said(err.message()), retry_after(err))
}

async fn create(ctx: &Ctx<'_>, v: &volume::Model) -> Result<Next> {
    let run = ctx.run;
    if v.create_attempts > 0 {
        let found = match v.kind.as_str() {
            BLOCK => ctx.volumes.volume_find_by_name(&v.provider_name, &v.region).await.map(|f| f.map(Made::Block)),
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
                return write(run, v, Observed::of(v).state(state::ERROR, Some(message)), Next::After(ERROR_RETRY_MS))
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
        Some(network_id) if v.kind != BLOCK => match subnet_vpc(run, network_id, &v.region).await? {
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
        },
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
                filesystem: marked.filesystem.as_deref().filter(|_| snapshot_id.is_none()),
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
            let next = if observed.state == state::READY {
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
            (now.state(state::ERROR, Some(message)), Next::After(ERROR_RETRY_MS))
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
enum Made {
    Block(BlockVolume),
    Share(Share),
}

impl Made {
    fn is_ours(&self, marker: &str, tag: &str) -> bool {
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
                ..now.state(state::READY, None)
            },
            Made::Share(s) => share_observed(Observed { provider_id: Some(s.id.clone()), ..now }, s),
        }
    }
}

/// A share's state: ready once active with its NFS source, pending while it is being made.
fn share_observed(now: Observed, s: &Share) -> Observed {
    let source = match (&s.host, &s.mount_path) {
        (Some(host), Some(path)) => Some(format!("{host}:{path}")),
        _ => None,
    };
    match (s.status.as_str(), source) {
        ("ACTIVE" | "INACTIVE", Some(source)) => Observed {
            observed_size_gib: Some(s.size_gib),
            device: Some(source.clone()),
            mount_source: Some(source),
            ..now.state(state::READY, None)
        },
        ("FAILED", _) => now.state(state::ERROR, Some("the provider failed to make the share".into())),
        _ => Observed { observed_size_gib: Some(s.size_gib), ..now },
    }
}

/// The snapshot a restore is made from: its provider id once ready; waits while it is pending,
/// and fails for good when it was deleted first.
async fn restore_source(
    run: &Run<'_>,
    v: &volume::Model,
    source: &str,
) -> Result<std::result::Result<String, (Observed, Next)>> {
    let snapshot = provider_snapshot::Entity::find_by_id(source.to_owned()).one(&run.services.db).await?;
    Ok(match snapshot {
        // The provider's min_disk_size may be above the size recorded when the restore was asked
        // (the volume grew before the provider took the snapshot): the provider would refuse it.
        Some(s) if s.state == state::READY && s.min_disk_size > v.size_gib => {
            let message = format!(
                "snapshot {source} holds {} GiB, more than the {} GiB this restore asked: nothing was made; delete it and restore again",
                s.min_disk_size, v.size_gib
            );
            Err((Observed::of(v).state(state::ERROR, Some(message)), Next::After(ERROR_RETRY_MS)))
        }
        Some(s) if s.desired_state == state::PRESENT && s.state == state::READY && s.provider_id.is_some() => {
            Ok(s.provider_id.unwrap_or_default())
        }
        Some(s) if s.desired_state == state::PRESENT && !s.lost => Err((
            Observed::of(v).said(format!("waiting for snapshot {source} to be ready")),
            Next::After(ACTION_POLL_MS),
        )),
        _ => {
            let message = format!("snapshot {source} was deleted before the restore: nothing was made");
            Err((Observed { lost: true, ..Observed::of(v).state(state::ERROR, Some(message)) }, Next::Drift))
        }
    })
}

/// A share made but not active yet: read it until it is.
async fn settle_created(ctx: &Ctx<'_>, v: &volume::Model) -> Result<Next> {
    let id = v.provider_id.clone().unwrap_or_default();
    let (observed, next) = match v.kind.as_str() {
        BLOCK => match ctx.volumes.volume_get(&id).await {
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
            Ok(Some(s)) if s.status == "FAILED" && v.state == state::ERROR => {
                match ctx.volumes.share_delete(&id, &v.region).await {
                    Ok(_) => (Observed { provider_id: None, ..Observed::of(v).said(REMADE) }, Next::Now),
                    Err(err) => failed(v, &err),
                }
            }
            Ok(Some(s)) => {
                let observed = share_observed(Observed::of(v), &s);
                let next = match observed.state.as_str() {
                    state::READY => ctx.once_made(v, &observed),
                    state::ERROR => Next::After(ERROR_RETRY_MS),
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
const REMADE: &str = "the share the provider failed to make was deleted; it is made again";

fn lost(v: &volume::Model) -> (Observed, Next) {
    let message = "the volume was deleted at the provider outside vps-graph; its data is gone and it is not made again: delete it".to_owned();
    (Observed { lost: true, action_id: None, ..Observed::of(v).state(state::ERROR, Some(message)) }, Next::Drift)
}

/// Grows the volume to its asked size. It looks first: a resize whose answer was lost (a
/// dropped connection, or the process gone before the write-back) may be running or done, and
/// sending it again would be refused as not larger.
async fn resize(ctx: &Ctx<'_>, v: &volume::Model) -> Result<Next> {
    let id = v.provider_id.clone().unwrap_or_default();
    if let Some((observed, next)) = resize_seen(ctx, v, &id).await {
        return write(ctx.run, v, observed, next).await;
    }
    let answer = match v.kind.as_str() {
        BLOCK => ctx
            .volumes
            .volume_action(&id, &v.region, &VolumeAction::Resize { size_gib: v.size_gib })
            .await
            .map(|a| a.to_string()),
        _ => ctx
            .volumes
            .share_action(&id, &ShareAction::Resize { size_gib: v.size_gib })
            .await
            .map(|_| format!("share-resize:{}:{}", v.size_gib, ctx.run.services.clock.now_ms())),
    };
    let (observed, next) = match answer {
        Ok(action) => {
            (Observed { action_id: Some(action), ..Observed::of(v).state(UPDATING, None) }, Next::After(ACTION_POLL_MS))
        }
        Err(err) => failed(v, &err),
    };
    write(ctx.run, v, observed, next).await
}

/// What a look before a resize found, when it settles the run: a resize running (followed), the
/// volume at its size already (ready), or gone or unreadable. None: the resize is to be sent.
async fn resize_seen(ctx: &Ctx<'_>, v: &volume::Model, id: &str) -> Option<(Observed, Next)> {
    let updating = |action: String| Observed { action_id: Some(action), ..Observed::of(v).state(UPDATING, None) };
    let size = if v.kind == BLOCK {
        match ctx.volumes.volume_action_running(id, VolumeActionKind::Resize).await {
            Ok(Some(action)) => return Some((updating(action.to_string()), Next::After(ACTION_POLL_MS))),
            Ok(None) => {}
            Err(err) => return Some(failed(v, &err)),
        }
        ctx.volumes.volume_get(id).await.map(|b| b.map(|b| b.size_gib))
    } else {
        ctx.volumes.share_get(id, &v.region).await.map(|s| s.map(|s| s.size_gib))
    };
    match size {
        Ok(Some(size)) if size >= v.size_gib => Some((resized(v, size), Next::Now)),
        Ok(Some(_)) => None,
        Ok(None) => Some(lost(v)),
        Err(err) => Some(failed(v, &err)),
    }
}

/// The volume once the provider shows it at `size`.
fn resized(v: &volume::Model, size: i64) -> Observed {
    Observed { action_id: None, observed_size_gib: Some(size), ..Observed::of(v).state(state::READY, None) }
}

/// A volume action in flight (a resize): looked at again until it is done.
async fn follow_action(ctx: &Ctx<'_>, v: &volume::Model) -> Result<Next> {
    let action = v.action_id.clone().unwrap_or_default();
    let id = v.provider_id.clone().unwrap_or_default();
    let done = |size: i64| resized(v, size);
    let (observed, next) = if let Some(asked) = action.strip_prefix("share-resize:") {
        let (target, asked_ms) = asked.split_once(':').unwrap_or((asked, ""));
        let target: i64 = target.parse().unwrap_or(v.size_gib);
        let stale =
            asked_ms.parse().is_ok_and(|ms: i64| ctx.run.services.clock.now_ms() - ms > SHARE_ACTION_PATIENCE_MS);
        match ctx.volumes.share_get(&id, &v.region).await {
            Ok(Some(s)) if s.size_gib >= target => (done(s.size_gib), Next::Now),
            // An NFS action cannot be read back: one whose effect has not shown in time failed.
            Ok(Some(_)) if stale => (
                Observed { action_id: None, ..Observed::of(v).state(state::ERROR, Some(SHARE_RESIZE_FAILED.into())) },
                Next::After(ERROR_RETRY_MS),
            ),
            Ok(Some(_)) => (Observed::of(v), Next::After(ACTION_POLL_MS)),
            Ok(None) => lost(v),
            Err(err) => failed(v, &err),
        }
    } else {
        match ctx.actions.action_get(action.parse().unwrap_or_default()).await {
            Ok(Some(ActionStatus::InProgress)) => (Observed::of(v), Next::After(ACTION_POLL_MS)),
            Ok(Some(ActionStatus::Completed)) => match ctx.volumes.volume_get(&id).await {
                Ok(Some(b)) => (done(b.size_gib), Next::Now),
                Ok(None) => lost(v),
                Err(err) => failed(v, &err),
            },
            Ok(Some(ActionStatus::Errored)) | Ok(None) => (
                Observed {
                    action_id: None,
                    ..Observed::of(v).state(state::ERROR, Some("the provider's resize failed".into()))
                },
                Next::After(ERROR_RETRY_MS),
            ),
            Err(err) => (Observed::of(v).said(err.message()), retry_after(&err)),
        }
    };
    write(ctx.run, v, observed, next).await
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
            let found = match v.kind.as_str() {
                BLOCK => ctx.volumes.volume_find_by_name(&v.provider_name, &v.region).await.map(|f| f.map(Made::Block)),
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
        let answer = match v.kind.as_str() {
            BLOCK => ctx.volumes.volume_delete(&id).await.map(drop),
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
    let observed = Observed { action_id: None, ..Observed::of(v).state(state::DELETED, None) };
    write(run, v, observed, Next::Done).await
}

async fn converge_attachment(ctx: &Ctx<'_>, v: &volume::Model, a: &attachment::Model) -> Result<Next> {
    let run = ctx.run;
    let Some(on) = instance::Entity::find_by_id(a.instance_id.clone()).one(&run.services.db).await? else {
        return Err(Error::internal(format!("attachment {} without its instance", a.id)));
    };
    let now = AttachmentObserved::of(a);
    if a.desired_state == state::PRESENT {
        if on.desired_state == state::ABSENT || on.state != state::READY || on.provider_id.is_none() {
            let message = Some("waiting for the instance to be ready".to_owned());
            return write_attachment(run, v, a, AttachmentObserved { message, ..now }, Next::After(RETRY_LATER_MS))
                .await;
        }
        if v.state != state::READY {
            return Ok(Next::After(ACTION_POLL_MS));
        }
    }
    let droplet = on.provider_id.clone().filter(|_| !on.lost && on.state != state::DELETED);
    let (observed, next) = match (v.kind.as_str(), a.desired_state.as_str()) {
        (BLOCK, state::PRESENT) => attach_block(ctx, v, a, droplet.unwrap_or_default()).await,
        (BLOCK, _) => detach_block(ctx, v, a, droplet, on.provider_id.clone()).await,
        (_, state::PRESENT) => attach_share(ctx, v, a, &droplet.unwrap_or_default()).await,
        _ => detach_share(ctx, v, a, droplet).await,
    };
    write_attachment(run, v, a, observed, next).await
}

/// What an action poll says of an attachment's action: None while it runs.
async fn action_outcome(ctx: &Ctx<'_>, action: &str) -> std::result::Result<Option<bool>, ProviderError> {
    Ok(match ctx.actions.action_get(action.parse().unwrap_or_default()).await? {
        Some(ActionStatus::InProgress) => None,
        Some(ActionStatus::Completed) => Some(true),
        Some(ActionStatus::Errored) | None => Some(false),
    })
}

fn attachment_waits(now: AttachmentObserved, err: &ProviderError) -> (AttachmentObserved, Next) {
    let message = Some(err.message().to_owned());
    if err.refusal() == Some(Refusal::PendingEvent) {
        return (AttachmentObserved { message, ..now }, Next::After(ACTION_POLL_MS));
    }
    if is_failure(err) {
        return (now.state(state::ERROR, message), Next::After(ERROR_RETRY_MS));
    }
    (AttachmentObserved { message, ..now }, retry_after(err))
}

async fn attach_block(
    ctx: &Ctx<'_>,
    v: &volume::Model,
    a: &attachment::Model,
    droplet: String,
) -> (AttachmentObserved, Next) {
    let now = AttachmentObserved::of(a);
    let volume_id = v.provider_id.clone().unwrap_or_default();
    if let Some(action) = &a.action_id {
        return match action_outcome(ctx, action).await {
            Ok(None) => (now, Next::After(ACTION_POLL_MS)),
            Ok(Some(true)) => match ctx.volumes.volume_get(&volume_id).await {
                Ok(Some(b)) if b.droplet_ids.contains(&droplet) => (now.state(state::READY, None), Next::Now),
                // Completed without attaching it (the Droplet went away): ask again.
                Ok(_) => (AttachmentObserved { action_id: None, ..now }, Next::After(ACTION_POLL_MS)),
                Err(err) => attachment_waits(now, &err),
            },
            Ok(Some(false)) => (
                AttachmentObserved {
                    action_id: None,
                    ..now.state(state::ERROR, Some("the provider's attach failed".into()))
                },
                Next::After(ERROR_RETRY_MS),
            ),
            Err(err) => attachment_waits(now, &err),
        };
    }
    // Looked at first: an attach whose answer was lost may be running, or done.
    match ctx.volumes.volume_action_running(&volume_id, VolumeActionKind::Attach).await {
        Ok(Some(action)) => {
            return (AttachmentObserved { action_id: Some(action.to_string()), ..now }, Next::After(ACTION_POLL_MS));
        }
        Ok(None) => {}
        Err(err) => return attachment_waits(now, &err),
    }
    match ctx.volumes.volume_get(&volume_id).await {
        Ok(Some(b)) if b.droplet_ids.contains(&droplet) => return (now.state(state::READY, None), Next::Now),
        Ok(_) => {}
        Err(err) => return attachment_waits(now, &err),
    }
    match ctx.volumes.volume_action(&volume_id, &v.region, &VolumeAction::Attach { droplet_id: droplet.clone() }).await
    {
        Ok(action) => (
            AttachmentObserved { action_id: Some(action.to_string()), message: None, ..now },
            Next::After(ACTION_POLL_MS),
        ),
        Err(err) if err.refusal() == Some(Refusal::AlreadyAttached) => match ctx.volumes.volume_get(&volume_id).await {
            Ok(Some(b)) if b.droplet_ids.contains(&droplet) => (now.state(state::READY, None), Next::Now),
            Ok(_) => (
                now.state(
                    state::ERROR,
                    Some("the volume is attached to another Droplet at the provider; nothing was moved".into()),
                ),
                Next::After(ERROR_RETRY_MS),
            ),
            Err(err) => attachment_waits(now, &err),
        },
        Err(err) => attachment_waits(now, &err),
    }
}

/// `droplet` is the instance's machine while it lives; `gone` the one it had once it is gone.
async fn detach_block(
    ctx: &Ctx<'_>,
    v: &volume::Model,
    a: &attachment::Model,
    droplet: Option<String>,
    gone: Option<String>,
) -> (AttachmentObserved, Next) {
    let now = AttachmentObserved::of(a);
    let volume_id = v.provider_id.clone().unwrap_or_default();
    if let Some(action) = &a.action_id {
        return match action_outcome(ctx, action).await {
            Ok(None) => (now, Next::After(ACTION_POLL_MS)),
            Ok(Some(_)) => (AttachmentObserved { action_id: None, ..now }, Next::Now),
            Err(err) => attachment_waits(now, &err),
        };
    }
    let droplet = match (droplet, gone) {
        (Some(droplet), _) => droplet,
        (None, gone) => {
            // The instance is gone (or never had a machine). A machine deleted with it lets its
            // volumes go shortly after; one left running (the instance finished as a detach) is
            // detached like any other.
            let on_it = match ctx.volumes.volume_get(&volume_id).await {
                Ok(Some(b)) => gone.filter(|gone| b.droplet_ids.contains(gone)),
                Ok(None) => None,
                Err(err) => return attachment_waits(now, &err),
            };
            let Some(machine) = on_it else { return (now.state(state::DELETED, None), Next::Now) };
            match ctx.instances.droplet_get(&machine).await {
                Ok(Some(_)) => machine,
                Ok(None) => return (now, Next::After(ACTION_POLL_MS)),
                Err(err) => return attachment_waits(now, &err),
            }
        }
    };
    match ctx.volumes.volume_get(&volume_id).await {
        Ok(Some(b))
            if !b.droplet_ids.contains(&droplet)
                && a.state == state::DELETING
                && a.message.as_deref() == Some(ASKED) =>
        {
            return (now.state(state::DELETED, None), Next::Now);
        }
        Ok(None) => return (now.state(state::DELETED, None), Next::Now),
        Err(err) => return attachment_waits(now, &err),
        Ok(_) => {}
    }
    // Asked even while an attach is still running there (the provider answers "pending event").
    match ctx.volumes.volume_action(&volume_id, &v.region, &VolumeAction::Detach { droplet_id: droplet }).await {
        Ok(action) => (
            AttachmentObserved { action_id: Some(action.to_string()), message: Some(ASKED.into()), ..now },
            Next::After(ACTION_POLL_MS),
        ),
        Err(err) if err.refusal() == Some(Refusal::AttachmentNotFound) => (now.state(state::DELETED, None), Next::Now),
        Err(err) => attachment_waits(now, &err),
    }
}

/// The message of an attachment whose detach was sent.
const ASKED: &str = "detach asked";

/// A share attach: tag the Droplet with the share's tag, then put the Droplet's VPC on the share.
async fn attach_share(
    ctx: &Ctx<'_>,
    v: &volume::Model,
    a: &attachment::Model,
    droplet_id: &str,
) -> (AttachmentObserved, Next) {
    let now = AttachmentObserved::of(a);
    let tag = share_tag(&v.id);
    let droplet = match ctx.instances.droplet_get(droplet_id).await {
        Ok(Some(d)) => d,
        Ok(None) => {
            return (
                now.state(state::ERROR, Some(format!("Droplet {droplet_id} is gone"))),
                Next::After(ERROR_RETRY_MS),
            );
        }
        Err(err) => return attachment_waits(now, &err),
    };
    if !droplet.tags.contains(&tag)
        && let Err(err) = ctx.instances.tag_droplet(&tag, droplet_id, true).await
    {
        return attachment_waits(now, &err);
    }
    let share = match ctx.volumes.share_get(&v.provider_id.clone().unwrap_or_default(), &v.region).await {
        Ok(Some(s)) => s,
        Ok(None) => return (now, Next::After(ACTION_POLL_MS)),
        Err(err) => return attachment_waits(now, &err),
    };
    let Some(vpc) = droplet.vpc_id else {
        return (now.state(state::ERROR, Some("the Droplet is on no VPC".into())), Next::After(ERROR_RETRY_MS));
    };
    if share.vpc_ids.contains(&vpc) {
        return (now.state(state::READY, None), Next::Now);
    }
    let asked = format!("vpc:{vpc}");
    if a.action_id.as_deref() == Some(&asked) {
        if share_action_stale(ctx, a) {
            let failed =
                AttachmentObserved { action_id: None, ..now.state(state::ERROR, Some(SHARE_ATTACH_FAILED.into())) };
            return (failed, Next::After(ERROR_RETRY_MS));
        }
        return (now, Next::After(ACTION_POLL_MS));
    }
    match ctx.volumes.share_action(&share.id, &ShareAction::Attach { vpc_id: vpc }).await {
        Ok(_) => (AttachmentObserved { action_id: Some(asked), ..now }, Next::After(ACTION_POLL_MS)),
        Err(err) => attachment_waits(now, &err),
    }
}

/// A share action has no status to poll: its effect shows on the share. One whose effect has not
/// shown after this long is taken for failed (error), and asked again by the periodic pass.
const SHARE_ACTION_PATIENCE_MS: i64 = 10 * 60_000;
const SHARE_RESIZE_FAILED: &str = "the provider did not resize the share within 10 minutes: the resize failed";
const SHARE_ATTACH_FAILED: &str =
    "the provider did not put the share on the Droplet's VPC within 10 minutes: the attach failed";

fn share_action_stale(ctx: &Ctx<'_>, a: &attachment::Model) -> bool {
    let asked_ms = a.updated_at.timestamp_millis();
    ctx.run.services.clock.now_ms() - asked_ms > SHARE_ACTION_PATIENCE_MS
}

/// A share detach: untag the Droplet, then take off the share every VPC no tagged Droplet is left
/// in, one at a time, keeping the share's last VPC.
async fn detach_share(
    ctx: &Ctx<'_>,
    v: &volume::Model,
    a: &attachment::Model,
    droplet_id: Option<String>,
) -> (AttachmentObserved, Next) {
    let now = AttachmentObserved::of(a);
    let tag = share_tag(&v.id);
    if let Some(droplet_id) = &droplet_id {
        match ctx.instances.droplet_get(droplet_id).await {
            Ok(Some(d)) if d.tags.contains(&tag) => {
                if let Err(err) = ctx.instances.tag_droplet(&tag, droplet_id, false).await {
                    return attachment_waits(now, &err);
                }
            }
            Ok(_) => {}
            Err(err) => return attachment_waits(now, &err),
        }
    }
    let share = match ctx.volumes.share_get(&v.provider_id.clone().unwrap_or_default(), &v.region).await {
        Ok(Some(s)) => s,
        Ok(None) => return (now.state(state::DELETED, None), Next::Now),
        Err(err) => return attachment_waits(now, &err),
    };
    if let Some(vpc) = a.action_id.as_deref().and_then(|asked| asked.strip_prefix("vpc-off:"))
        && share.vpc_ids.iter().any(|v| v == vpc)
        && !share_action_stale(ctx, a)
    {
        return (now, Next::After(ACTION_POLL_MS));
    }
    let tagged = match ctx.instances.droplets_tagged(&tag).await {
        Ok(tagged) => tagged,
        Err(err) => return attachment_waits(now, &err),
    };
    let used: Vec<String> = tagged.into_iter().filter_map(|d| d.vpc_id).collect();
    let Some(vpc) = vpc_to_take_off(&share.vpc_ids, &used) else {
        return (now.state(state::DELETED, None), Next::Now);
    };
    match ctx.volumes.share_action(&share.id, &ShareAction::Detach { vpc_id: vpc.clone() }).await {
        Ok(_) => (AttachmentObserved { action_id: Some(format!("vpc-off:{vpc}")), ..now }, Next::After(ACTION_POLL_MS)),
        Err(err) => attachment_waits(now, &err),
    }
}

/// The next VPC to take off a share: one no tagged Droplet is left in, unless it is the share's
/// last (a share always keeps one VPC).
pub fn vpc_to_take_off(share_vpcs: &[String], used: &[String]) -> Option<String> {
    let unused: Vec<&String> = share_vpcs.iter().filter(|vpc| !used.contains(vpc)).collect();
    let keeps_one = share_vpcs.len() > unused.len();
    let removable = if keeps_one { unused.len() } else { unused.len().saturating_sub(1) };
    unused.into_iter().take(removable).next().cloned()
}

/// A settled volume, read once an hour: one gone outside is lost for good; a share's ready
/// attachments are asked again (an attach is idempotent), which puts back a VPC a racing detach
/// took off.
async fn drift(ctx: &Ctx<'_>, v: &volume::Model, attached: &[attachment::Model]) -> Result<Next> {
    let id = v.provider_id.clone().unwrap_or_default();
    let seen = match v.kind.as_str() {
        BLOCK => ctx.volumes.volume_get(&id).await.map(|b| b.map(|b| b.size_gib)),
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
    if v.kind != BLOCK {
        for a in attached.iter().filter(|a| a.state == state::READY && a.desired_state == state::PRESENT) {
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

/// The provider id of the network's ready subnet VPC in `region`.
async fn subnet_vpc(run: &Run<'_>, network_id: &str, region: &str) -> Result<Option<String>> {
    let subnet = network_subnet::Entity::find()
        .filter(network_subnet::Column::NetworkId.eq(network_id))
        .filter(network_subnet::Column::Region.eq(region))
        .filter(network_subnet::Column::DesiredState.eq(state::PRESENT))
        .filter(network_subnet::Column::State.eq(state::READY))
        .one(&run.services.db)
        .await?;
    Ok(subnet.and_then(|s| s.provider_id))
}

/// Records a create attempt before the call (fenced, version-checked).
async fn mark_create_attempt(run: &Run<'_>, v: &volume::Model) -> Result<Option<volume::Model>> {
    let txn = run.services.begin().await?;
    rows::lock(&txn, "provider_volumes", &v.id).await?;
    let changed = volume::Entity::update_many()
        .col_expr(volume::Column::CreateAttempts, Expr::col(volume::Column::CreateAttempts).add(1))
        .col_expr(volume::Column::Version, Expr::col(volume::Column::Version).add(1))
        .filter(volume::Column::Id.eq(v.id.clone()))
        .filter(volume::Column::Version.eq(v.version))
        .exec(&txn)
        .await?
        .rows_affected;
    if changed == 0 || !queue::fence(&txn, run.claimed).await? {
        return Ok(None);
    }
    let marked = volume::Entity::find_by_id(v.id.clone()).one(&txn).await?;
    txn.commit().await?;
    Ok(marked)
}

/// The event a volume's change publishes.
fn event_type(before: &volume::Model, after: &Observed) -> &'static str {
    let grown = before.observed_size_gib.is_some_and(|was| after.observed_size_gib.is_some_and(|now| now > was));
    match (before.state.as_str(), after.state.as_str()) {
        (state::READY, state::READY) if grown => "resized",
        (b, a) if b == a => "updated",
        (UPDATING, state::READY) => "resized",
        (_, state::READY) => "ready",
        (_, state::ERROR) => "error",
        (_, state::DELETED) => "deleted",
        _ => "updated",
    }
}

/// Writes what was observed of the volume with its event, if this run still holds its lease and
/// the row did not change meanwhile; a deleted volume's diskGiB is refunded in the same
/// transaction. Nothing changed: nothing written.
async fn write(run: &Run<'_>, v: &volume::Model, observed: Observed, next: Next) -> Result<Next> {
    if observed == Observed::of(v) {
        return Ok(next);
    }
    let services = run.services;
    let txn = services.begin().await?;
    rows::lock(&txn, "provider_volumes", &v.id).await?;
    let now = services.clock.now();
    let mut update = volume::Entity::update_many()
        .col_expr(volume::Column::State, Expr::value(observed.state.clone()))
        .col_expr(volume::Column::ProviderId, Expr::value(observed.provider_id.clone()))
        .col_expr(volume::Column::ObservedSizeGib, Expr::value(observed.observed_size_gib))
        .col_expr(volume::Column::Device, Expr::value(observed.device.clone()))
        .col_expr(volume::Column::MountSource, Expr::value(observed.mount_source.clone()))
        .col_expr(volume::Column::CreateAttempts, Expr::value(observed.create_attempts))
        .col_expr(volume::Column::Lost, Expr::value(observed.lost))
        .col_expr(volume::Column::ActionId, Expr::value(observed.action_id.clone()))
        .col_expr(volume::Column::Message, Expr::value(observed.message.clone()))
        .col_expr(volume::Column::Version, Expr::col(volume::Column::Version).add(1))
        .col_expr(volume::Column::UpdatedAt, Expr::value(now));
    if observed.state == state::READY && v.ready_at.is_none() {
        update = update.col_expr(volume::Column::ReadyAt, Expr::value(now));
    }
    if observed.state == state::DELETED {
        update = update.col_expr(volume::Column::DeletedAt, Expr::value(now));
    }
    let changed = update
        .filter(volume::Column::Id.eq(v.id.clone()))
        .filter(volume::Column::Version.eq(v.version))
        .exec(&txn)
        .await?
        .rows_affected;
    if changed == 0 || !queue::fence(&txn, run.claimed).await? {
        return Ok(Next::Now);
    }
    let made = observed.state == state::READY && v.state != state::READY;
    if made {
        wake_snapshots(&txn, &v.id, services.clock.now_ms()).await?;
    }
    if observed.state == state::DELETED {
        let holding =
            quota::Holding { tenant_id: &v.tenant_id, pool_id: &v.pool_id, quota: svc::QUOTA, resource_id: &v.id };
        quota::hold(&txn, &holding, 0).await?;
    }
    let written =
        volume::Entity::find_by_id(v.id.clone()).one(&txn).await?.ok_or_else(|| Error::internal("volume vanished"))?;
    let attached = live_attachments(&txn, &v.id).await?;
    let event = svc::event(event_type(v, &observed), &written, &attached);
    if made {
        services.commit_and_wake(txn, vec![event]).await?;
    } else {
        services.commit(txn, vec![event]).await?;
    }
    Ok(next)
}

/// Records a provider action on an attachment that has none.
async fn keep_action(txn: &sea_orm::DatabaseTransaction, a: &attachment::Model, action: &str) -> Result<()> {
    attachment::Entity::update_many()
        .col_expr(attachment::Column::ActionId, Expr::value(action))
        .col_expr(attachment::Column::Version, Expr::col(attachment::Column::Version).add(1))
        .filter(attachment::Column::Id.eq(a.id.clone()))
        .filter(attachment::Column::ActionId.is_null())
        .exec(txn)
        .await?;
    Ok(())
}

/// Snapshots asked before their volume was made wait for it: wake them once it is.
async fn wake_snapshots(txn: &sea_orm::DatabaseTransaction, volume_id: &str, now_ms: i64) -> Result<()> {
    let waiting = provider_snapshot::Entity::find()
        .filter(provider_snapshot::Column::VolumeId.eq(volume_id))
        .filter(provider_snapshot::Column::ProviderId.is_null())
        .filter(provider_snapshot::Column::DesiredState.eq(state::PRESENT))
        .all(txn)
        .await?;
    for s in waiting {
        queue::wake(txn, crate::service::volumes::RECONCILER, &s.id, now_ms).await?;
    }
    Ok(())
}

/// Writes what was observed of one attachment, and the volume's event (`attached`, `detached`),
/// fenced and version-checked.
async fn write_attachment(
    run: &Run<'_>,
    v: &volume::Model,
    a: &attachment::Model,
    observed: AttachmentObserved,
    next: Next,
) -> Result<Next> {
    if observed == AttachmentObserved::of(a) {
        return Ok(next);
    }
    let services = run.services;
    let txn = services.begin().await?;
    rows::lock(&txn, "provider_volumes", &v.id).await?;
    let now = services.clock.now();
    let mut update = attachment::Entity::update_many()
        .col_expr(attachment::Column::State, Expr::value(observed.state.clone()))
        .col_expr(attachment::Column::ActionId, Expr::value(observed.action_id.clone()))
        .col_expr(attachment::Column::Message, Expr::value(observed.message.clone()))
        .col_expr(attachment::Column::Version, Expr::col(attachment::Column::Version).add(1))
        .col_expr(attachment::Column::UpdatedAt, Expr::value(now));
    if observed.state == state::READY {
        update = update.col_expr(attachment::Column::ReadyAt, Expr::value(now));
    }
    if observed.state == state::DELETED {
        update = update.col_expr(attachment::Column::DeletedAt, Expr::value(now));
    }
    let changed = update
        .filter(attachment::Column::Id.eq(a.id.clone()))
        .filter(attachment::Column::Version.eq(a.version))
        .exec(&txn)
        .await?
        .rows_affected;
    if changed == 0 {
        // Changed meanwhile (a detach asked): still keep the action just started, so the next
        // run waits for it instead of taking the volume for detached while it is landing.
        if let (None, Some(action)) = (&a.action_id, &observed.action_id) {
            keep_action(&txn, a, action).await?;
            if queue::fence(&txn, run.claimed).await? {
                txn.commit().await?;
            }
        }
        return Ok(Next::Now);
    }
    if !queue::fence(&txn, run.claimed).await? {
        return Ok(Next::Now);
    }
    let written = svc::bump(&txn, v, |u| u, now).await?;
    let attached = live_attachments(&txn, &v.id).await?;
    let event_type = match (a.state.as_str(), observed.state.as_str()) {
        (b, state::READY) if b != state::READY => "attached",
        (b, state::DELETED) if b != state::DELETED => "detached",
        _ => "updated",
    };
    services.commit(txn, vec![svc::event(event_type, &written, &attached)]).await?;
    Ok(next)
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
