//! What a run decides of an address from its row and what the provider showed or answered:
//! pure functions, one per phase, so that every answer of every call (made, refused,
//! rate-limited, unknown) is a decided case, named and tested in `tests.rs`.
use super::super::{ACTION_POLL_MS, ERROR_RETRY_MS, Next, RETRY_LATER_MS, is_failure, retry_after};
use crate::provider::{ActionStatus, ProviderError, ProviderResult, Refusal, ReservedAddress};
use crate::store::entity::provider_address as address;
use crate::store::state::{Assignment, Desired, State};
use crate::store::status::StatusWrite;

/// The message of an address whose reserve's answer never came.
pub const LOST_RESERVE: &str = "the reserve's answer never came, and a reserved IP carries no name to find it by: it is \
     not reserved again. Delete this address, and check the account's reserved IPs for one that is not assigned";

/// The address fields a run writes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Observed {
    pub state: State,
    pub address: Option<String>,
    pub fingerprint: Option<String>,
    pub reserve_attempts: i32,
    pub lost: bool,
    pub message: Option<String>,
    pub instance_id: Option<String>,
    pub assignment_state: Assignment,
    pub assignment_message: Option<String>,
    pub action_id: Option<String>,
}

impl Observed {
    pub fn of(a: &address::Model) -> Self {
        Observed {
            state: a.state,
            address: a.address.clone(),
            fingerprint: a.fingerprint.clone(),
            reserve_attempts: a.reserve_attempts,
            lost: a.lost,
            message: a.message.clone(),
            instance_id: a.instance_id.clone(),
            assignment_state: a.assignment_state,
            assignment_message: a.assignment_message.clone(),
            action_id: a.action_id.clone(),
        }
    }

    pub fn state(mut self, state: State, message: Option<String>) -> Self {
        self.state = state;
        self.message = message;
        self
    }

    pub fn assignment(mut self, state: Assignment, message: Option<String>) -> Self {
        self.assignment_state = state;
        self.assignment_message = message;
        self.action_id = None;
        if state == Assignment::None {
            self.instance_id = None;
        }
        self
    }

    /// The row's write: what the provider holds and did as facts; the states, messages and the
    /// instance (the user's to change) as decided at the generation the run read.
    pub fn status(&self, a: &address::Model) -> StatusWrite {
        StatusWrite::of(&a.id, a.generation)
            .fact(address::Column::Address, self.address.clone())
            .fact(address::Column::Fingerprint, self.fingerprint.clone())
            .fact(address::Column::ReserveAttempts, self.reserve_attempts)
            .fact(address::Column::Lost, self.lost)
            .fact(address::Column::ActionId, self.action_id.clone())
            .decided(address::Column::Message, self.message.clone())
            .decided(address::Column::InstanceId, self.instance_id.clone())
            .decided(address::Column::AssignmentState, self.assignment_state)
            .decided(address::Column::AssignmentMessage, self.assignment_message.clone())
            .state(self.state)
    }

    /// Lost for good: the IP and its instance are forgotten, and it is never called for again.
    pub fn lost(self, message: String) -> Self {
        Observed {
            address: None,
            lost: true,
            ..self.assignment(Assignment::None, None).state(State::Error, Some(message))
        }
    }

    /// A provider error while looking or acting: say why and wait.
    fn waiting(self, err: &ProviderError) -> Self {
        Observed { message: Some(err.message().to_owned()), ..self }
    }
}

/// What a run does next without a provider call, or the call it makes.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Step {
    Write(Observed, Next),
    /// Lost for good as `LOST_RESERVE` says, recorded on the row as it is then.
    Lost(Next),
    Call,
}

/// The provider's view of our IP, if it is still our reservation; else why it is lost.
pub(super) fn still_ours(
    a: &address::Model,
    ip: &str,
    found: Option<ReservedAddress>,
) -> std::result::Result<ReservedAddress, String> {
    let released = |why: &str| {
        format!(
            "reserved IP {ip} was released at the provider outside vps-graph ({why}); it is lost for good: delete this address"
        )
    };
    let Some(found) = found else { return Err(released("it is gone")) };
    if found.region != a.region {
        return Err(released(&format!("it is reserved in {} now", found.region)));
    }
    if a.fingerprint.is_some() && found.reserved_at != a.fingerprint {
        return Err(released("another reservation holds it now"));
    }
    Ok(found)
}

