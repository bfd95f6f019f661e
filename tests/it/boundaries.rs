//! A project is a boundary, and so is a tenant: every id a mutation's input names is decided
//! with the caller's own credential. The (mutation, id field) pairs are read from the schema
//! itself, so a field added later is checked too (or fails the test until it is given a base
//! input): each is called by a token scoped to one project naming the resource of another
//! project, and by a token of another tenant naming this tenant's, and must be refused, saying
//! which id it refused, with nothing written.
use crate::common;

use std::collections::BTreeMap;

use common::{ADMIN, Backend, TestServer};
use serde_json::{Value, json};

/// A caller and the resources of its own it names: `role → id`.
pub(crate) struct World {
    pub(crate) token: String,
    ids: BTreeMap<&'static str, String>,
}

impl World {
    pub(crate) fn id(&self, role: &str) -> &str {
        self.ids.get(role).unwrap_or_else(|| panic!("no {role} in the world"))
    }
}

/// The mutations only an operator may call: a project's token is refused before any id.
pub(crate) const OPERATOR: [&str; 10] = [
    "tenantCreate",
    "projectCreate",
    "providerAccountCreate",
    "poolCreate",
    "poolOffer",
    "poolMachinesSet",
    "poolRatesSet",
    "quotaSet",
    "tokenIssue",
    "tokenRevoke",
];

/// (mutation, field, why): ids whose refusal is not a NOT_FOUND or ACCESS_DENIED naming them.
const EXCEPTIONS: [(&str, &str, &str); 4] = [
    (
        "firewallRuleCreate",
        "instanceIds",
        "an instance a rule names must be of the rule's network: INVALID_INPUT naming the field (issue 35)",
    ),
    (
        "firewallRuleCreate",
        "appliesTo",
        "an instance a rule names must be of the rule's network: INVALID_INPUT naming the field (issue 35)",
    ),
    (
        "providerVolumeDetach",
        "instanceId",
        "detach is decided on the volume alone (seeds); an instance it is not on changes nothing",
    ),
    (
        "networkAdopt",
        "vpcId",
        "the provider's id, in the tenant's own account: one another network records is CONFLICT",
    ),
];

