//! Firewall rules of tenant networks, end to end over HTTP: the calls' rules (each test names the
//! seed sentence it keeps), then the `vps.networks` reconciler applying them at the simulated
//! DigitalOcean (a cloud firewall per rule, tags on the machines) and AWS (a security group per
//! rule, groups on the machines), with lost answers, refusals, rate limits, foreign firewalls
//! under our names, and changes and deletes made outside. The clock is driven by the tests.
use crate::common;

use std::collections::BTreeSet;
use std::sync::Arc;

use common::{Backend, TestApp};
use serde_json::{Value, json};
use vps_graph::provider::{AccountRef, CloudFirewallRule, CloudFirewallSpec, Provider, RuleSource};
use vps_graph::sim::{Fault, Sim};
use vps_graph::store::state::ProviderKind;
use vps_graph::views::firewall_rules::targets;

const CREATE: &str = "mutation($i: FirewallRuleCreateInput!) { firewallRuleCreate(input: $i) { id name state providerName direction protocol fromPort toPort peers { addresses instanceIds } appliesTo } }";
const GET: &str = "query($n: String!, $r: String!) { firewallRule(tenantId: \"acme\", networkId: $n, firewallRuleId: $r) { id state message providerId providerName desiredState } }";
const DELETE: &str = "mutation($n: String!, $r: String!) { firewallRuleDelete(input: { tenantId: \"acme\", networkId: $n, firewallRuleId: $r }) { state desiredState } }";

const AWS_REGION: &str = "us-east-1";
const AWS_ZONES: [&str; 1] = ["us-east-1a"];

struct Setup {
    app: TestApp,
    network: String,
}

impl std::ops::Deref for Setup {
    type Target = TestApp;
    fn deref(&self) -> &TestApp {
        &self.app
    }
}

/// A DigitalOcean network `web` (one subnet in nyc3); READY unless no reconciler runs.
async fn digitalocean(backend: Backend, workers: Option<usize>) -> Setup {
    let mut builder = TestApp::driven(backend);
    if let Some(workers) = workers {
        builder = builder.workers(workers);
    }
    let app = builder.build().await;
    let mut s = Setup { app, network: String::new() };
    s.network = s.make_network("web", json!([{ "region": "nyc3", "ipRange": "10.30.0.0/24" }]), None).await;
    if workers != Some(0) {
        s.until_network_ready().await;
    }
    s
}

/// An AWS network (one subnet in us-east-1a), READY.
async fn aws(backend: Backend) -> Setup {
    let app = TestApp::driven(backend).aws(&AWS_ZONES).build().await;
    let mut s = Setup { app, network: String::new() };
    let subnets = json!([{ "zone": AWS_ZONES[0], "ipRange": "10.40.1.0/24" }]);
    s.network = s.make_network("web", subnets, Some("10.40.0.0/16")).await;
    s.until_network_ready().await;
    s
}

fn rule_input(network: &str, name: &str, extra: Value) -> Value {
    let mut input = json!({
        "tenantId": "acme", "networkId": network, "name": name, "direction": "INBOUND", "protocol": "TCP",
        "fromPort": 22, "peers": { "addresses": ["203.0.113.7"] }, "idempotencyKey": name,
    });
    for (k, v) in extra.as_object().unwrap() {
        input[k] = v.clone();
    }
    input
}

impl Setup {
    fn sim(&self) -> &Sim {
        self.server.app.sim.as_ref().expect("in-process sim")
    }

    /// The account's client, the one the reconciler uses.
    fn provider(&self) -> Arc<Provider> {
        let kind =
            if self.sim().calls("ec2.DescribeVpcs") > 0 { ProviderKind::Aws } else { ProviderKind::Digitalocean };
        let account = AccountRef { id: &self.account, kind, api_url: "", credential_ref: "", sim: true };
        self.server.app.providers.for_account(&account)
    }

    async fn gql(&self, query: &str, variables: Value) -> Value {
        self.server.gql(Some(&self.token), query, variables).await
    }

    async fn make_network(&self, name: &str, subnets: Value, ip_range: Option<&str>) -> String {
        let mut input = json!({ "tenantId": "acme", "poolId": self.pool, "name": name, "subnets": subnets, "idempotencyKey": name });
        if let Some(range) = ip_range {
            input["ipRange"] = json!(range);
        }
        let create = "mutation($i: NetworkCreateInput!) { networkCreate(input: $i) { id } }";
        let made = self.server.ok(Some(&self.token), create, json!({ "i": input })).await;
        made["networkCreate"]["id"].as_str().unwrap().to_owned()
    }

    async fn network_view(&self) -> Value {
        let get = "query($n: String!) { network(tenantId: \"acme\", networkId: $n) { state providerId } }";
        self.server.ok(Some(&self.token), get, json!({ "n": self.network })).await["network"].clone()
    }

