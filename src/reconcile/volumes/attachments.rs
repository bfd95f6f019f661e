//! A volume's attachments: one attach or detach per run, a block volume's through its actions,
//! a share's by the Droplet's tag and the share's VPCs.
use super::*;
use crate::store::state::{Desired, State, VolumeKind};

pub(super) async fn converge_attachment(ctx: &Ctx<'_>, v: &volume::Model, a: &attachment::Model) -> Result<Next> {
    let run = ctx.run;
    let Some(on) = instance::Entity::find_by_id(a.instance_id.clone()).one(&run.services.db).await? else {
        return Err(Error::internal(format!("attachment {} without its instance", a.id)));
    };
    let now = AttachmentObserved::of(a);
    if a.desired_state == Desired::Present {
        if on.desired_state == Desired::Absent || on.state != State::Ready || on.provider_id.is_none() {
            let message = Some("waiting for the instance to be ready".to_owned());
            return write_attachment(run, v, a, AttachmentObserved { message, ..now }, Next::After(RETRY_LATER_MS))
                .await;
        }
        if v.state != State::Ready {
            return Ok(Next::After(ACTION_POLL_MS));
        }
    }
    let droplet = on.provider_id.clone().filter(|_| !on.lost && on.state != State::Deleted);
    let (observed, next) = match (v.kind, a.desired_state) {
        (VolumeKind::Block, Desired::Present) => attach_block(ctx, v, a, droplet.unwrap_or_default()).await,
        (VolumeKind::Block, _) => detach_block(ctx, v, a, droplet, on.provider_id.clone()).await,
        (_, Desired::Present) => attach_share(ctx, v, a, &droplet.unwrap_or_default()).await,
        _ => detach_share(ctx, v, a, droplet).await,
    };
    write_attachment(run, v, a, observed, next).await
}

/// What an action poll says of an attachment's action: None while it runs.
pub(super) async fn action_outcome(ctx: &Ctx<'_>, action: &str) -> std::result::Result<Option<bool>, ProviderError> {
    Ok(match ctx.actions.action_get(action.parse().unwrap_or_default()).await? {
        Some(ActionStatus::InProgress) => None,
        Some(ActionStatus::Completed) => Some(true),
        Some(ActionStatus::Errored) | None => Some(false),
    })
}

pub(super) fn attachment_waits(now: AttachmentObserved, err: &ProviderError) -> (AttachmentObserved, Next) {
    let message = Some(err.message().to_owned());
    if err.refusal() == Some(Refusal::PendingEvent) {
        return (AttachmentObserved { message, ..now }, Next::After(ACTION_POLL_MS));
    }
    if is_failure(err) {
        return (now.state(State::Error, message), Next::After(ERROR_RETRY_MS));
    }
    (AttachmentObserved { message, ..now }, retry_after(err))
}

