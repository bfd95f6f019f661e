//! The `vps.filesystems` reconciler against the sim's AWS face: an NFS filesystem made behind
//! its own group with a mount target per zone and deleted in order, a Lustre one, a foreign EFS
//! file system holding our creation token, a throttled create, and creates whose answers were
//! lost. Each test makes its AWS network and filesystems through the API; what the provider then
//! holds is read with the account's own client. The clock is driven by the test; the sim's
//! changes take 50 ms.
use crate::common;

use common::{ADMIN, Backend};
use serde_json::{Value, json};
use vps_graph::authz::Actor;
use vps_graph::provider::{AccountRef, GroupRule, Provider, RuleSource, aws_owned, tag_value};
use vps_graph::sim::{Fault, Sim};
use vps_graph::store::entity::filesystem;
use vps_graph::store::state::{FilesystemKind, ProviderKind, State};

const REGION: &str = "us-east-1";
const ZONES: [&str; 2] = ["us-east-1a", "us-east-1b"];
const BLOCK: &str = "10.20.0.0/16";

struct Setup {
    app: common::TestApp,
    network: String,
    vpc: String,
    subnets: Vec<String>,
}

impl std::ops::Deref for Setup {
    type Target = common::TestApp;
    fn deref(&self) -> &common::TestApp {
        &self.app
    }
}

async fn setup(backend: Backend) -> Setup {
    let app = common::TestApp::driven(backend).aws(&ZONES).build().await;
    let mut setup = Setup { app, network: String::new(), vpc: String::new(), subnets: vec![] };
    setup.ready_network().await;
    setup
}

impl Setup {
    fn sim(&self) -> &Sim {
        self.server.app.sim.as_ref().expect("in-process sim")
    }

    /// The account's client, the one the reconciler uses.
    fn aws(&self) -> std::sync::Arc<Provider> {
        let account =
            AccountRef { id: &self.account, kind: ProviderKind::Aws, api_url: "", credential_ref: "", sim: true };
        self.server.app.providers.for_account(&account)
    }

    fn db(&self) -> &sea_orm::DatabaseConnection {
        &self.server.app.services.db
    }

    /// An AWS network with a subnet per zone, made through the API until READY.
    async fn ready_network(&mut self) {
        let subnets: Vec<Value> = ZONES
            .iter()
            .enumerate()
            .map(|(i, zone)| json!({ "zone": zone, "ipRange": format!("10.20.{}.0/24", i + 1) }))
            .collect();
        let input = json!({ "tenantId": "acme", "poolId": self.pool, "name": "train", "ipRange": BLOCK, "subnets": subnets, "idempotencyKey": "train" });
        let create = "mutation($i: NetworkCreateInput!) { networkCreate(input: $i) { id } }";
        let made = self.server.ok(Some(&self.token), create, json!({ "i": input })).await;
        let id = made["networkCreate"]["id"].as_str().unwrap().to_owned();
        let get = "query($n: String!) { network(tenantId: \"acme\", networkId: $n) { state providerId subnets { zone providerId } } }";
        let read = || self.server.ok(Some(&self.token), get, json!({ "n": id }));
        let ready = common::until(self, "network ready", read, |n| n["network"]["state"] == "READY").await;
        self.vpc = ready["network"]["providerId"].as_str().unwrap().to_owned();
        self.subnets = ZONES
            .iter()
            .map(|zone| {
                let subnets = ready["network"]["subnets"].as_array().unwrap();
                let subnet = subnets.iter().find(|s| s["zone"] == *zone).unwrap();
                subnet["providerId"].as_str().unwrap().to_owned()
            })
            .collect();
        self.network = id;
    }

    /// `filesystemCreate` of a filesystem on the network; its row as recorded.
    async fn create(&self, kind: FilesystemKind, zone: Option<&str>) -> filesystem::Model {
        let name = format!("data-{}", self.clock.now_ms() % 1_000_000);
        let input = json!({ "tenantId": "acme", "networkId": self.network, "name": name, "kind": kind.as_str().to_uppercase(), "zone": zone, "idempotencyKey": name });
        let create = "mutation($i: FilesystemCreateInput!) { filesystemCreate(input: $i) { id } }";
        let made = self.server.ok(Some(&self.token), create, json!({ "i": input })).await;
        self.row(made["filesystemCreate"]["id"].as_str().unwrap()).await
    }

