//! The load one process takes, bounded before any work: requests in flight (past the cap a
//! request is answered 503 with `Retry-After` at once, rather than queued behind the others),
//! each caller's request budget (a token's, or an address's for requests without a valid token:
//! past it 429 with the IETF draft's `RateLimit-Limit`, `RateLimit-Remaining` and
//! `RateLimit-Reset`), and open WebSockets (overall, and per token). Operators are exempt from the
//! budget and the per-token socket cap unless told otherwise: automation and benchmarks speak as
//! them.
use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::json;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::config::LoadArgs;
use crate::error::Code;
use crate::graphql::Caller;

/// The window a budget is counted over.
pub const WINDOW: Duration = Duration::from_secs(60);

/// Budgets kept at most in one window: past it, callers not seen yet in the window share one
/// (a flood from many addresses cannot grow the map, nor make every request scan it).
const KEPT: usize = 100_000;

/// Sockets one address may hold that have not authenticated yet (they wait for
/// `connection_init`, at most `--ws-init-timeout-ms`).
pub const UNAUTHENTICATED_PER_ADDRESS: usize = 64;

#[derive(Clone)]
pub struct Load {
    in_flight: Arc<Semaphore>,
    budgets: Arc<Budgets>,
    sockets: Arc<Sockets>,
    args: LoadArgs,
}

/// Who a budget is counted for.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Spender {
    Token(String),
    /// A request without a token that authenticates, by the address it came from (an IPv6
    /// address by its /64: one host holds a whole /64).
    Address(String),
    Operator,
    /// Whoever the full map of one window had no room for.
    Overflow,
}

impl Spender {
    /// Who `caller`'s requests are counted for; `peer` is where they come from.
    pub fn of(caller: &Caller, peer: Option<std::net::SocketAddr>) -> Spender {
        match caller {
            Caller::Authenticated(actor) if actor.is_operator() => Spender::Operator,
            Caller::Authenticated(actor) => Spender::Token(actor.token_id.clone().unwrap_or_default()),
            _ => Spender::Address(peer.map(|p| network_of(p.ip())).unwrap_or_default()),
        }
    }
}

/// An address as budgets and socket caps count it: an IPv4 address, or an IPv6 address's /64.
fn network_of(ip: std::net::IpAddr) -> String {
    match ip {
        std::net::IpAddr::V6(v6) if v6.to_ipv4_mapped().is_none() => {
            let s = v6.segments();
            format!("{:x}:{:x}:{:x}:{:x}::/64", s[0], s[1], s[2], s[3])
        }
        std::net::IpAddr::V6(v6) => v6.to_ipv4_mapped().map(|v4| v4.to_string()).unwrap_or_default(),
        v4 => v4.to_string(),
    }
}

/// A budget's state after a request was counted on it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Budget {
    pub allowed: bool,
    pub limit: u64,
    pub remaining: u64,
    /// Seconds until the window, and the budget, starts over.
    pub reset: u64,
}

struct Budgets {
    started: Instant,
    counts: Mutex<Counts>,
}

/// Each spender's (window, requests), and the window the map was last cleared of older ones.
#[derive(Default)]
struct Counts {
    by_spender: HashMap<Spender, (u64, u64)>,
    cleared: u64,
}

struct Sockets {
    open: AtomicUsize,
    per_token: Mutex<HashMap<String, usize>>,
    unauthenticated: Mutex<HashMap<String, usize>>,
}

/// An open WebSocket, counted until dropped: against its token once authenticated, against its
/// address until then.
pub struct SocketPlace {
    sockets: Arc<Sockets>,
    token: Option<String>,
    address: Option<String>,
}

impl Load {
    pub fn new(args: LoadArgs) -> Load {
        Load {
            in_flight: Arc::new(Semaphore::new(args.max_in_flight.max(1))),
            budgets: Arc::new(Budgets { started: Instant::now(), counts: Mutex::default() }),
            sockets: Arc::new(Sockets {
                open: AtomicUsize::new(0),
                per_token: Mutex::default(),
                unauthenticated: Mutex::default(),
            }),
            args,
        }
    }

    /// A place among the requests in flight, or why there is none.
    pub fn enter(&self) -> Result<OwnedSemaphorePermit, Full> {
        self.in_flight.clone().try_acquire_owned().map_err(|_| Full {
            message: format!("the server has {} requests in flight: retry in a second", self.args.max_in_flight),
            details: json!({ "limit": "requests in flight", "max": self.args.max_in_flight }),
        })
    }

