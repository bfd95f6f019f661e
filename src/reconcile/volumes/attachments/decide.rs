//! What a run decides of one attachment from its row and what the provider showed or answered:
//! pure functions, one per phase (as `volumes::decide` for the volume), tested in
//! `volumes/tests.rs`. A phase that answers `None` (or `Ok`) has settled nothing: the run goes
//! on to its next look or call.
use super::super::super::{ACTION_POLL_MS, ERROR_RETRY_MS, Next, RETRY_LATER_MS, is_failure, retry_after};
use super::super::decide::{Decided, Pending, SHARE_ACTION_PATIENCE_MS};
use crate::provider::{ActionStatus, BlockVolume, Droplet, ProviderError, ProviderResult, Refusal, Share};
use crate::store::entity::{instance, provider_volume as volume, volume_attachment as attachment};
use crate::store::state::{Desired, State};
use crate::store::status::StatusWrite;

/// The attachment fields a run writes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AttachmentObserved {
    pub state: State,
    pub action_id: Option<String>,
    pub message: Option<String>,
}

impl AttachmentObserved {
    pub fn of(a: &attachment::Model) -> Self {
        AttachmentObserved { state: a.state, action_id: a.action_id.clone(), message: a.message.clone() }
    }

    pub fn state(mut self, state: State, message: Option<String>) -> Self {
        self.state = state;
        self.message = message;
        if state == State::Ready || state == State::Deleted {
            self.action_id = None;
        }
        self
    }

    fn asked(self, pending: Pending, message: Option<String>) -> Self {
        AttachmentObserved { action_id: Some(pending.to_string()), message, ..self }
    }

    pub fn forgot_action(self) -> Self {
        AttachmentObserved { action_id: None, ..self }
    }

    /// The row's write: the action started as a fact, the state and message decided.
    pub fn status(&self, a: &attachment::Model) -> StatusWrite {
        StatusWrite::of(&a.id, a.generation)
            .fact(attachment::Column::ActionId, self.action_id.clone())
            .decided(attachment::Column::Message, self.message.clone())
            .state(self.state)
    }
}

pub(super) type Step = Decided<AttachmentObserved>;

/// The message of an attachment whose detach was sent.
pub const ASKED: &str = "detach asked";
pub const SHARE_ATTACH_FAILED: &str =
    "the provider did not put the share on the Droplet's VPC within 10 minutes: the attach failed";

/// The event an attachment's change publishes on its volume.
pub fn event_type(before: State, after: State) -> &'static str {
    match (before, after) {
        (b, State::Ready) if b != State::Ready => "attached",
        (b, State::Deleted) if b != State::Deleted => "detached",
        _ => "updated",
    }
}

/// An attach waits for its instance to be ready with a machine, and for its volume to be made.
pub fn not_ready(v: &volume::Model, a: &attachment::Model, on: &instance::Model) -> Option<Step> {
    if a.desired_state != Desired::Present {
        return None;
    }
    let now = AttachmentObserved::of(a);
    if on.desired_state == Desired::Absent || on.state != State::Ready || on.provider_id.is_none() {
        let message = Some("waiting for the instance to be ready".to_owned());
        return Some((AttachmentObserved { message, ..now }, Next::After(RETRY_LATER_MS)));
    }
    (v.state != State::Ready).then_some((now, Next::After(ACTION_POLL_MS)))
}

/// A provider error: the provider's "pending event" (another action running on the volume) is
/// waited out, a refusal is the attachment's error, anything else looked at again as allowed.
pub fn waits(now: AttachmentObserved, err: &ProviderError) -> Step {
    let message = Some(err.message().to_owned());
    if err.refusal() == Some(Refusal::PendingEvent) {
        return (AttachmentObserved { message, ..now }, Next::After(ACTION_POLL_MS));
    }
    if is_failure(err) {
        return (now.state(State::Error, message), Next::After(ERROR_RETRY_MS));
    }
    (AttachmentObserved { message, ..now }, retry_after(err))
}

