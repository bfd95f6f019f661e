//! What a `vps.filesystems` run decides: plain functions of the row and of what the provider
//! showed, with no I/O (`super` does the calls and the writes).

use super::{ACTION_POLL_MS, ERROR_RETRY_MS, Next, RETRY_LATER_MS};
use crate::provider::{EfsFileSystem, GroupRule, Lifecycle, LustreFileSystem, MountTarget, RuleSource, aws_owned};
use crate::reconcile::answers;
pub use crate::reconcile::answers::{After, Making, after};
use crate::store::entity::{filesystem, network_subnet as subnet};
use crate::store::state::{Desired, FilesystemKind, State};
pub(super) const PERSISTENT_THROUGHPUT: i32 = 125;

/// The filesystem fields a run writes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Observed {
    pub state: State,
    pub message: Option<String>,
    pub security_group_id: Option<String>,
    pub group_attempts: i32,
    pub provider_id: Option<String>,
    pub create_attempts: i32,
    pub dns_name: Option<String>,
    pub mount_name: Option<String>,
    pub lost: bool,
}

impl Observed {
    pub fn of(f: &filesystem::Model) -> Self {
        Observed {
            state: f.state,
            message: f.message.clone(),
            security_group_id: f.security_group_id.clone(),
            group_attempts: f.group_attempts,
            provider_id: f.provider_id.clone(),
            create_attempts: f.create_attempts,
            dns_name: f.dns_name.clone(),
            mount_name: f.mount_name.clone(),
            lost: f.lost,
        }
    }

    pub(super) fn state(mut self, state: State, message: Option<String>) -> Self {
        self.state = state;
        self.message = message;
        self
    }

    pub(super) fn message(mut self, message: impl Into<String>) -> Self {
        self.message = Some(message.into());
        self
    }

    pub(super) fn error(self, message: impl Into<String>) -> Self {
        self.state(State::Error, Some(message.into()))
    }

    /// Gone at the provider outside vps-graph: never made again.
    pub(super) fn lost(self, message: impl Into<String>) -> Self {
        Observed { lost: true, ..self.error(message) }
    }

    /// A step went through: an ERROR it may have cleared is pending again, and old words go.
    pub(super) fn progress(self) -> Self {
        match self.state {
            State::Error => self.state(State::Pending, None),
            _ => Observed { message: None, ..self },
        }
    }

    /// Still on its way (READY stays READY while, say, a new zone's mount target is made).
    pub(super) fn waiting(self, message: impl Into<String>) -> Self {
        match self.state {
            State::Ready | State::Deleting => self.message(message),
            _ => self.state(State::Pending, Some(message.into())),
        }
    }
}

/// Something found at the provider under our name: its id, and whether it carries this
/// deployment's ownership tag.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Held {
    pub id: String,
    pub owned: bool,
}

/// Whether a look by name must come before a create: once a create may have reached the
/// provider, what it made is found instead of made twice.
pub fn must_look(attempts: i32) -> bool {
    attempts > 0
}

/// `found`: what the look by name showed (nothing when no create was attempted).
pub fn making(found: &[Held]) -> Making {
    answers::making(found.iter().map(|h| (h.id.as_str(), h.owned)))
}

/// The row after a call ended in `outcome`.
pub fn apply(now: Observed, outcome: After) -> (Observed, Next) {
    match outcome {
        After::Done => (now.progress(), Next::Now),
        After::LookAgain => (now, Next::Now),
        After::Wait(message, ms) => (now.message(message), Next::After(ms)),
        After::Backoff(message, ms) => (now.message(message), Next::Backoff(ms)),
        After::Fail(message) => (now.error(message), Next::After(ERROR_RETRY_MS)),
    }
}

/// The rules the group needs: the filesystem's ports from the network's block and nothing else;
/// Lustre's file servers also talk to each other, through the group itself.
pub fn wanted_rules(kind: FilesystemKind, network_block: &str, group_id: &str) -> Vec<GroupRule> {
    let from_network = RuleSource::Cidr(network_block.to_owned());
    match kind {
        FilesystemKind::Lustre => {
            let mut rules = GroupRule::lustre(from_network);
            rules.extend(GroupRule::lustre(RuleSource::Group(group_id.to_owned())));
            rules
        }
        _ => GroupRule::nfs(from_network),
    }
}

