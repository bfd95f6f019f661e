//! What a run decides of a volume from its row and what the provider showed or answered: pure
//! functions, one per phase, so that every answer of every call (made, refused, rate-limited,
//! unknown) is a decided case, named and tested in `tests.rs`. A phase that answers `None` has
//! settled nothing: the run goes on to its next look or call.
// `Err` here is a decision the run writes, made once per run: not worth a box.
#![allow(clippy::result_large_err)]
use super::super::{ACTION_POLL_MS, ERROR_RETRY_MS, Next, is_failure, retry_after};
use crate::provider::{ActionStatus, BlockVolume, ProviderError, ProviderResult, Share, ShareStatus};
use crate::store::entity::{provider_snapshot as snapshot, provider_volume as volume};
use crate::store::state::{Desired, State};
use crate::store::status::StatusWrite;

/// A decision: what to write, and when to look again.
pub(super) type Decided<T> = (T, Next);

/// The volume fields a run writes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Observed {
    pub state: State,
    pub provider_id: Option<String>,
    pub observed_size_gib: Option<i64>,
    pub device: Option<String>,
    pub mount_source: Option<String>,
    pub create_attempts: i32,
    pub lost: bool,
    pub action_id: Option<String>,
    pub message: Option<String>,
}

impl Observed {
    pub fn of(v: &volume::Model) -> Self {
        Observed {
            state: v.state,
            provider_id: v.provider_id.clone(),
            observed_size_gib: v.observed_size_gib,
            device: v.device.clone(),
            mount_source: v.mount_source.clone(),
            create_attempts: v.create_attempts,
            lost: v.lost,
            action_id: v.action_id.clone(),
            message: v.message.clone(),
        }
    }

    pub fn state(mut self, state: State, message: Option<String>) -> Self {
        self.state = state;
        self.message = message;
        self
    }

    pub fn said(mut self, message: impl Into<String>) -> Self {
        self.message = Some(message.into());
        self
    }

    /// A provider action in flight: the volume is updating until it is done.
    fn updating(self, pending: &Pending) -> Self {
        Observed { action_id: Some(pending.to_string()), ..self.state(State::Updating, None) }
    }

    /// The row's write: what the provider holds and did as facts, the state and message as
    /// decided at the generation the run read.
    pub fn status(&self, v: &volume::Model) -> StatusWrite {
        StatusWrite::of(&v.id, v.generation)
            .fact(volume::Column::ProviderId, self.provider_id.clone())
            .fact(volume::Column::ObservedSizeGib, self.observed_size_gib)
            .fact(volume::Column::Device, self.device.clone())
            .fact(volume::Column::MountSource, self.mount_source.clone())
            .fact(volume::Column::CreateAttempts, self.create_attempts)
            .fact(volume::Column::Lost, self.lost)
            .fact(volume::Column::ActionId, self.action_id.clone())
            .decided(volume::Column::Message, self.message.clone())
            .state(self.state)
    }
}

/// A provider action in flight, as a row records it (`action_id`): a DigitalOcean action, polled
/// by its id, or a share action, which has no status and is known by its effect on the share.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Pending {
    Action(u64),
    /// A share resize to `size_gib`, asked at `asked_ms` (the app's clock).
    ShareResize {
        size_gib: i64,
        asked_ms: i64,
    },
    /// A share attach: the Droplet's VPC put on the share.
    VpcOn(String),
    /// A share detach: a VPC taken off the share.
    VpcOff(String),
}

impl Pending {
    /// The action a row records; None for words no version of this code wrote.
    pub fn parse(stored: &str) -> Option<Pending> {
        if let Some(asked) = stored.strip_prefix("share-resize:") {
            let (size, at) = asked.split_once(':')?;
            return Some(Pending::ShareResize { size_gib: size.parse().ok()?, asked_ms: at.parse().ok()? });
        }
        if let Some(vpc) = stored.strip_prefix("vpc-off:") {
            return Some(Pending::VpcOff(vpc.to_owned()));
        }
        if let Some(vpc) = stored.strip_prefix("vpc:") {
            return Some(Pending::VpcOn(vpc.to_owned()));
        }
        stored.parse().ok().map(Pending::Action)
    }
}