    async fn delete(&self, id: &str) {
        let services = &self.server.app.services;
        let view = services.filesystem_delete(&Actor::system(), "acme", &self.network, id).await.unwrap();
        assert_eq!(view.state, State::Deleting);
    }

    async fn view(&self, id: &str) -> Value {
        let services = &self.server.app.services;
        let found = services.filesystem_get(&Actor::system(), "acme", &self.network, id).await.unwrap();
        serde_json::to_value(found).unwrap()
    }

    async fn until_state(&self, id: &str, wanted: State) -> Value {
        common::until(self, wanted.as_str(), || self.view(id), |v| v["state"] == wanted.as_str()).await
    }

    async fn row(&self, id: &str) -> filesystem::Model {
        use sea_orm::EntityTrait;
        filesystem::Entity::find_by_id(id.to_owned()).one(self.db()).await.unwrap().unwrap()
    }

    /// The types of the network's events, once `last` is among them (PostgreSQL shows an event
    /// once every older transaction has ended).
    async fn events_through(&self, last: &str) -> Vec<String> {
        for _ in 0..400 {
            let page = self
                .server
                .ok(
                    Some(ADMIN),
                    "{ events(tenantId: \"acme\", first: 1000) { edges { node { type subject } } } }",
                    json!({}),
                )
                .await;
            let types: Vec<String> = page["events"]["edges"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|e| e["node"]["subject"] == self.network.as_str())
                .map(|e| e["node"]["type"].as_str().unwrap().to_owned())
                .collect();
            if types.iter().any(|t| t == last) {
                return types;
            }
            tokio::time::sleep(std::time::Duration::from_millis(25)).await;
        }
        panic!("{last} never showed");
    }
}

fn count(types: &[String], wanted: &str) -> usize {
    types.iter().filter(|t| t.as_str() == wanted).count()
}

db_test!(nfs_is_made_behind_its_group_with_a_target_per_zone_and_deleted_in_order, |backend| async move {
    let s = setup(backend).await;
    let f = s.create(FilesystemKind::Nfs, None).await;
    let ready = s.until_state(&f.id, State::Ready).await;
    let row = s.row(&f.id).await;
    let efs_id = row.provider_id.clone().unwrap();
    let dns = format!("{efs_id}.efs.{REGION}.amazonaws.com");
    assert_eq!(row.dns_name.as_deref(), Some(dns.as_str()));
    assert_eq!(ready["mount"]["source"], format!("{dns}:/"));
    assert_eq!(ready["mount"]["fstype"], "nfs4");
    assert!(ready["message"].is_null(), "{ready}");

    let aws = s.aws();
    let (groups, api) = (aws.aws().unwrap().clone(), aws.aws().unwrap().clone());
    let deployment = &s.server.app.services.deployment;
    let group = groups.security_group_find(REGION, &s.vpc, &f.provider_name).await.unwrap().unwrap();
    assert_eq!(Some(&group.id), row.security_group_id.as_ref());
    assert!(aws_owned(&group.tags, deployment), "{group:?}");
    assert_eq!(group.ingress, GroupRule::nfs(RuleSource::Cidr(BLOCK.into())), "only the network's machines");
    let efs = api.efs_get(REGION, &efs_id).await.unwrap().unwrap();
    assert!(efs.encrypted && aws_owned(&efs.tags, deployment));
    assert_eq!(tag_value(&efs.tags, "Name"), Some(f.provider_name.as_str()));
    let targets = api.mount_targets_of(REGION, &efs_id).await.unwrap();
    let mut zones: Vec<_> = targets.iter().map(|t| t.availability_zone.clone().unwrap()).collect();
    zones.sort();
    assert_eq!(zones, ZONES, "one mount target per zone");
    assert!(targets.iter().all(|t| t.life_cycle_state == vps_graph::provider::Lifecycle::Available));

    s.delete(&f.id).await;
    let deleted = s.until_state(&f.id, State::Deleted).await;
    assert!(deleted["deletedAt"].is_string());
    assert_eq!(api.efs_get(REGION, &efs_id).await.unwrap(), None);
    assert_eq!(api.mount_targets_of(REGION, &efs_id).await.unwrap(), vec![]);
    assert_eq!(groups.security_group_find(REGION, &s.vpc, &f.provider_name).await.unwrap(), None);
    // The sim refuses a file system's delete while a mount target remains (FileSystemInUse) and a
    // group's while an interface uses it (DependencyViolation): one call each shows the order.
    let sim = s.sim();
    assert_eq!(sim.calls("efs.DeleteMountTarget"), 2);
    assert_eq!(sim.calls("efs.DeleteFileSystem"), 1, "only once every mount target was gone");
    assert_eq!(sim.calls("ec2.DeleteSecurityGroup"), 1, "only once the file system was gone");
    assert_eq!(sim.calls("efs.CreateFileSystem"), 1);
    assert_eq!(sim.calls("ec2.CreateSecurityGroup"), 1);

    let types = s.events_through("network.filesystem.deleted").await;
    assert_eq!(count(&types, "network.filesystem.ready"), 1, "{types:?}");
    assert_eq!(count(&types, "network.filesystem.deleted"), 1, "{types:?}");
    assert_eq!(count(&types, "network.filesystem.error"), 0, "{types:?}");
});