/// Inputs of each mutation that names ids, written with `$role` for the caller's own ids; a
/// mutation has several when its id fields are set by different variants.
pub(crate) fn bases() -> BTreeMap<&'static str, Vec<Value>> {
    let key = || format!("k{}", ulid::Ulid::generate().to_string().to_lowercase());
    let name = || format!("n{}", &ulid::Ulid::generate().to_string().to_lowercase()[16..]);
    let t = "$tenant";
    BTreeMap::from([
        ("tenantCreate", vec![json!({ "id": "initech", "name": "initech" })]),
        ("projectCreate", vec![json!({ "tenantId": t, "name": name() })]),
        (
            "providerAccountCreate",
            vec![json!({ "name": name(), "kind": "DIGITALOCEAN", "sim": true, "regions": ["nyc3"], "tenantId": t })],
        ),
        ("poolCreate", vec![json!({ "name": name(), "providerAccountId": "$account", "billing": "BYO" })]),
        ("poolOffer", vec![json!({ "poolId": "$pool", "tenantId": t, "quotas": [] })]),
        ("poolMachinesSet", vec![json!({ "poolId": "$pool", "sizes": [], "images": [] })]),
        (
            "poolRatesSet",
            vec![json!({ "poolId": "$pool", "rateCard": { "currency": "USD",
                "prices": [{ "meter": "vps.volume.gib.hours", "price": 0.000137 }] } })],
        ),
        ("quotaSet", vec![json!({ "poolId": "$pool", "tenantId": t, "resource": "diskGiB", "max": 1 })]),
        ("tokenIssue", vec![json!({ "tenantId": t, "grants": [{ "permission": "*", "scope": "tenant/x" }] })]),
        ("tokenRevoke", vec![json!({ "tokenId": "$token" })]),
        (
            "networkCreate",
            vec![
                json!({ "tenantId": t, "projectId": "$project", "poolId": "$pool", "name": name(), "idempotencyKey": key(),
                "subnets": [{ "region": "nyc3", "ipRange": "10.99.0.0/24" }] }),
            ],
        ),
        (
            "networkAdopt",
            vec![json!({ "tenantId": t, "projectId": "$project", "poolId": "$byo", "name": name(), "vpcId": "$vpc",
                "idempotencyKey": key() })],
        ),
        (
            "networkAddSubnet",
            vec![
                json!({ "tenantId": t, "networkId": "$net", "subnet": { "region": "nyc3", "ipRange": "10.98.0.0/24" } }),
            ],
        ),
        ("networkRemoveSubnet", vec![json!({ "tenantId": t, "networkId": "$net", "subnetId": "$subnet" })]),
        ("networkDelete", vec![json!({ "tenantId": t, "networkId": "$net" })]),
        (
            "instanceCreate",
            vec![
                json!({ "tenantId": t, "projectId": "$project", "poolId": "$pool", "networkId": "$net", "name": name(),
                    "region": "nyc3", "size": "s-1vcpu-1gb", "image": "ubuntu-24-04-x64", "idempotencyKey": key() }),
                json!({ "tenantId": t, "projectId": "$project", "poolId": "$aws", "networkId": "$awsnet", "name": name(),
                    "region": "us-east-1", "size": "t3.micro", "image": "ami-0abcdef1234567890", "idempotencyKey": key(),
                    "filesystems": [{ "filesystem": "$fs", "path": "/data" }] }),
            ],
        ),
        ("instanceDelete", vec![json!({ "tenantId": t, "instanceId": "$instance" })]),
        (
            "providerVolumeCreate",
            vec![
                json!({ "tenantId": t, "projectId": "$project", "poolId": "$pool", "name": name(), "region": "nyc3",
                    "sizeGiB": 10, "instanceId": "$instance", "idempotencyKey": key() }),
                json!({ "tenantId": t, "projectId": "$project", "poolId": "$pool", "name": name(), "region": "nyc3",
                    "sizeGiB": 50, "kind": "SHARED", "networkId": "$net", "idempotencyKey": key() }),
            ],
        ),
        ("providerVolumeAttach", vec![json!({ "tenantId": t, "volumeId": "$volume", "instanceId": "$instance" })]),
        ("providerVolumeDetach", vec![json!({ "tenantId": t, "volumeId": "$volume", "instanceId": "$instance" })]),
        ("providerVolumeResize", vec![json!({ "tenantId": t, "volumeId": "$volume", "sizeGiB": 11 })]),
        (
            "providerVolumeSnapshot",
            vec![json!({ "tenantId": t, "volumeId": "$volume", "name": name(), "idempotencyKey": key() })],
        ),
        ("providerVolumeDelete", vec![json!({ "tenantId": t, "volumeId": "$volume" })]),
        ("providerVolumeUpdate", vec![json!({ "tenantId": t, "volumeId": "$volume", "deletionProtection": true })]),
        ("providerSnapshotDelete", vec![json!({ "tenantId": t, "snapshotId": "$snapshot" })]),
        (
            "providerSnapshotUpdate",
            vec![json!({ "tenantId": t, "snapshotId": "$snapshot", "deletionProtection": true })],
        ),
        (
            "providerSnapshotRestore",
            vec![json!({ "tenantId": t, "snapshotId": "$snapshot", "name": name(), "idempotencyKey": key() })],
        ),
        (
            "providerAddressCreate",
            vec![json!({ "tenantId": t, "projectId": "$project", "poolId": "$pool", "name": name(), "region": "nyc3",
                "idempotencyKey": key() })],
        ),
        ("providerAddressAssign", vec![json!({ "tenantId": t, "addressId": "$address", "instanceId": "$instance" })]),
        ("providerAddressUnassign", vec![json!({ "tenantId": t, "addressId": "$address" })]),
        ("providerAddressDelete", vec![json!({ "tenantId": t, "addressId": "$address" })]),
        ("providerAddressUpdate", vec![json!({ "tenantId": t, "addressId": "$address", "deletionProtection": true })]),
        (
            "filesystemCreate",
            vec![
                json!({ "tenantId": t, "networkId": "$awsnet", "name": name(), "kind": "NFS", "idempotencyKey": key() }),
            ],
        ),
        ("filesystemDelete", vec![json!({ "tenantId": t, "networkId": "$awsnet", "filesystemId": "$fs" })]),
        (
            "filesystemUpdate",
            vec![json!({ "tenantId": t, "networkId": "$awsnet", "filesystemId": "$fs", "deletionProtection": true })],
        ),
        (
            "firewallRuleCreate",
            vec![
                json!({ "tenantId": t, "networkId": "$net", "name": name(), "direction": "INBOUND", "protocol": "TCP",
                "fromPort": 22, "peers": { "addresses": ["203.0.113.7"], "instanceIds": ["$instance"] },
                "appliesTo": ["$instance"], "idempotencyKey": key() }),
            ],
        ),
        (
            "snapshotScheduleCreate",
            vec![
                json!({ "tenantId": t, "volumeId": "$volume", "name": name(), "everyHours": 6, "keepLast": 3,
                    "idempotencyKey": key() }),
                json!({ "tenantId": t, "projectId": "$project", "name": name(), "dailyAt": "03:30",
                    "maxAgeHours": 48, "idempotencyKey": key() }),
            ],
        ),
        ("snapshotScheduleDelete", vec![json!({ "tenantId": t, "scheduleId": "$schedule" })]),
        ("firewallRuleDelete", vec![json!({ "tenantId": t, "networkId": "$net", "firewallRuleId": "$rule" })]),
    ])
}

