//! Deletion protection (issue 33): a volume, snapshot or address that has it is refused a delete,
//! and an instance delete that would take a protected volume with it, until an update turns it
//! off. The refusal writes nothing; the update is a change of ours the provider never sees.
use crate::common;

use common::Backend;
use sea_orm::EntityTrait;
use serde_json::{Value, json};
use vps_graph::store::entity::provider_volume;

local_app!(Setup);

/// The quick sim on a manual clock with no worker: what runs, runs in the test's waits.
async fn setup(backend: Backend) -> Setup {
    common::TestApp::on_clock(backend)
        .quotas(json!([{ "resource": "diskGiB", "max": 2000 }, { "resource": "addresses", "max": 3 }]))
        .workers(0)
        .build()
        .await
        .into()
}

impl Setup {
    async fn made(&self, field: &str, input: Value) -> Value {
        let body = self.call(field, "id deletionProtection version state", input).await;
        assert!(body["errors"].is_null(), "{field}: {body}");
        body["data"][field].clone()
    }

    async fn event_types(&self, subject: &str) -> Vec<String> {
        let query = "{ events(tenantId: \"acme\", first: 1000) { edges { node { type subject } } } }";
        let page = self.server.ok(Some(&self.token), query, json!({})).await;
        let edges = page["events"]["edges"].as_array().unwrap();
        edges
            .iter()
            .filter(|e| e["node"]["subject"] == subject)
            .map(|e| e["node"]["type"].as_str().unwrap().into())
            .collect()
    }

    /// The subject's event types once `wanted` is among them (PostgreSQL shows a commit once no
    /// older transaction of the cluster runs).
    async fn events_through(&self, subject: &str, wanted: &str) -> Vec<String> {
        for _ in 0..400 {
            let types = self.event_types(subject).await;
            if types.iter().any(|t| t == wanted) {
                return types;
            }
            tokio::time::sleep(std::time::Duration::from_millis(25)).await;
        }
        panic!("{wanted} of {subject} never showed: {:?}", self.event_types(subject).await);
    }

    async fn instance_ready(&self, name: &str) -> String {
        let input = json!({ "tenantId": "acme", "poolId": self.pool, "name": name, "region": "nyc3", "size": "s-1vcpu-1gb", "image": "ubuntu-24-04-x64", "idempotencyKey": name });
        let made = self.call("instanceCreate", "id", input).await;
        let id = made["data"]["instanceCreate"]["id"].as_str().expect("an instance").to_owned();
        let query = "query($i: String!) { instance(tenantId: \"acme\", instanceId: $i) { state } }";
        let read = || async { self.server.ok(Some(&self.token), query, json!({ "i": id })).await["instance"].clone() };
        common::until(self, "instance ready", read, |i| i["state"] == "READY").await;
        id
    }
}

fn reason(body: &Value) -> (&str, &str) {
    let extensions = &body["errors"][0]["extensions"];
    (extensions["code"].as_str().unwrap_or_default(), extensions["details"]["reason"].as_str().unwrap_or_default())
}

/// One kind's rule: made protected, its delete is INVALID_STATE (deletionProtected) and writes
/// nothing; asking protection it has returns it unchanged; turning it off publishes
/// `{events}.updated` and moves its version; then the delete goes through.
async fn refused_until_turned_off(s: &Setup, kind: &str, made: Value, id_field: &str, events: &str) {
    let id = made["id"].as_str().unwrap().to_owned();
    assert_eq!(made["deletionProtection"], true, "{kind} made protected: {made}");
    let delete = format!("{kind}Delete");
    let update = format!("{kind}Update");
    let refused = s.call(&delete, "state", json!({ "tenantId": "acme", id_field: id })).await;
    assert_eq!(reason(&refused), ("INVALID_STATE", "deletionProtected"), "{kind}: {refused}");
    let message = refused["errors"][0]["message"].as_str().unwrap();
    assert!(message.contains(&id) && message.contains(&update), "names it and the call that turns it off: {message}");

    let same = s.made(&update, json!({ "tenantId": "acme", id_field: id, "deletionProtection": true })).await;
    assert_eq!(
        same["version"], made["version"],
        "{kind}: the same value returns it unchanged, the refusal wrote nothing"
    );

    let off = s.made(&update, json!({ "tenantId": "acme", id_field: id, "deletionProtection": false })).await;
    assert_eq!(off["deletionProtection"], false);
    assert_eq!(off["version"].as_i64(), made["version"].as_i64().map(|v| v + 1), "{kind}: {off}");
    // Everything committed before the update shows by now: the refusal and the same value wrote nothing.
    let types = s.events_through(&id, &format!("{events}.updated")).await;
    assert_eq!(types.iter().filter(|t| t.ends_with(".updated")).count(), 1, "{kind}: {types:?}");
    assert!(!types.iter().any(|t| t.ends_with(".deleting")), "{kind}: {types:?}");
    let deleting = s.made(&delete, json!({ "tenantId": "acme", id_field: id })).await;
    assert_eq!(deleting["state"], "DELETING", "{kind}: {deleting}");
    let late = s.call(&update, "id", json!({ "tenantId": "acme", id_field: id, "deletionProtection": true })).await;
    assert_eq!(reason(&late), ("INVALID_STATE", "deleting"), "{kind}: no protection for what is being deleted: {late}");
}

