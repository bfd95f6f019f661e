//! Operators read each provider account's request budget: the provider's limit and what is left
//! (from DigitalOcean's `ratelimit-*` headers), and the calls sent in the last hour by purpose: a
//! volume created is `asked`, its action looked at again is `following`, its hourly drift read is
//! `drift`. The same figures are Prometheus gauges.
use crate::common;

use common::{ADMIN, Backend, TestApp, quick_sim};
use serde_json::{Value, json};
use vps_graph::sim::SimConfig;

const BUDGET: &str =
    "{ providerAccounts { id budget { limit remaining resetAt callsLastHour { asked following drift } } } }";

async fn budget(s: &TestApp) -> Value {
    let accounts = s.server.ok(Some(ADMIN), BUDGET, json!({})).await;
    let account = accounts["providerAccounts"].as_array().unwrap().iter().find(|a| a["id"] == s.account.as_str());
    account.expect("the pool's account is listed")["budget"].clone()
}

db_test!(an_accounts_budget_shows_its_limit_and_its_calls_by_purpose, |backend: Backend| async move {
    let sim = SimConfig { per_hour: 4000, ..quick_sim() };
    let s = TestApp::driven(backend).sim(sim).build().await;
    let before = budget(&s).await;
    assert_eq!(before["limit"], Value::Null, "nothing sent yet, nothing learnt: {before}");
    assert_eq!(before["callsLastHour"], json!({ "asked": 0, "following": 0, "drift": 0 }));

    let input = json!({ "i": { "tenantId": "acme", "poolId": s.pool, "name": "data", "region": "nyc3",
        "sizeGiB": 10, "idempotencyKey": "data" } });
    let created = s
        .server
        .ok(
            Some(&s.token),
            "mutation($i: ProviderVolumeCreateInput!) { providerVolumeCreate(input: $i) { id } }",
            input,
        )
        .await;
    let id = created["providerVolumeCreate"]["id"].as_str().unwrap().to_owned();
    let read = || {
        let s = &s;
        let id = id.clone();
        async move {
            s.server
                .ok(
                    Some(&s.token),
                    "query($v: String!) { providerVolume(tenantId: \"acme\", volumeId: $v) { state } }",
                    json!({ "v": id }),
                )
                .await
        }
    };
    common::until(&s, "READY", read, |v| v["providerVolume"]["state"] == "READY").await;
    let made = budget(&s).await;
    assert_eq!(made["limit"], 4000, "learnt from the answers: {made}");
    assert!(made["remaining"].as_i64().unwrap() < 4000, "{made}");
    assert!(made["resetAt"].is_string(), "{made}");
    assert!(made["callsLastHour"]["asked"].as_i64().unwrap() >= 1, "the create was asked: {made}");
    assert_eq!(made["callsLastHour"]["drift"], 0, "no drift read yet: {made}");

    // An hour on, the settled volume is read for drift.
    s.clock.advance(vps_graph::reconcile::DRIFT_MS + 1_000);
    common::idle(&s.server, &s.clock, &id).await;
    let drifted = budget(&s).await;
    assert!(drifted["callsLastHour"]["drift"].as_i64().unwrap() >= 1, "the drift read is counted as drift: {drifted}");
    assert!(
        drifted["callsLastHour"]["asked"].as_i64().unwrap() >= made["callsLastHour"]["asked"].as_i64().unwrap(),
        "{drifted}"
    );

    let metrics = reqwest::get(s.server.url("/metrics")).await.unwrap().text().await.unwrap();
    let gauge = format!("vps_graph_provider_calls_last_hour{{account=\"{}\",purpose=\"drift\"}}", s.account);
    assert!(metrics.contains(&gauge), "no drift gauge for the account in /metrics");
    assert!(metrics.contains(&format!("vps_graph_provider_budget_limit{{account=\"{}\"}} 4000", s.account)));
});
