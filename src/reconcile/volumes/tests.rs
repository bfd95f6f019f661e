//! The volume and attachment decisions, phase by phase, for every way a provider call can end:
//! answered, refused, rate-limited, and unknown (the answer lost: a timeout, a 5xx, a dropped
//! connection).
use super::super::outcomes::{backed_off, outcomes};
use super::super::{ACTION_POLL_MS, ERROR_RETRY_MS};
use super::attachments::decide::{self as attach, ASKED, AttachmentObserved, vpc_to_take_off};
use super::*;
use crate::provider::{ActionStatus, BlockVolume, ProviderError, Share, ShareStatus};
use crate::store::state::VolumeFilesystem;

fn ids(names: &[&str]) -> Vec<String> {
    names.iter().map(|n| n.to_string()).collect()
}

#[test]
fn a_vpc_no_tagged_droplet_is_left_in_comes_off_the_share_but_the_last_stays() {
    let cases: [(&[&str], &[&str], Option<&str>); 6] = [
        (&["a"], &[], None),
        (&["a"], &["a"], None),
        (&["a", "b"], &["a"], Some("b")),
        (&["a", "b"], &["a", "b"], None),
        (&["a", "b"], &[], Some("a")),
        (&["b"], &[], None),
    ];
    for (share, used, expected) in cases {
        assert_eq!(vpc_to_take_off(&ids(share), &ids(used)).as_deref(), expected, "{share:?} {used:?}");
    }
}

#[test]
fn a_block_volume_is_seen_at_the_path_the_guest_sees() {
    assert_eq!(device_path("bc-pvol-01"), "/dev/disk/by-id/scsi-0DO_Volume_bc-pvol-01");
}

/// A ready 10 GiB block volume (the snapshot tests start from it too).
pub(in crate::reconcile) fn row() -> volume::Model {
    let t = chrono::Utc::now();
    volume::Model {
        id: "pvol_1".into(),
        tenant_id: "acme".into(),
        project_id: None,
        pool_id: "pool_1".into(),
        provider_account_id: "pacct_1".into(),
        name: "data".into(),
        description: None,
        region: "nyc3".into(),
        kind: VolumeKind::Block,
        network_id: None,
        filesystem: Some(VolumeFilesystem::Ext4),
        delete_with_instance: false,
        source_snapshot_id: None,
        size_from_snapshot: false,
        size_gib: 10,
        observed_size_gib: Some(10),
        state: State::Ready,
        desired_state: Desired::Present,
        provider_id: Some("do-vol-1".into()),
        provider_name: "vpsg-pvol-1".into(),
        device: Some(device_path("vpsg-pvol-1")),
        mount_source: None,
        create_attempts: 1,
        lost: false,
        action_id: None,
        message: None,
        deletion_protection: false,
        version: 3,
        generation: 1,
        created_at: t,
        updated_at: t,
        ready_at: Some(t),
        deleted_at: None,
    }
}

/// A new volume whose create attempt was recorded before the call.
fn creating() -> volume::Model {
    volume::Model {
        state: State::Pending,
        provider_id: None,
        observed_size_gib: None,
        device: None,
        ready_at: None,
        ..row()
    }
}

/// Asked at 12 GiB, seen at 10.
fn growing() -> volume::Model {
    volume::Model { size_gib: 12, ..row() }
}

fn block(size_gib: i64, droplets: &[&str], description: &str) -> BlockVolume {
    BlockVolume {
        id: "do-vol-1".into(),
        name: "vpsg-pvol-1".into(),
        region: "nyc3".into(),
        size_gib,
        droplet_ids: ids(droplets),
        tags: vec![],
        description: description.into(),
    }
}

fn share(status: ShareStatus, size_gib: i64, vpcs: &[&str]) -> Share {
    let active = matches!(status, ShareStatus::Active | ShareStatus::Inactive);
    Share {
        id: "share-1".into(),
        name: "vpsg-pvol-1".into(),
        region: "nyc3".into(),
        size_gib,
        status,
        vpc_ids: ids(vpcs),
        host: active.then(|| "10.0.0.5".into()),
        mount_path: active.then(|| "/share-1".into()),
    }
}

const MARKER: &str = "vps-graph test pvol_1";

