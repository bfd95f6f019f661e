//! Idempotency records: the same key with the same input returns the same resource, with other
//! input CONFLICT; concurrent first requests make one resource. Shown through projectCreate,
//! the foundation's call that takes an idempotencyKey, and on the store function itself.
use crate::common;

use std::sync::Arc;

use common::{ADMIN, Backend, TestServer};
use sea_orm::TransactionTrait;
use serde_json::json;
use vps_graph::error::Code;
use vps_graph::store::idempotency::{self, Claim, Key};

const CREATE: &str = "mutation($i: ProjectCreateInput!) { projectCreate(input: $i) { id name description } }";

db_test!(same_key_same_input_returns_the_same_resource, |backend: Backend| async move {
    let server = TestServer::start(backend).await;
    server.tenant("acme").await;
    let input = json!({ "i": { "tenantId": "acme", "name": "web", "idempotencyKey": "web-1" } });
    let first = server.ok(Some(ADMIN), CREATE, input.clone()).await;
    let again = server.ok(Some(ADMIN), CREATE, input).await;
    assert_eq!(first, again);
    // A page shows events up to the cluster's horizon, which another transaction still open on
    // the cluster holds back: a project made after the replay, once seen, says that anything the
    // replay had published is on the page too.
    let marker = json!({ "i": { "tenantId": "acme", "name": "marker", "idempotencyKey": "marker-1" } });
    server.ok(Some(ADMIN), CREATE, marker).await;
    let read = "{ events(tenantId: \"acme\") { edges { node { type data } } } }";
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let events = loop {
        let events = server.ok(Some(ADMIN), read, json!({})).await.to_string();
        if events.contains("marker") || std::time::Instant::now() > deadline {
            break events;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    };
    assert!(events.contains("marker"), "{events}");
    let created = events.matches("project.created").count();
    assert_eq!(created, 2, "the replay published nothing: {events}");
});

db_test!(same_key_other_input_is_conflict, |backend: Backend| async move {
    let server = TestServer::start(backend).await;
    server.tenant("acme").await;
    server.ok(Some(ADMIN), CREATE, json!({ "i": { "tenantId": "acme", "name": "web", "idempotencyKey": "k" } })).await;
    let body = server
        .gql(Some(ADMIN), CREATE, json!({ "i": { "tenantId": "acme", "name": "api", "idempotencyKey": "k" } }))
        .await;
    assert_eq!(body["errors"][0]["extensions"]["code"], "CONFLICT");
    assert_eq!(body["errors"][0]["extensions"]["details"]["reason"], "idempotencyKey");
});

db_test!(fifty_concurrent_requests_with_one_key_make_one_resource, |backend: Backend| async move {
    let server = Arc::new(TestServer::start(backend).await);
    server.tenant("acme").await;
    let input = json!({ "i": { "tenantId": "acme", "name": "web", "idempotencyKey": "race" } });
    let tasks: Vec<_> = (0..50)
        .map(|_| {
            let server = server.clone();
            let input = input.clone();
            tokio::spawn(async move { server.gql(Some(ADMIN), CREATE, input).await })
        })
        .collect();
    let mut ids = std::collections::BTreeSet::new();
    for task in tasks {
        let body = task.await.unwrap();
        assert!(body["errors"].is_null(), "{body}");
        ids.insert(body["data"]["projectCreate"]["id"].as_str().unwrap().to_owned());
    }
    assert_eq!(ids.len(), 1);
    let projects = server.ok(Some(ADMIN), "{ projects(tenantId: \"acme\") { id } }", json!({})).await;
    assert_eq!(projects["projects"].as_array().unwrap().len(), 1);
});

db_test!(claim_is_keyed_by_tenant_operation_and_key, |backend: Backend| async move {
    let server = TestServer::start(backend).await;
    let db = &server.app.services.db;
    let claim = |tenant: &'static str, op: &'static str, hash: &'static str, id: &'static str| async move {
        let txn = db.begin().await.unwrap();
        let result = idempotency::claim(&txn, &Key { tenant_id: tenant, operation: op, key: "k" }, hash, id).await;
        txn.commit().await.unwrap();
        result
    };
    assert_eq!(claim("a", "create", "h1", "r1").await.unwrap(), Claim::New);
    assert_eq!(claim("a", "create", "h1", "r2").await.unwrap(), Claim::Existing("r1".into()));
    assert_eq!(claim("a", "create", "h2", "r3").await.unwrap_err().code, Code::Conflict);
    assert_eq!(claim("b", "create", "h1", "r4").await.unwrap(), Claim::New, "another tenant's key is its own");
    assert_eq!(claim("a", "snapshot", "h1", "r5").await.unwrap(), Claim::New, "another operation's key is its own");
});

db_test!(a_rolled_back_claim_leaves_the_key_free, |backend: Backend| async move {
    let server = TestServer::start(backend).await;
    let db = &server.app.services.db;
    let key = Key { tenant_id: "a", operation: "create", key: "k" };
    let txn = db.begin().await.unwrap();
    assert_eq!(idempotency::claim(&txn, &key, "h1", "r1").await.unwrap(), Claim::New);
    txn.rollback().await.unwrap();
    let txn = db.begin().await.unwrap();
    assert_eq!(idempotency::claim(&txn, &key, "h2", "r2").await.unwrap(), Claim::New);
    txn.commit().await.unwrap();
});
