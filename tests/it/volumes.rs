//! Provider volumes end to end over HTTP against the simulated DigitalOcean: a block volume's
//! whole life with its events and the provider calls it took, a shared volume on three
//! instances, a lost create answer, a volume deleted behind our back, and an instance deleted
//! with its volumes. The clock is driven by the test; the sim's actions take 50 ms.
use crate::common;

use std::time::Duration;

use common::{ADMIN, Backend};
use serde_json::{Value, json};
use vps_graph::sim::{Fault, Sim};

const VOLUME: &str = "query($v: String!) { providerVolume(tenantId: \"acme\", volumeId: $v) { id state message deletionProtection sizeGiB observedSizeGiB device version kind readyAt mount { source type mountLines(path: \"/mnt/assets\") { cloudConfig fstab } } attachments { instanceId state desiredState message } snapshots { id state sizeGiB version } } }";

local_app!(Setup);

async fn setup(backend: Backend) -> Setup {
    setup_with(backend, Duration::ZERO).await
}

/// `setup` with `latency` added to every call the sim answers (it answers after doing the work).
async fn setup_with(backend: Backend, latency: Duration) -> Setup {
    common::TestApp::on_clock(backend)
        .sim(vps_graph::sim::SimConfig { latency, ..common::quick_sim() })
        .quotas(json!([{ "resource": "diskGiB", "max": 2000 }]))
        .build()
        .await
        .into()
}

impl Setup {
    fn sim(&self) -> &Sim {
        self.server.app.sim.as_ref().expect("in-process sim")
    }

    fn sim_url(&self) -> String {
        self.server.app.services.sim_url.clone().unwrap()
    }

    /// What the sim holds at `path`, read as an outsider.
    async fn at_sim(&self, path: &str) -> (u16, Value) {
        let response =
            self.server.http.get(format!("{}{path}", self.sim_url())).bearer_auth("inspector").send().await.unwrap();
        let status = response.status().as_u16();
        (status, response.json().await.unwrap_or(Value::Null))
    }

    async fn gql(&self, query: &str, variables: Value) -> Value {
        self.server.ok(Some(&self.token), query, variables).await
    }

    async fn volume(&self, id: &str) -> Value {
        self.gql(VOLUME, json!({ "v": id })).await["providerVolume"].clone()
    }

    /// `common::until` on the test's clock.
    async fn until<F, Fut>(&self, what: &str, read: F, check: impl Fn(&Value) -> bool) -> Value
    where
        F: Fn() -> Fut,
        Fut: std::future::Future<Output = Value>,
    {
        common::until(self, what, read, check).await
    }