db_test!(lustre_is_made_in_its_zone_and_reads_its_dns_and_mount_names, |backend| async move {
    let s = setup(backend).await;
    let f = s.create(FilesystemKind::Lustre, Some(ZONES[1])).await;
    let ready = s.until_state(&f.id, State::Ready).await;
    let row = s.row(&f.id).await;
    let id = row.provider_id.clone().unwrap();
    let (dns, mount) = (row.dns_name.clone().unwrap(), row.mount_name.clone().unwrap());
    assert_eq!(dns, format!("{id}.fsx.{REGION}.amazonaws.com"));
    assert_eq!(ready["mount"]["source"], format!("{dns}@tcp:/{mount}"));
    assert_eq!(ready["mount"]["fstype"], "lustre");

    let aws = s.aws();
    let (groups, api) = (aws.aws().unwrap().clone(), aws.aws().unwrap().clone());
    let lustre = api.lustre_get(REGION, &id).await.unwrap().unwrap();
    assert_eq!(lustre.subnet_ids, vec![s.subnets[1].clone()], "in the filesystem's zone");
    assert_eq!((lustre.storage_capacity_gib, lustre.deployment_type.as_deref()), (1200, Some("SCRATCH_2")));
    assert!(aws_owned(&lustre.tags, &s.server.app.services.deployment));
    let group = groups.security_group_find(REGION, &s.vpc, &f.provider_name).await.unwrap().unwrap();
    let ports: Vec<(i32, i32)> = group
        .ingress
        .iter()
        .filter(|r| r.source == RuleSource::Cidr(BLOCK.into()))
        .map(|r| (r.from_port, r.to_port))
        .collect();
    assert_eq!(ports, [(988, 988), (1018, 1023)]);

    s.delete(&f.id).await;
    s.until_state(&f.id, State::Deleted).await;
    assert_eq!(api.lustre_get(REGION, &id).await.unwrap(), None);
    assert_eq!(groups.security_group_find(REGION, &s.vpc, &f.provider_name).await.unwrap(), None);
    assert_eq!(s.sim().calls("fsx.DeleteFileSystem"), 1);
    let types = s.events_through("network.filesystem.deleted").await;
    assert_eq!(count(&types, "network.filesystem.ready"), 1, "{types:?}");
});

