//! A volume's resize: looked at before it is sent (a lost answer may have been carried out),
//! then followed until the provider shows the size. What each look and answer means is decided
//! in `decide`; this module reads and calls.
use super::*;

/// Grows the volume to its asked size. It looks first: a resize whose answer was lost (a
/// dropped connection, or the process gone before the write-back) may be running or done, and
/// sending it again would be refused as not larger.
pub(super) async fn resize(ctx: &Ctx<'_>, v: &volume::Model) -> Result<Next> {
    let id = v.provider_id.clone().unwrap_or_default();
    let looked = match v.kind {
        VolumeKind::Block => {
            match decide::resize_running(v, ctx.cloud.volume_action_running(&id, VolumeActionKind::Resize).await) {
                Some(decided) => Some(decided),
                None => decide::resize_looked(v, ctx.cloud.volume_get(&id).await.map(|b| b.map(|b| b.size_gib))),
            }
        }
        _ => decide::resize_looked(v, ctx.cloud.share_get(&id, &v.region).await.map(|s| s.map(|s| s.size_gib))),
    };
    if let Some((observed, next)) = looked {
        return write(ctx.run, v, observed, next).await;
    }
    let answer = match v.kind {
        VolumeKind::Block => {
            let resize = VolumeAction::Resize { size_gib: v.size_gib };
            ctx.cloud.volume_action(&id, &v.region, &resize).await.map(Pending::Action)
        }
        _ => {
            let resize = ShareAction::Resize { size_gib: v.size_gib };
            let asked_ms = ctx.run.services.clock.now_ms();
            ctx.cloud.share_action(&id, &resize).await.map(|_| Pending::ShareResize { size_gib: v.size_gib, asked_ms })
        }
    };
    let (observed, next) = decide::resize_sent(v, answer);
    write(ctx.run, v, observed, next).await
}

/// A volume action in flight (a resize): looked at again until it is done.
pub(super) async fn follow_action(ctx: &Ctx<'_>, v: &volume::Model) -> Result<Next> {
    let id = v.provider_id.clone().unwrap_or_default();
    let (observed, next) = match v.action_id.as_deref().and_then(Pending::parse) {
        Some(Pending::ShareResize { size_gib, asked_ms }) => {
            let seen = ctx.cloud.share_get(&id, &v.region).await;
            decide::share_resize_followed(v, size_gib, asked_ms, ctx.run.services.clock.now_ms(), seen)
        }
        Some(Pending::Action(action)) => match decide::resize_polled(v, ctx.cloud.action_get(action).await) {
            Some(decided) => decided,
            None => decide::resize_done(v, ctx.cloud.volume_get(&id).await.map(|b| b.map(|b| b.size_gib))),
        },
        _ => decide::unreadable_action(v),
    };
    write(ctx.run, v, observed, next).await
}
