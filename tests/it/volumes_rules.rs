//! The rules of the providerVolumes and providerSnapshots calls, each named after the seed
//! sentence it checks: what is refused (and that nothing is half-written), what is booked, and
//! what a repeated call returns.
use crate::common;

use std::time::Duration;

use common::{ADMIN, Backend};
use serde_json::{Value, json};

const CREATE: &str = "mutation($i: ProviderVolumeCreateInput!) { providerVolumeCreate(input: $i) { id state kind version sizeGiB attachment { instanceId state desiredState } } }";

local_app!(Setup);

async fn setup(backend: Backend) -> Setup {
    common::TestApp::real_time(backend)
        .regions(&["nyc3", "sfo3"])
        .quotas(json!([{ "resource": "diskGiB", "max": 1000 }]))
        .build()
        .await
        .into()
}

impl Setup {
    /// Waits until the reconciler leaves the volume alone for now (its next look is in the
    /// future), so a version read now is not bumped under the test.
    async fn settle(&self, id: &str) {
        let db = &self.server.app.services.db;
        for _ in 0..400 {
            let due = vps_graph::store::queue::item(db, "vps.provider-resources", id).await.unwrap();
            let now = chrono::Utc::now().timestamp_millis();
            if due.is_none_or(|(due, _, _)| due > now + 1_000) {
                tokio::time::sleep(Duration::from_millis(100)).await;
                return;
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
        panic!("volume {id} never settled");
    }

    async fn version(&self, id: &str) -> Value {
        let q = "query($v: String!) { providerVolume(tenantId: \"acme\", volumeId: $v) { version } }";
        self.server.ok(Some(&self.token), q, json!({ "v": id })).await["providerVolume"]["version"].clone()
    }

    fn volume(&self, name: &str, extra: Value) -> Value {
        let mut input = json!({ "tenantId": "acme", "poolId": self.pool, "name": name, "region": "nyc3", "sizeGiB": 10, "idempotencyKey": format!("{name}-key") });
        for (k, v) in extra.as_object().unwrap() {
            input[k] = v.clone();
        }
        json!({ "i": input })
    }

    async fn create(&self, name: &str, extra: Value) -> Value {
        self.server.ok(Some(&self.token), CREATE, self.volume(name, extra)).await["providerVolumeCreate"].clone()
    }

    async fn create_code(&self, name: &str, extra: Value) -> (String, Value) {
        let body = self.server.gql(Some(&self.token), CREATE, self.volume(name, extra)).await;
        (
            common::first_code(&body).unwrap_or_else(|| panic!("expected an error: {body}")),
            body["errors"][0]["extensions"]["details"].clone(),
        )
    }

    async fn used(&self) -> i64 {
        let data =
            self.server.ok(Some(&self.token), "{ quotas(tenantId: \"acme\") { resource used } }", json!({})).await;
        data["quotas"]
            .as_array()
            .unwrap()
            .iter()
            .find(|q| q["resource"] == "diskGiB")
            .map_or(0, |q| q["used"].as_i64().unwrap())
            - common::instance_disks(&self.server, &self.token).await
    }

    async fn instance(&self, name: &str, region: &str, network: Option<&str>) -> String {
        let data = self
            .server
            .ok(
                Some(&self.token),
                "mutation($i: InstanceCreateInput!) { instanceCreate(input: $i) { id } }",
                json!({ "i": { "tenantId": "acme", "poolId": self.pool, "name": name, "region": region, "size": "s-1vcpu-1gb", "image": "ubuntu-24-04-x64", "networkId": network, "idempotencyKey": format!("{name}-i") } }),
            )
            .await;
        data["instanceCreate"]["id"].as_str().unwrap().to_owned()
    }

    /// A snapshot `s` of the volume `v` (as created), by its id.
    async fn snapshot(&self, v: &Value) -> String {
        let input = json!({ "i": { "tenantId": "acme", "volumeId": v["id"], "name": "s", "idempotencyKey": "s" } });
        let made = self.server.ok(Some(&self.token), SNAPSHOT, input).await;
        made["providerVolumeSnapshot"]["id"].as_str().unwrap().to_owned()
    }

    async fn network(&self, name: &str) -> String {
        let data = self
            .server
            .ok(
                Some(&self.token),
                "mutation($i: NetworkCreateInput!) { networkCreate(input: $i) { id } }",
                json!({ "i": { "tenantId": "acme", "poolId": self.pool, "name": name, "subnets": [{ "region": "nyc3", "ipRange": "10.50.0.0/24" }], "idempotencyKey": format!("{name}-n") } }),
            )
            .await;
        let id = data["networkCreate"]["id"].as_str().unwrap().to_owned();
        for _ in 0..400 {
            let n = self
                .server
                .ok(
                    Some(&self.token),
                    "query($n: String!) { network(tenantId: \"acme\", networkId: $n) { state } }",
                    json!({ "n": id }),
                )
                .await;
            if n["network"]["state"] == "READY" {
                return id;
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
        panic!("network never ready");
    }

    async fn call(&self, mutation: &str, input: Value) -> Value {
        self.server.gql(Some(&self.token), &format!("mutation($i: {}Input!) {{ {}(input: $i) {{ ... on ProviderVolume {{ id version state attachments {{ instanceId desiredState }} }} }} }}", upper(mutation), mutation), json!({ "i": input })).await
    }
}

fn upper(name: &str) -> String {
    let mut chars = name.chars();
    chars.next().map(|c| c.to_ascii_uppercase().to_string() + chars.as_str()).unwrap_or_default()
}

fn code(body: &Value) -> String {
    common::first_code(body).unwrap_or_else(|| panic!("expected an error: {body}"))
}

db_test!(create_books_size_gib_on_disk_gib_and_fails_closed, |backend: Backend| async move {
    let s = setup(backend).await;
    let created = s.create("pg-data", json!({ "sizeGiB": 100 })).await;
    assert_eq!((created["state"].as_str(), created["kind"].as_str()), (Some("PENDING"), Some("BLOCK")));
    assert_eq!(s.used().await, 100);
    let (over, details) = s.create_code("too-big", json!({ "sizeGiB": 901 })).await;
    assert_eq!(over, "QUOTA_EXCEEDED", "{details}");
    assert_eq!(s.used().await, 100, "nothing booked for a refused create");
    // A tenant without a diskGiB row gets nothing (fail closed).
    s.server.tenant("bare").await;
    s.server.offer_exactly(&s.pool, "bare", json!([])).await;
    let bare = s.server.token(Some("bare"), &[("compute:*", "tenant/bare")]).await;
    let mut input = s.volume("v", json!({}));
    input["i"]["tenantId"] = json!("bare");
    assert_eq!(s.server.code(Some(&bare), CREATE, input).await, "QUOTA_EXCEEDED");
});

db_test!(create_refuses_bad_input_before_booking, |backend: Backend| async move {
    let s = setup(backend).await;
    let cases = [
        ("region-not-the-accounts", json!({ "region": "ams3" }), "INVALID_INPUT"),
        ("size-zero", json!({ "sizeGiB": 0 }), "INVALID_INPUT"),
        ("size-over", json!({ "sizeGiB": 16385 }), "INVALID_INPUT"),
        ("block-with-network", json!({ "networkId": "net_01jz0000000000000000000000" }), "INVALID_INPUT"),
        ("shared-without-network", json!({ "kind": "SHARED", "sizeGiB": 50 }), "INVALID_INPUT"),
        (
            "shared-with-filesystem",
            json!({ "kind": "SHARED", "sizeGiB": 50, "filesystem": "EXT4", "networkId": "net_01jz0000000000000000000000" }),
            "INVALID_INPUT",
        ),
        (
            "shared-delete-with-instance",
            json!({ "kind": "SHARED", "sizeGiB": 50, "deleteWithInstance": true, "networkId": "net_01jz0000000000000000000000" }),
            "INVALID_INPUT",
        ),
        ("instance-not-the-tenants", json!({ "instanceId": "inst_01jz0000000000000000000000" }), "ACCESS_DENIED"),
    ];
    for (name, extra, expected) in cases {
        let (got, details) = s.create_code(name, extra).await;
        assert_eq!(got, expected, "{name}: {details}");
    }
    assert_eq!(s.create_code("Bad_Name", json!({})).await.0, "INVALID_INPUT");
    assert_eq!(s.used().await, 0, "nothing was booked");
});

db_test!(
    a_digitalocean_share_under_50_gib_is_invalid_input_with_reason_size_before_quota,
    |backend: Backend| async move {
        let s = setup(backend).await;
        let network = s.network("net-a").await;
        let (got, details) =
            s.create_code("small-share", json!({ "kind": "SHARED", "sizeGiB": 49, "networkId": network })).await;
        assert_eq!(got, "INVALID_INPUT");
        assert_eq!(details["reason"], "size");
        assert_eq!(s.used().await, 0);
        let share = s.create("share", json!({ "kind": "SHARED", "sizeGiB": 50, "networkId": network })).await;
        assert_eq!(share["kind"], "SHARED");
    }
);

db_test!(a_shared_volume_needs_a_ready_network_with_a_subnet_in_its_region, |backend: Backend| async move {
    let s = setup(backend).await;
    let network = s.network("net-b").await;
    let (got, _) = s
        .create_code("elsewhere", json!({ "kind": "SHARED", "sizeGiB": 50, "networkId": network, "region": "sfo3" }))
        .await;
    assert_eq!(got, "INVALID_INPUT", "no subnet in the region");
    // Network and volume names are each unique in the tenant: a share keeps the network alive.
    let share = s.create("keeps", json!({ "kind": "SHARED", "sizeGiB": 50, "networkId": network })).await;
    let body = s
        .server
        .gql(
            Some(&s.token),
            "mutation($n: String!) { networkDelete(input: { tenantId: \"acme\", networkId: $n }) { state } }",
            json!({ "n": network }),
        )
        .await;
    assert_eq!(code(&body), "INVALID_STATE", "networkDelete while a shared volume uses it");
    assert_eq!(body["errors"][0]["extensions"]["details"]["volumeIds"], json!([share["id"]]));
    let net = s
        .server
        .ok(
            Some(&s.token),
            "query($n: String!) { network(tenantId: \"acme\", networkId: $n) { subnets { id } } }",
            json!({ "n": network }),
        )
        .await;
    // The sfo3 subnet's VPC create stalls: it stays pending.
    s.server.app.sim.as_ref().unwrap().inject("vpcs.create", vps_graph::sim::Fault::Stall, 5);
    s.server
        .ok(
            Some(&s.token),
            "mutation($n: String!) { networkAddSubnet(input: { tenantId: \"acme\", networkId: $n, subnet: { region: \"sfo3\", ipRange: \"10.51.0.0/24\" } }) { id } }",
            json!({ "n": network }),
        )
        .await;
    let body = s
        .server
        .gql(
            Some(&s.token),
            "mutation($n: String!, $s: String!) { networkRemoveSubnet(input: { tenantId: \"acme\", networkId: $n, subnetId: $s }) { state } }",
            json!({ "n": network, "s": net["network"]["subnets"][0]["id"] }),
        )
        .await;
    assert_eq!(code(&body), "INVALID_STATE", "networkRemoveSubnet of the volume's region");
    // A subnet still being made: INVALID_STATE.
    let (got, _) = s
        .create_code("not-ready", json!({ "kind": "SHARED", "sizeGiB": 50, "networkId": network, "region": "sfo3" }))
        .await;
    assert_eq!(got, "INVALID_STATE");
});

db_test!(names_are_unique_in_the_tenant_and_idempotency_keys_replay, |backend: Backend| async move {
    let s = setup(backend).await;
    let first = s.create("pg-data", json!({})).await;
    let again = s.create("pg-data", json!({})).await;
    assert_eq!(first["id"], again["id"], "the same key and input return the same volume");
    let (got, _) = s.create_code("pg-data", json!({ "sizeGiB": 11 })).await;
    assert_eq!(got, "CONFLICT", "the same key with other input");
    let (got, _) = s.create_code("pg-data", json!({ "idempotencyKey": "other-key" })).await;
    assert_eq!(got, "CONFLICT", "the name is taken in the tenant");
    assert_eq!(s.used().await, 10, "booked once");
});

db_test!(attach_rules_one_instance_at_a_time_and_the_callers_own_instances_update, |backend: Backend| async move {
    let s = setup(backend).await;
    let a = s.instance("web-a", "nyc3", None).await;
    let b = s.instance("web-b", "nyc3", None).await;
    let far = s.instance("far", "sfo3", None).await;
    let v = s.create("data", json!({ "instanceId": a })).await;
    assert_eq!(v["attachment"]["instanceId"], json!(a));
    assert_eq!(v["attachment"]["desiredState"], "PRESENT");
    let id = v["id"].as_str().unwrap();
    let attach = |instance: &str| json!({ "tenantId": "acme", "volumeId": id, "instanceId": instance });
    s.settle(id).await;
    let before = s.version(id).await;
    let same = s.call("providerVolumeAttach", attach(&a)).await;
    assert_eq!(same["data"]["providerVolumeAttach"]["version"], before, "attaching it again changes nothing");
    assert_eq!(
        code(&s.call("providerVolumeAttach", attach(&b)).await),
        "CONFLICT",
        "a block volume on another instance"
    );
    let other = s.create("other", json!({})).await;
    let other_id = other["id"].as_str().unwrap();
    let attach_other = |instance: &str| json!({ "tenantId": "acme", "volumeId": other_id, "instanceId": instance });
    assert_eq!(code(&s.call("providerVolumeAttach", attach_other(&far)).await), "INVALID_INPUT", "another region");
    // Another tenant's instance: ACCESS_DENIED.
    s.server.tenant("globex").await;
    s.server.offer(&s.pool, "globex", json!([])).await;
    let globex = s.server.token(Some("globex"), &[("compute:*", "tenant/globex")]).await;
    let theirs = s
        .server
        .ok(
            Some(&globex),
            "mutation($i: InstanceCreateInput!) { instanceCreate(input: $i) { id } }",
            json!({ "i": { "tenantId": "globex", "poolId": s.pool, "name": "theirs", "region": "nyc3", "size": "s-1vcpu-1gb", "image": "ubuntu-24-04-x64", "idempotencyKey": "t" } }),
        )
        .await["instanceCreate"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(code(&s.call("providerVolumeAttach", attach_other(&theirs)).await), "ACCESS_DENIED");
    // The caller's own compute:instances:update on the instance.
    let volumes_only = s.server.token(Some("acme"), &[("compute:volumes:*", "tenant/acme")]).await;
    let body = s
        .server
        .gql(
            Some(&volumes_only),
            "mutation($i: ProviderVolumeAttachInput!) { providerVolumeAttach(input: $i) { id } }",
            json!({ "i": attach_other(&b) }),
        )
        .await;
    assert_eq!(code(&body), "ACCESS_DENIED");
    assert_eq!(body["errors"][0]["extensions"]["details"]["permission"], "compute:instances:update");
    // An instance being deleted: INVALID_STATE.
    s.server
        .ok(
            Some(&s.token),
            "mutation($i: String!) { instanceDelete(input: { tenantId: \"acme\", instanceId: $i }) { state } }",
            json!({ "i": b }),
        )
        .await;
    assert_eq!(code(&s.call("providerVolumeAttach", attach_other(&b)).await), "INVALID_STATE");
});

db_test!(detach_and_delete_rules, |backend: Backend| async move {
    let s = setup(backend).await;
    let a = s.instance("web-a", "nyc3", None).await;
    let v = s.create("data", json!({ "instanceId": a })).await;
    let id = v["id"].as_str().unwrap();
    let delete = s.call("providerVolumeDelete", json!({ "tenantId": "acme", "volumeId": id })).await;
    assert_eq!(code(&delete), "INVALID_STATE", "delete while attached");
    let b = s.instance("web-b", "nyc3", None).await;
    s.settle(id).await;
    let before = s.version(id).await;
    let untouched =
        s.call("providerVolumeDetach", json!({ "tenantId": "acme", "volumeId": id, "instanceId": b })).await;
    assert_eq!(
        untouched["data"]["providerVolumeDetach"]["version"], before,
        "naming an instance it is not on changes nothing"
    );
    // The provider does not answer the detach: it stays in progress.
    s.server.app.sim.as_ref().unwrap().inject("volumes.actions.create", vps_graph::sim::Fault::Stall, 5);
    let detached = s.call("providerVolumeDetach", json!({ "tenantId": "acme", "volumeId": id })).await;
    assert_eq!(detached["data"]["providerVolumeDetach"]["attachments"][0]["desiredState"], "ABSENT");
    let again = s.call("providerVolumeAttach", json!({ "tenantId": "acme", "volumeId": id, "instanceId": a })).await;
    assert_eq!(code(&again), "INVALID_STATE", "attaching while it is being detached from that instance");
});

db_test!(a_shared_volume_detach_names_the_instance, |backend: Backend| async move {
    let s = setup(backend).await;
    let network = s.network("net-c").await;
    let share = s.create("assets", json!({ "kind": "SHARED", "sizeGiB": 50, "networkId": network })).await;
    let body = s.call("providerVolumeDetach", json!({ "tenantId": "acme", "volumeId": share["id"] })).await;
    assert_eq!(code(&body), "INVALID_INPUT");
    let outside = s.instance("outside", "nyc3", None).await;
    let body = s
        .call("providerVolumeAttach", json!({ "tenantId": "acme", "volumeId": share["id"], "instanceId": outside }))
        .await;
    assert_eq!(code(&body), "INVALID_INPUT", "an instance not on the volume's network");
    let a = s.instance("in-a", "nyc3", Some(&network)).await;
    let b = s.instance("in-b", "nyc3", Some(&network)).await;
    for instance in [&a, &b] {
        let body = s
            .call(
                "providerVolumeAttach",
                json!({ "tenantId": "acme", "volumeId": share["id"], "instanceId": instance }),
            )
            .await;
        assert!(body.get("errors").is_none(), "{body}");
    }
    let view =
        s.call("providerVolumeAttach", json!({ "tenantId": "acme", "volumeId": share["id"], "instanceId": a })).await;
    assert_eq!(
        view["data"]["providerVolumeAttach"]["attachments"].as_array().unwrap().len(),
        2,
        "many instances, each once"
    );
});

db_test!(resize_only_grows_and_books_the_difference, |backend: Backend| async move {
    let s = setup(backend).await;
    let v = s.create("data", json!({ "sizeGiB": 100 })).await;
    let id = v["id"].as_str().unwrap();
    let resize = |size: i64| json!({ "tenantId": "acme", "volumeId": id, "sizeGiB": size });
    assert_eq!(code(&s.call("providerVolumeResize", resize(50)).await), "INVALID_INPUT");
    s.settle(id).await;
    let before = s.version(id).await;
    let same = s.call("providerVolumeResize", resize(100)).await;
    assert_eq!(same["data"]["providerVolumeResize"]["version"], before, "the same size returns it unchanged");
    s.call("providerVolumeResize", resize(150)).await;
    assert_eq!(s.used().await, 150);
    assert_eq!(code(&s.call("providerVolumeResize", resize(1001)).await), "QUOTA_EXCEEDED");
    assert_eq!(s.used().await, 150);
});

const SNAPSHOT: &str =
    "mutation($i: ProviderVolumeSnapshotInput!) { providerVolumeSnapshot(input: $i) { id state name } }";

db_test!(a_volume_has_at_most_25_snapshots_with_unique_names, |backend: Backend| async move {
    let s = setup(backend).await;
    let v = s.create("data", json!({})).await;
    let snap = |name: &str, key: &str| json!({ "i": { "tenantId": "acme", "volumeId": v["id"], "name": name, "idempotencyKey": key } });
    let first = s.server.ok(Some(&s.token), SNAPSHOT, snap("s0", "k0")).await;
    let replay = s.server.ok(Some(&s.token), SNAPSHOT, snap("s0", "k0")).await;
    assert_eq!(
        first["providerVolumeSnapshot"]["id"], replay["providerVolumeSnapshot"]["id"],
        "a retry returns the same snapshot"
    );
    assert_eq!(s.server.code(Some(&s.token), SNAPSHOT, snap("s0", "k-other")).await, "CONFLICT", "names are unique");
    for i in 1..25 {
        s.server.ok(Some(&s.token), SNAPSHOT, snap(&format!("s{i}"), &format!("k{i}"))).await;
    }
    let body = s.server.gql(Some(&s.token), SNAPSHOT, snap("s25", "k25")).await;
    assert_eq!(code(&body), "QUOTA_EXCEEDED", "the 26th snapshot");
    assert_eq!(body["errors"][0]["extensions"]["details"]["limit"], 25);
    assert_eq!(s.used().await, 10, "snapshots book no quota");
});

db_test!(restore_rules, |backend: Backend| async move {
    let s = setup(backend).await;
    let v = s.create("data", json!({ "sizeGiB": 20, "filesystem": "XFS" })).await;
    let snap = s
        .server
        .ok(
            Some(&s.token),
            SNAPSHOT,
            json!({ "i": { "tenantId": "acme", "volumeId": v["id"], "name": "s", "idempotencyKey": "s" } }),
        )
        .await["providerVolumeSnapshot"]["id"]
        .clone();
    let restore = |extra: Value| {
        let mut input = json!({ "tenantId": "acme", "snapshotId": snap, "name": "copy", "idempotencyKey": "r" });
        for (k, val) in extra.as_object().unwrap() {
            input[k] = val.clone();
        }
        json!({ "i": input })
    };
    const RESTORE: &str = "mutation($i: ProviderSnapshotRestoreInput!) { providerSnapshotRestore(input: $i) { id state sizeGiB filesystem sourceSnapshotId } }";
    assert_eq!(
        s.server.code(Some(&s.token), RESTORE, restore(json!({ "filesystem": "EXT4" }))).await,
        "INVALID_INPUT",
        "a restore takes no filesystem"
    );
    assert_eq!(
        s.server.code(Some(&s.token), RESTORE, restore(json!({ "sizeGiB": 19 }))).await,
        "INVALID_INPUT",
        "not below the snapshot's size"
    );
    let copy = s.server.ok(Some(&s.token), RESTORE, restore(json!({}))).await["providerSnapshotRestore"].clone();
    assert_eq!((copy["sizeGiB"].as_i64(), copy["filesystem"].as_str()), (Some(20), Some("XFS")), "{copy}");
    assert_eq!(s.used().await, 40);
    let network = s.network("net-d").await;
    let share = s.create("share", json!({ "kind": "SHARED", "sizeGiB": 50, "networkId": network })).await;
    let share_snap = s
        .server
        .ok(
            Some(&s.token),
            SNAPSHOT,
            json!({ "i": { "tenantId": "acme", "volumeId": share["id"], "name": "s", "idempotencyKey": "ss" } }),
        )
        .await["providerVolumeSnapshot"]["id"]
        .clone();
    let body = s
        .server
        .gql(
            Some(&s.token),
            RESTORE,
            json!({ "i": { "tenantId": "acme", "snapshotId": share_snap, "name": "copy2", "idempotencyKey": "r2" } }),
        )
        .await;
    assert_eq!(code(&body), "UNSUPPORTED");
    assert_eq!(body["errors"][0]["extensions"]["details"]["reason"], "sharedRestore");
});

db_test!(a_replayed_create_returns_what_it_made_whatever_the_state_rules_say_now, |backend: Backend| async move {
    let s = setup(backend).await;
    // A volume made on an instance, replayed once the instance is being deleted.
    let on = s.instance("web-a", "nyc3", None).await;
    let first = s.create("pinned", json!({ "instanceId": on })).await;
    // Its machine made first: an instance deleted before its machine exists finishes at once,
    // with no provider call to stall.
    let read = "query($i: String!) { instance(tenantId: \"acme\", instanceId: $i) { state } }";
    let started = std::time::Instant::now();
    while s.server.ok(Some(&s.token), read, json!({ "i": on })).await["instance"]["state"] != "READY" {
        assert!(started.elapsed() < std::time::Duration::from_secs(30), "the instance never became READY");
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    let delete = "mutation($i: String!) { instanceDelete(input: { tenantId: \"acme\", instanceId: $i }) { state } }";
    // The machine's delete stalls, so the instance stays being deleted however fast the reconciler.
    for endpoint in ["droplets.delete", "droplets.destroy_with_associated_resources.selective.delete"] {
        s.server.app.sim.as_ref().unwrap().inject(endpoint, vps_graph::sim::Fault::Stall, 5);
    }
    s.server.ok(Some(&s.token), delete, json!({ "i": on })).await;
    let (got, _) = s.create_code("fresh", json!({ "instanceId": on })).await;
    assert_eq!(got, "INVALID_STATE", "a new create on it is refused");
    let again = s.create("pinned", json!({ "instanceId": on })).await;
    assert_eq!(again["id"], first["id"], "the replay returns the volume it made");
    // A restore, replayed once its snapshot is being deleted.
    let v = s.create("data", json!({})).await;
    let snap = json!(s.snapshot(&v).await);
    const RESTORE: &str = "mutation($i: ProviderSnapshotRestoreInput!) { providerSnapshotRestore(input: $i) { id } }";
    let input = json!({ "i": { "tenantId": "acme", "snapshotId": snap, "name": "copy", "idempotencyKey": "r" } });
    let copy = s.server.ok(Some(&s.token), RESTORE, input.clone()).await["providerSnapshotRestore"]["id"].clone();
    let delete =
        "mutation($s: String!) { providerSnapshotDelete(input: { tenantId: \"acme\", snapshotId: $s }) { state } }";
    s.server.ok(Some(&s.token), delete, json!({ "s": snap })).await;
    let replay = s.server.ok(Some(&s.token), RESTORE, input).await["providerSnapshotRestore"]["id"].clone();
    assert_eq!(replay, copy, "the replay returns the volume it made");
    let fresh = json!({ "i": { "tenantId": "acme", "snapshotId": snap, "name": "copy2", "idempotencyKey": "r2" } });
    assert_eq!(s.server.code(Some(&s.token), RESTORE, fresh).await, "INVALID_STATE", "a new restore is refused");
    assert_eq!(s.used().await, 30, "each booked once");
});

db_test!(a_restore_is_decided_on_the_snapshot, |backend: Backend| async move {
    let s = setup(backend).await;
    let v = s.create("data", json!({})).await;
    let snap = s.snapshot(&v).await;
    const RESTORE: &str =
        "mutation($i: ProviderSnapshotRestoreInput!) { providerSnapshotRestore(input: $i) { id sourceSnapshotId } }";
    let input =
        |key: &str| json!({ "i": { "tenantId": "acme", "snapshotId": snap, "name": key, "idempotencyKey": key } });
    // Manage on that snapshot alone: the new volume needs no grant of its own.
    let on_snapshot =
        s.server.token(Some("acme"), &[("compute:volumes:manage", &format!("provider-snapshot/{snap}"))]).await;
    let copy = s.server.ok(Some(&on_snapshot), RESTORE, input("copy")).await;
    assert_eq!(copy["providerSnapshotRestore"]["sourceSnapshotId"], snap.as_str());
    // Manage on the snapshot's volume, or read on the snapshot, is not manage on the snapshot.
    let on_volume = s
        .server
        .token(Some("acme"), &[("compute:volumes:manage", &format!("provider-volume/{}", v["id"].as_str().unwrap()))])
        .await;
    let reader = s.server.token(Some("acme"), &[("compute:volumes:read", &format!("provider-snapshot/{snap}"))]).await;
    for token in [&on_volume, &reader] {
        let body = s.server.gql(Some(token), RESTORE, input("other")).await;
        assert_eq!(code(&body), "ACCESS_DENIED", "{body}");
        assert_eq!(body["errors"][0]["extensions"]["details"]["scope"], format!("provider-snapshot/{snap}"), "{body}");
    }
});

db_test!(quota_race_200_concurrent_creates_on_room_for_50_book_exactly_50, |backend: Backend| async move {
    let s = setup(backend).await;
    s.server
        .ok(Some(ADMIN), "mutation($p: String!) { quotaSet(input: { tenantId: \"acme\", poolId: $p, resource: \"diskGiB\", max: 50 }) { max } }", json!({ "p": s.pool }))
        .await;
    let s = std::sync::Arc::new(s);
    let tasks: Vec<_> = (0..200)
        .map(|i| {
            let s = s.clone();
            tokio::spawn(async move {
                let body =
                    s.server.gql(Some(&s.token), CREATE, s.volume(&format!("v{i}"), json!({ "sizeGiB": 1 }))).await;
                common::first_code(&body)
            })
        })
        .collect();
    let mut made = 0;
    for task in tasks {
        match task.await.unwrap() {
            None => made += 1,
            Some(code) => assert_eq!(code, "QUOTA_EXCEEDED"),
        }
    }
    assert_eq!(made, 50);
    assert_eq!(s.used().await, 50);
});

db_test!(a_page_of_volumes_costs_the_same_sql_statements_whatever_its_size, |backend: Backend| async move {
    let s = setup(backend).await;
    for i in 0..24 {
        let instance = s.instance(&format!("host-{i}"), "nyc3", None).await;
        let v = s.create(&format!("vol-{i}"), json!({ "sizeGiB": 1, "instanceId": instance })).await;
        let snap = json!({ "i": { "tenantId": "acme", "volumeId": v["id"], "name": "daily", "idempotencyKey": format!("snap-{i}") } });
        s.server.ok(Some(&s.token), SNAPSHOT, snap).await;
    }
    let query = "query($n: Int!) { providerVolumes(tenantId: \"acme\", first: $n) { edges { node { id attachments { instanceId instance { id name } } snapshots { id name } } } } }";
    let mut counts = Vec::new();
    for first in [2, 8, 24] {
        let (body, statements) = s.server.counted(ADMIN, query, json!({ "n": first })).await;
        let edges = body["data"]["providerVolumes"]["edges"].as_array().unwrap().clone();
        assert_eq!(edges.len(), first, "{body}");
        assert!(edges.iter().all(|e| e["node"]["attachments"][0]["instance"]["id"].is_string()), "{body}");
        assert!(edges.iter().all(|e| e["node"]["snapshots"].as_array().unwrap().len() == 1), "{body}");
        counts.push(statements);
    }
    assert!(counts.iter().all(|c| *c == counts[0]), "statements per page size 2, 8, 24: {counts:?}");
    assert_eq!(counts[0], 3, "the page, the attachments with their instances, the snapshots: {counts:?}");
});

db_test!(
    a_pages_attachments_show_their_instance_once_read_and_only_to_who_may_read_it,
    |backend: Backend| async move {
        let s = setup(backend).await;
        let a = s.server.project("acme", "a").await;
        let b = s.server.project("acme", "b").await;
        let mut instances = Vec::new();
        for (name, project) in [("shared", &a), ("elsewhere", &b)] {
            let input = json!({ "i": { "tenantId": "acme", "projectId": project, "poolId": s.pool, "name": name, "region": "nyc3", "size": "s-1vcpu-1gb", "image": "ubuntu-24-04-x64", "idempotencyKey": name } });
            let made = s
                .server
                .ok(Some(&s.token), "mutation($i: InstanceCreateInput!) { instanceCreate(input: $i) { id } }", input)
                .await;
            instances.push(made["instanceCreate"]["id"].as_str().unwrap().to_owned());
        }
        let (shared, elsewhere) = (&instances[0], &instances[1]);
        for (name, instance) in [("one", shared), ("two", shared), ("three", elsewhere)] {
            s.create(name, json!({ "projectId": a, "instanceId": instance })).await;
        }
        let scoped = s.server.token(Some("acme"), &[("compute:*", &format!("project/{a}"))]).await;
        let query = "{ providerVolumes(tenantId: \"acme\", first: 10) { edges { node { name attachments { instanceId instance { id name } } } } } }";
        let page = s.server.ok(Some(&scoped), query, json!({})).await;
        let shown: Vec<(Value, Value, Value)> = page["providerVolumes"]["edges"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| {
                let attachment = &e["node"]["attachments"][0];
                (e["node"]["name"].clone(), attachment["instanceId"].clone(), attachment["instance"]["name"].clone())
            })
            .collect();
        assert_eq!(
            shown,
            vec![
                (json!("one"), json!(shared), json!("shared")),
                (json!("two"), json!(shared), json!("shared")),
                (json!("three"), json!(elsewhere), Value::Null),
            ],
            "two volumes on one instance both show it; an instance of a project the caller may not read is null"
        );
    }
);

/// What `SELECT <probe>` answers, read through `session`: on PostgreSQL the connection's
/// backend, on SQLite a constant.
async fn probed(session: &vps_graph::store::session::Session<'_>, backend: Backend) -> i64 {
    use sea_orm::sqlx::Row as _;
    use vps_graph::store::session::Row;
    let sql = match backend {
        Backend::Postgres => "SELECT pg_backend_pid()::int8",
        Backend::Sqlite => "SELECT 7",
    };
    let statement = sea_orm::Statement::from_string(session.backend(), sql);
    let rows = session.rows(statement).await.unwrap();
    let found: Vec<i64> = rows
        .iter()
        .map(|row| match row {
            Row::Postgres(row) => row.try_get::<i64, _>(0).unwrap(),
            Row::Other(row) => row.try_get_by_index::<i64>(0).unwrap(),
        })
        .collect();
    assert_eq!(found.len(), 1);
    found[0]
}

// A session (what a page of volumes reads its four statements through) runs every statement on
// the one connection it checked out, while another session holds another: on PostgreSQL the pool
// otherwise checks a connection out and tests it on its way back (a round trip) per statement.
db_test!(a_pages_statements_run_on_one_connection_while_other_pages_use_others, |backend: Backend| async move {
    let s = setup(backend).await;
    let db = &s.server.app.services.db;
    let first = vps_graph::store::session::Session::open(db).await.unwrap();
    let second = vps_graph::store::session::Session::open(db).await.unwrap();
    let (a, b) = (probed(&first, backend).await, probed(&second, backend).await);
    for _ in 0..5 {
        assert_eq!(probed(&first, backend).await, a);
        assert_eq!(probed(&second, backend).await, b);
    }
    match backend {
        Backend::Postgres => assert_ne!(a, b, "two open sessions hold two connections"),
        Backend::Sqlite => assert_eq!(a, 7),
    }
});

// The ids a page reads its children by are bound as one parameter (an array on PostgreSQL, a JSON
// array on SQLite): none, one, or one holding a comma find what they name.
db_test!(children_are_read_by_any_number_of_ids_whatever_they_hold, |backend: Backend| async move {
    use vps_graph::store::columns::Columns;
    let s = setup(backend).await;
    let made = s.instance("host-a", "nyc3", None).await;
    let session = vps_graph::store::session::Session::open(&s.server.app.services.db).await.unwrap();
    let found = |ids: Vec<String>| {
        let session = &session;
        async move {
            let rows = vps_graph::store::instances::find_many(session, &ids, &Columns::all()).await.unwrap();
            rows.into_iter().map(|i| i.id).collect::<Vec<_>>()
        }
    };
    assert_eq!(found(vec![]).await, Vec::<String>::new());
    assert_eq!(found(vec![made.clone()]).await, vec![made.clone()]);
    assert_eq!(found(vec!["inst_nope".into(), made.clone()]).await, vec![made.clone()]);
    assert_eq!(found(vec![format!("{made},{made}"), made.clone()]).await, vec![made.clone()]);
    assert_eq!(found(vec![format!("{made},x")]).await, Vec::<String>::new(), "a comma is part of an id");
});

db_test!(a_pool_whose_provider_offers_no_volumes_is_unsupported, |backend: Backend| async move {
    let s = setup(backend).await;
    let pool = s.server.aws_pool("aws").await;
    s.server.offer(&pool, "acme", json!([{ "resource": "diskGiB", "max": 100 }])).await;
    let (got, details) = s.create_code("on-aws", json!({ "poolId": pool, "region": "us-east-1" })).await;
    assert_eq!(got, "UNSUPPORTED");
    assert_eq!(details["reason"], "volumes");
});

db_test!(deleting_a_volume_being_deleted_returns_it, |backend: Backend| async move {
    let s = setup(backend).await;
    let v = s.create("gone", json!({})).await;
    // Made at the provider first (a volume never made is deleted at once, without a call).
    s.settle(v["id"].as_str().unwrap()).await;
    // The provider does not answer the delete: the volume stays deleting.
    s.server.app.sim.as_ref().unwrap().inject("volumes.delete", vps_graph::sim::Fault::Stall, 5);
    let delete = json!({ "tenantId": "acme", "volumeId": v["id"] });
    let first = s.call("providerVolumeDelete", delete.clone()).await;
    assert!(first.get("errors").is_none(), "{first}");
    let again = s.call("providerVolumeDelete", delete).await;
    assert!(again.get("errors").is_none(), "{again}");
    assert_eq!(again["data"]["providerVolumeDelete"]["state"], "DELETING");
    let snap = json!({ "i": { "tenantId": "acme", "volumeId": v["id"], "name": "late", "idempotencyKey": "late" } });
    let body = s.server.gql(Some(&s.token), SNAPSHOT, snap).await;
    assert_eq!(code(&body), "INVALID_STATE", "no snapshot of a volume being deleted");
});

db_test!(a_page_reads_only_rows_the_caller_may_read_so_its_cursor_is_one_of_them, |backend: Backend| async move {
    let s = setup(backend).await;
    let a = s.server.project("acme", "a").await;
    let b = s.server.project("acme", "b").await;
    s.create("in-b", json!({ "projectId": b })).await;
    let in_a = s.create("in-a", json!({ "projectId": a })).await;
    let scoped = s.server.token(Some("acme"), &[("compute:*", &format!("project/{a}"))]).await;
    let query = "query($a: String) { providerVolumes(tenantId: \"acme\", first: 1, after: $a) { edges { node { name } } pageInfo { endCursor hasNextPage } } }";
    let first = s.server.ok(Some(&scoped), query, json!({ "a": null })).await;
    assert_eq!(first["providerVolumes"]["edges"], json!([{ "node": { "name": "in-a" } }]), "b's is not read");
    assert_eq!(first["providerVolumes"]["pageInfo"]["hasNextPage"], false);
    assert_eq!(first["providerVolumes"]["pageInfo"]["endCursor"], in_a["id"], "never b's id");
});

db_test!(create_with_an_instance_follows_the_attach_rules, |backend: Backend| async move {
    let s = setup(backend).await;
    let far = s.instance("far", "sfo3", None).await;
    assert_eq!(s.create_code("far-away", json!({ "instanceId": far })).await.0, "INVALID_INPUT", "another region");
    let near = s.instance("near", "nyc3", None).await;
    let volumes_only = s.server.token(Some("acme"), &[("compute:volumes:*", "tenant/acme")]).await;
    let body = s.server.gql(Some(&volumes_only), CREATE, s.volume("not-mine", json!({ "instanceId": near }))).await;
    assert_eq!(code(&body), "ACCESS_DENIED", "the caller's own compute:instances:update");
    // The machine exists and its destroy does not answer, so the instance stays deleting however
    // fast the reconciler runs (an instance never made would finish its delete at once).
    let read = "query($i: String!) { instance(tenantId: \"acme\", instanceId: $i) { state } }";
    for _ in 0..400 {
        if s.server.ok(Some(&s.token), read, json!({ "i": near })).await["instance"]["state"] == "READY" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    let sim = s.server.app.sim.as_ref().unwrap();
    for endpoint in ["droplets.delete", "droplets.destroy_with_associated_resources.selective.delete"] {
        sim.inject(endpoint, vps_graph::sim::Fault::Stall, 5);
    }
    s.server
        .ok(
            Some(&s.token),
            "mutation($i: String!) { instanceDelete(input: { tenantId: \"acme\", instanceId: $i }) { state } }",
            json!({ "i": near }),
        )
        .await;
    assert_eq!(
        s.create_code("on-doomed", json!({ "instanceId": near })).await.0,
        "INVALID_STATE",
        "an instance being deleted"
    );
    let network = s.network("net-e").await;
    let share = json!({ "kind": "SHARED", "sizeGiB": 50, "networkId": network, "instanceId": far });
    assert_eq!(
        s.create_code("share-far", share).await.0,
        "INVALID_INPUT",
        "a shared volume's instance is on its network"
    );
    assert_eq!(s.used().await, 0);
});

db_test!(a_shared_volume_on_a_network_being_deleted_is_invalid_state, |backend: Backend| async move {
    let s = setup(backend).await;
    let network = s.network("net-f").await;
    // Its VPC's delete does not answer: the network stays deleting.
    s.server.app.sim.as_ref().unwrap().inject("vpcs.delete", vps_graph::sim::Fault::Stall, 5);
    s.server
        .ok(
            Some(&s.token),
            "mutation($n: String!) { networkDelete(input: { tenantId: \"acme\", networkId: $n }) { state } }",
            json!({ "n": network }),
        )
        .await;
    let (got, details) = s.create_code("late", json!({ "kind": "SHARED", "sizeGiB": 50, "networkId": network })).await;
    assert_eq!(got, "INVALID_STATE", "{details}");
    assert_eq!(s.used().await, 0);
});

/// SQLite compares text bytewise (BINARY) unless a column says otherwise, and none does: the rule
/// is PostgreSQL's to keep, so this test runs there only.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_id_column_compares_bytewise_as_on_sqlite() {
    if common::postgres_base().is_none() {
        eprintln!("TEST_DATABASE_URL is not set: not run");
        return;
    }
    use sea_orm::ConnectionTrait;
    let db = common::TestDb::new(Backend::Postgres).await;
    let conn = vps_graph::store::connect(&db.url, 2).await.unwrap();
    let statement = sea_orm::Statement::from_string(
        sea_orm::DbBackend::Postgres,
        "SELECT table_name::text || '.' || column_name::text FROM information_schema.columns \
         WHERE table_schema = current_schema() AND data_type = 'character varying' \
         AND (column_name = 'id' OR column_name LIKE '%\\_id') AND collation_name IS DISTINCT FROM 'C'",
    );
    let rows = conn.query_all_raw(statement).await.unwrap();
    let columns: Vec<String> = rows.iter().map(|r| r.try_get_by_index(0).unwrap()).collect();
    assert_eq!(columns, Vec::<String>::new(), "id columns under the database's collation (strcoll per comparison)");
    let ids = "SELECT count(*) FROM information_schema.columns WHERE table_schema = current_schema() AND column_name = 'id' AND collation_name = 'C'";
    let count: i64 = conn
        .query_one_raw(sea_orm::Statement::from_string(sea_orm::DbBackend::Postgres, ids))
        .await
        .unwrap()
        .unwrap()
        .try_get_by_index(0)
        .unwrap();
    assert!(count >= 10, "the tables' ids were looked at: {count}");
}
