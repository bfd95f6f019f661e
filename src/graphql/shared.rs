//! Subscriptions shared by the subscribers that ask the same: the WebSocket subscriptions of one
//! caller with the same operation and variables are one execution (one feed subscriber, each
//! event resolved and rendered to JSON once) whose responses go to every one of them. Hasura
//! multiplexes its subscriptions the same way.
//!
//! Only live subscriptions are shared. A subscription that replays from a cursor (`after`), and
//! any query or mutation sent over a socket, runs on its own: a subscriber that joined it late
//! would miss what it already answered. A subscriber that joins a live one sees what it answers
//! from then on, as one that started its own execution at that moment would.
use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};

use async_graphql::parser::types::{OperationType, Selection};
use async_graphql::{Request, Value};
use futures_util::StreamExt;
use tokio::sync::{Notify, mpsc};
use tokio::task::AbortHandle;

use super::{AppSchema, Caller};
use crate::metrics::{GaugeGuard, Metrics};

/// What the subscriptions of one connection are answered on.
#[derive(Clone)]
pub struct Link {
    out: mpsc::Sender<Outbound>,
    /// Told when `out` was full: the connection fell behind what it is sent.
    behind: Arc<Notify>,
}

impl Link {
    /// A connection's link, its queue of `capacity` messages, and where it learns it fell behind.
    pub fn new(capacity: usize) -> (Link, mpsc::Receiver<Outbound>, Arc<Notify>) {
        let (out, receiver) = mpsc::channel(capacity);
        let behind = Arc::new(Notify::new());
        (Link { out, behind: behind.clone() }, receiver, behind)
    }

    fn send(&self, message: Outbound) {
        if let Err(mpsc::error::TrySendError::Full(_)) = self.out.try_send(message) {
            self.behind.notify_one();
        }
    }
}

/// What a subscription sends its connection; `number` tells it apart from an earlier one of the
/// same id (`Membership::number`).
pub enum Outbound {
    /// A response, rendered once (`payload` is its JSON) for every subscriber that shares it.
    Next { id: Arc<str>, number: u64, payload: Arc<str> },
    /// The subscription ended.
    Complete { id: Arc<str>, number: u64 },
}

/// The shared executions of one process, by what they were asked.
pub struct Shared {
    schema: AppSchema,
    metrics: Arc<Metrics>,
    live: Mutex<HashMap<Key, Arc<Execution>>>,
    next_number: std::sync::atomic::AtomicU64,
}

/// What makes two subscriptions the same: the operation, its variables and who asks.
#[derive(Clone, PartialEq, Eq, Hash)]
struct Key {
    query: String,
    operation_name: Option<String>,
    variables: String,
    caller: String,
}

/// One execution and the subscribers it answers.
struct Execution {
    key: Option<Key>,
    members: Mutex<Members>,
    task: Mutex<Option<AbortHandle>>,
    _running: GaugeGuard,
}

#[derive(Default)]
struct Members {
    list: Vec<Member>,
    /// False once it answered an error (it is ending): a new subscriber starts its own.
    joinable: bool,
}

struct Member {
    number: u64,
    id: Arc<str>,
    link: Link,
}

/// A subscriber's place in an execution; dropping it leaves (and ends an execution left with
/// no subscriber).
pub struct Membership {
    shared: Weak<Shared>,
    execution: Arc<Execution>,
    number: u64,
    _open: GaugeGuard,
}

impl Membership {
    /// Which subscription this is, among every one the process has answered.
    pub fn number(&self) -> u64 {
        self.number
    }
}

impl Drop for Membership {
    fn drop(&mut self) {
        let mut members = self.execution.members.lock().unwrap_or_else(|e| e.into_inner());
        members.list.retain(|m| m.number != self.number);
        if !members.list.is_empty() {
            return;
        }
        members.joinable = false;
        drop(members);
        if let Some(shared) = self.shared.upgrade() {
            shared.forget(&self.execution);
        }
        if let Some(task) = self.execution.task.lock().unwrap_or_else(|e| e.into_inner()).take() {
            task.abort();
        }
    }
}

impl Shared {
    pub fn new(schema: AppSchema, metrics: Arc<Metrics>) -> Arc<Shared> {
        Arc::new(Shared { schema, metrics, live: Mutex::new(HashMap::new()), next_number: Default::default() })
    }