const SCHEMA: &str = "{ __schema { mutationType { fields { name args { name type { ...T } } } }
    types { name inputFields { name type { ...T } } } } }
    fragment T on __Type { kind name ofType { kind name ofType { kind name ofType { kind name } } } }";

/// A type reference's named type, and whether it is a list.
fn named(ty: &Value) -> (String, bool) {
    let (mut ty, mut list) = (ty, false);
    while ty["name"].is_null() {
        list |= ty["kind"] == "LIST";
        ty = &ty["ofType"];
    }
    (ty["name"].as_str().unwrap().to_owned(), list)
}

/// Every (mutation, path of an id field in its input) of the schema: fields named `…Id`, and an
/// instance's `filesystems[].filesystem`, the one id field not named so.
async fn id_fields(server: &TestServer) -> Vec<(String, Vec<String>)> {
    let schema = server.ok(None, SCHEMA, json!({})).await["__schema"].clone();
    let inputs: BTreeMap<String, Value> = schema["types"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["inputFields"].is_array())
        .map(|t| (t["name"].as_str().unwrap().to_owned(), t["inputFields"].clone()))
        .collect();
    fn walk(inputs: &BTreeMap<String, Value>, ty: &str, at: Vec<String>, out: &mut Vec<Vec<String>>) {
        for field in inputs[ty].as_array().unwrap() {
            let name = field["name"].as_str().unwrap().to_owned();
            let (inner, list) = named(&field["type"]);
            let mut path = at.clone();
            path.push(name.clone());
            if inputs.contains_key(&inner) {
                if list {
                    path.push("0".into());
                }
                walk(inputs, &inner, path, out);
            } else if inner == "String" && (name.ends_with("Id") || name == "filesystem") {
                out.push(path);
            }
        }
    }
    let mut pairs = Vec::new();
    for field in schema["mutationType"]["fields"].as_array().unwrap() {
        let mutation = field["name"].as_str().unwrap().to_owned();
        for arg in field["args"].as_array().unwrap() {
            let (ty, _) = named(&arg["type"]);
            let mut paths = Vec::new();
            walk(&inputs, &ty, Vec::new(), &mut paths);
            pairs.extend(paths.into_iter().map(|p| (mutation.clone(), p)));
        }
    }
    pairs
}

fn at<'v>(value: &'v Value, path: &[String]) -> &'v Value {
    path.iter().fold(value, |v, step| match step.parse::<usize>() {
        Ok(i) => &v[i],
        Err(_) => &v[step.as_str()],
    })
}

fn at_mut<'v>(value: &'v mut Value, path: &[String]) -> &'v mut Value {
    path.iter().fold(value, |v, step| match step.parse::<usize>() {
        Ok(i) => &mut v[i],
        Err(_) => &mut v[step.as_str()],
    })
}

/// `base` with every `$role` put as `world`'s id.
pub(crate) fn filled(base: &Value, world: &World) -> Value {
    match base {
        Value::String(s) if s.starts_with('$') => json!(world.id(&s[1..])),
        Value::Array(items) => Value::Array(items.iter().map(|v| filled(v, world)).collect()),
        Value::Object(fields) => Value::Object(fields.iter().map(|(k, v)| (k.clone(), filled(v, world))).collect()),
        other => other.clone(),
    }
}

