//! Tenant networks through the one flow, end to end over HTTP against the simulated DigitalOcean:
//! the call rules, convergence with its events, lost answers, rate limits and drift.
use crate::common;

use std::time::Duration;

use common::{ADMIN, Backend, TestServer};
use serde_json::{Value, json};
use vps_graph::clock::Clock;
use vps_graph::sim::Fault;
use vps_graph::sim::SimConfig;
use vps_graph::store::queue;

const CREATE: &str =
    "mutation($i: NetworkCreateInput!) { networkCreate(input: $i) { id state version subnets { id region state } } }";
const GET: &str = "query($t: String!, $n: String!) { network(tenantId: $t, networkId: $n) { id state message version subnets { id region state providerId message desiredState } } }";

local_app!(Setup);

/// A tenant `acme` with a pool on a sim account (regions nyc3, sfo3) and a token with compute:*.
/// On the system clock, the sim at `sim`'s pace.
async fn setup_with(backend: Backend, sim: SimConfig) -> Setup {
    common::TestApp::real_time(backend).regions(&["nyc3", "sfo3"]).sim(sim).build().await.into()
}

async fn setup(backend: Backend) -> Setup {
    setup_with(backend, SimConfig::default()).await
}

/// A server on a manual clock with no reconcile worker: the test moves time and runs what came
/// due (`run_due`), the sim at its own pace on that clock.
async fn setup_manual(backend: Backend) -> (Setup, Clock) {
    let s: Setup = common::TestApp::on_clock(backend)
        .regions(&["nyc3", "sfo3"])
        .sim(SimConfig::default())
        .workers(0)
        .build()
        .await
        .into();
    // What a worker would have run at start (the account's first inventory pass, with nothing
    // settled yet): run now, so that it does not run in the middle of a test.
    s.run_due().await;
    let clock = s.clock.clone();
    (s, clock)
}

fn input(pool: &str, name: &str, subnets: Value) -> Value {
    json!({ "i": { "tenantId": "acme", "poolId": pool, "name": name, "subnets": subnets, "idempotencyKey": format!("{name}-key") } })
}

impl Setup {
    async fn create(&self, name: &str, subnets: Value) -> Value {
        self.server.ok(Some(&self.token), CREATE, input(&self.pool, name, subnets)).await["networkCreate"].clone()
    }

    async fn delete(&self, id: &str) -> Value {
        let query = "mutation($n: String!) { networkDelete(input: { tenantId: \"acme\", networkId: $n }) { state } }";
        self.server.ok(Some(&self.token), query, json!({ "n": id })).await["networkDelete"].clone()
    }

    async fn get(&self, id: &str) -> Value {
        self.server.ok(Some(&self.token), GET, json!({ "t": "acme", "n": id })).await["network"].clone()
    }

    /// Runs the reconcile work due now, here.
    async fn run_due(&self) {
        self.server.app.run_due().await.expect("due work runs");
    }

