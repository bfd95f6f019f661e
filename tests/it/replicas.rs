//! Real server processes (this crate's binary) against one database and one simulated cloud:
//! replicas split the work without making anything twice, and a process killed with SIGKILL
//! mid-convergence leaves nothing duplicated once a new one takes over its expired leases.
use crate::common;

use std::process::Stdio;
use std::time::{Duration, Instant};

use common::{ADMIN, Backend, TestDb};
use serde_json::{Value, json};
use tokio::process::{Child, Command};
use vps_graph::sim::{Sim, SimConfig};

struct Process {
    child: Child,
    addr: String,
    http: reqwest::Client,
}

impl Process {
    /// Its `vps_graph_feed_registered`: subscribers that see every event from now on.
    async fn feed_registered(&self) -> u64 {
        let url = format!("http://{}/metrics", self.addr);
        let text = self.http.get(url).send().await.unwrap().text().await.unwrap();
        let line = text.lines().find(|l| l.starts_with("vps_graph_feed_registered ")).expect("the gauge");
        line.rsplit(' ').next().unwrap().parse().unwrap()
    }
}

impl Process {
    async fn start(database_url: &str) -> Process {
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let addr = format!("127.0.0.1:{port}");
        let child = Command::new(env!("CARGO_BIN_EXE_vps-graph"))
            .args(["serve", "--listen", &addr, "--database-url", database_url, "--admin-token", ADMIN])
            .args([
                "--demo",
                "off",
                "--no-sim",
                "--lease-ms",
                "2000",
                "--feed-poll-ms",
                "200",
                "--provider-timeout-ms",
                "5000",
            ])
            .env("VPSG_TEST_SIM_TOKEN", "replica-test")
            .env("RUST_LOG", "warn")
            .stdout(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .expect("the server starts");
        let process = Process { child, addr, http: reqwest::Client::new() };
        for _ in 0..400 {
            if let Ok(r) = process.http.get(format!("http://{}/readyz", process.addr)).send().await
                && r.status().is_success()
            {
                return process;
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
        panic!("the server did not become ready");
    }

    async fn ok(&self, token: &str, query: &str, variables: Value) -> Value {
        let body: Value = self
            .http
            .post(format!("http://{}/graphql", self.addr))
            .bearer_auth(token)
            .json(&json!({ "query": query, "variables": variables }))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        assert!(body["errors"].is_null(), "{body}");
        body["data"].clone()
    }

    async fn kill(mut self) {
        self.child.start_kill().unwrap(); // SIGKILL
        self.child.wait().await.unwrap();
    }
}

/// A tenant, a pool on an account at `sim_url` (its credential from an environment variable),
/// and a tenant token; returns (pool id, token).
async fn setup(p: &Process, sim_url: &str) -> (String, String) {
    p.ok(ADMIN, "mutation { tenantCreate(input: { id: \"acme\", name: \"Acme\" }) { id } }", json!({})).await;
    let account = p
        .ok(
            ADMIN,
            "mutation($u: String!) { providerAccountCreate(input: { name: \"do\", kind: DIGITALOCEAN, apiUrl: $u, credentialRef: \"env:VPSG_TEST_SIM_TOKEN\", regions: [\"nyc3\"] }) { id } }",
            json!({ "u": sim_url }),
        )
        .await;
    let pool = p
        .ok(ADMIN, "mutation($a: String!) { poolCreate(input: { name: \"do\", providerAccountId: $a, billing: METERED }) { id } }", json!({ "a": account["providerAccountCreate"]["id"] }))
        .await["poolCreate"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    p.ok(
        ADMIN,
        "mutation($p: String!) { poolOffer(input: { poolId: $p, tenantId: \"acme\", quotas: [{ resource: \"networks\", max: 1000 }] }) { tenantId } }",
        json!({ "p": pool }),
    )
    .await;
    let token = p
        .ok(ADMIN, "mutation { tokenIssue(input: { tenantId: \"acme\", grants: [{ permission: \"compute:*\", scope: \"tenant/acme\" }] }) { secret } }", json!({}))
        .await["tokenIssue"]["secret"]
        .as_str()
        .unwrap()
        .to_owned();
    (pool, token)
}

async fn create_networks(p: &Process, token: &str, pool: &str, count: usize) -> Vec<String> {
    let mut ids = Vec::new();
    for i in 0..count {
        let input = json!({ "i": { "tenantId": "acme", "poolId": pool, "name": format!("n{i}"), "idempotencyKey": format!("k{i}"),
            "subnets": [{ "region": "nyc3", "ipRange": format!("10.{}.{}.0/24", 100 + i / 256, i % 256) }] } });
        let created = p.ok(token, "mutation($i: NetworkCreateInput!) { networkCreate(input: $i) { id } }", input).await;
        ids.push(created["networkCreate"]["id"].as_str().unwrap().to_owned());
    }
    ids
}

/// Waits until every network of the tenant is READY; returns their subnets' provider names.
async fn until_all_ready(p: &Process, token: &str, count: usize, within: Duration) -> Vec<String> {
    let started = Instant::now();
    loop {
        let page = p
            .ok(
                token,
                "{ networks(tenantId: \"acme\", first: 1000) { edges { node { state subnets { id } } } } }",
                json!({}),
            )
            .await;
        let edges = page["networks"]["edges"].as_array().unwrap().clone();
        let ready = edges.iter().filter(|e| e["node"]["state"] == "READY").count();
        if ready == count {
            return edges
                .iter()
                .map(|e| vps_graph::service::networks::provider_name(e["node"]["subnets"][0]["id"].as_str().unwrap()))
                .collect();
        }
        assert!(started.elapsed() < within, "only {ready} of {count} networks became READY");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

fn quiet_sim(latency: Duration) -> SimConfig {
    SimConfig { latency, per_hour: 1_000_000, per_minute: 1_000_000, ..SimConfig::default() }
}

db_test!(two_processes_on_one_postgres_make_every_vpc_exactly_once, |backend: Backend| async move {
    if backend == Backend::Sqlite {
        return; // SQLite is for one process.
    }
    vps_graph::init_crypto();
    let (sim, sim_url) = Sim::spawn_local(quiet_sim(Duration::from_millis(20))).await.unwrap();
    let db = TestDb::new(backend).await;
    let first = Process::start(&db.url).await;
    let second = Process::start(&db.url).await;
    let (pool, token) = setup(&first, &sim_url).await;
    // A subscriber on the second process.
    let mut request = tokio_tungstenite::tungstenite::client::IntoClientRequest::into_client_request(format!(
        "ws://{}/graphql",
        second.addr
    ))
    .unwrap();
    request.headers_mut().insert("Sec-WebSocket-Protocol", "graphql-transport-ws".parse().unwrap());
    let (mut ws, _) = tokio_tungstenite::connect_async(request).await.unwrap();
    use futures_util::{SinkExt, StreamExt};
    use tokio_tungstenite::tungstenite::Message;
    ws.send(Message::text(
        json!({ "type": "connection_init", "payload": { "Authorization": format!("Bearer {token}") } }).to_string(),
    ))
    .await
    .unwrap();
    let _ack = ws.next().await;
    let subscribe = json!({ "id": "1", "type": "subscribe", "payload": { "query": "subscription { events(tenantId: \"acme\", types: [\"network.*\"]) { type subject version } }" } });
    let registered = second.feed_registered().await;
    ws.send(Message::text(subscribe.to_string())).await.unwrap();
    for _ in 0..2_000 {
        if second.feed_registered().await > registered {
            break;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }

    let ids = create_networks(&first, &token, &pool, 200).await;
    let names = until_all_ready(&second, &token, 200, Duration::from_secs(120)).await;
    let at_sim = common::vpc_names(&sim_url).await;
    assert_eq!(at_sim.len(), 200, "200 VPCs, no more");
    for name in &names {
        assert_eq!(at_sim.iter().filter(|n| *n == name).count(), 1, "{name} exists once");
        assert_eq!(sim.name_calls("vpcs.create", name), 1, "{name} was asked for once");
        assert_eq!(sim.name_calls("vpcs.made", name), 1, "{name} was made once");
    }
    // Every network's events reached the second process's subscriber, in order.
    let mut seen: std::collections::HashMap<String, Vec<(String, i64)>> = Default::default();
    let deadline = Instant::now() + Duration::from_secs(60);
    while seen.values().filter(|v| v.iter().any(|(t, _)| t == "network.ready")).count() < 200 {
        let message = tokio::time::timeout(deadline - Instant::now(), ws.next())
            .await
            .expect("events keep coming")
            .unwrap()
            .unwrap();
        let frame: Value = serde_json::from_str(message.to_text().unwrap()).unwrap();
        let event = &frame["payload"]["data"]["events"];
        if let Some(subject) = event["subject"].as_str() {
            seen.entry(subject.to_owned())
                .or_default()
                .push((event["type"].as_str().unwrap().to_owned(), event["version"].as_i64().unwrap()));
        }
    }
    for id in &ids {
        let events = &seen[id];
        assert_eq!(events.first().unwrap().0, "network.created", "{id}: {events:?}");
        assert!(events.windows(2).all(|w| w[0].1 < w[1].1), "{id}: versions rise: {events:?}");
    }
    // Both processes reconciled.
    for p in [&first, &second] {
        let metrics = p.http.get(format!("http://{}/metrics", p.addr)).send().await.unwrap().text().await.unwrap();
        assert!(
            metrics.contains("vps_graph_reconcile_runs_total{kind=\"vps.networks\""),
            "{} ran no reconcile",
            p.addr
        );
    }
});

db_test!(a_process_killed_mid_convergence_is_taken_over_without_duplicates, |backend: Backend| async move {
    vps_graph::init_crypto();
    let (sim, sim_url) = Sim::spawn_local(quiet_sim(Duration::from_millis(800))).await.unwrap();
    let dir = std::env::temp_dir().join(format!("vps-graph-kill-{}", ulid::Ulid::generate()));
    let db = TestDb::new(backend).await;
    let url = match backend {
        Backend::Sqlite => format!("sqlite://{}/kill.db?mode=rwc", dir.display()),
        Backend::Postgres => db.url.clone(),
    };
    let first = Process::start(&url).await;
    let (pool, token) = setup(&first, &sim_url).await;
    create_networks(&first, &token, &pool, 100).await;
    first.kill().await;
    let made_before = common::vpc_names(&sim_url).await.len();
    assert!(made_before < 100, "the kill came mid-convergence ({made_before} of 100 made)");
    let second = Process::start(&url).await;
    let names = until_all_ready(&second, &token, 100, Duration::from_secs(120)).await;
    let at_sim = common::vpc_names(&sim_url).await;
    assert_eq!(at_sim.len(), 100, "100 VPCs, no duplicate");
    for name in &names {
        assert_eq!(at_sim.iter().filter(|n| *n == name).count(), 1, "{name} exists once");
        assert_eq!(sim.name_calls("vpcs.made", name), 1, "{name} was made once");
    }
    let _ = std::fs::remove_dir_all(dir);
});

// The process is killed while its reserves are in flight (the provider did them; their answers
// never came back): one address is deleted before the kill, the other after the next process
// found the lost reserve. Either way it goes to error saying so, then is deleted, refunded.
db_test!(a_lost_reserve_is_told_whatever_order_the_delete_and_the_discovery_come_in, |backend: Backend| async move {
    vps_graph::init_crypto();
    let (sim, sim_url) = Sim::spawn_local(quiet_sim(Duration::ZERO)).await.unwrap();
    let dir = std::env::temp_dir().join(format!("vps-graph-reserve-{}", ulid::Ulid::generate()));
    let db = TestDb::new(backend).await;
    let url = match backend {
        Backend::Sqlite => format!("sqlite://{}/reserve.db?mode=rwc", dir.display()),
        Backend::Postgres => db.url.clone(),
    };
    let first = Process::start(&url).await;
    let (pool, token) = setup(&first, &sim_url).await;
    let quota = "mutation($p: String!) { quotaSet(input: { tenantId: \"acme\", poolId: $p, resource: \"addresses\", max: 5 }) { max } }";
    first.ok(ADMIN, quota, json!({ "p": pool })).await;
    sim.inject("reserved_ips.create", vps_graph::sim::Fault::Drop, 2);
    let create = "mutation($i: ProviderAddressCreateInput!) { providerAddressCreate(input: $i) { id } }";
    let mut ids = Vec::new();
    for name in ["early", "late"] {
        let input = json!({ "i": { "tenantId": "acme", "poolId": pool, "name": name, "region": "nyc3", "idempotencyKey": name } });
        ids.push(first.ok(&token, create, input).await["providerAddressCreate"]["id"].as_str().unwrap().to_owned());
    }
    let started = Instant::now();
    while sim.calls("reserved_ips.create") < 2 {
        assert!(started.elapsed() < Duration::from_secs(20), "the reserves were never sent");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let delete =
        "mutation($a: String!) { providerAddressDelete(input: { tenantId: \"acme\", addressId: $a }) { state } }";
    first.ok(&token, delete, json!({ "a": ids[0] })).await;
    first.kill().await;
    let second = Process::start(&url).await;
    let read = "query($a: String!) { providerAddress(tenantId: \"acme\", addressId: $a) { state message } }";
    let until = |id: String, state: &'static str| {
        let second = &second;
        let token = &token;
        async move {
            let started = Instant::now();
            loop {
                let seen = second.ok(token, read, json!({ "a": id })).await["providerAddress"].clone();
                if seen["state"] == state {
                    return seen;
                }
                assert!(started.elapsed() < Duration::from_secs(60), "{id} never {state}: {seen}");
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    };
    let found = until(ids[1].clone(), "ERROR").await;
    assert!(found["message"].as_str().unwrap().contains("check the account"), "{found}");
    second.ok(&token, delete, json!({ "a": ids[1] })).await;
    for id in &ids {
        until(id.clone(), "DELETED").await;
    }
    // A page shows events up to the cluster's horizon, which a transaction still open elsewhere
    // on the cluster holds back a moment: read until both deletes are on it.
    let page = "{ events(tenantId: \"acme\", first: 1000) { edges { node { type subject data } } } }";
    let started = Instant::now();
    let events = loop {
        let events = second.ok(&token, page, json!({})).await;
        let deleted = events.to_string().matches("providerAddress.deleted").count();
        if deleted >= ids.len() || started.elapsed() > Duration::from_secs(30) {
            break events;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    for id in &ids {
        let of_it: Vec<&Value> = events["events"]["edges"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["node"]["subject"] == id.as_str())
            .collect();
        let types: Vec<&str> = of_it.iter().map(|e| e["node"]["type"].as_str().unwrap()).collect();
        let error = types.iter().position(|t| *t == "providerAddress.error");
        let deleted = types.iter().position(|t| *t == "providerAddress.deleted");
        assert!(error.is_some() && error < deleted, "{id}: an error saying so, then deleted: {types:?}");
        let told = &of_it[error.unwrap()]["node"]["data"]["message"];
        assert!(told.as_str().is_some_and(|m| m.contains("check the account")), "{id}: {told}");
    }
    let quotas = second.ok(&token, "{ quotas(tenantId: \"acme\") { resource used } }", json!({})).await;
    let used =
        quotas["quotas"].as_array().unwrap().iter().find(|q| q["resource"] == "addresses").unwrap()["used"].clone();
    assert_eq!(used, 0, "both refunded");
    assert_eq!(sim.calls("reserved_ips.create"), 2, "never reserved again");
    let _ = std::fs::remove_dir_all(dir);
});
