//! Relay's object identification: `node(id:)` and `nodes(ids:)` refetch the tenant's resources
//! by id alone, each decided exactly as its type's own read.
use crate::common;

use common::{ADMIN, Backend, TestServer, first_code};
use serde_json::{Value, json};

const NODE: &str =
    "query($id: ID!) { node(id: $id) { __typename id ... on Network { name tenantId } ... on Project { name } } }";
const NODES: &str = "query($ids: [ID!]!) { nodes(ids: $ids) { __typename id } }";

/// A network of one subnet; its range is the name's own, as VPC ranges never overlap on an account.
async fn network(server: &TestServer, tenant: &str, pool: &str, name: &str) -> String {
    let third = name.bytes().fold(0u8, |sum, b| sum.wrapping_add(b));
    let input = json!({ "i": { "tenantId": tenant, "poolId": pool, "name": name, "idempotencyKey": name,
        "subnets": [{ "region": "nyc3", "ipRange": format!("10.30.{third}.0/24") }] } });
    let made =
        server.ok(Some(ADMIN), "mutation($i: NetworkCreateInput!) { networkCreate(input: $i) { id } }", input).await;
    made["networkCreate"]["id"].as_str().unwrap().to_owned()
}

async fn setup(server: &TestServer) -> (String, String, String) {
    let pool = server.sim_pool("nodes", &["nyc3"], None).await;
    for tenant in ["acme", "other"] {
        server.tenant(tenant).await;
        server.offer(&pool, tenant, json!([])).await;
    }
    let mine = network(server, "acme", &pool, "mine").await;
    let theirs = network(server, "other", &pool, "theirs").await;
    let project = server.project("acme", "web").await;
    (mine, theirs, project)
}

db_test!(node_refetches_a_resource_by_its_id_alone, |backend: Backend| async move {
    let server = TestServer::start(backend).await;
    let (mine, _, project) = setup(&server).await;
    let token = server.token(Some("acme"), &[("compute:*", "tenant/acme")]).await;
    let found = server.ok(Some(&token), NODE, json!({ "id": mine })).await;
    assert_eq!(found["node"], json!({ "__typename": "Network", "id": mine, "name": "mine", "tenantId": "acme" }));
    let found = server.ok(Some(&token), NODE, json!({ "id": project })).await;
    assert_eq!(found["node"]["__typename"], "Project");
    assert_eq!(found["node"]["name"], "web");
});

db_test!(node_of_another_tenants_id_is_not_found, |backend: Backend| async move {
    let server = TestServer::start(backend).await;
    let (mine, theirs, _) = setup(&server).await;
    let token = server.token(Some("acme"), &[("compute:*", "tenant/acme")]).await;
    let body = server.gql(Some(&token), NODE, json!({ "id": theirs })).await;
    assert_eq!(first_code(&body).as_deref(), Some("NOT_FOUND"), "{body}");
    assert!(!body.to_string().contains("theirs"), "nothing of the other tenant's network shows: {body}");
    // An id of no known kind, and one of a known kind that does not exist, are NOT_FOUND too.
    for id in ["nothing_here", "net_01jzzzzzzzzzzzzzzzzzzzzzzz"] {
        let body = server.gql(Some(&token), NODE, json!({ "id": id })).await;
        assert_eq!(first_code(&body).as_deref(), Some("NOT_FOUND"), "{id}: {body}");
    }
    // `nodes` answers in the order asked, null where `node` is NOT_FOUND.
    let found = server.ok(Some(&token), NODES, json!({ "ids": [theirs, mine, "nothing_here"] })).await;
    assert_eq!(found["nodes"], json!([null, { "__typename": "Network", "id": mine }, null]));
});

db_test!(node_is_decided_as_the_types_own_read, |backend: Backend| async move {
    let server = TestServer::start(backend).await;
    let (mine, _, project) = setup(&server).await;
    // Volumes only: the network's own read (compute:networks:read) is not granted.
    let volumes_only = server.token(Some("acme"), &[("compute:volumes:read", "tenant/acme")]).await;
    let body = server.gql(Some(&volumes_only), NODE, json!({ "id": mine })).await;
    let network_read = server
        .gql(
            Some(&volumes_only),
            "query($n: String!) { network(tenantId: \"acme\", networkId: $n) { id } }",
            json!({ "n": mine }),
        )
        .await;
    assert_eq!(first_code(&body), first_code(&network_read), "node: {body}, network: {network_read}");
    assert!(first_code(&body).is_some(), "{body}");
    // Granted on the network itself: readable through node.
    let on_it = server.token(Some("acme"), &[("compute:networks:read", &format!("network/{mine}"))]).await;
    assert_eq!(server.ok(Some(&on_it), NODE, json!({ "id": mine })).await["node"]["id"], mine);
    let body = server.gql(Some(&on_it), NODE, json!({ "id": project })).await;
    assert!(first_code(&body).is_some(), "the project is not that token's: {body}");
    // No token at all: UNAUTHENTICATED, as every read.
    assert_eq!(server.code(None, NODE, json!({ "id": mine })).await, "UNAUTHENTICATED");
    let many: Vec<Value> = (0..101).map(|_| json!(mine)).collect();
    assert_eq!(server.code(Some(&on_it), NODES, json!({ "ids": many })).await, "INVALID_INPUT");
});

