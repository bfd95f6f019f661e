//! A volume's attachments: one attach or detach per run, a block volume's through its actions,
//! a share's by the Droplet's tag and the share's VPCs. Each looks before it acts (an attach or
//! detach whose answer was lost may have been carried out); what each look and answer means is
//! decided in `decide`; this module reads and calls.
pub(super) mod decide;

use super::*;
use decide::{AttachmentObserved, Step, polled};

/// Reads `read`, or ends the run's step with what a failed read decides.
macro_rules! step {
    ($read:expr) => {
        match $read {
            Ok(found) => found,
            Err(step) => return step,
        }
    };
}

pub(super) async fn converge_attachment(ctx: &Ctx<'_>, v: &volume::Model, a: &attachment::Model) -> Result<Next> {
    let run = ctx.run;
    let Some(on) = instances::find(&run.services.db, &a.instance_id).await? else {
        return Err(Error::internal(format!("attachment {} without its instance", a.id)));
    };
    if let Some((observed, next)) = decide::not_ready(v, a, &on) {
        return write_attachment(run, v, a, observed, next).await;
    }
    let droplet = on.provider_id.clone().filter(|_| !on.lost && on.state != State::Deleted);
    let (observed, next) = match (v.kind, a.desired_state) {
        (VolumeKind::Block, Desired::Present) => attach_block(ctx, v, a, &droplet.unwrap_or_default()).await,
        (VolumeKind::Block, _) => detach_block(ctx, v, a, droplet, on.provider_id.as_deref()).await,
        (_, Desired::Present) => attach_share(ctx, v, a, &droplet.unwrap_or_default()).await,
        _ => detach_share(ctx, v, a, droplet).await,
    };
    write_attachment(run, v, a, observed, next).await
}

/// The action an attachment's row records, polled: `Ok(completed?)` once it ended.
async fn poll(ctx: &Ctx<'_>, now: &AttachmentObserved, action: Option<Pending>) -> Result<bool, Step> {
    // A row's action this code never writes for a block volume: forgotten, and looked at again.
    let Some(Pending::Action(id)) = action else { return Err((now.clone().forgot_action(), Next::Now)) };
    polled(now, ctx.cloud.action_get(id).await)
}

async fn attach_block(ctx: &Ctx<'_>, v: &volume::Model, a: &attachment::Model, droplet: &str) -> Step {
    let now = AttachmentObserved::of(a);
    let volume_id = v.provider_id.clone().unwrap_or_default();
    if let Some(action) = &a.action_id {
        let completed = step!(poll(ctx, &now, Pending::parse(action)).await);
        let seen = if completed { Some(ctx.cloud.volume_get(&volume_id).await) } else { None };
        return decide::attach_ended(now, seen, droplet);
    }
    let running = ctx.cloud.volume_action_running(&volume_id, VolumeActionKind::Attach).await;
    if let Some(step) = decide::attach_running(&now, running) {
        return step;
    }
    if let Some(step) = decide::attach_looked(&now, ctx.cloud.volume_get(&volume_id).await, droplet) {
        return step;
    }
    let attach = VolumeAction::Attach { droplet_id: droplet.to_owned() };
    match decide::attach_sent(now.clone(), ctx.cloud.volume_action(&volume_id, &v.region, &attach).await) {
        Ok(step) => step,
        Err(()) => decide::already_attached(now, ctx.cloud.volume_get(&volume_id).await, droplet),
    }
}

/// `droplet` is the instance's machine while it lives; `gone` the one it had once it is gone.
async fn detach_block(
    ctx: &Ctx<'_>,
    v: &volume::Model,
    a: &attachment::Model,
    droplet: Option<String>,
    gone: Option<&str>,
) -> Step {
    let now = AttachmentObserved::of(a);
    let volume_id = v.provider_id.clone().unwrap_or_default();
    if let Some(action) = &a.action_id {
        step!(poll(ctx, &now, Pending::parse(action)).await);
        return decide::detach_ended(now);
    }
    let droplet = match droplet {
        Some(droplet) => droplet,
        None => {
            let machine = step!(decide::machine_gone(&now, ctx.cloud.volume_get(&volume_id).await, gone));
            if let Some(step) = decide::machine_checked(&now, ctx.cloud.droplet_get(&machine).await) {
                return step;
            }
            machine
        }
    };
    if let Some(step) = decide::detach_looked(&now, a, ctx.cloud.volume_get(&volume_id).await, &droplet) {
        return step;
    }
    let detach = VolumeAction::Detach { droplet_id: droplet };
    decide::detach_sent(now, ctx.cloud.volume_action(&volume_id, &v.region, &detach).await)
}