impl std::fmt::Display for Pending {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Pending::Action(id) => write!(f, "{id}"),
            Pending::ShareResize { size_gib, asked_ms } => write!(f, "share-resize:{size_gib}:{asked_ms}"),
            Pending::VpcOn(vpc) => write!(f, "vpc:{vpc}"),
            Pending::VpcOff(vpc) => write!(f, "vpc-off:{vpc}"),
        }
    }
}

/// A share action has no status to poll: its effect shows on the share. One whose effect has not
/// shown after this long is taken for failed (error), and asked again by the periodic pass.
pub const SHARE_ACTION_PATIENCE_MS: i64 = 10 * 60_000;
pub const SHARE_RESIZE_FAILED: &str = "the provider did not resize the share within 10 minutes: the resize failed";
/// Said of a volume whose failed share was deleted to be made again.
pub const REMADE: &str = "the share the provider failed to make was deleted; it is made again";

/// What a create or a lookup by name found.
#[derive(Clone)]
pub enum Made {
    Block(BlockVolume),
    Share(Share),
}

impl Made {
    pub fn id(&self) -> &str {
        match self {
            Made::Block(b) => &b.id,
            Made::Share(s) => &s.id,
        }
    }

    /// `marker` is the description, `tag` the tag, this deployment writes on what it makes.
    pub fn is_ours(&self, marker: &str, tag: &str) -> bool {
        match self {
            Made::Block(b) => b.description == marker || b.tags.iter().any(|t| t == tag),
            // A share carries no tag or description: its name, derived from the volume id, is
            // unique to this volume.
            Made::Share(_) => true,
        }
    }

    fn observed(&self, v: &volume::Model) -> Observed {
        let now = Observed::of(v);
        match self {
            Made::Block(b) => Observed {
                provider_id: Some(b.id.clone()),
                observed_size_gib: Some(b.size_gib),
                device: Some(super::device_path(&b.name)),
                ..now.state(State::Ready, None)
            },
            Made::Share(s) => share_observed(Observed { provider_id: Some(s.id.clone()), ..now }, s),
        }
    }
}

/// How a volume the provider shows made is written, and when it is looked at again: a ready one
/// at once when a resize asked meanwhile (while the create was in flight, or its answer lost) is
/// still owed, else `then`; a share still being made in 5 s; a failed one by the periodic pass.
fn made(v: &volume::Model, made: &Made, then: Next) -> Decided<Observed> {
    let seen = made.observed(v);
    let next = match seen.state {
        State::Ready => {
            let owed = seen.observed_size_gib.is_some_and(|size| size < v.size_gib);
            if owed && v.desired_state == Desired::Present { Next::Now } else { then }
        }
        State::Error => Next::After(ERROR_RETRY_MS),
        _ => Next::After(ACTION_POLL_MS),
    };
    (seen, next)
}

/// A share's state: ready once active with its NFS source, pending while it is being made.
fn share_observed(now: Observed, s: &Share) -> Observed {
    let source = match (&s.host, &s.mount_path) {
        (Some(host), Some(path)) => Some(format!("{host}:{path}")),
        _ => None,
    };
    match (s.status, source) {
        (ShareStatus::Active | ShareStatus::Inactive, Some(source)) => Observed {
            observed_size_gib: Some(s.size_gib),
            device: Some(source.clone()),
            mount_source: Some(source),
            ..now.state(State::Ready, None)
        },
        (ShareStatus::Failed, _) => now.state(State::Error, Some("the provider failed to make the share".into())),
        _ => Observed { observed_size_gib: Some(s.size_gib), ..now },
    }
}

/// A provider error while looking or acting: a refusal is an error, retried by the periodic
/// pass; anything else is said and looked at again as the provider allows.
pub fn failed(v: &volume::Model, err: &ProviderError) -> Decided<Observed> {
    let now = Observed::of(v);
    if is_failure(err) {
        return (now.state(State::Error, Some(err.message().to_owned())), Next::After(ERROR_RETRY_MS));
    }
    (now.said(err.message()), retry_after(err))
}

/// Gone at the provider while vps-graph holds it: lost for good, never made again.
pub fn lost(v: &volume::Model) -> Decided<Observed> {
    let message = "the volume was deleted at the provider outside vps-graph; its data is gone and it is not made again: delete it".to_owned();
    (Observed { lost: true, action_id: None, ..Observed::of(v).state(State::Error, Some(message)) }, Next::Drift)
}

