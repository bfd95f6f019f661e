//! Events from a moment (issue 33): `events(since:)` and the `events` subscription with `since`
//! start at the first event stamped at or after that time (events are stamped with the app's
//! clock), so a client that knows when it last looked needs no cursor.
use crate::common;

use std::time::Duration;

use chrono::{DateTime, Utc};
use common::{ADMIN, Backend, TestServer};
use serde_json::{Value, json};
use vps_graph::clock::Clock;
use vps_graph::store::outbox;

const PAGE: &str = "query($s: DateTime, $a: String) { events(tenantId: \"acme\", since: $s, after: $a, first: 1000) { edges { node { type subject } } pageInfo { endCursor } } }";

fn at(ms: i64) -> DateTime<Utc> {
    DateTime::from_timestamp_millis(ms).unwrap()
}

/// A server on a manual clock with tenant `acme` made at `START`, project `a` a minute later and
/// `b` two minutes later; the projects' ids (and the database, kept while the test runs).
async fn setup(backend: Backend) -> (TestServer, common::TestDb, [String; 2]) {
    let db = common::TestDb::new(backend).await;
    let mut config = common::config(&db.url);
    config.clock = Clock::manual(common::START);
    let clock = config.clock.clone();
    let server = TestServer::with_config(config).await;
    server.tenant("acme").await;
    clock.advance(60_000);
    let a = server.project("acme", "a").await;
    clock.advance(60_000);
    let b = server.project("acme", "b").await;
    (server, db, [a, b])
}