/// A share attach, one state-changing call per run: tag the Droplet with the share's tag; in a
/// later run, put the Droplet's VPC on the share.
async fn attach_share(ctx: &Ctx<'_>, v: &volume::Model, a: &attachment::Model, droplet_id: &str) -> Step {
    let now = AttachmentObserved::of(a);
    let tag = share_tag(&v.id);
    let droplet = step!(decide::share_droplet(&now, ctx.cloud.droplet_get(droplet_id).await, droplet_id));
    if !droplet.tags.contains(&tag) {
        return match ctx.cloud.tag_droplets(&tag, &[droplet_id.to_owned()], true).await {
            Ok(()) => (now, Next::Now),
            Err(err) => decide::waits(now, &err),
        };
    }
    let share_id = v.provider_id.clone().unwrap_or_default();
    let share = step!(decide::share_to_attach(&now, ctx.cloud.share_get(&share_id, &v.region).await));
    let (asked_ms, now_ms) = (a.updated_at.timestamp_millis(), ctx.run.services.clock.now_ms());
    let vpc = step!(decide::before_share_attach(&now, &share, &droplet, asked_ms, now_ms));
    let answer = ctx.cloud.share_action(&share.id, &ShareAction::Attach { vpc_id: vpc.clone() }).await;
    decide::share_attach_sent(now, vpc, answer)
}

/// A share detach, one state-changing call per run: untag the Droplet; in later runs, take off
/// the share every VPC no tagged Droplet is left in, one at a time, keeping the share's last VPC.
async fn detach_share(ctx: &Ctx<'_>, v: &volume::Model, a: &attachment::Model, droplet_id: Option<String>) -> Step {
    let now = AttachmentObserved::of(a);
    let tag = share_tag(&v.id);
    if let Some(droplet_id) = &droplet_id {
        match ctx.cloud.droplet_get(droplet_id).await {
            Ok(Some(d)) if d.tags.contains(&tag) => {
                return match ctx.cloud.tag_droplets(&tag, std::slice::from_ref(droplet_id), false).await {
                    Ok(()) => (now, Next::Now),
                    Err(err) => decide::waits(now, &err),
                };
            }
            Ok(_) => {}
            Err(err) => return decide::waits(now, &err),
        }
    }
    let share_id = v.provider_id.clone().unwrap_or_default();
    let share = step!(decide::share_to_detach(&now, ctx.cloud.share_get(&share_id, &v.region).await));
    let (asked_ms, now_ms) = (a.updated_at.timestamp_millis(), ctx.run.services.clock.now_ms());
    if let Some(step) = decide::share_detach_pending(&now, &share, asked_ms, now_ms) {
        return step;
    }
    let vpc = step!(decide::next_vpc_off(&now, &share, ctx.cloud.droplets_tagged(&tag).await));
    let answer = ctx.cloud.share_action(&share.id, &ShareAction::Detach { vpc_id: vpc.clone() }).await;
    decide::share_detach_sent(now, vpc, answer)
}

/// Writes what was observed of one attachment, and the volume's event (`attached`, `detached`)
/// with the volume's version bumped, if this run still holds its lease.
pub(super) async fn write_attachment(
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
    crate::store::lock(&txn, "provider_volumes", &v.id).await?;
    let now = services.clock.now();
    let Some(done) = observed.status(a).write::<attachment::Entity>(&txn, run.claimed, now).await? else {
        return Ok(Next::Now);
    };
    // The volume's view holds its attachments: its version orders the event.
    let Some(written) = StatusWrite::of(&v.id, v.generation).write::<volume::Entity>(&txn, run.claimed, now).await?
    else {
        return Ok(Next::Now);
    };
    let attached = live_attachments(&txn, &v.id).await?;
    let event = crate::views::volumes::event(decide::event_type(a.state, done.state), &written, &attached);
    services.commit(txn, vec![event]).await?;
    Ok(again_if_changed(next, a.generation, done.generation))
}
