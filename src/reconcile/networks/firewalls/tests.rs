//! The decisions of a firewall round, by table: each names the rule it keeps.
use chrono::{Duration, Utc};
use serde_json::json;

use super::*;
use crate::provider::ProviderError;
use crate::reconcile::{ERROR_RETRY_MS, RETRY_LATER_MS};
use crate::store::state::{Protocol, RuleAction};

fn rule(state: State, desired: Desired, provider_id: Option<&str>) -> firewall_rule::Model {
    let now = Utc::now();
    firewall_rule::Model {
        id: "fwr_1".into(),
        tenant_id: "ten_1".into(),
        project_id: None,
        network_id: "net_1".into(),
        pool_id: "pool_1".into(),
        provider_account_id: "acc_1".into(),
        name: "ssh".into(),
        direction: Direction::Inbound,
        action: RuleAction::Allow,
        protocol: Protocol::Tcp,
        from_port: Some(22),
        to_port: Some(22),
        addresses: json!(["203.0.113.7/32"]),
        peer_instance_ids: json!([]),
        applies_to: json!([]),
        state,
        desired_state: desired,
        message: None,
        provider_name: "bc-fwr-1".into(),
        provider_id: provider_id.map(str::to_owned),
        create_attempts: 0,
        lost: false,
        version: 1,
        generation: 1,
        created_at: now,
        updated_at: now - Duration::minutes(1),
        ready_at: None,
        deleted_at: None,
    }
}

/// Written just now, and over five minutes ago.
const FRESH: i64 = 0;
const DUE: i64 = ERROR_RETRY_MS;

fn held(id: &str, owned: bool, matches: bool, applying: Applying) -> Held {
    Held { id: id.into(), owned, matches, applying }
}

fn by_id(h: Held) -> Seen {
    Seen { by_id: Some(h), by_name: Vec::new() }
}

fn by_name(found: Vec<Held>) -> Seen {
    Seen { by_id: None, by_name: found }
}

#[test]
fn a_rule_is_made_once_and_a_lost_create_is_found_by_its_name_and_mark() {
    let pending = rule(State::Pending, Desired::Present, None);
    assert_eq!(step(&pending, &Seen::default(), 0), Step::Create);
    let ours = held("fw-9", true, true, Applying::Done);
    assert_eq!(step(&pending, &by_name(vec![ours]), FRESH), Step::Adopt("fw-9".into()));
    let theirs = held("fw-8", false, true, Applying::Done);
    let Step::Write(observed) = step(&pending, &by_name(vec![theirs.clone()]), DUE) else { panic!() };
    assert_eq!(observed.state, State::Error);
    assert!(observed.message.unwrap().contains("did not make; it is left alone"));
    // Ours beside someone else's under the name: ours is adopted, theirs never touched.
    let ours = held("fw-9", true, false, Applying::Done);
    assert_eq!(step(&pending, &by_name(vec![theirs, ours]), FRESH), Step::Adopt("fw-9".into()));
}

#[test]
fn an_error_is_retried_only_when_due() {
    let failed = rule(State::Error, Desired::Present, None);
    assert_eq!(step(&failed, &Seen::default(), FRESH), Step::Rest);
    assert_eq!(step(&failed, &Seen::default(), DUE), Step::Create);
    let drifted = rule(State::Error, Desired::Present, Some("fw-1"));
    let differs = by_id(held("fw-1", true, false, Applying::Done));
    assert_eq!(step(&drifted, &differs, FRESH), Step::Rest);
    assert_eq!(step(&drifted, &differs, DUE), Step::Update("fw-1".into()));
}

#[test]
fn a_firewall_changed_outside_is_put_back_and_one_deleted_outside_is_never_made_again() {
    let ready = rule(State::Ready, Desired::Present, Some("fw-1"));
    assert_eq!(step(&ready, &by_id(held("fw-1", true, false, Applying::Done)), FRESH), Step::Update("fw-1".into()));
    let Step::Write(observed) = step(&ready, &Seen::default(), DUE) else { panic!() };
    assert!(observed.lost && observed.state == State::Error, "{observed:?}");
    assert!(observed.message.unwrap().contains("deleted outside vps-graph"));
    let lost = firewall_rule::Model { lost: true, ..rule(State::Error, Desired::Present, Some("fw-1")) };
    assert_eq!(step(&lost, &Seen::default(), DUE), Step::Rest, "a lost rule is never made again");
}

#[test]
fn a_firewall_just_made_and_not_listed_yet_is_waited_for_not_lost() {
    let made = rule(State::Pending, Desired::Present, Some("fw-1"));
    assert!(matches!(step(&made, &Seen::default(), FRESH), Step::Wait(ref o) if !o.lost), "listings lag");
    let Step::Write(observed) = step(&made, &Seen::default(), LISTING_LAG_MS) else { panic!() };
    assert!(observed.lost, "a minute on, it is gone");
    // A rule marked lost whose firewall shows up again under its name, ours: deleted with it.
    let lost = firewall_rule::Model { lost: true, ..rule(State::Deleting, Desired::Absent, Some("fw-1")) };
    let ours = by_name(vec![held("fw-1", true, true, Applying::Done)]);
    assert_eq!(step(&lost, &ours, FRESH), Step::Delete("fw-1".into()));
}

#[test]
fn a_rule_is_ready_once_applied_and_waits_while_the_provider_applies_it() {
    let pending = rule(State::Pending, Desired::Present, Some("fw-1"));
    let seen = |applying| by_id(held("fw-1", true, true, applying));
    assert_eq!(step(&pending, &seen(Applying::Done), FRESH), Step::Applied { waiting: false });
    assert_eq!(step(&pending, &seen(Applying::Waiting), FRESH), Step::Applied { waiting: true });
    let Step::Write(observed) = step(&pending, &seen(Applying::Failed("no".into())), FRESH) else { panic!() };
    assert_eq!((observed.state, observed.message.as_deref()), (State::Error, Some("no")));
}