db_test!(
    deletion_protection_refuses_a_volumes_a_snapshots_and_an_addresss_delete_until_turned_off,
    |backend: Backend| async move {
        let s = setup(backend).await;
        let volume = json!({ "tenantId": "acme", "poolId": s.pool, "name": "data", "region": "nyc3", "sizeGiB": 10, "idempotencyKey": "data", "deletionProtection": true });
        let volume = s.made("providerVolumeCreate", volume).await;
        let snapshot = json!({ "tenantId": "acme", "volumeId": volume["id"], "name": "nightly", "idempotencyKey": "nightly", "deletionProtection": true });
        let snapshot = s.made("providerVolumeSnapshot", snapshot).await;
        let address = json!({ "tenantId": "acme", "poolId": s.pool, "name": "web", "region": "nyc3", "idempotencyKey": "web", "deletionProtection": true });
        let address = s.made("providerAddressCreate", address).await;

        refused_until_turned_off(&s, "providerSnapshot", snapshot, "snapshotId", "providerVolume.snapshot").await;
        let id = volume["id"].as_str().unwrap();
        let row = provider_volume::Entity::find_by_id(id).one(&s.server.app.services.db).await.unwrap().unwrap();
        refused_until_turned_off(&s, "providerVolume", volume.clone(), "volumeId", "providerVolume").await;
        let after = provider_volume::Entity::find_by_id(id).one(&s.server.app.services.db).await.unwrap().unwrap();
        assert_eq!(after.generation, row.generation + 1, "only the delete moved the spec, not the protection's update");
        refused_until_turned_off(&s, "providerAddress", address, "addressId", "providerAddress").await;
    }
);

db_test!(a_volume_made_without_protection_has_none_and_deletes_at_once, |backend: Backend| async move {
    let s = setup(backend).await;
    let input = json!({ "tenantId": "acme", "poolId": s.pool, "name": "scratch", "region": "nyc3", "sizeGiB": 10, "idempotencyKey": "scratch" });
    let made = s.made("providerVolumeCreate", input.clone()).await;
    assert_eq!(made["deletionProtection"], false);
    // The key replays: a request without the flag hashes as it did before the flag existed.
    assert_eq!(s.made("providerVolumeCreate", input).await["id"], made["id"]);
    let deleting = s.made("providerVolumeDelete", json!({ "tenantId": "acme", "volumeId": made["id"] })).await;
    assert_eq!(deleting["state"], "DELETING");
});

db_test!(an_instance_delete_that_would_take_a_protected_volume_with_it_is_refused, |backend: Backend| async move {
    let s = setup(backend).await;
    let instance = s.instance_ready("web").await;
    let volume = |name: &str, with_instance: bool| {
        json!({ "tenantId": "acme", "poolId": s.pool, "name": name, "region": "nyc3", "sizeGiB": 10, "idempotencyKey": name,
        "instanceId": instance, "deleteWithInstance": with_instance, "deletionProtection": true })
    };
    let going = s.made("providerVolumeCreate", volume("going", true)).await["id"].as_str().unwrap().to_owned();
    // Protected too, but it stays when the instance goes (detached): it does not hold the delete up.
    s.made("providerVolumeCreate", volume("staying", false)).await;

    let refused = s.call("instanceDelete", "state", json!({ "tenantId": "acme", "instanceId": instance })).await;
    assert_eq!(reason(&refused), ("INVALID_STATE", "deletionProtected"), "{refused}");
    assert_eq!(refused["errors"][0]["extensions"]["details"]["volumeIds"], json!([going]));
    let query = "query($i: String!) { instance(tenantId: \"acme\", instanceId: $i) { state } }";
    let still = s.server.ok(Some(&s.token), query, json!({ "i": instance })).await;
    assert_eq!(still["instance"]["state"], "READY", "nothing was written: {still}");

    s.made("providerVolumeUpdate", json!({ "tenantId": "acme", "volumeId": going, "deletionProtection": false })).await;
    let deleting = s.call("instanceDelete", "state", json!({ "tenantId": "acme", "instanceId": instance })).await;
    assert_eq!(deleting["data"]["instanceDelete"]["state"], "DELETING", "{deleting}");
});

