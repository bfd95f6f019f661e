//! The address decisions, phase by phase, for every way a provider call can end: answered,
//! refused, rate-limited, and unknown (the answer lost: a timeout, a 5xx, a dropped connection).

use super::super::outcomes::{backed_off, outcomes};
use super::super::{ACTION_POLL_MS, ERROR_RETRY_MS, Next, RETRY_LATER_MS};
use super::decide::*;
use crate::provider::{ActionStatus, ProviderResult, ReservedAddress};
use crate::store::entity::provider_address as address;
use crate::store::state::{AddressFamily, Assignment, Desired, State};

fn row(fingerprint: Option<&str>) -> address::Model {
    let t = chrono::Utc::now();
    address::Model {
        id: "paddr_1".into(),
        tenant_id: "acme".into(),
        project_id: None,
        pool_id: "pool_1".into(),
        provider_account_id: "pacct_1".into(),
        name: "ingress".into(),
        region: "nyc3".into(),
        family: AddressFamily::Ipv6,
        state: State::Ready,
        desired_state: Desired::Present,
        address: Some("2604::1".into()),
        fingerprint: fingerprint.map(str::to_owned),
        reserve_attempts: 1,
        lost: false,
        message: None,
        instance_id: Some("inst_1".into()),
        assignment_state: Assignment::Ready,
        assignment_message: None,
        action_id: None,
        deletion_protection: false,
        version: 3,
        generation: 1,
        created_at: t,
        updated_at: t,
        ready_at: Some(t),
        deleted_at: None,
    }
}

fn seen(region: &str, reserved_at: Option<&str>) -> Option<ReservedAddress> {
    Some(ReservedAddress {
        ip: "2604::1".into(),
        region: region.into(),
        droplet_id: None,
        locked: false,
        reserved_at: reserved_at.map(str::to_owned),
    })
}

#[test]
fn an_address_is_ours_only_while_the_provider_shows_our_reservation() {
    let ours = row(Some("2026-12-01T10:00:00.123Z"));
    assert!(still_ours(&ours, "2604::1", seen("nyc3", Some("2026-12-01T10:00:00.123Z"))).is_ok());
    assert!(still_ours(&ours, "2604::1", None).unwrap_err().contains("gone"));
    assert!(still_ours(&ours, "2604::1", seen("sfo3", Some("2026-12-01T10:00:00.123Z"))).is_err());
    let other = still_ours(&ours, "2604::1", seen("nyc3", Some("2026-12-01T11:00:00.000Z")));
    assert!(other.unwrap_err().contains("another reservation"));
    // A reserved IPv4 has no fingerprint: its region alone can tell.
    let ipv4 = row(None);
    assert!(still_ours(&ipv4, "2604::1", seen("nyc3", None)).is_ok());
}

#[test]
fn a_lost_address_forgets_its_ip_and_instance() {
    let lost = Observed::of(&row(None)).lost("released".into());
    assert_eq!((lost.address, lost.instance_id, lost.lost), (None, None, true));
    assert_eq!((lost.state, lost.assignment_state), (State::Error, Assignment::None));
}

#[test]
fn address_events_name_what_changed() {
    let before = row(None);
    let now = Observed::of(&before);
    assert_eq!(event_type(&before, &now.clone().assignment(Assignment::None, None)), "unassigned");
    assert_eq!(event_type(&before, &now.clone().assignment(Assignment::Error, Some("x".into()))), "error");
    assert_eq!(event_type(&before, &now.clone().state(State::Deleted, None)), "deleted");
    let pending = address::Model { assignment_state: Assignment::Pending, ..row(None) };
    assert_eq!(event_type(&pending, &Observed::of(&pending).assignment(Assignment::Ready, None)), "assigned");
    assert_eq!(event_type(&before, &Observed { message: Some("busy".into()), ..now }), "updated");
}

fn free_at(region: &str) -> ReservedAddress {
    ReservedAddress { ip: "2604::1".into(), region: region.into(), droplet_id: None, locked: false, reserved_at: None }
}

/// A new address whose reserve attempt was recorded before the call.
fn reserving() -> address::Model {
    address::Model {
        state: State::Pending,
        address: None,
        instance_id: None,
        assignment_state: Assignment::None,
        reserve_attempts: 1,
        ..row(None)
    }
}

