//! Every root field of the schema, called without a token and as another tenant, against one
//! tenant's real resources: each must refuse (UNAUTHENTICATED; NOT_FOUND or ACCESS_DENIED) and
//! return no data. The table below must name every root field: a field added to the schema
//! without an entry here fails `every_root_field_is_in_the_table`.
use crate::common;

use std::collections::BTreeSet;
use std::time::Duration;

use common::{ADMIN, Backend, TestServer};
use serde_json::{Value, json};

/// What the calls need: the ids of the tenant's resources.
struct Ids {
    pool: String,
    project: String,
    network: String,
    subnet: String,
    instance: String,
    volume: String,
    snapshot: String,
    address: String,
    token: String,
}

/// A filesystem id: the tenant's network is on DigitalOcean, which has none, and every
/// filesystem call is decided on the network first, so a stranger is refused before it matters.
const FILESYSTEM: &str = "fs_01jz0000000000000000000000";

/// A firewall rule id: every rule call is decided on the network first, as a filesystem's is.
const RULE: &str = "fwr_01jz0000000000000000000000";

/// A snapshot schedule id: a stranger is refused it before it matters whether it exists.
const SCHEDULE: &str = "ssch_01jz0000000000000000000000";

/// Each root field with a document that calls it on tenant `acme`'s resources.
fn table(ids: &Ids) -> Vec<(&'static str, &'static str, String)> {
    let t = "tenantId: \"acme\"";
    let q = |body: String| format!("query {{ {body} }}");
    let m = |field: &str, input: String| format!("mutation {{ {field}(input: {{ {input} }}) {{ __typename }} }}");
    let s = |body: String| format!("subscription {{ {body} }}");
    vec![
        ("Query", "me", q("me { tenantId }".into())),
        ("Query", "tokens", q(format!("tokens({t}) {{ id }}"))),
        ("Query", "tenant", q("tenant(id: \"acme\") { id }".into())),
        ("Query", "tenants", q("tenants { id }".into())),
        ("Query", "project", q(format!("project({t}, projectId: \"{}\") {{ id }}", ids.project))),
        ("Query", "projects", q(format!("projects({t}) {{ id }}"))),
        ("Query", "providerAccounts", q("providerAccounts { id }".into())),
        ("Query", "pools", q(format!("pools({t}) {{ id }}"))),
        ("Query", "quotas", q(format!("quotas({t}) {{ used }}"))),
        ("Query", "network", q(format!("network({t}, networkId: \"{}\") {{ id }}", ids.network))),
        ("Query", "networks", q(format!("networks({t}) {{ edges {{ cursor }} }}"))),
        ("Query", "instance", q(format!("instance({t}, instanceId: \"{}\") {{ id }}", ids.instance))),
        ("Query", "instances", q(format!("instances({t}) {{ edges {{ cursor }} }}"))),
        ("Query", "providerVolume", q(format!("providerVolume({t}, volumeId: \"{}\") {{ id }}", ids.volume))),
        ("Query", "providerVolumes", q(format!("providerVolumes({t}) {{ edges {{ cursor }} }}"))),
        ("Query", "providerSnapshot", q(format!("providerSnapshot({t}, snapshotId: \"{}\") {{ id }}", ids.snapshot))),
        ("Query", "providerSnapshots", q(format!("providerSnapshots({t}) {{ edges {{ cursor }} }}"))),
        ("Query", "providerAddress", q(format!("providerAddress({t}, addressId: \"{}\") {{ id }}", ids.address))),
        ("Query", "providerAddresses", q(format!("providerAddresses({t}) {{ edges {{ cursor }} }}"))),
        (
            "Query",
            "filesystem",
            q(format!("filesystem({t}, networkId: \"{}\", filesystemId: \"{FILESYSTEM}\") {{ id }}", ids.network)),
        ),
        ("Query", "filesystems", q(format!("filesystems({t}, networkId: \"{}\") {{ id }}", ids.network))),
        (
            "Query",
            "firewallRule",
            q(format!("firewallRule({t}, networkId: \"{}\", firewallRuleId: \"{RULE}\") {{ id }}", ids.network)),
        ),
        ("Query", "firewallRules", q(format!("firewallRules({t}, networkId: \"{}\") {{ id }}", ids.network))),
        ("Query", "events", q(format!("events({t}) {{ edges {{ cursor }} }}"))),
        ("Query", "snapshotSchedule", q(format!("snapshotSchedule({t}, scheduleId: \"{SCHEDULE}\") {{ id }}"))),
        ("Query", "snapshotSchedules", q(format!("snapshotSchedules({t}) {{ id }}"))),
        ("Query", "node", q(format!("node(id: \"{}\") {{ id }}", ids.volume))),
        ("Query", "nodes", q(format!("nodes(ids: [\"{}\", \"{}\"]) {{ id }}", ids.volume, ids.network))),
        (
            "Query",
            "usage",
            q(format!(
                "usage({t}, poolId: \"{}\", from: \"2026-11-01T00:00:00Z\", to: \"2026-12-01T00:00:00Z\") {{ meters {{ meter }} }}",
                ids.pool
            )),
        ),
        ("Mutation", "tenantCreate", m("tenantCreate", "id: \"initech\", name: \"initech\"".into())),
        ("Mutation", "projectCreate", m("projectCreate", format!("{t}, name: \"sneaky\""))),
        (
            "Mutation",
            "providerAccountCreate",
            m("providerAccountCreate", "name: \"x\", kind: DIGITALOCEAN, sim: true, regions: [\"nyc3\"]".into()),
        ),
        (
            "Mutation",
            "poolCreate",
            m(
                "poolCreate",
                "name: \"x\", providerAccountId: \"pacct_01jz0000000000000000000000\", billing: METERED".into(),
            ),
        ),
        ("Mutation", "poolOffer", m("poolOffer", format!("poolId: \"{}\", {t}, quotas: []", ids.pool))),
        (
            "Mutation",
            "poolMachinesSet",
            m("poolMachinesSet", format!("poolId: \"{}\", sizes: [], images: []", ids.pool)),
        ),
        ("Mutation", "poolRatesSet", m("poolRatesSet", format!("poolId: \"{}\", rateCard: null", ids.pool))),
        (
            "Mutation",
            "quotaSet",
            m("quotaSet", format!("poolId: \"{}\", {t}, resource: \"diskGiB\", max: 1", ids.pool)),
        ),
        (
            "Mutation",
            "tokenIssue",
            m("tokenIssue", format!("{t}, grants: [{{ permission: \"*\", scope: \"tenant/acme\" }}]")),
        ),
        ("Mutation", "tokenRevoke", m("tokenRevoke", format!("tokenId: \"{}\"", ids.token))),
        (
            "Mutation",
            "networkCreate",
            m(
                "networkCreate",
                format!(
                    "{t}, poolId: \"{}\", name: \"x\", idempotencyKey: \"x\", subnets: [{{ region: \"nyc3\", ipRange: \"10.9.0.0/24\" }}]",
                    ids.pool
                ),
            ),
        ),
        (
            "Mutation",
            "networkAddSubnet",
            m(
                "networkAddSubnet",
                format!(
                    "{t}, networkId: \"{}\", subnet: {{ region: \"sfo3\", ipRange: \"10.8.0.0/24\" }}",
                    ids.network
                ),
            ),
        ),
        (
            "Mutation",
            "networkRemoveSubnet",
            m("networkRemoveSubnet", format!("{t}, networkId: \"{}\", subnetId: \"{}\"", ids.network, ids.subnet)),
        ),
        ("Mutation", "networkDelete", m("networkDelete", format!("{t}, networkId: \"{}\"", ids.network))),
        (
            "Mutation",
            "networkAdopt",
            m(
                "networkAdopt",
                format!("{t}, poolId: \"{}\", name: \"x\", vpcId: \"vpc-0123abcd\", idempotencyKey: \"x\"", ids.pool),
            ),
        ),
        (
            "Mutation",
            "filesystemCreate",
            m(
                "filesystemCreate",
                format!("{t}, networkId: \"{}\", name: \"x\", kind: NFS, idempotencyKey: \"x\"", ids.network),
            ),
        ),
        (
            "Mutation",
            "firewallRuleCreate",
            m(
                "firewallRuleCreate",
                format!(
                    "{t}, networkId: \"{}\", name: \"x\", direction: INBOUND, protocol: TCP, fromPort: 22, peers: {{ addresses: [\"203.0.113.7\"] }}, idempotencyKey: \"x\"",
                    ids.network
                ),
            ),
        ),
        (
            "Mutation",
            "firewallRuleDelete",
            m("firewallRuleDelete", format!("{t}, networkId: \"{}\", firewallRuleId: \"{RULE}\"", ids.network)),
        ),
        (
            "Mutation",
            "snapshotScheduleCreate",
            m(
                "snapshotScheduleCreate",
                format!(
                    "{t}, volumeId: \"{}\", name: \"daily\", everyHours: 6, keepLast: 3, idempotencyKey: \"s\"",
                    ids.volume
                ),
            ),
        ),
        ("Mutation", "snapshotScheduleDelete", m("snapshotScheduleDelete", format!("{t}, scheduleId: \"{SCHEDULE}\""))),
        (
            "Mutation",
            "filesystemDelete",
            m("filesystemDelete", format!("{t}, networkId: \"{}\", filesystemId: \"{FILESYSTEM}\"", ids.network)),
        ),
        (
            "Mutation",
            "filesystemUpdate",
            m("filesystemUpdate", format!("{t}, networkId: \"{}\", filesystemId: \"{FILESYSTEM}\"", ids.network)),
        ),
        (
            "Mutation",
            "instanceCreate",
            m(
                "instanceCreate",
                format!(
                    "{t}, poolId: \"{}\", name: \"x\", region: \"nyc3\", size: \"s-1vcpu-1gb\", image: \"ubuntu-24-04-x64\", idempotencyKey: \"x\"",
                    ids.pool
                ),
            ),
        ),
        ("Mutation", "instanceDelete", m("instanceDelete", format!("{t}, instanceId: \"{}\"", ids.instance))),
        (
            "Mutation",
            "providerVolumeCreate",
            m(
                "providerVolumeCreate",
                format!(
                    "{t}, poolId: \"{}\", name: \"x\", region: \"nyc3\", sizeGiB: 1, idempotencyKey: \"x\"",
                    ids.pool
                ),
            ),
        ),
        (
            "Mutation",
            "providerVolumeAttach",
            m("providerVolumeAttach", format!("{t}, volumeId: \"{}\", instanceId: \"{}\"", ids.volume, ids.instance)),
        ),
        ("Mutation", "providerVolumeDetach", m("providerVolumeDetach", format!("{t}, volumeId: \"{}\"", ids.volume))),
        (
            "Mutation",
            "providerVolumeResize",
            m("providerVolumeResize", format!("{t}, volumeId: \"{}\", sizeGiB: 99", ids.volume)),
        ),
        (
            "Mutation",
            "providerVolumeSnapshot",
            m(
                "providerVolumeSnapshot",
                format!("{t}, volumeId: \"{}\", name: \"x\", idempotencyKey: \"x\"", ids.volume),
            ),
        ),
        ("Mutation", "providerVolumeDelete", m("providerVolumeDelete", format!("{t}, volumeId: \"{}\"", ids.volume))),
        ("Mutation", "providerVolumeUpdate", m("providerVolumeUpdate", format!("{t}, volumeId: \"{}\"", ids.volume))),
        (
            "Mutation",
            "providerSnapshotUpdate",
            m("providerSnapshotUpdate", format!("{t}, snapshotId: \"{}\"", ids.snapshot)),
        ),
        (
            "Mutation",
            "providerSnapshotDelete",
            m("providerSnapshotDelete", format!("{t}, snapshotId: \"{}\"", ids.snapshot)),
        ),
        (
            "Mutation",
            "providerSnapshotRestore",
            m(
                "providerSnapshotRestore",
                format!("{t}, snapshotId: \"{}\", name: \"x\", idempotencyKey: \"x\"", ids.snapshot),
            ),
        ),
        (
            "Mutation",
            "providerAddressCreate",
            m(
                "providerAddressCreate",
                format!("{t}, poolId: \"{}\", name: \"x\", region: \"nyc3\", idempotencyKey: \"x\"", ids.pool),
            ),
        ),
        (
            "Mutation",
            "providerAddressAssign",
            m(
                "providerAddressAssign",
                format!("{t}, addressId: \"{}\", instanceId: \"{}\"", ids.address, ids.instance),
            ),
        ),
        (
            "Mutation",
            "providerAddressUnassign",
            m("providerAddressUnassign", format!("{t}, addressId: \"{}\"", ids.address)),
        ),
        (
            "Mutation",
            "providerAddressDelete",
            m("providerAddressDelete", format!("{t}, addressId: \"{}\"", ids.address)),
        ),
        (
            "Mutation",
            "providerAddressUpdate",
            m("providerAddressUpdate", format!("{t}, addressId: \"{}\"", ids.address)),
        ),
        ("Subscription", "events", s(format!("events({t}) {{ type }}"))),
        ("Subscription", "networkChanged", s(format!("networkChanged({t}, networkId: \"{}\") {{ id }}", ids.network))),
        (
            "Subscription",
            "instanceChanged",
            s(format!("instanceChanged({t}, instanceId: \"{}\") {{ id }}", ids.instance)),
        ),
        (
            "Subscription",
            "providerVolumeChanged",
            s(format!("providerVolumeChanged({t}, volumeId: \"{}\") {{ id }}", ids.volume)),
        ),
        (
            "Subscription",
            "providerSnapshotChanged",
            s(format!("providerSnapshotChanged({t}, snapshotId: \"{}\") {{ id }}", ids.snapshot)),
        ),
        (
            "Subscription",
            "filesystemChanged",
            s(format!(
                "filesystemChanged({t}, networkId: \"{}\", filesystemId: \"{FILESYSTEM}\") {{ id }}",
                ids.network
            )),
        ),
        (
            "Subscription",
            "firewallRuleChanged",
            s(format!("firewallRuleChanged({t}, networkId: \"{}\", firewallRuleId: \"{RULE}\") {{ id }}", ids.network)),
        ),
        (
            "Subscription",
            "providerAddressChanged",
            s(format!("providerAddressChanged({t}, addressId: \"{}\") {{ id }}", ids.address)),
        ),
    ]
}

