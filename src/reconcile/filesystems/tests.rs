//! The decisions of `decide`, table by table, without a network.
use std::time::Duration;

use chrono::Utc;

use super::*;
use crate::provider::{GroupRule, LustreFileSystem, MISCONFIGURED, MountTarget, RuleSource};
use crate::store::entity::network_subnet as subnet;
use crate::store::state::{Desired, FilesystemKind, State};

fn fs(kind: FilesystemKind, state: State, desired: Desired) -> filesystem::Model {
    let now = Utc::now();
    filesystem::Model {
        id: "fs_1".into(),
        tenant_id: "acme".into(),
        project_id: None,
        network_id: "net_1".into(),
        pool_id: "pool_1".into(),
        provider_account_id: "pacct_1".into(),
        name: "data".into(),
        kind,
        size_gib: None,
        deployment: None,
        zone: None,
        region: "us-east-1".into(),
        state,
        desired_state: desired,
        message: None,
        provider_name: "bc-fs_1".into(),
        security_group_id: Some("sg-1".into()),
        group_attempts: 1,
        provider_id: Some("fs-1".into()),
        create_attempts: 1,
        dns_name: None,
        mount_name: None,
        lost: false,
        deletion_protection: false,
        version: 3,
        generation: 1,
        created_at: now,
        updated_at: now,
        ready_at: None,
        deleted_at: None,
    }
}

fn seen(phase: Phase) -> Seen {
    Seen {
        id: "fs-1".into(),
        owned: true,
        phase,
        dns_name: Some("fs-1.efs.us-east-1.amazonaws.com".into()),
        mount_name: None,
        failure: None,
    }
}

fn subnet(id: &str, zone: &str, provider_id: Option<&str>, state: State) -> subnet::Model {
    let now = Utc::now();
    subnet::Model {
        id: id.into(),
        network_id: "net_1".into(),
        region: "us-east-1".into(),
        ip_range: "10.0.1.0/24".into(),
        state,
        desired_state: Desired::Present,
        provider_id: provider_id.map(str::to_owned),
        provider_name: format!("bc-{id}"),
        create_attempts: 1,
        lost: false,
        message: None,
        version: 1,
        generation: 1,
        created_at: now,
        updated_at: now,
        ready_at: None,
        deleted_at: None,
        zone: Some(zone.into()),
    }
}

fn target(id: &str, subnet: &str, zone: &str, state: &str) -> MountTarget {
    MountTarget {
        id: id.into(),
        file_system_id: "fs-1".into(),
        subnet_id: subnet.into(),
        life_cycle_state: crate::provider::Lifecycle::parse(state),
        ip_address: None,
        availability_zone: Some(zone.into()),
        vpc_id: None,
    }
}

fn refused(code: &str) -> ProviderError {
    ProviderError::aws_refused(400, code, "the service's words")
}

fn held(id: &str, owned: bool) -> Held {
    Held { id: id.into(), owned }
}

#[test]
fn a_create_comes_first_then_a_look_by_name_after_an_attempt() {
    assert!(!must_look(0), "never created: nothing to look for");
    assert!(must_look(1) && must_look(3), "a create may have reached the provider");
    let cases = [
        (vec![], Making::Create),
        (vec![held("fs-ours", true)], Making::Adopt("fs-ours".into())),
        (vec![held("fs-theirs", false)], Making::Foreign),
        // FSx names are not unique: ours is picked out by its tag.
        (vec![held("fs-theirs", false), held("fs-ours", true)], Making::Adopt("fs-ours".into())),
    ];
    for (found, expected) in cases {
        assert_eq!(making(&found), expected, "{found:?}");
    }
}

