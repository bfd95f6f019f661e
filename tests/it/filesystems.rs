//! Filesystems over HTTP: every rule of `filesystemCreate`, `filesystem(s)` and
//! `filesystemDelete` that the call itself decides, and what instances and networks refuse
//! because of them, each test named after its rule. What the reconciler does with them is in
//! `filesystems_e2e.rs`; here no reconciler runs, so each row stays as the call wrote it.
use crate::common;

use common::Backend;
use serde_json::{Value, json};

const CREATE: &str = "mutation($i: FilesystemCreateInput!) { filesystemCreate(input: $i) { id name kind sizeGiB deployment zone region state desiredState version mount { source } } }";
const DELETE: &str = "mutation($n: String!, $f: String!) { filesystemDelete(input: { tenantId: \"acme\", networkId: $n, filesystemId: $f }) { id state desiredState version } }";
const LIST: &str = "query($n: String!) { filesystems(tenantId: \"acme\", networkId: $n) { id name state } }";

struct Setup {
    app: common::TestApp,
    /// On the tenant's own AWS account: the one whose VPCs it may adopt.
    byo_pool: String,
    do_pool: String,
    network: String,
}

impl std::ops::Deref for Setup {
    type Target = common::TestApp;
    fn deref(&self) -> &common::TestApp {
        &self.app
    }
}

/// An AWS account (us-east-1, three zones) at the in-process sim, a pool offered to `acme`, and
/// an AWS network with subnets in the first two zones (pending: the clock never moves).
async fn setup(backend: Backend) -> Setup {
    // No reconciler runs: what is asserted here is what the calls themselves record.
    let app =
        common::TestApp::on_clock(backend).aws(&["us-east-1a", "us-east-1b", "us-east-1c"]).workers(0).build().await;
    let (_, byo_pool) = app.server.aws_sim_pool("own", &["us-east-1a"], Some("acme")).await;
    app.server.offer(&byo_pool, "acme", json!([])).await;
    let do_pool = app.server.sim_pool("do", &["nyc3"], None).await;
    app.server.offer(&do_pool, "acme", json!([])).await;
    let mut s = Setup { app, byo_pool, do_pool, network: String::new() };
    s.network = s.aws_network("lan", "10.20.0.0/16").await;
    s
}

impl Setup {
    async fn aws_network(&self, name: &str, block: &str) -> String {
        let prefix = block.trim_end_matches(".0.0/16");
        let subnets = json!([
            { "zone": "us-east-1a", "ipRange": format!("{prefix}.1.0/24") },
            { "zone": "us-east-1b", "ipRange": format!("{prefix}.2.0/24") },
        ]);
        let input = json!({ "tenantId": "acme", "poolId": self.pool, "name": name, "ipRange": block, "subnets": subnets, "idempotencyKey": name });
        let made = self
            .server
            .ok(
                Some(&self.token),
                "mutation($i: NetworkCreateInput!) { networkCreate(input: $i) { id region ipRange subnets { zone region } } }",
                json!({ "i": input }),
            )
            .await;
        assert_eq!(made["networkCreate"]["region"], "us-east-1");
        assert_eq!(made["networkCreate"]["subnets"][1]["zone"], "us-east-1b");
        made["networkCreate"]["id"].as_str().unwrap().to_owned()
    }

    fn input(&self, name: &str, kind: &str, extra: Value) -> Value {
        let mut input = json!({ "tenantId": "acme", "networkId": self.network, "name": name, "kind": kind, "idempotencyKey": name });
        for (k, v) in extra.as_object().unwrap() {
            input[k] = v.clone();
        }
        json!({ "i": input })
    }

    async fn create(&self, name: &str, kind: &str, extra: Value) -> Value {
        self.server.gql(Some(&self.token), CREATE, self.input(name, kind, extra)).await
    }

    async fn created(&self, name: &str, kind: &str, extra: Value) -> Value {
        let body = self.create(name, kind, extra).await;
        assert!(body["errors"].is_null(), "{body}");
        body["data"]["filesystemCreate"].clone()
    }