    /// Answers `request` of `caller` as subscription `id` on `link`: in the live execution that
    /// already answers the same, or in a new one. A query or mutation answers within `once`'s
    /// deadline, holding its place until then.
    pub fn subscribe(
        self: &Arc<Self>,
        mut request: Request,
        caller: &Caller,
        id: &str,
        link: Link,
        once: Once,
    ) -> Membership {
        let key = shared_key(&mut request, caller);
        let once = (operation_type(&mut request) != Some(OperationType::Subscription)).then_some(once);
        let mut live = self.live.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(execution) = key.as_ref().and_then(|key| live.get(key))
            && let Some(membership) = self.join(execution, id, &link)
        {
            return membership;
        }
        let execution = Arc::new(Execution {
            key: key.clone(),
            members: Mutex::new(Members { joinable: true, ..Members::default() }),
            task: Mutex::new(None),
            _running: GaugeGuard::new(&self.metrics.subscription_executions),
        });
        if let Some(key) = key {
            live.insert(key, execution.clone());
        }
        drop(live);
        let membership = self.join(&execution, id, &link).expect("a new execution is joinable");
        // A query or mutation's dry-run plans go in its answer's extensions, as over HTTP.
        let plans = super::plans::Plans::default();
        let stream = self.schema.execute_stream(request.data(caller.clone()).data(plans.clone()));
        let stream = stream
            .map(move |mut response| {
                if let Some(plan) = plans.extension() {
                    response.extensions.insert("plan".to_owned(), plan);
                }
                response
            })
            .boxed();
        let stream = match once {
            Some(once) => within(once, stream),
            None => stream,
        };
        let task = tokio::spawn(answer(Arc::downgrade(self), execution.clone(), stream));
        *execution.task.lock().unwrap_or_else(|e| e.into_inner()) = Some(task.abort_handle());
        membership
    }

    fn join(self: &Arc<Self>, execution: &Arc<Execution>, id: &str, link: &Link) -> Option<Membership> {
        let mut members = execution.members.lock().unwrap_or_else(|e| e.into_inner());
        if !members.joinable {
            return None;
        }
        let number = self.next_number.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        members.list.push(Member { number, id: Arc::from(id), link: link.clone() });
        Some(Membership {
            shared: Arc::downgrade(self),
            execution: execution.clone(),
            number,
            _open: GaugeGuard::new(&self.metrics.subscribers),
        })
    }

    /// Takes `execution` off the live ones, so that no one joins it any more.
    fn forget(&self, execution: &Arc<Execution>) {
        let Some(key) = &execution.key else { return };
        let mut live = self.live.lock().unwrap_or_else(|e| e.into_inner());
        if live.get(key).is_some_and(|found| Arc::ptr_eq(found, execution)) {
            live.remove(key);
        }
    }
}

/// Sends each response of `stream` to the execution's subscribers, rendered once, then tells
/// them it ended.
async fn answer(
    shared: Weak<Shared>,
    execution: Arc<Execution>,
    mut stream: futures_util::stream::BoxStream<'static, async_graphql::Response>,
) {
    while let Some(response) = stream.next().await {
        let failed = !response.errors.is_empty();
        let payload: Arc<str> = match String::from_utf8(super::render::response_json(&response)) {
            Ok(json) => json.into(),
            Err(err) => {
                tracing::error!(error = %err, "a subscription's response did not render");
                continue;
            }
        };
        let mut members = execution.members.lock().unwrap_or_else(|e| e.into_inner());
        if failed {
            // An error usually ends a subscription: whoever asks now starts afresh.
            members.joinable = false;
        }
        for member in &members.list {
            member.link.send(Outbound::Next { id: member.id.clone(), number: member.number, payload: payload.clone() });
        }
        drop(members);
        if failed && let Some(shared) = shared.upgrade() {
            shared.forget(&execution);
        }
    }
    if let Some(shared) = shared.upgrade() {
        shared.forget(&execution);
    }
    let mut members = execution.members.lock().unwrap_or_else(|e| e.into_inner());
    members.joinable = false;
    for member in &members.list {
        member.link.send(Outbound::Complete { id: member.id.clone(), number: member.number });
    }
}

/// What a query or mutation sent over a socket answers within: the HTTP deadline, and its place
/// among the requests in flight.
pub struct Once {
    pub deadline: std::time::Duration,
    pub place: tokio::sync::OwnedSemaphorePermit,
}

/// `stream`'s one answer, or a TIMEOUT error once the deadline has passed: a query or mutation
/// over a socket takes no longer than over HTTP, and holds its place until answered.
fn within(
    once: Once,
    stream: futures_util::stream::BoxStream<'static, async_graphql::Response>,
) -> futures_util::stream::BoxStream<'static, async_graphql::Response> {
    let Once { deadline, place } = once;
    let answered = async move {
        let _place = place;
        let mut stream = stream;
        match tokio::time::timeout(deadline, stream.next()).await {
            Ok(answer) => answer,
            Err(_) => {
                let message = format!("the operation took longer than {} ms", deadline.as_millis());
                let timeout = crate::error::Error::new(crate::error::Code::Timeout, message);
                Some(async_graphql::Response::from_errors(vec![super::error::server_error(timeout)]))
            }
        }
    };
    futures_util::stream::once(answered).filter_map(futures_util::future::ready).boxed()
}