/// Tenant `acme` with one of each resource (none needs to be ready), and `globex` beside it.
async fn tenant_with_resources(server: &TestServer) -> Ids {
    server.tenant("acme").await;
    server.tenant("globex").await;
    let pool = server.sim_pool("sim", &["nyc3", "sfo3"], None).await;
    let quotas = json!([{ "resource": "diskGiB", "max": 100 }, { "resource": "addresses", "max": 5 }]);
    server.offer(&pool, "acme", quotas.clone()).await;
    server.offer(&pool, "globex", quotas).await;
    let project = server.project("acme", "web").await;
    let token = server.token(Some("acme"), &[("compute:*", "tenant/acme")]).await;
    let create = |field: &'static str, input: Value| {
        let token = token.clone();
        async move {
            let mut chars = field.chars();
            let input_type = chars.next().unwrap().to_ascii_uppercase().to_string() + chars.as_str() + "Input";
            let query = format!("mutation($i: {input_type}!) {{ {field}(input: $i) {{ id }} }}");
            let data = server.ok(Some(&token), &query, json!({ "i": input })).await;
            data[field]["id"].as_str().unwrap().to_owned()
        }
    };
    let base = |name: &str| json!({ "tenantId": "acme", "poolId": pool, "name": name, "idempotencyKey": name });
    let with = |mut input: Value, extra: Value| {
        for (k, v) in extra.as_object().unwrap() {
            input[k] = v.clone();
        }
        input
    };
    let network = create(
        "networkCreate",
        with(base("lan"), json!({ "subnets": [{ "region": "nyc3", "ipRange": "10.7.0.0/24" }] })),
    )
    .await;
    let subnet_query = "query($n: String!) { network(tenantId: \"acme\", networkId: $n) { subnets { id } } }";
    let subnet = server.ok(Some(&token), subnet_query, json!({ "n": network })).await["network"]["subnets"][0]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let instance = create(
        "instanceCreate",
        with(base("web"), json!({ "region": "nyc3", "size": "s-1vcpu-1gb", "image": "ubuntu-24-04-x64" })),
    )
    .await;
    let volume = create("providerVolumeCreate", with(base("data"), json!({ "region": "nyc3", "sizeGiB": 10 }))).await;
    let snapshot = create(
        "providerVolumeSnapshot",
        json!({ "tenantId": "acme", "volumeId": volume, "name": "snap", "idempotencyKey": "snap" }),
    )
    .await;
    let address = create("providerAddressCreate", with(base("ingress"), json!({ "region": "nyc3" }))).await;
    let token_id = server.ok(Some(&token), "{ me { tokenId } }", json!({})).await["me"]["tokenId"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    Ids { pool, project, network, subnet, instance, volume, snapshot, address, token: token_id }
}

