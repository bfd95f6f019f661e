//! The platform's account is metered and bounded: instances book `instances` and their size's
//! disk on `diskGiB`, networks book `networks`, filesystems `filesystems` and their size on
//! `filesystemGiB`; each fails closed, books nothing for a refused call, and is refunded once the
//! provider has deleted the resource; the usage pass meters instances and filesystems. A pool
//! may list the machine sizes and images it offers, and a machine left running when its row is
//! deleted (`onDelete: DETACH`) is a tenant's own account's only.
use crate::common;

use common::{ADMIN, Backend, TestApp, until};
use serde_json::{Value, json};
use vps_graph::reconcile::usage::{self, HOUR_MS};

const INSTANCE: &str = "mutation($i: InstanceCreateInput!) { instanceCreate(input: $i) { id state } }";
const NETWORK: &str = "mutation($i: NetworkCreateInput!) { networkCreate(input: $i) { id state } }";
const FILESYSTEM: &str = "mutation($i: FilesystemCreateInput!) { filesystemCreate(input: $i) { id state } }";

local_app!(Metered);

impl Metered {
    async fn used(&self) -> Value {
        let quotas = self
            .server
            .ok(
                Some(&self.token),
                "query($p: String) { quotas(tenantId: \"acme\", poolId: $p) { resource used } }",
                json!({ "p": self.pool }),
            )
            .await;
        let mut used = serde_json::Map::new();
        for q in quotas["quotas"].as_array().unwrap() {
            used.insert(q["resource"].as_str().unwrap().to_owned(), q["used"].clone());
        }
        Value::Object(used)
    }

    fn machine(&self, name: &str, extra: Value) -> Value {
        let mut input = json!({ "tenantId": "acme", "poolId": self.pool, "name": name, "region": "nyc3",
            "size": "s-1vcpu-1gb", "image": "ubuntu-24-04-x64", "idempotencyKey": name });
        for (k, v) in extra.as_object().unwrap() {
            input[k] = v.clone();
        }
        input
    }

    async fn events(&self) -> usize {
        let query = "{ events(tenantId: \"acme\", first: 1000) { edges { cursor } } }";
        self.server.ok(Some(ADMIN), query, json!({})).await["events"]["edges"].as_array().unwrap().len()
    }

    async fn read(&self, query: &str, id: &str) -> Value {
        self.server.ok(Some(&self.token), query, json!({ "id": id })).await
    }
}

fn code(body: &Value) -> (String, Value) {
    let error = &body["errors"][0]["extensions"];
    (error["code"].as_str().unwrap_or_default().to_owned(), error["details"].clone())
}

db_test!(
    an_instance_books_one_instance_and_its_sizes_disk_and_is_refunded_once_deleted,
    |backend: Backend| async move {
        let app: Metered = TestApp::driven(backend)
            .quotas(json!([{ "resource": "instances", "max": 1 }, { "resource": "diskGiB", "max": 40 }]))
            .build()
            .await
            .into();
        let made = app.server.ok(Some(&app.token), INSTANCE, json!({ "i": app.machine("one", json!({})) })).await;
        let id = made["instanceCreate"]["id"].as_str().unwrap().to_owned();
        assert_eq!(
            app.used().await,
            json!({ "instances": 1, "diskGiB": 25, "networks": 0, "filesystems": 0, "filesystemGiB": 0 })
        );
        // The replay books nothing more; a second machine finds no instance left, and writes nothing.
        app.server.ok(Some(&app.token), INSTANCE, json!({ "i": app.machine("one", json!({})) })).await;
        // The first machine's run may still be writing what its create did: counted once it is done.
        common::idle(&app.server, &app.clock, &id).await;
        let before = app.events().await;
        let refused = app.server.gql(Some(&app.token), INSTANCE, json!({ "i": app.machine("two", json!({})) })).await;
        assert_eq!(code(&refused).0, "QUOTA_EXCEEDED", "{refused}");
        assert_eq!(code(&refused).1["resource"], "instances", "{refused}");
        assert_eq!(app.events().await, before, "nothing recorded");
        assert_eq!(app.used().await["diskGiB"], 25, "nothing half-booked");
        // Deleted at the provider: both are given back.
        let read = "query($id: String!) { instance(tenantId: \"acme\", instanceId: $id) { state } }";
        until(&app, "ready", || app.read(read, &id), |v| v["instance"]["state"] == "READY").await;
        let delete = "mutation($i: InstanceDeleteInput!) { instanceDelete(input: $i) { state } }";
        app.server.ok(Some(&app.token), delete, json!({ "i": { "tenantId": "acme", "instanceId": id } })).await;
        let gone = "query { instances(tenantId: \"acme\", includeDeleted: true) { edges { node { state } } } }";
        until(
            &app,
            "deleted",
            || app.server.ok(Some(&app.token), gone, json!({})),
            |v| v["instances"]["edges"][0]["node"]["state"] == "DELETED",
        )
        .await;
        assert_eq!(app.used().await["instances"], 0);
        assert_eq!(app.used().await["diskGiB"], 0);
    }
);