/// A look at the provider that did not answer: nothing is decided but the wait.
pub(super) fn look_failed(a: &address::Model, err: &ProviderError) -> (Observed, Next) {
    (Observed::of(a).waiting(err), retry_after(err))
}

/// Before a reserve: a reserve already sent whose answer nobody wrote back (the process died
/// during the call) is never sent again.
pub(super) fn before_reserve(a: &address::Model) -> Step {
    match a.reserve_attempts > 0 {
        true => Step::Lost(Next::Drift),
        false => Step::Call,
    }
}

/// A reserve's answer, applied to the row as it is now (`fresh`, read after the call): made
/// keeps the IP whatever the tenant did meanwhile; refused or rate-limited reserved nothing
/// and is sent again; an unknown outcome may have reserved an IP no name can find, so it is an
/// error for good.
pub(super) fn reserved(fresh: &address::Model, outcome: &ProviderResult<ReservedAddress>) -> (Observed, Next) {
    let now = Observed::of(fresh);
    match outcome {
        Ok(made) => {
            let reserved = Observed { address: Some(made.ip.clone()), fingerprint: made.reserved_at.clone(), ..now };
            match fresh.desired_state {
                Desired::Present => (reserved.state(State::Ready, None), Next::Now),
                Desired::Absent => (reserved, Next::Now),
            }
        }
        Err(err @ ProviderError::RetryLater { .. }) => {
            (Observed { reserve_attempts: now.reserve_attempts - 1, ..now.waiting(err) }, retry_after(err))
        }
        Err(err) if is_failure(err) => (
            Observed {
                reserve_attempts: now.reserve_attempts - 1,
                ..now.state(State::Error, Some(err.message().to_owned()))
            },
            Next::After(ERROR_RETRY_MS),
        ),
        Err(err) => (now.lost(format!("{LOST_RESERVE} ({})", err.message())), Next::Drift),
    }
}

/// Before a release, with whether the provider still shows our reservation (None: not looked,
/// as there is no IP to look for): one never reserved, lost, or no longer ours at the provider
/// finishes with no call; one whose reserve's outcome nobody saw is first recorded as lost, saying so, so that
/// the tenant checks the account whatever order the delete came in.
pub(super) fn before_release(a: &address::Model, ours_at_provider: Option<bool>) -> Step {
    if a.address.is_none() && a.reserve_attempts > 0 && !a.lost {
        return Step::Lost(Next::Now);
    }
    match ours_at_provider {
        Some(true) => Step::Call,
        _ => Step::Write(deleted(a), Next::Done),
    }
}

/// A release's answer: done (or already gone) is DELETED; anything else leaves it deleting,
/// asked again (a refusal after 30 s, a provider in trouble backed off).
pub(super) fn released(a: &address::Model, outcome: &ProviderResult<bool>) -> (Observed, Next) {
    match outcome {
        Ok(_) => (deleted(a), Next::Done),
        Err(err) if is_failure(err) => (Observed::of(a).waiting(err), Next::After(RETRY_LATER_MS)),
        Err(err) => (Observed::of(a).waiting(err), retry_after(err)),
    }
}

fn deleted(a: &address::Model) -> Observed {
    Observed { action_id: None, ..Observed::of(a).state(State::Deleted, None) }
}

/// A running assign or unassign, looked at again: failed, an assign is the assignment's error
/// and an unassign stays wanted (deleting), both asked again by the periodic pass; done or
/// forgotten, what the address shows decides at once.
pub(super) fn followed(a: &address::Model, status: &ProviderResult<Option<ActionStatus>>) -> (Observed, Next) {
    let now = Observed::of(a);
    match status {
        Ok(Some(ActionStatus::InProgress)) => (now, Next::After(ACTION_POLL_MS)),
        Ok(Some(ActionStatus::Errored)) if a.assignment_state == Assignment::Deleting => {
            let message = Some("the provider's unassign failed; it is asked again".to_owned());
            (Observed { action_id: None, assignment_message: message, ..now }, Next::After(ERROR_RETRY_MS))
        }
        Ok(Some(ActionStatus::Errored)) => (
            now.assignment(Assignment::Error, Some("the provider's assign failed".into())),
            Next::After(ERROR_RETRY_MS),
        ),
        Ok(_) => (Observed { action_id: None, ..now }, Next::Now),
        Err(err) => (now.waiting(err), retry_after(err)),
    }
}

