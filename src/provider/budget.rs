//! A provider account's request budget, as this replica sees it: the provider's hourly limit and
//! what is left of it (DigitalOcean says so in its `ratelimit-*` headers), and the calls sent in
//! the last hour by purpose. The budget is spent in the order of `Purpose`: a call for something
//! someone asked waits only at the last few requests, one following a running action a little
//! before, and a drift read well before, so drift slows down before anything else waits.
use std::sync::Mutex;
use std::time::Duration;

use super::fence::Purpose;

/// Requests kept back from the hourly budget for calls asked (at least this many, or 5 % of the
/// limit), so that the budget is never spent to a 429.
const RESERVE_MIN: i64 = 1;
/// The longest a call waits for the budget before it is tried again.
const WAIT_AT_MOST: Duration = Duration::from_secs(30);

#[derive(Default)]
pub struct AccountBudget {
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    limit: Option<i64>,
    remaining: Option<i64>,
    /// Unix seconds when the oldest counted request leaves the window.
    reset_at: Option<i64>,
    calls: CallWindow,
}

/// The account's budget and its last hour, for operators.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BudgetView {
    pub limit: Option<i64>,
    pub remaining: Option<i64>,
    pub reset_at: Option<i64>,
    /// Calls sent in the last hour, by `Purpose::ALL`'s order.
    pub calls_last_hour: [u64; 3],
}

impl BudgetView {
    /// The calls of the last hour with their purpose's word.
    pub fn by_purpose(&self) -> [(&'static str, u64); 3] {
        let [asked, following, drift] = self.calls_last_hour;
        [(Purpose::Asked.as_str(), asked), (Purpose::Following.as_str(), following), (Purpose::Drift.as_str(), drift)]
    }
}

impl AccountBudget {
    /// Whether a call for `purpose` may be sent at `now_s`: None, and the call is counted (before
    /// its answer, so concurrent runs see it); or how long to wait, and nothing is counted.
    pub fn take(&self, now_s: i64, purpose: Purpose) -> Option<Duration> {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(wait) = state.wait(now_s, purpose) {
            return Some(wait);
        }
        state.remaining = state.remaining.map(|r| r - 1);
        state.calls.add(now_s, purpose);
        None
    }

    /// Counts a call of a provider that keeps no budget of its own (AWS throttles instead).
    pub fn count(&self, now_s: i64, purpose: Purpose) {
        self.state.lock().unwrap_or_else(|e| e.into_inner()).calls.add(now_s, purpose);
    }

    /// What the provider's headers said of the budget.
    pub fn learn(&self, limit: Option<i64>, remaining: Option<i64>, reset_at: Option<i64>) {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        state.limit = limit.or(state.limit);
        state.remaining = remaining.or(state.remaining);
        state.reset_at = reset_at.or(state.reset_at);
    }

    pub fn view(&self, now_s: i64) -> BudgetView {
        let state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        BudgetView {
            limit: state.limit,
            remaining: state.remaining,
            reset_at: state.reset_at,
            calls_last_hour: Purpose::ALL.map(|p| state.calls.last_hour(now_s, p)),
        }
    }
}

impl State {
    fn wait(&self, now_s: i64, purpose: Purpose) -> Option<Duration> {
        let (Some(limit), Some(remaining)) = (self.limit, self.remaining) else { return None };
        if remaining > reserve(limit, purpose) {
            return None;
        }
        match self.reset_at {
            Some(reset) if reset > now_s => {
                Some(Duration::from_secs((reset - now_s) as u64).clamp(Duration::from_secs(1), WAIT_AT_MOST))
            }
            // A reset already past says nothing: let the request through and learn again.
            _ => None,
        }
    }
}

/// What a call for `purpose` leaves untouched of a budget of `limit`: 5 % (at least
/// `RESERVE_MIN`) for calls asked, 10 % for following ones, 25 % for drift reads.
fn reserve(limit: i64, purpose: Purpose) -> i64 {
    let asked = RESERVE_MIN.max(limit / 20);
    match purpose {
        Purpose::Asked => asked,
        Purpose::Following => asked.max(limit / 10),
        Purpose::Drift => asked.max(limit / 4),
    }
}

/// Calls per minute over the last hour, by purpose.
#[derive(Default)]
struct CallWindow {
    /// (minute, calls by purpose) for the 60 minutes a slot was last used in.
    slots: Vec<(i64, [u64; 3])>,
}

impl CallWindow {
    fn add(&mut self, now_s: i64, purpose: Purpose) {
        let minute = now_s.div_euclid(60);
        if self.slots.is_empty() {
            self.slots = vec![(i64::MIN, [0; 3]); 60];
        }
        let slot = &mut self.slots[minute.rem_euclid(60) as usize];
        if slot.0 != minute {
            *slot = (minute, [0; 3]);
        }
        slot.1[index(purpose)] += 1;
    }

    fn last_hour(&self, now_s: i64, purpose: Purpose) -> u64 {
        let minute = now_s.div_euclid(60);
        self.slots.iter().filter(|(m, _)| *m > minute - 60 && *m <= minute).map(|(_, c)| c[index(purpose)]).sum()
    }
}

fn index(purpose: Purpose) -> usize {
    Purpose::ALL.iter().position(|p| *p == purpose).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn budget(limit: i64, remaining: i64, reset_in: i64) -> AccountBudget {
        let budget = AccountBudget::default();
        budget.learn(Some(limit), Some(remaining), Some(1_000_000 + reset_in));
        budget
    }

    #[test]
    fn drift_waits_first_then_following_and_asked_last() {
        const NOW: i64 = 1_000_000;
        // 5,000 an hour: drift keeps 1,250 back, following 500, asked 250.
        let waits = |remaining| Purpose::ALL.map(|p| budget(5000, remaining, 100).take(NOW, p).is_some());
        assert_eq!(waits(1251), [false, false, false]);
        assert_eq!(waits(1250), [false, false, true], "drift slows down before anything else waits");
        assert_eq!(waits(500), [false, true, true]);
        assert_eq!(waits(250), [true, true, true], "the last 250 are never spent");
    }

    #[test]
    fn a_wait_lasts_until_the_reset_at_most_half_a_minute() {
        const NOW: i64 = 1_000_000;
        assert_eq!(budget(5000, 10, 4).take(NOW, Purpose::Asked), Some(Duration::from_secs(4)));
        assert_eq!(budget(5000, 10, 900).take(NOW, Purpose::Asked), Some(WAIT_AT_MOST));
        assert_eq!(budget(5000, 10, -5).take(NOW, Purpose::Asked), None, "a reset in the past is not trusted");
        assert_eq!(AccountBudget::default().take(NOW, Purpose::Drift), None, "nothing learnt yet");
    }

    #[test]
    fn calls_are_counted_by_purpose_over_the_last_hour() {
        let budget = budget(5000, 4000, 100);
        let start = 1_000_000;
        assert_eq!(budget.take(start, Purpose::Asked), None);
        assert_eq!(budget.take(start + 30, Purpose::Drift), None);
        budget.count(start + 1800, Purpose::Drift);
        let view = budget.view(start + 1800);
        assert_eq!(view.calls_last_hour, [1, 0, 2]);
        assert_eq!(view.remaining, Some(3998), "a counted call is taken off what remains");
        assert_eq!(budget.view(start + 3600 + 120).calls_last_hour, [0, 0, 1], "an hour later only the last is left");
    }
}