/// After a create attempt whose outcome the row does not hold, what the lookup by its name found:
/// ours is taken as made; another's is an error; None (nothing there) sends the create.
pub fn looked_up(
    v: &volume::Model,
    found: ProviderResult<Option<Made>>,
    marker: &str,
    tag: &str,
    then: Next,
) -> Option<Decided<Observed>> {
    match found {
        Err(err) => Some(failed(v, &err)),
        Ok(Some(m)) if m.is_ours(marker, tag) => Some(made(v, &m, then)),
        Ok(Some(_)) => {
            let message = format!("a volume named {} exists that this deployment did not make", v.provider_name);
            Some((Observed::of(v).state(State::Error, Some(message)), Next::After(ERROR_RETRY_MS)))
        }
        Ok(None) => None,
    }
}

/// What a restore does about its snapshot.
#[derive(Debug, PartialEq)]
pub enum RestoreSource {
    /// Made from the snapshot with this provider id.
    Ready(String),
    /// The restore named no size and the snapshot holds more than recorded when it was asked:
    /// the volume grows to this size (booking the difference) before it is made.
    Grow(i64),
    /// Waits, or has failed: written as decided.
    Not(Decided<Observed>),
}

/// The snapshot a restore is made from: its provider id once ready; it waits while the snapshot
/// is pending, and fails for good when the snapshot was deleted first.
pub fn restore_source(v: &volume::Model, source: &str, s: Option<&snapshot::Model>) -> RestoreSource {
    match s {
        // The provider's min_disk_size may be above the size recorded when the restore was asked
        // (the volume grew before the provider took the snapshot). A restore that named no size
        // takes the snapshot's; one that named a size below it is an error, as the provider would
        // refuse it.
        // Only for a snapshot still wanted: one being deleted fails the restore below.
        Some(s) if s.state == State::Ready && s.min_disk_size > v.size_gib && s.desired_state == Desired::Present => {
            if v.size_from_snapshot {
                return RestoreSource::Grow(s.min_disk_size);
            }
            let message = format!(
                "snapshot {source} holds {} GiB, more than the {} GiB this restore asked: nothing was made; delete it and restore again",
                s.min_disk_size, v.size_gib
            );
            RestoreSource::Not((Observed::of(v).state(State::Error, Some(message)), Next::After(ERROR_RETRY_MS)))
        }
        Some(s) if s.desired_state == Desired::Present && s.state == State::Ready && s.provider_id.is_some() => {
            RestoreSource::Ready(s.provider_id.clone().unwrap_or_default())
        }
        Some(s) if s.desired_state == Desired::Present && !s.lost => RestoreSource::Not((
            Observed::of(v).said(format!("waiting for snapshot {source} to be ready")),
            Next::After(ACTION_POLL_MS),
        )),
        _ => {
            let message = format!("snapshot {source} was deleted before the restore: nothing was made");
            RestoreSource::Not((
                Observed { lost: true, ..Observed::of(v).state(State::Error, Some(message)) },
                Next::Drift,
            ))
        }
    }
}

/// A restore that named no size, whose snapshot holds more than the quota lets the volume grow to.
pub fn restore_over_quota(v: &volume::Model, source: &str, size_gib: i64) -> Decided<Observed> {
    let message = format!(
        "snapshot {source} holds {size_gib} GiB and the diskGiB quota does not allow growing this restore from {} GiB: nothing was made; it is tried again",
        v.size_gib
    );
    (Observed::of(v).state(State::Error, Some(message)), Next::After(ERROR_RETRY_MS))
}

/// A share waits for its network's subnet to be made in its region.
pub fn waiting_for_subnet(v: &volume::Model) -> Decided<Observed> {
    (Observed::of(v).said("waiting for the network's subnet"), Next::After(ACTION_POLL_MS))
}