    async fn until_network_ready(&self) -> Value {
        common::until(self, "network ready", || self.network_view(), |n| n["state"] == "READY").await
    }

    async fn instance(&self, name: &str) -> (String, String) {
        let (region, zone) = if self.network_view().await["providerId"].is_string() {
            (AWS_REGION, Some(AWS_ZONES[0]))
        } else {
            ("nyc3", None)
        };
        let mut input = json!({ "tenantId": "acme", "poolId": self.pool, "name": name, "region": region, "size": "s-1vcpu-1gb", "image": "ubuntu-24-04-x64", "networkId": self.network, "idempotencyKey": name });
        if let Some(zone) = zone {
            input["zone"] = json!(zone);
            input["size"] = json!("t3.micro");
            input["image"] = json!("ami-0123456789abcdef0");
        }
        let made = self
            .gql("mutation($i: InstanceCreateInput!) { instanceCreate(input: $i) { id } }", json!({ "i": input }))
            .await;
        let id = made["data"]["instanceCreate"]["id"].as_str().unwrap_or_else(|| panic!("{made}")).to_owned();
        let query = "query($i: String!) { instance(tenantId: \"acme\", instanceId: $i) { state providerId } }";
        let read = || async { self.gql(query, json!({ "i": id })).await["data"]["instance"].clone() };
        let ready = common::until(self, "instance ready", read, |i| i["state"] == "READY").await;
        (id, ready["providerId"].as_str().unwrap().to_owned())
    }

    async fn create(&self, name: &str, extra: Value) -> Value {
        let body = self.gql(CREATE, json!({ "i": rule_input(&self.network, name, extra) })).await;
        body["data"]["firewallRuleCreate"].clone()
    }

    /// The error code and `extensions` of a create that is refused.
    async fn refused(&self, name: &str, extra: Value) -> (String, Value) {
        let body = self.gql(CREATE, json!({ "i": rule_input(&self.network, name, extra) })).await;
        let code = common::first_code(&body).unwrap_or_else(|| panic!("not refused: {body}"));
        (code, body["errors"][0]["extensions"]["details"].clone())
    }

    async fn rule(&self, id: &str) -> Value {
        self.gql(GET, json!({ "n": self.network, "r": id })).await["data"]["firewallRule"].clone()
    }

    async fn rule_count(&self) -> usize {
        let list = "query($n: String!) { firewallRules(tenantId: \"acme\", networkId: $n) { id } }";
        self.gql(list, json!({ "n": self.network })).await["data"]["firewallRules"].as_array().unwrap().len()
    }

    async fn delete(&self, id: &str) -> Value {
        self.gql(DELETE, json!({ "n": self.network, "r": id })).await["data"]["firewallRuleDelete"].clone()
    }

    async fn until_rule(&self, id: &str, what: &str, check: impl Fn(&Value) -> bool) -> Value {
        common::until(self, what, || self.rule(id), check).await
    }

    /// The rule events of the feed, once `check` holds for them (the feed shows a PostgreSQL
    /// commit a moment later).
    async fn events_until(&self, what: &str, check: impl Fn(&[String]) -> bool) -> Vec<String> {
        for _ in 0..200 {
            let types = self.event_types().await;
            if check(&types) {
                return types;
            }
            tokio::time::sleep(std::time::Duration::from_millis(25)).await;
        }
        panic!("the feed never showed {what}: {:?}", self.event_types().await);
    }

    async fn event_types(&self) -> Vec<String> {
        let query = "{ events(tenantId: \"acme\", first: 500) { edges { node { type subject data } } } }";
        let body = self.gql(query, json!({})).await;
        let edges = body["data"]["events"]["edges"].as_array().unwrap().clone();
        edges
            .iter()
            .map(|e| &e["node"])
            .filter(|n| n["type"].as_str().unwrap().starts_with("network.firewallRule."))
            .map(|n| {
                assert_eq!(n["subject"], self.network, "published on the network");
                assert_eq!(n["data"]["networkId"], self.network);
                format!("{} {}", n["type"].as_str().unwrap(), n["data"]["firewallRuleId"].as_str().unwrap())
            })
            .collect()
    }

    /// The account's firewalls named `name` (DigitalOcean).
    async fn firewalls_named(&self, name: &str) -> Vec<vps_graph::provider::CloudFirewall> {
        let all = self.provider().digitalocean().unwrap().clone().firewalls().await.unwrap();
        all.into_iter().filter(|f| f.name == name).collect()
    }

    fn droplet_tags(&self, droplet: &str) -> BTreeSet<String> {
        self.sim().do_droplet_tags(droplet.parse().unwrap()).unwrap().into_iter().collect()
    }

