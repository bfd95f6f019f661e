//! Drift read by listing an AWS account (`reconcile::inventory`): a settled network, instance
//! and filesystems cost no call of their own while the hourly passes run (one listing a kind and
//! a region); a machine terminated outside and a Lustre file system deleted outside are found
//! by the next pass, confirmed by a read of their own, and go to ERROR within the hour; an EFS
//! mount target deleted outside (seen in the file system's count of them: EFS has no listing of
//! mount targets) and a rule revoked from a filesystem's group are put back. The clock is the
//! test's; the calls are counted at the sim.
use crate::common;

use common::Backend;
use serde_json::{Value, json};
use vps_graph::metrics::Metrics;
use vps_graph::provider::aws::{Aws, Credentials, Settings};
use vps_graph::provider::{Flow, GroupRule, RuleSource};
use vps_graph::sim::Sim;

const REGION: &str = "us-east-1";
const BLOCK: &str = "10.20.0.0/16";
const NETWORK: &str = "query($n: String!) { network(tenantId: \"acme\", networkId: $n) { state message providerId } }";
const INSTANCE: &str =
    "query($i: String!) { instance(tenantId: \"acme\", instanceId: $i) { state message providerId } }";
const FILESYSTEM: &str = "query($n: String!, $f: String!) { filesystem(tenantId: \"acme\", networkId: $n, filesystemId: $f) { state message } }";
/// The sim's operations the drift of these resources reads with.
const READS: [&str; 7] = [
    "ec2.DescribeVpcs",
    "ec2.DescribeSubnets",
    "ec2.DescribeInstances",
    "ec2.DescribeSecurityGroups",
    "efs.DescribeFileSystems",
    "efs.DescribeMountTargets",
    "fsx.DescribeFileSystems",
];

struct World {
    s: common::TestApp,
    network: String,
}

impl World {
    async fn new(backend: Backend) -> World {
        let s = common::TestApp::driven(backend).aws(&["us-east-1a", "us-east-1b"]).own_account().build().await;
        let mut w = World { s, network: String::new() };
        w.network = w.made_network().await;
        w
    }

    fn sim(&self) -> &Sim {
        self.s.server.app.sim.as_ref().expect("in-process sim")
    }

    /// An AWS client of the sim's account, acting as someone outside vps-graph would.
    fn outsider(&self) -> Aws {
        let url = self.s.server.app.services.sim_url.clone();
        let credentials = Credentials::parse("AKIDTEST:secret").unwrap();
        Aws::new(url, Ok(credentials), Settings::default(), std::sync::Arc::new(Metrics::default()))
    }

    async fn gql(&self, query: &str, variables: Value) -> Value {
        self.s.server.ok(Some(&self.s.token), query, variables).await
    }

    async fn until(&self, what: &str, query: &str, variables: Value, check: impl Fn(&Value) -> bool) -> Value {
        common::until(&self.s, what, || self.gql(query, variables.clone()), check).await
    }

    async fn made_network(&self) -> String {
        let subnets = json!([
            { "zone": "us-east-1a", "ipRange": "10.20.1.0/24" },
            { "zone": "us-east-1b", "ipRange": "10.20.2.0/24" },
        ]);
        let input = json!({ "tenantId": "acme", "poolId": self.s.pool, "name": "lan", "ipRange": BLOCK,
            "subnets": subnets, "idempotencyKey": "lan" });
        let create = "mutation($i: NetworkCreateInput!) { networkCreate(input: $i) { id } }";
        let made = self.gql(create, json!({ "i": input })).await;
        let id = made["networkCreate"]["id"].as_str().unwrap().to_owned();
        self.until("network ready", NETWORK, json!({ "n": id }), |n| n["network"]["state"] == "READY").await;
        id
    }

    /// A READY instance: its id and its machine's.
    async fn instance(&self, name: &str) -> (String, String) {
        let input = json!({ "tenantId": "acme", "poolId": self.s.pool, "networkId": self.network, "name": name,
            "region": REGION, "zone": "us-east-1a", "size": "t3.micro", "image": "ami-0abcdef1234567890",
            "idempotencyKey": name });
        let create = "mutation($i: InstanceCreateInput!) { instanceCreate(input: $i) { id } }";
        let id = self.gql(create, json!({ "i": input })).await["instanceCreate"]["id"].as_str().unwrap().to_owned();
        let ready = self.until("instance ready", INSTANCE, json!({ "i": id }), |i| i["instance"]["state"] == "READY");
        let machine = ready.await["instance"]["providerId"].as_str().unwrap().to_owned();
        (id, machine)
    }

    /// A READY filesystem: its id and its row (for its provider id and group).
    async fn filesystem(&self, name: &str, kind: &str) -> (String, vps_graph::store::entity::filesystem::Model) {
        let zone = (kind == "LUSTRE").then_some("us-east-1b");
        let input = json!({ "tenantId": "acme", "networkId": self.network, "name": name, "kind": kind, "zone": zone,
            "idempotencyKey": name });
        let create = "mutation($i: FilesystemCreateInput!) { filesystemCreate(input: $i) { id } }";
        let id = self.gql(create, json!({ "i": input })).await["filesystemCreate"]["id"].as_str().unwrap().to_owned();
        self.until_filesystem(&id, "READY").await;
        (id.clone(), self.filesystem_row(&id).await)
    }

    async fn filesystem_row(&self, id: &str) -> vps_graph::store::entity::filesystem::Model {
        use sea_orm::EntityTrait;
        let db = &self.s.server.app.services.db;
        let row = vps_graph::store::entity::filesystem::Entity::find_by_id(id.to_owned()).one(db).await;
        row.unwrap().expect("the filesystem's row")
    }