/// The wanted rules the group does not have yet (descriptions aside): authorizing one it has
/// fails the whole call.
pub fn missing_rules(wanted: &[GroupRule], has: &[GroupRule]) -> Vec<GroupRule> {
    wanted.iter().filter(|w| !has.iter().any(|h| h.same(w))).cloned().collect()
}

/// Where a filesystem is in its life at the provider, EFS's and FSx's words alike.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    Creating,
    Available,
    Deleting,
    Failed,
}

/// A filesystem as the provider shows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Seen {
    pub id: String,
    pub owned: bool,
    pub phase: Phase,
    pub dns_name: Option<String>,
    pub mount_name: Option<String>,
    pub failure: Option<String>,
}

impl Seen {
    pub fn efs(f: &EfsFileSystem, deployment: &str) -> Seen {
        let phase = match f.life_cycle_state {
            Lifecycle::Available => Phase::Available,
            Lifecycle::Deleting | Lifecycle::Deleted => Phase::Deleting,
            Lifecycle::Failed => Phase::Failed,
            _ => Phase::Creating,
        };
        let failure = (phase == Phase::Failed).then(|| format!("EFS file system {} is in error", f.id));
        Seen {
            id: f.id.clone(),
            owned: aws_owned(&f.tags, deployment),
            phase,
            dns_name: Some(f.dns_name.clone()),
            mount_name: None,
            failure,
        }
    }

    pub fn lustre(f: &LustreFileSystem, deployment: &str) -> Seen {
        let phase = match f.lifecycle {
            Lifecycle::Available => Phase::Available,
            Lifecycle::Deleting => Phase::Deleting,
            Lifecycle::Failed | Lifecycle::Misconfigured => Phase::Failed,
            _ => Phase::Creating,
        };
        let failure = (phase == Phase::Failed).then(|| {
            // FSx's own word, when it gave no message.
            let word = if f.lifecycle == Lifecycle::Misconfigured { "MISCONFIGURED" } else { "FAILED" };
            let why = f.failure_message.clone().unwrap_or_else(|| word.to_owned());
            format!("FSx for Lustre file system {} failed: {why}", f.id)
        });
        Seen {
            id: f.id.clone(),
            owned: aws_owned(&f.tags, deployment),
            phase,
            dns_name: f.dns_name.clone(),
            mount_name: f.mount_name.clone(),
            failure,
        }
    }

    pub(super) fn held(&self) -> Held {
        Held { id: self.id.clone(), owned: self.owned }
    }
}

/// What to do with a recorded filesystem the provider showed (None: gone).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Made {
    Write(Observed, Next),
    /// An available EFS file system: its mount targets come next.
    MountTargets,
}

pub fn decide_made(f: &filesystem::Model, seen: Option<&Seen>) -> Made {
    let now = Observed::of(f);
    let Some(seen) = seen.filter(|s| s.phase != Phase::Deleting) else {
        let id = f.provider_id.clone().unwrap_or_default();
        let message =
            format!("file system {id} was deleted outside vps-graph; it is not made again: delete this filesystem");
        return Made::Write(now.lost(message), Next::Drift);
    };
    match seen.phase {
        Phase::Failed => {
            let message = seen.failure.clone().unwrap_or_else(|| "the file system failed".into());
            Made::Write(now.error(message), Next::After(ERROR_RETRY_MS))
        }
        Phase::Creating | Phase::Deleting => {
            Made::Write(now.waiting("waiting for the file system to be available"), Next::After(ACTION_POLL_MS))
        }
        Phase::Available if f.kind == FilesystemKind::Lustre => match (&seen.dns_name, &seen.mount_name) {
            (Some(dns), Some(mount)) => {
                let ready = Observed { dns_name: Some(dns.clone()), mount_name: Some(mount.clone()), ..now };
                Made::Write(ready.state(State::Ready, None), Next::Drift)
            }
            _ => Made::Write(now.waiting("waiting for the file system's mount name"), Next::After(ACTION_POLL_MS)),
        },
        Phase::Available => Made::MountTargets,
    }
}