db_test!(an_instance_without_an_instances_quota_is_refused_on_a_platform_pool, |backend: Backend| async move {
    let app: Metered = TestApp::driven(backend).workers(0).build().await.into();
    app.server.tenant("bare").await;
    app.server.offer_exactly(&app.pool, "bare", json!([{ "resource": "diskGiB", "max": 1000 }])).await;
    let bare = app.server.token(Some("bare"), &[("compute:*", "tenant/bare")]).await;
    let mut input = app.machine("m", json!({}));
    input["tenantId"] = json!("bare");
    let refused = app.server.gql(Some(&bare), INSTANCE, json!({ "i": input })).await;
    assert_eq!(code(&refused).0, "QUOTA_EXCEEDED", "fail closed: {refused}");
    let listed = app
        .server
        .ok(Some(&bare), "{ instances(tenantId: \"bare\", includeDeleted: true) { edges { cursor } } }", json!({}))
        .await;
    assert_eq!(listed["instances"]["edges"], json!([]), "nothing recorded");
});

db_test!(detach_on_delete_is_refused_on_a_platform_pool_and_taken_on_a_tenants_own, |backend: Backend| async move {
    let app: Metered = TestApp::driven(backend).workers(0).build().await.into();
    let refused = app
        .server
        .gql(Some(&app.token), INSTANCE, json!({ "i": app.machine("keep", json!({ "onDelete": "DETACH" })) }))
        .await;
    assert_eq!(code(&refused), ("INVALID_INPUT".into(), json!({ "field": "onDelete", "reason": "platformAccount" })));
    assert_eq!(app.used().await["instances"], 0, "nothing booked");
    let own: Metered = TestApp::driven(backend).workers(0).own_account().build().await.into();
    let made = own
        .server
        .ok(Some(&own.token), INSTANCE, json!({ "i": own.machine("keep", json!({ "onDelete": "DETACH" })) }))
        .await;
    assert_eq!(made["instanceCreate"]["state"], "PENDING");
});

db_test!(a_pool_that_lists_its_machines_refuses_any_other, |backend: Backend| async move {
    let app: Metered = TestApp::driven(backend).workers(0).build().await.into();
    let unknown = app
        .server
        .gql(Some(&app.token), INSTANCE, json!({ "i": app.machine("x", json!({ "size": "s-64vcpu-1tb" })) }))
        .await;
    assert_eq!(
        code(&unknown),
        ("INVALID_INPUT".into(), json!({ "field": "size", "reason": "size" })),
        "a size no one makes"
    );
    let set = "mutation($i: PoolMachinesSetInput!) { poolMachinesSet(input: $i) { sizes images } }";
    let machines = json!({ "poolId": app.pool, "sizes": ["s-1vcpu-2gb"], "images": ["debian-12-x64"] });
    let denied = app.server.gql(Some(&app.token), set, json!({ "i": machines })).await;
    assert_eq!(code(&denied).0, "ACCESS_DENIED", "an operator call");
    let listed = app.server.ok(Some(ADMIN), set, json!({ "i": machines })).await;
    assert_eq!(listed["poolMachinesSet"], json!({ "sizes": ["s-1vcpu-2gb"], "images": ["debian-12-x64"] }));
    let bad = json!({ "poolId": app.pool, "sizes": ["t3.micro"], "images": [] });
    assert_eq!(
        code(&app.server.gql(Some(ADMIN), set, json!({ "i": bad })).await).0,
        "INVALID_INPUT",
        "not DigitalOcean's"
    );
    let size = app
        .server
        .gql(Some(&app.token), INSTANCE, json!({ "i": app.machine("a", json!({ "image": "debian-12-x64" })) }))
        .await;
    assert_eq!(code(&size).0, "INVALID_INPUT");
    assert_eq!(code(&size).1["offered"], json!(["s-1vcpu-2gb"]), "{size}");
    let image = app
        .server
        .gql(Some(&app.token), INSTANCE, json!({ "i": app.machine("b", json!({ "size": "s-1vcpu-2gb" })) }))
        .await;
    assert_eq!(code(&image).1, json!({ "field": "image", "reason": "notOffered", "offered": ["debian-12-x64"] }));
    let fits = json!({ "size": "s-1vcpu-2gb", "image": "debian-12-x64" });
    app.server.ok(Some(&app.token), INSTANCE, json!({ "i": app.machine("c", fits) })).await;
    assert_eq!(app.used().await["diskGiB"], 50, "the size's disk");
    let pools = app.server.ok(Some(&app.token), "{ pools(tenantId: \"acme\") { sizes images } }", json!({})).await;
    assert_eq!(pools["pools"][0], json!({ "sizes": ["s-1vcpu-2gb"], "images": ["debian-12-x64"] }));
});