    async fn until_filesystem(&self, id: &str, state: &str) -> Value {
        let vars = json!({ "n": self.network, "f": id });
        let what = format!("filesystem {state}");
        let seen = self.until(&what, FILESYSTEM, vars, |f| f["filesystem"]["state"] == state).await;
        seen["filesystem"].clone()
    }

    /// Moves the clock a minute at a time, each minute's due runs done before the next (twice
    /// round: the account's pass may bring a read forward after its resource was found idle).
    async fn minutes(&self, minutes: i64, ids: &[&str]) {
        for _ in 0..minutes {
            self.s.clock.advance(60_000);
            for id in ids.iter().chain(ids) {
                common::idle(&self.s.server, &self.s.clock, id).await;
            }
        }
    }

    fn calls(&self) -> [u64; 7] {
        READS.map(|op| self.sim().calls(op))
    }

    fn since(&self, before: [u64; 7]) -> Vec<(&'static str, u64)> {
        let now = self.calls();
        READS.iter().enumerate().map(|(i, op)| (*op, now[i] - before[i])).collect()
    }
}

db_test!(
    an_aws_accounts_drift_is_read_by_listing_and_what_changed_outside_is_confirmed_then_found_or_put_back,
    |backend: Backend| async move {
        let w = World::new(backend).await;
        let (web, _) = w.instance("web").await;
        let (db, db_machine) = w.instance("db").await;
        let (files, efs) = w.filesystem("files", "NFS").await;
        let (scratch, lustre) = w.filesystem("scratch", "LUSTRE").await;
        let account = w.s.account.clone();
        let ids = [w.network.as_str(), &web, &db, &files, &scratch, &account];

        // A first hour: every resource's own slot comes round once, and the account's pass runs.
        w.minutes(61, &ids).await;

        // The second hour: one listing a kind, no read of anyone's own (two machines and two
        // filesystems, one by one, would have read DescribeInstances twice and the mount targets).
        let before = w.calls();
        w.minutes(60, &ids).await;
        let quiet = w.since(before);
        let expected: Vec<(&str, u64)> =
            READS.iter().map(|op| (*op, u64::from(*op != "efs.DescribeMountTargets"))).collect();
        assert_eq!(quiet, expected, "one listing (one page) of each kind an hour, and no read of its own");

        // Outside: a machine terminated, a Lustre file system deleted, one of the EFS file
        // system's two mount targets deleted, and the NFS rule revoked from its group.
        let outsider = w.outsider();
        assert!(outsider.instance_terminate(REGION, &db_machine).await.unwrap());
        assert!(outsider.lustre_delete(REGION, lustre.provider_id.as_deref().unwrap()).await.unwrap());
        let efs_id = efs.provider_id.clone().unwrap();
        let targets = outsider.mount_targets_of(REGION, &efs_id).await.unwrap();
        assert_eq!(targets.len(), 2);
        assert!(outsider.mount_target_delete(REGION, &targets[0].id).await.unwrap());
        let group = efs.security_group_id.clone().unwrap();
        let nfs = GroupRule::nfs(RuleSource::Cidr(BLOCK.into()));
        outsider.security_group_revoke(REGION, &group, Flow::Ingress, &nfs).await.unwrap();
        let made_before = (w.sim().calls("efs.CreateMountTarget"), w.sim().calls("ec2.AuthorizeSecurityGroupIngress"));
        let before = w.calls();
        w.minutes(61, &ids).await;

        let lost = w.gql(INSTANCE, json!({ "i": db })).await["instance"].clone();
        assert_eq!(lost["state"], "ERROR", "{lost}");
        assert!(lost["message"].as_str().unwrap().contains("outside"), "{lost}");
        let gone = w.until_filesystem(&scratch, "ERROR").await;
        assert!(gone["message"].as_str().unwrap().contains("outside"), "{gone}");
        w.until_filesystem(&files, "READY").await;
        assert_eq!(outsider.mount_targets_of(REGION, &efs_id).await.unwrap().len(), 2, "the mount target made again");
        let vpc = w.gql(NETWORK, json!({ "n": w.network })).await["network"]["providerId"].as_str().unwrap().to_owned();
        let found = outsider.security_group_find(REGION, &vpc, &efs.provider_name).await;
        assert_eq!(found.unwrap().unwrap().ingress, nfs, "the rule put back");
        let made_after = (w.sim().calls("efs.CreateMountTarget"), w.sim().calls("ec2.AuthorizeSecurityGroupIngress"));
        assert_eq!((made_after.0 - made_before.0, made_after.1 - made_before.1), (1, 1), "each put back once");
        assert_eq!(w.gql(INSTANCE, json!({ "i": web })).await["instance"]["state"], "READY");
        assert_eq!(w.gql(NETWORK, json!({ "n": w.network })).await["network"]["state"], "READY");
        let hour = w.since(before);
        let of = |op: &str| hour.iter().find(|(o, _)| *o == op).unwrap().1;
        assert_eq!((of("ec2.DescribeVpcs"), of("ec2.DescribeSubnets")), (1, 1), "the network only listed: {hour:?}");
        assert_eq!(of("ec2.DescribeInstances"), 2, "the listing and the terminated machine's own read: {hour:?}");
        assert!(of("efs.DescribeMountTargets") >= 1, "the EFS file system read its mount targets: {hour:?}");
    }
);
