//! The snapshot decisions, phase by phase, for every way a provider call can end: answered,
//! refused, rate-limited, and unknown (the answer lost: a timeout, a 5xx, a dropped connection).

use super::super::outcomes::{backed_off, outcomes};
use super::super::{ACTION_POLL_MS, ERROR_RETRY_MS, Next};
use super::decide::*;
use crate::provider::{ProviderError, Snapshot};
use crate::store::entity::provider_snapshot as snapshot;
use crate::store::state::{Desired, State, VolumeKind};

/// A snapshot whose attempt was recorded before the call, of a 10 GiB volume.
pub(in crate::reconcile) fn taking() -> snapshot::Model {
    let t = chrono::Utc::now();
    snapshot::Model {
        id: "psnap_1".into(),
        tenant_id: "acme".into(),
        project_id: None,
        pool_id: "pool_1".into(),
        provider_account_id: "pacct_1".into(),
        volume_id: "pvol_1".into(),
        volume_kind: VolumeKind::Block,
        region: "nyc3".into(),
        name: "nightly".into(),
        state: State::Pending,
        desired_state: Desired::Present,
        provider_id: None,
        provider_name: "vpsg-psnap-1".into(),
        size_gib: None,
        min_disk_size: 10,
        create_attempts: 1,
        lost: false,
        message: None,
        deletion_protection: false,
        schedule_id: None,
        version: 1,
        generation: 1,
        created_at: t,
        updated_at: t,
        ready_at: None,
        deleted_at: None,
    }
}

fn made(ready: bool, min_disk_size: Option<i64>) -> Snapshot {
    Snapshot { id: "snap-9".into(), name: "vpsg-psnap-1".into(), size_gib: 2.5, min_disk_size, ready, failed: false }
}

#[test]
fn a_snapshot_is_decided_for_every_answer_and_a_lost_one_leaves_the_attempt_counted() {
    for (how, answer) in outcomes(Some(made(true, Some(12)))) {
        let (seen, next) = taken(&taking(), answer);
        match how {
            "answered" => {
                assert_eq!((seen.state, seen.provider_id.as_deref(), next), (State::Ready, Some("snap-9"), Next::Drift))
            }
            "refused" => {
                assert_eq!((seen.state, seen.create_attempts, next), (State::Error, 0, Next::After(ERROR_RETRY_MS)))
            }
            // Nothing known made: counted, so the next run looks it up by name before it asks again.
            _ => assert!(seen.state == State::Pending && seen.create_attempts == 1 && backed_off(next), "{how}"),
        }
    }
    // A share's snapshot answers no id at first: read again in seconds.
    assert_eq!(taken(&taking(), Ok(None)).1, Next::After(ACTION_POLL_MS));
}

#[test]
fn a_snapshot_records_the_providers_min_disk_size_not_the_size_asked_when_it_was_recorded() {
    let (seen, _) = taken(&taking(), Ok(Some(made(true, Some(18)))));
    assert_eq!(seen.min_disk_size, 18);
    // A share's snapshot has no min_disk_size at the provider: the recorded size stands.
    assert_eq!(read(&taking(), Ok(Some(made(true, None)))).0.min_disk_size, 10);
}

#[test]
fn after_a_lost_answer_the_lookup_by_name_decides_before_anything_is_sent_again() {
    for (how, found) in outcomes(Some(made(false, Some(10)))) {
        let (seen, next) = looked_up(&taking(), found).expect(how);
        match how {
            "answered" => assert_eq!((seen.provider_id.as_deref(), next), (Some("snap-9"), Next::Now)),
            // A look that failed sends nothing: it is said, and looked at again.
            _ => assert!(seen.provider_id.is_none() && seen.message.is_some() && seen.state == State::Pending, "{how}"),
        }
    }
    assert!(looked_up(&taking(), Ok(None)).is_none());
}

#[test]
fn a_made_snapshot_is_read_until_ready_and_one_gone_outside_is_lost() {
    let s = snapshot::Model { provider_id: Some("snap-9".into()), ..taking() };
    assert_eq!(read(&s, Ok(Some(made(false, None)))).1, Next::After(ACTION_POLL_MS));
    assert_eq!(read(&s, Ok(Some(made(true, None)))).0.state, State::Ready);
    let failed = Snapshot { failed: true, ..made(false, None) };
    assert_eq!(read(&s, Ok(Some(failed))).0.state, State::Error);
    let gone = read(&s, Ok(None)).0;
    assert!(gone.lost && gone.state == State::Error);
    let (busy, next) = read(&s, Err(ProviderError::Unknown { message: "reset".into() }));
    assert!(busy.state == State::Pending && !busy.lost && backed_off(next));
}

#[test]
fn a_snapshot_waits_for_its_volume_and_one_whose_volume_went_first_is_lost() {
    use crate::store::entity::provider_volume as volume;
    // Not made yet.
    let v = volume::Model {
        state: State::Pending,
        provider_id: None,
        observed_size_gib: None,
        ..super::super::volumes::tests::row()
    };
    let s = taking();
    assert_eq!(before_take(&s, Some(&v)).unwrap_err().1, Next::After(ERROR_RETRY_MS));
    let made_volume = volume::Model { provider_id: Some("do-vol-1".into()), ..v.clone() };
    assert_eq!(before_take(&s, Some(&made_volume)), Ok("do-vol-1".into()));
    let going = volume::Model { desired_state: Desired::Absent, ..v };
    assert!(before_take(&s, Some(&going)).unwrap_err().0.lost);
    assert!(before_take(&s, None).unwrap_err().0.lost);
}

#[test]
fn a_snapshot_delete_is_decided_for_every_answer_and_a_lost_take_is_looked_up() {
    let s = snapshot::Model { desired_state: Desired::Absent, state: State::Deleting, ..taking() };
    assert_eq!(delete_target(&s, Some("do-vol-1")), DeleteTarget::LookUp("do-vol-1".into()));
    assert_eq!(delete_target(&s, None), DeleteTarget::Nothing);
    assert_eq!(delete_target(&snapshot::Model { create_attempts: 0, ..s.clone() }, Some("v")), DeleteTarget::Nothing);
    let known = snapshot::Model { provider_id: Some("snap-9".into()), ..s.clone() };
    assert_eq!(delete_target(&known, None), DeleteTarget::Known("snap-9".into()));
    for (how, answer) in outcomes(true) {
        let (seen, next) = deleted(&s, answer);
        match how {
            "answered" => assert_eq!((seen.state, next), (State::Deleted, Next::Done)),
            "refused" => assert_eq!((seen.state, next), (State::Deleting, Next::After(ERROR_RETRY_MS))),
            _ => assert!(seen.state == State::Deleting && backed_off(next), "{how}"),
        }
    }
}

#[test]
fn snapshot_events_name_the_state_it_became() {
    assert_eq!(event_type(State::Pending, State::Ready), "ready");
    assert_eq!(event_type(State::Ready, State::Ready), "updated");
    assert_eq!(event_type(State::Pending, State::Error), "error");
    assert_eq!(event_type(State::Deleting, State::Deleted), "deleted");
    assert_eq!(event_type(State::Ready, State::Deleting), "updated");
}
