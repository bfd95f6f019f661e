//! `/metrics` as a Prometheus user reads it: latency histograms for HTTP requests (by GraphQL
//! operation type), reconcile runs and provider calls; gauges for the queue, subscribers and the
//! feed's lag; and a bearer token when one is set.
use crate::common;

use std::time::Duration;

use common::{ADMIN, Backend, TestDb, TestServer};
use serde_json::json;

async fn scrape(server: &TestServer) -> String {
    server.http.get(server.url("/metrics")).send().await.unwrap().text().await.unwrap()
}

db_test!(metrics_have_latency_histograms_and_the_queue_and_feed_gauges, |backend: Backend| async move {
    let server = TestServer::start(backend).await;
    let pool = server.sim_pool("metered", &["nyc3"], None).await;
    server.tenant("acme").await;
    server.offer(&pool, "acme", json!([])).await;
    let input = json!({ "i": { "tenantId": "acme", "poolId": pool, "name": "lan", "idempotencyKey": "lan",
        "subnets": [{ "region": "nyc3", "ipRange": "10.40.0.0/24" }] } });
    let made =
        server.ok(Some(ADMIN), "mutation($i: NetworkCreateInput!) { networkCreate(input: $i) { id } }", input).await;
    let id = made["networkCreate"]["id"].as_str().unwrap().to_owned();
    let read = "query($n: String!) { network(tenantId: \"acme\", networkId: $n) { state } }";
    // A run's latency is observed after its write-back commits, so READY alone can be read a moment
    // before the run's series exists: wait for both (bounded, for a loaded machine).
    let run_series = "vps_graph_reconcile_run_seconds_count{kind=\"vps.networks\",resource=\"network\",outcome=";
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    let metrics = loop {
        let ready = server.ok(Some(ADMIN), read, json!({ "n": id })).await["network"]["state"] == "READY";
        let metrics = scrape(&server).await;
        if (ready && metrics.contains(run_series)) || std::time::Instant::now() > deadline {
            break metrics;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    for series in [
        "vps_graph_http_request_seconds_bucket{le=\"0.001\",operation=\"query\"}",
        "vps_graph_http_request_seconds_count{operation=\"mutation\"}",
        "vps_graph_reconcile_run_seconds_count{kind=\"vps.networks\",resource=\"network\",outcome=",
        "vps_graph_provider_call_seconds_count{provider=\"digitalocean\",endpoint=\"vpcs.create\",status=\"201\"}",
        "vps_graph_provider_calls_total{provider=\"digitalocean\",endpoint=\"vpcs.create\",status=\"201\"} 1",
        "# TYPE vps_graph_queue_failing gauge",
        "# TYPE vps_graph_queue_due gauge",
        "# TYPE vps_graph_feed_lag_seconds gauge",
        "vps_graph_events_tailed_total ",
        "vps_graph_subscribers 0",
    ] {
        assert!(metrics.contains(series), "{series} is missing from:\n{metrics}");
    }
    // A mutation's latency is counted once, under its operation type.
    let count = metrics
        .lines()
        .find(|l| l.starts_with("vps_graph_http_request_seconds_count{operation=\"mutation\"}"))
        .and_then(|l| l.rsplit(' ').next())
        .unwrap();
    assert!(count.parse::<f64>().unwrap() >= 5.0, "{count}");
});

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_metrics_token_guards_metrics() {
    let db = TestDb::new(Backend::Sqlite).await;
    let mut config = common::config(&db.url);
    config.metrics_token = Some("metrics-scraper-token".into());
    let server = TestServer::with_config(config).await;
    let refused = server.http.get(server.url("/metrics")).send().await.unwrap();
    assert_eq!(refused.status().as_u16(), 401);
    let wrong = server.http.get(server.url("/metrics")).bearer_auth(ADMIN).send().await.unwrap();
    assert_eq!(wrong.status().as_u16(), 401);
    let scraped = server.http.get(server.url("/metrics")).bearer_auth("metrics-scraper-token").send().await.unwrap();
    assert_eq!(scraped.status().as_u16(), 200);
    assert!(scraped.text().await.unwrap().contains("vps_graph_http_requests_total"));
}