async fn call(server: &TestServer, token: &str, mutation: &str, input: &Value) -> Value {
    let mut chars = mutation.chars();
    let input_type = chars.next().unwrap().to_ascii_uppercase().to_string() + chars.as_str() + "Input";
    let query = format!("mutation($i: {input_type}!) {{ {mutation}(input: $i) {{ __typename }} }}");
    server.gql(Some(token), &query, json!({ "i": input })).await
}

/// What a tenant's callers share: its pools (a platform DigitalOcean and AWS pool offered to it
/// alone, and its own AWS account with a pool on it).
pub(crate) struct Tenant {
    id: &'static str,
    pool: String,
    aws: String,
    byo: String,
    account: String,
}

pub(crate) async fn tenant(server: &TestServer, id: &'static str) -> Tenant {
    server.tenant(id).await;
    let quotas = json!([{ "resource": "diskGiB", "max": 10000 }, { "resource": "addresses", "max": 50 },
        { "resource": "instances", "max": 50 }, { "resource": "networks", "max": 50 },
        { "resource": "filesystems", "max": 50 }, { "resource": "filesystemGiB", "max": 1000000 }]);
    let pool = server.sim_pool(&format!("do-{id}"), &["nyc3"], None).await;
    let aws = server.aws_sim_pool(&format!("aws-{id}"), &["us-east-1a"], None).await.1;
    let (account, byo) = server.aws_sim_pool(&format!("byo-{id}"), &["us-east-1a"], Some(id)).await;
    for pool in [&pool, &aws, &byo] {
        server.offer(pool, id, quotas.clone()).await;
    }
    Tenant { id, pool, aws, byo, account }
}

/// One caller's resources, in `project`; its token's grants on that project, or on the whole
/// tenant.
pub(crate) async fn world(server: &TestServer, of: &Tenant, project: &str, tenant_wide: bool, n: u8) -> World {
    let tenant = of.id;
    let scope = if tenant_wide { format!("tenant/{tenant}") } else { format!("project/{project}") };
    let token = server.token(Some(tenant), &[("compute:*", &scope)]).await;
    let token_id = server.token_with_id(Some(tenant), &[("compute:volumes:read", &scope)]).await.1;
    let mut ids = BTreeMap::from([
        ("tenant", tenant.to_owned()),
        ("pool", of.pool.clone()),
        ("aws", of.aws.clone()),
        ("byo", of.byo.clone()),
        ("account", of.account.clone()),
        ("token", token_id),
        ("vpc", format!("vpc-0{n}{}", "a".repeat(15))),
        ("project", project.to_owned()),
    ]);
    let make = |field: &'static str, input: Value| {
        let token = token.clone();
        async move { call_returning_id(server, &token, field, &input).await.unwrap_or_else(|err| panic!("{field}: {err}")) }
    };
    let own = |mut input: Value| {
        input["tenantId"] = json!(tenant);
        input["projectId"] = json!(project);
        input
    };
    let net = make(
        "networkCreate",
        own(json!({ "poolId": of.pool, "name": format!("lan{n}"), "idempotencyKey": format!("lan{n}"),
            "subnets": [{ "region": "nyc3", "ipRange": format!("10.{n}.0.0/24") }] })),
    )
    .await;
    let read = server
        .ok(
            Some(ADMIN),
            "query($t: String!, $n: String!) { network(tenantId: $t, networkId: $n) { subnets { id } } }",
            json!({ "t": tenant, "n": net }),
        )
        .await;
    let subnet = read["network"]["subnets"][0]["id"].as_str().unwrap().to_owned();
    let awsnet = make(
        "networkCreate",
        own(json!({ "poolId": of.aws, "name": format!("vpc{n}"), "idempotencyKey": format!("vpc{n}"),
            "ipRange": format!("10.{}.0.0/16", 100 + n),
            "subnets": [{ "zone": "us-east-1a", "ipRange": format!("10.{}.1.0/24", 100 + n) }] })),
    )
    .await;
    let fs = make(
        "filesystemCreate",
        json!({ "tenantId": tenant, "networkId": awsnet, "name": format!("fs{n}"), "kind": "NFS",
            "idempotencyKey": format!("fs{n}") }),
    )
    .await;
    let instance = make(
        "instanceCreate",
        own(json!({ "poolId": of.pool, "networkId": net, "name": format!("web{n}"), "region": "nyc3",
            "size": "s-1vcpu-1gb", "image": "ubuntu-24-04-x64", "idempotencyKey": format!("web{n}") })),
    )
    .await;
    let volume = make(
        "providerVolumeCreate",
        own(json!({ "poolId": of.pool, "name": format!("data{n}"), "region": "nyc3", "sizeGiB": 10,
            "idempotencyKey": format!("data{n}") })),
    )
    .await;
    let snapshot = make(
        "providerVolumeSnapshot",
        json!({ "tenantId": tenant, "volumeId": volume, "name": format!("snap{n}"), "idempotencyKey": format!("snap{n}") }),
    )
    .await;
    let address = make(
        "providerAddressCreate",
        own(json!({ "poolId": of.pool, "name": format!("ip{n}"), "region": "nyc3", "idempotencyKey": format!("ip{n}") })),
    )
    .await;
    make(
        "networkAdopt",
        own(json!({ "poolId": of.byo, "name": format!("adopted{n}"), "vpcId": ids["vpc"], "idempotencyKey": format!("adopted{n}") })),
    )
    .await;
    let rule = make(
        "firewallRuleCreate",
        json!({ "tenantId": tenant, "networkId": net, "name": format!("ssh{n}"), "direction": "INBOUND",
            "protocol": "TCP", "fromPort": 22, "peers": { "addresses": ["203.0.113.7"] },
            "idempotencyKey": format!("ssh{n}") }),
    )
    .await;
    let schedule = make(
        "snapshotScheduleCreate",
        json!({ "tenantId": tenant, "volumeId": volume, "name": format!("every{n}"), "everyHours": 6,
            "keepLast": 3, "idempotencyKey": format!("every{n}") }),
    )
    .await;
    for (role, id) in [
        ("schedule", schedule),
        ("rule", rule),
        ("net", net),
        ("subnet", subnet),
        ("awsnet", awsnet),
        ("fs", fs),
        ("instance", instance),
        ("volume", volume),
        ("snapshot", snapshot),
        ("address", address),
    ] {
        ids.insert(role, id);
    }
    World { token, ids }
}