/// The create's answer; `marked` is the row with this attempt recorded.
pub fn created(marked: &volume::Model, answer: ProviderResult<Made>, then: Next) -> Decided<Observed> {
    match answer {
        Ok(m) => made(marked, &m, then),
        Err(ProviderError::Refused { message, .. }) => {
            // Refused: this attempt made nothing (an earlier one whose answer was lost may have:
            // its count stays, and the retry looks by name first). Retried by the periodic pass.
            let now = Observed { create_attempts: marked.create_attempts - 1, ..Observed::of(marked) };
            (now.state(State::Error, Some(message)), Next::After(ERROR_RETRY_MS))
        }
        Err(err) => {
            let message =
                format!("{} (the volume is looked up by its name before anything is sent again)", err.message());
            (Observed::of(marked).said(message), retry_after(&err))
        }
    }
}

/// A volume made but not yet seen ready, read again. `Err(())` asks for the failed share to be
/// deleted: in error (the periodic pass's retry), it goes and is made again.
pub fn settled(v: &volume::Model, seen: ProviderResult<Option<Made>>, then: Next) -> Result<Decided<Observed>, ()> {
    match seen {
        Ok(Some(Made::Share(s))) if s.status == ShareStatus::Failed && v.state == State::Error => Err(()),
        Ok(Some(m)) => Ok(made(v, &m, then)),
        Ok(None) => Ok(lost(v)),
        Err(err) => Ok(failed(v, &err)),
    }
}

/// The failed share's delete, for it to be made again (looked up by name first, as after any
/// attempt).
pub fn remade(v: &volume::Model, answer: ProviderResult<bool>) -> Decided<Observed> {
    match answer {
        Ok(_) => (Observed { provider_id: None, ..Observed::of(v).said(REMADE) }, Next::Now),
        Err(err) => failed(v, &err),
    }
}

/// Before a block resize is sent, the resize the provider is running on it: what one whose
/// answer was lost started is followed, not sent again.
pub fn resize_running(v: &volume::Model, running: ProviderResult<Option<u64>>) -> Option<Decided<Observed>> {
    match running {
        Ok(Some(action)) => Some((Observed::of(v).updating(&Pending::Action(action)), Next::After(ACTION_POLL_MS))),
        Ok(None) => None,
        Err(err) => Some(failed(v, &err)),
    }
}

/// Before a resize is sent, the size the provider shows: one at the asked size already (a resize
/// whose answer was lost, carried out) is ready; None sends the resize.
pub fn resize_looked(v: &volume::Model, size: ProviderResult<Option<i64>>) -> Option<Decided<Observed>> {
    match size {
        Ok(Some(size)) if size >= v.size_gib => Some((resized(v, size), Next::Now)),
        Ok(Some(_)) => None,
        Ok(None) => Some(lost(v)),
        Err(err) => Some(failed(v, &err)),
    }
}

/// The resize's answer: the action started, followed until done.
pub fn resize_sent(v: &volume::Model, answer: ProviderResult<Pending>) -> Decided<Observed> {
    match answer {
        Ok(pending) => (Observed::of(v).updating(&pending), Next::After(ACTION_POLL_MS)),
        Err(err) => failed(v, &err),
    }
}

/// The volume once the provider shows it at `size`.
pub fn resized(v: &volume::Model, size: i64) -> Observed {
    Observed { action_id: None, observed_size_gib: Some(size), ..Observed::of(v).state(State::Ready, None) }
}

fn resize_failed(v: &volume::Model, message: &str) -> Decided<Observed> {
    let failed = Observed { action_id: None, ..Observed::of(v).state(State::Error, Some(message.to_owned())) };
    (failed, Next::After(ERROR_RETRY_MS))
}

/// A row's action that is no action this code writes: forgotten, and the volume looked at again.
pub fn unreadable_action(v: &volume::Model) -> Decided<Observed> {
    (Observed { action_id: None, ..Observed::of(v) }, Next::Now)
}

/// A block resize's action, polled. None: it completed, and the volume is read for its size.
pub fn resize_polled(v: &volume::Model, status: ProviderResult<Option<ActionStatus>>) -> Option<Decided<Observed>> {
    match status {
        Ok(Some(ActionStatus::InProgress)) => Some((Observed::of(v), Next::After(ACTION_POLL_MS))),
        Ok(Some(ActionStatus::Completed)) => None,
        Ok(Some(ActionStatus::Errored)) | Ok(None) => Some(resize_failed(v, "the provider's resize failed")),
        Err(err) => Some((Observed::of(v).said(err.message()), retry_after(&err))),
    }
}

