//! The AWS network decisions, case by case, without a network.
use chrono::Utc;

use super::*;
use crate::provider::{AwsVpc, Tag};
use crate::reconcile::RETRY_LATER_MS;
use crate::store::state::{Desired, State};

const DEP: &str = "dep";

fn network(desired: Desired, provider_id: Option<&str>, attempts: i32, lost: bool, adopted: bool) -> network::Model {
    let now = Utc::now();
    network::Model {
        id: "net_1".into(),
        tenant_id: "acme".into(),
        project_id: None,
        pool_id: "pool_1".into(),
        provider_account_id: "acct_1".into(),
        name: "web".into(),
        description: None,
        state: if desired == Desired::Absent { State::Deleting } else { State::Pending },
        desired_state: desired,
        message: None,
        version: 1,
        generation: 1,
        created_at: now,
        updated_at: now,
        ready_at: None,
        deleted_at: None,
        region: Some("us-east-1".into()),
        ip_range: (!adopted).then(|| "10.20.0.0/16".into()),
        provider_id: provider_id.map(str::to_owned),
        create_attempts: attempts,
        lost,
        adopted,
        egress_provider_id: None,
        egress_attempts: 0,
    }
}

fn row(n: u8, state: State, desired: Desired, provider_id: Option<&str>, attempts: i32) -> subnet::Model {
    let now = Utc::now();
    subnet::Model {
        id: format!("sub_{n}"),
        network_id: "net_1".into(),
        region: "us-east-1".into(),
        ip_range: format!("10.20.{n}.0/24"),
        state,
        desired_state: desired,
        provider_id: provider_id.map(str::to_owned),
        provider_name: format!("bc-sub-{n}"),
        create_attempts: attempts,
        lost: false,
        message: None,
        version: 1,
        generation: 1,
        created_at: now,
        updated_at: now,
        ready_at: None,
        deleted_at: None,
        zone: Some(format!("us-east-1{}", (b'a' + n - 1) as char)),
    }
}

fn vpc(id: &str, owner: Option<&str>) -> AwsVpc {
    let mut tags = vec![Tag::new("Name", "bc-net_1")];
    tags.extend(owner.map(|o| Tag::new(crate::provider::AWS_OWNER_TAG, o)));
    AwsVpc { id: id.into(), cidr_block: "10.20.0.0/16".into(), state: "available".into(), tags }
}

fn ec2_subnet(id: &str, name: Option<&str>, owner: Option<&str>) -> AwsSubnet {
    let mut tags: Vec<Tag> = name.map(|n| Tag::new("Name", n)).into_iter().collect();
    tags.extend(owner.map(|o| Tag::new(crate::provider::AWS_OWNER_TAG, o)));
    AwsSubnet {
        id: id.into(),
        vpc_id: "vpc-1".into(),
        availability_zone: "us-east-1a".into(),
        cidr_block: "10.20.1.0/24".into(),
        state: "available".into(),
        tags,
    }
}

fn seen(vpc: VpcSeen, subnets: Option<Vec<AwsSubnet>>) -> Seen {
    Seen { vpc, subnets }
}

#[test]
fn look_before_deciding() {
    let cases = [
        (network(Desired::Present, None, 0, false, false), Look::Nothing),
        (network(Desired::Present, None, 1, false, false), Look::ByName("bc-net_1".into())),
        (network(Desired::Present, Some("vpc-1"), 1, false, false), Look::ById("vpc-1".into())),
        (network(Desired::Present, Some("vpc-1"), 1, true, false), Look::Nothing),
        (network(Desired::Absent, Some("vpc-1"), 1, false, false), Look::Nothing),
        (network(Desired::Absent, Some("vpc-1"), 2, false, false), Look::ByName("bc-net_1".into())),
        (network(Desired::Absent, None, 2, false, false), Look::ByName("bc-net_1".into())),
        (network(Desired::Present, Some("vpc-9"), 0, false, true), Look::ById("vpc-9".into())),
        (network(Desired::Absent, Some("vpc-9"), 0, false, true), Look::Nothing),
    ];
    for (n, expected) in cases {
        assert_eq!(look(&n), expected, "{n:?}");
    }
    let deleting = network(Desired::Absent, Some("vpc-1"), 1, false, false);
    assert_eq!(subnets_to_read(&deleting, &VpcSeen::NotAsked), Some("vpc-1"), "a delete reads the subnets");
    let present = network(Desired::Present, Some("vpc-1"), 1, false, false);
    assert_eq!(subnets_to_read(&present, &VpcSeen::Missing), None);
}

