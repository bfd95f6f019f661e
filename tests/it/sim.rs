//! The simulated DigitalOcean's HTTP face against the reference: status codes, error bodies,
//! pagination, rate-limit headers and 429s, faults over the control endpoint, asynchronous
//! actions read through the client.
use std::time::Duration;

use serde_json::{Value, json};
use vps_graph::metrics::Metrics;
use vps_graph::provider::digitalocean::DigitalOcean;
use vps_graph::provider::{ActionStatus, ProviderError};
use vps_graph::sim::{Sim, SimConfig};

/// The client of an account at the sim at `url`, its token `t`.
fn client(url: &str, timeout: Duration) -> DigitalOcean {
    DigitalOcean::new("pacct_test", url, Ok("t".into()), timeout, std::sync::Arc::new(Metrics::default()))
}

async fn sim(config: SimConfig) -> (Sim, String, reqwest::Client) {
    vps_graph::init_crypto();
    let (sim, url) = Sim::spawn_local(config).await.unwrap();
    (sim, url, reqwest::Client::new())
}

#[tokio::test]
async fn errors_have_the_apis_shape_and_every_answer_the_rate_limit_headers() {
    let (_sim, url, http) = sim(SimConfig::default()).await;
    let missing = http.get(format!("{url}/v2/vpcs/nope")).bearer_auth("t").send().await.unwrap();
    assert_eq!(missing.status(), 404);
    for header in ["ratelimit-limit", "ratelimit-remaining", "ratelimit-reset", "x-request-id"] {
        assert!(missing.headers().contains_key(header), "{header}");
    }
    assert_eq!(missing.headers()["ratelimit-limit"], "5000");
    let body: Value = missing.json().await.unwrap();
    assert_eq!(body["id"], "not_found");
    assert!(body["message"].is_string() && body["request_id"].is_string());
    let unknown_path = http.get(format!("{url}/v2/nothing-here")).bearer_auth("t").send().await.unwrap();
    assert_eq!(unknown_path.json::<Value>().await.unwrap()["id"], "not_found");
    let bad = http
        .post(format!("{url}/v2/vpcs"))
        .bearer_auth("t")
        .json(&json!({ "name": "a_b", "region": "nyc3" }))
        .send()
        .await
        .unwrap();
    assert_eq!(bad.status(), 422);
    assert_eq!(bad.json::<Value>().await.unwrap()["id"], "unprocessable_entity");
    let anonymous = http.get(format!("{url}/v2/vpcs")).send().await.unwrap();
    assert_eq!(anonymous.status(), 401);
    // Every error, the router's own too, is the API's JSON body with the rate-limit headers.
    let wrong_method = http.patch(format!("{url}/v2/vpcs")).bearer_auth("t").send().await.unwrap();
    let bad_query = http.get(format!("{url}/v2/volumes?page=first")).bearer_auth("t").send().await.unwrap();
    for (answer, status) in [(anonymous, 401), (wrong_method, 405), (bad_query, 400)] {
        assert_eq!(answer.status(), status);
        for header in ["ratelimit-limit", "ratelimit-remaining", "ratelimit-reset"] {
            assert!(answer.headers().contains_key(header), "{status}: {header}");
        }
        let request_id = answer.headers()["x-request-id"].to_str().unwrap().to_owned();
        let groups: Vec<usize> = request_id.split('-').map(str::len).collect();
        assert_eq!(groups, [8, 4, 4, 4, 12], "a UUID: {request_id}");
        let body: Value = answer.json().await.unwrap();
        assert!(body["id"].is_string() && body["message"].is_string(), "{status}: {body}");
    }
}