/// A completed resize's volume, read.
pub fn resize_done(v: &volume::Model, size: ProviderResult<Option<i64>>) -> Decided<Observed> {
    match size {
        Ok(Some(size)) => (resized(v, size), Next::Now),
        Ok(None) => lost(v),
        Err(err) => failed(v, &err),
    }
}

/// A share resize to `target` asked at `asked_ms`, followed by the share's size: an NFS action
/// cannot be read back, so one whose effect has not shown in time failed.
pub fn share_resize_followed(
    v: &volume::Model,
    target: i64,
    asked_ms: i64,
    now_ms: i64,
    seen: ProviderResult<Option<Share>>,
) -> Decided<Observed> {
    match seen {
        Ok(Some(s)) if s.size_gib >= target => (resized(v, s.size_gib), Next::Now),
        Ok(Some(_)) if now_ms - asked_ms > SHARE_ACTION_PATIENCE_MS => resize_failed(v, SHARE_RESIZE_FAILED),
        Ok(Some(_)) => (Observed::of(v), Next::After(ACTION_POLL_MS)),
        Ok(None) => lost(v),
        Err(err) => failed(v, &err),
    }
}

/// What a delete calls.
#[derive(Debug, PartialEq, Eq)]
pub enum DeleteTarget {
    /// Nothing at the provider: lost, never created, or every attempt refused.
    Nothing,
    Known(String),
    /// A create whose answer was lost: looked up by name, never created to be deleted.
    LookUp,
}

pub fn delete_target(v: &volume::Model) -> DeleteTarget {
    match (&v.provider_id, v.create_attempts) {
        _ if v.lost => DeleteTarget::Nothing,
        (Some(id), _) => DeleteTarget::Known(id.clone()),
        (None, 0) => DeleteTarget::Nothing,
        (None, _) => DeleteTarget::LookUp,
    }
}

/// The lookup before a delete: the id to delete, if ours is there.
pub fn delete_found(
    v: &volume::Model,
    found: ProviderResult<Option<Made>>,
    marker: &str,
    tag: &str,
) -> Result<Option<String>, Decided<Observed>> {
    match found {
        Ok(found) => Ok(found.filter(|m| m.is_ours(marker, tag)).map(|m| m.id().to_owned())),
        Err(err) => Err((Observed::of(v).said(err.message()), retry_after(&err))),
    }
}

/// The delete's answer (or no call, `Ok`): deleted, or looked at again. An attached volume (409,
/// its Droplet just deleted) or a busy provider is asked again later.
pub fn deleted(v: &volume::Model, answer: ProviderResult<()>) -> Decided<Observed> {
    match answer {
        Ok(()) => (Observed { action_id: None, ..Observed::of(v).state(State::Deleted, None) }, Next::Done),
        Err(err) => {
            let next = if is_failure(&err) { Next::After(super::super::RETRY_LATER_MS) } else { retry_after(&err) };
            (Observed::of(v).said(err.message()), next)
        }
    }
}

/// The hourly read of a settled volume: its size, or lost. `Err` is when to read again, with
/// nothing written (a provider in trouble says nothing of the volume).
pub fn drifted(v: &volume::Model, size: ProviderResult<Option<i64>>) -> Result<Observed, Next> {
    match size {
        Err(_) => Err(Next::After(super::super::RETRY_LATER_MS)),
        Ok(None) => Ok(lost(v).0),
        Ok(Some(size)) => Ok(Observed { observed_size_gib: Some(size), ..Observed::of(v) }),
    }
}

/// The event a volume's change publishes.
pub fn event_type(before: &volume::Model, after: &Observed) -> &'static str {
    let grown = before.observed_size_gib.is_some_and(|was| after.observed_size_gib.is_some_and(|now| now > was));
    match (before.state, after.state) {
        (State::Ready, State::Ready) if grown => "resized",
        (b, a) if b == a => "updated",
        (State::Updating, State::Ready) => "resized",
        (_, State::Ready) => "ready",
        (_, State::Error) => "error",
        (_, State::Deleted) => "deleted",
        _ => "updated",
    }
}