pub(super) async fn attach_block(
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
                Ok(Some(b)) if b.droplet_ids.contains(&droplet) => (now.state(State::Ready, None), Next::Now),
                // Completed without attaching it (the Droplet went away): ask again.
                Ok(_) => (AttachmentObserved { action_id: None, ..now }, Next::After(ACTION_POLL_MS)),
                Err(err) => attachment_waits(now, &err),
            },
            Ok(Some(false)) => (
                AttachmentObserved {
                    action_id: None,
                    ..now.state(State::Error, Some("the provider's attach failed".into()))
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
        Ok(Some(b)) if b.droplet_ids.contains(&droplet) => return (now.state(State::Ready, None), Next::Now),
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
            Ok(Some(b)) if b.droplet_ids.contains(&droplet) => (now.state(State::Ready, None), Next::Now),
            Ok(_) => (
                now.state(
                    State::Error,
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
pub(super) async fn detach_block(
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
            let Some(machine) = on_it else { return (now.state(State::Deleted, None), Next::Now) };
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
                && a.state == State::Deleting
                && a.message.as_deref() == Some(ASKED) =>
        {
            return (now.state(State::Deleted, None), Next::Now);
        }
        Ok(None) => return (now.state(State::Deleted, None), Next::Now),
        Err(err) => return attachment_waits(now, &err),
        Ok(_) => {}
    }
    // Asked even while an attach is still running there (the provider answers "pending event").
    match ctx.volumes.volume_action(&volume_id, &v.region, &VolumeAction::Detach { droplet_id: droplet }).await {
        Ok(action) => (
            AttachmentObserved { action_id: Some(action.to_string()), message: Some(ASKED.into()), ..now },
            Next::After(ACTION_POLL_MS),
        ),
        Err(err) if err.refusal() == Some(Refusal::AttachmentNotFound) => (now.state(State::Deleted, None), Next::Now),
        Err(err) => attachment_waits(now, &err),
    }
}

/// The message of an attachment whose detach was sent.
pub(super) const ASKED: &str = "detach asked";

/// A share attach: tag the Droplet with the share's tag, then put the Droplet's VPC on the share.
pub(super) async fn attach_share(
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
                now.state(State::Error, Some(format!("Droplet {droplet_id} is gone"))),
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
        return (now.state(State::Error, Some("the Droplet is on no VPC".into())), Next::After(ERROR_RETRY_MS));
    };
    if share.vpc_ids.contains(&vpc) {
        return (now.state(State::Ready, None), Next::Now);
    }
    let asked = format!("vpc:{vpc}");
    if a.action_id.as_deref() == Some(&asked) {
        if share_action_stale(ctx, a) {
            let failed =
                AttachmentObserved { action_id: None, ..now.state(State::Error, Some(SHARE_ATTACH_FAILED.into())) };
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
pub(super) const SHARE_ACTION_PATIENCE_MS: i64 = 10 * 60_000;
pub(super) const SHARE_RESIZE_FAILED: &str =
    "the provider did not resize the share within 10 minutes: the resize failed";
pub(super) const SHARE_ATTACH_FAILED: &str =
    "the provider did not put the share on the Droplet's VPC within 10 minutes: the attach failed";

pub(super) fn share_action_stale(ctx: &Ctx<'_>, a: &attachment::Model) -> bool {
    let asked_ms = a.updated_at.timestamp_millis();
    ctx.run.services.clock.now_ms() - asked_ms > SHARE_ACTION_PATIENCE_MS
}

/// A share detach: untag the Droplet, then take off the share every VPC no tagged Droplet is left
/// in, one at a time, keeping the share's last VPC.
pub(super) async fn detach_share(
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
        Ok(None) => return (now.state(State::Deleted, None), Next::Now),
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
        return (now.state(State::Deleted, None), Next::Now);
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

/// Writes what was observed of one attachment (the action started is a fact, its state
/// decided), and the volume's event (`attached`, `detached`) with the volume's version bumped,
/// if this run still holds its lease.
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
    rows::lock(&txn, "provider_volumes", &v.id).await?;
    let now = services.clock.now();
    let change = StatusWrite::of(&a.id, a.generation)
        .fact(attachment::Column::ActionId, observed.action_id.clone())
        .decided(attachment::Column::Message, observed.message.clone())
        .state(observed.state);
    let Some(done) = change.write::<attachment::Entity>(&txn, run.claimed, now).await? else {
        return Ok(Next::Now);
    };
    // The volume's view holds its attachments: its version orders the event.
    let Some(written) = StatusWrite::of(&v.id, v.generation).write::<volume::Entity>(&txn, run.claimed, now).await?
    else {
        return Ok(Next::Now);
    };
    let attached = live_attachments(&txn, &v.id).await?;
    let event_type = match (a.state, done.state) {
        (b, State::Ready) if b != State::Ready => "attached",
        (b, State::Deleted) if b != State::Deleted => "detached",
        _ => "updated",
    };
    services.commit(txn, vec![svc::event(event_type, &written, &attached)]).await?;
    Ok(again_if_changed(next, a.generation, done.generation))
}
