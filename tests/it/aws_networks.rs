//! AWS networks through the one flow, end to end over HTTP against the sim's EC2: a VPC with a
//! subnet per zone made and deleted (subnets first), a lost create answer, throttling, drift, an
//! adopted VPC only read, and the call rules of AWS networks.
use crate::common;

use std::sync::Arc;
use std::time::Duration;

use common::Backend;
use serde_json::{Value, json};
use vps_graph::metrics::Metrics;
use vps_graph::provider::aws::{Aws, Credentials, Settings};
use vps_graph::provider::{AWS_OWNER_TAG, Tag, tag_value};
use vps_graph::sim::Fault;

const REGION: &str = "us-east-1";
/// Every EC2 call that changes something.
const WRITES: [&str; 5] =
    ["ec2.CreateVpc", "ec2.ModifyVpcAttribute", "ec2.CreateSubnet", "ec2.DeleteSubnet", "ec2.DeleteVpc"];
const CREATE: &str = "mutation($i: NetworkCreateInput!) { networkCreate(input: $i) { id state } }";
const ADOPT: &str = "mutation($i: NetworkAdoptInput!) { networkAdopt(input: $i) { id state adopted } }";
const GET: &str = "query($t: String!, $n: String!) { network(tenantId: $t, networkId: $n) { id state message providerId ipRange region adopted subnets { id zone region ipRange state desiredState providerId message } } }";
const DELETE: &str = "mutation($n: String!) { networkDelete(input: { tenantId: \"acme\", networkId: $n }) { state } }";

struct Setup {
    app: common::TestApp,
    /// An EC2 client of the sim, to look at (and change) what the reconciler made.
    ec2: Aws,
}

impl std::ops::Deref for Setup {
    type Target = common::TestApp;
    fn deref(&self) -> &common::TestApp {
        &self.app
    }
}

/// A tenant `acme` with a pool on a sim AWS account (us-east-1, zones a and b), a token with
/// compute:*, on a manual clock (`common::until` moves it).
async fn setup(backend: Backend) -> Setup {
    let app = common::TestApp::driven(backend).aws(&["us-east-1a", "us-east-1b"]).own_account().build().await;
    let url = app.server.app.services.sim_url.clone().expect("the in-process sim");
    let settings =
        Settings { timeout: Duration::from_secs(2), max_attempts: 3, initial_backoff: Duration::from_millis(5) };
    let ec2 =
        Aws::new(Some(url), Ok(Credentials::parse("AKIDTEST:secret").unwrap()), settings, Arc::new(Metrics::default()));
    Setup { app, ec2 }
}

fn two_zones() -> Value {
    json!([{ "zone": "us-east-1a", "ipRange": "10.20.1.0/24" }, { "zone": "us-east-1b", "ipRange": "10.20.2.0/24" }])
}

impl Setup {
    fn sim(&self) -> &vps_graph::sim::Sim {
        self.server.app.sim.as_ref().expect("in-process sim")
    }

    fn deployment(&self) -> &str {
        &self.server.app.services.deployment
    }

    fn create_input(&self, name: &str, ip_range: Option<&str>, subnets: Value) -> Value {
        json!({ "i": { "tenantId": "acme", "poolId": self.pool, "name": name, "ipRange": ip_range, "subnets": subnets, "idempotencyKey": format!("{name}-key") } })
    }

    async fn create(&self, name: &str) -> String {
        let data =
            self.server.ok(Some(&self.token), CREATE, self.create_input(name, Some("10.20.0.0/16"), two_zones())).await;
        assert_eq!(data["networkCreate"]["state"], "PENDING");
        data["networkCreate"]["id"].as_str().unwrap().to_owned()
    }

    async fn adopt(&self, name: &str, vpc_id: &str) -> String {
        let input = json!({ "i": { "tenantId": "acme", "poolId": self.pool, "name": name, "vpcId": vpc_id, "idempotencyKey": format!("{name}-key") } });
        let data = self.server.ok(Some(&self.token), ADOPT, input).await;
        assert_eq!(data["networkAdopt"]["adopted"], true);
        data["networkAdopt"]["id"].as_str().unwrap().to_owned()
    }

    async fn delete(&self, id: &str) {
        self.server.ok(Some(&self.token), DELETE, json!({ "n": id })).await;
    }

    async fn get(&self, id: &str) -> Value {
        self.server.ok(Some(&self.token), GET, json!({ "t": "acme", "n": id })).await["network"].clone()
    }

    async fn until_state(&self, id: &str, state: &str) -> Value {
        common::until(self, state, || self.get(id), |n| n["state"] == state).await
    }

    /// The VPCs at the sim under the network's name.
    async fn vpcs_of(&self, network_id: &str) -> Vec<vps_graph::provider::AwsVpc> {
        self.ec2.vpcs_find_by_name(REGION, &format!("bc-{}", network_id.to_lowercase())).await.unwrap()
    }
}

