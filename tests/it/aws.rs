//! The AWS clients (EC2 by hand, EFS and FSx through the SDK) against the sim's AWS face: whole
//! lifecycles of a network, its security groups, machines and shared filesystems, the errors
//! callers must tell apart, foreign holders of our names, and faults.
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use vps_graph::metrics::Metrics;
use vps_graph::provider::aws::{Aws, Credentials, Settings};
use vps_graph::provider::{
    Flow, GroupRule, InstanceRun, LustreCreate, LustreDeployment, ProviderError, RuleSource, Tag, tag_value,
};
use vps_graph::provider::{Lifecycle, MachineState};
use vps_graph::sim::{Fault, Sim, SimConfig};

const REGION: &str = "us-east-1";
const OWNER: &str = "bc:managed-by";

async fn start() -> (Sim, Aws) {
    start_with(SimConfig { action_time: Duration::from_millis(50), ..SimConfig::default() }).await
}

async fn start_with(config: SimConfig) -> (Sim, Aws) {
    vps_graph::init_crypto();
    let (sim, url) = Sim::spawn_local(config).await.unwrap();
    let settings =
        Settings { timeout: Duration::from_secs(2), max_attempts: 3, initial_backoff: Duration::from_millis(5) };
    let credentials = Credentials::parse("AKIDTEST:secret").unwrap();
    (sim, Aws::new(Some(url), Ok(credentials), settings, Arc::new(Metrics::default())))
}

fn ours(name: &str) -> Vec<Tag> {
    vec![Tag::new("Name", name), Tag::new(OWNER, "test")]
}

