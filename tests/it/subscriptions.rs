//! The `events` subscription over graphql-transport-ws: authentication in connection_init,
//! live delivery, the types filter, and resuming after a cursor with no gap and no duplicate.
use crate::common;

use std::sync::Arc;
use std::time::Duration;

use common::{ADMIN, Backend, TestServer, Ws};
use serde_json::{Value, json};
use sqlx::ConnectOptions;

const EVENTS: &str = "subscription($t: String, $types: [String!], $after: String) { events(tenantId: $t, types: $types, after: $after) { cursor type subject version } }";
const WAIT: Duration = Duration::from_secs(10);

async fn acked(server: &TestServer, token: &str) -> Ws {
    let mut ws = server.ws(json!({ "Authorization": format!("Bearer {token}") })).await;
    let ack = ws.next(WAIT).await.expect("connection_ack");
    assert_eq!(ack["type"], "connection_ack", "{ack}");
    ws
}

/// Reads `n` events of subscription `id`.
async fn take(ws: &mut Ws, id: &str, n: usize) -> Vec<Value> {
    let mut events = Vec::new();
    while events.len() < n {
        let message = ws.next(WAIT).await.unwrap_or_else(|| panic!("only {} of {n} events arrived", events.len()));
        assert_eq!(message["id"], id, "{message}");
        assert_eq!(message["type"], "next", "{message}");
        assert!(message["payload"]["errors"].is_null(), "{message}");
        events.push(message["payload"]["data"]["events"].clone());
    }
    events
}

async fn make_projects(server: &TestServer, tenant: &str, names: impl Iterator<Item = String>) -> Vec<String> {
    let mut ids = Vec::new();
    for name in names {
        ids.push(server.project(tenant, &name).await);
    }
    ids
}