fn ours(tags: &[Tag], deployment: &str, name: &str) -> bool {
    tag_value(tags, "Name") == Some(name) && tag_value(tags, AWS_OWNER_TAG) == Some(deployment)
}

db_test!(
    a_network_is_one_vpc_with_a_subnet_per_zone_and_its_delete_takes_subnets_then_the_vpc,
    |backend: Backend| async move {
        let s = setup(backend).await;
        let id = s.create("web").await;
        let ready = s.until_state(&id, "READY").await;
        let vpc_id = ready["providerId"].as_str().expect("the VPC's id").to_owned();
        assert_eq!((ready["ipRange"].as_str(), ready["region"].as_str()), (Some("10.20.0.0/16"), Some(REGION)));
        let zones: Vec<&str> =
            ready["subnets"].as_array().unwrap().iter().map(|s| s["zone"].as_str().unwrap()).collect();
        assert_eq!(zones, ["us-east-1a", "us-east-1b"]);
        assert!(
            ready["subnets"].as_array().unwrap().iter().all(|s| s["state"] == "READY" && s["providerId"].is_string())
        );

        let vpc = s.ec2.vpc_get(REGION, &vpc_id).await.unwrap().expect("the VPC at the sim");
        assert!(ours(&vpc.tags, s.deployment(), &format!("bc-{}", id.to_lowercase())), "{:?}", vpc.tags);
        assert_eq!(vpc.cidr_block, "10.20.0.0/16");
        let at_sim = s.ec2.subnets_of_vpc(REGION, &vpc_id).await.unwrap();
        assert_eq!(at_sim.len(), 2);
        for row in ready["subnets"].as_array().unwrap() {
            let made = at_sim.iter().find(|x| Some(x.id.as_str()) == row["providerId"].as_str()).expect("made");
            let name = vps_graph::service::networks::provider_name(row["id"].as_str().unwrap());
            assert!(ours(&made.tags, s.deployment(), &name), "{:?}", made.tags);
            assert_eq!(
                (Some(made.availability_zone.as_str()), Some(made.cidr_block.as_str())),
                (row["zone"].as_str(), row["ipRange"].as_str())
            );
        }

        s.delete(&id).await;
        let deleted = s.until_state(&id, "DELETED").await;
        assert!(deleted["subnets"].as_array().unwrap().iter().all(|s| s["state"] == "DELETED"));
        assert_eq!(s.ec2.vpc_get(REGION, &vpc_id).await.unwrap(), None, "the VPC is gone");
        assert!(s.ec2.subnets_of_vpc(REGION, &vpc_id).await.unwrap().is_empty(), "its subnets too");
        assert_eq!(s.sim().calls("ec2.DeleteSubnet"), 2);
        assert_eq!(s.sim().calls("ec2.DeleteVpc"), 1, "subnets first: the VPC's delete was never refused");
        assert!(vps_graph::store::queue::item(&s.server.app.services.db, "vps.networks", &id).await.unwrap().is_none());
    }
);