#[test]
fn a_create_is_decided_for_every_answer_and_a_lost_one_leaves_the_attempt_counted() {
    for (how, answer) in outcomes(block(10, &[], MARKER)) {
        let (seen, next) = decide::created(&creating(), answer.map(Made::Block), Next::Drift);
        match how {
            "answered" => {
                assert_eq!(
                    (seen.state, seen.provider_id.as_deref(), seen.observed_size_gib),
                    (State::Ready, Some("do-vol-1"), Some(10))
                );
                assert_eq!(next, Next::Drift, "{how}");
            }
            // Refused: this attempt made nothing, so it is not counted; the periodic pass retries.
            "refused" => {
                assert_eq!((seen.state, seen.create_attempts, next), (State::Error, 0, Next::After(ERROR_RETRY_MS)));
            }
            // Nothing known made: the attempt stays counted, so the next run looks by name first.
            _ => {
                assert_eq!((seen.state, seen.create_attempts, seen.provider_id), (State::Pending, 1, None), "{how}");
                assert!(backed_off(next), "{how}: {next:?}");
            }
        }
        if how == "unknown" {
            assert!(seen.message.unwrap().contains("looked up by its name"));
        }
    }
}

#[test]
fn after_a_lost_create_answer_the_lookup_by_name_decides_before_anything_is_sent_again() {
    let v = creating();
    for (how, found) in outcomes(Some(Made::Block(block(10, &[], MARKER)))) {
        let decided = decide::looked_up(&v, found, MARKER, "vps-graph:test", Next::Drift).expect(how);
        match how {
            "answered" => {
                assert_eq!((decided.0.state, decided.0.provider_id.as_deref()), (State::Ready, Some("do-vol-1")))
            }
            "refused" => assert_eq!((decided.0.state, decided.1), (State::Error, Next::After(ERROR_RETRY_MS))),
            _ => assert!(decided.0.state == State::Pending && backed_off(decided.1), "{how}: {decided:?}"),
        }
    }
    // Nothing there: the create is sent (and only then).
    assert!(decide::looked_up(&v, Ok(None), MARKER, "vps-graph:test", Next::Drift).is_none());
    // Someone else's volume by that name is never taken.
    let theirs = decide::looked_up(&v, Ok(Some(Made::Block(block(10, &[], "other")))), MARKER, "t", Next::Drift);
    assert_eq!(theirs.unwrap().0.state, State::Error);
}

#[test]
fn a_resize_asked_while_the_create_was_in_flight_is_sent_as_soon_as_the_volume_is_seen_made() {
    let asked_more = volume::Model { size_gib: 12, ..creating() };
    let (seen, next) = decide::created(&asked_more, Ok(Made::Block(block(10, &[], MARKER))), Next::Drift);
    assert_eq!((seen.state, seen.observed_size_gib, next), (State::Ready, Some(10), Next::Now));
    let found = decide::looked_up(&asked_more, Ok(Some(Made::Block(block(10, &[], MARKER)))), MARKER, "t", Next::Drift);
    assert_eq!(found.unwrap().1, Next::Now);
}

#[test]
fn a_share_found_while_it_is_still_being_made_is_read_again_in_seconds_not_at_the_drift_read() {
    let v = volume::Model { kind: VolumeKind::Shared, ..creating() };
    let found = Ok(Some(Made::Share(share(ShareStatus::Creating, 50, &["vpc-1"]))));
    let (seen, next) = decide::looked_up(&v, found, MARKER, "t", Next::Drift).unwrap();
    assert_eq!((seen.state, next), (State::Pending, Next::After(ACTION_POLL_MS)));
}

#[test]
fn a_resize_is_looked_for_before_it_is_sent_so_a_lost_answer_is_followed_not_refused() {
    let v = growing();
    // A resize the provider is running (one whose answer was lost) is followed.
    let (seen, next) = decide::resize_running(&v, Ok(Some(77))).unwrap();
    assert_eq!(
        (seen.state, seen.action_id.as_deref(), next),
        (State::Updating, Some("77"), Next::After(ACTION_POLL_MS))
    );
    assert!(decide::resize_running(&v, Ok(None)).is_none());
    // Carried out already: ready at the provider's size, with no call.
    let (seen, _) = decide::resize_looked(&v, Ok(Some(12))).unwrap();
    assert_eq!((seen.state, seen.observed_size_gib), (State::Ready, Some(12)));
    // Still smaller: the resize is sent.
    assert!(decide::resize_looked(&v, Ok(Some(10))).is_none());
    // Gone: lost for good.
    assert!(decide::resize_looked(&v, Ok(None)).unwrap().0.lost);
}