/// Where the mount targets of an available EFS file system stand.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Targets {
    /// A zone with a ready subnet has none: one in this subnet.
    Create(String),
    Waiting,
    Ready,
    /// The network has no ready subnet to put one in.
    NoSubnet,
    /// The provider failed to make this one (`error`): it is deleted and made again.
    Failed(String),
}

/// One mount target per zone that has a ready subnet of the network (EFS takes one per zone).
pub fn plan_targets(subnets: &[subnet::Model], targets: &[MountTarget]) -> Targets {
    let mut ready: Vec<&subnet::Model> = subnets
        .iter()
        .filter(|s| s.state == State::Ready && s.desired_state == Desired::Present && !s.lost)
        .filter(|s| s.provider_id.is_some() && s.zone.is_some())
        .collect();
    ready.sort_by(|a, b| (&a.zone, &a.id).cmp(&(&b.zone, &b.id)));
    ready.dedup_by(|a, b| a.zone == b.zone);
    if ready.is_empty() {
        return Targets::NoSubnet;
    }
    let in_zone = |s: &subnet::Model| {
        targets.iter().find(|t| {
            Some(&t.subnet_id) == s.provider_id.as_ref()
                || (t.availability_zone.is_some() && t.availability_zone == s.zone)
        })
    };
    if let Some(failed) = ready.iter().filter_map(|s| in_zone(s)).find(|t| t.life_cycle_state == Lifecycle::Failed) {
        return Targets::Failed(failed.id.clone());
    }
    if let Some(missing) = ready.iter().find(|s| in_zone(s).is_none()) {
        return Targets::Create(missing.provider_id.clone().unwrap_or_default());
    }
    match ready.iter().all(|s| in_zone(s).is_some_and(|t| t.life_cycle_state == Lifecycle::Available)) {
        true => Targets::Ready,
        false => Targets::Waiting,
    }
}

/// The row once the mount targets stand as `plan` says (None: make one first, or delete a
/// failed one on the periodic pass after its error was shown).
pub fn after_targets(f: &filesystem::Model, seen: &Seen, plan: &Targets) -> Option<(Observed, Next)> {
    let now = Observed::of(f);
    Some(match plan {
        Targets::Create(_) => return None,
        Targets::Failed(_) if f.state == State::Error => return None,
        Targets::Failed(id) => {
            let message = format!("the provider failed to make mount target {id}; it is made again");
            (now.error(message), Next::After(ERROR_RETRY_MS))
        }
        Targets::Waiting => (now.waiting("waiting for the mount targets to be available"), Next::After(ACTION_POLL_MS)),
        Targets::NoSubnet => (now.waiting("waiting for a ready subnet of the network"), Next::After(RETRY_LATER_MS)),
        Targets::Ready => (Observed { dns_name: seen.dns_name.clone(), ..now.state(State::Ready, None) }, Next::Drift),
    })
}

/// The next step of a delete, in order: the mount targets, the filesystem once none is left,
/// its group once the filesystem is gone, then finished. `filesystem` is ours as the provider
/// shows it; None when gone, never made, lost, or held only by someone else (never ours to
/// delete). `group` is our group's id, if there is one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Removal {
    MountTarget(String),
    WaitTargets,
    Filesystem(String),
    WaitFilesystem,
    Group(String),
    Finished,
}

pub fn removal(filesystem: Option<&Seen>, targets: &[MountTarget], group: Option<&str>) -> Removal {
    if let Some(fs) = filesystem {
        let going = |t: &MountTarget| t.life_cycle_state.gone_or_going();
        if let Some(target) = targets.iter().find(|t| !going(t)) {
            return Removal::MountTarget(target.id.clone());
        }
        if !targets.is_empty() {
            return Removal::WaitTargets;
        }
        return match fs.phase {
            Phase::Deleting => Removal::WaitFilesystem,
            _ => Removal::Filesystem(fs.id.clone()),
        };
    }
    match group {
        Some(id) => Removal::Group(id.to_owned()),
        None => Removal::Finished,
    }
}

/// The event a change publishes: one per transition into ready, error or deleted; none for a
/// change of words only.
pub fn event_type(before: State, after: State) -> Option<&'static str> {
    if before == after {
        return None;
    }
    match after {
        State::Ready => Some("ready"),
        State::Error => Some("error"),
        State::Deleted => Some("deleted"),
        _ => None,
    }
}