/// Droplets carry the fields the spec requires, a create without a network leaves `vpc_uuid`
/// out (null is refused), and a destroy's status fields are strings.
#[tokio::test]
async fn droplets_have_the_specs_shape() {
    let (_sim, url, http) = sim(SimConfig::default()).await;
    let create = |body: Value| http.post(format!("{url}/v2/droplets")).bearer_auth("t").json(&body).send();
    let base = json!({ "name": "web", "region": "nyc3", "size": "s-2vcpu-4gb", "image": "ubuntu-24-04-x64" });
    let mut with_null = base.clone();
    with_null["vpc_uuid"] = Value::Null;
    assert_eq!(create(with_null).await.unwrap().status(), 422, "vpc_uuid: null is not in the spec");
    let made: Value = create(base).await.unwrap().json().await.unwrap();
    let droplet = &made["droplet"];
    for key in ["memory", "vcpus", "disk", "features", "backup_ids", "snapshot_ids", "image", "size", "networks"] {
        assert!(!droplet[key].is_null(), "{key}: {droplet}");
    }
    assert_eq!((droplet["vcpus"].as_u64(), droplet["memory"].as_u64()), (Some(2), Some(4096)));
    assert_eq!(droplet["size"]["slug"], "s-2vcpu-4gb");
    let id = droplet["id"].as_u64().unwrap();
    let path = format!("{url}/v2/droplets/{id}/destroy_with_associated_resources/selective");
    let destroy = http.delete(&path).bearer_auth("t").json(&json!({ "volumes": [] })).send().await.unwrap();
    assert_eq!(destroy.status(), 202);
    let status_path = format!("{url}/v2/droplets/{id}/destroy_with_associated_resources/status");
    let status: Value = http.get(&status_path).bearer_auth("t").send().await.unwrap().json().await.unwrap();
    assert_eq!((&status["droplet"]["destroyed_at"], &status["completed_at"]), (&json!(""), &json!("")), "{status}");
}

#[tokio::test]
async fn vpc_create_then_names_and_ranges_are_refused_twice() {
    let (_sim, url, http) = sim(SimConfig::default()).await;
    let create = |body: Value| http.post(format!("{url}/v2/vpcs")).bearer_auth("t").json(&body).send();
    let made = create(json!({ "name": "one", "region": "nyc3", "ip_range": "10.1.0.0/24" })).await.unwrap();
    assert_eq!(made.status(), 201);
    let vpc: Value = made.json().await.unwrap();
    assert_eq!(vpc["vpc"]["ip_range"], "10.1.0.0/24");
    assert_eq!(
        create(json!({ "name": "one", "region": "nyc3", "ip_range": "10.2.0.0/24" })).await.unwrap().status(),
        422
    );
    assert_eq!(
        create(json!({ "name": "two", "region": "nyc3", "ip_range": "10.1.0.0/16" })).await.unwrap().status(),
        422
    );
    assert_eq!(create(json!({ "name": "three", "region": "mars1" })).await.unwrap().status(), 422);
    let deleted = http
        .delete(format!("{url}/v2/vpcs/{}", vpc["vpc"]["id"].as_str().unwrap()))
        .bearer_auth("t")
        .send()
        .await
        .unwrap();
    assert_eq!(deleted.status(), 204);
}

#[tokio::test]
async fn lists_paginate_with_links_and_meta() {
    let (_sim, url, http) = sim(SimConfig::default()).await;
    for i in 0..5 {
        http.post(format!("{url}/v2/vpcs"))
            .bearer_auth("t")
            .json(&json!({ "name": format!("v{i}"), "region": "nyc3", "ip_range": format!("10.{i}.0.0/24") }))
            .send()
            .await
            .unwrap();
    }
    let page = |n: u32| http.get(format!("{url}/v2/vpcs?page={n}&per_page=2")).bearer_auth("t").send();
    let first: Value = page(1).await.unwrap().json().await.unwrap();
    assert_eq!(first["vpcs"].as_array().unwrap().len(), 2);
    assert_eq!(first["meta"]["total"], 5);
    assert!(first["links"]["pages"]["next"].as_str().unwrap().contains("page=2"));
    assert!(first["links"]["pages"].get("prev").is_none());
    let last: Value = page(3).await.unwrap().json().await.unwrap();
    assert_eq!(last["vpcs"].as_array().unwrap().len(), 1);
    assert!(last["links"]["pages"].get("next").is_none());
    let single: Value =
        http.get(format!("{url}/v2/vpcs?per_page=200")).bearer_auth("t").send().await.unwrap().json().await.unwrap();
    assert_eq!(single["links"], json!({}));
}