#[test]
fn a_reserve_is_sent_once_and_one_whose_answer_nobody_wrote_back_is_lost_never_sent_again() {
    assert_eq!(before_reserve(&address::Model { reserve_attempts: 0, ..reserving() }), Step::Call);
    assert_eq!(before_reserve(&reserving()), Step::Lost(Next::Drift), "the process died during the call");
}

#[test]
fn every_way_a_reserve_can_end_is_decided() {
    let made = ReservedAddress { reserved_at: Some("2026-12-02T10:00:00Z".into()), ..free_at("nyc3") };
    for (case, outcome) in outcomes(made) {
        let (o, next) = reserved(&reserving(), &outcome);
        match case {
            "answered" => {
                assert_eq!(
                    (o.address.as_deref(), o.fingerprint.as_deref()),
                    (Some("2604::1"), Some("2026-12-02T10:00:00Z"))
                );
                assert_eq!((o.state, next, o.reserve_attempts), (State::Ready, Next::Now, 1), "{case}");
            }
            "refused" => {
                assert_eq!((o.state, o.message.as_deref()), (State::Error, Some("the provider said no")), "{case}");
                assert_eq!(
                    (o.reserve_attempts, next),
                    (0, Next::After(ERROR_RETRY_MS)),
                    "reserved nothing: sent again"
                );
            }
            "rate-limited" => {
                assert_eq!((o.state, o.reserve_attempts, o.lost), (State::Pending, 0, false), "reserved nothing");
                assert!(backed_off(next), "{case}: {next:?}");
            }
            _ => {
                assert_eq!((o.state, o.lost, o.address.as_deref()), (State::Error, true, None), "{case}");
                assert!(
                    o.message.unwrap().starts_with(LOST_RESERVE),
                    "{case}: the tenant is told to check the account"
                );
                assert_eq!((o.reserve_attempts, next), (1, Next::Drift), "never sent again");
            }
        }
    }
}

#[test]
fn a_reserve_answered_after_the_tenant_deleted_the_address_keeps_its_ip_for_the_release() {
    let deleting = address::Model { desired_state: Desired::Absent, state: State::Deleting, ..reserving() };
    let (o, next) = reserved(&deleting, &Ok(free_at("nyc3")));
    assert_eq!((o.address.as_deref(), o.state, next), (Some("2604::1"), State::Deleting, Next::Now));
}

#[test]
fn a_release_looks_first_and_a_lost_reserve_is_said_whatever_order_the_delete_came_in() {
    let deleting = |a: address::Model| address::Model { desired_state: Desired::Absent, state: State::Deleting, ..a };
    assert_eq!(before_release(&deleting(reserving()), None), Step::Lost(Next::Now), "reserve outcome unknown");
    let never_sent = deleting(address::Model { reserve_attempts: 0, ..reserving() });
    assert!(matches!(before_release(&never_sent, None), Step::Write(o, Next::Done) if o.state == State::Deleted));
    let ours = deleting(row(None));
    assert_eq!(before_release(&ours, Some(true)), Step::Call);
    let theirs = before_release(&ours, Some(false));
    assert!(matches!(theirs, Step::Write(o, Next::Done) if o.state == State::Deleted), "never released by us");
}

#[test]
fn every_way_a_release_can_end_is_decided() {
    let ours = address::Model { desired_state: Desired::Absent, state: State::Deleting, ..row(None) };
    for (case, outcome) in outcomes(true) {
        let (o, next) = released(&ours, &outcome);
        match case {
            "answered" => assert_eq!((o.state, next), (State::Deleted, Next::Done), "{case}"),
            "refused" => assert_eq!((o.state, next), (State::Deleting, Next::After(RETRY_LATER_MS)), "{case}"),
            // Unknown: the next run looks before it releases again (the IP may be gone already).
            _ => assert!(o.state == State::Deleting && backed_off(next), "{case}: {o:?} {next:?}"),
        }
    }
    assert_eq!(released(&ours, &Ok(false)).0.state, State::Deleted, "already gone at the provider");
}