/// Waiting for the instance the tenant asked for to be ready.
pub(super) fn instance_not_ready(a: &address::Model) -> (Observed, Next) {
    let message = Some("waiting for the instance to be ready".to_owned());
    (Observed { assignment_message: message, ..Observed::of(a) }, Next::After(RETRY_LATER_MS))
}

/// Before an assign, from what the provider shows (looked at in this run): on the machine
/// already is READY (also after an assign whose answer was lost); on another machine is an
/// error and nothing is moved; a reserved IPv4 busy with an action is looked at again.
pub(super) fn before_assign(a: &address::Model, found: &ReservedAddress, machine: &str) -> Step {
    let now = Observed::of(a);
    match found.droplet_id.as_deref() {
        Some(on) if on == machine => Step::Write(now.assignment(Assignment::Ready, None), Next::Drift),
        Some(other) => {
            let message = format!(
                "the provider reports the address on Droplet {other}, which vps-graph did not put it on; nothing was moved"
            );
            Step::Write(now.assignment(Assignment::Error, Some(message)), Next::After(ERROR_RETRY_MS))
        }
        None if found.locked => Step::Write(now, Next::After(ACTION_POLL_MS)),
        None => Step::Call,
    }
}

/// An assign's answer: started is PENDING with its action followed.
pub(super) fn assigned(a: &address::Model, outcome: &ProviderResult<u64>) -> (Observed, Next) {
    let now = Observed::of(a);
    match outcome {
        Ok(action) => (
            Observed { action_id: Some(action.to_string()), ..now.assignment(Assignment::Pending, None) },
            Next::After(ACTION_POLL_MS),
        ),
        Err(err) => assignment_waits(now, err),
    }
}

/// Before an unassign: only from the machine vps-graph put it on; on no machine (also after an
/// unassign whose answer was lost), or on one that is not ours, it lets go without a call.
pub(super) fn before_unassign(a: &address::Model, found: &ReservedAddress, machine: Option<&str>) -> Step {
    match found.droplet_id.as_deref() {
        Some(on) if Some(on) == machine => Step::Call,
        _ => Step::Write(Observed::of(a).assignment(Assignment::None, None), Next::Drift),
    }
}

/// An unassign's answer: started is followed (the assignment stays deleting until it is done).
pub(super) fn unassigned(a: &address::Model, outcome: &ProviderResult<u64>) -> (Observed, Next) {
    let now = Observed::of(a);
    match outcome {
        Ok(action) => (Observed { action_id: Some(action.to_string()), ..now }, Next::After(ACTION_POLL_MS)),
        Err(err) => assignment_waits(now, err),
    }
}

/// A refused assign or unassign shows as the assignment's error (retried every 5 minutes); a
/// machine busy with another action ("pending event") is asked again 5 s later; a provider in
/// trouble, or an answer lost, is looked at again after the backoff (the look shows whether it
/// happened).
fn assignment_waits(now: Observed, err: &ProviderError) -> (Observed, Next) {
    let message = Some(err.message().to_owned());
    if err.refusal() == Some(Refusal::PendingEvent) {
        return (Observed { assignment_message: message, ..now }, Next::After(ACTION_POLL_MS));
    }
    if is_failure(err) {
        let failed = Observed { assignment_state: Assignment::Error, assignment_message: message, ..now };
        return (failed, Next::After(ERROR_RETRY_MS));
    }
    (Observed { assignment_message: message, ..now }, retry_after(err))
}

/// The event a change of the address publishes.
pub(super) fn event_type(before: &address::Model, after: &Observed) -> &'static str {
    let became = |s: State| after.state == s && before.state != s;
    let assignment_became = |s: Assignment| after.assignment_state == s && before.assignment_state != s;
    match () {
        _ if became(State::Deleted) => "deleted",
        _ if became(State::Ready) => "ready",
        _ if became(State::Error) => "error",
        _ if assignment_became(Assignment::Ready) => "assigned",
        _ if assignment_became(Assignment::None) => "unassigned",
        _ if assignment_became(Assignment::Error) => "error",
        _ => "updated",
    }
}
