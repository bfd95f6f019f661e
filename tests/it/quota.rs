//! The quota mechanism the resource services call inside their transaction: one conditional
//! UPDATE plus a ledger row keyed by resource id.
use crate::common;

use std::sync::Arc;

use common::{Backend, TestServer};
use sea_orm::TransactionTrait;
use serde_json::json;
use vps_graph::error::Code;
use vps_graph::store::quota::{self, Holding};

async fn setup(backend: Backend, max: i64) -> (TestServer, String) {
    let server = TestServer::start(backend).await;
    server.tenant("acme").await;
    let pool = server.pool("main").await;
    server.offer(&pool, "acme", json!([{ "resource": "diskGiB", "max": max }])).await;
    (server, pool)
}

fn holding<'a>(pool: &'a str, resource_id: &'a str) -> Holding<'a> {
    Holding { tenant_id: "acme", pool_id: pool, quota: "diskGiB", resource_id }
}

async fn used(server: &TestServer, pool: &str) -> i64 {
    let data = server
        .ok(
            Some(common::ADMIN),
            "query($p: String) { quotas(tenantId: \"acme\", poolId: $p) { used } }",
            json!({ "p": pool }),
        )
        .await;
    data["quotas"][0]["used"].as_i64().unwrap()
}

async fn hold(server: &TestServer, h: &Holding<'_>, amount: i64) -> Result<(), Code> {
    let txn = server.app.services.db.begin().await.unwrap();
    match quota::hold(&txn, h, amount).await {
        Ok(()) => {
            txn.commit().await.unwrap();
            Ok(())
        }
        Err(err) => Err(err.code),
    }
}

db_test!(booking_charges_used_and_a_replay_changes_nothing, |backend: Backend| async move {
    let (server, pool) = setup(backend, 100).await;
    hold(&server, &holding(&pool, "pvol_a"), 40).await.unwrap();
    assert_eq!(used(&server, &pool).await, 40);
    hold(&server, &holding(&pool, "pvol_a"), 40).await.unwrap();
    assert_eq!(used(&server, &pool).await, 40, "a replayed booking books nothing more");
});

db_test!(growing_books_only_the_difference, |backend: Backend| async move {
    let (server, pool) = setup(backend, 100).await;
    hold(&server, &holding(&pool, "pvol_a"), 40).await.unwrap();
    hold(&server, &holding(&pool, "pvol_a"), 70).await.unwrap();
    assert_eq!(used(&server, &pool).await, 70);
    assert_eq!(quota::held(&server.app.services.db, "pvol_a", "diskGiB").await.unwrap(), 70);
});

db_test!(refund_returns_the_amount_once, |backend: Backend| async move {
    let (server, pool) = setup(backend, 100).await;
    hold(&server, &holding(&pool, "pvol_a"), 40).await.unwrap();
    hold(&server, &holding(&pool, "pvol_b"), 10).await.unwrap();
    hold(&server, &holding(&pool, "pvol_a"), 0).await.unwrap();
    hold(&server, &holding(&pool, "pvol_a"), 0).await.unwrap();
    assert_eq!(used(&server, &pool).await, 10, "a replayed refund refunds nothing more");
});

db_test!(booking_past_max_is_quota_exceeded_and_writes_nothing, |backend: Backend| async move {
    let (server, pool) = setup(backend, 100).await;
    hold(&server, &holding(&pool, "pvol_a"), 90).await.unwrap();
    let txn = server.app.services.db.begin().await.unwrap();
    let err = quota::hold(&txn, &holding(&pool, "pvol_b"), 20).await.unwrap_err();
    drop(txn);
    assert_eq!(err.code, Code::QuotaExceeded);
    assert_eq!(err.details["limit"], 100);
    assert_eq!(err.details["used"], 90);
    assert_eq!(err.details["resource"], "diskGiB");
    assert_eq!(used(&server, &pool).await, 90);
    assert_eq!(quota::held(&server.app.services.db, "pvol_b", "diskGiB").await.unwrap(), 0);
});

db_test!(missing_quota_row_is_quota_exceeded, |backend: Backend| async move {
    let (server, pool) = setup(backend, 100).await;
    let no_row = Holding { tenant_id: "acme", pool_id: &pool, quota: "addresses", resource_id: "paddr_a" };
    assert_eq!(hold(&server, &no_row, 1).await, Err(Code::QuotaExceeded), "no row grants nothing (fail closed)");
});

db_test!(concurrent_bookings_never_pass_max, |backend: Backend| async move {
    let (server, pool) = setup(backend, 50).await;
    let server = Arc::new(server);
    let tasks: Vec<_> = (0..200)
        .map(|i| {
            let server = server.clone();
            let pool = pool.clone();
            tokio::spawn(async move {
                let id = format!("pvol_{i}");
                hold(&server, &holding(&pool, &id), 1).await.is_ok()
            })
        })
        .collect();
    let mut booked = 0;
    for task in tasks {
        booked += usize::from(task.await.unwrap());
    }
    assert_eq!(booked, 50);
    assert_eq!(used(&server, &pool).await, 50);
});

db_test!(concurrent_replays_of_one_booking_charge_once, |backend: Backend| async move {
    let (server, pool) = setup(backend, 100).await;
    let server = Arc::new(server);
    let tasks: Vec<_> = (0..20)
        .map(|_| {
            let server = server.clone();
            let pool = pool.clone();
            tokio::spawn(async move { hold(&server, &holding(&pool, "pvol_same"), 30).await })
        })
        .collect();
    for task in tasks {
        task.await.unwrap().unwrap();
    }
    assert_eq!(used(&server, &pool).await, 30);
});

db_test!(refund_goes_through_after_max_was_lowered_below_used, |backend: Backend| async move {
    let (server, pool) = setup(backend, 10).await;
    hold(&server, &holding(&pool, "pvol_a"), 5).await.unwrap();
    hold(&server, &holding(&pool, "pvol_b"), 5).await.unwrap();
    let set = "mutation($i: QuotaSetInput!) { quotaSet(input: $i) { max used } }";
    let input = json!({ "i": { "tenantId": "acme", "poolId": pool, "resource": "diskGiB", "max": 2 } });
    assert_eq!(server.ok(Some(common::ADMIN), set, input).await["quotaSet"], json!({ "max": 2, "used": 10 }));
    assert_eq!(hold(&server, &holding(&pool, "pvol_c"), 1).await, Err(Code::QuotaExceeded), "no growth over max");
    hold(&server, &holding(&pool, "pvol_a"), 0).await.unwrap();
    assert_eq!(used(&server, &pool).await, 5);
});

db_test!(a_holding_stays_on_the_quota_it_was_booked_on, |backend: Backend| async move {
    let (server, pool) = setup(backend, 10).await;
    let other = server.pool("other").await;
    server.offer(&other, "acme", json!([{ "resource": "diskGiB", "max": 10 }])).await;
    hold(&server, &holding(&pool, "pvol_a"), 5).await.unwrap();
    assert_eq!(
        hold(&server, &holding(&other, "pvol_a"), 0).await,
        Err(Code::Internal),
        "refunding another pool's quota is refused"
    );
    assert_eq!(used(&server, &pool).await, 5);
});