#[test]
fn after_a_call_table() {
    let limited = ProviderError::RetryLater { message: "slow down".into(), after: Duration::from_secs(60) };
    let cases: Vec<(std::result::Result<(), ProviderError>, After)> = vec![
        (Ok(()), After::Done),
        (Err(limited), After::Backoff("slow down".into(), 60_000)),
        (Err(ProviderError::Unknown { message: "timeout".into() }), After::Backoff("timeout".into(), RETRY_LATER_MS)),
        (Err(ProviderError::aws_refused(400, "BadRequest", "no")), After::Fail("AWS BadRequest: no".into())),
        (Err(ProviderError::Misconfigured { message: "no key".into() }), After::Fail(MISCONFIGURED.into())),
        (Err(refused("FileSystemAlreadyExists")), After::LookAgain),
        (Err(refused("InvalidGroup.Duplicate")), After::LookAgain),
        (Err(refused("MountTargetConflict")), After::LookAgain),
        (Err(refused("InvalidPermission.Duplicate")), After::Done),
        (
            Err(refused("DependencyViolation")),
            After::Wait("AWS DependencyViolation: the service's words".into(), RETRY_LATER_MS),
        ),
        (
            Err(refused("FileSystemInUse")),
            After::Wait("AWS FileSystemInUse: the service's words".into(), RETRY_LATER_MS),
        ),
        (
            Err(refused("IncorrectFileSystemLifeCycleState")),
            After::Wait("AWS IncorrectFileSystemLifeCycleState: the service's words".into(), ACTION_POLL_MS),
        ),
        // A code only counts on a refusal: a lost answer is still a lost answer.
        (
            Err(ProviderError::Unknown { message: "AWS FileSystemAlreadyExists: x".into() }),
            After::Backoff("AWS FileSystemAlreadyExists: x".into(), RETRY_LATER_MS),
        ),
    ];
    for (result, expected) in cases {
        assert_eq!(after(&result), expected, "{result:?}");
    }
}

#[test]
fn what_an_answer_does_to_the_row() {
    let pending = Observed::of(&fs(NFS_KIND, State::Pending, Desired::Present));
    let failed = Observed::of(&filesystem::Model {
        message: Some("refused".into()),
        ..fs(NFS_KIND, State::Error, Desired::Present)
    });
    let (o, n) = apply(failed.clone(), After::Done);
    assert_eq!((o.state, o.message, n), (State::Pending, None, Next::Now), "an ERROR cleared by a step");
    let (o, n) = apply(failed.clone(), After::LookAgain);
    assert_eq!((o, n), (failed, Next::Now));
    let (o, n) = apply(pending.clone(), After::Wait("busy".into(), RETRY_LATER_MS));
    assert_eq!((o.state, o.message.as_deref(), n), (State::Pending, Some("busy"), Next::After(30_000)));
    let (o, n) = apply(pending, After::Fail("no".into()));
    assert_eq!((o.state, o.message.as_deref(), n), (State::Error, Some("no"), Next::After(ERROR_RETRY_MS)));
}

const NFS_KIND: FilesystemKind = FilesystemKind::Nfs;

#[test]
fn the_group_admits_only_the_network_and_only_missing_rules_are_asked() {
    let nfs = wanted_rules(NFS_KIND, "10.20.0.0/16", "sg-1");
    assert_eq!(nfs, vec![GroupRule::tcp(2049, 2049, RuleSource::Cidr("10.20.0.0/16".into()))]);
    let lustre = wanted_rules(FilesystemKind::Lustre, "10.20.0.0/16", "sg-1");
    let ports: Vec<(i32, i32)> = lustre.iter().map(|r| (r.from_port, r.to_port)).collect();
    assert_eq!(ports, [(988, 988), (1018, 1023), (988, 988), (1018, 1023)]);
    assert!(lustre[2..].iter().all(|r| r.source == RuleSource::Group("sg-1".into())), "the servers, to each other");
    assert_eq!(missing_rules(&nfs, &[]), nfs);
    let described = GroupRule { description: Some("set by hand".into()), ..nfs[0].clone() };
    assert!(missing_rules(&nfs, &[described]).is_empty(), "a description is no difference");
    assert_eq!(missing_rules(&lustre, &lustre[..2]), lustre[2..].to_vec());
}

