//! The `events` subscription over graphql-transport-ws: authentication in connection_init,
//! live delivery, the types filter, and resuming after a cursor with no gap and no duplicate.
mod common;

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

db_test!(connection_init_with_a_bad_token_is_refused, |backend: Backend| async move {
    let server = TestServer::start(backend).await;
    let mut ws = server.ws(json!({ "Authorization": "Bearer vpsg_nope" })).await;
    let reply = ws.next(WAIT).await;
    assert!(reply.as_ref().is_none_or(|r| r["type"] != "connection_ack"), "a bad token was acknowledged: {reply:?}");
});

db_test!(subscription_without_a_token_is_unauthenticated, |backend: Backend| async move {
    let server = TestServer::start(backend).await;
    let mut ws = server.ws(json!({})).await;
    assert_eq!(ws.next(WAIT).await.unwrap()["type"], "connection_ack");
    ws.subscribe("1", EVENTS, json!({ "t": "acme" })).await;
    let reply = ws.next(WAIT).await.unwrap();
    assert_eq!(reply["payload"]["errors"][0]["extensions"]["code"], "UNAUTHENTICATED", "{reply}");
});

db_test!(live_events_arrive_in_order, |backend: Backend| async move {
    let server = TestServer::start(backend).await;
    server.tenant("acme").await;
    let token = server.token(Some("acme"), &[("compute:*", "tenant/acme")]).await;
    let mut ws = acked(&server, &token).await;
    ws.subscribe("1", EVENTS, json!({ "t": "acme", "types": ["project.*"] })).await;
    tokio::time::sleep(Duration::from_millis(200)).await;
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
    ws.subscribe("q", EVENTS, json!({ "t": "acme", "types": ["quota.*"] })).await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    server.project("acme", "noise").await;
    server.offer(&pool, "acme", json!([{ "resource": "diskGiB", "max": 10 }])).await;
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
    ws.subscribe("a", EVENTS, json!({ "t": "acme", "types": ["project.*"] })).await;
    tokio::time::sleep(Duration::from_millis(200)).await;
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
    ws.subscribe("x", EVENTS, json!({ "t": "acme", "types": ["project.*"] })).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
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
    ws.subscribe("1", EVENTS, json!({ "t": "acme", "types": ["project.*"] })).await;
    tokio::time::sleep(Duration::from_millis(200)).await;
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

db_test!(a_subscriber_whose_queue_overflowed_reads_what_it_missed_from_the_outbox, |backend: Backend| async move {
    use futures_util::StreamExt;
    use vps_graph::service::authz::Actor;
    use vps_graph::service::feed::Filter;
    use vps_graph::store::outbox::NewEvent;
    let server = TestServer::start(backend).await;
    let services = &server.app.services;
    let filter = Filter {
        actor: Actor::system(),
        tenant_id: Some("acme".into()),
        types: Vec::new(),
        subject: None,
        except: Vec::new(),
        part: None,
    };
    let stream = services.feed.subscribe(filter, None);
    // Far more than a subscriber's queue holds, handed to it while it reads nothing.
    const MANY: usize = 1_000;
    let tailed = services.metrics.events_tailed.get();
    let event = |n: usize| NewEvent {
        event_type: "test.written".into(),
        subject_kind: "test",
        subject: format!("s{n}"),
        tenant_id: Some("acme".into()),
        project_id: None,
        version: 1,
        data: json!({ "n": n }),
    };
    let txn = services.begin().await.unwrap();
    services.commit(txn, (0..MANY).map(event).collect()).await.unwrap();
    for _ in 0..1_000 {
        if services.metrics.events_tailed.get() >= tailed + MANY as u64 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(services.metrics.events_tailed.get() >= tailed + MANY as u64, "the tailer handed every event on");
    let got: Vec<String> = stream.take(MANY).map(|e| e.unwrap().subject.clone()).collect().await;
    let expected: Vec<String> = (0..MANY).map(|n| format!("s{n}")).collect();
    assert_eq!(got, expected, "every event once, in feed order, past the overflow");
});