#[test]
fn the_vpc_is_created_or_looked_up_by_name_and_a_foreign_one_is_never_adopted() {
    let rows = vec![row(1, State::Pending, Desired::Present, None, 0)];
    // (network, seen, expected call, expected verdict)
    let cases = [
        (
            network(Desired::Present, None, 0, false, false),
            VpcSeen::NotAsked,
            Some(Call::CreateVpc),
            Verdict::Waiting(None),
        ),
        (
            network(Desired::Present, None, 1, false, false),
            VpcSeen::Named(vec![]),
            Some(Call::CreateVpc),
            Verdict::Waiting(None),
        ),
        (
            network(Desired::Present, None, 1, false, false),
            VpcSeen::Named(vec![vpc("vpc-f", None), vpc("vpc-1", Some(DEP))]),
            Some(Call::EnableDns("vpc-1".into())),
            Verdict::Waiting(None),
        ),
        (
            network(Desired::Present, None, 1, false, false),
            VpcSeen::Named(vec![vpc("vpc-f", Some("other deployment"))]),
            None,
            Verdict::Failed("a VPC named bc-net_1 exists that this deployment did not make; it is left alone".into()),
        ),
    ];
    for (n, vpc_seen, call, verdict) in cases {
        let plan = decide(&n, &rows, &seen(vpc_seen.clone(), None), DEP);
        assert_eq!((&plan.call, &plan.verdict), (&call, &verdict), "{vpc_seen:?}");
        if call.is_none() {
            assert_eq!(plan.next, Next::After(ERROR_RETRY_MS), "a foreign VPC: looked at again in 5 minutes");
            assert_eq!(network_state(Desired::Present, &plan.verdict, &rows).0, State::Error);
        }
    }
}

#[test]
fn a_vpc_deleted_outside_is_lost_and_never_made_again() {
    let n = network(Desired::Present, Some("vpc-1"), 1, false, false);
    let rows = vec![row(1, State::Ready, Desired::Present, Some("subnet-1"), 1)];
    let plan = decide(&n, &rows, &seen(VpcSeen::Missing, None), DEP);
    assert_eq!(plan.call, None);
    assert!(plan.vpc.lost);
    assert!(plan.subnets[0].lost && plan.subnets[0].state == State::Error, "its subnets went with it");
    assert_eq!(network_state(Desired::Present, &plan.verdict, &applied(&rows, &plan)).0, State::Error);
    let lost = network::Model { lost: true, ..n };
    assert_eq!(look(&lost), Look::Nothing);
    let again = decide(&lost, &rows, &seen(VpcSeen::NotAsked, None), DEP);
    assert_eq!(again.call, None, "never made again");
    assert!(matches!(again.verdict, Verdict::Failed(_)));
}

