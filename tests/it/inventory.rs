//! Drift is read by listing an account, not one resource at a time (`reconcile::inventory`): a
//! settled resource costs no call of its own while the hourly passes run, and one deleted
//! outside is found by the next pass, confirmed by one read of its own, and goes to ERROR within
//! the hour. The clock is the test's; the listing calls are counted at the sim.
use crate::common;

use common::{Backend, TestApp};
use serde_json::{Value, json};
use vps_graph::sim::Sim;

const VOLUME: &str = "query($v: String!) { providerVolume(tenantId: \"acme\", volumeId: $v) { state message } }";
const SNAPSHOT: &str = "query($s: String!) { providerSnapshot(tenantId: \"acme\", snapshotId: $s) { state message } }";
const ADDRESS: &str =
    "query($a: String!) { providerAddress(tenantId: \"acme\", addressId: $a) { state lost message address } }";

struct World {
    s: TestApp,
}

impl World {
    async fn new(backend: Backend) -> World {
        let s = TestApp::driven(backend).quotas(json!([{ "resource": "addresses", "max": 5 }])).build().await;
        World { s }
    }

    fn sim(&self) -> &Sim {
        self.s.server.app.sim.as_ref().expect("in-process sim")
    }

    async fn gql(&self, query: &str, variables: Value) -> Value {
        self.s.server.ok(Some(&self.s.token), query, variables).await
    }

    async fn volume(&self, name: &str) -> String {
        let input = json!({ "tenantId": "acme", "poolId": self.s.pool, "name": name, "region": "nyc3",
            "sizeGiB": 10, "idempotencyKey": name });
        let made = self
            .gql(
                "mutation($i: ProviderVolumeCreateInput!) { providerVolumeCreate(input: $i) { id } }",
                json!({ "i": input }),
            )
            .await;
        let id = made["providerVolumeCreate"]["id"].as_str().unwrap().to_owned();
        self.until(VOLUME, "v", &id, "providerVolume", "READY").await;
        id
    }

    async fn snapshot(&self, volume: &str) -> String {
        let input = json!({ "tenantId": "acme", "volumeId": volume, "name": "nightly", "idempotencyKey": "nightly" });
        let made = self
            .gql(
                "mutation($i: ProviderVolumeSnapshotInput!) { providerVolumeSnapshot(input: $i) { id } }",
                json!({ "i": input }),
            )
            .await;
        let id = made["providerVolumeSnapshot"]["id"].as_str().unwrap().to_owned();
        self.until(SNAPSHOT, "s", &id, "providerSnapshot", "READY").await;
        id
    }

    async fn address(&self, name: &str) -> String {
        let input = json!({ "tenantId": "acme", "poolId": self.s.pool, "name": name, "region": "nyc3",
            "idempotencyKey": name });
        let made = self
            .gql(
                "mutation($i: ProviderAddressCreateInput!) { providerAddressCreate(input: $i) { id } }",
                json!({ "i": input }),
            )
            .await;
        let id = made["providerAddressCreate"]["id"].as_str().unwrap().to_owned();
        self.until(ADDRESS, "a", &id, "providerAddress", "READY").await;
        id
    }

    async fn read(&self, query: &str, var: &str, id: &str, field: &str) -> Value {
        self.gql(query, json!({ var: id })).await[field].clone()
    }

    async fn until(&self, query: &str, var: &str, id: &str, field: &str, state: &str) -> Value {
        let read = || self.read(query, var, id, field);
        common::until(&self.s, state, read, |v| v["state"] == state).await
    }

    /// Moves the clock a minute at a time for `minutes`, each minute's due runs done before
    /// the next: twice round, since the account's pass may bring a resource's read forward after
    /// that resource was found idle.
    async fn minutes(&self, minutes: i64, ids: &[&str]) {
        for _ in 0..minutes {
            self.s.clock.advance(60_000);
            for id in ids.iter().chain(ids) {
                common::idle(&self.s.server, &self.s.clock, id).await;
            }
        }
    }

    async fn delete_outside(&self, path: &str) {
        let url = format!("{}{path}", self.s.server.app.services.sim_url.clone().unwrap());
        let response = self.s.server.http.delete(url).bearer_auth("outsider").send().await.unwrap();
        assert_eq!(response.status().as_u16(), 204, "deleted outside: {path}");
    }

    /// The account's `budget.oldestDriftReadSeconds`.
    async fn oldest_drift_read(&self) -> Option<i64> {
        let query = "{ providerAccounts { id budget { oldestDriftReadSeconds } } }";
        let accounts = self.s.server.ok(Some(common::ADMIN), query, json!({})).await;
        let all = accounts["providerAccounts"].as_array().unwrap();
        let ours = all.iter().find(|a| a["id"] == self.s.account.as_str()).expect("the pool's account");
        ours["budget"]["oldestDriftReadSeconds"].as_i64()
    }