async fn call_returning_id(server: &TestServer, token: &str, mutation: &str, input: &Value) -> Result<String, String> {
    let mut chars = mutation.chars();
    let input_type = chars.next().unwrap().to_ascii_uppercase().to_string() + chars.as_str() + "Input";
    let query = format!("mutation($i: {input_type}!) {{ {mutation}(input: $i) {{ id }} }}");
    let body = server.gql(Some(token), &query, json!({ "i": input })).await;
    body["data"][mutation]["id"].as_str().map(str::to_owned).ok_or_else(|| body.to_string())
}

/// How many events the tenant's feed holds (what any write would add to).
async fn events(server: &TestServer, tenant: &str) -> usize {
    let query = "query($t: String!) { events(tenantId: $t, first: 1000) { edges { cursor } } }";
    server.ok(Some(ADMIN), query, json!({ "t": tenant })).await["events"]["edges"].as_array().unwrap().len()
}

/// What a refusal says, message and details, to look for the id it refused.
fn said(body: &Value) -> String {
    let error = &body["errors"][0];
    format!("{} {}", error["message"], error["extensions"]["details"])
}

db_test!(every_id_a_mutation_names_is_decided_with_the_callers_own_credential, |backend: Backend| async move {
    // No reconciler runs: the feed changes only by what the calls write.
    let db = common::TestDb::new(backend).await;
    let mut config = common::config(&db.url);
    config.runtime.workers = 0;
    let mut server = TestServer::with_config(config).await;
    server.keep(db);
    let (acme, globex) = (tenant(&server, "acme").await, tenant(&server, "other").await);
    let (a, b) = (server.project("acme", "a").await, server.project("acme", "b").await);
    let c = server.project("other", "c").await;
    let in_a = world(&server, &acme, &a, false, 1).await;
    let in_b = world(&server, &acme, &b, false, 2).await;
    let other = world(&server, &globex, &c, true, 3).await;

    let bases = bases();
    let pairs = id_fields(&server).await;
    assert!(pairs.len() > 30, "the schema's id fields: {pairs:?}");
    let mut checked = 0;
    for (mutation, path) in &pairs {
        // The field an id is given in (a list's, for an item of one).
        let field = path.iter().rev().map(String::as_str).find(|f| f.parse::<usize>().is_err()).unwrap_or_default();
        let variants = bases.get(mutation.as_str()).unwrap_or_else(|| panic!("no base input of {mutation}"));
        let base = variants
            .iter()
            .find(|v| !at(v, path).is_null())
            .unwrap_or_else(|| panic!("no base input of {mutation} sets {}", path.join(".")));
        let role = at(base, path).as_str().unwrap().trim_start_matches('$').to_owned();
        let exception = EXCEPTIONS.iter().find(|(m, f, _)| m == mutation && *f == field);
        for (caller, foreign, across) in [(&in_a, &in_b, "project"), (&other, &in_a, "tenant")] {
            let mut input = filled(base, caller);
            let own = at(&input, path).clone();
            let named = json!(foreign.id(&role));
            if own == named || (across == "tenant" && field == "vpcId") {
                continue; // shared by both (the tenant, its pools), or of another namespace
            }
            *at_mut(&mut input, path) = named.clone();
            let written = (events(&server, "acme").await, events(&server, "other").await);
            let body = call(&server, &caller.token, mutation, &input).await;
            let now = (events(&server, "acme").await, events(&server, "other").await);
            assert_eq!(written, now, "a refused call writes nothing: {mutation} {} wrote: {body}", path.join("."));
            let code = common::first_code(&body).unwrap_or_default();
            let what = format!("{mutation}.{} naming another {across}'s {role}: {body}", path.join("."));
            checked += 1;
            if OPERATOR.contains(&mutation.as_str()) {
                assert_eq!(code, "ACCESS_DENIED", "{what}");
                continue;
            }
            match exception {
                Some((_, "instanceId", _)) => {
                    assert!(body["errors"].is_null(), "{what}");
                }
                Some((_, "vpcId", _)) => assert_eq!(code, "CONFLICT", "{what}"),
                Some((_, "instanceIds" | "appliesTo", _)) => {
                    assert_eq!(code, "INVALID_INPUT", "{what}");
                    assert!(said(&body).contains(named.as_str().unwrap()), "the refusal names the instance: {what}");
                }
                _ => {
                    assert!(body["data"].is_null(), "{what}");
                    assert!(code == "NOT_FOUND" || code == "ACCESS_DENIED", "{what}");
                    let named = named.as_str().unwrap();
                    assert!(field == "tenantId" || said(&body).contains(named), "the refusal names {named}: {what}");
                }
            }
        }
    }
    eprintln!("{checked} calls naming another project's or tenant's id, of {} id fields", pairs.len());
    assert!(checked > 40, "{checked} calls");
});