/// The code of a refusal: the HTTP answer's for a query or mutation, the WebSocket's for a
/// subscription. None when it was not refused.
async fn refusal(server: &TestServer, token: Option<&str>, kind: &str, document: &str) -> Option<String> {
    if kind != "Subscription" {
        let body = server.gql(token, document, json!({})).await;
        if !body["data"].is_null() {
            return None;
        }
        return common::first_code(&body);
    }
    let init = match token {
        Some(token) => json!({ "Authorization": format!("Bearer {token}") }),
        None => json!({}),
    };
    let mut ws = server.ws(init).await;
    let ack = match ws.next_or_why(Duration::from_secs(5)).await {
        Ok(ack) => ack,
        // A socket without a token that authenticates is closed before it is acknowledged.
        Err(why) if why.contains("4403") => return Some("UNAUTHENTICATED".into()),
        Err(why) => panic!("no ack: {why}"),
    };
    assert_eq!(ack["type"], "connection_ack", "{ack}");
    ws.subscribe("1", document, json!({})).await;
    // No reply is no refusal: say what came instead, for whoever reads the failure.
    let reply = match ws.next_or_why(Duration::from_secs(10)).await {
        Ok(reply) => reply,
        Err(why) => return Some(format!("no reply ({why})")),
    };
    let errors = match reply["type"].as_str() {
        Some("error") => reply["payload"].clone(),
        _ => reply["payload"]["errors"].clone(),
    };
    match errors[0]["extensions"]["code"].as_str() {
        Some(code) => Some(code.to_owned()),
        None => Some(format!("no refusal: {reply}")),
    }
}