#[test]
fn a_deleted_rule_deletes_only_its_own_firewall() {
    let going = rule(State::Deleting, Desired::Absent, Some("fw-1"));
    assert_eq!(step(&going, &by_id(held("fw-1", true, true, Applying::Done)), FRESH), Step::Delete("fw-1".into()));
    let deleted = Step::Write(Observed::of(&going).state(State::Deleted, None));
    assert_eq!(step(&going, &Seen::default(), FRESH), deleted, "gone already");
    let never_recorded = rule(State::Deleting, Desired::Absent, None);
    let theirs = by_name(vec![held("fw-8", false, true, Applying::Done)]);
    let Step::Write(observed) = step(&never_recorded, &theirs, FRESH) else { panic!() };
    assert_eq!(observed.state, State::Deleted, "someone else's under our name is left alone");
    let ours = by_name(vec![held("fw-9", true, true, Applying::Done)]);
    assert_eq!(step(&never_recorded, &ours, FRESH), Step::Delete("fw-9".into()), "a lost create is cleaned up");
}

fn refused(code: &str) -> std::result::Result<(), ProviderError> {
    Err(ProviderError::aws_refused(400, code, "words"))
}

#[test]
fn call_answers_are_sorted() {
    assert_eq!(after(&Ok::<(), ProviderError>(())), After::Done);
    assert_eq!(after(&refused("InvalidPermission.Duplicate")), After::Done, "so already");
    assert_eq!(after(&refused("InvalidPermission.NotFound")), After::Done, "gone already");
    assert_eq!(after(&refused("InvalidGroup.Duplicate")), After::LookAgain, "a lost create: look by name");
    assert!(matches!(after(&refused("DependencyViolation")), After::Wait(_, RETRY_LATER_MS)));
    assert!(matches!(after(&refused("InvalidParameterValue")), After::Fail(_)));
    let lost: std::result::Result<(), _> = Err(ProviderError::Unknown { message: "timed out".into() });
    assert_eq!(after(&lost), After::Backoff("timed out".into(), RETRY_LATER_MS));
    let limited: std::result::Result<(), _> =
        Err(ProviderError::RetryLater { message: "slow down".into(), after: std::time::Duration::from_secs(60) });
    assert_eq!(after(&limited), After::Backoff("slow down".into(), 60_000));
}

#[test]
fn a_failed_call_leaves_the_rule_in_error_and_a_lost_answer_only_says_so() {
    let now = Observed::of(&rule(State::Pending, Desired::Present, None));
    let (failed, next) = apply(now.clone(), After::Fail("refused".into()));
    assert_eq!((failed.state, next), (State::Error, Next::After(ERROR_RETRY_MS)));
    let (waiting, next) = apply(now.clone(), After::Backoff("timed out".into(), RETRY_LATER_MS));
    assert_eq!(
        (waiting.state, waiting.message.as_deref(), next),
        (State::Pending, Some("timed out"), Next::Backoff(RETRY_LATER_MS))
    );
    let cleared = Observed { state: State::Error, message: Some("old".into()), ..now };
    assert_eq!(apply(cleared, After::Done).0.state, State::Pending, "an error a call clears is pending again");
}

#[test]
fn events_are_published_on_each_transition_into_ready_error_or_deleted() {
    assert_eq!(event_type(State::Pending, State::Ready), Some("ready"));
    assert_eq!(event_type(State::Ready, State::Error), Some("error"));
    assert_eq!(event_type(State::Deleting, State::Deleted), Some("deleted"));
    assert_eq!(event_type(State::Ready, State::Ready), None);
    assert_eq!(event_type(State::Error, State::Pending), None);
}

#[test]
fn the_sooner_look_wins() {
    assert_eq!(sooner(Next::Drift, Next::Now), Next::Now);
    assert_eq!(sooner(Next::After(5_000), Next::Backoff(30_000)), Next::After(5_000));
    assert_eq!(sooner(Next::Drift, Next::After(300_000)), Next::After(300_000));
    assert_eq!(sooner(Next::Done, Next::Drift), Next::Drift);
}

#[test]
fn the_open_egress_is_made_while_wanted_and_deleted_after() {
    let none = Seen::default();
    assert_eq!(egress_step(true, None, &none), EgressStep::Create);
    let ours = by_name(vec![held("e-1", true, true, Applying::Done)]);
    assert_eq!(egress_step(true, None, &ours), EgressStep::Adopt("e-1".into()));
    let theirs = by_name(vec![held("e-2", false, true, Applying::Done)]);
    assert_eq!(egress_step(true, None, &theirs), EgressStep::Foreign);
    assert_eq!(egress_step(false, None, &theirs), EgressStep::Rest, "never deleted");
    let made = by_id(held("e-1", true, true, Applying::Done));
    assert_eq!(egress_step(true, Some("e-1"), &made), EgressStep::Ready("e-1".into()));
    assert_eq!(egress_step(false, Some("e-1"), &made), EgressStep::Delete("e-1".into()));
    let changed = by_id(held("e-1", true, false, Applying::Done));
    assert_eq!(egress_step(true, Some("e-1"), &changed), EgressStep::Update("e-1".into()));
    assert_eq!(egress_step(true, Some("e-1"), &none), EgressStep::Forget, "ours to make again");
    assert_eq!(egress_step(false, None, &ours), EgressStep::Delete("e-1".into()));
}