/// Tenant `acme` with projects `a` and `b`, its pool, a token on each project, and no reconciler.
struct Two {
    server: TestServer,
    pool: String,
    a: (String, String),
    b: (String, String),
}

async fn two_projects(backend: Backend) -> Two {
    let db = common::TestDb::new(backend).await;
    let mut config = common::config(&db.url);
    config.runtime.workers = 0;
    let mut server = TestServer::with_config(config).await;
    server.keep(db);
    server.tenant("acme").await;
    let pool = server.sim_pool("do", &["nyc3"], None).await;
    server.offer(&pool, "acme", json!([{ "resource": "diskGiB", "max": 10000 }])).await;
    let mut projects = Vec::new();
    for name in ["a", "b"] {
        let project = server.project("acme", name).await;
        let token = server.token(Some("acme"), &[("compute:*", &format!("project/{project}"))]).await;
        projects.push((project, token));
    }
    let b = projects.pop().unwrap();
    let a = projects.pop().unwrap();
    Two { server, pool, a, b }
}

impl Two {
    async fn volume(&self, (project, token): &(String, String), name: &str) -> String {
        let input = json!({ "tenantId": "acme", "projectId": project, "poolId": self.pool, "name": name,
            "region": "nyc3", "sizeGiB": 1, "idempotencyKey": name });
        call_returning_id(&self.server, token, "providerVolumeCreate", &input).await.unwrap()
    }
}