db_test!(every_root_field_is_in_the_table, |backend: Backend| async move {
    let server = TestServer::start(backend).await;
    let query = "{ __schema { queryType { fields { name } } mutationType { fields { name } } subscriptionType { fields { name } } } }";
    let schema = server.gql(None, query, json!({})).await["data"]["__schema"].clone();
    let mut fields = BTreeSet::new();
    for (kind, key) in [("Query", "queryType"), ("Mutation", "mutationType"), ("Subscription", "subscriptionType")] {
        for field in schema[key]["fields"].as_array().unwrap() {
            fields.insert(format!("{kind}.{}", field["name"].as_str().unwrap()));
        }
    }
    let ids = Ids {
        pool: String::new(),
        project: String::new(),
        network: String::new(),
        subnet: String::new(),
        instance: String::new(),
        volume: String::new(),
        snapshot: String::new(),
        address: String::new(),
        token: String::new(),
    };
    let listed: BTreeSet<String> = table(&ids).iter().map(|(kind, field, _)| format!("{kind}.{field}")).collect();
    let missing: Vec<&String> = fields.difference(&listed).collect();
    assert!(missing.is_empty(), "root fields with no entry in the refusal table: {missing:?}");
    let gone: Vec<&String> = listed.difference(&fields).collect();
    assert!(gone.is_empty(), "entries for root fields that are not in the schema: {gone:?}");
});