    /// Counts `requests` (a batch's operations) of `spender`; None when it has no budget (an
    /// operator).
    pub fn spend(&self, spender: &Spender, requests: u64) -> Option<Budget> {
        if *spender == Spender::Operator && !self.args.rate_limit_operators {
            return None;
        }
        let limit = self.args.rate_limit;
        let elapsed = self.budgets.started.elapsed();
        let window = elapsed.as_secs() / WINDOW.as_secs();
        let reset = WINDOW.as_secs() - elapsed.as_secs() % WINDOW.as_secs();
        let mut counts = self.budgets.counts.lock().unwrap_or_else(|e| e.into_inner());
        if counts.cleared != window {
            counts.by_spender.retain(|_, (of, _)| *of == window);
            counts.cleared = window;
        }
        let spender = match counts.by_spender.contains_key(spender) || counts.by_spender.len() < KEPT {
            true => spender.clone(),
            false => Spender::Overflow,
        };
        let count = counts.by_spender.entry(spender).or_insert((window, 0));
        if count.0 != window {
            *count = (window, 0);
        }
        let allowed = count.1 + requests <= limit;
        if allowed {
            count.1 += requests;
        }
        Some(Budget { allowed, limit, remaining: limit - count.1, reset })
    }

    /// A place for a new WebSocket from `peer`, or why there is none: the server holds its
    /// most, or the address holds its most that have not authenticated yet.
    pub fn open_socket(&self, peer: Option<std::net::SocketAddr>) -> Result<SocketPlace, Full> {
        let max = self.args.max_sockets;
        let taken = self.sockets.open.fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| (n < max).then_some(n + 1));
        if taken.is_err() {
            return Err(Full {
                message: format!("the server holds {max} WebSockets: retry later"),
                details: json!({ "limit": "sockets", "max": max }),
            });
        }
        // Counted among the open ones from here: dropped, it gives its place back.
        let mut place = SocketPlace { sockets: self.sockets.clone(), token: None, address: None };
        let address = peer.map(|p| network_of(p.ip())).unwrap_or_default();
        let mut waiting = self.sockets.unauthenticated.lock().unwrap_or_else(|e| e.into_inner());
        let held = waiting.entry(address.clone()).or_insert(0);
        if *held >= UNAUTHENTICATED_PER_ADDRESS {
            return Err(Full {
                message: format!("this address holds {UNAUTHENTICATED_PER_ADDRESS} WebSockets not yet initialised"),
                details: json!({ "limit": "unauthenticated sockets", "max": UNAUTHENTICATED_PER_ADDRESS }),
            });
        }
        *held += 1;
        drop(waiting);
        place.address = Some(address);
        Ok(place)
    }

    /// Counts `place` against `token`'s sockets (operators are not counted); false when the
    /// token holds its most already.
    pub fn claim_socket(&self, place: &mut SocketPlace, token: &str, operator: bool) -> bool {
        place.release_address();
        if operator {
            return true;
        }
        let mut per_token = self.sockets.per_token.lock().unwrap_or_else(|e| e.into_inner());
        let held = per_token.entry(token.to_owned()).or_insert(0);
        if *held >= self.args.max_sockets_per_token {
            return false;
        }
        *held += 1;
        place.token = Some(token.to_owned());
        true
    }

    pub fn max_sockets_per_token(&self) -> usize {
        self.args.max_sockets_per_token
    }

    /// How long a request's headers, or its body, may take to come.
    pub fn header_timeout(&self) -> Duration {
        Duration::from_millis(self.args.header_timeout_ms.max(1))
    }

    pub fn ws_ping(&self) -> Duration {
        Duration::from_millis(self.args.ws_ping_ms.max(1))
    }

    pub fn ws_idle(&self) -> Duration {
        Duration::from_millis(self.args.ws_idle_ms.max(1))
    }
}

impl SocketPlace {
    /// No longer counted against its address (it authenticated, or was never opened).
    fn release_address(&mut self) {
        let Some(address) = self.address.take() else { return };
        let mut waiting = self.sockets.unauthenticated.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(held) = waiting.get_mut(&address) {
            *held -= 1;
            if *held == 0 {
                waiting.remove(&address);
            }
        }
    }
}

impl Drop for SocketPlace {
    fn drop(&mut self) {
        self.sockets.open.fetch_sub(1, Ordering::AcqRel);
        self.release_address();
        let Some(token) = self.token.take() else { return };
        let mut per_token = self.sockets.per_token.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(held) = per_token.get_mut(&token) {
            *held -= 1;
            if *held == 0 {
                per_token.remove(&token);
            }
        }
    }
}

impl Budget {
    /// The draft's headers, on any response counted on a budget.
    pub fn headers(&self, headers: &mut HeaderMap) {
        headers.insert("ratelimit-limit", HeaderValue::from(self.limit));
        headers.insert("ratelimit-remaining", HeaderValue::from(self.remaining));
        headers.insert("ratelimit-reset", HeaderValue::from(self.reset));
    }

    /// The 429 of a spent budget.
    pub fn refusal(&self) -> Response {
        let error = self.error();
        let body = json!({ "errors": [error] });
        let mut response =
            (StatusCode::TOO_MANY_REQUESTS, [(header::CONTENT_TYPE, "application/json")], body.to_string())
                .into_response();
        self.headers(response.headers_mut());
        response.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from(self.reset));
        response
    }
}