#[tokio::test]
async fn a_token_over_its_burst_gets_429_with_retry_after_and_other_tokens_do_not() {
    let (_sim, url, http) = sim(SimConfig { per_minute: 3, ..SimConfig::default() }).await;
    for _ in 0..3 {
        assert_eq!(http.get(format!("{url}/v2/vpcs")).bearer_auth("busy").send().await.unwrap().status(), 200);
    }
    let limited = http.get(format!("{url}/v2/vpcs")).bearer_auth("busy").send().await.unwrap();
    assert_eq!(limited.status(), 429);
    let wait: u64 = limited.headers()["retry-after"].to_str().unwrap().parse().unwrap();
    assert!((1..=60).contains(&wait));
    assert_eq!(limited.json::<Value>().await.unwrap()["id"], "too_many_requests");
    assert_eq!(http.get(format!("{url}/v2/vpcs")).bearer_auth("calm").send().await.unwrap().status(), 200);
}

#[tokio::test]
async fn faults_are_set_over_the_control_endpoint_and_calls_are_counted() {
    let (sim, url, http) = sim(SimConfig::default()).await;
    let fault = json!({ "endpoint": "vpcs.list", "count": 2, "fault": "status", "status": 500 });
    assert_eq!(http.post(format!("{url}/_sim/faults")).json(&fault).send().await.unwrap().status(), 204);
    for expected in [500, 500, 200] {
        assert_eq!(http.get(format!("{url}/v2/vpcs")).bearer_auth("t").send().await.unwrap().status(), expected);
    }
    let failed: Value = {
        sim.inject("vpcs.get", vps_graph::sim::Fault::Status { status: 500 }, 1);
        http.get(format!("{url}/v2/vpcs/x")).bearer_auth("t").send().await.unwrap().json().await.unwrap()
    };
    assert_eq!(failed["id"], "server_error");
    let calls: Value = http.get(format!("{url}/_sim/calls")).send().await.unwrap().json().await.unwrap();
    assert_eq!(calls["endpoints"]["vpcs.list"], 3);
}

#[tokio::test]
async fn a_fail_fault_answers_as_usual_and_the_work_fails_later() {
    let (_sim, url, http) = sim(SimConfig { action_time: Duration::from_millis(50), ..SimConfig::default() }).await;
    let post = |path: &str, body: Value| http.post(format!("{url}{path}")).bearer_auth("t").json(&body).send();
    let vpc: Value = post("/v2/vpcs", json!({ "name": "lan", "region": "nyc3", "ip_range": "10.9.0.0/24" }))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let fault = json!({ "endpoint": "nfs.create", "fault": "fail" });
    assert_eq!(http.post(format!("{url}/_sim/faults")).json(&fault).send().await.unwrap().status(), 204);
    let body = json!({ "name": "media", "size_gib": 50, "region": "nyc3", "vpc_ids": [vpc["vpc"]["id"]] });
    let made = post("/v2/nfs", body).await.unwrap();
    assert_eq!(made.status(), 201, "accepted as usual");
    let share: Value = made.json().await.unwrap();
    assert_eq!(share["share"]["status"], "CREATING");
    tokio::time::sleep(Duration::from_millis(100)).await;
    let path = format!("{url}/v2/nfs/{}", share["share"]["id"].as_str().unwrap());
    let later: Value = http.get(path).bearer_auth("t").send().await.unwrap().json().await.unwrap();
    assert_eq!(later["share"]["status"], "FAILED");

    let volume: Value = post("/v2/volumes", json!({ "name": "data", "region": "nyc3", "size_gigabytes": 10 }))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let fault = json!({ "endpoint": "volumes.actions.create", "fault": "fail", "message": "no" });
    http.post(format!("{url}/_sim/faults")).json(&fault).send().await.unwrap();
    let path = format!("/v2/volumes/{}/actions", volume["volume"]["id"].as_str().unwrap());
    let action: Value = post(&path, json!({ "type": "resize", "size_gigabytes": 20, "region": "nyc3" }))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(action["action"]["status"], "in-progress");
    tokio::time::sleep(Duration::from_millis(100)).await;
    let client = client(&url, Duration::from_secs(2));
    let id = action["action"]["id"].as_u64().unwrap();
    assert_eq!(client.action_get(id).await.unwrap(), Some(ActionStatus::Errored));
    let path = format!("{url}/v2/volumes/{}", volume["volume"]["id"].as_str().unwrap());
    let after: Value = http.get(path).bearer_auth("t").send().await.unwrap().json().await.unwrap();
    assert_eq!(after["volume"]["size_gigabytes"], 10, "an errored resize changes nothing");
}