db_test!(networks_are_bounded_by_their_quota_and_refunded_once_deleted, |backend: Backend| async move {
    let app: Metered = TestApp::driven(backend)
        .regions(&["nyc3", "sfo3"])
        .quotas(json!([{ "resource": "networks", "max": 1 }]))
        .build()
        .await
        .into();
    let input = |name: &str, range: &str| {
        json!({ "i": { "tenantId": "acme", "poolId": app.pool, "name": name, "idempotencyKey": name,
            "subnets": [{ "region": "nyc3", "ipRange": range }] } })
    };
    let made = app.server.ok(Some(&app.token), NETWORK, input("one", "10.1.0.0/24")).await;
    let id = made["networkCreate"]["id"].as_str().unwrap().to_owned();
    assert_eq!(app.used().await["networks"], 1);
    let refused = app.server.gql(Some(&app.token), NETWORK, input("two", "10.2.0.0/24")).await;
    assert_eq!(code(&refused).0, "QUOTA_EXCEEDED", "{refused}");
    assert_eq!(code(&refused).1["resource"], "networks");
    let read = "query($id: String!) { network(tenantId: \"acme\", networkId: $id) { state } }";
    until(&app, "ready", || app.read(read, &id), |v| v["network"]["state"] == "READY").await;
    let delete = "mutation($i: NetworkDeleteInput!) { networkDelete(input: $i) { state } }";
    app.server.ok(Some(&app.token), delete, json!({ "i": { "tenantId": "acme", "networkId": id } })).await;
    until(&app, "deleted", || app.read(read, &id), |v| v["network"]["state"] == "DELETED").await;
    assert_eq!(app.used().await["networks"], 0);
    app.server.ok(Some(&app.token), NETWORK, input("two", "10.2.0.0/24")).await;
});

db_test!(filesystems_book_their_count_and_size_and_are_refunded_once_deleted, |backend: Backend| async move {
    let app: Metered = TestApp::driven(backend)
        .aws(&["us-east-1a"])
        .quotas(json!([{ "resource": "filesystems", "max": 2 }, { "resource": "filesystemGiB", "max": 2000 }]))
        .build()
        .await
        .into();
    let net = json!({ "i": { "tenantId": "acme", "poolId": app.pool, "name": "train", "idempotencyKey": "train",
        "ipRange": "10.20.0.0/16", "subnets": [{ "zone": "us-east-1a", "ipRange": "10.20.1.0/24" }] } });
    let network =
        app.server.ok(Some(&app.token), NETWORK, net).await["networkCreate"]["id"].as_str().unwrap().to_owned();
    let fs = |name: &str, extra: Value| {
        let mut input = json!({ "tenantId": "acme", "networkId": network, "name": name, "idempotencyKey": name });
        for (k, v) in extra.as_object().unwrap() {
            input[k] = v.clone();
        }
        json!({ "i": input })
    };
    let lustre =
        app.server.ok(Some(&app.token), FILESYSTEM, fs("ckpt", json!({ "kind": "LUSTRE", "sizeGiB": 1200 }))).await;
    let lustre = lustre["filesystemCreate"]["id"].as_str().unwrap().to_owned();
    assert_eq!(
        (app.used().await["filesystems"].clone(), app.used().await["filesystemGiB"].clone()),
        (json!(1), json!(1200))
    );
    let big =
        app.server.gql(Some(&app.token), FILESYSTEM, fs("more", json!({ "kind": "LUSTRE", "sizeGiB": 2400 }))).await;
    assert_eq!(code(&big).0, "QUOTA_EXCEEDED", "{big}");
    assert_eq!(code(&big).1["resource"], "filesystemGiB");
    app.server.ok(Some(&app.token), FILESYSTEM, fs("data", json!({ "kind": "NFS" }))).await;
    assert_eq!(app.used().await["filesystems"], 2, "an elastic one books no GiB");
    assert_eq!(app.used().await["filesystemGiB"], 1200);
    let third = app.server.gql(Some(&app.token), FILESYSTEM, fs("third", json!({ "kind": "NFS" }))).await;
    assert_eq!(code(&third).1["resource"], "filesystems");
    let read = "query($id: String!) { filesystems(tenantId: \"acme\", networkId: $id) { id state } }";
    until(
        &app,
        "ready",
        || app.read(read, &network),
        |v| v["filesystems"].as_array().unwrap().iter().all(|f| f["state"] == "READY"),
    )
    .await;
    let delete = "mutation($i: FilesystemDeleteInput!) { filesystemDelete(input: $i) { state } }";
    let gone = json!({ "i": { "tenantId": "acme", "networkId": network, "filesystemId": lustre } });
    app.server.ok(Some(&app.token), delete, gone).await;
    until(&app, "deleted", || app.read(read, &network), |v| v["filesystems"].as_array().unwrap().len() == 1).await;
    assert_eq!(
        (app.used().await["filesystems"].clone(), app.used().await["filesystemGiB"].clone()),
        (json!(1), json!(0))
    );
});