/// A read that must find what it reads; `missing` decides when it is gone.
fn seen<T>(now: &AttachmentObserved, read: ProviderResult<Option<T>>, missing: Step) -> Result<T, Step> {
    match read {
        Ok(Some(found)) => Ok(found),
        Ok(None) => Err(missing),
        Err(err) => Err(waits(now.clone(), &err)),
    }
}

fn on(b: &BlockVolume, droplet: &str) -> bool {
    b.droplet_ids.iter().any(|d| d == droplet)
}

/// A block attach's or detach's action, polled: `Ok(completed?)` once it ended (an action the
/// provider no longer shows ended badly), or the step while it runs or cannot be read.
pub fn polled(now: &AttachmentObserved, status: ProviderResult<Option<ActionStatus>>) -> Result<bool, Step> {
    match status {
        Ok(Some(ActionStatus::InProgress)) => Err((now.clone(), Next::After(ACTION_POLL_MS))),
        Ok(Some(ActionStatus::Completed)) => Ok(true),
        Ok(Some(ActionStatus::Errored)) | Ok(None) => Ok(false),
        Err(err) => Err(waits(now.clone(), &err)),
    }
}

/// A block attach whose action ended: the volume read after it completed (`None` when it failed).
pub fn attach_ended(now: AttachmentObserved, seen: Option<ProviderResult<Option<BlockVolume>>>, droplet: &str) -> Step {
    match seen {
        None => (
            now.forgot_action().state(State::Error, Some("the provider's attach failed".into())),
            Next::After(ERROR_RETRY_MS),
        ),
        Some(Ok(Some(b))) if on(&b, droplet) => (now.state(State::Ready, None), Next::Now),
        // Completed without attaching it (the Droplet went away): ask again.
        Some(Ok(_)) => (now.forgot_action(), Next::After(ACTION_POLL_MS)),
        Some(Err(err)) => waits(now, &err),
    }
}

/// Before a block attach is sent, the attach the provider is running on the volume: what one
/// whose answer was lost started is followed, not sent again.
pub fn attach_running(now: &AttachmentObserved, running: ProviderResult<Option<u64>>) -> Option<Step> {
    match running {
        Ok(Some(action)) => {
            Some((now.clone().asked(Pending::Action(action), now.message.clone()), Next::After(ACTION_POLL_MS)))
        }
        Ok(None) => None,
        Err(err) => Some(waits(now.clone(), &err)),
    }
}

/// Before a block attach is sent, the volume as the provider shows it: already on the Droplet
/// (an attach whose answer was lost, carried out) is ready; None sends the attach.
pub fn attach_looked(
    now: &AttachmentObserved,
    seen: ProviderResult<Option<BlockVolume>>,
    droplet: &str,
) -> Option<Step> {
    match seen {
        Ok(Some(b)) if on(&b, droplet) => Some((now.clone().state(State::Ready, None), Next::Now)),
        Ok(_) => None,
        Err(err) => Some(waits(now.clone(), &err)),
    }
}

/// The attach's answer. `Err(())`: refused as attached already, and the volume is read to tell
/// whether to this Droplet (`already_attached`).
pub fn attach_sent(now: AttachmentObserved, answer: ProviderResult<u64>) -> Result<Step, ()> {
    match answer {
        Ok(action) => Ok((now.asked(Pending::Action(action), None), Next::After(ACTION_POLL_MS))),
        Err(err) if err.refusal() == Some(Refusal::AlreadyAttached) => Err(()),
        Err(err) => Ok(waits(now, &err)),
    }
}

/// An attach refused as attached already: ready if to this Droplet, else an error (nothing is
/// ever moved off another machine).
pub fn already_attached(now: AttachmentObserved, seen: ProviderResult<Option<BlockVolume>>, droplet: &str) -> Step {
    match seen {
        Ok(Some(b)) if on(&b, droplet) => (now.state(State::Ready, None), Next::Now),
        Ok(_) => {
            let message = "the volume is attached to another Droplet at the provider; nothing was moved";
            (now.state(State::Error, Some(message.into())), Next::After(ERROR_RETRY_MS))
        }
        Err(err) => waits(now, &err),
    }
}