db_test!(a_cursor_never_carries_an_id_the_caller_may_not_read, |backend: Backend| async move {
    let two = two_projects(backend).await;
    let mut own = Vec::new();
    for n in 0..6 {
        own.push(two.volume(&two.a, &format!("a{n}")).await);
        two.volume(&two.b, &format!("b{n}a")).await;
        two.volume(&two.b, &format!("b{n}b")).await;
    }
    let query = "query($after: String) { providerVolumes(tenantId: \"acme\", first: 2, after: $after) {
        edges { cursor node { id } } pageInfo { endCursor hasNextPage } } }";
    let (mut seen, mut after, mut pages) = (Vec::new(), Value::Null, 0);
    loop {
        let page = two.server.ok(Some(&two.a.1), query, json!({ "after": after })).await["providerVolumes"].clone();
        pages += 1;
        for edge in page["edges"].as_array().unwrap() {
            assert_eq!(edge["cursor"], edge["node"]["id"]);
            seen.push(edge["node"]["id"].as_str().unwrap().to_owned());
        }
        let end = &page["pageInfo"]["endCursor"];
        assert!(end.is_null() || own.iter().any(|id| end == id), "a cursor of project b's: {page}");
        if page["pageInfo"]["hasNextPage"] != true {
            break;
        }
        after = end.clone();
    }
    assert_eq!(seen, own, "each of a's volumes once, in order");
    assert_eq!(pages, 3, "full pages of a's own: b's are not read");
});

db_test!(usage_is_totalled_over_what_the_caller_may_read, |backend: Backend| async move {
    use sea_orm::{ActiveModelTrait, Set};
    use vps_graph::store::entity::usage_window;
    let two = two_projects(backend).await;
    let start = chrono::DateTime::parse_from_rfc3339("2026-11-01T00:00:00Z").unwrap().with_timezone(&chrono::Utc);
    for (project, quantity) in [(&two.a.0, 10.0), (&two.b.0, 5.0)] {
        usage_window::ActiveModel {
            id: Set(format!("uw_{}", ulid::Ulid::generate().to_string().to_lowercase())),
            tenant_id: Set("acme".into()),
            project_id: Set(Some(project.clone())),
            pool_id: Set(two.pool.clone()),
            source_kind: Set("volume".into()),
            resource_id: Set(format!("pvol_{}", ulid::Ulid::generate().to_string().to_lowercase())),
            meter: Set("vps.volume.gib.hours".into()),
            window_start: Set(start),
            window_end: Set(start + chrono::Duration::hours(1)),
            quantity: Set(quantity),
            created_at: Set(start),
        }
        .insert(&two.server.app.services.db)
        .await
        .unwrap();
    }
    let query = "query($p: String!) { usage(tenantId: \"acme\", poolId: $p, from: \"2026-11-01T00:00:00Z\",
        to: \"2026-12-01T00:00:00Z\") { meters { meter quantity windows } } }";
    let total = |token: String| {
        let server = &two.server;
        let pool = two.pool.clone();
        async move { server.ok(Some(&token), query, json!({ "p": pool })).await["usage"]["meters"][0].clone() }
    };
    assert_eq!(
        total(two.a.1.clone()).await,
        json!({ "meter": "vps.volume.gib.hours", "quantity": 10.0, "windows": 1 })
    );
    assert_eq!(total(two.b.1.clone()).await["quantity"], 5.0);
    assert_eq!(total(ADMIN.to_owned()).await["quantity"], 15.0, "the tenant's whole usage");
});

