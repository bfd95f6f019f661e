//! What a run decides of a snapshot from its row, its volume's and what the provider showed or
//! answered: pure functions, one per phase, so that every answer of every call (made, refused,
//! rate-limited, unknown) is a decided case, named and tested in `tests.rs`. A phase that
//! answers `None` has settled nothing: the run goes on to its next look or call.
use super::super::{ACTION_POLL_MS, ERROR_RETRY_MS, Next, is_failure, retry_after};
use crate::provider::{ProviderError, ProviderResult, Snapshot};
use crate::store::entity::{provider_snapshot as snapshot, provider_volume as volume};
use crate::store::state::{Desired, State};
use crate::store::status::StatusWrite;

/// A decision: what to write, and when to look again.
pub type Decided = (Observed, Next);

/// The snapshot fields a run writes.
#[derive(Clone, Debug, PartialEq)]
pub struct Observed {
    pub state: State,
    pub provider_id: Option<String>,
    pub size_gib: Option<f64>,
    /// The volume's asked size when the snapshot was recorded, then the provider's word.
    pub min_disk_size: i64,
    pub create_attempts: i32,
    pub lost: bool,
    pub message: Option<String>,
}

impl Observed {
    pub fn of(s: &snapshot::Model) -> Self {
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

    fn said(self, err: &ProviderError) -> Self {
        Observed { message: Some(err.message().to_owned()), ..self }
    }

    fn lost(self, message: &str) -> Self {
        Observed { lost: true, ..self.state(State::Error, Some(message.to_owned())) }
    }

    /// The provider's snapshot: its id and sizes as the provider says them.
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
    pub fn status(&self, s: &snapshot::Model) -> StatusWrite {
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

/// A snapshot the provider shows: read again in 5 s while it is being made, else hourly.
fn shown(now: Observed, found: &Snapshot) -> Decided {
    let seen = now.seen(found);
    let next = if seen.state == State::Pending { Next::After(ACTION_POLL_MS) } else { Next::Drift };
    (seen, next)
}

/// A made snapshot, read (until ready, then hourly: the GiB the provider bills can grow); one
/// gone outside is lost for good.
pub fn read(s: &snapshot::Model, found: ProviderResult<Option<Snapshot>>) -> Decided {
    match found {
        Ok(Some(found)) => shown(Observed::of(s), &found),
        Ok(None) => (Observed::of(s).lost("the snapshot was deleted at the provider outside vps-graph"), Next::Drift),
        Err(err) => (Observed::of(s).said(&err), retry_after(&err)),
    }
}

/// Before a snapshot is taken, its volume: `Ok` is the volume's provider id to take it of. One
/// not made yet is waited for (the volume wakes its snapshots once made; this is the safety
/// net); one gone, or lost, never gives the snapshot.
pub fn before_take(s: &snapshot::Model, source: Option<&volume::Model>) -> Result<String, Decided> {
    match source {
        Some(v) if !v.lost && v.provider_id.is_some() => Ok(v.provider_id.clone().unwrap_or_default()),
        Some(v) if v.desired_state == Desired::Present && !v.lost => Err((
            Observed { message: Some("waiting for the volume to be made".into()), ..Observed::of(s) },
            Next::After(ERROR_RETRY_MS),
        )),
        _ => Err((Observed::of(s).lost("the volume was gone before the snapshot was taken"), Next::Drift)),
    }
}

/// After an attempt whose outcome the row does not hold, what the lookup by its name found:
/// one found is taken as made (read again at once); None sends the snapshot.
pub fn looked_up(s: &snapshot::Model, found: ProviderResult<Option<Snapshot>>) -> Option<Decided> {
    match found {
        Ok(Some(found)) => Some((Observed::of(s).seen(&found), Next::Now)),
        Ok(None) => None,
        Err(err) => Some((Observed::of(s).said(&err), retry_after(&err))),
    }
}

/// The snapshot's answer; `marked` is the row with this attempt recorded. `Ok(None)`: a share's
/// snapshot started, with no id yet (found by name on the next run).
pub fn taken(marked: &snapshot::Model, answer: ProviderResult<Option<Snapshot>>) -> Decided {
    let now = Observed::of(marked);
    match answer {
        Ok(Some(found)) => shown(now, &found),
        Ok(None) => (now, Next::After(ACTION_POLL_MS)),
        Err(ProviderError::Refused { message, .. }) => {
            // This attempt made nothing; retried by the periodic pass (by name first when an
            // earlier attempt may have made it).
            let now = Observed { create_attempts: marked.create_attempts - 1, ..now };
            (now.state(State::Error, Some(message)), Next::After(ERROR_RETRY_MS))
        }
        Err(err) => (now.said(&err), retry_after(&err)),
    }
}

/// What a delete calls.
#[derive(Debug, PartialEq, Eq)]
pub enum DeleteTarget {
    /// Nothing at the provider: lost, never taken, or every attempt refused.
    Nothing,
    Known(String),
    /// An attempt whose answer was lost: looked up by name under the volume's provider id.
    LookUp(String),
}

pub fn delete_target(s: &snapshot::Model, volume_provider_id: Option<&str>) -> DeleteTarget {
    match (&s.provider_id, s.create_attempts, volume_provider_id) {
        _ if s.lost => DeleteTarget::Nothing,
        (Some(id), _, _) => DeleteTarget::Known(id.clone()),
        (None, attempts, Some(vid)) if attempts > 0 => DeleteTarget::LookUp(vid.to_owned()),
        _ => DeleteTarget::Nothing,
    }
}

/// The lookup before a delete: the id to delete, if one was made.
pub fn delete_found(s: &snapshot::Model, found: ProviderResult<Option<Snapshot>>) -> Result<Option<String>, Decided> {
    match found {
        Ok(found) => Ok(found.map(|f| f.id)),
        Err(err) => Err((Observed::of(s).said(&err), retry_after(&err))),
    }
}

/// The delete's answer (or no call, `Ok`): deleted, or asked again (a refusal by the periodic
/// pass, saying why).
pub fn deleted(s: &snapshot::Model, answer: ProviderResult<bool>) -> Decided {
    match answer {
        Ok(_) => (Observed::of(s).state(State::Deleted, None), Next::Done),
        Err(err) => {
            let next = if is_failure(&err) { Next::After(ERROR_RETRY_MS) } else { retry_after(&err) };
            (Observed::of(s).said(&err), next)
        }
    }
}

/// The event a snapshot's change publishes: the state it became, when that is one the seeds
/// name an event for.
pub fn event_type(before: State, after: State) -> &'static str {
    match (before != after).then_some(after) {
        Some(st @ (State::Ready | State::Error | State::Deleted)) => st.as_str(),
        _ => "updated",
    }
}