/// A block detach whose action ended (`polled`): looked at again, now without an action.
pub fn detach_ended(now: AttachmentObserved) -> Step {
    (now.forgot_action(), Next::Now)
}

/// A detach whose instance is gone (or never had a machine): `gone` is the machine it had. A
/// machine deleted with it lets its volumes go shortly after; one left running (the instance
/// finished as a detach) is detached like any other: `Ok` names the machine to check.
pub fn machine_gone(
    now: &AttachmentObserved,
    seen: ProviderResult<Option<BlockVolume>>,
    gone: Option<&str>,
) -> Result<String, Step> {
    match seen {
        Ok(Some(b)) => match gone.filter(|g| on(&b, g)) {
            Some(machine) => Ok(machine.to_owned()),
            None => Err((now.clone().state(State::Deleted, None), Next::Now)),
        },
        Ok(None) => Err((now.clone().state(State::Deleted, None), Next::Now)),
        Err(err) => Err(waits(now.clone(), &err)),
    }
}

/// The gone instance's machine, read: one still there is detached; one gone is waited for.
pub fn machine_checked(now: &AttachmentObserved, found: ProviderResult<Option<Droplet>>) -> Option<Step> {
    match found {
        Ok(Some(_)) => None,
        Ok(None) => Some((now.clone(), Next::After(ACTION_POLL_MS))),
        Err(err) => Some(waits(now.clone(), &err)),
    }
}

/// Before a detach is sent, the volume: off the Droplet after a detach asked (one whose answer
/// was lost, carried out), or gone, is detached; None sends the detach.
pub fn detach_looked(
    now: &AttachmentObserved,
    a: &attachment::Model,
    seen: ProviderResult<Option<BlockVolume>>,
    droplet: &str,
) -> Option<Step> {
    let deleted = (now.clone().state(State::Deleted, None), Next::Now);
    match seen {
        Ok(Some(b)) if !on(&b, droplet) && a.state == State::Deleting && a.message.as_deref() == Some(ASKED) => {
            Some(deleted)
        }
        Ok(None) => Some(deleted),
        Err(err) => Some(waits(now.clone(), &err)),
        Ok(_) => None,
    }
}

/// The detach's answer (asked even while an attach is still running there: the provider answers
/// "pending event", waited out).
pub fn detach_sent(now: AttachmentObserved, answer: ProviderResult<u64>) -> Step {
    match answer {
        Ok(action) => (now.asked(Pending::Action(action), Some(ASKED.into())), Next::After(ACTION_POLL_MS)),
        Err(err) if err.refusal() == Some(Refusal::AttachmentNotFound) => (now.state(State::Deleted, None), Next::Now),
        Err(err) => waits(now, &err),
    }
}

/// A share attach's Droplet: one gone is the attachment's error.
pub fn share_droplet(
    now: &AttachmentObserved,
    found: ProviderResult<Option<Droplet>>,
    id: &str,
) -> Result<Droplet, Step> {
    let gone = (now.clone().state(State::Error, Some(format!("Droplet {id} is gone"))), Next::After(ERROR_RETRY_MS));
    seen(now, found, gone)
}

/// A share attach's share: one not there (yet) is looked at again.
pub fn share_to_attach(now: &AttachmentObserved, found: ProviderResult<Option<Share>>) -> Result<Share, Step> {
    seen(now, found, (now.clone(), Next::After(ACTION_POLL_MS)))
}

/// A share detach's share: one gone has nothing left to detach.
pub fn share_to_detach(now: &AttachmentObserved, found: ProviderResult<Option<Share>>) -> Result<Share, Step> {
    seen(now, found, (now.clone().state(State::Deleted, None), Next::Now))
}

/// Said of a ready attachment whose Droplet's VPC a drift read found off the share.
pub const VPC_TAKEN_OFF: &str = "the Droplet's VPC was taken off the share outside vps-graph; it is put back";