db_test!(instances_and_filesystems_are_metered_by_the_usage_pass, |backend: Backend| async move {
    let app: Metered = TestApp::driven(backend).aws(&["us-east-1a"]).build().await.into();
    let net = json!({ "i": { "tenantId": "acme", "poolId": app.pool, "name": "train", "idempotencyKey": "train",
        "ipRange": "10.20.0.0/16", "subnets": [{ "zone": "us-east-1a", "ipRange": "10.20.1.0/24" }] } });
    let network =
        app.server.ok(Some(&app.token), NETWORK, net).await["networkCreate"]["id"].as_str().unwrap().to_owned();
    let fs = json!({ "i": { "tenantId": "acme", "networkId": network, "name": "ckpt", "kind": "LUSTRE", "sizeGiB": 1200,
        "idempotencyKey": "ckpt" } });
    app.server.ok(Some(&app.token), FILESYSTEM, fs).await;
    let machine = json!({ "i": { "tenantId": "acme", "poolId": app.pool, "networkId": network, "name": "trainer",
        "region": "us-east-1", "size": "t3.micro", "image": "ami-0abcdef1234567890", "idempotencyKey": "trainer" } });
    let instance =
        app.server.ok(Some(&app.token), INSTANCE, machine).await["instanceCreate"]["id"].as_str().unwrap().to_owned();
    let ready = "query($id: String!) { instance(tenantId: \"acme\", instanceId: $id) { state } }";
    until(&app, "ready", || app.read(ready, &instance), |v| v["instance"]["state"] == "READY").await;
    let read = "query($id: String!) { filesystems(tenantId: \"acme\", networkId: $id) { state } }";
    until(&app, "ready", || app.read(read, &network), |v| v["filesystems"][0]["state"] == "READY").await;
    // Three whole hours later, the pass writes the hours that closed.
    let now = app.clock.now_ms();
    app.clock.advance(3 * HOUR_MS + (HOUR_MS - now.rem_euclid(HOUR_MS)));
    usage::pass(&app.server.app.services, app.clock.now()).await.unwrap();
    let query =
        "query($p: String!, $f: DateTime!, $t: DateTime!) { usage(tenantId: \"acme\", poolId: $p, from: $f, to: $t) {
        meters { meter sourceKind quantity windows } } }";
    let from = chrono::DateTime::from_timestamp_millis(common::START).unwrap().to_rfc3339();
    let to = chrono::DateTime::from_timestamp_millis(app.clock.now_ms()).unwrap().to_rfc3339();
    let meters =
        app.server.ok(Some(&app.token), query, json!({ "p": app.pool, "f": from, "t": to })).await["usage"]["meters"]
            .clone();
    let meter =
        |name: &str| meters.as_array().unwrap().iter().find(|m| m["meter"] == name).cloned().unwrap_or(Value::Null);
    let hours = meter("vps.instance.hours");
    assert_eq!(hours["sourceKind"], "instance", "{meters}");
    assert!(hours["windows"].as_i64().unwrap() >= 3, "{meters}");
    assert_eq!(hours["quantity"].as_f64().unwrap(), hours["windows"].as_f64().unwrap(), "one an hour");
    let gib = meter("vps.filesystem.gib.hours");
    assert_eq!(gib["sourceKind"], "filesystem", "{meters}");
    assert_eq!(gib["quantity"].as_f64().unwrap(), 1200.0 * gib["windows"].as_f64().unwrap(), "{meters}");
});