db_test!(a_foreign_file_system_under_our_token_is_an_error_and_never_deleted, |backend| async move {
    let s = setup(backend).await;
    // The reconciler waits at the group (the provider unavailable for now) while a file system
    // that is not ours is planted under the creation token.
    s.sim().inject("ec2.CreateSecurityGroup", Fault::Status { status: 503 }, 1_000);
    let f = s.create(FilesystemKind::Nfs, None).await;
    let foreign = s.sim().aws_plant_foreign_efs(REGION, &f.provider_name, &[("Name", &f.provider_name)]);
    s.sim().clear_faults();
    let failed = s.until_state(&f.id, State::Error).await;
    assert!(failed["message"].as_str().unwrap().contains("did not make"), "{failed}");
    let row = s.row(&f.id).await;
    assert_eq!(row.provider_id, None, "never adopted");
    assert!(!row.lost);

    // Retried every five minutes (looked at again, not before): still theirs, still an error,
    // and no second event.
    let looks = || s.sim().calls("efs.DescribeFileSystems");
    let before = looks();
    s.clock.advance(4 * 60_000);
    // Any run due by now has come and gone.
    common::idle(&s.server, &s.clock, &f.id).await;
    assert_eq!(looks(), before, "not looked at again before five minutes");
    s.clock.advance(60_000 + 1_000);
    common::until(&s, "the retry", || async { json!(looks()) }, |n| n.as_u64() > Some(before)).await;
    assert_eq!(s.view(&f.id).await["state"], State::Error.as_str());
    let api = s.aws().aws().unwrap().clone();
    s.delete(&f.id).await;
    s.until_state(&f.id, State::Deleted).await;
    let still = api.efs_get(REGION, &foreign).await.unwrap();
    assert!(
        still.is_some_and(|e| e.life_cycle_state == vps_graph::provider::Lifecycle::Available),
        "the foreign one is left alone"
    );
    assert_eq!(s.sim().calls("efs.DeleteFileSystem"), 0);
    assert_eq!(s.sim().calls("efs.CreateMountTarget"), 0);
    let groups = s.aws().aws().unwrap().clone();
    assert_eq!(groups.security_group_find(REGION, &s.vpc, &f.provider_name).await.unwrap(), None, "our group goes");
    let types = s.events_through("network.filesystem.deleted").await;
    assert_eq!(count(&types, "network.filesystem.error"), 1, "{types:?}");
});

db_test!(a_throttled_create_still_converges, |backend| async move {
    let s = setup(backend).await;
    s.sim().inject("efs.CreateFileSystem", Fault::Status { status: 429 }, 4);
    let f = s.create(FilesystemKind::Nfs, None).await;
    s.until_state(&f.id, State::Ready).await;
    let api = s.aws().aws().unwrap().clone();
    let made = api.efs_find_by_token(REGION, &f.provider_name).await.unwrap().unwrap();
    assert_eq!(s.row(&f.id).await.provider_id, Some(made.id));
    assert!(s.sim().calls("efs.CreateFileSystem") >= 5, "the throttled ones and the one that made it");
});

db_test!(creates_whose_answers_were_lost_are_found_by_name_and_made_once, |backend| async move {
    let s = setup(backend).await;
    s.sim().inject("ec2.CreateSecurityGroup", Fault::Drop, 1);
    s.sim().inject("efs.CreateFileSystem", Fault::Drop, 1);
    let f = s.create(FilesystemKind::Nfs, None).await;
    s.until_state(&f.id, State::Ready).await;
    let sim = s.sim();
    assert_eq!(sim.calls("ec2.CreateSecurityGroup"), 1, "the group was found, not made again");
    assert_eq!(sim.calls("efs.CreateFileSystem"), 1, "the file system was found, not made again");
    let api = s.aws().aws().unwrap().clone();
    let made = api.efs_find_by_token(REGION, &f.provider_name).await.unwrap().unwrap();
    let row = s.row(&f.id).await;
    assert_eq!(row.provider_id, Some(made.id));
    assert_eq!((row.group_attempts, row.create_attempts), (1, 1));
});

db_test!(a_delete_after_a_lost_create_answer_finds_ours_and_deletes_it, |backend| async move {
    let s = setup(backend).await;
    // The create is made but its answer dropped; the delete is asked before the next look.
    s.sim().inject("efs.CreateFileSystem", Fault::Drop, 1);
    let f = s.create(FilesystemKind::Nfs, None).await;
    common::until(&s, "the create sent", || async { json!(s.sim().calls("efs.CreateFileSystem")) }, |c| c == 1).await;
    s.delete(&f.id).await;
    s.until_state(&f.id, State::Deleted).await;
    let api = s.aws().aws().unwrap().clone();
    assert_eq!(api.efs_find_by_token(REGION, &f.provider_name).await.unwrap(), None, "never orphaned");
    assert_eq!(s.sim().calls("efs.DeleteFileSystem"), 1);
});