#[test]
fn an_assign_is_decided_on_what_the_provider_shows_so_a_lost_answer_is_found_done() {
    let asked = address::Model { assignment_state: Assignment::Pending, ..row(None) };
    let on = |droplet: &str| ReservedAddress { droplet_id: Some(droplet.into()), ..free_at("nyc3") };
    assert!(
        matches!(before_assign(&asked, &on("d-1"), "d-1"), Step::Write(o, Next::Drift) if o.assignment_state == Assignment::Ready),
        "already on the machine (an assign whose answer was lost): READY, no second call"
    );
    let elsewhere = before_assign(&asked, &on("d-9"), "d-1");
    assert!(
        matches!(elsewhere, Step::Write(o, Next::After(ERROR_RETRY_MS)) if o.assignment_state == Assignment::Error)
    );
    let busy = ReservedAddress { locked: true, ..free_at("nyc3") };
    assert!(matches!(before_assign(&asked, &busy, "d-1"), Step::Write(_, Next::After(ACTION_POLL_MS))));
    assert_eq!(before_assign(&asked, &free_at("nyc3"), "d-1"), Step::Call);
}

#[test]
fn every_way_an_assign_or_unassign_can_end_is_decided() {
    let assigning = address::Model { assignment_state: Assignment::Pending, ..row(None) };
    let unassigning = address::Model { assignment_state: Assignment::Deleting, ..row(None) };
    type Decide = fn(&address::Model, &ProviderResult<u64>) -> (Observed, Next);
    for (asked, decide) in [(&assigning, assigned as Decide), (&unassigning, unassigned as Decide)] {
        for (case, outcome) in outcomes(7_u64) {
            let (o, next) = decide(asked, &outcome);
            match case {
                "answered" => {
                    assert_eq!((o.action_id.as_deref(), next), (Some("7"), Next::After(ACTION_POLL_MS)), "{case}");
                }
                "refused" => assert_eq!((o.assignment_state, next), (Assignment::Error, Next::After(ERROR_RETRY_MS))),
                // Rate-limited or unknown: the next run looks at the address before it asks again.
                _ => {
                    assert_eq!((o.assignment_state, o.action_id.as_deref()), (asked.assignment_state, None), "{case}");
                    assert!(backed_off(next), "{case}: {next:?}");
                }
            }
        }
    }
    assert_eq!(assigned(&assigning, &Ok(7)).0.assignment_state, Assignment::Pending);
}

#[test]
fn an_unassign_only_takes_it_off_the_machine_vps_graph_put_it_on() {
    let unassigning = address::Model { assignment_state: Assignment::Deleting, ..row(None) };
    let on = ReservedAddress { droplet_id: Some("d-1".into()), ..free_at("nyc3") };
    assert_eq!(before_unassign(&unassigning, &on, Some("d-1")), Step::Call);
    for (found, machine) in [(free_at("nyc3"), Some("d-1")), (on, Some("d-2")), (free_at("nyc3"), None)] {
        let step = before_unassign(&unassigning, &found, machine);
        assert!(matches!(step, Step::Write(ref o, Next::Drift) if o.assignment_state == Assignment::None), "{step:?}");
    }
}

#[test]
fn every_way_a_running_action_can_be_seen_is_decided() {
    let assigning = address::Model { assignment_state: Assignment::Pending, action_id: Some("7".into()), ..row(None) };
    let unassigning = address::Model { assignment_state: Assignment::Deleting, ..assigning.clone() };
    assert_eq!(followed(&assigning, &Ok(Some(ActionStatus::InProgress))).1, Next::After(ACTION_POLL_MS));
    let (failed, next) = followed(&assigning, &Ok(Some(ActionStatus::Errored)));
    assert_eq!(
        (failed.assignment_state, failed.action_id, next),
        (Assignment::Error, None, Next::After(ERROR_RETRY_MS))
    );
    let (failed, _) = followed(&unassigning, &Ok(Some(ActionStatus::Errored)));
    assert_eq!((failed.assignment_state, failed.action_id), (Assignment::Deleting, None), "still wanted off");
    for seen in [Ok(Some(ActionStatus::Completed)), Ok(None)] {
        let (o, next) = followed(&assigning, &seen);
        assert_eq!((o.action_id, next), (None, Next::Now), "the address shows what happened");
    }
    for (case, outcome) in outcomes(None).into_iter().skip(2) {
        let (o, next) = followed(&assigning, &outcome);
        assert!(o.action_id.is_some() && backed_off(next), "{case}: followed again later");
    }
}