#[test]
fn a_resize_is_decided_for_every_answer() {
    for (how, answer) in outcomes(Pending::Action(9)) {
        let (seen, next) = decide::resize_sent(&growing(), answer);
        match how {
            "answered" => assert_eq!((seen.state, seen.action_id.as_deref()), (State::Updating, Some("9"))),
            "refused" => assert_eq!((seen.state, next), (State::Error, Next::After(ERROR_RETRY_MS))),
            // Not known to have started: no action recorded, so the next run looks first.
            _ => assert!(seen.state == State::Ready && seen.action_id.is_none() && backed_off(next), "{how}"),
        }
    }
}

#[test]
fn a_resize_in_flight_is_followed_to_the_size_the_provider_shows() {
    let v = volume::Model { action_id: Some("9".into()), state: State::Updating, ..growing() };
    let polled = |status| decide::resize_polled(&v, status);
    assert_eq!(polled(Ok(Some(ActionStatus::InProgress))).unwrap().1, Next::After(ACTION_POLL_MS));
    assert!(polled(Ok(Some(ActionStatus::Completed))).is_none());
    let errored = polled(Ok(Some(ActionStatus::Errored))).unwrap().0;
    assert_eq!((errored.state, errored.action_id), (State::Error, None));
    let unknown = polled(Err(ProviderError::Unknown { message: "reset".into() })).unwrap();
    assert!(unknown.0.state == State::Updating && unknown.0.action_id.is_some() && backed_off(unknown.1));
    let (done, _) = decide::resize_done(&v, Ok(Some(12)));
    assert_eq!((done.state, done.observed_size_gib, done.action_id), (State::Ready, Some(12), None));
    // A share's resize is known by its effect, and failed once it has not shown in 10 minutes.
    let nfs = volume::Model { kind: VolumeKind::Shared, ..v };
    let asked = 1_000;
    let followed = |now_ms, size| {
        decide::share_resize_followed(&nfs, 12, asked, now_ms, Ok(Some(share(ShareStatus::Active, size, &[]))))
    };
    assert_eq!(followed(asked + 5_000, 10).1, Next::After(ACTION_POLL_MS));
    assert_eq!(followed(asked + 5_000, 12).0.state, State::Ready);
    assert_eq!(followed(asked + 10 * 60_000 + 1, 10).0.state, State::Error);
}

#[test]
fn a_delete_is_decided_for_every_answer_and_a_lost_create_is_looked_up_not_made() {
    assert_eq!(decide::delete_target(&row()), DeleteTarget::Known("do-vol-1".into()));
    assert_eq!(decide::delete_target(&creating()), DeleteTarget::LookUp);
    assert_eq!(decide::delete_target(&volume::Model { create_attempts: 0, ..creating() }), DeleteTarget::Nothing);
    assert_eq!(decide::delete_target(&volume::Model { lost: true, ..row() }), DeleteTarget::Nothing);
    let v = volume::Model { desired_state: Desired::Absent, state: State::Deleting, ..row() };
    for (how, answer) in outcomes(()) {
        let (seen, next) = decide::deleted(&v, answer);
        match how {
            "answered" => assert_eq!((seen.state, next), (State::Deleted, Next::Done)),
            // Refused (attached: its Droplet just deleted): asked again shortly, still deleting.
            "refused" => assert_eq!((seen.state, next), (State::Deleting, Next::After(RETRY_LATER_MS))),
            _ => assert!(seen.state == State::Deleting && backed_off(next), "{how}"),
        }
    }
}

pub(super) fn attachment(
    state: State,
    desired: Desired,
    action: Option<&str>,
    message: Option<&str>,
) -> attachment::Model {
    let t = chrono::Utc::now();
    attachment::Model {
        id: "patt_1".into(),
        volume_id: "pvol_1".into(),
        instance_id: "inst_1".into(),
        state,
        desired_state: desired,
        action_id: action.map(str::to_owned),
        message: message.map(str::to_owned),
        version: 1,
        generation: 1,
        created_at: t,
        updated_at: t,
        ready_at: None,
        deleted_at: None,
    }
}