#[test]
fn a_recorded_filesystem_as_the_provider_shows_it() {
    let pending = fs(NFS_KIND, State::Pending, Desired::Present);
    let Made::Write(o, n) = decide_made(&pending, None) else { panic!("a write") };
    assert_eq!((o.state, o.lost, n), (State::Error, true, Next::Drift), "gone: lost for good");
    assert!(o.message.unwrap().contains("deleted outside vps-graph"));
    let Made::Write(o, _) = decide_made(&pending, Some(&seen(Phase::Deleting))) else { panic!("a write") };
    assert!(o.lost, "being deleted by someone else is gone too");
    let Made::Write(o, n) = decide_made(&pending, Some(&seen(Phase::Creating))) else { panic!("a write") };
    assert_eq!((o.state, n), (State::Pending, Next::After(ACTION_POLL_MS)));
    assert_eq!(decide_made(&pending, Some(&seen(Phase::Available))), Made::MountTargets);

    let lustre = filesystem::Model {
        zone: Some("us-east-1a".into()),
        ..fs(FilesystemKind::Lustre, State::Pending, Desired::Present)
    };
    let failed = Seen { failure: Some("no capacity".into()), ..seen(Phase::Failed) };
    let Made::Write(o, n) = decide_made(&lustre, Some(&failed)) else { panic!("a write") };
    assert_eq!((o.state, o.message.as_deref(), o.lost), (State::Error, Some("no capacity"), false));
    assert_eq!(n, Next::After(ERROR_RETRY_MS));
    let available = Seen {
        dns_name: Some("fs-1.fsx.us-east-1.amazonaws.com".into()),
        mount_name: Some("abcdefgh".into()),
        ..seen(Phase::Available)
    };
    let Made::Write(o, n) = decide_made(&lustre, Some(&available)) else { panic!("a write") };
    assert_eq!((o.state, o.mount_name.as_deref(), n), (State::Ready, Some("abcdefgh"), Next::Drift));
    assert_eq!(o.dns_name.as_deref(), Some("fs-1.fsx.us-east-1.amazonaws.com"));
}

#[test]
fn fsx_words_map_to_phases() {
    let lustre = |lifecycle: &str, tags: Vec<Tag>| LustreFileSystem {
        id: "fs-2".into(),
        lifecycle: crate::provider::Lifecycle::parse(lifecycle),
        dns_name: None,
        mount_name: None,
        storage_capacity_gib: 1200,
        deployment_type: None,
        subnet_ids: vec![],
        vpc_id: None,
        failure_message: Some("LNET".into()),
        tags,
    };
    let ours = aws_tags("bc-fs_1", "dep");
    assert_eq!(Seen::lustre(&lustre("MISCONFIGURED", ours.clone()), "dep").phase, Phase::Failed);
    assert_eq!(Seen::lustre(&lustre("UPDATING", ours.clone()), "dep").phase, Phase::Creating);
    assert!(Seen::lustre(&lustre("AVAILABLE", ours.clone()), "dep").owned);
    assert!(!Seen::lustre(&lustre("AVAILABLE", ours), "another").owned, "another deployment's is not ours");
    assert!(!Seen::lustre(&lustre("AVAILABLE", vec![Tag::new("Name", "bc-fs_1")]), "dep").owned);
}