/// The cursor of the event about `subject`. The feed holds back events of transactions below
/// the PostgreSQL horizon, which other sessions can delay, so look until it shows.
async fn cursor_of(server: &TestServer, tenant: &str, subject: &str) -> String {
    let query = "query($t: String!, $a: String) { events(tenantId: $t, after: $a, first: 1000) { edges { cursor node { subject } } pageInfo { endCursor } } }";
    let mut after: Option<String> = None;
    for _ in 0..200 {
        let page = server.ok(Some(ADMIN), query, json!({ "t": tenant, "a": after })).await;
        for edge in page["events"]["edges"].as_array().unwrap() {
            if edge["node"]["subject"] == subject {
                return edge["cursor"].as_str().unwrap().to_owned();
            }
        }
        after = Some(page["events"]["pageInfo"]["endCursor"].as_str().unwrap().to_owned());
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("no event about {subject}");
}

db_test!(connection_init_with_a_bad_token_is_closed_4403, |backend: Backend| async move {
    let server = TestServer::start(backend).await;
    let mut ws = server.ws(json!({ "Authorization": "Bearer vpsg_nope" })).await;
    let (seen, closed) = ws.read_until_closed(WAIT).await;
    assert!(seen.iter().all(|m| m["type"] != "connection_ack"), "a bad token was acknowledged: {seen:?}");
    assert_eq!(closed.map(|(code, _)| code), Some(4403));
});

db_test!(connection_init_without_a_token_is_closed_4403, |backend: Backend| async move {
    let server = TestServer::start(backend).await;
    let mut ws = server.ws(json!({})).await;
    let (seen, closed) = ws.read_until_closed(WAIT).await;
    assert!(seen.is_empty(), "{seen:?}");
    let (code, reason) = closed.expect("a close frame");
    assert_eq!(code, 4403, "{reason}");
    assert!(reason.contains("token"), "{reason}");
});

db_test!(live_events_arrive_in_order, |backend: Backend| async move {
    let server = TestServer::start(backend).await;
    server.tenant("acme").await;
    let token = server.token(Some("acme"), &[("compute:*", "tenant/acme")]).await;
    let mut ws = acked(&server, &token).await;
    server.subscribe_live(&mut ws, "1", EVENTS, json!({ "t": "acme", "types": ["project.*"] })).await;
    let ids = make_projects(&server, "acme", (0..5).map(|i| format!("p{i}"))).await;
    let events = take(&mut ws, "1", 5).await;
    let subjects: Vec<&str> = events.iter().map(|e| e["subject"].as_str().unwrap()).collect();
    assert_eq!(subjects, ids.iter().map(String::as_str).collect::<Vec<_>>());
    assert!(events.iter().all(|e| e["type"] == "project.created"));
});

db_test!(types_filter_keeps_only_those_types, |backend: Backend| async move {
    let server = TestServer::start(backend).await;
    server.tenant("acme").await;
    let pool = server.pool("main").await;
    let token = server.token(Some("acme"), &[("compute:*", "tenant/acme")]).await;
    let mut ws = acked(&server, &token).await;
    server.subscribe_live(&mut ws, "q", EVENTS, json!({ "t": "acme", "types": ["quota.*"] })).await;
    server.project("acme", "noise").await;
    server.offer_exactly(&pool, "acme", json!([{ "resource": "diskGiB", "max": 10 }])).await;
    let events = take(&mut ws, "q", 1).await;
    assert_eq!(events[0]["type"], "quota.updated");
    assert!(ws.next(Duration::from_millis(500)).await.is_none(), "only the quota event passes the filter");
});

db_test!(another_tenants_events_are_not_delivered, |backend: Backend| async move {
    let server = TestServer::start(backend).await;
    server.tenant("acme").await;
    server.tenant("other").await;
    let token = server.token(Some("acme"), &[("compute:*", "tenant/acme")]).await;
    let mut ws = acked(&server, &token).await;
    ws.subscribe("f", EVENTS, json!({ "t": "other" })).await;
    let reply = ws.next(WAIT).await.unwrap();
    assert_eq!(reply["payload"]["errors"][0]["extensions"]["code"], "NOT_FOUND", "{reply}");
    assert_eq!(ws.next(WAIT).await.unwrap()["type"], "complete");
    server.subscribe_live(&mut ws, "a", EVENTS, json!({ "t": "acme", "types": ["project.*"] })).await;
    server.project("other", "theirs").await;
    let mine = server.project("acme", "mine").await;
    let events = take(&mut ws, "a", 1).await;
    assert_eq!(events[0]["subject"], mine);
});

db_test!(resume_after_a_cursor_replays_then_goes_live_without_gap_or_duplicate, |backend: Backend| async move {
    let server = Arc::new(TestServer::start(backend).await);
    server.tenant("acme").await;
    let token = server.token(Some("acme"), &[("compute:*", "tenant/acme")]).await;
    let before = make_projects(&server, "acme", (0..10).map(|i| format!("a{i}"))).await;
    let cursor = cursor_of(&server, "acme", before.last().unwrap()).await;
    // Missed while away: replayed from the outbox.
    let missed = make_projects(&server, "acme", (0..40).map(|i| format!("b{i}"))).await;
    let mut ws = acked(&server, &token).await;
    ws.subscribe("r", EVENTS, json!({ "t": "acme", "types": ["project.*"], "after": cursor })).await;
    // Written while the replay runs and after it: delivered live.
    let writer = {
        let server = server.clone();
        tokio::spawn(async move { make_projects(&server, "acme", (0..60).map(|i| format!("c{i}"))).await })
    };
    let events = take(&mut ws, "r", 100).await;
    let live = writer.await.unwrap();
    let subjects: Vec<String> = events.iter().map(|e| e["subject"].as_str().unwrap().to_owned()).collect();
    let expected: Vec<String> = missed.into_iter().chain(live).collect();
    assert_eq!(subjects, expected, "exactly the events after the cursor, in order, once each");
    assert!(!subjects.iter().any(|s| before.contains(s)));
    assert!(ws.next(Duration::from_millis(500)).await.is_none(), "nothing more");
    // The last event's cursor resumes with nothing to replay.
    let last = events.last().unwrap()["cursor"].as_str().unwrap().to_owned();
    let mut again = acked(&server, &token).await;
    again.subscribe("s", EVENTS, json!({ "t": "acme", "types": ["project.*"], "after": last })).await;
    assert!(again.next(Duration::from_millis(500)).await.is_none());
    let next = server.project("acme", "d0").await;
    assert_eq!(take(&mut again, "s", 1).await[0]["subject"], next);
});

db_test!(a_subscriber_of_a_second_process_sees_the_first_processs_events, |backend: Backend| async move {
    if backend == Backend::Sqlite {
        return; // SQLite is for one process.
    }
    let first = TestServer::start(backend).await;
    let url = first.app.services.db.get_postgres_connection_pool().connect_options().to_url_lossy().to_string();
    let mut config = common::config(&url);
    config.limits.feed_poll_ms = 60_000; // LISTEN/NOTIFY must do the waking, not the poll.
    let second = TestServer::with_config(config).await;
    first.tenant("acme").await;
    let token = first.token(Some("acme"), &[("compute:*", "tenant/acme")]).await;
    let mut ws = acked(&second, &token).await;
    second.subscribe_live(&mut ws, "x", EVENTS, json!({ "t": "acme", "types": ["project.*"] })).await;
    let ids = make_projects(&first, "acme", (0..5).map(|i| format!("p{i}"))).await;
    let events = take(&mut ws, "x", 5).await;
    let subjects: Vec<&str> = events.iter().map(|e| e["subject"].as_str().unwrap()).collect();
    assert_eq!(subjects, ids.iter().map(String::as_str).collect::<Vec<_>>());
});

db_test!(revoking_a_token_ends_its_subscriptions, |backend: Backend| async move {
    let server = TestServer::start(backend).await;
    server.tenant("acme").await;
    let issued = server
        .ok(Some(ADMIN), "mutation { tokenIssue(input: { tenantId: \"acme\", grants: [{ permission: \"compute:*\", scope: \"tenant/acme\" }] }) { secret token { id } } }", json!({}))
        .await;
    let secret = issued["tokenIssue"]["secret"].as_str().unwrap();
    let token_id = issued["tokenIssue"]["token"]["id"].as_str().unwrap();
    let mut ws = acked(&server, secret).await;
    server.subscribe_live(&mut ws, "1", EVENTS, json!({ "t": "acme", "types": ["project.*"] })).await;
    server
        .ok(
            Some(ADMIN),
            "mutation($id: String!) { tokenRevoke(input: { tokenId: $id }) { id } }",
            json!({ "id": token_id }),
        )
        .await;
    // The connection is closed (4403); the subscription may first say why it ends, and
    // delivers nothing more.
    let (before, closed) = ws.read_until_closed(WAIT).await;
    assert_eq!(closed.map(|c| c.0), Some(4403), "{before:?}");
    for message in &before {
        let ends =
            message["type"] == "complete" || message["payload"]["errors"][0]["extensions"]["code"] == "UNAUTHENTICATED";
        assert!(ends, "only the end of the subscription comes before the close: {message}");
    }
});

/// Event `n` of tenant acme, of subject `s{n}`.
fn written_of_acme(n: usize, data: serde_json::Value) -> vps_graph::store::outbox::NewEvent {
    vps_graph::store::outbox::NewEvent {
        event_type: "test.written".into(),
        subject_kind: "test",
        subject: format!("s{n}"),
        tenant_id: Some("acme".into()),
        project_id: None,
        version: 1,
        data: data.into(),
    }
}

/// The feed's filter for every event of tenant acme, as the service itself reads it.
fn every_event_of_acme() -> vps_graph::feed::Filter {
    vps_graph::feed::Filter {
        actor: vps_graph::authz::Actor::system(),
        tenant_id: Some("acme".into()),
        types: Vec::new(),
        subject: None,
        except: Vec::new(),
        part: None,
    }
}

db_test!(a_subscriber_whose_queue_overflowed_reads_what_it_missed_from_the_outbox, |backend: Backend| async move {
    use futures_util::StreamExt;
    let server = TestServer::start(backend).await;
    let services = &server.app.services;
    let stream = services.feed.subscribe(every_event_of_acme(), None);
    // Far more than a subscriber's queue holds, handed to it while it reads nothing.
    const MANY: usize = 1_000;
    let tailed = services.metrics.events_tailed.get();
    let event = |n: usize| written_of_acme(n, json!({ "n": n }));
    let txn = services.begin().await.unwrap();
    services.commit(txn, (0..MANY).map(event).collect()).await.unwrap();
    for _ in 0..1_000 {
        if services.metrics.events_tailed.get() >= tailed + MANY as u64 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(services.metrics.events_tailed.get() >= tailed + MANY as u64, "the tailer handed every event on");
    let got: Vec<String> =
        stream.take(MANY).map(|e| e.unwrap().subject.clone()).take_until(tokio::time::sleep(WAIT * 6)).collect().await;
    let expected: Vec<String> = (0..MANY).map(|n| format!("s{n}")).collect();
    assert_eq!(got, expected, "every event once, in feed order, past the overflow");
});

/// Waits until the server holds `subscribers` subscriptions answered by `executions` executions.
async fn held(server: &TestServer, subscribers: i64, executions: i64) {
    let metrics = &server.app.services.metrics;
    for _ in 0..200 {
        if metrics.subscribers.get() == subscribers && metrics.subscription_executions.get() == executions {
            return;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!(
        "{} subscriptions in {} executions, not {subscribers} in {executions}",
        metrics.subscribers.get(),
        metrics.subscription_executions.get()
    );
}

/// Waits until `n` subscriptions are registered on the feed, and asserts no more are. An
/// execution counts in `held` once it is made, but sees events only once its resolver registered
/// it on the feed, later, in its task (a live subscription without a cursor reads from there on);
/// each socket watches its token there too.
async fn registered_on_feed(server: &TestServer, n: usize, what: &str) {
    for _ in 0..200 {
        if server.app.services.feed.registered() >= n {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert_eq!(server.app.services.feed.registered(), n, "{what}");
}

/// The next message of subscription `id`, as the text the server sent.
async fn raw_next(ws: &mut Ws, id: &str) -> Value {
    let message = ws.next(WAIT).await.expect("a message");
    assert_eq!(message["id"], id, "{message}");
    assert_eq!(message["type"], "next", "{message}");
    message
}

db_test!(live_subscribers_that_ask_the_same_share_one_execution_rendered_once, |backend: Backend| async move {
    let server = TestServer::start(backend).await;
    server.tenant("acme").await;
    let token = server.token(Some("acme"), &[("compute:*", "tenant/acme")]).await;
    let projects = json!({ "t": "acme", "types": ["project.*"] });
    let registered = server.app.services.feed.registered();
    let mut same = Vec::new();
    for id in ["a", "b", "c"] {
        let mut ws = acked(&server, &token).await;
        ws.subscribe(id, EVENTS, projects.clone()).await;
        same.push((id, ws));
    }
    // Other variables, and the same ones asked by another token: each its own execution.
    let mut wider = acked(&server, &token).await;
    wider.subscribe("w", EVENTS, json!({ "t": "acme", "types": ["project.*", "quota.*"] })).await;
    let other_token = server.token(Some("acme"), &[("compute:*", "tenant/acme")]).await;
    let mut other = acked(&server, &other_token).await;
    other.subscribe("o", EVENTS, projects.clone()).await;
    held(&server, 5, 3).await;
    registered_on_feed(&server, registered + 8, "five sockets, three executions").await;
    let delivered = server.app.services.metrics.events_delivered.get();
    let made = server.project("acme", "p0").await;
    let mut payloads = Vec::new();
    for (id, ws) in &mut same {
        let message = raw_next(ws, id).await;
        assert_eq!(message["payload"]["data"]["events"]["subject"], made.as_str(), "{message}");
        payloads.push(message["payload"].clone());
    }
    // The same answer for each (that it was made once shows in `events_delivered` below).
    assert!(payloads.windows(2).all(|p| p[0] == p[1]), "the same answer for all: {payloads:?}");
    assert_eq!(raw_next(&mut wider, "w").await["payload"]["data"]["events"]["subject"], made.as_str());
    assert_eq!(raw_next(&mut other, "o").await["payload"]["data"]["events"]["subject"], made.as_str());
    // The feed handed the event to three executions, not to five subscribers.
    assert_eq!(server.app.services.metrics.events_delivered.get() - delivered, 3);

    // One leaving does not end the others'; the last one leaving ends the execution.
    let (_, mut first) = same.remove(0);
    first.send(json!({ "id": "a", "type": "complete" })).await;
    assert_eq!(first.next(WAIT).await.unwrap(), json!({ "id": "a", "type": "complete" }));
    held(&server, 4, 3).await;
    let later = server.project("acme", "p1").await;
    for (id, ws) in &mut same {
        assert_eq!(raw_next(ws, id).await["payload"]["data"]["events"]["subject"], later.as_str());
    }
    assert!(first.next(Duration::from_millis(300)).await.is_none(), "nothing after its own complete");
    drop(same);
    held(&server, 2, 2).await;
});

db_test!(a_subscriber_that_joins_a_live_execution_gets_what_it_answers_from_then_on, |backend: Backend| async move {
    let server = TestServer::start(backend).await;
    server.tenant("acme").await;
    let token = server.token(Some("acme"), &[("compute:*", "tenant/acme")]).await;
    let projects = json!({ "t": "acme", "types": ["project.*"] });
    let registered = server.app.services.feed.registered();
    let mut early = acked(&server, &token).await;
    early.subscribe("1", EVENTS, projects.clone()).await;
    held(&server, 1, 1).await;
    registered_on_feed(&server, registered + 2, "a socket and its execution").await;
    let before = server.project("acme", "before").await;
    assert_eq!(take(&mut early, "1", 1).await[0]["subject"], before.as_str());
    let mut late = acked(&server, &token).await;
    late.subscribe("1", EVENTS, projects).await;
    held(&server, 2, 1).await;
    // The joining subscriber shares the registered execution: only its socket is new.
    registered_on_feed(&server, registered + 3, "two sockets, one execution").await;
    let after = server.project("acme", "after").await;
    assert_eq!(take(&mut early, "1", 1).await[0]["subject"], after.as_str());
    assert_eq!(take(&mut late, "1", 1).await[0]["subject"], after.as_str(), "from where it joined, nothing before");
});

db_test!(subscriptions_that_replay_from_a_cursor_each_run_on_their_own, |backend: Backend| async move {
    let server = TestServer::start(backend).await;
    server.tenant("acme").await;
    let token = server.token(Some("acme"), &[("compute:*", "tenant/acme")]).await;
    let made = make_projects(&server, "acme", (0..3).map(|i| format!("p{i}"))).await;
    let cursor = cursor_of(&server, "acme", &made[0]).await;
    let replay = json!({ "t": "acme", "types": ["project.*"], "after": cursor });
    let mut first = acked(&server, &token).await;
    first.subscribe("r", EVENTS, replay.clone()).await;
    let replayed: Vec<Value> = take(&mut first, "r", 2).await.into_iter().map(|e| e["subject"].clone()).collect();
    assert_eq!(replayed, [json!(made[1]), json!(made[2])]);
    // The same replay asked later is replayed again, in full: a shared one would have missed it.
    let mut second = acked(&server, &token).await;
    second.subscribe("r", EVENTS, replay).await;
    let replayed: Vec<Value> = take(&mut second, "r", 2).await.into_iter().map(|e| e["subject"].clone()).collect();
    assert_eq!(replayed, [json!(made[1]), json!(made[2])]);
    held(&server, 2, 2).await;
});

db_test!(
    a_subscriber_that_reads_between_an_overflow_and_the_next_events_misses_nothing,
    |backend: Backend| async move {
        use futures_util::StreamExt;
        let server = TestServer::start(backend).await;
        let services = &server.app.services;
        let mut stream = Box::pin(services.feed.subscribe(every_event_of_acme(), None));
        let commit = |from: usize, to: usize| async move {
            let tailed = services.metrics.events_tailed.get();
            let events = (from..to).map(|n| written_of_acme(n, json!({})));
            let txn = services.begin().await.unwrap();
            services.commit(txn, events.collect()).await.unwrap();
            for _ in 0..1_000 {
                if services.metrics.events_tailed.get() >= tailed + (to - from) as u64 {
                    return;
                }
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            panic!("the tailer did not hand on events {from}..{to}");
        };
        let mut got = Vec::new();
        let mut read = async |n: usize, got: &mut Vec<String>| {
            for _ in 0..n {
                let event = tokio::time::timeout(WAIT, stream.next()).await.expect("an event in time");
                got.push(event.expect("the stream goes on").unwrap().subject.clone());
            }
        };
        // More than the subscriber's queue holds: the tail of it overflows.
        commit(0, 300).await;
        // The subscriber reads a few, which makes room in its queue, before it has come to the
        // overflow; then more events are handed on.
        read(10, &mut got).await;
        commit(300, 400).await;
        read(390, &mut got).await;
        let expected: Vec<String> = (0..400).map(|n| format!("s{n}")).collect();
        assert_eq!(got, expected, "every event once, in feed order");
    }
);