#[test]
fn subnets_are_made_one_per_run_and_a_lost_answer_is_found_by_name_and_tag() {
    let n = network(Desired::Present, Some("vpc-1"), 1, false, false);
    let found = VpcSeen::Found(vpc("vpc-1", Some(DEP)));
    let rows =
        vec![row(1, State::Pending, Desired::Present, None, 0), row(2, State::Pending, Desired::Present, None, 0)];
    let plan = decide(&n, &rows, &seen(found.clone(), Some(vec![])), DEP);
    assert_eq!(plan.call, Some(Call::CreateSubnet(0)));
    assert_eq!(network_state(Desired::Present, &plan.verdict, &rows).0, State::Pending);

    // Subnet 1's create answer was lost: it is ours under its name; subnet 2 is made next.
    let rows =
        vec![row(1, State::Pending, Desired::Present, None, 1), row(2, State::Pending, Desired::Present, None, 0)];
    let listing = vec![ec2_subnet("subnet-1", Some("bc-sub-1"), Some(DEP))];
    let plan = decide(&n, &rows, &seen(found.clone(), Some(listing)), DEP);
    assert_eq!((plan.subnets[0].state, plan.subnets[0].provider_id.as_deref()), (State::Ready, Some("subnet-1")));
    assert_eq!(plan.call, Some(Call::CreateSubnet(1)));

    // Under its name without our tag: left alone.
    let listing = vec![ec2_subnet("subnet-f", Some("bc-sub-1"), None)];
    let plan = decide(&n, &rows[..1], &seen(found.clone(), Some(listing)), DEP);
    assert_eq!((plan.call.as_ref(), plan.subnets[0].state), (None, State::Error));
    assert_eq!(plan.subnets[0].provider_id, None);
    assert_eq!(plan.next, Next::After(ERROR_RETRY_MS));

    // A made subnet gone at EC2: lost, never made again.
    let rows = vec![row(1, State::Ready, Desired::Present, Some("subnet-1"), 1)];
    let plan = decide(&n, &rows, &seen(found.clone(), Some(vec![])), DEP);
    assert_eq!((plan.call.as_ref(), plan.subnets[0].state, plan.subnets[0].lost), (None, State::Error, true));

    // All there: ready, nothing to do, read again in an hour.
    let listing = vec![ec2_subnet("subnet-1", Some("bc-sub-1"), Some(DEP))];
    let plan = decide(&n, &rows, &seen(found, Some(listing)), DEP);
    assert_eq!((plan.call.as_ref(), plan.next), (None, Next::Drift));
    assert_eq!(network_state(Desired::Present, &plan.verdict, &rows).0, State::Ready);
    let settled = network::Model { state: State::Ready, ..n };
    assert!(changes_nothing(&settled, &rows, &plan));
}

#[test]
fn a_delete_after_two_creates_removes_every_vpc_of_ours_under_the_name_the_recorded_one_last() {
    // Two creates were sent: the first one's answer was lost and the look missed its VPC.
    let n = network(Desired::Absent, Some("vpc-2"), 2, false, false);
    let named = vec![vpc("vpc-1", Some(DEP)), vpc("vpc-2", Some(DEP)), vpc("vpc-f", None)];
    let plan = decide(&n, &[], &seen(VpcSeen::Named(named), Some(vec![])), DEP);
    assert_eq!(plan.call, Some(Call::DeleteVpc("vpc-1".into())), "the stray one of ours first, never the foreign one");
    let after_stray = after(plan, &Call::DeleteVpc("vpc-1".into()), Ok(Answer::Done));
    assert_eq!(network_state(Desired::Absent, &after_stray.verdict, &[]).0, State::Deleting, "not done: look again");
    let named = vec![vpc("vpc-2", Some(DEP)), vpc("vpc-f", None)];
    let plan = decide(&n, &[], &seen(VpcSeen::Named(named), Some(vec![])), DEP);
    assert_eq!(plan.call, Some(Call::DeleteVpc("vpc-2".into())), "then the recorded one");
    let done = after(plan, &Call::DeleteVpc("vpc-2".into()), Ok(Answer::Done));
    assert_eq!(network_state(Desired::Absent, &done.verdict, &[]).0, State::Deleted);
    // The listing not showing the recorded one yet: it is deleted all the same.
    let plan = decide(&n, &[], &seen(VpcSeen::Named(vec![]), Some(vec![])), DEP);
    assert_eq!(plan.call, Some(Call::DeleteVpc("vpc-2".into())));
}