#[test]
fn an_attach_is_decided_for_every_answer_and_looked_for_before_it_is_sent() {
    let now = AttachmentObserved::of(&attachment(State::Pending, Desired::Present, None, None));
    // An attach running (one whose answer was lost) is followed; one carried out is ready.
    assert_eq!(attach::attach_running(&now, Ok(Some(5))).unwrap().0.action_id.as_deref(), Some("5"));
    assert_eq!(attach::attach_looked(&now, Ok(Some(block(10, &["d1"], ""))), "d1").unwrap().0.state, State::Ready);
    assert!(attach::attach_looked(&now, Ok(Some(block(10, &[], ""))), "d1").is_none());
    for (how, answer) in outcomes(5) {
        match attach::attach_sent(now.clone(), answer) {
            Ok((seen, next)) => match how {
                "answered" => assert_eq!((seen.action_id.as_deref(), next), (Some("5"), Next::After(ACTION_POLL_MS))),
                "refused" => assert_eq!((seen.state, next), (State::Error, Next::After(ERROR_RETRY_MS))),
                _ => assert!(seen.state == State::Pending && seen.action_id.is_none() && backed_off(next), "{how}"),
            },
            Err(()) => panic!("{how}: not an already-attached refusal"),
        }
    }
    let message = "This volume is already attached".into();
    let already = Err(ProviderError::Refused { status: 422, code: crate::provider::Refusal::AlreadyAttached, message });
    assert!(attach::attach_sent(now.clone(), already).is_err());
    assert_eq!(attach::already_attached(now.clone(), Ok(Some(block(10, &["d1"], ""))), "d1").0.state, State::Ready);
    // Attached to another machine: an error, and nothing is moved.
    assert_eq!(attach::already_attached(now, Ok(Some(block(10, &["d2"], ""))), "d1").0.state, State::Error);
}

#[test]
fn a_detach_is_decided_for_every_answer_and_a_lost_one_is_found_done() {
    let a = attachment(State::Deleting, Desired::Absent, None, None);
    let now = AttachmentObserved::of(&a);
    for (how, answer) in outcomes(6) {
        let (seen, next) = attach::detach_sent(now.clone(), answer);
        match how {
            "answered" => assert_eq!((seen.action_id.as_deref(), seen.message.as_deref()), (Some("6"), Some(ASKED))),
            "refused" => assert_eq!((seen.state, next), (State::Error, Next::After(ERROR_RETRY_MS))),
            _ => assert!(seen.state == State::Deleting && seen.action_id.is_none() && backed_off(next), "{how}"),
        }
    }
    let message = "Attachment not found".into();
    let not_there =
        Err(ProviderError::Refused { status: 422, code: crate::provider::Refusal::AttachmentNotFound, message });
    assert_eq!(attach::detach_sent(now.clone(), not_there).0.state, State::Deleted);
    // A detach asked whose answer was lost, carried out: the volume is off the Droplet.
    let asked = attachment(State::Deleting, Desired::Absent, None, Some(ASKED));
    let off = attach::detach_looked(&AttachmentObserved::of(&asked), &asked, Ok(Some(block(10, &[], ""))), "d1");
    assert_eq!(off.unwrap().0.state, State::Deleted);
    assert!(attach::detach_looked(&now, &a, Ok(Some(block(10, &["d1"], ""))), "d1").is_none());
}

#[test]
fn an_action_in_flight_is_polled_and_one_the_provider_forgot_ended_badly() {
    let now = AttachmentObserved::of(&attachment(State::Pending, Desired::Present, Some("5"), None));
    assert!(attach::polled(&now, Ok(Some(ActionStatus::InProgress))).is_err());
    assert_eq!(attach::polled(&now, Ok(Some(ActionStatus::Completed))), Ok(true));
    assert_eq!(attach::polled(&now, Ok(None)), Ok(false));
    let failed = attach::attach_ended(now.clone(), None, "d1").0;
    assert_eq!((failed.state, failed.action_id), (State::Error, None));
    // Completed without attaching it (the Droplet went away): asked again.
    let again = attach::attach_ended(now, Some(Ok(Some(block(10, &[], "")))), "d1").0;
    assert_eq!((again.state, again.action_id), (State::Pending, None));
}

#[test]
fn a_share_attach_is_decided_for_every_answer_and_waits_for_its_effect() {
    let a = attachment(State::Pending, Desired::Present, None, None);
    let now = AttachmentObserved::of(&a);
    let droplet = crate::provider::Droplet {
        id: "d1".into(),
        name: "web".into(),
        status: crate::provider::DropletStatus::Active,
        region: "nyc3".into(),
        vpc_id: Some("vpc-2".into()),
        volume_ids: vec![],
        tags: vec![],
    };
    let s = share(ShareStatus::Active, 50, &["vpc-1"]);
    assert_eq!(attach::before_share_attach(&now, &s, &droplet, 0, 1_000), Ok("vpc-2".into()));
    for (how, answer) in outcomes(None) {
        let (seen, next) = attach::share_attach_sent(now.clone(), "vpc-2".into(), answer);
        match how {
            "answered" => assert_eq!(seen.action_id.as_deref(), Some("vpc:vpc-2")),
            "refused" => assert_eq!((seen.state, next), (State::Error, Next::After(ERROR_RETRY_MS))),
            _ => assert!(seen.action_id.is_none() && backed_off(next), "{how}"),
        }
    }
    let asked = AttachmentObserved { action_id: Some("vpc:vpc-2".into()), ..now };
    assert_eq!(attach::before_share_attach(&asked, &s, &droplet, 0, 1_000).unwrap_err().1, Next::After(ACTION_POLL_MS));
    let stale = attach::before_share_attach(&asked, &s, &droplet, 0, 10 * 60_000 + 1).unwrap_err().0;
    assert_eq!((stale.state, stale.action_id), (State::Error, None));
    let on = share(ShareStatus::Active, 50, &["vpc-1", "vpc-2"]);
    assert_eq!(attach::before_share_attach(&asked, &on, &droplet, 0, 1_000).unwrap_err().0.state, State::Ready);
}