impl Budget {
    /// The GraphQL error of a spent budget (a WebSocket operation's answer).
    pub fn error(&self) -> serde_json::Value {
        let message = format!("this caller sent {} requests this minute: retry in {} s", self.limit, self.reset);
        let details = json!({ "limit": "requests per minute", "max": self.limit, "retryAfter": self.reset });
        json!({ "message": message, "extensions": { "code": Code::LimitExceeded.as_str(), "details": details } })
    }
}

/// No room for one more request or socket: answered 503 with `Retry-After`.
#[derive(Debug)]
pub struct Full {
    message: String,
    details: serde_json::Value,
}

impl Full {
    /// No room because the database does not answer.
    pub fn database() -> Full {
        Full { message: "the database does not answer: retry shortly".into(), details: json!({ "reason": "database" }) }
    }

    /// The GraphQL error of it (a WebSocket operation's answer).
    pub fn error(&self) -> serde_json::Value {
        json!({ "message": self.message, "extensions": { "code": Code::Unavailable.as_str(), "details": self.details } })
    }
}

impl IntoResponse for Full {
    fn into_response(self) -> Response {
        unavailable(self.message, self.details)
    }
}

/// A 503 with `Retry-After`: the server, or what it needs, cannot take the request now.
pub fn unavailable(message: String, details: serde_json::Value) -> Response {
    let mut response = coded(StatusCode::SERVICE_UNAVAILABLE, Code::Unavailable, message, details);
    response.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
    response
}

fn coded(status: StatusCode, code: Code, message: String, details: serde_json::Value) -> Response {
    let body =
        json!({ "errors": [{ "message": message, "extensions": { "code": code.as_str(), "details": details } }] });
    (status, [(header::CONTENT_TYPE, "application/json")], body.to_string()).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load(rate_limit: u64) -> Load {
        Load::new(LoadArgs {
            rate_limit,
            max_in_flight: 2,
            max_sockets: 2,
            max_sockets_per_token: 1,
            ..LoadArgs::default()
        })
    }

    #[test]
    fn a_budget_is_spent_per_caller_and_operators_have_none() {
        let load = load(2);
        let token = Spender::Token("tok_a".into());
        let first = load.spend(&token, 1).unwrap();
        assert_eq!((first.allowed, first.remaining), (true, 1));
        assert!(load.spend(&token, 1).unwrap().allowed);
        let spent = load.spend(&token, 1).unwrap();
        assert_eq!((spent.allowed, spent.remaining, spent.limit), (false, 0, 2));
        assert!((1..=60).contains(&spent.reset));
        assert!(load.spend(&Spender::Token("tok_b".into()), 1).unwrap().allowed, "another token's is its own");
        assert!(!load.spend(&Spender::Token("tok_c".into()), 3).unwrap().allowed, "a batch of three is three");
        assert!(load.spend(&Spender::Address("10.0.0.1".into()), 1).unwrap().allowed);
        assert_eq!(load.spend(&Spender::Operator, 1), None);
    }

    #[test]
    fn requests_in_flight_and_sockets_are_capped_and_freed() {
        let load = load(10);
        let (a, b) = (load.enter().unwrap(), load.enter().unwrap());
        assert_eq!(load.enter().unwrap_err().into_response().status(), StatusCode::SERVICE_UNAVAILABLE);
        drop(a);
        let _c = load.enter().unwrap();
        drop(b);
        let mut first = load.open_socket(None).unwrap();
        assert!(load.claim_socket(&mut first, "tok_a", false));
        let mut second = load.open_socket(None).unwrap();
        assert!(!load.claim_socket(&mut second, "tok_a", false), "one socket a token");
        assert!(load.claim_socket(&mut second, "tok_op", true), "an operator's are not counted");
        assert!(load.open_socket(None).is_err(), "two sockets in all");
        drop(first);
        let mut third = load.open_socket(None).unwrap();
        assert!(load.claim_socket(&mut third, "tok_a", false), "the token's place was given back");
    }

    #[test]
    fn an_address_holds_a_bounded_number_of_sockets_that_have_not_authenticated() {
        let load = Load::new(LoadArgs { max_sockets: 1_000, ..LoadArgs::default() });
        let peer = Some("10.1.2.3:4000".parse().unwrap());
        let mut waiting: Vec<SocketPlace> =
            (0..UNAUTHENTICATED_PER_ADDRESS).map(|_| load.open_socket(peer).unwrap()).collect();
        assert!(load.open_socket(peer).is_err(), "one more from the same address");
        assert!(load.open_socket(Some("10.9.9.9:1".parse().unwrap())).is_ok(), "another address");
        assert!(load.claim_socket(&mut waiting[0], "tok_a", false));
        assert!(load.open_socket(peer).is_ok(), "an authenticated one no longer counts against it");
        drop(waiting);
        let v6 = |a: &str| Some(std::net::SocketAddr::new(a.parse().unwrap(), 1));
        let held: Vec<SocketPlace> = (0..UNAUTHENTICATED_PER_ADDRESS)
            .map(|i| load.open_socket(v6(&format!("2001:db8::{i:x}"))).unwrap())
            .collect();
        assert!(load.open_socket(v6("2001:db8::ffff")).is_err(), "a /64 is one address");
        drop(held);
    }
}