#[test]
fn a_delete_removes_the_subnets_then_the_vpc_and_waits_on_a_dependency_violation() {
    let n = network(Desired::Absent, Some("vpc-1"), 1, false, false);
    let listing = vec![ec2_subnet("subnet-1", Some("bc-sub-1"), Some(DEP))];
    let rows = vec![
        row(1, State::Deleting, Desired::Absent, Some("subnet-1"), 1),
        row(2, State::Deleting, Desired::Absent, Some("subnet-2"), 1),
    ];
    let plan = decide(&n, &rows, &seen(VpcSeen::NotAsked, Some(listing)), DEP);
    assert_eq!(plan.call, Some(Call::DeleteSubnet(0, "subnet-1".into())), "subnets first");
    assert_eq!(plan.subnets[1].state, State::Deleted, "one gone already needs no call");

    let deleted = after(plan, &Call::DeleteSubnet(0, "subnet-1".into()), Ok(Answer::Done));
    assert_eq!((deleted.subnets[0].state, deleted.next), (State::Deleted, Next::Now));
    let rows = applied(&rows, &deleted);
    let plan = decide(&n, &rows, &seen(VpcSeen::NotAsked, Some(vec![])), DEP);
    assert_eq!(plan.call, Some(Call::DeleteVpc("vpc-1".into())), "then the VPC");

    let busy = Err(ProviderError::aws_refused(
        400,
        "DependencyViolation",
        "The vpc 'vpc-1' has dependencies and cannot be deleted.",
    ));
    let waiting = after(plan.clone(), &Call::DeleteVpc("vpc-1".into()), busy);
    assert_eq!(waiting.next, Next::After(RETRY_LATER_MS));
    let (state_now, message) = network_state(Desired::Absent, &waiting.verdict, &rows);
    assert_eq!(state_now, State::Deleting);
    assert!(message.is_some_and(|m| m.contains("DependencyViolation")));

    let done = after(plan, &Call::DeleteVpc("vpc-1".into()), Ok(Answer::Done));
    assert_eq!(network_state(Desired::Absent, &done.verdict, &rows).0, State::Deleted);

    // A subnet whose create answer was lost is deleted only when ours; a foreign one never.
    let rows = vec![row(1, State::Deleting, Desired::Absent, None, 1)];
    let ours = vec![ec2_subnet("subnet-1", Some("bc-sub-1"), Some(DEP))];
    let plan = decide(&n, &rows, &seen(VpcSeen::NotAsked, Some(ours)), DEP);
    assert_eq!(plan.call, Some(Call::DeleteSubnet(0, "subnet-1".into())));
    let foreign = vec![ec2_subnet("subnet-f", Some("bc-sub-1"), None)];
    let plan = decide(&n, &rows, &seen(VpcSeen::NotAsked, Some(foreign)), DEP);
    assert_eq!(plan.subnets[0].state, State::Deleted);
    assert_eq!(plan.call, Some(Call::DeleteVpc("vpc-1".into())));

    // A VPC never made, or under our name but not ours: nothing to delete.
    let never = network(Desired::Absent, None, 1, false, false);
    let plan = decide(&never, &[], &seen(VpcSeen::Named(vec![vpc("vpc-f", None)]), None), DEP);
    assert_eq!((plan.call, plan.verdict), (None, Verdict::Gone));
    // A removed subnet of a live network is deleted while the network stays ready.
    let live = network(Desired::Present, Some("vpc-1"), 1, false, false);
    let rows = vec![
        row(1, State::Ready, Desired::Present, Some("subnet-1"), 1),
        row(2, State::Deleting, Desired::Absent, Some("subnet-2"), 1),
    ];
    let listing = vec![
        ec2_subnet("subnet-1", Some("bc-sub-1"), Some(DEP)),
        AwsSubnet { id: "subnet-2".into(), ..ec2_subnet("subnet-2", Some("bc-sub-2"), Some(DEP)) },
    ];
    let plan = decide(&live, &rows, &seen(VpcSeen::Found(vpc("vpc-1", Some(DEP))), Some(listing)), DEP);
    assert_eq!(plan.call, Some(Call::DeleteSubnet(1, "subnet-2".into())));
    assert_eq!(network_state(Desired::Present, &plan.verdict, &rows).0, State::Ready);
}