#[tokio::test]
async fn the_sims_actions_take_their_time_on_the_apps_clock_not_the_wall_clock() {
    let clock = vps_graph::clock::Clock::manual(1_764_000_000_000);
    let config = SimConfig { action_time: Duration::from_millis(50), clock: clock.clone(), ..SimConfig::default() };
    let (sim, url, _http) = sim(config).await;
    let client = client(&url, Duration::from_secs(2));
    let id = sim.start_action("attach_volume", "volume", "nyc3");
    // Five times its time passes on the wall clock, none on the app's: still running.
    tokio::time::sleep(Duration::from_millis(250)).await;
    assert_eq!(client.action_get(id).await.unwrap(), Some(ActionStatus::InProgress));
    clock.advance(49);
    assert_eq!(client.action_get(id).await.unwrap(), Some(ActionStatus::InProgress));
    clock.advance(1);
    assert_eq!(client.action_get(id).await.unwrap(), Some(ActionStatus::Completed));
}

#[tokio::test]
async fn actions_run_for_the_configured_time_and_the_client_polls_them() {
    let (sim, url, _http) = sim(SimConfig { action_time: Duration::from_millis(300), ..SimConfig::default() }).await;
    let client = client(&url, Duration::from_secs(2));
    let id = sim.start_action("attach_volume", "volume", "nyc3");
    assert_eq!(client.action_get(id).await.unwrap(), Some(ActionStatus::InProgress));
    tokio::time::sleep(Duration::from_millis(350)).await;
    assert_eq!(client.action_get(id).await.unwrap(), Some(ActionStatus::Completed));
    assert_eq!(client.action_get(1).await.unwrap(), None);
}