    /// The VPC's groups named `name` (AWS).
    async fn groups_named(&self, name: &str) -> Vec<vps_graph::provider::SecurityGroup> {
        let vpc = self.network_view().await["providerId"].as_str().unwrap().to_owned();
        let groups = self.provider().aws().unwrap().clone();
        let all = groups.security_groups_of_vpc(AWS_REGION, &vpc).await.unwrap();
        all.into_iter().filter(|g| g.name == name).collect()
    }

    async fn machine_groups(&self, machine: &str) -> BTreeSet<String> {
        let api = self.provider().aws().unwrap().clone();
        let m = api.instance_get(AWS_REGION, machine).await.unwrap().unwrap();
        m.security_group_ids.into_iter().collect()
    }

    /// A first rule made READY, so that the network's open egress firewall or group is made and
    /// a fault injected next meets the create of the rule under test.
    async fn with_egress(&self) {
        let first = id_of(&self.create("first", json!({ "fromPort": 80 })).await);
        self.until_rule(&first, "ready", |r| r["state"] == "READY").await;
    }

    /// Moves past the hourly drift read of the network.
    async fn past_drift(&self) {
        self.clock.advance(61 * 60_000);
    }
}

fn id_of(rule: &Value) -> String {
    rule["id"].as_str().unwrap_or_else(|| panic!("no rule: {rule}")).to_owned()
}

// --- The calls ---

db_test!(rule_reading_takes_networks_read_and_changing_takes_networks_update, |backend: Backend| async move {
    let s = digitalocean(backend, Some(0)).await;
    let made = s.create("ssh", json!({})).await;
    let reader = s.server.token(Some("acme"), &[("compute:networks:read", "tenant/acme")]).await;
    let input = json!({ "i": rule_input(&s.network, "web", json!({})) });
    assert_eq!(s.server.code(Some(&reader), CREATE, input).await, "ACCESS_DENIED");
    let read = s.server.gql(Some(&reader), GET, json!({ "n": s.network, "r": made["id"] })).await;
    assert_eq!(read["data"]["firewallRule"]["id"], made["id"], "{read}");
    let deleting = s.server.gql(Some(&reader), DELETE, json!({ "n": s.network, "r": made["id"] })).await;
    assert_eq!(common::first_code(&deleting).as_deref(), Some("ACCESS_DENIED"));
    s.server.tenant("other").await;
    let other = s.server.token(Some("other"), &[("compute:*", "tenant/other")]).await;
    let foreign = s.server.gql(Some(&other), GET, json!({ "n": s.network, "r": made["id"] })).await;
    assert!(foreign["data"].is_null() || foreign["data"]["firewallRule"].is_null(), "{foreign}");
    let code = common::first_code(&foreign).unwrap_or_default();
    assert!(code == "NOT_FOUND" || code == "ACCESS_DENIED", "another tenant is refused: {foreign}");
    // Decided on the network: a grant on this network alone changes its rules.
    let scope = format!("network/{}", s.network);
    let on_network = s.server.token(Some("acme"), &[("compute:networks:update", &scope)]).await;
    let input = json!({ "i": rule_input(&s.network, "web", json!({ "idempotencyKey": "scoped" })) });
    let made = s.server.gql(Some(&on_network), CREATE, input).await;
    assert_eq!(made["data"]["firewallRuleCreate"]["state"], "PENDING", "{made}");
});

db_test!(a_rule_is_recorded_pending_and_named_bc_and_its_id, |backend: Backend| async move {
    let s = digitalocean(backend, Some(0)).await;
    let made = s.create("ssh", json!({ "toPort": 23 })).await;
    let id = id_of(&made);
    assert!(id.starts_with("fwr_"), "{id}");
    assert_eq!(made["state"], "PENDING");
    // DigitalOcean names take letters, digits, `.` and `-`: the id's `_` is written `-`.
    assert_eq!(made["providerName"], format!("bc-{}", id.replace('_', "-")));
    assert_eq!((made["fromPort"].as_i64(), made["toPort"].as_i64()), (Some(22), Some(23)));
    assert_eq!(made["peers"]["addresses"], json!(["203.0.113.7/32"]), "an address alone is its /32");
    let created = vec![format!("network.firewallRule.created {id}")];
    s.events_until("the created event", |types| types == created).await;
});

db_test!(a_network_has_at_most_100_rules_that_are_not_deleted, |backend: Backend| async move {
    let s = digitalocean(backend, Some(0)).await;
    let mut first = String::new();
    for n in 0..100 {
        let made = s.create(&format!("r{n}"), json!({ "fromPort": 1000 + n })).await;
        if n == 0 {
            first = id_of(&made);
        }
    }
    let (code, extensions) = s.refused("r100", json!({})).await;
    assert_eq!(code, "QUOTA_EXCEEDED");
    assert_eq!((extensions["limit"].as_i64(), extensions["used"].as_i64()), (Some(100), Some(100)));
    assert_eq!(s.delete(&first).await["state"], "DELETING");
    assert_eq!(s.refused("r100", json!({})).await.0, "QUOTA_EXCEEDED", "a rule being deleted is not deleted yet");
    assert_eq!(s.rule_count().await, 100);
});