#[test]
fn after_a_create() {
    let n = network(Desired::Present, None, 1, false, false);
    let rows = vec![row(1, State::Pending, Desired::Present, None, 0)];
    let plan = decide(&n, &rows, &seen(VpcSeen::NotAsked, None), DEP);
    let made = after(plan.clone(), &Call::CreateVpc, Ok(Answer::Vpc(vpc("vpc-1", Some(DEP)))));
    assert_eq!((made.vpc.provider_id.as_deref(), made.next), (Some("vpc-1"), Next::Now));
    assert_eq!(network_state(Desired::Present, &made.verdict, &rows).0, State::Pending, "ready once its subnets are");
    let lost = after(plan.clone(), &Call::CreateVpc, Err(ProviderError::Unknown { message: "timeout".into() }));
    assert_eq!((lost.vpc.provider_id.as_deref(), lost.next), (None, Next::Backoff(RETRY_LATER_MS)));
    assert!(matches!(&lost.verdict, Verdict::Waiting(Some(m)) if m.contains("lost")));
    let refused = Err(ProviderError::aws_refused(400, "VpcLimitExceeded", "too many"));
    let refused = after(plan.clone(), &Call::CreateVpc, refused);
    assert_eq!(refused.next, Next::After(ERROR_RETRY_MS));
    assert_eq!(network_state(Desired::Present, &refused.verdict, &rows).0, State::Error);
    let limited = Err(ProviderError::RetryLater {
        message: "AWS RequestLimitExceeded: slow down".into(),
        after: std::time::Duration::from_secs(1),
    });
    let n = network(Desired::Present, Some("vpc-1"), 1, false, false);
    let plan = decide(&n, &rows, &seen(VpcSeen::Found(vpc("vpc-1", Some(DEP))), Some(vec![])), DEP);
    let waiting = after(plan, &Call::CreateSubnet(0), limited);
    assert_eq!((waiting.subnets[0].state, waiting.next), (State::Pending, Next::Backoff(RETRY_LATER_MS)));
}

#[test]
fn an_adopted_network_is_read_and_never_made_or_deleted() {
    let n = network(Desired::Present, Some("vpc-9"), 0, false, true);
    let recorded = row(1, State::Ready, Desired::Present, Some("subnet-1"), 0);
    let listing = vec![
        ec2_subnet("subnet-2", Some("theirs"), None),
        AwsSubnet { id: "subnet-3".into(), ..ec2_subnet("x", None, None) },
    ];
    let found = VpcSeen::Found(AwsVpc { cidr_block: "172.16.0.0/16".into(), ..vpc("vpc-9", None) });
    let plan = decide(&n, std::slice::from_ref(&recorded), &seen(found, Some(listing)), DEP);
    assert_eq!(plan.vpc.ip_range.as_deref(), Some("172.16.0.0/16"));
    assert_eq!(plan.found.iter().map(|s| s.id.as_str()).collect::<Vec<_>>(), ["subnet-2", "subnet-3"]);
    assert_eq!((plan.subnets[0].state, plan.subnets[0].desired_state), (State::Deleted, Desired::Absent));
    assert_eq!(plan.verdict, Verdict::Ready);

    let plan = decide(&n, &[], &seen(VpcSeen::Missing, None), DEP);
    assert!(matches!(&plan.verdict, Verdict::Failed(m) if m.contains("vpc-9")));
    assert_eq!((plan.next, plan.vpc.lost), (Next::After(ERROR_RETRY_MS), false));
    let read_before = network::Model { ip_range: Some("172.16.0.0/16".into()), ..n.clone() };
    assert!(decide(&read_before, &[], &seen(VpcSeen::Missing, None), DEP).vpc.lost, "gone after being read");

    // No provider call for any state or observation.
    let rows = vec![recorded.clone(), row(2, State::Deleting, Desired::Absent, Some("subnet-2"), 0)];
    for desired in [Desired::Present, Desired::Absent] {
        for lost in [false, true] {
            let n = network(desired, Some("vpc-9"), 0, lost, true);
            for vpc_seen in [VpcSeen::NotAsked, VpcSeen::Missing, VpcSeen::Found(vpc("vpc-9", None))] {
                let plan = decide(&n, &rows, &seen(vpc_seen, Some(vec![])), DEP);
                assert_eq!(plan.call, None, "{desired} lost={lost}");
            }
        }
    }
    let deleting = network(Desired::Absent, Some("vpc-9"), 0, false, true);
    let plan = decide(&deleting, &rows, &seen(VpcSeen::NotAsked, None), DEP);
    assert!(plan.subnets.iter().all(|s| s.state == State::Deleted));
    assert_eq!(network_state(Desired::Absent, &plan.verdict, &applied(&rows, &plan)).0, State::Deleted);
}
