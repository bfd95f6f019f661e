//! Event retention (`--event-retention`, `vps.event-retention`): events older than the retention
//! are removed oldest first, in feed order; a cursor from before what was removed is a coded
//! error naming the cursor to read on from, never a silent gap, on a page and on a subscription.
use crate::common;

use std::time::Duration;

use chrono::Utc;
use common::{ADMIN, Backend, TestServer};
use serde_json::{Value, json};
use vps_graph::reconcile::events;
use vps_graph::store::outbox;

const PAGE: &str = "query($t: String!, $a: String) { events(tenantId: $t, after: $a, first: 1000) { edges { cursor node { type subject } } pageInfo { endCursor } } }";

/// The subjects of the tenant's `project.created` events after `after`, and the raw answer.
async fn projects_after(server: &TestServer, after: Option<&str>) -> (Vec<String>, Value) {
    let body = server.gql(Some(ADMIN), PAGE, json!({ "t": "acme", "a": after })).await;
    let subjects = body["data"]["events"]["edges"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|e| e["node"]["type"] == "project.created")
        .map(|e| e["node"]["subject"].as_str().unwrap().to_owned())
        .collect();
    (subjects, body)
}

/// The page from the start once it shows `n` projects: PostgreSQL shows a commit once no older
/// transaction of the cluster runs, so look a while.
async fn until_seen(server: &TestServer, n: usize) -> (Vec<String>, Value) {
    for _ in 0..200 {
        let seen = projects_after(server, None).await;
        if seen.0.len() >= n {
            return seen;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    projects_after(server, None).await
}

/// Removes what is older than `cutoff`, looking again while PostgreSQL still holds the rows
/// behind its horizon (another session's transaction can, for a moment); how many it removed.
async fn remove_before(server: &TestServer, cutoff: chrono::DateTime<Utc>, at_least: u64) -> u64 {
    let mut removed = 0;
    for _ in 0..200 {
        removed += outbox::remove_before(&server.app.services.db, cutoff, 1000).await.unwrap();
        if removed >= at_least {
            return removed;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("only {removed} of {at_least} events were removed");
}

db_test!(a_cursor_behind_the_retained_feed_is_refused_with_where_to_read_on, |backend: Backend| async move {
    let server = TestServer::start(backend).await;
    server.tenant("acme").await;
    let old: Vec<String> = [server.project("acme", "a").await, server.project("acme", "b").await].into();
    let (seen, body) = until_seen(&server, 2).await;
    assert_eq!(seen, old, "{body}");
    let first_cursor = body["data"]["events"]["edges"][0]["cursor"].as_str().unwrap().to_owned();
    tokio::time::sleep(Duration::from_millis(20)).await;
    let cutoff = Utc::now();
    tokio::time::sleep(Duration::from_millis(20)).await;
    let new: Vec<String> = [server.project("acme", "c").await, server.project("acme", "d").await].into();
    // The tenant's creation and its two projects at least.
    assert!(remove_before(&server, cutoff, 3).await >= 3);
    assert_eq!(until_seen(&server, 2).await.0, new, "a page from the start starts at what is kept");

    let (_, refused) = projects_after(&server, Some(&first_cursor)).await;
    let error = &refused["errors"][0]["extensions"];
    assert_eq!(error["code"], "INVALID_INPUT", "{refused}");
    assert_eq!(error["details"]["reason"], "cursorBehindRetention", "{refused}");
    assert_eq!(error["details"]["field"], "after");
    let retained_after = error["details"]["retainedAfter"].as_str().expect("where to read on").to_owned();
    assert_eq!(projects_after(&server, Some(&retained_after)).await.0, new, "everything kept, once");

    // A subscription resuming from before the horizon is refused the same way.
    let mut ws = server.ws(json!({ "Authorization": format!("Bearer {ADMIN}") })).await;
    assert_eq!(ws.next(Duration::from_secs(10)).await.unwrap()["type"], "connection_ack");
    let subscription = "subscription($a: String) { events(tenantId: \"acme\", after: $a) { subject } }";
    ws.subscribe("r", subscription, json!({ "a": first_cursor })).await;
    let answer = ws.next(Duration::from_secs(10)).await.expect("an answer");
    let errors = if answer["type"] == "error" { &answer["payload"] } else { &answer["payload"]["errors"] };
    assert_eq!(errors[0]["extensions"]["details"]["reason"], "cursorBehindRetention", "{answer}");
});

db_test!(the_horizon_never_moves_back, |backend: Backend| async move {
    use sea_orm::ConnectionTrait;
    let server = TestServer::start(backend).await;
    server.tenant("acme").await;
    tokio::time::sleep(Duration::from_millis(20)).await;
    remove_before(&server, Utc::now(), 1).await;
    let db = &server.app.services.db;
    assert!(outbox::horizon(db).await.unwrap() > outbox::Position::default());
    // A pass that overlapped this one and got further moved the horizon ahead already.
    let ahead = outbox::Position { txid: i64::MAX / 2, id: i64::MAX / 2 };
    db.execute_unprepared(&format!(
        "UPDATE meta SET value = '{:020}:{:020}' WHERE key = 'feed_horizon'",
        ahead.txid, ahead.id
    ))
    .await
    .unwrap();
    server.project("acme", "a").await;
    tokio::time::sleep(Duration::from_millis(20)).await;
    remove_before(&server, Utc::now(), 1).await;
    assert_eq!(outbox::horizon(db).await.unwrap(), ahead, "a later pass that removed less does not move it back");
});

db_test!(the_retention_pass_removes_what_is_older_than_the_retention, |backend: Backend| async move {
    let db = common::TestDb::new(backend).await;
    let mut config = common::config(&db.url);
    config.clock = vps_graph::clock::Clock::manual(common::START);
    config.limits.event_retention = Duration::from_secs(1);
    let clock = config.clock.clone();
    let server = TestServer::with_config(config).await;
    common::idle(&server, &clock, events::ITEM).await;
    server.tenant("acme").await;
    server.project("acme", "a").await;
    assert_eq!(until_seen(&server, 1).await.0.len(), 1, "made after the pass at start: kept");
    // Events are stamped with the app's clock: an hour on, at the next pass, they are older
    // than the retention.
    for _ in 0..200 {
        clock.advance(3_600_000);
        common::idle(&server, &clock, events::ITEM).await;
        if projects_after(&server, None).await.0.is_empty() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the pass never removed the old events: {}", projects_after(&server, None).await.1);
});