db_test!(a_rule_name_is_unique_among_the_networks_rules_not_deleted, |backend: Backend| async move {
    let s = digitalocean(backend, Some(0)).await;
    s.create("ssh", json!({})).await;
    let (code, _) = s.refused("ssh", json!({ "idempotencyKey": "again", "fromPort": 2222 })).await;
    assert_eq!(code, "CONFLICT");
});

db_test!(a_rule_that_denies_is_unsupported_and_nothing_is_recorded, |backend: Backend| async move {
    let s = digitalocean(backend, Some(0)).await;
    let (code, extensions) = s.refused("block", json!({ "action": "DENY" })).await;
    assert_eq!(code, "UNSUPPORTED");
    assert_eq!(extensions["reason"], "deny");
    assert_eq!(s.rule_count().await, 0);
    assert!(s.event_types().await.is_empty());
});

db_test!(bad_ports_and_peers_are_invalid_input_naming_their_field, |backend: Backend| async move {
    let s = digitalocean(backend, Some(0)).await;
    let many: Vec<String> = (0..51).map(|n| format!("198.51.100.{n}")).collect();
    let cases = [
        (json!({ "fromPort": 0 }), "fromPort"),
        (json!({ "fromPort": 65536 }), "fromPort"),
        (json!({ "fromPort": 80, "toPort": 79 }), "toPort"),
        (json!({ "fromPort": null, "toPort": 80 }), "toPort"),
        (json!({ "protocol": "ICMP" }), "fromPort"),
        (json!({ "peers": { "addresses": ["10.0.0.1/24"] } }), "peers.addresses[0]"),
        (json!({ "peers": { "addresses": ["203.0.113.7", "not an address"] } }), "peers.addresses[1]"),
        (json!({ "peers": { "addresses": many } }), "peers"),
        (json!({ "peers": {} }), "peers"),
    ];
    for (extra, field) in cases {
        let (code, extensions) = s.refused("bad", extra.clone()).await;
        assert_eq!(code, "INVALID_INPUT", "{extra}");
        assert_eq!(extensions["field"], field, "{extra}: {extensions}");
    }
    assert_eq!(s.rule_count().await, 0, "nothing is recorded");
});

db_test!(an_instance_a_rule_names_must_be_the_callers_and_on_the_network, |backend: Backend| async move {
    let s = digitalocean(backend, None).await;
    let (mine, _) = s.instance("app").await;
    // An instance of another network of the tenant.
    let other_network = s.make_network("other", json!([{ "region": "nyc3", "ipRange": "10.31.0.0/24" }]), None).await;
    let input = json!({ "tenantId": "acme", "poolId": s.pool, "name": "elsewhere", "region": "nyc3", "size": "s-1vcpu-1gb", "image": "ubuntu-24-04-x64", "idempotencyKey": "elsewhere" });
    let off_network =
        s.gql("mutation($i: InstanceCreateInput!) { instanceCreate(input: $i) { id } }", json!({ "i": input })).await;
    let off_network = off_network["data"]["instanceCreate"]["id"].as_str().unwrap().to_owned();
    let _ = other_network;
    let someone_elses = "inst_01jx0000000000000000000000";
    for (extra, field) in [
        (json!({ "appliesTo": [mine.clone(), off_network.clone()] }), "appliesTo[1]"),
        (json!({ "peers": { "instanceIds": [someone_elses] } }), "peers.instanceIds[0]"),
    ] {
        let (code, extensions) = s.refused("named", extra).await;
        assert_eq!((code.as_str(), &extensions["field"]), ("INVALID_INPUT", &json!(field)), "{extensions}");
        assert_eq!(extensions["reason"], "notOnNetwork");
    }
    let ok = s.create("named", json!({ "appliesTo": [mine.clone()], "peers": { "instanceIds": [mine] } })).await;
    assert_eq!(ok["state"], "PENDING", "{ok}");
});

db_test!(a_rule_create_is_idempotent_by_its_key, |backend: Backend| async move {
    let s = digitalocean(backend, Some(0)).await;
    let first = s.create("ssh", json!({})).await;
    let again = s.create("ssh", json!({})).await;
    assert_eq!(first["id"], again["id"]);
    assert_eq!(s.rule_count().await, 1);
    let (code, _) = s.refused("ssh", json!({ "fromPort": 2222 })).await;
    assert_eq!(code, "CONFLICT", "the same key with another request");
});

