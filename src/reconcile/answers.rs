//! What the reconcilers that make things under a name at AWS-like APIs share (filesystems and
//! their groups, firewall rules): what to do about what a look by name found before an id is
//! recorded, and how a call's answer is sorted.
use super::{ACTION_POLL_MS, Next, RETRY_LATER_MS, is_failure, wait_for};
use crate::provider::{ProviderError, Refusal};

/// What to do about a thing made under our name before its id is recorded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Making {
    Create,
    /// A create whose answer was lost, found: ours, so it is recorded, never made twice.
    Adopt(String),
    /// Only someone else's holds the name: left alone.
    Foreign,
}

/// `found`: the id and ownership of each thing the look by name showed.
pub fn making<'a>(found: impl IntoIterator<Item = (&'a str, bool)>) -> Making {
    let mut any = false;
    for (id, owned) in found {
        if owned {
            return Making::Adopt(id.to_owned());
        }
        any = true;
    }
    if any { Making::Foreign } else { Making::Create }
}

/// What a provider call ended in, for the row.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum After {
    /// Done, or so already.
    Done,
    /// It may exist already under our name: look by name now.
    LookAgain,
    /// Nothing done for now: say the provider's words and look again after the wait.
    Wait(String, i64),
    /// The provider was unavailable or rate-limited, or its answer lost: say so and back off.
    Backoff(String, i64),
    /// Refused: ERROR with the provider's words, retried every 5 minutes.
    Fail(String),
}

/// Sorts a call's answer: the AWS codes that mean "so already" or "not yet" first, then the
/// kinds of error every provider call shares.
pub fn after<T>(result: &std::result::Result<T, ProviderError>) -> After {
    let Err(err) = result else { return After::Done };
    let message = err.message().to_owned();
    match err.refusal() {
        Some(Refusal::RuleExists | Refusal::RuleMissing) => After::Done,
        Some(Refusal::Taken) => After::LookAgain,
        // A group a machine or a lingering interface still uses (ENIs of deleted mount targets
        // or file servers linger for a while), or one another group's rule names.
        Some(Refusal::InUse) => After::Wait(message, RETRY_LATER_MS),
        Some(Refusal::NotYet) => After::Wait(message, ACTION_POLL_MS),
        _ if is_failure(err) => After::Fail(message),
        _ => After::Backoff(message, wait_for(err)),
    }
}

/// When to look again after `outcome`, and in whose words.
pub fn waits(outcome: After) -> (Option<String>, Next) {
    match outcome {
        After::Done | After::LookAgain => (None, Next::Now),
        After::Wait(message, ms) => (Some(message), Next::After(ms)),
        After::Backoff(message, ms) => (Some(message), Next::Backoff(ms)),
        After::Fail(message) => (Some(message), Next::After(super::ERROR_RETRY_MS)),
    }
}
