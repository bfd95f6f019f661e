//! The decisions of a firewall round, as plain functions of the rows and what the provider
//! showed, tested without a network: what to do with each rule, with the network's open egress
//! firewall or group, and with a call's answer.
pub use crate::reconcile::answers::{After, Making, after, waits};
use crate::reconcile::{ERROR_RETRY_MS, Next, answers};
use crate::store::entity::firewall_rule;
use crate::store::state::{Desired, State};

/// The rule fields a round writes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Observed {
    pub state: State,
    pub message: Option<String>,
    pub provider_id: Option<String>,
    pub create_attempts: i32,
    pub lost: bool,
}

impl Observed {
    pub fn of(r: &firewall_rule::Model) -> Self {
        Observed {
            state: r.state,
            message: r.message.clone(),
            provider_id: r.provider_id.clone(),
            create_attempts: r.create_attempts,
            lost: r.lost,
        }
    }

    pub fn state(self, state: State, message: Option<String>) -> Self {
        Observed { state, message, ..self }
    }

    pub fn error(self, message: impl Into<String>) -> Self {
        self.state(State::Error, Some(message.into()))
    }

    /// Gone at the provider outside vps-graph: never made again.
    pub fn lost(self, message: impl Into<String>) -> Self {
        Observed { lost: true, ..self.error(message) }
    }

    /// On its way: an ERROR it clears is pending again; READY and DELETING keep their state.
    pub fn waiting(self, message: impl Into<String>) -> Self {
        match self.state {
            State::Ready | State::Deleting => Observed { message: Some(message.into()), ..self },
            _ => self.state(State::Pending, Some(message.into())),
        }
    }

    /// A step went through: an ERROR it may have cleared is pending again, and old words go.
    pub fn progress(self) -> Self {
        match self.state {
            State::Error => self.state(State::Pending, None),
            _ => Observed { message: None, ..self },
        }
    }
}

/// Where a firewall's (or group's) application stands at the provider.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Applying {
    /// Still being applied to its machines (DigitalOcean's `waiting`).
    Waiting,
    Done,
    /// The provider could not apply it, in its words.
    Failed(String),
}

/// A firewall or security group found at the provider: its id, whether it carries this
/// deployment's mark, whether it says what is wanted, and how its application stands.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Held {
    pub id: String,
    pub owned: bool,
    pub matches: bool,
    pub applying: Applying,
}

/// What the provider holds for one rule: the one recorded (by id), and those under its name.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Seen {
    pub by_id: Option<Held>,
    pub by_name: Vec<Held>,
}

/// What a round does with one rule.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Step {
    /// Make its firewall (the attempt recorded first).
    Create,
    /// A create whose answer was lost, found under its name with our mark: recorded, never made
    /// twice.
    Adopt(String),
    /// Its firewall says something else than the rule (changed outside, or just made): put back.
    Update(String),
    /// It is no longer wanted: delete its firewall once no machine carries it.
    Delete(String),
    /// Only its row changes.
    Write(Observed),
    /// Made and saying what is wanted: it counts for the machines; READY once they carry it and
    /// the provider has applied it.
    Applied { waiting: bool },
    /// Made a moment ago and not listed yet (listings lag behind creates): look again shortly.
    Wait(Observed),
    /// Nothing to do now (lost, or an ERROR not due for its retry).
    Rest,
}

/// How long a listing may lag behind a create before what it leaves out counts as gone.
pub const LISTING_LAG_MS: i64 = 60_000;

/// What to do with `r`, given what the provider shows and how long ago the row was last
/// written (`since_ms`: an ERROR is retried five minutes on, a create is listed within a minute).
pub fn step(r: &firewall_rule::Model, seen: &Seen, since_ms: i64) -> Step {
    let now = Observed::of(r);
    let retry_due = since_ms >= ERROR_RETRY_MS;
    if r.desired_state == Desired::Absent {
        return removal(r, seen);
    }
    if r.lost {
        return Step::Rest;
    }
    let Some(recorded) = &r.provider_id else {
        if r.state == State::Error && !retry_due {
            return Step::Rest;
        }
        return match making(&seen.by_name) {
            Making::Create => Step::Create,
            Making::Adopt(id) => Step::Adopt(id),
            Making::Foreign => {
                let message = format!(
                    "a firewall named {} exists that this deployment did not make; it is left alone",
                    r.provider_name
                );
                Step::Write(now.error(message))
            }
        };
    };
    let Some(held) = &seen.by_id else {
        if r.state == State::Pending && since_ms < LISTING_LAG_MS {
            return Step::Wait(now.waiting(format!("firewall {recorded} is made and not listed yet")));
        }
        let message =
            format!("firewall {recorded} was deleted outside vps-graph; it is not made again: delete this rule");
        return Step::Write(now.lost(message));
    };
    if !held.matches {
        if r.state == State::Error && !retry_due {
            return Step::Rest;
        }
        return Step::Update(held.id.clone());
    }
    match &held.applying {
        Applying::Failed(why) => Step::Write(now.error(why.clone())),
        Applying::Waiting => Step::Applied { waiting: true },
        Applying::Done => Step::Applied { waiting: false },
    }
}