db_test!(deleting_a_network_deletes_its_rules_first, |backend: Backend| async move {
    let s = digitalocean(backend, None).await;
    let rule = id_of(&s.create("ssh", json!({})).await);
    let name = s.rule(&rule).await["providerName"].as_str().unwrap().to_owned();
    s.until_rule(&rule, "ready", |r| r["state"] == "READY").await;
    let delete = "mutation($n: String!) { networkDelete(input: { tenantId: \"acme\", networkId: $n }) { state } }";
    s.gql(delete, json!({ "n": s.network })).await;
    assert_eq!(s.rule(&rule).await["desiredState"], "ABSENT", "marked with the network");
    common::until(&s, "network deleted", || s.network_view(), |n| n["state"] == "DELETED").await;
    assert!(s.firewalls_named(&name).await.is_empty());
    let egress = targets::egress_name(&s.network);
    assert!(s.firewalls_named(&egress).await.is_empty(), "the open egress firewall went too");
    let deleted = format!("network.firewallRule.deleted {rule}");
    s.events_until("the deleted event last", |types| types.last() == Some(&deleted)).await;
});

// --- DigitalOcean ---

db_test!(
    a_rule_is_applied_as_a_firewall_named_bc_and_its_id_on_the_machines_carrying_its_instances_tags,
    |backend: Backend| async move {
        let s = digitalocean(backend, None).await;
        let (web, web_droplet) = s.instance("web").await;
        let (db, db_droplet) = s.instance("db").await;
        let made = s.create("ssh", json!({ "appliesTo": [web.clone()], "peers": { "addresses": ["203.0.113.7"], "instanceIds": [db.clone()] } })).await;
        let id = id_of(&made);
        let ready = s.until_rule(&id, "ready", |r| r["state"] == "READY").await;
        let name = made["providerName"].as_str().unwrap();
        let firewalls = s.firewalls_named(name).await;
        assert_eq!(firewalls.len(), 1);
        let firewall = &firewalls[0];
        assert_eq!(ready["providerId"], firewall.id.as_str());
        let marker = targets::marker(&s.server.app.services.deployment);
        let wanted_tags = BTreeSet::from([targets::instance_tag(&web), marker.clone()]);
        assert_eq!(
            firewall.tags.iter().cloned().collect::<BTreeSet<_>>(),
            wanted_tags,
            "its instances' tags, and our mark"
        );
        assert_eq!(
            firewall.inbound,
            vec![CloudFirewallRule {
                protocol: "tcp".into(),
                ports: "22".into(),
                addresses: vec!["203.0.113.7/32".into()],
                tags: vec![targets::instance_tag(&db)],
                droplet_ids: vec![],
            }]
        );
        assert!(firewall.outbound.is_empty());
        // The machine it applies to carries its tags, and the open egress tag (no outbound rule).
        let tags = s.droplet_tags(&web_droplet);
        for tag in [targets::instance_tag(&web), targets::network_tag(&s.network), targets::egress_tag(&s.network)] {
            assert!(tags.contains(&tag), "{tag} on {tags:?}");
        }
        let db_tags = s.droplet_tags(&db_droplet);
        assert!(!db_tags.contains(&targets::egress_tag(&s.network)), "no rule applies to db: {db_tags:?}");
        assert!(db_tags.contains(&targets::instance_tag(&db)), "a peer carries its tag, which the firewall names");
        let egress = s.firewalls_named(&targets::egress_name(&s.network)).await;
        assert_eq!(egress.len(), 1);
        assert!(egress[0].inbound.is_empty() && egress[0].outbound.len() == 3, "{:?}", egress[0]);
        let wanted = vec![format!("network.firewallRule.created {id}"), format!("network.firewallRule.ready {id}")];
        s.events_until("created then ready", |types| types == wanted).await;

        // Deleted: the firewall goes, the machine lets go of its tags, the egress firewall goes too.
        assert_eq!(s.delete(&id).await["state"], "DELETING");
        s.until_rule(&id, "deleted", |r| r["state"] == "DELETED").await;
        assert!(s.firewalls_named(name).await.is_empty());
        let tags = s.droplet_tags(&web_droplet);
        assert!(!tags.contains(&targets::egress_tag(&s.network)), "{tags:?}");
        common::until(
            &s,
            "egress deleted",
            || async { json!(s.firewalls_named(&targets::egress_name(&s.network)).await.len()) },
            |n| n == 0,
        )
        .await;
        assert_eq!(s.sim().name_calls("firewalls.made", name), 1);
        let lifecycle: Vec<String> = ["created", "ready", "deleting", "deleted"]
            .iter()
            .map(|t| format!("network.firewallRule.{t} {id}"))
            .collect();
        s.events_until("created, ready, deleting, deleted", |types| types == lifecycle).await;
    }
);