db_test!(token_events_reach_only_those_who_may_read_tokens, |backend: Backend| async move {
    let two = two_projects(backend).await;
    let tenant_wide = two.server.token(Some("acme"), &[("*", "tenant/acme")]).await;
    let (_, issued) = two.server.token_with_id(Some("acme"), &[("compute:volumes:read", "tenant/acme")]).await;
    let query = "{ events(tenantId: \"acme\", first: 1000) { edges { node { type subject } } } }";
    let types = |token: String| {
        let server = &two.server;
        async move {
            let edges = server.ok(Some(&token), query, json!({})).await["events"]["edges"].clone();
            edges.as_array().unwrap().iter().map(|e| e["node"]["type"].as_str().unwrap().to_owned()).collect::<Vec<_>>()
        }
    };
    // (On PostgreSQL a page may end behind events just committed: read until they are seen.)
    let mut operator_reads = false;
    for _ in 0..50 {
        if types(ADMIN.into()).await.iter().any(|t| t == "token.issued") {
            operator_reads = true;
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert!(operator_reads, "the operator reads them");
    let seen = types(tenant_wide.clone()).await;
    assert!(!seen.is_empty() && seen.iter().all(|t| !t.starts_with("token.")), "{seen:?}");
    let mut ws = two.server.ws(json!({ "Authorization": format!("Bearer {tenant_wide}") })).await;
    assert_eq!(ws.next(std::time::Duration::from_secs(5)).await.unwrap()["type"], "connection_ack");
    // From a cursor before the token events, so that they are replayed if they are let through.
    let end = "{ events(tenantId: \"acme\", first: 1000) { pageInfo { endCursor } } }";
    let cursor = two.server.ok(Some(&tenant_wide), end, json!({})).await["events"]["pageInfo"]["endCursor"].clone();
    let live = "subscription($c: String) { events(tenantId: \"acme\", after: $c) { type subject } }";
    ws.subscribe("1", live, json!({ "c": cursor })).await;
    two.server.token(Some("acme"), &[("compute:volumes:read", "tenant/acme")]).await;
    two.server
        .ok(
            Some(ADMIN),
            "mutation($i: TokenRevokeInput!) { tokenRevoke(input: $i) { id } }",
            json!({ "i": { "tokenId": issued } }),
        )
        .await;
    // Then a volume's event, which it does read: anything token.* would have come before it.
    two.volume(&two.a, "after").await;
    // (The cursor may sit behind events committed before it: those arrive first.)
    loop {
        let next = ws.next(std::time::Duration::from_secs(5)).await.expect("the volume's event");
        let kind = next["payload"]["data"]["events"]["type"].as_str().unwrap_or_default().to_owned();
        assert!(!kind.starts_with("token."), "{next}");
        if kind == "providerVolume.created" {
            break;
        }
    }
});

db_test!(a_node_of_another_tenant_is_not_found_naming_nothing_but_its_id, |backend: Backend| async move {
    let two = two_projects(backend).await;
    let network = call_returning_id(
        &two.server,
        &two.a.1,
        "networkCreate",
        &json!({ "tenantId": "acme", "projectId": two.a.0, "poolId": two.pool, "name": "lan", "idempotencyKey": "lan",
            "subnets": [{ "region": "nyc3", "ipRange": "10.1.0.0/24" }] }),
    )
    .await
    .unwrap();
    let subnet = two
        .server
        .ok(
            Some(ADMIN),
            "query($n: String!) { network(tenantId: \"acme\", networkId: $n) { subnets { id } } }",
            json!({ "n": network }),
        )
        .await["network"]["subnets"][0]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    two.server.tenant("other").await;
    let stranger = two.server.token(Some("other"), &[("*", "tenant/other")]).await;
    for id in [&subnet, &network] {
        let body =
            two.server.gql(Some(&stranger), "query($id: ID!) { node(id: $id) { id } }", json!({ "id": id })).await;
        assert_eq!(common::first_code(&body).as_deref(), Some("NOT_FOUND"), "{body}");
        let text = body.to_string();
        let other = if id == &subnet { &network } else { &subnet };
        assert!(!text.contains(other.as_str()), "the refusal of {id} names {other}: {text}");
        assert!(text.contains(id.as_str()), "{text}");
    }
    // The same for a missing id of the kind: the two answers differ only by the id.
    let missing = "sub_01jz0000000000000000000000";
    let body =
        two.server.gql(Some(&stranger), "query($id: ID!) { node(id: $id) { id } }", json!({ "id": missing })).await;
    let found =
        two.server.gql(Some(&stranger), "query($id: ID!) { node(id: $id) { id } }", json!({ "id": subnet })).await;
    assert_eq!(body.to_string().replace(missing, "X"), found.to_string().replace(&subnet, "X"));
});

db_test!(only_an_operator_is_told_what_a_request_cost_in_statements, |backend: Backend| async move {
    let two = two_projects(backend).await;
    let query = json!({ "query": "{ providerVolumes(tenantId: \"acme\") { edges { node { id } } } }" });
    for (token, told) in [(ADMIN.to_owned(), true), (two.a.1.clone(), false)] {
        let response =
            two.server.http.post(two.server.url("/graphql")).bearer_auth(&token).json(&query).send().await.unwrap();
        assert_eq!(response.headers().contains_key("x-sql-statements"), told);
    }
    let anonymous = two.server.http.post(two.server.url("/graphql")).json(&query).send().await.unwrap();
    assert!(!anonymous.headers().contains_key("x-sql-statements"));
});