#[test]
fn a_mount_target_in_each_zone_with_a_ready_subnet() {
    let subnets = [
        subnet("sub_a", "us-east-1a", Some("subnet-a"), State::Ready),
        subnet("sub_b", "us-east-1b", Some("subnet-b"), State::Ready),
        subnet("sub_c", "us-east-1c", None, State::Pending),
        // A second subnet in a zone that has one: EFS takes one target per zone.
        subnet("sub_d", "us-east-1a", Some("subnet-d"), State::Ready),
    ];
    assert_eq!(plan_targets(&subnets, &[]), Targets::Create("subnet-a".into()));
    let one = [target("fsmt-a", "subnet-a", "us-east-1a", "available")];
    assert_eq!(plan_targets(&subnets, &one), Targets::Create("subnet-b".into()));
    let two = [one[0].clone(), target("fsmt-b", "subnet-b", "us-east-1b", "creating")];
    assert_eq!(plan_targets(&subnets, &two), Targets::Waiting);
    let both = [one[0].clone(), target("fsmt-b", "subnet-b", "us-east-1b", "available")];
    assert_eq!(plan_targets(&subnets, &both), Targets::Ready);
    assert_eq!(plan_targets(&subnets[2..3], &[]), Targets::NoSubnet);

    let pending = fs(NFS_KIND, State::Pending, Desired::Present);
    let (o, n) = after_targets(&pending, &seen(Phase::Available), &Targets::Ready).unwrap();
    assert_eq!(
        (o.state, o.dns_name.as_deref(), n),
        (State::Ready, seen(Phase::Available).dns_name.as_deref(), Next::Drift)
    );
    assert!(after_targets(&pending, &seen(Phase::Available), &Targets::Create("subnet-b".into())).is_none());
    let ready = fs(NFS_KIND, State::Ready, Desired::Present);
    let (o, _) = after_targets(&ready, &seen(Phase::Available), &Targets::Waiting).unwrap();
    assert_eq!(o.state, State::Ready, "a new zone's target does not take a ready filesystem away");
}

#[test]
fn a_delete_goes_targets_then_filesystem_then_group() {
    let available = seen(Phase::Available);
    let going = seen(Phase::Deleting);
    let targets = [
        target("fsmt-a", "subnet-a", "us-east-1a", "deleting"),
        target("fsmt-b", "subnet-b", "us-east-1b", "available"),
    ];
    // (ours as the provider shows it, its mount targets, our group, the step)
    type Case<'a> = (Option<&'a Seen>, &'a [MountTarget], Option<&'a str>, Removal);
    let cases: Vec<Case> = vec![
        (Some(&available), &targets, Some("sg-1"), Removal::MountTarget("fsmt-b".into())),
        (Some(&available), &targets[..1], Some("sg-1"), Removal::WaitTargets),
        (Some(&available), &[], Some("sg-1"), Removal::Filesystem("fs-1".into())),
        (Some(&going), &[], Some("sg-1"), Removal::WaitFilesystem),
        // Gone, never made, lost, or held only by someone else: the group, ours, is next.
        (None, &[], Some("sg-1"), Removal::Group("sg-1".into())),
        (None, &[], None, Removal::Finished),
    ];
    for (filesystem, targets, group, expected) in cases {
        assert_eq!(removal(filesystem, targets, group), expected, "{filesystem:?} {targets:?} {group:?}");
    }
    let deleting = Observed::of(&fs(NFS_KIND, State::Deleting, Desired::Absent));
    let (o, n) = settle_removal(deleting.clone(), &Err::<bool, _>(refused("DependencyViolation")));
    assert_eq!((o.state, n), (State::Deleting, Next::After(RETRY_LATER_MS)), "ENIs linger");
    let (o, n) = settle_removal(deleting, &Err::<bool, _>(refused("BadRequest")));
    assert_eq!((o.state, n), (State::Deleting, Next::After(RETRY_LATER_MS)), "a delete never errs the row");
}

#[test]
fn a_lost_filesystem_is_never_made_again() {
    let lost = Observed::of(&fs(NFS_KIND, State::Ready, Desired::Present)).lost("gone");
    assert_eq!((lost.state, lost.lost, lost.provider_id.as_deref()), (State::Error, true, Some("fs-1")));
    assert!(lost.clone().progress().lost, "nothing clears it");
}

#[test]
fn events_mark_transitions_only() {
    assert_eq!(event_type(State::Pending, State::Ready), Some("ready"));
    assert_eq!(event_type(State::Ready, State::Error), Some("error"));
    assert_eq!(event_type(State::Deleting, State::Deleted), Some("deleted"));
    assert_eq!(event_type(State::Error, State::Error), None, "a message-only change");
    assert_eq!(event_type(State::Ready, State::Ready), None);
    assert_eq!(event_type(State::Error, State::Pending), None);
}