#[tokio::test]
async fn the_client_maps_429_5xx_and_timeouts() {
    use vps_graph::provider::VpcCreate;
    let (sim, url, _http) = sim(SimConfig::default()).await;
    let client = client(&url, Duration::from_millis(500));
    let request = VpcCreate { name: "x", region: "nyc3", ip_range: "10.5.0.0/24", description: "d" };
    sim.inject("vpcs.create", vps_graph::sim::Fault::Status { status: 429 }, 1);
    assert!(matches!(client.vpc_create(&request).await, Err(ProviderError::RetryLater { .. })));
    sim.inject("vpcs.create", vps_graph::sim::Fault::Status { status: 503 }, 1);
    assert!(
        matches!(client.vpc_create(&request).await, Err(ProviderError::Unknown { .. })),
        "a 5xx on a create may have acted"
    );
    sim.inject("vpcs.get", vps_graph::sim::Fault::Status { status: 503 }, 1);
    assert!(matches!(client.vpc_get("v").await, Err(ProviderError::RetryLater { .. })));
    sim.inject("vpcs.create", vps_graph::sim::Fault::Stall, 1);
    assert!(matches!(client.vpc_create(&request).await, Err(ProviderError::Unknown { .. })), "no answer in time");
    sim.inject("vpcs.create", vps_graph::sim::Fault::Status { status: 422 }, 1);
    match client.vpc_create(&request).await {
        Err(ProviderError::Refused { status: 422, message, .. }) => {
            assert_eq!(message, "request payload validation failed", "the API's words kept")
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(client.vpc_create(&request).await.unwrap().name, "x");
}

/// Polls the action through the client until it completes.
async fn completed(client: &DigitalOcean, action: u64) {
    for _ in 0..100 {
        match client.action_get(action).await.unwrap() {
            Some(ActionStatus::Completed) => return,
            Some(ActionStatus::InProgress) => tokio::time::sleep(Duration::from_millis(20)).await,
            other => panic!("action {action}: {other:?}"),
        }
    }
    panic!("action {action} never completed");
}

#[tokio::test]
async fn the_client_reserves_assigns_unassigns_and_releases_both_families() {
    use vps_graph::provider::Family;
    let action_time = Duration::from_millis(200);
    let (_sim, url, http) = sim(SimConfig { action_time, ..SimConfig::default() }).await;
    let client = client(&url, Duration::from_secs(2));
    let droplet = json!({ "name": "host", "region": "nyc3", "size": "s-1vcpu-1gb", "image": "ubuntu-24-04-x64" });
    let made: Value = http
        .post(format!("{url}/v2/droplets"))
        .bearer_auth("t")
        .json(&droplet)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let droplet = made["droplet"]["id"].as_u64().unwrap().to_string();
    completed(&client, made["links"]["actions"][0]["id"].as_u64().unwrap()).await;

    for family in [Family::V4, Family::V6] {
        let reserved = client.address_reserve(family, "nyc3").await.unwrap();
        assert_eq!((reserved.region.as_str(), reserved.droplet_id.as_ref(), reserved.locked), ("nyc3", None, false));
        match family {
            Family::V4 => assert_eq!(reserved.reserved_at, None, "a reserved IPv4 has no reservation time"),
            Family::V6 => assert!(reserved.reserved_at.is_some(), "a reserved IPv6's fingerprint"),
        }
        let ip = reserved.ip.clone();
        assert_eq!(client.address_get(family, &ip).await.unwrap(), Some(reserved.clone()));

        let action = client.address_assign(family, &ip, &droplet).await.unwrap();
        let during = client.address_get(family, &ip).await.unwrap().unwrap();
        assert_eq!(during.droplet_id, None, "{family:?}: not until the action completes");
        assert_eq!(during.locked, family == Family::V4, "{family:?}: an IPv4 is locked meanwhile");
        completed(&client, action).await;
        let assigned = client.address_get(family, &ip).await.unwrap().unwrap();
        assert_eq!((assigned.droplet_id.as_deref(), assigned.locked), (Some(droplet.as_str()), false), "{family:?}");
        assert_eq!(assigned.reserved_at, reserved.reserved_at);
        if family == Family::V6 {
            match client.address_release(family, &ip).await {
                Err(ProviderError::Refused { status: 422, .. }) => {}
                other => panic!("an assigned IPv6 is not released: {other:?}"),
            }
        }

        let action = client.address_unassign(family, &ip).await.unwrap();
        completed(&client, action).await;
        assert_eq!(client.address_get(family, &ip).await.unwrap().unwrap().droplet_id, None, "{family:?}");
        match client.address_unassign(family, &ip).await {
            Err(ProviderError::Refused { status: 422, .. }) => {}
            other => panic!("{family:?}: unassigning an unassigned address: {other:?}"),
        }

        assert!(client.address_release(family, &ip).await.unwrap(), "{family:?}");
        assert_eq!(client.address_get(family, &ip).await.unwrap(), None, "{family:?}: released");
        assert!(!client.address_release(family, &ip).await.unwrap(), "{family:?}: already gone");
        match client.address_assign(family, &ip, &droplet).await {
            Err(ProviderError::Refused { status: 404, .. }) => {}
            other => panic!("{family:?}: assigning a released address: {other:?}"),
        }

        // The sim hands the same address out again, as another reservation.
        let again = client.address_reserve(family, "nyc3").await.unwrap();
        assert_eq!(again.ip, ip, "{family:?}");
        if family == Family::V6 {
            assert_ne!(again.reserved_at, reserved.reserved_at, "told apart by reserved_at");
        }
        assert!(client.address_release(family, &again.ip).await.unwrap());
    }
}

#[tokio::test]
async fn the_client_maps_faults_of_address_reserves() {
    use vps_graph::provider::Family;
    use vps_graph::sim::Fault;
    let (sim, url, _http) = sim(SimConfig::default()).await;
    let client = client(&url, Duration::from_millis(500));
    sim.inject("reserved_ips.create", Fault::Status { status: 500 }, 1);
    assert!(
        matches!(client.address_reserve(Family::V4, "nyc3").await, Err(ProviderError::Unknown { .. })),
        "a 5xx on a reserve may have reserved"
    );
    sim.inject("reserved_ips.create", Fault::Status { status: 429 }, 1);
    assert!(matches!(client.address_reserve(Family::V4, "nyc3").await, Err(ProviderError::RetryLater { .. })));
    sim.inject("reserved_ipv6.create", Fault::Status { status: 500 }, 1);
    assert!(matches!(client.address_reserve(Family::V6, "nyc3").await, Err(ProviderError::Unknown { .. })));
    sim.inject("reserved_ipv6.get", Fault::Status { status: 503 }, 1);
    assert!(matches!(
        client.address_get(Family::V6, "2604:a880:400:d2::1").await,
        Err(ProviderError::RetryLater { .. })
    ));
    assert_eq!(sim.calls("reserved_ips.create"), 2);
    assert_eq!(sim.name_calls("reserved_ips.made", "nyc3"), 0, "a fault does nothing");
    let reserved = client.address_reserve(Family::V4, "nyc3").await.unwrap();
    assert_eq!((reserved.ip.as_str(), reserved.region.as_str()), ("45.55.0.1", "nyc3"));
    assert_eq!(sim.name_calls("reserved_ips.made", "nyc3"), 1);
}

/// A quiet account that then bursts over the per-minute limit is called again once the 429's
/// `retry-after` is up, not after the hourly reset the 429 also carries.
#[tokio::test]
async fn a_burst_over_the_minute_limit_waits_its_retry_after_not_the_hourly_reset() {
    let burst_window = Duration::from_secs(1);
    let (sim, url, http) = sim(SimConfig { per_minute: 3, burst_window, ..SimConfig::default() }).await;
    let client = client(&url, Duration::from_secs(2));
    for _ in 0..3 {
        assert_eq!(client.vpc_get("v").await.unwrap(), None, "within the burst");
    }
    // The sim answers the burst as DigitalOcean does: 429, nothing remaining, when to retry, and
    // the hourly window's reset.
    let refused = http.get(format!("{url}/v2/vpcs/v")).bearer_auth("t").send().await.unwrap();
    let header = |name: &str| refused.headers()[name].to_str().unwrap().parse::<i64>().unwrap();
    assert_eq!(refused.status(), 429);
    assert_eq!(header("ratelimit-remaining"), 0);
    assert!((1..=1).contains(&header("retry-after")), "the burst window frees within a second");
    assert!(header("ratelimit-reset") > chrono::Utc::now().timestamp() + 3000, "the hourly reset");
    // The client meets the 429 itself, then waits only its retry-after.
    let sent = sim.calls("vpcs.get");
    match client.vpc_get("v").await {
        Err(ProviderError::RetryLater { after, .. }) => assert!(after <= Duration::from_secs(30), "{after:?}"),
        other => panic!("{other:?}"),
    }
    assert_eq!(sim.calls("vpcs.get"), sent + 1, "sent, and refused by the sim");
    tokio::time::sleep(burst_window + Duration::from_millis(200)).await;
    assert_eq!(client.vpc_get("v").await.unwrap(), None, "called again after retry-after, not an hour later");
    assert_eq!(sim.calls("vpcs.get"), sent + 2);
}

/// Issue 14: the sim holds each page to two items, so three of anything cross a page boundary,
/// and every list the reconcilers read through the client finds what is on its second page.
#[tokio::test]
async fn every_list_the_reconcilers_read_follows_links_pages_next() {
    use vps_graph::provider::VolumeActionKind;
    let config = SimConfig {
        page_limit: Some(2),
        action_time: Duration::from_millis(300),
        snapshot_interval: Duration::ZERO,
        ..SimConfig::default()
    };
    let (sim, url, http) = sim(config).await;
    let post = |path: String, body: Value| {
        let http = http.clone();
        let url = url.clone();
        async move {
            let answer = http.post(format!("{url}{path}")).bearer_auth("t").json(&body).send().await.unwrap();
            assert!(answer.status().is_success(), "{path}: {}", answer.status());
            answer.json::<Value>().await.unwrap_or(Value::Null)
        }
    };
    let client = client(&url, Duration::from_secs(2));
    let mut vpcs = Vec::new();
    for n in 1..=3 {
        let vpc = post(
            "/v2/vpcs".into(),
            json!({ "name": format!("lan-{n}"), "region": "nyc3", "ip_range": format!("10.{n}.0.0/24") }),
        )
        .await;
        vpcs.push(vpc["vpc"]["id"].as_str().unwrap().to_owned());
    }
    let page: Value =
        http.get(format!("{url}/v2/vpcs?per_page=200")).bearer_auth("t").send().await.unwrap().json().await.unwrap();
    assert_eq!(page["vpcs"].as_array().unwrap().len(), 2, "held to the page limit: {page}");
    assert!(page["links"]["pages"]["next"].is_string());
    assert_eq!(client.vpc_find_by_name("lan-3").await.unwrap().unwrap().id, vpcs[2]);

    for n in 1..=3 {
        post("/v2/droplets".into(), json!({ "name": format!("web-{n}"), "region": "nyc3", "size": "s-1vcpu-1gb", "image": "ubuntu-24-04-x64", "tags": ["ours"] })).await;
    }
    assert_eq!(client.droplets_tagged("ours").await.unwrap().len(), 3);

    let volume = post("/v2/volumes".into(), json!({ "name": "data", "region": "nyc3", "size_gigabytes": 10 })).await;
    let volume = volume["volume"]["id"].as_str().unwrap().to_owned();
    for size in [11, 12, 13] {
        if size == 13 {
            assert_eq!(client.volume_action_running(&volume, VolumeActionKind::Resize).await.unwrap(), None);
        }
        let action = post(
            format!("/v2/volumes/{volume}/actions"),
            json!({ "type": "resize", "size_gigabytes": size, "region": "nyc3" }),
        )
        .await;
        if size < 13 {
            tokio::time::sleep(Duration::from_millis(350)).await;
        } else {
            let running = client.volume_action_running(&volume, VolumeActionKind::Resize).await.unwrap();
            assert_eq!(running, action["action"]["id"].as_u64(), "the third action, on the second page");
        }
    }
    for name in ["a", "b", "c"] {
        post(format!("/v2/volumes/{volume}/snapshots"), json!({ "name": name })).await;
    }
    assert!(client.volume_snapshot_find(&volume, "c").await.unwrap().is_some());
    assert_eq!(client.volume_snapshot_find("no-such-volume", "c").await.unwrap(), None, "a gone volume has none");

    let mut shares = Vec::new();
    for n in 1..=3 {
        let share = post(
            "/v2/nfs".into(),
            json!({ "name": format!("media-{n}"), "size_gib": 50, "region": "nyc3", "vpc_ids": [vpcs[0]] }),
        )
        .await;
        shares.push(share["share"]["id"].as_str().unwrap().to_owned());
    }
    assert_eq!(client.share_find_by_name("media-3", "nyc3").await.unwrap().unwrap().id, shares[2]);
    tokio::time::sleep(Duration::from_millis(350)).await;
    for name in ["d", "e", "f"] {
        post(
            format!("/v2/nfs/{}/actions", shares[0]),
            json!({ "type": "snapshot", "region": "", "params": { "name": name } }),
        )
        .await;
    }
    assert!(client.share_snapshot_find(&shares[0], "f", "nyc3").await.unwrap().is_some());
    let listed = sim.calls("nfs.snapshots.list");
    assert!(listed >= 2, "read page after page: {listed} calls");
}