/// Polls `look` until it answers Some, for up to 5 s.
async fn eventually<T, F, Fut>(mut look: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    for _ in 0..100 {
        if let Some(found) = look().await {
            return found;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("not reached in time");
}

/// A VPC with DNS on and one subnet in each of two zones.
async fn network(aws: &Aws, name: &str) -> (String, Vec<String>) {
    let vpc = aws.vpc_create(REGION, "10.20.0.0/16", &ours(name)).await.unwrap();
    assert_eq!(vpc.cidr_block, "10.20.0.0/16");
    assert_eq!(tag_value(&vpc.tags, OWNER), Some("test"));
    let mut subnets = Vec::new();
    for (zone, cidr) in [("us-east-1a", "10.20.1.0/24"), ("us-east-1b", "10.20.2.0/24")] {
        let subnet = aws.subnet_create(REGION, &vpc.id, zone, cidr, &ours(name)).await.unwrap();
        assert_eq!((subnet.vpc_id.as_str(), subnet.availability_zone.as_str()), (vpc.id.as_str(), zone));
        subnets.push(subnet.id);
    }
    (vpc.id, subnets)
}

#[tokio::test]
async fn efs_on_a_new_network_from_vpc_to_mount_targets_and_back() {
    let (_sim, aws) = start().await;
    let (vpc, subnets) = network(&aws, "bc-net1").await;
    assert_eq!(aws.vpcs_find_by_name(REGION, "bc-net1").await.unwrap().len(), 1);
    assert_eq!(aws.subnets_of_vpc(REGION, &vpc).await.unwrap().len(), 2);

    let group =
        aws.security_group_create(REGION, &vpc, "bc-fs1", "bc filesystem bc-fs1", &ours("bc-fs1")).await.unwrap();
    let nfs = GroupRule::nfs(RuleSource::Cidr("10.20.0.0/16".into()));
    aws.security_group_authorize(REGION, &group, Flow::Ingress, &nfs).await.unwrap();
    let again = aws.security_group_authorize(REGION, &group, Flow::Ingress, &nfs).await.unwrap_err();
    assert_eq!(again.aws_code(), Some("InvalidPermission.Duplicate"));
    let found = aws.security_group_find(REGION, &vpc, "bc-fs1").await.unwrap().unwrap();
    assert_eq!(found.id, group);
    assert_eq!(tag_value(&found.tags, OWNER), Some("test"));
    assert_eq!(found.ingress, GroupRule::nfs(RuleSource::Cidr("10.20.0.0/16".into())));

    let created = aws.efs_create(REGION, "bc-fs1", &ours("bc-fs1")).await.unwrap();
    assert_eq!(created.life_cycle_state, Lifecycle::Creating);
    assert!(created.encrypted);
    assert_eq!(created.dns_name, format!("{}.efs.{REGION}.amazonaws.com", created.id));
    let id = created.id.clone();
    eventually(|| async {
        aws.efs_get(REGION, &id).await.unwrap().filter(|f| f.life_cycle_state == Lifecycle::Available)
    })
    .await;
    assert_eq!(aws.efs_find_by_token(REGION, "bc-fs1").await.unwrap().map(|f| f.id), Some(id.clone()));
    let repeat = aws.efs_create(REGION, "bc-fs1", &ours("bc-fs1")).await.unwrap_err();
    assert_eq!(repeat.aws_code(), Some("FileSystemAlreadyExists"));
    assert!(repeat.message().contains(&id), "{repeat:?}");

    let groups = vec![group.clone()];
    for subnet in &subnets {
        let target = aws.mount_target_create(REGION, &id, subnet, &groups).await.unwrap();
        assert_eq!(target.life_cycle_state, Lifecycle::Creating);
    }
    let targets = aws.mount_targets_of(REGION, &id).await.unwrap();
    assert_eq!(targets.len(), 2);
    assert_eq!(aws.efs_delete(REGION, &id).await.unwrap_err().aws_code(), Some("FileSystemInUse"));
    assert_eq!(aws.security_group_delete(REGION, &group).await.unwrap_err().aws_code(), Some("DependencyViolation"));

    for target in &targets {
        assert_eq!(aws.mount_target_delete(REGION, &target.id).await, Ok(true));
    }
    eventually(|| async { aws.mount_targets_of(REGION, &id).await.unwrap().is_empty().then_some(()) }).await;
    assert_eq!(aws.efs_delete(REGION, &id).await, Ok(true));
    eventually(|| async { aws.efs_get(REGION, &id).await.unwrap().is_none().then_some(()) }).await;
    assert_eq!(aws.efs_delete(REGION, &id).await, Ok(false));
    assert_eq!(aws.mount_targets_of(REGION, &id).await, Ok(vec![]));

    eventually(|| async { aws.security_group_delete(REGION, &group).await.ok() }).await;
    assert_eq!(aws.security_group_delete(REGION, &group).await, Ok(false));
    assert_eq!(aws.vpc_delete(REGION, &vpc).await.unwrap_err().aws_code(), Some("DependencyViolation"));
    for subnet in &subnets {
        assert_eq!(aws.subnet_delete(REGION, subnet).await, Ok(true));
    }
    assert_eq!(aws.vpc_delete(REGION, &vpc).await, Ok(true));
    assert_eq!(aws.vpc_get(REGION, &vpc).await, Ok(None));
    assert_eq!(aws.vpc_delete(REGION, &vpc).await, Ok(false));
}

#[tokio::test]
async fn lustre_with_its_self_referencing_group_reads_dns_and_mount_name() {
    let (_sim, aws) = start().await;
    let (vpc, subnets) = network(&aws, "bc-net2").await;
    let group =
        aws.security_group_create(REGION, &vpc, "bc-fs2", "bc filesystem bc-fs2", &ours("bc-fs2")).await.unwrap();
    let mut rules = GroupRule::lustre(RuleSource::Cidr("10.20.0.0/16".into()));
    rules.extend(GroupRule::lustre(RuleSource::Group(group.clone())));
    aws.security_group_authorize(REGION, &group, Flow::Ingress, &rules).await.unwrap();

    let groups = vec![group.clone()];
    let tags = ours("bc-fs2");
    let request = LustreCreate {
        client_request_token: "bc-fs2",
        storage_capacity_gib: 1200,
        deployment: LustreDeployment::Scratch2,
        subnet_id: &subnets[0],
        security_group_ids: &groups,
        tags: &tags,
    };
    let created = aws.lustre_create(REGION, &request).await.unwrap();
    assert_eq!(created.lifecycle, Lifecycle::Creating);
    assert_eq!(created.deployment_type.as_deref(), Some("SCRATCH_2"));
    let same = aws.lustre_create(REGION, &request).await.unwrap();
    assert_eq!(same.id, created.id, "the same token and parameters answer the same file system");
    let id = created.id.clone();
    let ready = eventually(|| async {
        aws.lustre_get(REGION, &id).await.unwrap().filter(|f| f.lifecycle == Lifecycle::Available)
    })
    .await;
    assert_eq!(ready.dns_name, Some(format!("{id}.fsx.{REGION}.amazonaws.com")));
    assert!(ready.mount_name.as_deref().is_some_and(|m| !m.is_empty()));
    assert_eq!(ready.subnet_ids, vec![subnets[0].clone()]);
    assert_eq!(aws.lustre_find_by_name(REGION, "bc-fs2").await.unwrap().len(), 1);
    assert!(aws.lustre_find_by_name(REGION, "bc-other").await.unwrap().is_empty());

    let bad = LustreCreate { client_request_token: "bc-fs3", storage_capacity_gib: 1000, ..request };
    let refused = aws.lustre_create(REGION, &bad).await.unwrap_err();
    assert!(matches!(refused, ProviderError::Refused { status: 400, .. }), "{refused:?}");
    assert_eq!(refused.aws_code(), Some("BadRequest"));

    assert_eq!(aws.lustre_delete(REGION, &id).await, Ok(true));
    eventually(|| async { aws.lustre_get(REGION, &id).await.unwrap().is_none().then_some(()) }).await;
    assert_eq!(aws.lustre_delete(REGION, &id).await, Ok(false));
}

#[tokio::test]
async fn foreign_holders_of_our_names_are_told_apart_by_code_and_tags() {
    let (sim, aws) = start().await;
    let (vpc, subnets) = network(&aws, "bc-net3").await;
    let foreign_efs = sim.aws_plant_foreign_efs(REGION, "bc-fs4", &[("Name", "bc-fs4")]);
    let taken = aws.efs_create(REGION, "bc-fs4", &ours("bc-fs4")).await.unwrap_err();
    assert_eq!(taken.aws_code(), Some("FileSystemAlreadyExists"));
    assert!(taken.message().contains(&foreign_efs), "{taken:?}");
    let holder = aws.efs_find_by_token(REGION, "bc-fs4").await.unwrap().unwrap();
    assert_eq!(tag_value(&holder.tags, OWNER), None);

    sim.aws_plant_foreign_group(REGION, &vpc, "bc-fs4", &[("Name", "bc-fs4")]);
    let duplicate = aws.security_group_create(REGION, &vpc, "bc-fs4", "d", &ours("bc-fs4")).await.unwrap_err();
    assert_eq!(duplicate.aws_code(), Some("InvalidGroup.Duplicate"));
    let group = aws.security_group_find(REGION, &vpc, "bc-fs4").await.unwrap().unwrap();
    assert_eq!(tag_value(&group.tags, OWNER), None);

    sim.aws_plant_foreign_fsx(REGION, &subnets[0], &[("Name", "bc-fs5")]).unwrap();
    let named = aws.lustre_find_by_name(REGION, "bc-fs5").await.unwrap();
    assert_eq!(named.len(), 1);
    assert_eq!(tag_value(&named[0].tags, OWNER), None);
}

#[tokio::test]
async fn machines_run_once_per_client_token_are_found_by_name_and_terminated() {
    let (_sim, aws) = start().await;
    let (vpc, subnets) = network(&aws, "bc-net4").await;
    let group = aws.security_group_create(REGION, &vpc, "bc-inst1", "machines", &ours("bc-inst1")).await.unwrap();
    let groups = vec![group];
    let tags = ours("bc-inst1");
    let request = InstanceRun {
        image_id: "ami-0123456789abcdef0",
        instance_type: "t3.micro",
        subnet_id: &subnets[1],
        security_group_ids: &groups,
        user_data: Some("#!/bin/sh\necho hello\n"),
        client_token: "bc-inst1",
        tags: &tags,
    };
    let first = aws.instance_run(REGION, &request).await.unwrap();
    assert_eq!(first.state, MachineState::Pending);
    assert_eq!(first.subnet_id.as_deref(), Some(subnets[1].as_str()));
    assert_eq!(aws.instance_run(REGION, &request).await.unwrap().id, first.id, "one machine per client token");
    let id = first.id.clone();
    let running = eventually(|| async {
        aws.instance_get(REGION, &id).await.unwrap().filter(|i| i.state == MachineState::Running)
    })
    .await;
    assert_eq!(tag_value(&running.tags, OWNER), Some("test"));
    let named = aws.instances_find_by_name(REGION, "bc-inst1").await.unwrap();
    assert_eq!(named.iter().map(|i| i.id.as_str()).collect::<Vec<_>>(), [id.as_str()]);
    assert_eq!(aws.instance_terminate(REGION, &id).await, Ok(true));
    eventually(|| async {
        aws.instance_get(REGION, &id).await.unwrap().filter(|i| i.state == MachineState::Terminated)
    })
    .await;
    assert_eq!(aws.instance_get(REGION, "i-0000000000000000f").await, Ok(None));
    assert_eq!(aws.instance_terminate(REGION, "i-0000000000000000f").await, Ok(false));
}

#[tokio::test]
async fn throttling_is_retried_and_a_create_whose_answer_is_lost_is_unknown_then_found() {
    let (sim, aws) = start().await;
    sim.inject("ec2.CreateVpc", Fault::Status { status: 503 }, 1);
    let vpc = aws.vpc_create(REGION, "10.30.0.0/16", &ours("bc-net5")).await.unwrap();
    sim.inject("efs.DescribeFileSystems", Fault::Status { status: 400 }, 1);
    assert_eq!(aws.efs_find_by_token(REGION, "bc-nothing").await, Ok(None));

    sim.inject("ec2.CreateSecurityGroup", Fault::Status { status: 500 }, 1);
    let lost = aws.security_group_create(REGION, &vpc.id, "bc-fs6", "d", &ours("bc-fs6")).await.unwrap_err();
    assert!(matches!(lost, ProviderError::Unknown { .. }), "{lost:?}");

    sim.inject("efs.CreateFileSystem", Fault::Drop, 1);
    let dropped = aws.efs_create(REGION, "bc-fs6", &ours("bc-fs6")).await.unwrap_err();
    assert!(matches!(dropped, ProviderError::Unknown { .. }), "{dropped:?}");
    let found = aws.efs_find_by_token(REGION, "bc-fs6").await.unwrap().unwrap();
    assert_eq!(tag_value(&found.tags, OWNER), Some("test"));

    sim.inject("ec2.DescribeVpcs", Fault::Status { status: 503 }, 5);
    let busy = aws.vpc_get(REGION, &vpc.id).await.unwrap_err();
    assert!(matches!(busy, ProviderError::RetryLater { .. }), "{busy:?}");
    assert_eq!(busy.aws_code(), Some("RequestLimitExceeded"));
}

#[tokio::test]
async fn aws_accounts_reach_their_endpoint_through_the_registry_sim_or_with_a_key_pair_file() {
    use vps_graph::provider::{AccountRef, ProviderKind, Providers};
    vps_graph::init_crypto();
    let (_sim, url) = Sim::spawn_local(SimConfig::default()).await.unwrap();
    let providers = Providers::new(Some(url.clone()), Duration::from_secs(2), Arc::new(Metrics::default()));
    let sim_account =
        AccountRef { id: "acct-sim", kind: ProviderKind::Aws, api_url: "", credential_ref: "", sim: true };
    let provider = providers.for_account(&sim_account);
    let vpc = provider.aws().unwrap().clone().vpc_create(REGION, "10.40.0.0/16", &ours("bc-net6")).await.unwrap();
    assert!(vpc.id.starts_with("vpc-"));
    assert!(provider.digitalocean().is_none());

    let path = std::env::temp_dir().join(format!("vps-graph-aws-test-{}", std::process::id()));
    std::fs::write(&path, "AKIDFILE:secret-from-file\n").unwrap();
    let reference = format!("file:{}", path.display());
    let keyed =
        AccountRef { id: "acct-keyed", kind: ProviderKind::Aws, api_url: &url, credential_ref: &reference, sim: false };
    let filesystems = providers.for_account(&keyed).aws().unwrap().clone();
    assert_eq!(filesystems.efs_find_by_token(REGION, "bc-none").await, Ok(None));
    std::fs::remove_file(&path).unwrap();

    let unset = AccountRef {
        id: "acct-unset",
        kind: ProviderKind::Aws,
        api_url: &url,
        credential_ref: "env:VPS_GRAPH_NO_SUCH_KEY",
        sim: false,
    };
    let groups = providers.for_account(&unset).aws().unwrap().clone();
    let refused = groups.security_group_find(REGION, &vpc.id, "bc-x").await.unwrap_err();
    assert!(matches!(refused, ProviderError::Misconfigured { .. }), "{refused:?}");
}

/// Issue 14: with the sim holding each page to two items, each describe the reconcilers read
/// follows `nextToken` (EC2) or `NextMarker` (EFS) past the first page.
#[tokio::test]
async fn every_describe_the_reconcilers_read_follows_its_next_token() {
    let config = SimConfig { action_time: Duration::from_millis(50), page_limit: Some(2), ..SimConfig::default() };
    let (sim, aws) = start_with(config).await;
    let mut vpcs = Vec::new();
    for n in 1..=3 {
        vpcs.push(aws.vpc_create(REGION, &format!("10.{n}.0.0/16"), &ours("bc-net")).await.unwrap().id);
    }
    let found = aws.vpcs_find_by_name(REGION, "bc-net").await.unwrap();
    assert_eq!(found.into_iter().map(|v| v.id).collect::<Vec<_>>(), vpcs);
    assert!(sim.calls("ec2.DescribeVpcs") >= 2, "two pages");

    let vpc = &vpcs[0];
    let mut subnets = Vec::new();
    for (n, zone) in ["us-east-1a", "us-east-1b", "us-east-1c"].iter().enumerate() {
        subnets
            .push(aws.subnet_create(REGION, vpc, zone, &format!("10.1.{n}.0/24"), &ours("bc-net")).await.unwrap().id);
    }
    assert_eq!(aws.subnets_of_vpc(REGION, vpc).await.unwrap().len(), 3);

    let group = aws.security_group_create(REGION, vpc, "bc-m", "bc machines", &ours("bc-m")).await.unwrap();
    let groups = vec![group.clone()];
    for n in 1..=3 {
        let token = format!("bc-m-{n}");
        let tags = ours("bc-m");
        let request = InstanceRun {
            image_id: "ami-0123456789abcdef0",
            instance_type: "t3.micro",
            subnet_id: &subnets[0],
            security_group_ids: &groups,
            user_data: None,
            client_token: &token,
            tags: &tags,
        };
        aws.instance_run(REGION, &request).await.unwrap();
    }
    assert_eq!(aws.instances_find_by_name(REGION, "bc-m").await.unwrap().len(), 3);

    let fs = aws.efs_create(REGION, "bc-fs", &ours("bc-fs")).await.unwrap().id;
    eventually(|| async {
        aws.efs_get(REGION, &fs).await.unwrap().filter(|f| f.life_cycle_state == Lifecycle::Available)
    })
    .await;
    for subnet in &subnets {
        aws.mount_target_create(REGION, &fs, subnet, &groups).await.unwrap();
    }
    assert_eq!(aws.mount_targets_of(REGION, &fs).await.unwrap().len(), 3);
    assert!(sim.calls("efs.DescribeMountTargets") >= 2, "two pages");
}