db_test!(a_lost_vpc_create_answer_is_found_by_name_and_never_made_twice, |backend: Backend| async move {
    let s = setup(backend).await;
    s.sim().inject("ec2.CreateVpc", Fault::Drop, 1);
    let id = s.create("lost").await;
    // The clock stands still while the client waits out the answer (2 s), so the lease holds and
    // the run that sent the create is the one that writes what it learned.
    for _ in 0..100 {
        if s.get(&id).await["message"].as_str().is_some_and(|m| m.contains("lost")) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let waiting = s.get(&id).await;
    assert!(waiting["message"].as_str().is_some_and(|m| m.contains("lost")), "{waiting}");
    assert_eq!(waiting["state"], "PENDING");
    let ready = s.until_state(&id, "READY").await;
    assert_eq!(s.sim().calls("ec2.CreateVpc"), 1, "the create was sent once");
    let vpcs = s.vpcs_of(&id).await;
    assert_eq!(vpcs.len(), 1, "exactly one VPC exists");
    assert_eq!(ready["providerId"].as_str(), Some(vpcs[0].id.as_str()));
});

db_test!(throttled_subnet_creates_still_converge, |backend: Backend| async move {
    let s = setup(backend).await;
    s.sim().inject("ec2.CreateSubnet", Fault::Status { status: 429 }, 5);
    let id = s.create("limited").await;
    let ready = s.until_state(&id, "READY").await;
    let vpc_id = ready["providerId"].as_str().unwrap();
    assert_eq!(s.ec2.subnets_of_vpc(REGION, vpc_id).await.unwrap().len(), 2);
    assert_eq!(s.vpcs_of(&id).await.len(), 1);
    assert_eq!(s.sim().calls("ec2.CreateSubnet"), 7, "five throttled, two made");
});

db_test!(a_vpc_deleted_outside_is_found_at_the_drift_read_and_never_made_again, |backend: Backend| async move {
    let s = setup(backend).await;
    let id = s.create("drifted").await;
    let ready = s.until_state(&id, "READY").await;
    let vpc_id = ready["providerId"].as_str().unwrap().to_owned();
    // The run that wrote READY may look once more right after: let it settle first, so no read
    // falls between the subnets' deletes and the VPC's below (it would see only a subnet gone).
    common::idle(&s.server, &s.clock, &id).await;
    for subnet in s.ec2.subnets_of_vpc(REGION, &vpc_id).await.unwrap() {
        s.ec2.subnet_delete(REGION, &subnet.id).await.unwrap();
    }
    s.ec2.vpc_delete(REGION, &vpc_id).await.unwrap();
    s.clock.advance(vps_graph::reconcile::DRIFT_MS);
    let failed = s.until_state(&id, "ERROR").await;
    assert!(failed["message"].as_str().is_some_and(|m| m.contains(&vpc_id)), "{failed}");
    for _ in 0..2 {
        s.clock.advance(vps_graph::reconcile::DRIFT_MS);
        common::idle(&s.server, &s.clock, &id).await;
    }
    assert_eq!(s.sim().calls("ec2.CreateVpc"), 1, "never made again");
    assert!(s.vpcs_of(&id).await.is_empty());
    s.delete(&id).await;
    s.until_state(&id, "DELETED").await;
});

db_test!(
    an_adopted_vpc_is_recorded_with_its_subnets_and_left_at_the_provider_when_deleted,
    |backend: Backend| async move {
        let s = setup(backend).await;
        let theirs = [Tag::new("Name", "legacy")];
        let vpc = s.ec2.vpc_create(REGION, "172.16.0.0/16", &theirs).await.unwrap();
        let a = s.ec2.subnet_create(REGION, &vpc.id, "us-east-1a", "172.16.1.0/24", &theirs).await.unwrap();
        let b = s.ec2.subnet_create(REGION, &vpc.id, "us-east-1b", "172.16.2.0/24", &[]).await.unwrap();
        let before: Vec<u64> = WRITES.iter().map(|w| s.sim().calls(w)).collect();
        let id = s.adopt("legacy", &vpc.id).await;
        let ready = s.until_state(&id, "READY").await;
        assert_eq!(
            (ready["providerId"].as_str(), ready["ipRange"].as_str()),
            (Some(vpc.id.as_str()), Some("172.16.0.0/16"))
        );
        let mut subnets: Vec<(String, String, String)> = ready["subnets"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| {
                assert_eq!(s["state"], "READY");
                let text = |k: &str| s[k].as_str().unwrap().to_owned();
                (text("providerId"), text("zone"), text("ipRange"))
            })
            .collect();
        subnets.sort();
        let mut expected = vec![
            (a.id.clone(), "us-east-1a".to_owned(), "172.16.1.0/24".to_owned()),
            (b.id.clone(), "us-east-1b".to_owned(), "172.16.2.0/24".to_owned()),
        ];
        expected.sort();
        assert_eq!(subnets, expected);

        s.delete(&id).await;
        s.until_state(&id, "DELETED").await;
        assert!(s.ec2.vpc_get(REGION, &vpc.id).await.unwrap().is_some(), "the VPC is still there");
        assert_eq!(s.ec2.subnets_of_vpc(REGION, &vpc.id).await.unwrap().len(), 2, "with its subnets");
        let after: Vec<u64> = WRITES.iter().map(|w| s.sim().calls(w)).collect();
        assert_eq!(after, before, "nothing was made, changed or deleted at EC2 for it");
    }
);

db_test!(adopting_a_vpc_that_does_not_exist_is_an_error_naming_it, |backend: Backend| async move {
    let s = setup(backend).await;
    let id = s.adopt("ghost", "vpc-0123456789abcdef0").await;
    let failed = s.until_state(&id, "ERROR").await;
    assert!(failed["message"].as_str().is_some_and(|m| m.contains("vpc-0123456789abcdef0")), "{failed}");
    s.delete(&id).await;
    s.until_state(&id, "DELETED").await;
});

db_test!(a_vpc_this_deployment_made_is_never_adopted, |backend: Backend| async move {
    let s = setup(backend).await;
    // One of ours, recorded by a network: the VPC is taken.
    let id = s.create("made").await;
    let vpc = s.until_state(&id, "READY").await["providerId"].as_str().unwrap().to_owned();
    let input = json!({ "i": { "tenantId": "acme", "poolId": s.pool, "name": "again", "vpcId": vpc, "idempotencyKey": "again" } });
    let body = s.server.gql(Some(&s.token), ADOPT, input).await;
    assert_eq!(body["errors"][0]["extensions"]["code"], "CONFLICT", "{body}");
    // One of ours that no network records (a lost create's, say): adopting it is an error.
    let tags = vps_graph::provider::aws_tags("bc-net_lost", s.deployment());
    let stray = s.ec2.vpc_create(REGION, "10.99.0.0/16", &tags).await.unwrap();
    let adopted = s.adopt("stray", &stray.id).await;
    let failed = s.until_state(&adopted, "ERROR").await;
    assert!(failed["message"].as_str().is_some_and(|m| m.contains("made by vps-graph")), "{failed}");
    assert!(failed["subnets"].as_array().unwrap().is_empty(), "nothing of it recorded");
});

db_test!(the_rules_of_aws_networks, |backend: Backend| async move {
    let s = setup(backend).await;
    let vpc = Some("10.20.0.0/16");
    let cases = [
        ("zone required", s.create_input("r1", vpc, json!([{ "ipRange": "10.20.1.0/24" }]))),
        ("a zone of the account", s.create_input("r2", vpc, json!([{ "zone": "us-east-1c", "ipRange": "10.20.1.0/24" }]))),
        ("ipRange required", s.create_input("r3", None, json!([{ "zone": "us-east-1a", "ipRange": "10.20.1.0/24" }]))),
        ("inside the VPC's block", s.create_input("r4", vpc, json!([{ "zone": "us-east-1a", "ipRange": "10.30.1.0/24" }]))),
        (
            "one subnet per zone",
            s.create_input(
                "r5",
                vpc,
                json!([{ "zone": "us-east-1a", "ipRange": "10.20.1.0/24" }, { "zone": "us-east-1a", "ipRange": "10.20.2.0/24" }]),
            ),
        ),
    ];
    for (rule, input) in cases {
        assert_eq!(s.server.code(Some(&s.token), CREATE, input).await, "INVALID_INPUT", "{rule}");
    }
    let overlapping = json!([{ "zone": "us-east-1a", "ipRange": "10.20.0.0/20" }, { "zone": "us-east-1b", "ipRange": "10.20.1.0/24" }]);
    let body = s.server.gql(Some(&s.token), CREATE, s.create_input("r6", vpc, overlapping)).await;
    assert_eq!(body["errors"][0]["extensions"]["details"]["field"], "subnets.ipRange", "no overlap: {body}");

    // One VPC is in one region: zones of two regions are two networks.
    let account = s
        .server
        .ok(
            Some(common::ADMIN),
            "mutation($i: ProviderAccountCreateInput!) { providerAccountCreate(input: $i) { id } }",
            json!({ "i": { "name": "two", "kind": "AWS", "sim": true, "tenantId": "acme", "regions": ["us-east-1", "us-west-2"], "zones": ["us-east-1a", "us-west-2a"] } }),
        )
        .await["providerAccountCreate"]["id"]
        .clone();
    let pool = s
        .server
        .ok(
            Some(common::ADMIN),
            "mutation($i: PoolCreateInput!) { poolCreate(input: $i) { id } }",
            json!({ "i": { "name": "two", "providerAccountId": account, "billing": "BYO" } }),
        )
        .await["poolCreate"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    s.server.offer(&pool, "acme", json!([])).await;
    let split = json!({ "i": { "tenantId": "acme", "poolId": pool, "name": "split", "ipRange": "10.20.0.0/16", "idempotencyKey": "split",
        "subnets": [{ "zone": "us-east-1a", "ipRange": "10.20.1.0/24" }, { "zone": "us-west-2a", "ipRange": "10.20.2.0/24" }] } });
    let body = s.server.gql(Some(&s.token), CREATE, split).await;
    assert_eq!(body["errors"][0]["extensions"]["code"], "INVALID_INPUT", "{body}");
    assert_eq!(body["errors"][0]["extensions"]["details"]["field"], "subnets.zone", "{body}");

    let digitalocean = s.server.sim_pool("do", &["nyc3"], None).await;
    s.server.offer(&digitalocean, "acme", json!([])).await;
    let on_do = json!({ "i": { "tenantId": "acme", "poolId": digitalocean, "name": "d1", "ipRange": "10.20.0.0/16", "subnets": [{ "region": "nyc3", "ipRange": "10.20.1.0/24" }], "idempotencyKey": "d1" } });
    assert_eq!(
        s.server.code(Some(&s.token), CREATE, on_do).await,
        "INVALID_INPUT",
        "ipRange is refused on DigitalOcean"
    );
    let adopt = json!({ "i": { "tenantId": "acme", "poolId": digitalocean, "name": "d2", "vpcId": "vpc-0123456789abcdef0", "idempotencyKey": "d2" } });
    assert_eq!(s.server.code(Some(&s.token), ADOPT, adopt).await, "UNSUPPORTED");
});