/// A ready share attachment, as a drift read of the share (its `vpcs`) and of its Droplet shows
/// it: one whose VPC is off the share is attached again (by the attach's own runs, one call
/// each). A Droplet that could not be read, or is gone, says nothing of the share here.
pub fn vpc_taken_off(
    now: &AttachmentObserved,
    vpcs: &[String],
    droplet: ProviderResult<Option<Droplet>>,
) -> Option<Step> {
    let vpc = droplet.ok().flatten()?.vpc_id?;
    if vpcs.contains(&vpc) {
        return None;
    }
    Some((now.clone().state(State::Pending, Some(VPC_TAKEN_OFF.into())), Next::Now))
}

/// Whether a share action asked at `asked_ms` has had its time to show.
fn stale(asked_ms: i64, now_ms: i64) -> bool {
    now_ms - asked_ms > SHARE_ACTION_PATIENCE_MS
}

/// Before the Droplet's VPC is put on the share: on it already is ready; the same VPC asked is
/// waited for (and failed once stale); `Ok(vpc)` sends the attach.
pub fn before_share_attach(
    now: &AttachmentObserved,
    share: &Share,
    droplet: &Droplet,
    asked_ms: i64,
    now_ms: i64,
) -> Result<String, Step> {
    let Some(vpc) = droplet.vpc_id.clone() else {
        return Err((
            now.clone().state(State::Error, Some("the Droplet is on no VPC".into())),
            Next::After(ERROR_RETRY_MS),
        ));
    };
    if share.vpc_ids.contains(&vpc) {
        return Err((now.clone().state(State::Ready, None), Next::Now));
    }
    if now.action_id.as_deref().and_then(Pending::parse) == Some(Pending::VpcOn(vpc.clone())) {
        if stale(asked_ms, now_ms) {
            let failed = now.clone().forgot_action().state(State::Error, Some(SHARE_ATTACH_FAILED.into()));
            return Err((failed, Next::After(ERROR_RETRY_MS)));
        }
        return Err((now.clone(), Next::After(ACTION_POLL_MS)));
    }
    Ok(vpc)
}

/// The share attach's answer: its effect is looked for on the share.
pub fn share_attach_sent(now: AttachmentObserved, vpc: String, answer: ProviderResult<Option<String>>) -> Step {
    match answer {
        Ok(_) => (now.clone().asked(Pending::VpcOn(vpc), now.message), Next::After(ACTION_POLL_MS)),
        Err(err) => waits(now, &err),
    }
}

/// A share detach whose VPC removal is still showing on the share (and not stale) is waited for.
pub fn share_detach_pending(now: &AttachmentObserved, share: &Share, asked_ms: i64, now_ms: i64) -> Option<Step> {
    let Some(Pending::VpcOff(vpc)) = now.action_id.as_deref().and_then(Pending::parse) else { return None };
    (share.vpc_ids.contains(&vpc) && !stale(asked_ms, now_ms)).then(|| (now.clone(), Next::After(ACTION_POLL_MS)))
}

/// What comes off the share next, given the VPCs the share's tagged Droplets are in: `Ok(vpc)`
/// sends that detach; nothing left to take off is detached.
pub fn next_vpc_off(
    now: &AttachmentObserved,
    share: &Share,
    tagged: ProviderResult<Vec<Droplet>>,
) -> Result<String, Step> {
    let tagged = tagged.map_err(|err| waits(now.clone(), &err))?;
    let used: Vec<String> = tagged.into_iter().filter_map(|d| d.vpc_id).collect();
    vpc_to_take_off(&share.vpc_ids, &used).ok_or_else(|| (now.clone().state(State::Deleted, None), Next::Now))
}

/// The share detach's answer.
pub fn share_detach_sent(now: AttachmentObserved, vpc: String, answer: ProviderResult<Option<String>>) -> Step {
    match answer {
        Ok(_) => (now.clone().asked(Pending::VpcOff(vpc), now.message), Next::After(ACTION_POLL_MS)),
        Err(err) => waits(now, &err),
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