    /// `until` without moving the clock: for what happens before any wait is up.
    async fn until_now(&self, id: &str, what: &str, check: impl Fn(&Value) -> bool) -> Value {
        for _ in 0..400 {
            self.server.app.run_due().await.expect("due work runs");
            let seen = self.volume(id).await;
            if check(&seen) {
                return seen;
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
        panic!("never {what}: {}", self.volume(id).await);
    }

    /// The volume's row as stored.
    async fn row(&self, id: &str) -> vps_graph::store::entity::provider_volume::Model {
        use sea_orm::EntityTrait;
        let db = &self.server.app.services.db;
        vps_graph::store::entity::provider_volume::Entity::find_by_id(id).one(db).await.unwrap().unwrap()
    }

    /// Waits until the volume's create has been sent (its attempt recorded): with a sim that
    /// answers late, the call is then in flight.
    async fn create_sent(&self, id: &str) {
        for _ in 0..400 {
            if self.row(id).await.create_attempts > 0 {
                return;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        panic!("the create of {id} was never sent");
    }

    /// Waits until the run that last touched `id` has finished and set its next look in the
    /// future, so moving the clock now cannot slip past it.
    async fn settled(&self, id: &str) {
        let db = &self.server.app.services.db;
        for _ in 0..400 {
            let due = vps_graph::store::queue::item(db, "vps.provider-resources", id).await.unwrap();
            if due.is_some_and(|(due, _, _)| due > self.clock.now_ms()) {
                return;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!("{id} never settled");
    }

    /// `until` that moves the clock only between runs, to the next look the last one set: for a
    /// sim that answers late, where a clock moved during a call would expire the run's lease.
    async fn until_between_runs(&self, id: &str, what: &str, check: impl Fn(&Value) -> bool) -> Value {
        let db = &self.server.app.services.db;
        for _ in 0..100 {
            self.settled(id).await;
            let seen = self.volume(id).await;
            if check(&seen) {
                return seen;
            }
            let (due, _, _) = vps_graph::store::queue::item(db, "vps.provider-resources", id).await.unwrap().unwrap();
            self.clock.advance(due - self.clock.now_ms());
        }
        panic!("never {what}: {}", self.volume(id).await);
    }

    async fn until_volume(&self, id: &str, what: &str, check: impl Fn(&Value) -> bool) -> Value {
        self.until(what, || self.volume(id), check).await
    }

    async fn create_volume(&self, name: &str, extra: Value) -> String {
        let mut input = json!({ "tenantId": "acme", "poolId": self.pool, "name": name, "region": "nyc3", "sizeGiB": 10, "idempotencyKey": name });
        for (k, v) in extra.as_object().unwrap() {
            input[k] = v.clone();
        }
        let data = self
            .gql(
                "mutation($i: ProviderVolumeCreateInput!) { providerVolumeCreate(input: $i) { id } }",
                json!({ "i": input }),
            )
            .await;
        data["providerVolumeCreate"]["id"].as_str().unwrap().to_owned()
    }

    /// Asks for a snapshot of the volume named `name` (its idempotency key too); its id.
    async fn snapshot(&self, volume: &str, name: &str) -> String {
        let input = json!({ "tenantId": "acme", "volumeId": volume, "name": name, "idempotencyKey": name });
        let query = "mutation($i: ProviderVolumeSnapshotInput!) { providerVolumeSnapshot(input: $i) { id } }";
        self.gql(query, json!({ "i": input })).await["providerVolumeSnapshot"]["id"].as_str().unwrap().to_owned()
    }

    async fn mutate(&self, field: &str, input: Value) -> Value {
        let mut chars = field.chars();
        let input_type = chars.next().unwrap().to_ascii_uppercase().to_string() + chars.as_str() + "Input";
        let query = format!("mutation($i: {input_type}!) {{ {field}(input: $i) {{ __typename }} }}");
        self.gql(&query, json!({ "i": input })).await
    }

    async fn instance(&self, name: &str, network: Option<&str>) -> (String, String) {
        let data = self
            .gql(
                "mutation($i: InstanceCreateInput!) { instanceCreate(input: $i) { id } }",
                json!({ "i": { "tenantId": "acme", "poolId": self.pool, "name": name, "region": "nyc3", "size": "s-1vcpu-1gb", "image": "ubuntu-24-04-x64", "networkId": network, "idempotencyKey": name } }),
            )
            .await;
        let id = data["instanceCreate"]["id"].as_str().unwrap().to_owned();
        let query = "query($i: String!) { instance(tenantId: \"acme\", instanceId: $i) { state providerId } }";
        let ready = self
            .until(
                "an instance ready",
                || async { self.gql(query, json!({ "i": id })).await["instance"].clone() },
                |i| i["state"] == "READY",
            )
            .await;
        (id, ready["providerId"].as_str().unwrap().to_owned())
    }

    async fn network(&self) -> String {
        let data = self
            .gql(
                "mutation($i: NetworkCreateInput!) { networkCreate(input: $i) { id } }",
                json!({ "i": { "tenantId": "acme", "poolId": self.pool, "name": "lan", "subnets": [{ "region": "nyc3", "ipRange": "10.60.0.0/24" }], "idempotencyKey": "lan" } }),
            )
            .await;
        let id = data["networkCreate"]["id"].as_str().unwrap().to_owned();
        let query = "query($n: String!) { network(tenantId: \"acme\", networkId: $n) { state } }";
        self.until(
            "a network ready",
            || async { self.gql(query, json!({ "n": id })).await["network"].clone() },
            |n| n["state"] == "READY",
        )
        .await;
        id
    }

    /// The types of the events of `subject`, in feed order.
    async fn event_types(&self, subject: &str) -> Vec<String> {
        let page = self
            .gql("{ events(tenantId: \"acme\", first: 1000) { edges { node { type subject } } } }", json!({}))
            .await;
        page["events"]["edges"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["node"]["subject"] == subject)
            .map(|e| e["node"]["type"].as_str().unwrap().to_owned())
            .collect()
    }

    /// The types of the events of `subject` once one of them is `wanted`.
    async fn events_until(&self, subject: &str, wanted: &str) -> Vec<String> {
        let seen = self
            .until(
                &format!("{wanted} in the feed"),
                || async { json!(self.event_types(subject).await) },
                |types| types.as_array().unwrap().iter().any(|t| t == wanted),
            )
            .await;
        serde_json::from_value(seen).unwrap()
    }

    /// The diskGiB the tenant's volumes hold: what is used, less its instances' disks.
    async fn used(&self) -> i64 {
        let data = self.gql("{ quotas(tenantId: \"acme\") { resource used } }", json!({})).await;
        let used = data["quotas"].as_array().unwrap().iter().find(|q| q["resource"] == "diskGiB").unwrap()["used"]
            .as_i64()
            .unwrap();
        used - common::instance_disks(&self.server, &self.token).await
    }
}

fn provider_name(id: &str) -> String {
    vps_graph::service::volumes::provider_name(id)
}

/// Whether `wanted` appear in `seen` in this order (other events may come between).
fn in_order(seen: &[String], wanted: &[&str]) -> bool {
    let mut rest = seen.iter();
    wanted.iter().all(|w| rest.any(|s| s == w))
}

db_test!(
    a_block_volume_is_created_attached_resized_snapshotted_restored_detached_and_deleted,
    |backend: Backend| async move {
        let s = setup(backend).await;
        let (instance, droplet) = s.instance("db-1", None).await;
        let id = s.create_volume("pg-data", json!({ "filesystem": "EXT4" })).await;
        let ready = s.until_volume(&id, "ready", |v| v["state"] == "READY").await;
        assert_eq!(
            ready["device"],
            format!("/dev/disk/by-id/scsi-0DO_Volume_{}", provider_name(&id)),
            "the path the guest sees"
        );
        assert_eq!(ready["observedSizeGiB"], 10);

        s.mutate("providerVolumeAttach", json!({ "tenantId": "acme", "volumeId": id, "instanceId": instance })).await;
        s.until_volume(&id, "attached", |v| v["attachments"][0]["state"] == "READY").await;
        let (_, at_sim) = s.at_sim(&format!("/v2/droplets/{droplet}")).await;
        assert_eq!(at_sim["droplet"]["volume_ids"].as_array().unwrap().len(), 1, "attached at the provider: {at_sim}");

        s.mutate("providerVolumeResize", json!({ "tenantId": "acme", "volumeId": id, "sizeGiB": 20 })).await;
        assert_eq!(s.used().await, 20, "the difference is booked at once");
        s.until_volume(&id, "resized", |v| v["state"] == "READY" && v["observedSizeGiB"] == 20).await;

        let snap = s.snapshot(&id, "nightly").await;
        let with_snapshot = s.until_volume(&id, "snapshotted", |v| v["snapshots"][0]["state"] == "READY").await;
        assert!(with_snapshot["snapshots"][0]["sizeGiB"].as_f64().unwrap() > 0.0, "the GiB the provider reports");

        let copy = s
        .gql(
            "mutation($i: ProviderSnapshotRestoreInput!) { providerSnapshotRestore(input: $i) { id } }",
            json!({ "i": { "tenantId": "acme", "snapshotId": snap, "name": "pg-copy", "sizeGiB": 30, "idempotencyKey": "copy" } }),
        )
        .await["providerSnapshotRestore"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
        // Made from the snapshot at its size, then grown to the size asked.
        s.until_volume(&copy, "restored", |v| v["state"] == "READY" && v["observedSizeGiB"] == 30).await;

        s.mutate("providerVolumeDetach", json!({ "tenantId": "acme", "volumeId": id })).await;
        s.until_volume(&id, "detached", |v| v["attachments"].as_array().unwrap().is_empty()).await;
        let (_, at_sim) = s.at_sim(&format!("/v2/droplets/{droplet}")).await;
        assert!(at_sim["droplet"]["volume_ids"].as_array().unwrap().is_empty(), "detached at the provider");

        s.mutate("providerVolumeDelete", json!({ "tenantId": "acme", "volumeId": id })).await;
        let query =
            "{ providerVolumes(tenantId: \"acme\", includeDeleted: true) { edges { node { id state deletedAt } } } }";
        s.until(
            "deleted",
            || async { s.gql(query, json!({})).await },
            |page| {
                page["providerVolumes"]["edges"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|e| e["node"]["id"] == id.as_str() && e["node"]["state"] == "DELETED")
            },
        )
        .await;
        assert_eq!(s.used().await, 30, "its diskGiB refunded once the provider deleted it (the copy keeps 30)");
        let (status, _) = s.at_sim(&format!("/v2/volumes?name={}&region=nyc3", provider_name(&id))).await;
        assert_eq!(status, 200);

        let types = s
            .until(
                "all events",
                || async { json!(s.event_types(&id).await) },
                |t| t.as_array().unwrap().last() == Some(&json!("providerVolume.deleted")),
            )
            .await;
        let types: Vec<String> = serde_json::from_value(types).unwrap();
        let snapshot_events = s.event_types(&snap).await;
        assert!(
            in_order(&snapshot_events, &["providerVolume.snapshot.created", "providerVolume.snapshot.ready"]),
            "{snapshot_events:?}"
        );
        // The billing meters: from ready until deleted.
        let billed = s.gql(query, json!({})).await;
        let row = billed["providerVolumes"]["edges"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["node"]["id"] == id.as_str())
            .unwrap()
            .clone();
        assert!(row["node"]["deletedAt"].is_string(), "{row}");
        assert!(ready["readyAt"].is_string(), "{ready}");
        let wanted = [
            "providerVolume.created",
            "providerVolume.ready",
            "providerVolume.attached",
            "providerVolume.resized",
            "providerVolume.detached",
            "providerVolume.deleting",
            "providerVolume.deleted",
        ];
        assert!(in_order(&types, &wanted), "{types:?}");
        assert_eq!(types.iter().filter(|t| t.as_str() == "providerVolume.ready").count(), 1, "{types:?}");
        // The provider calls it took: one create each, the actions it needed, one snapshot.
        assert_eq!(s.sim().name_calls("volumes.made", &provider_name(&id)), 1);
        assert_eq!(s.sim().name_calls("volumes.made", &provider_name(&copy)), 1);
        assert_eq!(s.sim().calls("volumes.create"), 2);
        assert_eq!(s.sim().calls("volumes.actions.create"), 3, "attach, resize, detach (the copy is made at its size)");
        assert_eq!(s.sim().calls("volumes.snapshots.create"), 1);
        assert_eq!(s.sim().calls("volumes.delete"), 1);
    }
);

db_test!(a_shared_volume_on_three_instances_detached_from_two, |backend: Backend| async move {
    let s = setup(backend).await;
    let network = s.network().await;
    let mut instances = Vec::new();
    for name in ["web-a", "web-b", "web-c"] {
        instances.push(s.instance(name, Some(&network)).await);
    }
    let id = s.create_volume("assets", json!({ "kind": "SHARED", "sizeGiB": 50, "networkId": network })).await;
    let ready = s.until_volume(&id, "ready", |v| v["state"] == "READY").await;
    let source = ready["mount"]["source"].as_str().unwrap().to_owned();
    assert!(source.contains(":/"), "<host>:<path>: {source}");
    assert_eq!(ready["device"], source.as_str());
    assert_eq!(ready["mount"]["type"], "nfs4");
    assert_eq!(ready["mount"]["mountLines"]["fstab"], format!("{source} /mnt/assets nfs4 defaults,_netdev,nofail 0 0"));
    for (instance, _) in &instances {
        s.mutate("providerVolumeAttach", json!({ "tenantId": "acme", "volumeId": id, "instanceId": instance })).await;
    }
    s.until_volume(&id, "attached to three", |v| {
        v["attachments"].as_array().unwrap().iter().filter(|a| a["state"] == "READY").count() == 3
    })
    .await;
    let tag = vps_graph::store::volumes::share_tag(&id);
    let (_, tagged) = s.at_sim(&format!("/v2/droplets?tag_name={tag}")).await;
    assert_eq!(tagged["droplets"].as_array().unwrap().len(), 3, "each Droplet carries the share's tag");
    for (instance, _) in &instances[..2] {
        s.mutate("providerVolumeDetach", json!({ "tenantId": "acme", "volumeId": id, "instanceId": instance })).await;
    }
    let left = s.until_volume(&id, "detached from two", |v| v["attachments"].as_array().unwrap().len() == 1).await;
    assert_eq!(left["attachments"][0]["instanceId"], json!(instances[2].0));
    let (_, tagged) = s.at_sim(&format!("/v2/droplets?tag_name={tag}")).await;
    let still: Vec<String> = tagged["droplets"].as_array().unwrap().iter().map(|d| d["id"].to_string()).collect();
    assert_eq!(still, [instances[2].1.clone()], "only the third Droplet keeps the tag");
    let (_, shares) = s.at_sim("/v2/nfs").await;
    let vpcs = shares["shares"][0]["vpc_ids"].as_array().unwrap().clone();
    assert_eq!(vpcs.len(), 1, "a tagged Droplet is left in the VPC: it stays on the share");
    assert_eq!(s.sim().calls("nfs.create"), 1);
    // A share's snapshot is taken through the share's snapshot action (names of 20 at most).
    s.gql(
        "mutation($i: ProviderVolumeSnapshotInput!) { providerVolumeSnapshot(input: $i) { id } }",
        json!({ "i": { "tenantId": "acme", "volumeId": id, "name": "weekly", "idempotencyKey": "weekly" } }),
    )
    .await;
    s.until_volume(&id, "snapshotted", |v| v["snapshots"][0]["state"] == "READY").await;
    assert!(s.sim().calls("nfs.actions.create") >= 1);
});

db_test!(a_lost_create_answer_is_found_by_name_and_makes_one_volume, |backend: Backend| async move {
    let s = setup(backend).await;
    s.sim().inject("volumes.create", Fault::Drop, 1);
    let id = s.create_volume("lost", json!({})).await;
    // The clock stands still meanwhile: the run waits out the client's timeout on its lease.
    s.until_now(&id, "told of the lost answer", |v| {
        v["message"].as_str().is_some_and(|m| m.contains("looked up by its name"))
    })
    .await;
    let ready = s.until_volume(&id, "ready", |v| v["state"] == "READY").await;
    assert_eq!(ready["observedSizeGiB"], 10);
    assert_eq!(s.sim().calls("volumes.create"), 1, "never sent again");
    assert_eq!(s.sim().name_calls("volumes.made", &provider_name(&id)), 1, "one volume at the provider");
});

db_test!(a_volume_deleted_at_the_provider_goes_to_error_and_is_never_made_again, |backend: Backend| async move {
    let s = setup(backend).await;
    let id = s.create_volume("doomed", json!({})).await;
    s.until_volume(&id, "ready", |v| v["state"] == "READY").await;
    let (_, listed) = s.at_sim(&format!("/v2/volumes?name={}", provider_name(&id))).await;
    let provider_id = listed["volumes"][0]["id"].as_str().unwrap().to_owned();
    s.settled(&id).await;
    let deleted = s
        .server
        .http
        .delete(format!("{}/v2/volumes/{provider_id}", s.sim_url()))
        .bearer_auth("someone")
        .send()
        .await
        .unwrap();
    assert_eq!(deleted.status(), 204);
    s.clock.advance(3_600_000);
    let failed = s.until_volume(&id, "in error", |v| v["state"] == "ERROR").await;
    assert!(failed["message"].as_str().unwrap().contains("not made again"), "{failed}");
    // Three hourly drift reads come and go (each run done before the next hour), none makes it.
    for _ in 0..3 {
        s.clock.advance(3_600_000);
        common::idle(&s.server, &s.clock, &id).await;
    }
    assert_eq!(s.sim().calls("volumes.create"), 1, "never created again");
    // Deleting it now makes no provider call and refunds it.
    s.mutate("providerVolumeDelete", json!({ "tenantId": "acme", "volumeId": id })).await;
    s.until("refunded", || async { json!(s.used().await) }, |used| used == 0).await;
    assert_eq!(s.sim().calls("volumes.delete"), 1, "only the outsider's delete");
});

db_test!(
    deleting_an_instance_detaches_its_volumes_and_deletes_its_delete_with_instance_ones,
    |backend: Backend| async move {
        let s = setup(backend).await;
        let (instance, _) = s.instance("doomed", None).await;
        let keep = s.create_volume("keep", json!({ "instanceId": instance })).await;
        let go = s.create_volume("go", json!({ "instanceId": instance, "deleteWithInstance": true })).await;
        let saved = s.create_volume("saved", json!({ "instanceId": instance, "deleteWithInstance": true })).await;
        for id in [&keep, &go, &saved] {
            s.until_volume(id, "attached", |v| v["attachments"][0]["state"] == "READY").await;
        }
        // Detached before the instance's delete: never deleted with it.
        s.mutate("providerVolumeDetach", json!({ "tenantId": "acme", "volumeId": saved })).await;
        s.gql(
            "mutation($i: String!) { instanceDelete(input: { tenantId: \"acme\", instanceId: $i }) { state } }",
            json!({ "i": instance }),
        )
        .await;
        let body = s
            .server
            .gql(
                Some(&s.token),
                "mutation($i: ProviderVolumeDetachInput!) { providerVolumeDetach(input: $i) { id } }",
                json!({ "i": { "tenantId": "acme", "volumeId": go } }),
            )
            .await;
        assert_eq!(
            common::first_code(&body).as_deref(),
            Some("INVALID_STATE"),
            "a deleteWithInstance volume goes with the machine"
        );
        let kept = s.until_volume(&keep, "detached", |v| v["attachments"].as_array().unwrap().is_empty()).await;
        assert_eq!(kept["state"], "READY", "a plain volume is only detached");
        let query =
            "query { providerVolumes(tenantId: \"acme\", includeDeleted: true) { edges { node { id state } } } }";
        s.until(
            "the deleteWithInstance volume deleted",
            || async { s.gql(query, json!({})).await },
            |page| {
                page["providerVolumes"]["edges"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|e| e["node"]["id"] == go.as_str() && e["node"]["state"] == "DELETED")
            },
        )
        .await;
        let saved = s.until_volume(&saved, "detached", |v| v["attachments"].as_array().unwrap().is_empty()).await;
        assert_eq!(saved["state"], "READY", "a volume detached before the delete stays");
        assert_eq!(s.used().await, 20, "the deleted one is refunded");
    }
);

db_test!(a_refused_create_is_error_and_its_delete_makes_no_provider_call, |backend: Backend| async move {
    let s = setup(backend).await;
    s.sim().inject("volumes.create", Fault::Status { status: 403 }, 1);
    let id = s.create_volume("refused", json!({})).await;
    let failed = s.until_now(&id, "in error", |v| v["state"] == "ERROR").await;
    assert!(failed["message"].is_string(), "the provider's words: {failed}");
    s.mutate("providerVolumeDelete", json!({ "tenantId": "acme", "volumeId": id })).await;
    let query = "{ providerVolumes(tenantId: \"acme\", includeDeleted: true) { edges { node { id state } } } }";
    s.until(
        "deleted",
        || async { s.gql(query, json!({})).await },
        |page| page["providerVolumes"]["edges"][0]["node"]["state"] == "DELETED",
    )
    .await;
    assert_eq!(s.sim().calls("volumes.create"), 1);
    assert_eq!(s.sim().calls("volumes.delete") + s.sim().calls("volumes.list"), 0, "finished without a provider call");
    assert_eq!(s.used().await, 0, "refunded");
});

db_test!(a_restore_fails_when_its_snapshot_is_deleted_first, |backend: Backend| async move {
    let s = setup(backend).await;
    let id = s.create_volume("source", json!({})).await;
    s.until_volume(&id, "ready", |v| v["state"] == "READY").await;
    // The provider does not answer the snapshot: it stays pending while the clock stands.
    s.sim().inject("volumes.snapshots.create", Fault::Status { status: 503 }, 1);
    let snap = s.snapshot(&id, "s").await;
    let copy = s
        .gql(
            "mutation($i: ProviderSnapshotRestoreInput!) { providerSnapshotRestore(input: $i) { id } }",
            json!({ "i": { "tenantId": "acme", "snapshotId": snap, "name": "copy", "idempotencyKey": "copy" } }),
        )
        .await["providerSnapshotRestore"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let waiting = s
        .until_now(&copy, "waiting for the snapshot", |v| v["message"].as_str().is_some_and(|m| m.contains("waiting")))
        .await;
    assert_eq!(waiting["state"], "PENDING");
    s.gql(
        "mutation($s: String!) { providerSnapshotDelete(input: { tenantId: \"acme\", snapshotId: $s }) { state } }",
        json!({ "s": snap }),
    )
    .await;
    let failed = s.until_volume(&copy, "failed", |v| v["state"] == "ERROR").await;
    assert!(failed["message"].as_str().unwrap().contains("deleted before the restore"), "{failed}");
    assert_eq!(s.sim().name_calls("volumes.made", &provider_name(&copy)), 0, "nothing was made");
});

db_test!(provider_volume_changed_yields_each_new_view, |backend: Backend| async move {
    let s = setup(backend).await;
    let id = s.create_volume("watched", json!({})).await;
    let mut ws = s.server.ws(json!({ "Authorization": format!("Bearer {}", s.token) })).await;
    assert_eq!(ws.next(Duration::from_secs(5)).await.unwrap()["type"], "connection_ack");
    // A change after the subscription starts: a resize, then its convergence.
    s.server.subscribe_live(&mut ws, "1",
        "subscription($v: String!) { providerVolumeChanged(tenantId: \"acme\", volumeId: $v) { id state version observedSizeGiB attachments { instanceId } } }",
        json!({ "v": id })).await;
    s.until_volume(&id, "ready", |v| v["state"] == "READY").await;
    s.mutate("providerVolumeResize", json!({ "tenantId": "acme", "volumeId": id, "sizeGiB": 12 })).await;
    let views = views_while(&s, &mut ws, "providerVolumeChanged", |v| v["observedSizeGiB"] == 12).await;
    assert!(views.iter().all(|v| v["id"] == id.as_str()));
    let versions: Vec<i64> = views.iter().map(|v| v["version"].as_i64().unwrap()).collect();
    assert!(versions.windows(2).all(|v| v[0] < v[1]), "{versions:?}");
    let states: Vec<&str> = views.iter().map(|v| v["state"].as_str().unwrap()).collect();
    assert!(states.contains(&"UPDATING"), "the resize runs: {states:?}");
    assert_eq!(views.last().map(|v| v["state"].clone()), Some(json!("READY")), "{states:?}");
});

db_test!(the_hourly_drift_pass_puts_back_a_vpc_a_racing_detach_took_off_a_share, |backend: Backend| async move {
    let s = setup(backend).await;
    let network = s.network().await;
    let (instance, _) = s.instance("web-a", Some(&network)).await;
    let id = s
        .create_volume(
            "assets",
            json!({ "kind": "SHARED", "sizeGiB": 50, "networkId": network, "instanceId": instance }),
        )
        .await;
    s.until_volume(&id, "attached", |v| v["attachments"][0]["state"] == "READY").await;
    let (_, shares) = s.at_sim("/v2/nfs").await;
    let share = shares["shares"][0].clone();
    let vpc = share["vpc_ids"][0].as_str().unwrap().to_owned();
    // Someone takes the VPC off the share.
    let taken = s
        .server
        .http
        .post(format!("{}/v2/nfs/{}/actions", s.sim_url(), share["id"].as_str().unwrap()))
        .bearer_auth("someone")
        .json(&json!({ "type": "detach", "region": "", "params": { "vpc_id": vpc } }))
        .send()
        .await
        .unwrap();
    assert!(taken.status().is_success(), "{}", taken.status());
    // The sim's actions take their time on the app's clock.
    s.clock.advance(1_000);
    let (_, shares) = s.at_sim("/v2/nfs").await;
    assert!(shares["shares"][0]["vpc_ids"].as_array().unwrap().is_empty());
    s.settled(&id).await;
    s.clock.advance(3_600_000);
    s.until(
        "the VPC back on the share",
        || async { s.at_sim("/v2/nfs").await.1 },
        |shares| shares["shares"][0]["vpc_ids"].as_array().is_some_and(|v| v.iter().any(|x| x == vpc.as_str())),
    )
    .await;
});

db_test!(deleting_a_volume_whose_create_answer_was_lost_looks_it_up_by_name, |backend: Backend| async move {
    let s = setup(backend).await;
    s.sim().inject("volumes.create", Fault::Drop, 1);
    let id = s.create_volume("lost-then-gone", json!({})).await;
    s.until_now(&id, "told of the lost answer", |v| v["message"].as_str().is_some_and(|m| m.contains("looked up")))
        .await;
    s.mutate("providerVolumeDelete", json!({ "tenantId": "acme", "volumeId": id })).await;
    let query = "{ providerVolumes(tenantId: \"acme\", includeDeleted: true) { edges { node { id state } } } }";
    s.until(
        "deleted",
        || async { s.gql(query, json!({})).await },
        |page| page["providerVolumes"]["edges"][0]["node"]["state"] == "DELETED",
    )
    .await;
    assert_eq!(s.sim().calls("volumes.create"), 1, "never created to be deleted");
    let (_, left) = s.at_sim(&format!("/v2/volumes?name={}", provider_name(&id))).await;
    assert_eq!(left["volumes"], json!([]), "the volume the lost answer made is deleted");
});

/// The views a subscription yields until one in state `last`, moving the clock a second at a
/// time meanwhile (so a look "5 s later" comes round).
async fn views_until(s: &Setup, ws: &mut common::Ws, field: &str, last: &str) -> Vec<Value> {
    views_while(s, ws, field, |view| view["state"] == last).await
}

async fn views_while(s: &Setup, ws: &mut common::Ws, field: &str, done: impl Fn(&Value) -> bool) -> Vec<Value> {
    let mut views = Vec::new();
    for _ in 0..100 {
        if let Some(message) = ws.next(Duration::from_millis(200)).await {
            let view = message["payload"]["data"][field].clone();
            if !view.is_null() {
                let done = done(&view);
                views.push(view);
                if done {
                    break;
                }
            }
        }
        s.clock.advance(1_000);
    }
    views
}

db_test!(instance_changed_and_provider_snapshot_changed_yield_each_new_view, |backend: Backend| async move {
    let s = setup(backend).await;
    let (instance, _) = s.instance("watched", None).await;
    let id = s.create_volume("with-snapshot", json!({})).await;
    s.until_volume(&id, "ready", |v| v["state"] == "READY").await;
    let snap = s.snapshot(&id, "s").await;
    let snapshotted = s.until_volume(&id, "snapshotted", |v| v["snapshots"][0]["state"] == "READY").await;
    let ready_version = snapshotted["snapshots"][0]["version"].as_i64().unwrap();
    let mut ws = s.server.ws(json!({ "Authorization": format!("Bearer {}", s.token) })).await;
    assert_eq!(ws.next(Duration::from_secs(5)).await.unwrap()["type"], "connection_ack");
    s.server.subscribe_live(&mut ws, "1",
        "subscription($s: String!) { providerSnapshotChanged(tenantId: \"acme\", snapshotId: $s) { id state version } }",
        json!({ "s": snap })).await;
    s.gql(
        "mutation($s: String!) { providerSnapshotDelete(input: { tenantId: \"acme\", snapshotId: $s }) { state } }",
        json!({ "s": snap }),
    )
    .await;
    // A subscription that starts "now" may also yield views committed just before it started
    // (the feed's horizon): anchor on the version the snapshot had when it was deleted.
    let views = views_until(&s, &mut ws, "providerSnapshotChanged", "DELETED").await;
    let states: Vec<&str> = views
        .iter()
        .filter(|v| v["version"].as_i64() > Some(ready_version))
        .map(|v| v["state"].as_str().unwrap())
        .collect();
    assert_eq!(states, ["DELETING", "DELETED"], "{views:?}");
    s.server
        .subscribe_live(
            &mut ws,
            "2",
            "subscription($i: String!) { instanceChanged(tenantId: \"acme\", instanceId: $i) { id state version } }",
            json!({ "i": instance }),
        )
        .await;
    s.gql(
        "mutation($i: String!) { instanceDelete(input: { tenantId: \"acme\", instanceId: $i }) { state } }",
        json!({ "i": instance }),
    )
    .await;
    let views = views_until(&s, &mut ws, "instanceChanged", "DELETED").await;
    let views: Vec<Value> = views.into_iter().filter(|v| v["state"] != "READY").collect();
    assert_eq!(views.first().map(|v| v["state"].clone()), Some(json!("DELETING")), "{views:?}");
    assert_eq!(views.last().map(|v| v["state"].clone()), Some(json!("DELETED")), "{views:?}");
    let versions: Vec<i64> = views.iter().map(|v| v["version"].as_i64().unwrap()).collect();
    assert!(versions.windows(2).all(|v| v[0] < v[1]), "{versions:?}");
});

impl Setup {
    /// A volume someone made and attached by hand at the provider; returns its provider id.
    async fn hand_attached(&self, droplet: &str) -> String {
        let base = self.sim_url();
        let made: Value = self
            .server
            .http
            .post(format!("{base}/v2/volumes"))
            .bearer_auth("someone")
            .json(&json!({ "name": "by-hand", "size_gigabytes": 5, "region": "nyc3" }))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let id = made["volume"]["id"].as_str().unwrap().to_owned();
        let attach = json!({ "type": "attach", "droplet_id": droplet.parse::<u64>().unwrap() });
        let asked = self
            .server
            .http
            .post(format!("{base}/v2/volumes/{id}/actions"))
            .bearer_auth("someone")
            .json(&attach)
            .send()
            .await
            .unwrap();
        assert_eq!(asked.status(), 202);
        self.until(
            "attached by hand",
            || async { self.at_sim(&format!("/v2/volumes/{id}")).await.1 },
            |v| v["volume"]["droplet_ids"].as_array().is_some_and(|d| !d.is_empty()),
        )
        .await;
        id
    }

    async fn provider_id_of(&self, volume: &str) -> String {
        let (_, found) = self.at_sim(&format!("/v2/volumes?name={}", provider_name(volume))).await;
        found["volumes"][0]["id"].as_str().unwrap().to_owned()
    }

    async fn until_instance_deleted(&self, instance: &str) {
        let query = "{ instances(tenantId: \"acme\", includeDeleted: true) { edges { node { id state } } } }";
        self.until(
            "the instance deleted",
            || async { self.gql(query, json!({})).await },
            |page| {
                page["instances"]["edges"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|e| e["node"]["id"] == instance && e["node"]["state"] == "DELETED")
            },
        )
        .await;
    }
}

db_test!(
    an_instance_delete_names_only_its_delete_with_instance_volumes_in_one_selective_destroy,
    |backend: Backend| async move {
        let s = setup(backend).await;
        let (instance, droplet) = s.instance("doomed", None).await;
        let going = s.create_volume("going", json!({ "instanceId": instance, "deleteWithInstance": true })).await;
        let plain = s.create_volume("plain", json!({ "instanceId": instance })).await;
        for id in [&going, &plain] {
            s.until_volume(id, "attached", |v| v["attachments"][0]["state"] == "READY").await;
        }
        let by_hand = s.hand_attached(&droplet).await;
        let going_at_provider = s.provider_id_of(&going).await;
        s.gql(
            "mutation($i: String!) { instanceDelete(input: { tenantId: \"acme\", instanceId: $i }) { state } }",
            json!({ "i": instance }),
        )
        .await;
        s.until_instance_deleted(&instance).await;
        let destroys = s.sim().selective_destroys();
        assert_eq!(destroys.len(), 1, "one selective destroy: {destroys:?}");
        assert_eq!(destroys[0].0.to_string(), droplet);
        assert_eq!(destroys[0].1["volumes"], json!([going_at_provider]), "exactly the deleteWithInstance volume");
        assert_eq!(s.sim().calls("droplets.delete"), 0, "no plain delete");
        let (status, _) = s.at_sim(&format!("/v2/volumes/{by_hand}")).await;
        assert_eq!(status, 200, "a volume attached by hand survives");
        let kept = s.until_volume(&plain, "detached", |v| v["attachments"].as_array().unwrap().is_empty()).await;
        assert_eq!(kept["state"], "READY");
        let query = "{ providerVolumes(tenantId: \"acme\", includeDeleted: true) { edges { node { id state } } } }";
        s.until(
            "the deleteWithInstance volume deleted",
            || async { s.gql(query, json!({})).await },
            |page| {
                page["providerVolumes"]["edges"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|e| e["node"]["id"] == going.as_str() && e["node"]["state"] == "DELETED")
            },
        )
        .await;
        for ours in [&going, &plain] {
            assert_eq!(s.sim().name_calls("volumes.made", &provider_name(ours)), 1, "nothing was made again");
        }
    }
);

db_test!(an_instance_whose_ownership_tag_is_gone_finishes_as_a_detach, |backend: Backend| async move {
    let s = setup(backend).await;
    let (instance, droplet) = s.instance("adopted-away", None).await;
    let going = s.create_volume("stays", json!({ "instanceId": instance, "deleteWithInstance": true })).await;
    s.until_volume(&going, "attached", |v| v["attachments"][0]["state"] == "READY").await;
    // Someone takes our tag off the machine.
    let tag = vps_graph::provider::ownership_tag(&s.server.app.services.deployment);
    let untag = json!({ "resources": [{ "resource_id": droplet, "resource_type": "droplet" }] });
    let taken = s
        .server
        .http
        .delete(format!("{}/v2/tags/{tag}/resources", s.sim_url()))
        .bearer_auth("someone")
        .json(&untag)
        .send()
        .await
        .unwrap();
    assert_eq!(taken.status(), 204);
    s.gql(
        "mutation($i: String!) { instanceDelete(input: { tenantId: \"acme\", instanceId: $i }) { state } }",
        json!({ "i": instance }),
    )
    .await;
    s.until_instance_deleted(&instance).await;
    let (status, _) = s.at_sim(&format!("/v2/droplets/{droplet}")).await;
    assert_eq!(status, 200, "the machine is left running");
    let kept = s.until_volume(&going, "detached", |v| v["attachments"].as_array().unwrap().is_empty()).await;
    assert_eq!(kept["state"], "READY", "only detached, deleteWithInstance or not");
    assert!(s.sim().selective_destroys().is_empty());
});

// Issue 12's lost answers: after a call whose outcome is unknown, the next run looks before it
// acts, so what the provider did is recorded instead of being refused when sent again.

db_test!(a_resize_whose_answer_was_lost_is_looked_at_before_it_is_sent_again, |backend: Backend| async move {
    let s = setup(backend).await;
    let id = s.create_volume("grows", json!({ "sizeGiB": 12 })).await;
    s.until_volume(&id, "ready", |v| v["state"] == "READY").await;
    s.settled(&id).await;
    s.sim().inject("volumes.actions.create", Fault::Drop, 1);
    s.mutate("providerVolumeResize", json!({ "tenantId": "acme", "volumeId": id, "sizeGiB": 18 })).await;
    // The clock stands still while the run waits out the client's timeout on its lease.
    s.until_now(&id, "told of the lost answer", |v| v["message"].is_string()).await;
    let grown = s.until_volume(&id, "grown", |v| v["state"] == "READY" && v["observedSizeGiB"] == 18).await;
    assert_eq!(grown["sizeGiB"], 18);
    assert_eq!(s.sim().calls("volumes.actions.create"), 1, "the resize was sent once");
    // The feed may show the resize a moment after the row (PostgreSQL's horizon).
    let events = s.events_until(&id, "providerVolume.resized").await;
    assert!(!events.iter().any(|e| e == "providerVolume.error"), "never in error: {events:?}");
});

db_test!(an_attach_whose_answer_was_lost_is_looked_at_before_it_is_sent_again, |backend: Backend| async move {
    let s = setup(backend).await;
    let (instance, droplet) = s.instance("web", None).await;
    let id = s.create_volume("data", json!({})).await;
    s.until_volume(&id, "ready", |v| v["state"] == "READY").await;
    s.settled(&id).await;
    s.sim().inject("volumes.actions.create", Fault::Drop, 1);
    s.mutate("providerVolumeAttach", json!({ "tenantId": "acme", "volumeId": id, "instanceId": instance })).await;
    s.until_now(&id, "told of the lost answer", |v| v["attachments"][0]["message"].is_string()).await;
    let attached = s.until_volume(&id, "attached", |v| v["attachments"][0]["state"] == "READY").await;
    assert!(attached["attachments"][0]["message"].is_null(), "{attached}");
    assert_eq!(s.sim().calls("volumes.actions.create"), 1, "the attach was sent once");
    let (_, at_sim) = s.at_sim(&format!("/v2/volumes?name={}", provider_name(&id))).await;
    assert_eq!(at_sim["volumes"][0]["droplet_ids"], json!([droplet.parse::<u64>().unwrap()]));
    let events = s.events_until(&id, "providerVolume.attached").await;
    assert!(!events.iter().any(|e| e == "providerVolume.error"), "never in error: {events:?}");
});

db_test!(a_resize_asked_while_the_create_is_in_flight_is_sent_once_the_volume_is_made, |backend: Backend| async move {
    let s = setup(backend).await;
    s.sim().inject("volumes.create", Fault::Drop, 1);
    let id = s.create_volume("early", json!({ "sizeGiB": 5 })).await;
    s.until_now(&id, "told of the lost answer", |v| {
        v["message"].as_str().is_some_and(|m| m.contains("looked up by its name"))
    })
    .await;
    s.mutate("providerVolumeResize", json!({ "tenantId": "acme", "volumeId": id, "sizeGiB": 8 })).await;
    assert_eq!(s.used().await, 8, "booked at once");
    // Within `until`'s ten minutes of clock: long before the hourly drift read.
    let grown = s.until_volume(&id, "grown", |v| v["state"] == "READY" && v["observedSizeGiB"] == 8).await;
    assert_eq!(grown["sizeGiB"], 8);
    assert_eq!(s.sim().calls("volumes.create"), 1);
});

// Spec and status: a user change during a provider call never throws the call's answer away;
// what the run decided waits for the next run, which sees the change.
db_test!(a_user_change_during_a_create_keeps_the_providers_answer, |backend: Backend| async move {
    let s = setup_with(backend, Duration::from_millis(500)).await;
    let id = s.create_volume("early", json!({ "sizeGiB": 5 })).await;
    let row = || s.row(&id);
    s.create_sent(&id).await;
    // The create is on its way (the sim answers half a second later): the tenant resizes meanwhile.
    s.mutate("providerVolumeResize", json!({ "tenantId": "acme", "volumeId": id, "sizeGiB": 8 })).await;
    assert!(row().await.provider_id.is_none(), "the resize came while the create was in flight");
    let grown = s.until_between_runs(&id, "grown", |v| v["state"] == "READY" && v["observedSizeGiB"] == 8).await;
    assert_eq!(grown["sizeGiB"], 8);
    assert_eq!(s.sim().calls("volumes.create"), 1);
    assert_eq!(s.sim().calls("volumes.list"), 0, "the create's answer was kept, not looked up by name again");
});

db_test!(a_snapshots_sizes_are_the_providers_not_the_volumes_at_request_time, |backend: Backend| async move {
    let s = setup(backend).await;
    let id = s.create_volume("db", json!({ "sizeGiB": 10 })).await;
    s.until_volume(&id, "ready", |v| v["state"] == "READY").await;
    // The provider takes the snapshot only after the volume has grown.
    s.sim().inject("volumes.snapshots.create", Fault::Status { status: 503 }, 1);
    let snap = s
        .gql(
            "mutation($v: String!) { providerVolumeSnapshot(input: { tenantId: \"acme\", volumeId: $v, name: \"before\", idempotencyKey: \"before\" }) { id minDiskSizeGiB } }",
            json!({ "v": id }),
        )
        .await["providerVolumeSnapshot"]
        .clone();
    assert_eq!(snap["minDiskSizeGiB"], 10, "the volume's size until the provider says");
    s.mutate("providerVolumeResize", json!({ "tenantId": "acme", "volumeId": id, "sizeGiB": 20 })).await;
    s.until_volume(&id, "grown", |v| v["observedSizeGiB"] == 20).await;
    let query =
        "query($s: String!) { providerSnapshot(tenantId: \"acme\", snapshotId: $s) { state minDiskSizeGiB sizeGiB } }";
    let ready = s
        .until(
            "the snapshot ready",
            || async { s.gql(query, json!({ "s": snap["id"] })).await["providerSnapshot"].clone() },
            |v| v["state"] == "READY",
        )
        .await;
    assert_eq!(ready["minDiskSizeGiB"], 20, "the provider's min_disk_size: {ready}");
    assert_eq!(ready["sizeGiB"], 1.0, "the provider's billable GiB: {ready}");
    // A restore defaults to, and is checked against, the provider's size.
    let restore = "mutation($s: String!, $size: Int) { providerSnapshotRestore(input: { tenantId: \"acme\", snapshotId: $s, name: \"copy\", sizeGiB: $size, idempotencyKey: \"copy\" }) { id sizeGiB } }";
    let small = s.server.gql(Some(&s.token), restore, json!({ "s": snap["id"], "size": 15 })).await;
    assert_eq!(common::first_code(&small).as_deref(), Some("INVALID_INPUT"), "{small}");
    let copy = s.gql(restore, json!({ "s": snap["id"], "size": null })).await["providerSnapshotRestore"].clone();
    assert_eq!(copy["sizeGiB"], 20);
    let made = s.until_volume(copy["id"].as_str().unwrap(), "restored", |v| v["state"] == "READY").await;
    assert_eq!(made["observedSizeGiB"], 20);
});

// Issue 14's failures the real APIs have: the work a call started fails at the provider. Each is
// the seeds' error with what the provider said, and is asked again by the periodic pass (five
// minutes later), which then converges.

const FIVE_MINUTES: i64 = 5 * 60_000;

fn fails() -> Fault {
    Fault::Fail { message: None }
}

db_test!(an_errored_resize_is_an_error_and_sent_again_by_the_periodic_pass, |backend: Backend| async move {
    let s = setup(backend).await;
    let id = s.create_volume("grows", json!({ "sizeGiB": 12 })).await;
    s.until_volume(&id, "ready", |v| v["state"] == "READY").await;
    s.settled(&id).await;
    s.sim().inject("volumes.actions.create", fails(), 1);
    s.mutate("providerVolumeResize", json!({ "tenantId": "acme", "volumeId": id, "sizeGiB": 18 })).await;
    let failed = s.until_volume(&id, "in error", |v| v["state"] == "ERROR").await;
    assert_eq!(failed["message"], "the provider's resize failed", "{failed}");
    assert_eq!(failed["observedSizeGiB"], 12);
    s.settled(&id).await;
    assert_eq!(s.sim().calls("volumes.actions.create"), 1, "not sent again before the periodic pass");
    s.clock.advance(FIVE_MINUTES);
    let grown = s.until_volume(&id, "grown", |v| v["state"] == "READY" && v["observedSizeGiB"] == 18).await;
    assert!(grown["message"].is_null(), "{grown}");
    assert_eq!(s.sim().calls("volumes.actions.create"), 2);
    let events = s.events_until(&id, "providerVolume.resized").await;
    assert!(in_order(&events, &["providerVolume.error", "providerVolume.resized"]), "{events:?}");
});

db_test!(an_errored_attach_is_an_error_and_sent_again_by_the_periodic_pass, |backend: Backend| async move {
    let s = setup(backend).await;
    let (instance, droplet) = s.instance("web", None).await;
    let id = s.create_volume("data", json!({})).await;
    s.until_volume(&id, "ready", |v| v["state"] == "READY").await;
    s.settled(&id).await;
    s.sim().inject("volumes.actions.create", fails(), 1);
    s.mutate("providerVolumeAttach", json!({ "tenantId": "acme", "volumeId": id, "instanceId": instance })).await;
    let failed = s.until_volume(&id, "attach in error", |v| v["attachments"][0]["state"] == "ERROR").await;
    assert_eq!(failed["attachments"][0]["message"], "the provider's attach failed", "{failed}");
    s.settled(&id).await;
    s.clock.advance(FIVE_MINUTES);
    s.until_volume(&id, "attached", |v| v["attachments"][0]["state"] == "READY").await;
    assert_eq!(s.sim().calls("volumes.actions.create"), 2);
    let (_, at_sim) = s.at_sim(&format!("/v2/volumes?name={}", provider_name(&id))).await;
    assert_eq!(at_sim["volumes"][0]["droplet_ids"], json!([droplet.parse::<u64>().unwrap()]));
});

db_test!(a_share_the_provider_failed_to_make_is_an_error_and_made_again, |backend: Backend| async move {
    let s = setup(backend).await;
    let network = s.network().await;
    s.sim().inject("nfs.create", fails(), 1);
    let id = s.create_volume("assets", json!({ "kind": "SHARED", "sizeGiB": 50, "networkId": network })).await;
    let failed = s.until_volume(&id, "in error", |v| v["state"] == "ERROR").await;
    assert_eq!(failed["message"], "the provider failed to make the share", "{failed}");
    let (_, shares) = s.at_sim("/v2/nfs").await;
    assert_eq!(shares["shares"][0]["status"], "FAILED");
    s.settled(&id).await;
    s.clock.advance(FIVE_MINUTES);
    let ready = s.until_volume(&id, "made again", |v| v["state"] == "READY").await;
    assert!(ready["mount"]["source"].as_str().unwrap().contains(":/"), "{ready}");
    assert_eq!(s.sim().calls("nfs.create"), 2);
    let (_, shares) = s.at_sim("/v2/nfs").await;
    let statuses: Vec<&Value> = shares["shares"].as_array().unwrap().iter().map(|s| &s["status"]).collect();
    assert_eq!(statuses, [&json!("ACTIVE")], "the failed share was deleted: {shares}");
});

db_test!(an_nfs_resize_that_failed_is_an_error_once_its_time_is_up_and_sent_again, |backend: Backend| async move {
    let s = setup(backend).await;
    let network = s.network().await;
    let id = s.create_volume("assets", json!({ "kind": "SHARED", "sizeGiB": 50, "networkId": network })).await;
    s.until_volume(&id, "ready", |v| v["state"] == "READY").await;
    s.settled(&id).await;
    s.sim().inject("nfs.actions.create", fails(), 1);
    s.mutate("providerVolumeResize", json!({ "tenantId": "acme", "volumeId": id, "sizeGiB": 80 })).await;
    s.until_now(&id, "resizing", |v| v["state"] == "UPDATING").await;
    // The NFS action (which no endpoint can read back) ended ACTION_FAILED: the share never grows.
    s.settled(&id).await;
    s.clock.advance(10 * 60_000);
    let failed = s.until_volume(&id, "in error", |v| v["state"] == "ERROR").await;
    assert!(failed["message"].as_str().unwrap().contains("did not resize the share"), "{failed}");
    assert_eq!(failed["observedSizeGiB"], 50);
    s.settled(&id).await;
    s.clock.advance(FIVE_MINUTES);
    s.until_volume(&id, "grown", |v| v["state"] == "READY" && v["observedSizeGiB"] == 80).await;
    assert_eq!(s.sim().calls("nfs.actions.create"), 2);
});

db_test!(an_nfs_attach_that_failed_is_an_error_once_its_time_is_up_and_sent_again, |backend: Backend| async move {
    let s = setup(backend).await;
    let network = s.network().await;
    let (instance, _) = s.instance("web", Some(&network)).await;
    let id = s.create_volume("assets", json!({ "kind": "SHARED", "sizeGiB": 50, "networkId": network })).await;
    s.until_volume(&id, "ready", |v| v["state"] == "READY").await;
    // The share's VPC is taken off outside, so the attach has to put it back.
    let (_, shares) = s.at_sim("/v2/nfs").await;
    let share = shares["shares"][0].clone();
    let vpc = share["vpc_ids"][0].as_str().unwrap().to_owned();
    let path = format!("{}/v2/nfs/{}/actions", s.sim_url(), share["id"].as_str().unwrap());
    let detach = json!({ "type": "detach", "region": "", "params": { "vpc_id": vpc } });
    s.server.http.post(&path).bearer_auth("someone").json(&detach).send().await.unwrap();
    s.until(
        "the VPC off the share",
        || async { s.at_sim("/v2/nfs").await.1 },
        |shares| shares["shares"][0]["vpc_ids"].as_array().is_some_and(|v| v.is_empty()),
    )
    .await;
    s.settled(&id).await;
    let asked = s.sim().calls("nfs.actions.create");
    s.sim().inject("nfs.actions.create", fails(), 1);
    s.mutate("providerVolumeAttach", json!({ "tenantId": "acme", "volumeId": id, "instanceId": instance })).await;
    s.until_now(&id, "attach asked", |_| s.sim().calls("nfs.actions.create") == asked + 1).await;
    s.settled(&id).await;
    s.clock.advance(10 * 60_000);
    let failed = s.until_volume(&id, "attach in error", |v| v["attachments"][0]["state"] == "ERROR").await;
    assert!(failed["attachments"][0]["message"].as_str().unwrap().contains("the attach failed"), "{failed}");
    s.settled(&id).await;
    s.clock.advance(FIVE_MINUTES);
    s.until_volume(&id, "attached", |v| v["attachments"][0]["state"] == "READY").await;
    assert_eq!(s.sim().calls("nfs.actions.create"), asked + 2);
});

db_test!(a_droplet_whose_create_failed_is_an_error_and_made_again, |backend: Backend| async move {
    let s = setup(backend).await;
    s.sim().inject("droplets.create", fails(), 1);
    let data = s
        .gql(
            "mutation($i: InstanceCreateInput!) { instanceCreate(input: $i) { id } }",
            json!({ "i": { "tenantId": "acme", "poolId": s.pool, "name": "web", "region": "nyc3", "size": "s-1vcpu-1gb", "image": "ubuntu-24-04-x64", "idempotencyKey": "web" } }),
        )
        .await;
    let id = data["instanceCreate"]["id"].as_str().unwrap().to_owned();
    let query = "query($i: String!) { instance(tenantId: \"acme\", instanceId: $i) { state message providerId } }";
    let read = || async { s.gql(query, json!({ "i": id })).await["instance"].clone() };
    let failed = s.until("the instance in error", read, |i| i["state"] == "ERROR").await;
    assert!(failed["message"].as_str().unwrap().contains("failed to make Droplet"), "{failed}");
    assert!(failed["providerId"].is_null(), "{failed}");
    common::idle(&s.server, &s.clock, &id).await;
    assert_eq!(s.sim().calls("droplets.create"), 1);
    s.clock.advance(FIVE_MINUTES);
    let ready = s.until("the instance made again", read, |i| i["state"] == "READY").await;
    assert!(ready["providerId"].is_string());
    assert_eq!(s.sim().calls("droplets.create"), 2);
    let (_, droplets) = s.at_sim("/v2/droplets").await;
    assert_eq!(droplets["droplets"].as_array().unwrap().len(), 1, "one Droplet: {droplets}");
});

db_test!(
    every_change_the_tenant_asks_of_a_volume_bumps_the_generation_of_the_row_it_changes,
    |backend: Backend| async move {
        // A reconciler's write-back never bumps a generation, so each step's count is exact
        // whatever the reconcilers do meanwhile.
        use sea_orm::EntityTrait;
        use vps_graph::store::entity::{provider_volume as volume, volume_attachment as attachment};
        let s = setup(backend).await;
        let db = &s.server.app.services.db;
        let (instance, _) = s.instance("web", None).await;
        let id = s.create_volume("data", json!({})).await;
        s.until_volume(&id, "ready", |v| v["state"] == "READY").await;
        let of_volume = || async { volume::Entity::find_by_id(id.clone()).one(db).await.unwrap().unwrap().generation };
        assert_eq!(of_volume().await, 1, "as made");

        s.mutate("providerVolumeResize", json!({ "tenantId": "acme", "volumeId": id, "sizeGiB": 12 })).await;
        assert_eq!(of_volume().await, 2, "a resize");
        s.until_volume(&id, "grown", |v| v["state"] == "READY" && v["observedSizeGiB"] == 12).await;
        assert_eq!(of_volume().await, 2, "the resize's write-back is no user change");

        s.mutate("providerVolumeAttach", json!({ "tenantId": "acme", "volumeId": id, "instanceId": instance })).await;
        s.until_volume(&id, "attached", |v| v["attachments"][0]["state"] == "READY").await;
        let of_attachment = || async {
            use sea_orm::{ColumnTrait, QueryFilter};
            let on = attachment::Entity::find().filter(attachment::Column::VolumeId.eq(id.clone()));
            on.one(db).await.unwrap().expect("the attachment").generation
        };
        assert_eq!(of_attachment().await, 1, "an attach makes its attachment at the first generation");
        s.mutate("providerVolumeDetach", json!({ "tenantId": "acme", "volumeId": id, "instanceId": instance })).await;
        assert_eq!(of_attachment().await, 2, "a detach");
        s.until_volume(&id, "detached", |v| v["attachments"].as_array().is_some_and(|a| a.is_empty())).await;

        let before_delete = of_volume().await;
        s.mutate("providerVolumeDelete", json!({ "tenantId": "acme", "volumeId": id })).await;
        assert_eq!(of_volume().await, before_delete + 1, "a delete");
    }
);

db_test!(
    a_snapshot_delete_and_an_instance_delete_each_bump_the_generation_of_the_row_they_change,
    |backend: Backend| async move {
        use sea_orm::EntityTrait;
        use vps_graph::store::entity::{instance, provider_snapshot as snapshot};
        let s = setup(backend).await;
        let db = &s.server.app.services.db;
        let (on, _) = s.instance("web", None).await;
        let id = s.create_volume("data", json!({})).await;
        s.until_volume(&id, "ready", |v| v["state"] == "READY").await;
        let snap = s.snapshot(&id, "nightly").await;
        s.until_volume(&id, "snapshotted", |v| v["snapshots"][0]["state"] == "READY").await;
        let of_snapshot =
            || async { snapshot::Entity::find_by_id(snap.clone()).one(db).await.unwrap().unwrap().generation };
        assert_eq!(of_snapshot().await, 1, "as made, whatever its write-backs");
        s.mutate("providerSnapshotDelete", json!({ "tenantId": "acme", "snapshotId": snap })).await;
        assert_eq!(of_snapshot().await, 2, "a snapshot delete");

        let of_instance =
            || async { instance::Entity::find_by_id(on.clone()).one(db).await.unwrap().unwrap().generation };
        assert_eq!(of_instance().await, 1, "as made, whatever its write-backs");
        s.mutate("instanceDelete", json!({ "tenantId": "acme", "instanceId": on })).await;
        assert_eq!(of_instance().await, 2, "an instance delete");
    }
);

/// A selection of every field of `type_name` that takes no argument, objects `depth` deep, as
/// (field, the field with its sub-selection) pairs, from the schema's own introspection.
async fn every_field(s: &Setup, type_name: &str, depth: usize) -> Vec<(String, String)> {
    let query = "query($t: String!) { __type(name: $t) { fields { name args { type { kind } } type { kind name ofType { kind name ofType { kind name ofType { kind name } } } } } } }";
    let found = s.gql(query, json!({ "t": type_name })).await;
    let mut fields = Vec::new();
    for field in found["__type"]["fields"].as_array().unwrap() {
        let name = field["name"].as_str().unwrap().to_owned();
        if field["args"].as_array().unwrap().iter().any(|a| a["type"]["kind"] == "NON_NULL") {
            continue;
        }
        let mut ty = &field["type"];
        while ty["name"].is_null() {
            ty = &ty["ofType"];
        }
        if ty["kind"] != "OBJECT" && ty["kind"] != "INTERFACE" {
            fields.push((name.clone(), name));
            continue;
        }
        if depth == 0 {
            continue;
        }
        let inner: Vec<String> = Box::pin(every_field(s, ty["name"].as_str().unwrap(), depth - 1))
            .await
            .into_iter()
            .map(|(_, f)| f)
            .collect();
        fields.push((name.clone(), format!("{name} {{ {} }}", inner.join(" "))));
    }
    fields
}

/// A block volume attached with a ready snapshot, and a shared one mounted and attached.
async fn volumes_of_both_kinds(s: &Setup) {
    let network = s.network().await;
    let (instance, _) = s.instance("web-1", Some(&network)).await;
    let block = s
        .create_volume("pg-data", json!({ "filesystem": "EXT4", "description": "primary", "instanceId": instance }))
        .await;
    s.until_volume(&block, "attached", |v| v["attachments"][0]["state"] == "READY").await;
    s.snapshot(&block, "nightly").await;
    s.until_volume(&block, "snapshotted", |v| v["snapshots"][0]["state"] == "READY").await;
    let shared = s.create_volume("assets", json!({ "kind": "SHARED", "sizeGiB": 50, "networkId": network })).await;
    s.until_volume(&shared, "ready", |v| v["state"] == "READY" && v["mount"]["source"].is_string()).await;
    s.mutate("providerVolumeAttach", json!({ "tenantId": "acme", "volumeId": shared, "instanceId": instance })).await;
    s.until_volume(&shared, "attached", |v| v["attachments"][0]["state"] == "READY").await;
}

db_test!(every_field_of_a_page_of_volumes_reads_as_the_volume_on_its_own, |backend: Backend| async move {
    let s = setup(backend).await;
    volumes_of_both_kinds(&s).await;
    let fields = every_field(&s, "ProviderVolume", 2).await;
    assert!(fields.len() >= 25, "{fields:?}");
    for (name, selection) in fields {
        // A page reads only the columns of the fields it selects: each field alone must read
        // as it does on the volume read whole.
        let page = s
            .gql(
                &format!(
                    "{{ providerVolumes(tenantId: \"acme\", first: 10) {{ edges {{ node {{ id {selection} }} }} }} }}"
                ),
                json!({}),
            )
            .await;
        let edges = page["providerVolumes"]["edges"].as_array().unwrap().clone();
        assert_eq!(edges.len(), 2, "{page}");
        for edge in edges {
            let id = edge["node"]["id"].as_str().unwrap();
            let alone = s
                .gql(
                    &format!("{{ providerVolume(tenantId: \"acme\", volumeId: \"{id}\") {{ {selection} }} }}"),
                    json!({}),
                )
                .await;
            assert_eq!(edge["node"][&name], alone["providerVolume"][&name], "{name} of {id}");
        }
    }
});

/// A page of `list` (of `type_name`s, every field `depth` deep) reads the same, byte for byte
/// and key order included, as the executor answers it: a fragment on the Node interface is for
/// the executor alone, so the same page with one is resolved field by field.
async fn assert_rendered_as_executed(s: &Setup, list: &str, type_name: &str, depth: usize) -> String {
    let every: Vec<String> = every_field(s, type_name, depth).await.into_iter().map(|(_, f)| f).collect();
    let page = |extra: &str| {
        format!(
            "{{ {list}(tenantId: \"acme\", first: 10) {{ edges {{ cursor node {{ id {} {extra} __typename }} }} }} }}",
            every.join(" ")
        )
    };
    let body = |query: String| async move {
        let request = s.server.http.post(s.server.url("/graphql")).bearer_auth(&s.token);
        request.json(&json!({ "query": query })).send().await.unwrap().text().await.unwrap()
    };
    let rendered = body(page("")).await;
    let executed = body(page("... on Node { id }")).await;
    assert!(!rendered.contains("errors") && rendered.matches("\"cursor\"").count() == 2, "{list}: {rendered}");
    assert_eq!(rendered, executed, "{list}");
    rendered
}

db_test!(a_page_rendered_from_memory_reads_as_the_executor_answers_it, |backend: Backend| async move {
    let s = setup(backend).await;
    volumes_of_both_kinds(&s).await;
    let volume = s.gql("{ providerVolumes(tenantId: \"acme\", first: 1) { edges { node { id } } } }", json!({})).await;
    let volume = volume["providerVolumes"]["edges"][0]["node"]["id"].as_str().unwrap().to_owned();
    s.snapshot(&volume, "weekly").await;
    s.instance("web-2", None).await;
    let volumes = assert_rendered_as_executed(&s, "providerVolumes", "ProviderVolume", 2).await;
    assert!(volumes.contains("\"instance\":{") && volumes.contains("\"snapshots\":[{"), "{volumes}");
    // An instance's filesystems are read by a loader (depth 0 leaves them out).
    assert_rendered_as_executed(&s, "instances", "Instance", 0).await;
    assert_rendered_as_executed(&s, "providerSnapshots", "ProviderSnapshot", 0).await;
});

// Issue 33: a replay returns what it made, whatever changed since.
db_test!(a_replayed_snapshot_request_answers_its_snapshot_once_its_volume_is_deleted, |backend: Backend| async move {
    let s = setup(backend).await;
    let id = s.create_volume("source", json!({})).await;
    s.until_volume(&id, "ready", |v| v["state"] == "READY").await;
    let snap = s.snapshot(&id, "nightly").await;
    s.until_volume(&id, "its snapshot ready", |v| v["snapshots"][0]["state"] == "READY").await;
    s.mutate("providerVolumeDelete", json!({ "tenantId": "acme", "volumeId": id })).await;
    s.until_volume(&id, "deleted", |v| v["state"] == "DELETED").await;
    assert_eq!(s.snapshot(&id, "nightly").await, snap, "the replay answers the snapshot it made");
    let other = json!({ "i": { "tenantId": "acme", "volumeId": id, "name": "other", "idempotencyKey": "nightly" } });
    let query = "mutation($i: ProviderVolumeSnapshotInput!) { providerVolumeSnapshot(input: $i) { id } }";
    let body = s.server.gql(Some(&s.token), query, other).await;
    assert_eq!(common::first_code(&body).as_deref(), Some("CONFLICT"), "the key with other input: {body}");
    let fresh = json!({ "i": { "tenantId": "acme", "volumeId": id, "name": "late", "idempotencyKey": "late" } });
    let body = s.server.gql(Some(&s.token), query, fresh).await;
    assert_eq!(
        common::first_code(&body).as_deref(),
        Some("NOT_FOUND"),
        "a first request on the deleted volume: {body}"
    );
});

// Issue 33: a restore without `sizeGiB` makes the volume at the snapshot's size as the provider
// reports it, booking the difference then (an error while the quota does not allow it); only an
// explicit size below it is an error.
db_test!(
    a_restore_that_names_no_size_takes_the_snapshots_size_as_the_provider_reports_it,
    |backend: Backend| async move {
        let s = setup(backend).await;
        let source = s.create_volume("source", json!({})).await;
        s.until_volume(&source, "ready", |v| v["state"] == "READY").await;
        // The provider takes the snapshot only after the volume has grown from 10 to 20 GiB.
        s.sim().inject("volumes.snapshots.create", Fault::Status { status: 503 }, 1);
        let snap = s.snapshot(&source, "before").await;
        let restore = "mutation($s: String!, $n: String!, $size: Int) { providerSnapshotRestore(input: { tenantId: \"acme\", snapshotId: $s, name: $n, sizeGiB: $size, idempotencyKey: $n }) { id sizeGiB } }";
        let restored = |name: &'static str, size: Value| {
            let s = &s;
            let snap = snap.clone();
            async move {
                s.gql(restore, json!({ "s": snap, "n": name, "size": size })).await["providerSnapshotRestore"].clone()
            }
        };
        let no_size = restored("copy", Value::Null).await;
        let pinned = restored("pinned", json!(10)).await;
        assert_eq!(
            (no_size["sizeGiB"].clone(), pinned["sizeGiB"].clone()),
            (json!(10), json!(10)),
            "the size recorded"
        );
        // Room for the source's growth, not for the copy's too.
        let quota = "mutation($m: Int!) { quotaSet(input: { tenantId: \"acme\", poolId: \"POOL\", resource: \"diskGiB\", max: $m }) { max } }";
        let quota = quota.replace("POOL", &s.pool);
        let disks = common::instance_disks(&s.server, &s.token).await;
        s.server.ok(Some(ADMIN), &quota, json!({ "m": disks + 45 })).await;
        s.mutate("providerVolumeResize", json!({ "tenantId": "acme", "volumeId": source, "sizeGiB": 20 })).await;
        s.until_volume(&source, "grown", |v| v["observedSizeGiB"] == 20).await;

        let copy = no_size["id"].as_str().unwrap();
        let refused = s.until_volume(copy, "refused by the quota", |v| v["state"] == "ERROR").await;
        let message = refused["message"].as_str().unwrap();
        assert!(message.contains("holds 20 GiB and the diskGiB quota does not allow"), "{refused}");
        assert_eq!(refused["sizeGiB"], 10, "nothing booked: {refused}");
        let failed = s.until_volume(pinned["id"].as_str().unwrap(), "too small", |v| v["state"] == "ERROR").await;
        assert!(failed["message"].as_str().unwrap().contains("more than the 10 GiB this restore asked"), "{failed}");
        assert_eq!(s.used().await, 40, "20 + 10 + 10: the copy's growth was never booked");
        assert_eq!(s.sim().name_calls("volumes.made", &provider_name(copy)), 0, "nothing was made");

        // With room, the periodic pass grows it, books the difference and makes it at 20 GiB.
        s.server.ok(Some(ADMIN), &quota, json!({ "m": disks + 2000 })).await;
        let made = s.until_volume(copy, "restored", |v| v["state"] == "READY").await;
        assert_eq!((made["sizeGiB"].clone(), made["observedSizeGiB"].clone()), (json!(20), json!(20)), "{made}");
        assert_eq!(s.used().await, 50);
        // PostgreSQL shows the ready event once every older transaction of the cluster has ended.
        let events = s.events_until(copy, "providerVolume.ready").await;
        assert!(
            in_order(&events, &["providerVolume.created", "providerVolume.updated", "providerVolume.ready"]),
            "{events:?}"
        );
    }
);

// Issue 33: deletion protection is a setting of ours: turned on while the create is in flight, the
// run's write-back is taken as it is (the spec did not move), and the volume is READY at once.
db_test!(
    protection_turned_on_during_a_create_keeps_the_providers_answer_and_the_setting,
    |backend: Backend| async move {
        let s = setup_with(backend, Duration::from_millis(500)).await;
        let id = s.create_volume("early", json!({})).await;
        let row = || s.row(&id);
        s.create_sent(&id).await;
        let generation = row().await.generation;
        s.mutate("providerVolumeUpdate", json!({ "tenantId": "acme", "volumeId": id, "deletionProtection": true }))
            .await;
        assert!(row().await.provider_id.is_none(), "the update came while the create was in flight");
        assert_eq!(row().await.generation, generation, "the spec did not move");
        let ready = s.until_between_runs(&id, "ready", |v| v["state"] == "READY").await;
        assert_eq!(ready["deletionProtection"], true, "{ready}");
        assert_eq!(s.sim().calls("volumes.create"), 1);
        assert_eq!(s.sim().calls("volumes.list"), 0, "the create's answer was kept");
    }
);