    async fn list(&self) -> Vec<Value> {
        self.server.ok(Some(&self.token), LIST, json!({ "n": self.network })).await["filesystems"]
            .as_array()
            .unwrap()
            .clone()
    }
}

fn code(body: &Value) -> &str {
    body["errors"][0]["extensions"]["code"].as_str().unwrap_or_default()
}

fn field(body: &Value) -> &str {
    body["errors"][0]["extensions"]["details"]["field"].as_str().unwrap_or_default()
}

db_test!(filesystems_are_unsupported_on_a_provider_without_them, |backend: Backend| async move {
    let s = setup(backend).await;
    let input = json!({ "i": { "tenantId": "acme", "poolId": s.do_pool, "name": "do", "subnets": [{ "region": "nyc3", "ipRange": "10.9.0.0/24" }], "idempotencyKey": "do" } });
    let network = s
        .server
        .ok(Some(&s.token), "mutation($i: NetworkCreateInput!) { networkCreate(input: $i) { id } }", input)
        .await["networkCreate"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let body = s
        .server
        .gql(
            Some(&s.token),
            CREATE,
            json!({ "i": { "tenantId": "acme", "networkId": network, "name": "x", "kind": "NFS", "idempotencyKey": "x" } }),
        )
        .await;
    assert_eq!(code(&body), "UNSUPPORTED", "{body}");
    assert_eq!(body["errors"][0]["extensions"]["details"]["reason"], "filesystems");
    let listed = s.server.ok(Some(&s.token), LIST, json!({ "n": network })).await;
    assert_eq!(listed["filesystems"], json!([]), "nothing recorded");
});

db_test!(an_nfs_filesystem_takes_no_size_deployment_or_zone, |backend: Backend| async move {
    let s = setup(backend).await;
    for (extra, wrong) in [
        (json!({ "sizeGiB": 1200 }), "sizeGiB"),
        (json!({ "deployment": "SCRATCH" }), "deployment"),
        (json!({ "zone": "us-east-1a" }), "zone"),
    ] {
        let body = s.create("shared", "NFS", extra).await;
        assert_eq!((code(&body), field(&body)), ("INVALID_INPUT", wrong), "{body}");
    }
    let made = s.created("shared", "NFS", json!({})).await;
    assert_eq!(made["kind"], "NFS");
    assert_eq!(
        (made["sizeGiB"].clone(), made["zone"].clone(), made["deployment"].clone()),
        (Value::Null, Value::Null, Value::Null)
    );
    assert_eq!((made["state"].as_str(), made["region"].as_str()), (Some("PENDING"), Some("us-east-1")));
    assert!(made["mount"].is_null(), "no mount before it is ready");
    assert!(made["id"].as_str().unwrap().starts_with("fs_"));
});

db_test!(
    a_lustre_filesystem_is_1200_gib_or_a_multiple_of_2400_and_defaults_to_scratch_in_the_first_zone,
    |backend: Backend| async move {
        let s = setup(backend).await;
        let made = s.created("scratch", "LUSTRE", json!({})).await;
        assert_eq!((made["sizeGiB"].as_i64(), made["deployment"].as_str()), (Some(1200), Some("SCRATCH")));
        assert_eq!(made["zone"], "us-east-1a", "the account's first zone");
        for size in [2400, 4800] {
            let made = s
                .created(&format!("big{size}"), "LUSTRE", json!({ "sizeGiB": size, "deployment": "PERSISTENT" }))
                .await;
            assert_eq!((made["sizeGiB"].as_i64(), made["deployment"].as_str()), (Some(size), Some("PERSISTENT")));
        }
        for size in [1, 1199, 1201, 3600, 2401] {
            let body = s.create(&format!("odd{size}"), "LUSTRE", json!({ "sizeGiB": size })).await;
            assert_eq!((code(&body), field(&body)), ("INVALID_INPUT", "sizeGiB"), "{size}: {body}");
        }
        for size in [0, 1_000_001] {
            let body = s.create("range", "LUSTRE", json!({ "sizeGiB": size })).await;
            assert_eq!(code(&body), "INVALID_INPUT", "{size}: {body}");
        }
        assert_eq!(s.list().await.len(), 3, "nothing recorded for a size the provider can never make");
    }
);

db_test!(a_lustre_zone_is_one_of_the_accounts_where_the_network_has_a_subnet, |backend: Backend| async move {
    let s = setup(backend).await;
    let made = s.created("second", "LUSTRE", json!({ "zone": "us-east-1b" })).await;
    assert_eq!(made["zone"], "us-east-1b");
    let elsewhere = s.create("west", "LUSTRE", json!({ "zone": "us-west-2a" })).await;
    assert_eq!((code(&elsewhere), field(&elsewhere)), ("INVALID_INPUT", "zone"), "{elsewhere}");
    let no_subnet = s.create("third", "LUSTRE", json!({ "zone": "us-east-1c" })).await;
    assert_eq!((code(&no_subnet), field(&no_subnet)), ("INVALID_INPUT", "zone"), "{no_subnet}");
    assert_eq!(s.list().await.len(), 1);
});

db_test!(a_filesystem_name_is_unique_in_the_network, |backend: Backend| async move {
    let s = setup(backend).await;
    s.created("data", "NFS", json!({})).await;
    let mut again = s.input("data", "LUSTRE", json!({}));
    again["i"]["idempotencyKey"] = json!("another-key");
    let body = s.server.gql(Some(&s.token), CREATE, again).await;
    assert_eq!((code(&body), field(&body)), ("CONFLICT", "name"), "{body}");
    // The same name on another network is another filesystem.
    let other = s.aws_network("other", "10.30.0.0/16").await;
    let input = json!({ "i": { "tenantId": "acme", "networkId": other, "name": "data", "kind": "NFS", "idempotencyKey": "other-data" } });
    let body = s.server.gql(Some(&s.token), CREATE, input).await;
    assert!(body["errors"].is_null(), "{body}");
});

db_test!(a_network_holds_at_most_8_filesystems_that_are_not_deleted, |backend: Backend| async move {
    let s = setup(backend).await;
    for n in 0..8 {
        s.created(&format!("fs{n}"), "NFS", json!({})).await;
    }
    let body = s.create("fs8", "NFS", json!({})).await;
    assert_eq!(code(&body), "QUOTA_EXCEEDED", "{body}");
    assert_eq!(body["errors"][0]["extensions"]["details"]["limit"], 8);
    assert_eq!(s.list().await.len(), 8);
});

db_test!(filesystem_create_is_idempotent_by_key, |backend: Backend| async move {
    let s = setup(backend).await;
    let first = s.created("data", "NFS", json!({})).await;
    let replay = s.created("data", "NFS", json!({})).await;
    assert_eq!(first["id"], replay["id"], "the same request under the same key returns the filesystem");
    let mut changed = s.input("data", "LUSTRE", json!({}));
    changed["i"]["name"] = json!("other");
    let body = s.server.gql(Some(&s.token), CREATE, changed).await;
    assert_eq!(code(&body), "CONFLICT", "another request under the key: {body}");
    assert_eq!(s.list().await.len(), 1);
});

db_test!(a_network_being_deleted_takes_no_filesystems, |backend: Backend| async move {
    let s = setup(backend).await;
    let delete = "mutation($n: String!) { networkDelete(input: { tenantId: \"acme\", networkId: $n }) { state } }";
    assert_eq!(
        s.server.ok(Some(&s.token), delete, json!({ "n": s.network })).await["networkDelete"]["state"],
        "DELETING"
    );
    let body = s.create("late", "NFS", json!({})).await;
    assert_eq!(code(&body), "INVALID_STATE", "{body}");
});

db_test!(an_adopted_network_takes_no_filesystems, |backend: Backend| async move {
    let s = setup(backend).await;
    let adopt = "mutation($i: NetworkAdoptInput!) { networkAdopt(input: $i) { id adopted providerId state } }";
    let input = json!({ "i": { "tenantId": "acme", "poolId": s.byo_pool, "name": "theirs", "vpcId": "vpc-0a1b2c3d4e5f60718", "idempotencyKey": "theirs" } });
    let adopted = s.server.ok(Some(&s.token), adopt, input).await["networkAdopt"].clone();
    assert_eq!(
        (adopted["adopted"].as_bool(), adopted["providerId"].as_str()),
        (Some(true), Some("vpc-0a1b2c3d4e5f60718"))
    );
    let body = s
        .server
        .gql(
            Some(&s.token),
            CREATE,
            json!({ "i": { "tenantId": "acme", "networkId": adopted["id"], "name": "x", "kind": "NFS", "idempotencyKey": "x" } }),
        )
        .await;
    assert_eq!((code(&body), field(&body)), ("INVALID_INPUT", "networkId"), "{body}");
    assert_eq!(body["errors"][0]["extensions"]["details"]["reason"], "adopted");
});

db_test!(network_adopt_is_for_the_tenants_own_aws_account_and_one_network_per_vpc, |backend: Backend| async move {
    let s = setup(backend).await;
    let adopt = "mutation($i: NetworkAdoptInput!) { networkAdopt(input: $i) { id } }";
    let input = |pool: &str, name: &str| json!({ "i": { "tenantId": "acme", "poolId": pool, "name": name, "vpcId": "vpc-0123abcd", "idempotencyKey": name } });
    let body = s.server.gql(Some(&s.token), adopt, input(&s.do_pool, "do")).await;
    assert_eq!(code(&body), "UNSUPPORTED", "{body}");
    let platform = s.server.gql(Some(&s.token), adopt, input(&s.pool, "platform")).await;
    assert_eq!((code(&platform), field(&platform)), ("INVALID_INPUT", "poolId"), "{platform}");
    assert_eq!(platform["errors"][0]["extensions"]["details"]["reason"], "notOwnAccount");
    s.server.ok(Some(&s.token), adopt, input(&s.byo_pool, "once")).await;
    let twice = s.server.gql(Some(&s.token), adopt, input(&s.byo_pool, "twice")).await;
    assert_eq!((code(&twice), field(&twice)), ("CONFLICT", "vpcId"), "{twice}");
    let bad = json!({ "i": { "tenantId": "acme", "poolId": s.byo_pool, "name": "bad", "vpcId": "vpc-XYZ", "idempotencyKey": "bad" } });
    let body = s.server.gql(Some(&s.token), adopt, bad).await;
    assert_eq!((code(&body), field(&body)), ("INVALID_INPUT", "vpcId"), "{body}");
});

db_test!(filesystems_are_listed_by_name_and_read_on_the_network, |backend: Backend| async move {
    let s = setup(backend).await;
    for name in ["zeta", "alpha", "mid"] {
        s.created(name, "NFS", json!({})).await;
    }
    let names: Vec<String> = s.list().await.iter().map(|f| f["name"].as_str().unwrap().to_owned()).collect();
    assert_eq!(names, ["alpha", "mid", "zeta"]);
    let id = s.list().await[0]["id"].as_str().unwrap().to_owned();
    let get = "query($n: String!, $f: String!) { filesystem(tenantId: \"acme\", networkId: $n, filesystemId: $f) { name networkId } }";
    let read = s.server.ok(Some(&s.token), get, json!({ "n": s.network, "f": id })).await;
    assert_eq!(read["filesystem"]["name"], "alpha");
    // Decided on the network: read on it suffices to read, update is needed to change.
    let reader = s.server.token(Some("acme"), &[("compute:networks:read", &format!("network/{}", s.network))]).await;
    let read = s.server.ok(Some(&reader), get, json!({ "n": s.network, "f": id })).await;
    assert_eq!(read["filesystem"]["networkId"], s.network.as_str());
    let body = s.server.gql(Some(&reader), CREATE, s.input("nope", "NFS", json!({}))).await;
    assert_eq!(code(&body), "ACCESS_DENIED", "{body}");
    let body = s.server.gql(Some(&reader), DELETE, json!({ "n": s.network, "f": id })).await;
    assert_eq!(code(&body), "ACCESS_DENIED", "{body}");
    let stranger = s.server.token(Some("acme"), &[("compute:volumes:*", "tenant/acme")]).await;
    let body = s.server.gql(Some(&stranger), get, json!({ "n": s.network, "f": id })).await;
    assert_eq!(code(&body), "ACCESS_DENIED", "{body}");
    // `node` decides it as the filesystem's own read, on its network.
    let node = "query($f: ID!) { node(id: $f) { __typename ... on Filesystem { name } } }";
    let found = s.server.ok(Some(&reader), node, json!({ "f": id })).await;
    assert_eq!(found["node"], json!({ "__typename": "Filesystem", "name": "alpha" }));
    assert_eq!(code(&s.server.gql(Some(&stranger), node, json!({ "f": id })).await), "ACCESS_DENIED");
    // Another network's id does not reach it.
    let other = s.aws_network("other", "10.30.0.0/16").await;
    let body = s.server.gql(Some(&s.token), get, json!({ "n": other, "f": id })).await;
    assert_eq!(code(&body), "NOT_FOUND", "{body}");
});

db_test!(filesystem_delete_marks_it_deleting_and_again_returns_it_unchanged, |backend: Backend| async move {
    let s = setup(backend).await;
    let made = s.created("data", "NFS", json!({})).await;
    let id = made["id"].as_str().unwrap().to_owned();
    let deleting =
        s.server.ok(Some(&s.token), DELETE, json!({ "n": s.network, "f": id })).await["filesystemDelete"].clone();
    assert_eq!((deleting["state"].as_str(), deleting["desiredState"].as_str()), (Some("DELETING"), Some("ABSENT")));
    assert_eq!(deleting["version"].as_i64(), Some(made["version"].as_i64().unwrap() + 1), "version bumped");
    let again =
        s.server.ok(Some(&s.token), DELETE, json!({ "n": s.network, "f": id })).await["filesystemDelete"].clone();
    assert_eq!(again, deleting, "deleting one being deleted returns it unchanged");
});

db_test!(filesystem_events_are_the_networks_with_network_and_filesystem_ids, |backend: Backend| async move {
    let s = setup(backend).await;
    let made = s.created("data", "NFS", json!({})).await;
    let id = made["id"].as_str().unwrap().to_owned();
    s.server.ok(Some(&s.token), DELETE, json!({ "n": s.network, "f": id })).await;
    // PostgreSQL hands out an event once every older transaction of the cluster has ended (other
    // tests run beside this one): read until the last one is there.
    let query = "{ events(tenantId: \"acme\", first: 50) { edges { node { type subject data } } } }";
    let mut edges: Vec<Value> = Vec::new();
    for _ in 0..400 {
        let events = s.server.ok(Some(&s.token), query, json!({})).await;
        edges = events["events"]["edges"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["node"]["type"].as_str().unwrap().starts_with("network.filesystem."))
            .cloned()
            .collect();
        if edges.iter().any(|e| e["node"]["type"] == "network.filesystem.deleting") {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(25)).await;
    }
    let types: Vec<&str> = edges.iter().map(|e| e["node"]["type"].as_str().unwrap()).collect();
    assert_eq!(types, ["network.filesystem.created", "network.filesystem.deleting"]);
    for e in &edges {
        assert_eq!(e["node"]["subject"], s.network.as_str(), "published on the network");
        assert_eq!(e["node"]["data"]["networkId"], s.network.as_str());
        assert_eq!(e["node"]["data"]["filesystemId"], id.as_str());
    }
});

db_test!(network_delete_is_refused_while_filesystems_are_on_it, |backend: Backend| async move {
    let s = setup(backend).await;
    let a = s.created("a", "NFS", json!({})).await["id"].as_str().unwrap().to_owned();
    let b = s.created("b", "LUSTRE", json!({})).await["id"].as_str().unwrap().to_owned();
    let delete = "mutation($n: String!) { networkDelete(input: { tenantId: \"acme\", networkId: $n }) { state } }";
    let body = s.server.gql(Some(&s.token), delete, json!({ "n": s.network })).await;
    assert_eq!(code(&body), "INVALID_STATE", "{body}");
    let mut ids = vec![a, b];
    ids.sort();
    assert_eq!(body["errors"][0]["extensions"]["details"]["filesystemIds"], json!(ids));
});

db_test!(an_aws_instance_runs_in_a_subnet_of_a_network_in_its_zone, |backend: Backend| async move {
    let s = setup(backend).await;
    let create = "mutation($i: InstanceCreateInput!) { instanceCreate(input: $i) { id zone state } }";
    let input = |extra: Value| {
        let mut i = json!({ "tenantId": "acme", "poolId": s.pool, "name": "m", "region": "us-east-1", "size": "t3.micro", "image": "ami-0abc", "idempotencyKey": "m" });
        for (k, v) in extra.as_object().unwrap() {
            i[k] = v.clone();
        }
        json!({ "i": i })
    };
    let body = s.server.gql(Some(&s.token), create, input(json!({}))).await;
    assert_eq!((code(&body), field(&body)), ("INVALID_INPUT", "networkId"), "{body}");
    let body =
        s.server.gql(Some(&s.token), create, input(json!({ "networkId": s.network, "zone": "us-east-1c" }))).await;
    assert_eq!((code(&body), field(&body)), ("INVALID_INPUT", "zone"), "no subnet in that zone: {body}");
    let made = s.server.ok(Some(&s.token), create, input(json!({ "networkId": s.network }))).await;
    assert_eq!(made["instanceCreate"]["zone"], "us-east-1a", "the account's first zone with a subnet");
});

db_test!(
    instance_filesystems_are_at_most_16_at_plain_absolute_paths_outside_the_system,
    |backend: Backend| async move {
        let s = setup(backend).await;
        let fs = s.created("data", "NFS", json!({})).await["id"].as_str().unwrap().to_owned();
        let create = "mutation($i: InstanceCreateInput!) { instanceCreate(input: $i) { id } }";
        let with = |mounts: Value| json!({ "i": { "tenantId": "acme", "poolId": s.pool, "networkId": s.network, "name": "m", "region": "us-east-1", "size": "t3.micro", "image": "ami-0abc", "idempotencyKey": "m", "filesystems": mounts } });
        let seventeen: Vec<Value> = (0..17)
            .map(|n| json!({ "filesystem": format!("fs_01jz00000000000000000000{n:02}"), "path": format!("/mnt/{n}") }))
            .collect();
        let body = s.server.gql(Some(&s.token), create, with(json!(seventeen))).await;
        assert_eq!((code(&body), field(&body)), ("INVALID_INPUT", "filesystems"), "{body}");
        assert_eq!(body["errors"][0]["extensions"]["details"]["limit"], 16);
        for path in [
            "mnt/data",
            "/",
            "/etc",
            "/usr/local/data",
            "/var/lib/x",
            "/mnt/../etc",
            "/mnt//x",
            "/mnt/a b",
            "/mnt/$(x)",
            "/mnt/'q'",
        ] {
            let body = s.server.gql(Some(&s.token), create, with(json!([{ "filesystem": fs, "path": path }]))).await;
            assert_eq!((code(&body), field(&body)), ("INVALID_INPUT", "filesystems.path"), "{path}: {body}");
        }
        let twice = json!([{ "filesystem": fs, "path": "/data" }, { "filesystem": fs, "path": "/data2" }]);
        let body = s.server.gql(Some(&s.token), create, with(twice)).await;
        assert_eq!(code(&body), "INVALID_INPUT", "{body}");
        // A filesystem that is not ready yet cannot be mounted.
        let body = s.server.gql(Some(&s.token), create, with(json!([{ "filesystem": fs, "path": "/data" }]))).await;
        assert_eq!(code(&body), "INVALID_STATE", "{body}");
        assert_eq!(body["errors"][0]["extensions"]["details"]["reason"], "notReady");
        let unknown = json!([{ "filesystem": "fs_01jz0000000000000000000000", "path": "/data" }]);
        let body = s.server.gql(Some(&s.token), create, with(unknown)).await;
        assert_eq!(code(&body), "NOT_FOUND", "{body}");
        let listed =
            s.server.ok(Some(&s.token), "{ instances(tenantId: \"acme\") { edges { cursor } } }", json!({})).await;
        assert_eq!(listed["instances"]["edges"], json!([]), "nothing recorded");
    }
);

db_test!(
    a_lustre_filesystem_defaults_to_the_first_of_the_accounts_zones_where_the_network_has_a_subnet,
    |backend: Backend| async move {
        let s = setup(backend).await;
        let input = json!({ "i": { "tenantId": "acme", "poolId": s.pool, "name": "east-b", "ipRange": "10.40.0.0/16",
        "subnets": [{ "zone": "us-east-1b", "ipRange": "10.40.2.0/24" }], "idempotencyKey": "east-b" } });
        let network = s
            .server
            .ok(Some(&s.token), "mutation($i: NetworkCreateInput!) { networkCreate(input: $i) { id } }", input)
            .await["networkCreate"]["id"]
            .as_str()
            .unwrap()
            .to_owned();
        let input = json!({ "i": { "tenantId": "acme", "networkId": network, "name": "ckpt", "kind": "LUSTRE", "idempotencyKey": "ckpt" } });
        let made = s.server.ok(Some(&s.token), CREATE, input).await;
        assert_eq!(
            made["filesystemCreate"]["zone"], "us-east-1b",
            "not the account's first zone, where it has no subnet"
        );
    }
);

db_test!(mounting_filesystems_is_decided_on_their_network, |backend: Backend| async move {
    let s = setup(backend).await;
    let fs = s.created("data", "NFS", json!({})).await["id"].as_str().unwrap().to_owned();
    // May make instances in the tenant, but not read its networks.
    let token = s.server.token(Some("acme"), &[("compute:instances:*", "tenant/acme")]).await;
    let input = json!({ "i": { "tenantId": "acme", "poolId": s.pool, "networkId": s.network, "name": "m", "region": "us-east-1",
        "size": "t3.micro", "image": "ami-0abc", "idempotencyKey": "m", "filesystems": [{ "filesystem": fs, "path": "/data" }] } });
    let body = s
        .server
        .gql(Some(&token), "mutation($i: InstanceCreateInput!) { instanceCreate(input: $i) { id } }", input)
        .await;
    assert_eq!(code(&body), "ACCESS_DENIED", "{body}");
});

// Issue 33: deletion protection, as on volumes, snapshots and addresses (`protection.rs`).
db_test!(a_protected_filesystems_delete_is_refused_until_an_update_turns_it_off, |backend: Backend| async move {
    let s = setup(backend).await;
    let made = s.created("data", "NFS", json!({ "deletionProtection": true })).await;
    let id = made["id"].as_str().unwrap();
    let refused = s.server.gql(Some(&s.token), DELETE, json!({ "n": s.network, "f": id })).await;
    assert_eq!(code(&refused), "INVALID_STATE", "{refused}");
    assert_eq!(refused["errors"][0]["extensions"]["details"]["reason"], "deletionProtected");
    let update = "mutation($n: String!, $f: String!, $on: Boolean) { filesystemUpdate(input: { tenantId: \"acme\", networkId: $n, filesystemId: $f, deletionProtection: $on }) { deletionProtection version } }";
    let same = s.server.ok(Some(&s.token), update, json!({ "n": s.network, "f": id, "on": true })).await;
    assert_eq!(same["filesystemUpdate"]["version"], made["version"], "the refusal wrote nothing");
    let off = s.server.ok(Some(&s.token), update, json!({ "n": s.network, "f": id, "on": false })).await;
    assert_eq!(
        off["filesystemUpdate"],
        json!({ "deletionProtection": false, "version": made["version"].as_i64().unwrap() + 1 })
    );
    let deleting = s.server.ok(Some(&s.token), DELETE, json!({ "n": s.network, "f": id })).await;
    assert_eq!(deleting["filesystemDelete"]["state"], "DELETING");
});