    fn calls(&self) -> Calls {
        let sim = self.sim();
        Calls {
            lists: ["volumes.list", "snapshots.list", "reserved_ips.list"].map(|e| sim.calls(e)),
            reads: ["volumes.get", "snapshots.get", "reserved_ips.get"].map(|e| sim.calls(e)),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
struct Calls {
    lists: [u64; 3],
    reads: [u64; 3],
}

impl Calls {
    fn since(self, before: Calls) -> Calls {
        Calls {
            lists: [0, 1, 2].map(|i| self.lists[i] - before.lists[i]),
            reads: [0, 1, 2].map(|i| self.reads[i] - before.reads[i]),
        }
    }
}

db_test!(
    a_volume_a_snapshot_and_an_address_deleted_outside_are_found_by_the_hourly_listing_within_the_hour,
    |backend: Backend| async move {
        let w = World::new(backend).await;
        let kept = w.volume("kept").await;
        let gone = w.volume("gone").await;
        let snapshot = w.snapshot(&kept).await;
        let address = w.address("front").await;
        let kept_address = w.address("back").await;
        let account = w.s.account.clone();
        let ids = [kept.as_str(), gone.as_str(), snapshot.as_str(), address.as_str(), kept_address.as_str(), &account];

        // A first hour: every resource's own slot comes round once, and the account's pass runs.
        w.minutes(61, &ids).await;

        // The second hour: every settled resource was shown as recorded by a listing, so none
        // is read on its own.
        let before = w.calls();
        w.minutes(60, &ids).await;
        let quiet = w.calls().since(before);
        assert_eq!(quiet.reads, [0, 0, 0], "no read of its own for a resource a listing showed as recorded");
        assert_eq!(quiet.lists, [1, 1, 1], "one listing (one page) of each kind an hour: {quiet:?}");
        let age = w.oldest_drift_read().await.expect("a whole pass ran");
        assert!((0..=3600).contains(&age), "every settled resource was read for drift within the hour: {age} s ago");

        // Deleted outside: the next pass finds each absent, its own read confirms, ERROR.
        let snapshot_id = {
            use sea_orm::EntityTrait;
            let db = &w.s.server.app.services.db;
            let row = vps_graph::store::entity::provider_snapshot::Entity::find_by_id(snapshot.clone()).one(db).await;
            row.unwrap().unwrap().provider_id.unwrap()
        };
        let ip = w.read(ADDRESS, "a", &address, "providerAddress").await["address"].as_str().unwrap().to_owned();
        let volume_provider_id = {
            use sea_orm::EntityTrait;
            let db = &w.s.server.app.services.db;
            let row = vps_graph::store::entity::provider_volume::Entity::find_by_id(gone.clone()).one(db).await;
            row.unwrap().unwrap().provider_id.unwrap()
        };
        w.delete_outside(&format!("/v2/snapshots/{snapshot_id}")).await;
        w.delete_outside(&format!("/v2/volumes/{volume_provider_id}")).await;
        w.delete_outside(&format!("/v2/reserved_ips/{ip}")).await;
        let before = w.calls();
        w.minutes(60, &ids).await;
        for (query, var, id, field) in [
            (VOLUME, "v", &gone, "providerVolume"),
            (SNAPSHOT, "s", &snapshot, "providerSnapshot"),
            (ADDRESS, "a", &address, "providerAddress"),
        ] {
            let seen = w.read(query, var, id, field).await;
            assert_eq!(seen["state"], "ERROR", "{field}: {seen}; calls {:?}", w.calls().since(before));
            assert!(seen["message"].as_str().unwrap().contains("outside"), "{field}: {seen}");
        }
        for (query, var, id, field) in
            [(VOLUME, "v", &kept, "providerVolume"), (ADDRESS, "a", &kept_address, "providerAddress")]
        {
            assert_eq!(w.read(query, var, id, field).await["state"], "READY", "{field} {id} untouched");
        }
        let found = w.calls().since(before);
        assert_eq!(found.lists, [1, 1, 1], "the hour's listings: {found:?}");
        assert_eq!(found.reads, [1, 1, 1], "one read of its own to confirm each absence, no more: {found:?}");
    }
);

db_test!(
    a_pass_that_meets_a_provider_in_trouble_concludes_nothing_and_own_reads_take_over,
    |backend: Backend| async move {
        let w = World::new(backend).await;
        let account = w.s.account.clone();
        // A new account's first pass finds nothing settled: nothing is behind.
        common::idle(&w.s.server, &w.s.clock, &account).await;
        assert_eq!(w.oldest_drift_read().await, Some(0), "nothing settled is nothing unread");
        let kept = w.volume("kept").await;
        let ids = [kept.as_str(), account.as_str()];
        w.minutes(61, &ids).await;
        // Every listing fails from now on: the passes back off and vouch for nothing, so the
        // volume's own read comes due within the next two hours and a quarter.
        w.sim().inject("volumes.list", vps_graph::sim::Fault::Status { status: 500 }, 10_000);
        let before = w.calls();
        w.minutes(140, &ids).await;
        let seen = w.calls().since(before);
        assert!(seen.lists[0] >= 2, "the pass kept trying: {seen:?}");
        assert!(seen.reads[0] >= 1, "the volume was read on its own: {seen:?}");
        let volume = w.read(VOLUME, "v", &kept, "providerVolume").await;
        assert_eq!(volume["state"], "READY", "a listing that failed says nothing of the volume: {volume}");
    }
);