db_test!(every_root_field_refuses_a_caller_without_a_token, |backend: Backend| async move {
    let server = TestServer::start(backend).await;
    let ids = tenant_with_resources(&server).await;
    for (kind, field, document) in table(&ids) {
        let got = refusal(&server, None, kind, &document).await;
        assert_eq!(got.as_deref(), Some("UNAUTHENTICATED"), "{kind}.{field}");
    }
});

db_test!(every_root_field_refuses_another_tenant, |backend: Backend| async move {
    let server = TestServer::start(backend).await;
    let ids = tenant_with_resources(&server).await;
    let globex = server.token(Some("globex"), &[("*", "tenant/globex")]).await;
    let used_before = server.ok(Some(ADMIN), "{ quotas(tenantId: \"acme\") { resource used } }", json!({})).await;
    for (kind, field, document) in table(&ids) {
        if field == "me" {
            continue; // The caller's own.
        }
        if field == "nodes" {
            // Relay's nodes answers null for each id node would refuse as NOT_FOUND.
            let body = server.gql(Some(&globex), &document, json!({})).await;
            assert_eq!(body["data"]["nodes"], json!([null, null]), "{kind}.{field} answered another tenant: {body}");
            continue;
        }
        let got = refusal(&server, Some(&globex), kind, &document).await;
        assert!(
            matches!(got.as_deref(), Some("NOT_FOUND" | "ACCESS_DENIED")),
            "{kind}.{field} answered another tenant with {got:?}"
        );
    }
    let used_after = server.ok(Some(ADMIN), "{ quotas(tenantId: \"acme\") { resource used } }", json!({})).await;
    assert_eq!(used_before, used_after, "nothing was booked on the tenant");
});