db_test!(a_rule_that_names_no_instance_applies_to_every_instance_on_the_network, |backend: Backend| async move {
    let s = digitalocean(backend, None).await;
    let (web, web_droplet) = s.instance("web").await;
    let (db, db_droplet) = s.instance("db").await;
    let made = s.create("ssh", json!({})).await;
    s.until_rule(&id_of(&made), "ready", |r| r["state"] == "READY").await;
    let firewall = &s.firewalls_named(made["providerName"].as_str().unwrap()).await[0];
    let marker = targets::marker(&s.server.app.services.deployment);
    let wanted = BTreeSet::from([targets::network_tag(&s.network), marker]);
    assert_eq!(firewall.tags.iter().cloned().collect::<BTreeSet<_>>(), wanted, "the network's tag");
    for (instance, droplet) in [(web, web_droplet), (db, db_droplet)] {
        let tags = s.droplet_tags(&droplet);
        assert!(tags.contains(&targets::network_tag(&s.network)), "{tags:?}");
        assert!(tags.contains(&targets::instance_tag(&instance)), "{tags:?}");
    }
});

db_test!(an_outbound_rule_replaces_the_open_egress_on_its_machines, |backend: Backend| async move {
    let s = digitalocean(backend, None).await;
    let (web, droplet) = s.instance("web").await;
    let inbound = id_of(&s.create("ssh", json!({})).await);
    s.until_rule(&inbound, "ready", |r| r["state"] == "READY").await;
    assert!(s.droplet_tags(&droplet).contains(&targets::egress_tag(&s.network)));
    let https = json!({ "direction": "OUTBOUND", "fromPort": 443, "peers": { "addresses": ["0.0.0.0/0"] }, "appliesTo": [web] });
    let outbound = id_of(&s.create("https-out", https).await);
    s.until_rule(&outbound, "ready", |r| r["state"] == "READY").await;
    assert!(!s.droplet_tags(&droplet).contains(&targets::egress_tag(&s.network)), "only what it allows goes out");
});

db_test!(a_tag_set_later_still_matches_the_rules_applied_first, |backend: Backend| async move {
    let s = digitalocean(backend, None).await;
    let rule = id_of(&s.create("ssh", json!({})).await);
    s.until_rule(&rule, "ready", |r| r["state"] == "READY").await;
    let (web, droplet) = s.instance("web").await;
    let tags = s.droplet_tags(&droplet);
    assert!(
        tags.contains(&targets::instance_tag(&web)) && tags.contains(&targets::network_tag(&s.network)),
        "{tags:?}"
    );
});

db_test!(a_lost_create_answer_is_found_by_name_and_never_made_twice, |backend: Backend| async move {
    let s = digitalocean(backend, None).await;
    s.instance("web").await;
    s.with_egress().await;
    s.sim().inject("firewalls.create", Fault::Drop, 1);
    let made = s.create("ssh", json!({})).await;
    let id = id_of(&made);
    let ready = s.until_rule(&id, "ready", |r| r["state"] == "READY").await;
    let name = made["providerName"].as_str().unwrap();
    assert_eq!(s.sim().name_calls("firewalls.create", name), 1, "found by its name, never sent again");
    assert_eq!(s.sim().name_calls("firewalls.made", name), 1, "made once");
    assert_eq!(s.firewalls_named(name).await.len(), 1);
    assert_eq!(ready["providerId"], s.firewalls_named(name).await[0].id.as_str());
});