db_test!(protection_turned_on_after_an_instance_delete_was_asked_keeps_the_volume, |backend: Backend| async move {
    let s = setup(backend).await;
    let instance = s.instance_ready("web").await;
    let input = json!({ "tenantId": "acme", "poolId": s.pool, "name": "data", "region": "nyc3", "sizeGiB": 10, "idempotencyKey": "data",
        "instanceId": instance, "deleteWithInstance": true });
    let volume = s.made("providerVolumeCreate", input).await["id"].as_str().unwrap().to_owned();
    let query = "query($v: String!) { providerVolume(tenantId: \"acme\", volumeId: $v) { state deletionProtection attachments { state } } }";
    let read = || async { s.server.ok(Some(&s.token), query, json!({ "v": volume })).await["providerVolume"].clone() };
    common::until(&s, "attached", read, |v| v["state"] == "READY" && v["attachments"][0]["state"] == "READY").await;
    let deleting = s.call("instanceDelete", "state", json!({ "tenantId": "acme", "instanceId": instance })).await;
    assert_eq!(deleting["data"]["instanceDelete"]["state"], "DELETING", "{deleting}");
    // Asked before the machine's delete ran: the volume stays, detached, when the machine goes.
    s.made("providerVolumeUpdate", json!({ "tenantId": "acme", "volumeId": volume, "deletionProtection": true })).await;
    let instance_query = "query($i: String!) { instance(tenantId: \"acme\", instanceId: $i) { state } }";
    let gone =
        || async { s.server.ok(Some(&s.token), instance_query, json!({ "i": instance })).await["instance"].clone() };
    common::until(&s, "instance deleted", gone, |i| i["state"] == "DELETED").await;
    let kept = common::until(&s, "detached", read, |v| v["attachments"].as_array().is_some_and(Vec::is_empty)).await;
    assert_eq!((kept["state"].clone(), kept["deletionProtection"].clone()), (json!("READY"), json!(true)), "{kept}");
    // Still at the provider, read as an outsider.
    let row =
        provider_volume::Entity::find_by_id(volume.as_str()).one(&s.server.app.services.db).await.unwrap().unwrap();
    let url = format!("{}/v2/volumes/{}", s.server.app.services.sim_url.clone().unwrap(), row.provider_id.unwrap());
    let status = s.server.http.get(url).bearer_auth("inspector").send().await.unwrap().status();
    assert_eq!(status.as_u16(), 200, "never deleted at the provider");
});

db_test!(
    a_replayed_key_is_looked_at_only_for_a_caller_who_may_take_the_volumes_snapshots,
    |backend: Backend| async move {
        let s = setup(backend).await;
        let volume = json!({ "tenantId": "acme", "poolId": s.pool, "name": "data", "region": "nyc3", "sizeGiB": 10, "idempotencyKey": "data" });
        let volume = s.made("providerVolumeCreate", volume).await["id"].as_str().unwrap().to_owned();
        let snapshot =
            |name: &str| json!({ "tenantId": "acme", "volumeId": volume, "name": name, "idempotencyKey": "nightly" });
        let made = s.made("providerVolumeSnapshot", snapshot("nightly")).await;
        let query = "mutation($i: ProviderVolumeSnapshotInput!) { providerVolumeSnapshot(input: $i) { id } }";

        // Another tenant's token, and one of acme's that may not take this volume's snapshots, learn
        // nothing of the key: refused on the volume before it is looked at (CONFLICT would say it is used).
        s.server.tenant("globex").await;
        let globex = s.server.token(Some("globex"), &[("compute:*", "tenant/globex")]).await;
        let other_volume = s
            .server
            .token(Some("acme"), &[("compute:volumes:manage", "provider-volume/pvol_00000000000000000000000000")])
            .await;
        for token in [&globex, &other_volume] {
            let body = s.server.gql(Some(token), query, json!({ "i": snapshot("other") })).await;
            let code = common::first_code(&body);
            assert!(matches!(code.as_deref(), Some("ACCESS_DENIED" | "NOT_FOUND")), "{body}");
        }
        // A token that may manage just this volume replays its snapshot.
        let this_volume =
            s.server.token(Some("acme"), &[("compute:volumes:manage", &format!("provider-volume/{volume}"))]).await;
        let replay = s.server.ok(Some(&this_volume), query, json!({ "i": snapshot("nightly") })).await;
        assert_eq!(replay["providerVolumeSnapshot"]["id"], made["id"]);
    }
);
