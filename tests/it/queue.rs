//! The work queue's rules on both backends: earliest due time wins, a wake during a run makes it
//! run again right after, leases are measured on the database's clock and renewed while held, a
//! run whose lease was taken over changes nothing (the fence), and a stopping worker gives its
//! leases back.
use crate::common;

use common::{Backend, TestDb};
use sea_orm::TransactionTrait;
use vps_graph::store::queue::{self, Purpose};

const KIND: &str = "test.kind";

db_test!(earliest_wake_wins_and_only_due_items_are_claimed, |backend: Backend| async move {
    let db = TestDb::new(backend).await;
    let conn = vps_graph::store::connect(&db.url, 4).await.unwrap();
    queue::wake(&conn, KIND, "r1", 500).await.unwrap();
    queue::wake(&conn, KIND, "r1", 900).await.unwrap();
    assert_eq!(queue::item(&conn, KIND, "r1").await.unwrap().unwrap().0, 500);
    queue::wake(&conn, KIND, "r1", 100).await.unwrap();
    assert_eq!(queue::item(&conn, KIND, "r1").await.unwrap().unwrap().0, 100);
    assert!(queue::claim(&conn, "w", &[KIND], 99, 60_000, 10).await.unwrap().is_empty(), "not due yet");
    let claimed = queue::claim(&conn, "w", &[KIND], 100, 60_000, 10).await.unwrap();
    assert_eq!(claimed.len(), 1);
    assert!(queue::claim(&conn, "w2", &[KIND], 100, 60_000, 10).await.unwrap().is_empty(), "leased");
    // However far the replica's clock runs ahead, the lease is measured on the database's.
    assert!(queue::claim(&conn, "w2", &[KIND], i64::MAX / 2, 60_000, 10).await.unwrap().is_empty(), "leased still");
});

db_test!(a_lease_that_ran_out_on_the_databases_clock_is_claimable, |backend: Backend| async move {
    let db = TestDb::new(backend).await;
    let conn = vps_graph::store::connect(&db.url, 4).await.unwrap();
    queue::wake(&conn, KIND, "r1", 0).await.unwrap();
    // A lease of no time has run out as soon as it is taken.
    let first = queue::claim(&conn, "w", &[KIND], 0, 0, 10).await.unwrap().remove(0);
    let second = queue::claim(&conn, "w2", &[KIND], 0, 0, 10).await.unwrap().remove(0);
    assert_eq!(second.epoch, first.epoch + 1, "an expired lease is claimable");
});

db_test!(a_run_renews_its_lease_until_it_has_changed_hands, |backend: Backend| async move {
    let db = TestDb::new(backend).await;
    let conn = vps_graph::store::connect(&db.url, 4).await.unwrap();
    queue::wake(&conn, KIND, "r1", 0).await.unwrap();
    let run = queue::claim(&conn, "w", &[KIND], 0, 0, 1).await.unwrap().remove(0);
    assert!(queue::renew(&conn, &run, 60_000).await.unwrap(), "renewed while held");
    assert!(queue::claim(&conn, "w2", &[KIND], 0, 60_000, 1).await.unwrap().is_empty(), "the renewed lease holds");
    // Let it run out; another worker takes it; the first can no longer renew.
    assert!(queue::renew(&conn, &run, 0).await.unwrap());
    let other = queue::claim(&conn, "w2", &[KIND], 0, 60_000, 1).await.unwrap().remove(0);
    assert!(!queue::renew(&conn, &run, 60_000).await.unwrap(), "a lease that changed hands is not renewed");
    assert!(queue::renew(&conn, &other, 60_000).await.unwrap());
});

db_test!(a_wake_during_a_run_makes_it_run_again_right_after, |backend: Backend| async move {
    let db = TestDb::new(backend).await;
    let conn = vps_graph::store::connect(&db.url, 4).await.unwrap();
    queue::wake(&conn, KIND, "r1", 0).await.unwrap();
    let run = queue::claim(&conn, "w", &[KIND], 0, 1000, 1).await.unwrap().remove(0);
    // Woken while running, even past its lease's expiry.
    queue::wake(&conn, KIND, "r1", 5000).await.unwrap();
    queue::finish(&conn, &run, 2000, Some(3_600_000), Purpose::Following, None).await.unwrap();
    assert_eq!(queue::item(&conn, KIND, "r1").await.unwrap().unwrap().0, 2000, "runs again at once, not in an hour");
    let run = queue::claim(&conn, "w", &[KIND], 2000, 1000, 1).await.unwrap().remove(0);
    queue::wake(&conn, KIND, "r1", 2500).await.unwrap();
    queue::finish(&conn, &run, 2600, None, Purpose::Following, None).await.unwrap();
    assert!(queue::item(&conn, KIND, "r1").await.unwrap().is_some(), "not dropped while a wake is pending");
    let run = queue::claim(&conn, "w", &[KIND], 2600, 1000, 1).await.unwrap().remove(0);
    queue::finish(&conn, &run, 2700, None, Purpose::Following, None).await.unwrap();
    assert!(queue::item(&conn, KIND, "r1").await.unwrap().is_none(), "done");
});

