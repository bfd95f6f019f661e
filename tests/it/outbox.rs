//! The outbox cursor: with concurrent writers whose transactions interleave and commit out of
//! order, a reader paging by cursor never receives an event behind a cursor it was given, and
//! misses none.
use crate::common;

use std::collections::BTreeSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use common::{Backend, TestDb};
use sea_orm::TransactionTrait;
use serde_json::json;
use vps_graph::store::outbox::{self, NewEvent, Position};

const WRITERS: usize = 8;
const EVENTS_PER_WRITER: usize = 2_560;

fn event(writer: usize, n: usize) -> NewEvent {
    NewEvent {
        event_type: "test.written".into(),
        subject_kind: "test",
        subject: format!("w{writer}-{n}"),
        tenant_id: Some(format!("t{}", writer % 2)),
        project_id: None,
        version: n as i64,
        data: json!({ "writer": writer, "n": n }).into(),
    }
}

db_test!(reader_never_receives_an_event_behind_its_cursor, |backend: Backend| async move {
    let db = TestDb::new(backend).await;
    let conn = vps_graph::store::connect(&db.url, 32).await.unwrap();
    let done = Arc::new(AtomicBool::new(false));
    let writers: Vec<_> = (0..WRITERS)
        .map(|w| {
            let conn = conn.clone();
            tokio::spawn(async move {
                let mut n = 0;
                let mut batch = 0;
                while n < EVENTS_PER_WRITER {
                    // Transactions of 1 to 8 events, some held open across a pause so that
                    // later transactions commit first.
                    let size = 1 + (batch * 7 + w) % 8;
                    let txn = conn.begin().await.unwrap();
                    for _ in 0..size.min(EVENTS_PER_WRITER - n) {
                        outbox::append(&txn, event(w, n), chrono::Utc::now()).await.unwrap();
                        n += 1;
                    }
                    if batch % 5 == w % 5 {
                        tokio::time::sleep(Duration::from_millis(3)).await;
                    }
                    txn.commit().await.unwrap();
                    batch += 1;
                }
            })
        })
        .collect();

    let reader = {
        let conn = conn.clone();
        let done = done.clone();
        tokio::spawn(async move {
            let mut cursor = Position::default();
            let mut seen = Vec::new();
            let mut waited = Duration::ZERO;
            loop {
                let finished = done.load(Ordering::SeqCst);
                let page = outbox::read_after(&conn, cursor, None, 97).await.unwrap();
                for e in &page {
                    assert!(e.position > cursor, "event {:?} arrived behind cursor {:?}", e.position, cursor);
                    cursor = e.position;
                    seen.push(e.subject.clone());
                }
                if page.is_empty() {
                    // Once every writer is done, read until all arrived: a transaction elsewhere
                    // on the cluster may hold the horizon back for a moment.
                    if finished && (seen.len() == WRITERS * EVENTS_PER_WRITER || waited > Duration::from_secs(20)) {
                        return seen;
                    }
                    if finished {
                        waited += Duration::from_millis(5);
                    }
                    tokio::time::sleep(Duration::from_millis(if finished { 5 } else { 1 })).await;
                }
            }
        })
    };

    for writer in writers {
        writer.await.unwrap();
    }
    done.store(true, Ordering::SeqCst);
    let seen = reader.await.unwrap();
    let total = WRITERS * EVENTS_PER_WRITER;
    assert!(total >= 20_000);
    assert_eq!(seen.len(), total, "every event read exactly once");
    let unique: BTreeSet<&String> = seen.iter().collect();
    assert_eq!(unique.len(), total, "no event read twice");
    // Each writer's events arrive in the order it wrote them.
    for w in 0..WRITERS {
        let mine: Vec<usize> =
            seen.iter().filter_map(|s| s.strip_prefix(&format!("w{w}-")).map(|n| n.parse().unwrap())).collect();
        assert!(mine.windows(2).all(|p| p[0] < p[1]), "writer {w}'s events out of order");
    }
});

db_test!(tenant_pages_follow_the_same_order, |backend: Backend| async move {
    let db = TestDb::new(backend).await;
    let conn = vps_graph::store::connect(&db.url, 4).await.unwrap();
    for n in 0..30 {
        outbox::append(&conn, event(n % 2, n), chrono::Utc::now()).await.unwrap();
    }
    let mut cursor = Position::default();
    let mut subjects = Vec::new();
    loop {
        let page = outbox::read_after(&conn, cursor, Some("t1"), 4).await.unwrap();
        let Some(last) = page.last() else { break };
        cursor = last.position;
        subjects.extend(page.iter().map(|e| e.subject.clone()));
    }
    let expected: Vec<String> = (0..30).filter(|n| n % 2 == 1).map(|n| format!("w1-{n}")).collect();
    assert_eq!(subjects, expected);
});

db_test!(cursor_of_another_feed_is_refused, |backend: Backend| async move {
    let db = TestDb::new(backend).await;
    let conn = vps_graph::store::connect(&db.url, 4).await.unwrap();
    let epoch = outbox::feed_epoch(&conn).await.unwrap();
    let cursor = outbox::Cursor { epoch: epoch.clone(), position: Position { txid: 7, id: 9 } }.to_string();
    assert_eq!(outbox::Cursor::parse(&cursor, &epoch).unwrap(), Position { txid: 7, id: 9 });
    let foreign = outbox::Cursor::parse(&cursor.replacen(&epoch, "zzzzzzzzzz", 1), &epoch).unwrap_err();
    assert_eq!(foreign.details["reason"], "cursorExpired");
    assert!(outbox::Cursor::parse("garbage", &epoch).is_err());
    assert!(outbox::Cursor::parse(&format!("{epoch}:-1:3"), &epoch).is_err());
});

db_test!(
    an_event_whose_data_could_not_be_written_fails_its_transaction_and_writes_nothing,
    |backend: Backend| async move {
        let db = TestDb::new(backend).await;
        let conn = vps_graph::store::connect(&db.url, 4).await.unwrap();
        outbox::append(&conn, event(0, 0), chrono::Utc::now()).await.unwrap();
        let txn = conn.begin().await.unwrap();
        outbox::append(&txn, event(0, 1), chrono::Utc::now()).await.unwrap();
        let unwritable =
            NewEvent { data: outbox::Payload::Unwritable("a key that is not a string".into()), ..event(0, 2) };
        let err = outbox::append(&txn, unwritable, chrono::Utc::now()).await.unwrap_err();
        assert!(err.internal.as_deref().is_some_and(|why| why.contains("test.written event")), "{err:?}");
        // What a failed commit does: the transaction is rolled back (dropping it would roll back
        // later, and PostgreSQL's feed would hold every newer event back until then).
        txn.rollback().await.unwrap();
        // PostgreSQL shows a commit once no older transaction of the cluster runs: look a while.
        let mut written = Vec::new();
        for _ in 0..200 {
            written = outbox::read_after(&conn, Position::default(), None, 10).await.unwrap();
            if !written.is_empty() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
        let subjects: Vec<&str> = written.iter().map(|e| e.subject.as_str()).collect();
        assert_eq!(subjects, ["w0-0"], "the transaction's other event went with it; none has null data");
        // A part added to a view that is not an object is refused the same way, not written as null.
        let not_an_object = outbox::Payload::of(&7).with("filesystemId", json!("fs_1"));
        assert!(matches!(not_an_object, outbox::Payload::Unwritable(_)));
    }
);