/// The (type, subject) of the events of a page from `since`, once `wanted` of them show
/// (PostgreSQL shows a commit once no older transaction of the cluster runs).
async fn page_since(server: &TestServer, since: DateTime<Utc>, wanted: usize) -> (Vec<(String, String)>, Value) {
    let mut seen = (Vec::new(), Value::Null);
    for _ in 0..200 {
        let body = server.gql(Some(ADMIN), PAGE, json!({ "s": since.to_rfc3339() })).await;
        let edges = body["data"]["events"]["edges"].as_array().cloned().unwrap_or_default();
        let events = edges
            .iter()
            .map(|e| {
                (e["node"]["type"].as_str().unwrap().to_owned(), e["node"]["subject"].as_str().unwrap().to_owned())
            })
            .collect::<Vec<_>>();
        seen = (events, body);
        if seen.0.len() >= wanted {
            return seen;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    seen
}

/// The first event after cursor `end`, once one shows.
async fn first_after(server: &TestServer, end: &str) -> Value {
    for _ in 0..200 {
        let page = server.ok(Some(ADMIN), PAGE, json!({ "a": end })).await;
        if let Some(first) = page["events"]["edges"].get(0) {
            return first.clone();
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("nothing came after {end}");
}

fn created(project: &str) -> (String, String) {
    ("project.created".to_owned(), project.to_owned())
}

db_test!(a_page_since_a_moment_starts_at_the_first_event_stamped_at_or_after_it, |backend: Backend| async move {
    let (server, _db, [a, b]) = setup(backend).await;
    let minute = common::START + 60_000;
    assert_eq!(page_since(&server, at(minute), 2).await.0, vec![created(&a), created(&b)], "at the moment: included");
    assert_eq!(page_since(&server, at(minute + 1), 1).await.0, vec![created(&b)], "a moment later: not");
    assert_eq!(page_since(&server, at(common::START), 3).await.0.len(), 3, "the tenant's creation too");

    // From a moment nothing is stamped at yet: an empty page whose cursor reads on from there.
    let (none, body) = page_since(&server, at(minute + 3_600_000), 0).await;
    assert!(none.is_empty(), "{body}");
    let end = body["data"]["events"]["pageInfo"]["endCursor"].as_str().expect("a cursor to read on").to_owned();
    let c = server.project("acme", "c").await;
    let next = first_after(&server, &end).await;
    assert_eq!(next["node"]["subject"], c.as_str(), "{next}");
});

db_test!(since_and_after_together_are_refused, |backend: Backend| async move {
    let (server, _db, _) = setup(backend).await;
    let (_, body) = page_since(&server, at(common::START), 3).await;
    let cursor = body["data"]["events"]["pageInfo"]["endCursor"].as_str().unwrap();
    let both = server.gql(Some(ADMIN), PAGE, json!({ "s": at(common::START).to_rfc3339(), "a": cursor })).await;
    assert_eq!(both["errors"][0]["extensions"]["code"], "INVALID_INPUT", "{both}");
    assert_eq!(both["errors"][0]["extensions"]["details"]["field"], "since");
});

db_test!(a_subscription_since_a_moment_replays_from_it_then_goes_live, |backend: Backend| async move {
    let (server, _db, [a, b]) = setup(backend).await;
    page_since(&server, at(common::START), 3).await;
    let mut ws = server.ws(json!({ "Authorization": format!("Bearer {ADMIN}") })).await;
    assert_eq!(ws.next(Duration::from_secs(10)).await.unwrap()["type"], "connection_ack");
    let subscription = "subscription($s: DateTime) { events(tenantId: \"acme\", since: $s) { type subject } }";
    server.subscribe_live(&mut ws, "s", subscription, json!({ "s": at(common::START + 60_000).to_rfc3339() })).await;
    let c = server.project("acme", "c").await;
    let mut subjects = Vec::new();
    while subjects.len() < 3 {
        let message = ws.next(Duration::from_secs(10)).await.expect("an event");
        assert_eq!(message["type"], "next", "{message}");
        subjects.push(message["payload"]["data"]["events"]["subject"].as_str().unwrap().to_owned());
    }
    assert_eq!(subjects, vec![a, b, c], "replayed from the moment, then live, once each");
});

db_test!(a_moment_older_than_the_feed_keeps_is_refused_with_where_to_read_on, |backend: Backend| async move {
    let (server, _db, [_, b]) = setup(backend).await;
    page_since(&server, at(common::START), 3).await;
    // Retention removes the tenant's creation and project a (stamped before 90 s in).
    let cutoff = at(common::START + 90_000);
    let mut removed = 0;
    for _ in 0..200 {
        removed += outbox::remove_before(&server.app.services.db, cutoff, 1000).await.unwrap();
        if removed >= 2 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert!(removed >= 2, "{removed}");
    let refused = server.gql(Some(ADMIN), PAGE, json!({ "s": at(common::START + 30_000).to_rfc3339() })).await;
    let error = &refused["errors"][0]["extensions"];
    assert_eq!(
        (error["code"].clone(), error["details"]["reason"].clone()),
        (json!("INVALID_INPUT"), json!("cursorBehindRetention")),
        "{refused}"
    );
    assert_eq!(error["details"]["field"], "since");
    assert!(error["details"]["retainedAfter"].is_string(), "{refused}");
    // A moment within a minute of the first event kept may be older than one removed (feed
    // order and stamps may disagree by as long as a transaction stays open): refused too.
    let near = server.gql(Some(ADMIN), PAGE, json!({ "s": at(common::START + 120_000).to_rfc3339() })).await;
    assert_eq!(near["errors"][0]["extensions"]["details"]["reason"], "cursorBehindRetention", "{near}");
    // Ten minutes on, a moment well after the first kept (b) reads what was stamped since.
    server.app.services.clock.advance(600_000);
    let c = server.project("acme", "c").await;
    let later = page_since(&server, at(common::START + 300_000), 1).await;
    assert_eq!(later.0, vec![created(&c)], "b ({b}) was stamped before the moment: {}", later.1);
});

db_test!(a_moment_on_a_feed_retention_emptied_reads_from_now_on, |backend: Backend| async move {
    let (server, _db, _) = setup(backend).await;
    page_since(&server, at(common::START), 3).await;
    let mut removed = 0;
    for _ in 0..200 {
        removed += outbox::remove_before(&server.app.services.db, at(common::START + 3_600_000), 1000).await.unwrap();
        if removed >= 3 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert!(removed >= 3, "{removed}");
    // Nothing kept to compare the moment with, and the feed's head is behind what was removed:
    // the read starts at the horizon, not refused, and shows what comes next.
    let (none, body) = page_since(&server, at(common::START + 7_200_000), 0).await;
    assert!(none.is_empty() && body["errors"].is_null(), "{body}");
    let end = body["data"]["events"]["pageInfo"]["endCursor"].as_str().unwrap().to_owned();
    let c = server.project("acme", "c").await;
    let next = first_after(&server, &end).await;
    assert_eq!(next["node"]["subject"], c.as_str(), "{next}");
});