db_test!(a_run_whose_lease_was_taken_over_changes_nothing, |backend: Backend| async move {
    let db = TestDb::new(backend).await;
    let conn = vps_graph::store::connect(&db.url, 4).await.unwrap();
    queue::wake(&conn, KIND, "r1", 0).await.unwrap();
    // The slow worker's lease (of no time) runs out at once.
    let stale = queue::claim(&conn, "slow", &[KIND], 0, 0, 1).await.unwrap().remove(0);
    let fresh = queue::claim(&conn, "other", &[KIND], 1500, 1000, 1).await.unwrap().remove(0);
    assert_eq!(fresh.epoch, stale.epoch + 1);
    let txn = conn.begin().await.unwrap();
    assert!(!queue::fence(&txn, &stale).await.unwrap(), "the fence stops the slow worker");
    assert!(queue::fence(&txn, &fresh).await.unwrap());
    txn.commit().await.unwrap();
    queue::finish(&conn, &stale, 1600, None, Purpose::Following, None).await.unwrap();
    assert!(queue::item(&conn, KIND, "r1").await.unwrap().is_some(), "the stale finish dropped nothing");
    queue::finish(&conn, &fresh, 1700, Some(9000), Purpose::Following, None).await.unwrap();
    assert_eq!(queue::item(&conn, KIND, "r1").await.unwrap().unwrap().0, 9000);
});

db_test!(a_stopping_worker_gives_its_leases_back, |backend: Backend| async move {
    let db = TestDb::new(backend).await;
    let conn = vps_graph::store::connect(&db.url, 4).await.unwrap();
    for r in ["a", "b"] {
        queue::wake(&conn, KIND, r, 0).await.unwrap();
    }
    assert_eq!(queue::claim(&conn, "leaving", &[KIND], 0, 60_000, 10).await.unwrap().len(), 2);
    queue::release(&conn, "leaving", 10).await.unwrap();
    assert_eq!(queue::claim(&conn, "next", &[KIND], 10, 60_000, 10).await.unwrap().len(), 2, "claimable at once");
});

db_test!(an_item_says_what_it_is_due_for, |backend: Backend| async move {
    let db = TestDb::new(backend).await;
    let conn = vps_graph::store::connect(&db.url, 4).await.unwrap();
    let claim = |now: i64| {
        let conn = conn.clone();
        async move { queue::claim(&conn, "w", &[KIND], now, 60_000, 1).await.unwrap().remove(0) }
    };
    queue::wake(&conn, KIND, "r1", 0).await.unwrap();
    let run = claim(0).await;
    assert_eq!(run.purpose, Purpose::Asked, "a change someone made");
    queue::finish(&conn, &run, 10, Some(1000), Purpose::Drift, None).await.unwrap();
    let run = claim(1000).await;
    assert_eq!(run.purpose, Purpose::Drift);
    // A wake later than the drift read changes nothing of it; an earlier one is a change asked.
    queue::finish(&conn, &run, 1000, Some(5000), Purpose::Drift, None).await.unwrap();
    queue::wake(&conn, KIND, "r1", 9000).await.unwrap();
    let run = claim(5000).await;
    assert_eq!(run.purpose, Purpose::Drift);
    queue::finish(&conn, &run, 5000, Some(9000), Purpose::Drift, None).await.unwrap();
    queue::wake(&conn, KIND, "r1", 2000).await.unwrap();
    let run = claim(2000).await;
    assert_eq!(run.purpose, Purpose::Asked);
    // Woken while it runs: it runs again at once, as asked, whatever the run said.
    queue::wake(&conn, KIND, "r1", 2100).await.unwrap();
    queue::finish(&conn, &run, 2200, Some(3_600_000), Purpose::Drift, None).await.unwrap();
    assert_eq!(claim(2200).await.purpose, Purpose::Asked);
});