/// Every object with an id, made once, and the id `node` is asked for with the type it answers.
async fn one_of_each(server: &TestServer) -> Vec<(String, &'static str)> {
    let pool = server.sim_pool("every", &["nyc3"], None).await;
    server.tenant("acme").await;
    server.offer(&pool, "acme", json!([{ "resource": "diskGiB", "max": 100 }, { "resource": "instances", "max": 5 }, { "resource": "addresses", "max": 5 }])).await;
    let net = network(server, "acme", &pool, "every").await;
    let q = "query($n: String!, $t: String!) { network(tenantId: $t, networkId: $n) { subnets { id } } \
             pools(tenantId: $t) { id providerAccountId } }";
    let read = server.ok(Some(ADMIN), q, json!({ "n": net, "t": "acme" })).await;
    let subnet = read["network"]["subnets"][0]["id"].as_str().unwrap().to_owned();
    let account = read["pools"][0]["providerAccountId"].as_str().unwrap().to_owned();
    let instance = server
        .ok(
            Some(ADMIN),
            "mutation($i: InstanceCreateInput!) { instanceCreate(input: $i) { id } }",
            json!({ "i": { "tenantId": "acme", "poolId": pool, "name": "web", "region": "nyc3", "size": "s-1vcpu-1gb",
                "image": "ubuntu-24-04-x64", "idempotencyKey": "web" } }),
        )
        .await["instanceCreate"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let volume = server
        .ok(
            Some(ADMIN),
            "mutation($i: ProviderVolumeCreateInput!) { providerVolumeCreate(input: $i) { id attachment { id } } }",
            json!({ "i": { "tenantId": "acme", "poolId": pool, "name": "data", "region": "nyc3", "sizeGiB": 10,
                "instanceId": instance, "idempotencyKey": "data" } }),
        )
        .await["providerVolumeCreate"]
        .clone();
    let address = server
        .ok(
            Some(ADMIN),
            "mutation($i: ProviderAddressCreateInput!) { providerAddressCreate(input: $i) { id } }",
            json!({ "i": { "tenantId": "acme", "poolId": pool, "name": "edge", "region": "nyc3", "idempotencyKey": "edge" } }),
        )
        .await["providerAddressCreate"]["id"]
        .clone();
    let snapshot = server
        .ok(
            Some(ADMIN),
            "mutation($i: ProviderVolumeSnapshotInput!) { providerVolumeSnapshot(input: $i) { id } }",
            json!({ "i": { "tenantId": "acme", "volumeId": volume["id"], "name": "nightly", "idempotencyKey": "nightly" } }),
        )
        .await["providerVolumeSnapshot"]["id"]
        .clone();
    let (_, token) = server.token_with_id(Some("acme"), &[("compute:*", "tenant/acme")]).await;
    let project = server.project("acme", "web").await;
    let id = |v: &Value| v.as_str().unwrap().to_owned();
    vec![
        ("acme".to_owned(), "Tenant"),
        (project, "Project"),
        (account, "ProviderAccount"),
        (pool, "Pool"),
        (token, "Token"),
        (net, "Network"),
        (subnet, "Subnet"),
        (instance, "Instance"),
        (id(&volume["id"]), "ProviderVolume"),
        (id(&volume["attachment"]["id"]), "Attachment"),
        (id(&snapshot), "ProviderSnapshot"),
        (id(&address), "ProviderAddress"),
    ]
}

db_test!(node_refetches_every_kind_of_object_it_names, |backend: Backend| async move {
    let server = TestServer::start(backend).await;
    let objects = one_of_each(&server).await;
    for (id, typename) in &objects {
        let found = server.ok(Some(ADMIN), NODES, json!({ "ids": [id] })).await;
        assert_eq!(found["nodes"][0], json!({ "__typename": typename, "id": id }), "{typename} {id}");
    }
    // A tenant's own token reads its tenant's objects and the pools offered to it. Its own
    // tenant's tokens only an operator reads (ACCESS_DENIED, as `tokens` says); the platform's
    // provider account is no object of its tenant (NOT_FOUND).
    let tenant = server.token(Some("acme"), &[("compute:*", "tenant/acme")]).await;
    for (id, typename) in &objects {
        let body = server.gql(Some(&tenant), NODE, json!({ "id": id })).await;
        match *typename {
            "Token" => assert_eq!(first_code(&body).as_deref(), Some("ACCESS_DENIED"), "{typename}: {body}"),
            "ProviderAccount" => assert_eq!(first_code(&body).as_deref(), Some("NOT_FOUND"), "{typename}: {body}"),
            _ => assert_eq!(body["data"]["node"]["id"], json!(id), "{typename}: {body}"),
        }
    }
    // Another tenant sees none of them: each is NOT_FOUND, so `nodes` answers null for all.
    server.tenant("globex").await;
    let globex = server.token(Some("globex"), &[("compute:*", "tenant/globex")]).await;
    let ids: Vec<&String> = objects.iter().map(|(id, _)| id).collect();
    let found = server.ok(Some(&globex), NODES, json!({ "ids": ids })).await;
    let nulls: Vec<Value> = objects.iter().map(|_| Value::Null).collect();
    assert_eq!(found["nodes"], json!(nulls), "{found}");
});