db_test!(a_rule_deleted_while_its_create_is_in_flight_leaves_no_firewall, |backend: Backend| async move {
    let s = digitalocean(backend, None).await;
    s.with_egress().await;
    // Made at the provider, its answer never comes back.
    s.sim().inject("firewalls.create", Fault::Drop, 1);
    let made = s.create("ssh", json!({})).await;
    let id = id_of(&made);
    let name = made["providerName"].as_str().unwrap().to_owned();
    for _ in 0..400 {
        if s.sim().name_calls("firewalls.made", &name) == 1 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    assert_eq!(s.sim().name_calls("firewalls.made", &name), 1, "the create is in flight");
    assert_eq!(s.delete(&id).await["state"], "DELETING");
    s.until_rule(&id, "deleted", |r| r["state"] == "DELETED").await;
    assert!(s.firewalls_named(&name).await.is_empty(), "what the lost answer made is found and deleted");
    assert_eq!(s.sim().name_calls("firewalls.create", &name), 1, "never made again");
});

db_test!(a_refused_rate_limited_or_unavailable_create_waits_and_converges, |backend: Backend| async move {
    for status in [429, 503, 500] {
        let s = digitalocean(backend, None).await;
        s.with_egress().await;
        s.sim().inject("firewalls.create", Fault::Status { status }, 1);
        let made = s.create("ssh", json!({})).await;
        let id = id_of(&made);
        s.until_rule(&id, "waiting with the provider's words", |r| r["message"].is_string() || r["state"] == "ERROR")
            .await;
        let ready = s.until_rule(&id, "ready", |r| r["state"] == "READY").await;
        assert!(ready["message"].is_null(), "{ready}");
        assert_eq!(s.sim().name_calls("firewalls.made", made["providerName"].as_str().unwrap()), 1, "{status}");
    }
});

db_test!(a_refusal_is_an_error_retried_five_minutes_later, |backend: Backend| async move {
    let s = digitalocean(backend, None).await;
    s.with_egress().await;
    s.sim().inject("firewalls.create", Fault::Status { status: 422 }, 1);
    let id = id_of(&s.create("ssh", json!({})).await);
    let failed = s.until_rule(&id, "error", |r| r["state"] == "ERROR").await;
    assert!(failed["message"].is_string());
    // Not before five minutes: the clock moves four, and nothing is asked again.
    let asked = s.sim().calls("firewalls.create");
    s.clock.advance(4 * 60_000);
    common::idle(&s.server, &s.clock, &s.network).await;
    assert_eq!(s.sim().calls("firewalls.create"), asked);
    assert_eq!(s.rule(&id).await["state"], "ERROR");
    s.until_rule(&id, "ready", |r| r["state"] == "READY").await;
});

db_test!(a_firewall_under_the_rules_name_not_ours_is_left_alone, |backend: Backend| async move {
    let s = digitalocean(backend, None).await;
    s.with_egress().await;
    s.sim().inject("firewalls.create", Fault::Status { status: 503 }, 1);
    let made = s.create("ssh", json!({})).await;
    let id = id_of(&made);
    let name = made["providerName"].as_str().unwrap().to_owned();
    s.until_rule(&id, "waiting", |r| r["message"].is_string()).await;
    let rules = [CloudFirewallRule {
        protocol: "tcp".into(),
        ports: "80".into(),
        addresses: vec!["0.0.0.0/0".into()],
        ..Default::default()
    }];
    let spec = CloudFirewallSpec { name: &name, tags: &[], inbound: &rules, outbound: &[] };
    let firewalls = s.provider().digitalocean().unwrap().clone();
    let theirs = firewalls.firewall_create(&spec).await.unwrap();
    let failed = s.until_rule(&id, "error", |r| r["state"] == "ERROR").await;
    assert!(failed["message"].as_str().unwrap().contains("did not make"), "{failed}");
    assert!(failed["providerId"].is_null());
    s.clock.advance(10 * 60_000);
    common::idle(&s.server, &s.clock, &s.network).await;
    let still = s.firewalls_named(&name).await;
    assert_eq!(still.len(), 1, "never made beside it");
    assert_eq!((still[0].id.as_str(), still[0].inbound[0].ports.as_str()), (theirs.id.as_str(), "80"), "never changed");
    s.delete(&id).await;
    s.until_rule(&id, "deleted", |r| r["state"] == "DELETED").await;
    assert_eq!(s.firewalls_named(&name).await.len(), 1, "never deleted");
});

db_test!(a_firewall_changed_outside_is_put_back_and_one_deleted_outside_is_an_error, |backend: Backend| async move {
    let s = digitalocean(backend, None).await;
    s.instance("web").await;
    let made = s.create("ssh", json!({})).await;
    let id = id_of(&made);
    let ready = s.until_rule(&id, "ready", |r| r["state"] == "READY").await;
    let firewall = ready["providerId"].as_str().unwrap().to_owned();
    let name = made["providerName"].as_str().unwrap().to_owned();
    let firewalls = s.provider().digitalocean().unwrap().clone();
    let changed = [CloudFirewallRule {
        protocol: "tcp".into(),
        ports: "23".into(),
        addresses: vec!["0.0.0.0/0".into()],
        ..Default::default()
    }];
    let tags = s.firewalls_named(&name).await[0].tags.clone();
    let spec = CloudFirewallSpec { name: &name, tags: &tags, inbound: &changed, outbound: &[] };
    firewalls.firewall_update(&firewall, &spec).await.unwrap();
    s.past_drift().await;
    let read = || async { json!(s.firewalls_named(&name).await[0].inbound[0].ports) };
    common::until(&s, "put back", read, |ports| ports == "22").await;

    firewalls.firewall_delete(&firewall).await.unwrap();
    s.past_drift().await;
    let lost = s.until_rule(&id, "error", |r| r["state"] == "ERROR").await;
    assert!(lost["message"].as_str().unwrap().contains("deleted outside vps-graph"), "{lost}");
    s.clock.advance(10 * 60_000);
    common::idle(&s.server, &s.clock, &s.network).await;
    assert!(s.firewalls_named(&name).await.is_empty(), "never made again");
    assert_eq!(s.sim().name_calls("firewalls.made", &name), 1);
});

// --- AWS ---

db_test!(an_aws_rule_becomes_a_security_group_on_its_machines, |backend: Backend| async move {
    let s = aws(backend).await;
    let (web, machine) = s.instance("web").await;
    let (db, db_machine) = s.instance("db").await;
    let default_groups = s.machine_groups(&machine).await;
    let peers = json!({ "addresses": ["203.0.113.0/24", "2001:db8::/32"], "instanceIds": [db.clone()] });
    let made = s.create("ssh", json!({ "appliesTo": [web.clone()], "peers": peers })).await;
    let id = id_of(&made);
    let ready = s.until_rule(&id, "ready", |r| r["state"] == "READY").await;
    let name = made["providerName"].as_str().unwrap();
    let groups = s.groups_named(name).await;
    assert_eq!(groups.len(), 1);
    let group = &groups[0];
    assert_eq!(ready["providerId"], group.id.as_str());
    assert!(vps_graph::provider::aws_owned(&group.tags, &s.server.app.services.deployment));
    let db_ip =
        s.provider().aws().unwrap().instance_get(AWS_REGION, &db_machine).await.unwrap().unwrap().private_ip.unwrap();
    let sources: BTreeSet<RuleSource> = group.ingress.iter().map(|r| r.source.clone()).collect();
    assert_eq!(
        sources,
        BTreeSet::from([
            RuleSource::Cidr("203.0.113.0/24".into()),
            RuleSource::Cidr6("2001:db8::/32".into()),
            RuleSource::Cidr(format!("{db_ip}/32")),
        ]),
        "a peer instance is its machine's private address"
    );
    assert!(group.ingress.iter().all(|r| (r.protocol.as_str(), r.from_port, r.to_port) == ("tcp", 22, 22)));
    assert!(group.egress.is_empty(), "an inbound rule's group lets nothing out");
    let egress = s.groups_named(&targets::egress_name(&s.network)).await;
    assert_eq!(egress.len(), 1);
    assert_eq!(s.machine_groups(&machine).await, BTreeSet::from([group.id.clone(), egress[0].id.clone()]));
    assert_eq!(s.machine_groups(&db_machine).await, default_groups, "no rule applies to db");
    // A peer's address named again as an address: one permission, not a call EC2 refuses.
    let twice = json!({ "fromPort": 5432, "appliesTo": [web.clone()], "peers": { "addresses": [db_ip.clone()], "instanceIds": [db.clone()] } });
    let twice = id_of(&s.create("pg", twice).await);
    s.until_rule(&twice, "ready", |r| r["state"] == "READY").await;
    s.delete(&twice).await;
    s.until_rule(&twice, "deleted", |r| r["state"] == "DELETED").await;

    s.delete(&id).await;
    s.until_rule(&id, "deleted", |r| r["state"] == "DELETED").await;
    assert!(s.groups_named(name).await.is_empty());
    assert_eq!(s.machine_groups(&machine).await, default_groups, "back to the VPC's default group");
    common::until(
        &s,
        "egress deleted",
        || async { json!(s.groups_named(&targets::egress_name(&s.network)).await.len()) },
        |n| n == 0,
    )
    .await;
});

db_test!(an_aws_lost_create_answer_is_found_by_name_and_tags, |backend: Backend| async move {
    let s = aws(backend).await;
    s.instance("web").await;
    s.with_egress().await;
    s.sim().inject("ec2.CreateSecurityGroup", Fault::Drop, 1);
    let made = s.create("ssh", json!({})).await;
    let id = id_of(&made);
    s.until_rule(&id, "ready", |r| r["state"] == "READY").await;
    assert_eq!(s.groups_named(made["providerName"].as_str().unwrap()).await.len(), 1, "made once");
});

db_test!(an_aws_group_under_the_rules_name_not_ours_is_left_alone, |backend: Backend| async move {
    let s = aws(backend).await;
    s.with_egress().await;
    // EC2's clients retry a 503 themselves: enough that every retry meets one.
    s.sim().inject("ec2.CreateSecurityGroup", Fault::Status { status: 503 }, 1_000);
    let made = s.create("ssh", json!({})).await;
    let id = id_of(&made);
    let name = made["providerName"].as_str().unwrap().to_owned();
    s.until_rule(&id, "waiting", |r| r["message"].is_string()).await;
    let vpc = s.network_view().await["providerId"].as_str().unwrap().to_owned();
    let theirs = s.sim().aws_plant_foreign_group(AWS_REGION, &vpc, &name, &[]).unwrap();
    s.sim().clear_faults();
    let failed = s.until_rule(&id, "error", |r| r["state"] == "ERROR").await;
    assert!(failed["message"].as_str().unwrap().contains("did not make"), "{failed}");
    s.delete(&id).await;
    s.until_rule(&id, "deleted", |r| r["state"] == "DELETED").await;
    assert!(s.sim().aws_group_ids(AWS_REGION).contains(&theirs), "never deleted");
});