    /// Waits until `check` holds for the network (10 s at most), running what is due first.
    async fn until(&self, id: &str, what: &str, check: impl Fn(&Value) -> bool) -> Value {
        for _ in 0..400 {
            self.run_due().await;
            let network = self.get(id).await;
            if check(&network) {
                return network;
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
        panic!("network never became {what}: {}", self.get(id).await);
    }

    async fn until_state(&self, id: &str, state: &str) -> Value {
        self.until(id, state, |n| n["state"] == state).await
    }

    fn sim(&self) -> &vps_graph::sim::Sim {
        self.server.app.sim.as_ref().expect("in-process sim")
    }

    async fn vpcs_named(&self, name: &str) -> usize {
        let url = self.server.app.services.sim_url.clone().unwrap();
        common::vpc_names(&url).await.iter().filter(|n| *n == name).count()
    }

    async fn work_due(&self, id: &str) -> i64 {
        queue::item(&self.server.app.services.db, "vps.networks", id).await.unwrap().expect("a work item").0
    }

    /// Waits until the run has finished and set the network's next due time to `expected`.
    async fn until_due(&self, id: &str, expected: i64) {
        for _ in 0..200 {
            self.run_due().await;
            if self.work_due(id).await == expected {
                return;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        assert_eq!(self.work_due(id).await, expected);
    }
}

fn provider_name(subnet_id: &str) -> String {
    vps_graph::service::networks::provider_name(subnet_id)
}

db_test!(network_create_converges_to_ready_and_delete_to_deleted_with_events_in_order, |backend: Backend| async move {
    let s = setup(backend).await;
    let created = s
        .create(
            "web",
            json!([{ "region": "nyc3", "ipRange": "10.10.0.0/24" }, { "region": "sfo3", "ipRange": "10.11.0.0/24" }]),
        )
        .await;
    assert_eq!(created["state"], "PENDING");
    let id = created["id"].as_str().unwrap().to_owned();
    let ready = s.until_state(&id, "READY").await;
    let subnets = ready["subnets"].as_array().unwrap();
    assert!(subnets.iter().all(|sub| sub["state"] == "READY" && sub["providerId"].is_string()));
    for sub in subnets {
        assert_eq!(s.vpcs_named(&provider_name(sub["id"].as_str().unwrap())).await, 1);
    }
    s.delete(&id).await;
    s.until_state(&id, "DELETED").await;
    for sub in subnets {
        assert_eq!(s.vpcs_named(&provider_name(sub["id"].as_str().unwrap())).await, 0, "the VPCs are gone");
    }
    // The network's events, in feed order, with rising versions.
    let mut events = Vec::new();
    for _ in 0..100 {
        let page = s
            .server
            .ok(
                Some(&s.token),
                "{ events(tenantId: \"acme\", first: 1000) { edges { node { type subject version } } } }",
                json!({}),
            )
            .await;
        events = page["events"]["edges"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["node"]["subject"] == id.as_str())
            .map(|e| e["node"].clone())
            .collect::<Vec<_>>();
        if events.last().is_some_and(|e| e["type"] == "network.deleted") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let types: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(
        types,
        [
            "network.created",
            "network.updated",
            "network.ready",
            "network.deleting",
            "network.updated",
            "network.deleted"
        ]
    );
    let versions: Vec<i64> = events.iter().map(|e| e["version"].as_i64().unwrap()).collect();
    assert!(versions.windows(2).all(|v| v[0] < v[1]), "{versions:?}");
    // A deleted network is left alone: no work item remains.
    assert!(queue::item(&s.server.app.services.db, "vps.networks", &id).await.unwrap().is_none());
});

db_test!(a_lost_create_answer_is_found_by_name_and_never_made_twice, |backend: Backend| async move {
    let (s, clock) = setup_manual(backend).await;
    s.sim().inject("vpcs.create", Fault::Drop, 1);
    let created = s.create("lost", json!([{ "region": "nyc3", "ipRange": "10.20.0.0/24" }])).await;
    let id = created["id"].as_str().unwrap().to_owned();
    let subnet_id = created["subnets"][0]["id"].as_str().unwrap().to_owned();
    let waiting = s
        .until(&id, "waiting after a lost answer", |n| {
            n["subnets"][0]["message"].as_str().is_some_and(|m| m.contains("lost"))
        })
        .await;
    assert_eq!(waiting["state"], "PENDING");
    s.until_due(&id, clock.now_ms() + 30_000).await; // looked at again 30 s later
    clock.advance(30_000);
    s.until_state(&id, "READY").await;
    let name = provider_name(&subnet_id);
    assert_eq!(s.sim().name_calls("vpcs.create", &name), 1, "the create was sent once");
    assert_eq!(s.sim().name_calls("vpcs.made", &name), 1, "one VPC was made");
    assert_eq!(s.vpcs_named(&name).await, 1, "exactly one VPC exists");
});

db_test!(rate_limited_create_backs_off_from_30_seconds_without_a_tight_loop, |backend: Backend| async move {
    let (s, clock) = setup_manual(backend).await;
    s.sim().inject("vpcs.create", Fault::Status { status: 429 }, 1000);
    let created = s.create("limited", json!([{ "region": "nyc3", "ipRange": "10.30.0.0/24" }])).await;
    let id = created["id"].as_str().unwrap().to_owned();
    s.until(&id, "rate-limited", |n| n["subnets"][0]["message"].as_str().is_some_and(|m| m.contains("rate-limited")))
        .await;
    s.until_due(&id, clock.now_ms() + 30_000).await;
    clock.advance(29_000);
    common::idle(&s.server, &clock, &id).await;
    assert_eq!(s.sim().calls("vpcs.create"), 1, "no retry before the 30 s are up");
    clock.advance(1_000);
    s.run_due().await;
    assert!(s.sim().calls("vpcs.create") == 2);
    common::idle(&s.server, &clock, &id).await;
    assert_eq!(s.sim().calls("vpcs.create"), 2, "one more call after the 30 s");
    // Backoff grows with each rate-limited run in a row: 60 s now, then 120 s.
    assert_eq!(s.work_due(&id).await, clock.now_ms() + 60_000);
    clock.advance(60_000);
    s.run_due().await;
    assert!(s.sim().calls("vpcs.create") == 3);
    common::idle(&s.server, &clock, &id).await;
    assert_eq!(s.work_due(&id).await, clock.now_ms() + 120_000);
    s.sim().clear_faults();
    clock.advance(120_000);
    s.until_state(&id, "READY").await;
    assert_eq!(s.vpcs_named(&provider_name(created["subnets"][0]["id"].as_str().unwrap())).await, 1);
});

db_test!(a_vpc_deleted_behind_our_back_goes_to_error_and_is_never_made_again, |backend: Backend| async move {
    let (s, clock) = setup_manual(backend).await;
    let created = s.create("gone", json!([{ "region": "nyc3", "ipRange": "10.40.0.0/24" }])).await;
    let id = created["id"].as_str().unwrap().to_owned();
    let ready = s.until_state(&id, "READY").await;
    let vpc = ready["subnets"][0]["providerId"].as_str().unwrap().to_owned();
    s.run_due().await;
    let due = s.work_due(&id).await;
    assert!(due > clock.now_ms() && due <= clock.now_ms() + 3_600_000, "a settled network is read within the hour");
    let url = s.server.app.services.sim_url.clone().unwrap();
    let deleted = s.server.http.delete(format!("{url}/v2/vpcs/{vpc}")).bearer_auth("someone").send().await.unwrap();
    assert_eq!(deleted.status(), 204);
    clock.advance(3_600_000);
    let failed = s.until_state(&id, "ERROR").await;
    assert!(failed["message"].as_str().unwrap().contains("deleted outside"), "{failed}");
    for _ in 0..3 {
        clock.advance(3_600_000);
        common::idle(&s.server, &clock, &id).await;
    }
    assert_eq!(s.sim().calls("vpcs.create"), 1, "never made again");
    // Deleting it finishes without a provider call.
    s.delete(&id).await;
    s.until_state(&id, "DELETED").await;
    assert_eq!(s.sim().calls("vpcs.delete"), 1, "only the one made outside");
});

db_test!(network_create_rules, |backend: Backend| async move {
    let s = setup(backend).await;
    let token = Some(s.token.as_str());
    let one = |range: &str| json!([{ "region": "nyc3", "ipRange": range }]);
    let code = |i: Value| {
        let server = &s.server;
        async move { server.code(token, CREATE, i).await }
    };
    assert_eq!(
        code(input(&s.pool, "a", json!([{ "region": "lon1", "ipRange": "10.1.0.0/24" }]))).await,
        "INVALID_INPUT",
        "region the account does not use"
    );
    assert_eq!(code(input(&s.pool, "a", one("8.8.8.0/24"))).await, "INVALID_INPUT", "not private");
    assert_eq!(code(input(&s.pool, "a", one("10.1.0.0/12"))).await, "INVALID_INPUT", "too wide");
    assert_eq!(code(input(&s.pool, "a", json!([]))).await, "INVALID_INPUT", "no subnet");
    let twice = json!([{ "region": "nyc3", "ipRange": "10.1.0.0/24" }, { "region": "nyc3", "ipRange": "10.2.0.0/24" }]);
    assert_eq!(code(input(&s.pool, "a", twice)).await, "INVALID_INPUT", "one subnet per region");
    let overlapping =
        json!([{ "region": "nyc3", "ipRange": "10.1.0.0/16" }, { "region": "sfo3", "ipRange": "10.1.2.0/24" }]);
    assert_eq!(code(input(&s.pool, "a", overlapping)).await, "INVALID_INPUT", "overlapping ranges");
    assert_eq!(code(input(&s.pool, "Bad_Name", one("10.1.0.0/24"))).await, "INVALID_INPUT");
    assert_eq!(
        code(input("pool_01jz0000000000000000000000", "a", one("10.1.0.0/24"))).await,
        "NOT_FOUND",
        "a pool not offered"
    );
    let first = s.create("web", one("10.1.0.0/24")).await;
    let again = s.server.ok(token, CREATE, input(&s.pool, "web", one("10.1.0.0/24"))).await;
    assert_eq!(again["networkCreate"]["id"], first["id"], "same key, same input: the same network");
    let other_input = input(&s.pool, "web", one("10.9.0.0/24"));
    assert_eq!(code(other_input).await, "CONFLICT", "same key, other input");
    let mut same_name = input(&s.pool, "web", one("10.3.0.0/24"));
    same_name["i"]["idempotencyKey"] = json!("another-key");
    assert_eq!(code(same_name).await, "CONFLICT", "name unique in the tenant");
});

db_test!(an_aws_network_names_zones_and_a_vpc_block_and_nothing_is_recorded_otherwise, |backend: Backend| async move {
    let s = setup(backend).await;
    let pool = s.server.aws_pool("aws").await;
    s.server.offer(&pool, "acme", json!([])).await;
    let refused = |body: &Value, field: &str| {
        assert_eq!(body["errors"][0]["extensions"]["code"], "INVALID_INPUT", "{body}");
        assert_eq!(body["errors"][0]["extensions"]["details"]["field"], field, "{body}");
    };
    // A DigitalOcean-shaped network (a region, no VPC block) is not an AWS one.
    let region_only = input(&pool, "a", json!([{ "region": "us-east-1", "ipRange": "10.1.0.0/24" }]));
    refused(&s.server.gql(Some(&s.token), CREATE, region_only).await, "ipRange");
    let mut no_zone = input(&pool, "a", json!([{ "region": "us-east-1", "ipRange": "10.1.0.0/24" }]));
    no_zone["i"]["ipRange"] = json!("10.1.0.0/16");
    refused(&s.server.gql(Some(&s.token), CREATE, no_zone).await, "subnets.zone");
    let mut outside = input(&pool, "a", json!([{ "zone": "us-east-1a", "ipRange": "10.2.0.0/24" }]));
    outside["i"]["ipRange"] = json!("10.1.0.0/16");
    refused(&s.server.gql(Some(&s.token), CREATE, outside).await, "subnets.ipRange");
    let mut unknown_zone = input(&pool, "a", json!([{ "zone": "us-west-2a", "ipRange": "10.1.1.0/24" }]));
    unknown_zone["i"]["ipRange"] = json!("10.1.0.0/16");
    refused(&s.server.gql(Some(&s.token), CREATE, unknown_zone).await, "subnets.zone");
    let listed = s
        .server
        .ok(
            Some(&s.token),
            "{ networks(tenantId: \"acme\", includeDeleted: true) { edges { node { id } } } }",
            json!({}),
        )
        .await;
    assert_eq!(listed["networks"]["edges"], json!([]));
});

db_test!(subnets_are_added_and_removed_and_a_network_being_deleted_refuses_new_ones, |backend: Backend| async move {
    let s = setup(backend).await;
    let created = s.create("grow", json!([{ "region": "nyc3", "ipRange": "10.50.0.0/24" }])).await;
    let id = created["id"].as_str().unwrap().to_owned();
    s.until_state(&id, "READY").await;
    let add = "mutation($n: String!, $r: String!, $ip: String!) { networkAddSubnet(input: { tenantId: \"acme\", networkId: $n, subnet: { region: $r, ipRange: $ip } }) { state subnets { id region } } }";
    let added = s.server.ok(Some(&s.token), add, json!({ "n": id, "r": "sfo3", "ip": "10.51.0.0/24" })).await;
    assert_eq!(added["networkAddSubnet"]["state"], "PENDING");
    let ready = s
        .until(&id, "ready with two subnets", |n| n["state"] == "READY" && n["subnets"].as_array().unwrap().len() == 2)
        .await;
    let sfo = ready["subnets"].as_array().unwrap().iter().find(|x| x["region"] == "sfo3").unwrap()["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let remove = "mutation($n: String!, $s: String!) { networkRemoveSubnet(input: { tenantId: \"acme\", networkId: $n, subnetId: $s }) { subnets { id state desiredState } } }";
    s.server.ok(Some(&s.token), remove, json!({ "n": id, "s": sfo })).await;
    s.until(&id, "without its sfo3 VPC", |n| {
        n["subnets"].as_array().unwrap().iter().any(|x| x["id"] == sfo.as_str() && x["state"] == "DELETED")
    })
    .await;
    assert_eq!(s.vpcs_named(&provider_name(&sfo)).await, 0);
    // Hold the delete at the provider so the network stays DELETING.
    s.sim().inject("vpcs.delete", Fault::Status { status: 500 }, 1000);
    let delete = "mutation($n: String!) { networkDelete(input: { tenantId: \"acme\", networkId: $n }) { state } }";
    let deleting = s.server.ok(Some(&s.token), delete, json!({ "n": id })).await;
    assert_eq!(deleting["networkDelete"]["state"], "DELETING");
    assert_eq!(
        s.server.code(Some(&s.token), add, json!({ "n": id, "r": "sfo3", "ip": "10.52.0.0/24" })).await,
        "INVALID_STATE"
    );
    let again = s.server.ok(Some(&s.token), delete, json!({ "n": id })).await;
    assert_eq!(again["networkDelete"]["state"], "DELETING", "deleting one being deleted returns it");
    let held = s.until(&id, "held by the provider", |n| n["message"].as_str().is_some_and(|m| m.contains("500"))).await;
    assert_eq!(held["state"], "DELETING");
    s.sim().clear_faults();
});

db_test!(networks_are_decided_on_the_network, |backend: Backend| async move {
    let s = setup(backend).await;
    s.server.tenant("other").await;
    let created = s.create("private", json!([{ "region": "nyc3", "ipRange": "10.60.0.0/24" }])).await;
    let id = created["id"].as_str().unwrap().to_owned();
    let foreign = s.server.token(Some("other"), &[("compute:*", "tenant/other")]).await;
    assert_eq!(s.server.code(Some(&foreign), GET, json!({ "t": "acme", "n": id })).await, "NOT_FOUND");
    assert_eq!(s.server.code(Some(&foreign), GET, json!({ "t": "other", "n": id })).await, "NOT_FOUND");
    let reader = s.server.token(Some("acme"), &[("compute:networks:read", "tenant/acme")]).await;
    assert_eq!(s.get(&id).await["id"], id.as_str());
    s.server.ok(Some(&reader), GET, json!({ "t": "acme", "n": id })).await;
    let delete = "mutation($n: String!) { networkDelete(input: { tenantId: \"acme\", networkId: $n }) { state } }";
    assert_eq!(s.server.code(Some(&reader), delete, json!({ "n": id })).await, "ACCESS_DENIED");
    let one = s.server.token(Some("acme"), &[("compute:networks:read", &format!("network/{id}"))]).await;
    s.server.ok(Some(&one), GET, json!({ "t": "acme", "n": id })).await;
});

db_test!(network_changed_yields_each_new_view, |backend: Backend| async move {
    let s = setup(backend).await;
    let created = s.create("watched", json!([{ "region": "nyc3", "ipRange": "10.70.0.0/24" }])).await;
    let id = created["id"].as_str().unwrap().to_owned();
    s.until_state(&id, "READY").await;
    let mut ws = s.server.ws(json!({ "Authorization": format!("Bearer {}", s.token) })).await;
    assert_eq!(ws.next(Duration::from_secs(5)).await.unwrap()["type"], "connection_ack");
    let query =
        "subscription($t: String!, $n: String!) { networkChanged(tenantId: $t, networkId: $n) { state version } }";
    s.server.subscribe_live(&mut ws, "w", query, json!({ "t": "acme", "n": id })).await;
    s.delete(&id).await;
    let mut views: Vec<(String, i64)> = Vec::new();
    while views.last().map(|v| v.0.as_str()) != Some("DELETED") {
        let message = ws.next(Duration::from_secs(10)).await.expect("a view");
        let view = &message["payload"]["data"]["networkChanged"];
        views.push((view["state"].as_str().unwrap().to_owned(), view["version"].as_i64().unwrap()));
    }
    // On PostgreSQL a view committed just before the subscription may still arrive first (the
    // feed is at-least-once at its start); what arrives is in version order.
    assert!(views.windows(2).all(|w| w[0].1 < w[1].1), "{views:?}");
    assert!(views.iter().any(|v| v.0 == "DELETING"), "{views:?}");
});

db_test!(the_client_backs_off_before_the_rate_limit_budget_is_spent, |backend: Backend| async move {
    let s = setup_with(backend, SimConfig { per_hour: 20, ..Default::default() }).await;
    for i in 0..30 {
        s.create(&format!("n{i}"), json!([{ "region": "nyc3", "ipRange": format!("10.{}.0.0/24", 100 + i) }])).await;
    }
    tokio::time::sleep(Duration::from_secs(3)).await;
    let metrics = s.server.http.get(s.server.url("/metrics")).send().await.unwrap().text().await.unwrap();
    assert!(!metrics.contains("status=\"429\""), "the client spent the budget to a 429: {metrics}");
    assert!(metrics.contains("status=\"budget\""), "the client held back once the budget ran low: {metrics}");
    assert!(s.sim().calls("vpcs.create") < 20, "stopped before the last request of the budget");
});

db_test!(a_refused_create_goes_to_error_and_is_retried_every_five_minutes, |backend: Backend| async move {
    let (s, clock) = setup_manual(backend).await;
    s.sim().inject("vpcs.create", Fault::Status { status: 422 }, 2);
    let created = s.create("refused", json!([{ "region": "nyc3", "ipRange": "10.80.0.0/24" }])).await;
    let id = created["id"].as_str().unwrap().to_owned();
    let failed = s.until_state(&id, "ERROR").await;
    assert!(failed["message"].is_string(), "the provider's words are kept: {failed}");
    assert_eq!(s.sim().calls("vpcs.create"), 2, "refused once, looked up by name, refused again");
    s.until_due(&id, clock.now_ms() + 300_000).await; // retried by the periodic pass
    clock.advance(300_000);
    s.until_state(&id, "READY").await;
    let metrics = s.server.http.get(s.server.url("/metrics")).send().await.unwrap().text().await.unwrap();
    assert!(
        metrics.contains(
            "vps_graph_provider_calls_total{provider=\"digitalocean\",endpoint=\"vpcs.create\",status=\"422\"} 2"
        ),
        "{metrics}"
    );
    assert!(
        metrics.contains(
            "vps_graph_reconcile_runs_total{kind=\"vps.networks\",resource=\"network\",outcome=\"requeued\"}"
        ),
        "{metrics}"
    );
});

db_test!(a_vpc_under_our_name_that_we_did_not_make_is_never_adopted_or_deleted, |backend: Backend| async move {
    let (s, clock) = setup_manual(backend).await;
    s.sim().inject("vpcs.create", Fault::Status { status: 429 }, 1);
    let created = s.create("squatted", json!([{ "region": "nyc3", "ipRange": "10.90.0.0/24" }])).await;
    let id = created["id"].as_str().unwrap().to_owned();
    let name = provider_name(created["subnets"][0]["id"].as_str().unwrap());
    s.until(&id, "rate-limited", |n| n["subnets"][0]["message"].is_string()).await;
    // Someone else makes a VPC under the name meanwhile.
    let url = s.server.app.services.sim_url.clone().unwrap();
    let made = s
        .server
        .http
        .post(format!("{url}/v2/vpcs"))
        .bearer_auth("someone")
        .json(&json!({ "name": name, "region": "nyc3", "ip_range": "10.91.0.0/24", "description": "not vps-graph" }))
        .send()
        .await
        .unwrap();
    assert_eq!(made.status(), 201);
    clock.advance(30_000);
    let failed = s.until_state(&id, "ERROR").await;
    assert!(failed["message"].as_str().unwrap().contains("did not make"), "{failed}");
    assert!(failed["subnets"][0]["providerId"].is_null(), "not adopted");
    s.delete(&id).await;
    s.until_state(&id, "DELETED").await;
    assert_eq!(s.sim().calls("vpcs.delete"), 0, "never deleted");
    assert_eq!(s.vpcs_named(&name).await, 1);
});

db_test!(deleting_a_network_whose_create_answer_was_lost_leaves_no_vpc_behind, |backend: Backend| async move {
    let (s, _clock) = setup_manual(backend).await;
    s.sim().inject("vpcs.create", Fault::Drop, 1);
    let created = s.create("orphan", json!([{ "region": "nyc3", "ipRange": "10.95.0.0/24" }])).await;
    let id = created["id"].as_str().unwrap().to_owned();
    let name = provider_name(created["subnets"][0]["id"].as_str().unwrap());
    s.until(&id, "waiting after a lost answer", |n| {
        n["subnets"][0]["message"].as_str().is_some_and(|m| m.contains("lost"))
    })
    .await;
    assert_eq!(s.vpcs_named(&name).await, 1, "the provider made it although the answer was lost");
    s.delete(&id).await;
    s.until_state(&id, "DELETED").await;
    assert_eq!(s.vpcs_named(&name).await, 0, "found by name and deleted, not orphaned");
});

db_test!(a_404_that_is_not_the_apis_own_is_not_taken_for_gone, |backend: Backend| async move {
    let (s, clock) = setup_manual(backend).await;
    let created = s.create("bare404", json!([{ "region": "nyc3", "ipRange": "10.96.0.0/24" }])).await;
    let id = created["id"].as_str().unwrap().to_owned();
    s.until_state(&id, "READY").await;
    // The run that saw it ready has finished and set its hourly drift read.
    s.run_due().await;
    assert!(s.work_due(&id).await > clock.now_ms());
    s.sim().inject("vpcs.get", Fault::Status { status: 500 }, 1);
    // The account's listing fails too, so the network's own hourly read is what runs (a listing
    // that shows the VPC would put that read off).
    s.sim().inject("vpcs.list", Fault::Status { status: 500 }, 1_000);
    clock.advance(3_600_000);
    // The drift read fails, and its run sets the next look before the clock moves on.
    s.run_due().await;
    assert!(s.sim().calls("vpcs.get") >= 1 && s.work_due(&id).await > clock.now_ms());
    assert_eq!(s.get(&id).await["state"], "READY", "an unavailable drift read changes nothing");
    clock.advance(30_000);
    s.run_due().await;
    assert!(s.sim().calls("vpcs.get") >= 2);
    common::idle(&s.server, &clock, &id).await;
    assert_eq!(s.sim().calls("vpcs.get"), 2, "read again 30 s later");
    assert_eq!(s.get(&id).await["state"], "READY");
});

// DigitalOcean refuses a VPC range overlapping any other VPC of the account, in any region; a
// platform account is shared by tenants, so the call refuses it first, naming no one's network.
db_test!(a_vpc_range_is_the_accounts_own_across_tenants_and_regions, |backend: Backend| async move {
    let server = TestServer::start(backend).await;
    let pool = server.sim_pool("shared", &["nyc3", "sfo3"], None).await;
    for tenant in ["acme", "globex"] {
        server.tenant(tenant).await;
        server.offer(&pool, tenant, json!([])).await;
    }
    let create = "mutation($i: NetworkCreateInput!) { networkCreate(input: $i) { id } }";
    let network = |tenant: &str, name: &str, region: &str, range: &str| {
        json!({ "i": { "tenantId": tenant, "poolId": pool, "name": name, "idempotencyKey": name,
            "subnets": [{ "region": region, "ipRange": range }] } })
    };
    let theirs = server.ok(Some(ADMIN), create, network("acme", "secret-lab", "nyc3", "10.90.0.0/24")).await;
    let theirs = theirs["networkCreate"]["id"].as_str().unwrap().to_owned();
    let globex = server.token(Some("globex"), &[("compute:*", "tenant/globex")]).await;
    let refused = server.gql(Some(&globex), create, network("globex", "mine", "sfo3", "10.90.0.0/20")).await;
    assert_eq!(common::first_code(&refused).as_deref(), Some("INVALID_INPUT"), "{refused}");
    assert_eq!(refused["errors"][0]["extensions"]["details"]["reason"], "rangeTaken");
    let said = refused.to_string();
    assert!(!said.contains(&theirs) && !said.contains("secret-lab") && !said.contains("acme"), "{said}");
    // A range of its own is taken; adding an overlapping subnet to it is refused the same way.
    let mine = server.ok(Some(&globex), create, network("globex", "mine", "sfo3", "10.91.0.0/24")).await;
    let add = "mutation($i: NetworkAddSubnetInput!) { networkAddSubnet(input: $i) { id } }";
    let overlapping = json!({ "i": { "tenantId": "globex", "networkId": mine["networkCreate"]["id"],
        "subnet": { "region": "nyc3", "ipRange": "10.90.0.128/25" } } });
    let refused = server.gql(Some(&globex), add, overlapping).await;
    assert_eq!(refused["errors"][0]["extensions"]["details"]["reason"], "rangeTaken", "{refused}");
    // The sim holds the provider's rule too, across regions, once the first network's VPC is made.
    let read = "query($n: String!) { network(tenantId: \"acme\", networkId: $n) { state } }";
    for _ in 0..400 {
        if server.ok(Some(ADMIN), read, json!({ "n": theirs })).await["network"]["state"] == "READY" {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(25)).await;
    }
    assert_eq!(server.ok(Some(ADMIN), read, json!({ "n": theirs })).await["network"]["state"], "READY");
    let sim_url = server.app.services.sim_url.clone().unwrap();
    let direct = server
        .http
        .post(format!("{sim_url}/v2/vpcs"))
        .bearer_auth("someone")
        .json(&json!({ "name": "outside", "region": "sfo3", "ip_range": "10.90.0.0/16" }))
        .send()
        .await
        .unwrap();
    assert_eq!(direct.status(), 422, "the account's VPC in nyc3 holds 10.90.0.0/24");
});

db_test!(
    every_change_the_tenant_asks_of_a_network_bumps_the_generation_of_the_row_it_changes,
    |backend: Backend| async move {
        // A reconciler's write-back never bumps a generation, so each count is exact whatever the
        // reconcilers do meanwhile.
        use sea_orm::{ColumnTrait, EntityTrait, QueryFilter};
        use vps_graph::store::entity::{network, network_subnet as subnet};
        let s = setup(backend).await;
        let db = &s.server.app.services.db;
        let id = s.create("lan", json!([{ "region": "nyc3", "ipRange": "10.30.0.0/24" }])).await["id"]
            .as_str()
            .unwrap()
            .to_owned();
        s.until_state(&id, "READY").await;
        let of_network =
            || async { network::Entity::find_by_id(id.clone()).one(db).await.unwrap().unwrap().generation };
        assert_eq!(of_network().await, 1, "as made");

        let add = "mutation($n: String!) { networkAddSubnet(input: { tenantId: \"acme\", networkId: $n, subnet: { region: \"sfo3\", ipRange: \"10.30.1.0/24\" } }) { id } }";
        s.server.ok(Some(&s.token), add, json!({ "n": id })).await;
        assert_eq!(of_network().await, 2, "a subnet added");
        s.until_state(&id, "READY").await;
        assert_eq!(of_network().await, 2, "its write-backs are no user change");

        let added = subnet::Entity::find()
            .filter(subnet::Column::NetworkId.eq(id.clone()))
            .filter(subnet::Column::Region.eq("sfo3"))
            .one(db)
            .await
            .unwrap()
            .expect("the added subnet");
        assert_eq!(added.generation, 1, "a subnet is made at the first generation");
        let remove = "mutation($n: String!, $s: String!) { networkRemoveSubnet(input: { tenantId: \"acme\", networkId: $n, subnetId: $s }) { id } }";
        s.server.ok(Some(&s.token), remove, json!({ "n": id, "s": added.id })).await;
        let removed = subnet::Entity::find_by_id(added.id.clone()).one(db).await.unwrap().unwrap();
        assert_eq!(
            (removed.generation, of_network().await),
            (2, 3),
            "a subnet removed: the subnet's and the network's"
        );

        s.until_state(&id, "READY").await;
        s.delete(&id).await;
        assert_eq!(of_network().await, 4, "a delete");
    }
);