/// A rule being deleted: its firewall if there is one of ours, else DELETED. What only someone
/// else holds under its name is never deleted.
fn removal(r: &firewall_rule::Model, seen: &Seen) -> Step {
    let done = Step::Write(Observed::of(r).state(State::Deleted, None));
    match (&r.provider_id, &seen.by_id) {
        // Lost: gone outside, unless ours reappeared under its name (a listing that lagged).
        _ if r.lost => match making(&seen.by_name) {
            Making::Adopt(id) => Step::Delete(id),
            _ => done,
        },
        (Some(_), Some(held)) => Step::Delete(held.id.clone()),
        (Some(_), None) => done,
        (None, _) => match making(&seen.by_name) {
            Making::Adopt(id) => Step::Delete(id),
            _ => done,
        },
    }
}

pub fn making(found: &[Held]) -> Making {
    answers::making(found.iter().map(|h| (h.id.as_str(), h.owned)))
}

/// The rule after a call ended in `outcome`.
pub fn apply(now: Observed, outcome: After) -> (Observed, Next) {
    let (done, failed) = (outcome == After::Done, matches!(outcome, After::Fail(_)));
    let (message, next) = waits(outcome);
    let observed = match message {
        _ if done => now.progress(),
        Some(message) if failed => now.error(message),
        Some(message) => Observed { message: Some(message), ..now },
        None => now,
    };
    (observed, next)
}

/// The event a write publishes: one per transition into ready, error or deleted.
pub fn event_type(before: State, after: State) -> Option<&'static str> {
    if before == after {
        return None;
    }
    match after {
        State::Ready => Some("ready"),
        State::Error => Some("error"),
        State::Deleted => Some("deleted"),
        _ => None,
    }
}

/// The sooner of two looks: now before a wait, a shorter wait before a longer, any wait before
/// the drift read. A backoff keeps its kind (its streak doubles it).
pub fn sooner(a: Next, b: Next) -> Next {
    fn rank(next: Next) -> (u8, i64) {
        match next {
            Next::Now => (0, 0),
            Next::After(ms) | Next::Backoff(ms) => (1, ms),
            Next::Drift => (2, 0),
            Next::Done => (3, 0),
        }
    }
    if rank(a) <= rank(b) { a } else { b }
}

/// What a round does with the network's open egress firewall or group: wanted while the network
/// has a wanted rule.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EgressStep {
    Create,
    Adopt(String),
    Update(String),
    /// Made and saying what is wanted: machines may carry it.
    Ready(String),
    /// The recorded one is gone (it is ours to make again): forget it.
    Forget,
    /// No longer wanted: delete it once no machine carries it.
    Delete(String),
    /// Someone else's holds its name: left alone, and the rules wait.
    Foreign,
    Rest,
}

pub fn egress_step(wanted: bool, recorded: Option<&str>, seen: &Seen) -> EgressStep {
    match (wanted, recorded, &seen.by_id) {
        (true, Some(_), Some(held)) if held.matches => EgressStep::Ready(held.id.clone()),
        (true, Some(_), Some(held)) => EgressStep::Update(held.id.clone()),
        (false, Some(_), Some(held)) => EgressStep::Delete(held.id.clone()),
        (_, Some(_), None) => EgressStep::Forget,
        (true, None, _) => match making(&seen.by_name) {
            Making::Create => EgressStep::Create,
            Making::Adopt(id) => EgressStep::Adopt(id),
            Making::Foreign => EgressStep::Foreign,
        },
        (false, None, _) => match making(&seen.by_name) {
            Making::Adopt(id) => EgressStep::Delete(id),
            _ => EgressStep::Rest,
        },
    }
}