/// The type of the operation `request` runs, when its document parses and names one.
fn operation_type(request: &mut Request) -> Option<OperationType> {
    let name = request.operation_name.clone();
    let document = request.parsed_query().ok()?;
    Some(super::documents::chosen(document, name.as_deref())?.node.ty)
}

/// The key a live subscription is shared under; None for what runs on its own (a query, a
/// mutation, a replay from a cursor, a request that does not parse).
fn shared_key(request: &mut Request, caller: &Caller) -> Option<Key> {
    let caller = caller_key(caller)?;
    let variables = serde_json::to_string(&request.variables).ok()?;
    let (query, operation_name, values) =
        (request.query.clone(), request.operation_name.clone(), request.variables.clone());
    let document = request.parsed_query().ok()?;
    let operation = super::documents::chosen(document, operation_name.as_deref())?;
    if operation.node.ty != OperationType::Subscription {
        return None;
    }
    // A variable the request leaves out takes its definition's default, as execution gives it.
    let variable = |name: async_graphql::Name| -> Result<Value, ()> {
        Ok(match values.get(&name) {
            Some(value) => value.clone(),
            None => (operation.node.variable_definitions.iter())
                .find(|definition| definition.node.name.node == name)
                .and_then(|definition| definition.node.default_value().cloned())
                .unwrap_or(Value::Null),
        })
    };
    let replays = operation.node.selection_set.node.items.iter().any(|selection| match &selection.node {
        Selection::Field(field) => field.node.arguments.iter().any(|(name, value)| {
            name.node == "after" && value.node.clone().into_const_with(variable) != Ok(Value::Null)
        }),
        // A fragment at the root of a subscription: not worth looking into, run it alone.
        _ => true,
    });
    (!replays).then_some(Key { query, operation_name, variables, caller })
}

/// Who asks, as far as it decides what a subscription answers.
fn caller_key(caller: &Caller) -> Option<String> {
    match caller {
        Caller::Anonymous => Some("anonymous".into()),
        Caller::Authenticated(actor) => Some(actor.identity()),
        Caller::Rejected(_) => None,
    }
}

#[cfg(test)]
mod tests {
    use futures_util::FutureExt;
    use serde_json::json;

    use super::*;
    use crate::authz::Actor;

    fn request(query: &str, variables: serde_json::Value) -> Request {
        Request::new(query).variables(async_graphql::Variables::from_json(variables))
    }

    #[test]
    fn live_subscriptions_are_shared_and_replays_queries_and_mutations_run_alone() {
        let caller = Caller::Authenticated(Actor::system());
        let events = "subscription($a: String) { events(tenantId: \"t\", after: $a) { type } }";
        let shared = |query: &str, variables| shared_key(&mut request(query, variables), &caller).is_some();
        assert!(shared(events, json!({})), "live");
        assert!(shared(events, json!({ "a": null })), "an after that is null is live");
        assert!(!shared(events, json!({ "a": "c" })), "a replay from a cursor");
        assert!(!shared("subscription { events(after: \"c\") { type } }", json!({})), "a replay written inline");
        let defaulted = "subscription($a: String = \"c\") { events(tenantId: \"t\", after: $a) { type } }";
        assert!(!shared(defaulted, json!({})), "a replay from a variable's default");
        assert!(shared(defaulted, json!({ "a": null })), "a default overridden with null is live");
        assert!(!shared("{ me { tenantId } }", json!({})), "a query");
        assert!(!shared("mutation { tokenRevoke(input: { tokenId: \"x\" }) { id } }", json!({})), "a mutation");
        assert!(!shared("subscription {", json!({})), "what does not parse");
        let key = |caller: &Caller| shared_key(&mut request(events, json!({})), caller);
        let mut tenant = Actor::system();
        tenant.token_id = Some("tok_1".into());
        assert!(key(&caller) != key(&Caller::Authenticated(tenant)), "another caller, another execution");
    }

    #[test]
    fn a_connection_whose_queue_is_full_is_told_it_fell_behind() {
        let (link, mut queue, behind) = Link::new(2);
        let next = |n: u64| Outbound::Complete { id: Arc::from("1"), number: n };
        link.send(next(1));
        link.send(next(2));
        assert!(behind.notified().now_or_never().is_none(), "two fit");
        link.send(next(3));
        assert!(behind.notified().now_or_never().is_some(), "the third did not");
        assert!(queue.try_recv().is_ok() && queue.try_recv().is_ok() && queue.try_recv().is_err());
    }
}