#[test]
fn a_stored_action_reads_back_as_the_action_that_was_written() {
    for pending in [
        Pending::Action(42),
        Pending::ShareResize { size_gib: 60, asked_ms: 1_764_000_000_000 },
        Pending::VpcOn("vpc-1".into()),
        Pending::VpcOff("vpc-1".into()),
    ] {
        assert_eq!(Pending::parse(&pending.to_string()), Some(pending));
    }
    assert_eq!(Pending::parse("share-resize:60"), None);
    assert_eq!(Pending::parse("resize"), None);
}

#[test]
fn a_drift_read_that_finds_a_droplets_vpc_off_the_share_attaches_it_again_by_its_own_runs() {
    let now = AttachmentObserved::of(&attachment(State::Ready, Desired::Present, None, None));
    let on = |vpc: &str| {
        Ok(Some(crate::provider::Droplet {
            id: "d1".into(),
            name: "web".into(),
            status: crate::provider::DropletStatus::Active,
            region: "nyc3".into(),
            vpc_id: Some(vpc.into()),
            volume_ids: vec![],
            tags: vec![],
        }))
    };
    let vpcs = ids(&["vpc-1"]);
    assert_eq!(attach::vpc_taken_off(&now, &vpcs, on("vpc-1")), None, "on the share: nothing to do");
    let (again, next) = attach::vpc_taken_off(&now, &vpcs, on("vpc-2")).expect("off the share");
    assert_eq!((again.state, again.message.as_deref(), next), (State::Pending, Some(attach::VPC_TAKEN_OFF), Next::Now));
    assert_eq!(attach::vpc_taken_off(&now, &vpcs, Ok(None)), None, "a Droplet gone is its instance's to find");
    let busy = Err(ProviderError::RetryLater { message: "slow".into(), after: std::time::Duration::from_secs(1) });
    assert_eq!(attach::vpc_taken_off(&now, &vpcs, busy), None, "an unread Droplet concludes nothing");
}

/// Issue 33: a restore that named no size grows to the snapshot's size as the provider reports
/// it; one that named a size below it fails; a snapshot being deleted fails the restore before
/// anything is booked.
#[test]
fn a_restore_grows_to_a_larger_snapshot_only_when_it_named_no_size_and_the_snapshot_is_wanted() {
    let taken = crate::store::entity::provider_snapshot::Model {
        state: State::Ready,
        provider_id: Some("snap-9".into()),
        min_disk_size: 20,
        ..super::super::snapshots::tests::taking()
    };
    let restore = volume::Model { source_snapshot_id: Some("psnap_1".into()), provider_id: None, ..creating() };
    let no_size = volume::Model { size_from_snapshot: true, ..restore.clone() };
    assert_eq!(decide::restore_source(&no_size, "psnap_1", Some(&taken)), decide::RestoreSource::Grow(20));
    let named = decide::restore_source(&restore, "psnap_1", Some(&taken));
    assert!(
        matches!(&named, decide::RestoreSource::Not((o, _)) if o.message.as_deref().is_some_and(|m| m.contains("more than the 10 GiB"))),
        "{named:?}"
    );
    let fits = volume::Model { size_gib: 20, ..no_size.clone() };
    assert_eq!(decide::restore_source(&fits, "psnap_1", Some(&taken)), decide::RestoreSource::Ready("snap-9".into()));
    let going = crate::store::entity::provider_snapshot::Model { desired_state: Desired::Absent, ..taken };
    let failed = decide::restore_source(&no_size, "psnap_1", Some(&going));
    assert!(
        matches!(&failed, decide::RestoreSource::Not((o, _)) if o.message.as_deref().is_some_and(|m| m.contains("deleted before the restore"))),
        "{failed:?}"
    );
}
