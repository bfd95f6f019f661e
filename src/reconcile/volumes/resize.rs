//! A volume's resize: looked at before it is sent (a lost answer may have been carried out),
//! then followed until the provider shows the size.
use super::*;
use crate::store::state::{State, VolumeKind};

/// Grows the volume to its asked size. It looks first: a resize whose answer was lost (a
/// dropped connection, or the process gone before the write-back) may be running or done, and
/// sending it again would be refused as not larger.
pub(super) async fn resize(ctx: &Ctx<'_>, v: &volume::Model) -> Result<Next> {
    let id = v.provider_id.clone().unwrap_or_default();
    if let Some((observed, next)) = resize_seen(ctx, v, &id).await {
        return write(ctx.run, v, observed, next).await;
    }
    let answer = match v.kind {
        VolumeKind::Block => ctx
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
        Ok(action) => (
            Observed { action_id: Some(action), ..Observed::of(v).state(State::Updating, None) },
            Next::After(ACTION_POLL_MS),
        ),
        Err(err) => failed(v, &err),
    };
    write(ctx.run, v, observed, next).await
}

/// What a look before a resize found, when it settles the run: a resize running (followed), the
/// volume at its size already (ready), or gone or unreadable. None: the resize is to be sent.
pub(super) async fn resize_seen(ctx: &Ctx<'_>, v: &volume::Model, id: &str) -> Option<(Observed, Next)> {
    let updating =
        |action: String| Observed { action_id: Some(action), ..Observed::of(v).state(State::Updating, None) };
    let size = if v.kind == VolumeKind::Block {
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
pub(super) fn resized(v: &volume::Model, size: i64) -> Observed {
    Observed { action_id: None, observed_size_gib: Some(size), ..Observed::of(v).state(State::Ready, None) }
}

/// A volume action in flight (a resize): looked at again until it is done.
pub(super) async fn follow_action(ctx: &Ctx<'_>, v: &volume::Model) -> Result<Next> {
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
                Observed { action_id: None, ..Observed::of(v).state(State::Error, Some(SHARE_RESIZE_FAILED.into())) },
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
                    ..Observed::of(v).state(State::Error, Some("the provider's resize failed".into()))
                },
                Next::After(ERROR_RETRY_MS),
            ),
            Err(err) => (Observed::of(v).said(err.message()), retry_after(&err)),
        }
    };
    write(ctx.run, v, observed, next).await
}
