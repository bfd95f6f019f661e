//! `vps.filesystems`: shared filesystems on an AWS network, EFS (`nfs`, a mount target in every
//! zone of the network) or FSx for Lustre (`lustre`, in one zone), each behind its own security
//! group that admits only the network's machines. Each run does at most one acting provider
//! call, in order:
//!
//! - present: wait for the network; make the group, authorize its rules, make the filesystem,
//!   then (nfs) a mount target per zone; READY once the provider says it is usable, then read for
//!   drift once an hour. One gone at the provider is lost: ERROR, never made again.
//! - absent: the mount targets, the filesystem once none is left, the group once the
//!   filesystem is gone, then DELETED.
//!
//! At AWS a name proves nothing (a creation token, a `Name` tag or a group name may be held by
//! anyone), so every create records its attempt first, a lost answer is looked up by name, and
//! what is found is taken as ours only with this deployment's ownership tag; a foreign holder is
//! never adopted nor deleted. The decisions are plain functions of the row and what the provider
//! showed, tested without a network; `run` does the I/O.
use sea_orm::sea_query::{Expr, ExprTrait};
use sea_orm::{ColumnTrait, EntityTrait, QueryFilter, UpdateMany};

use super::{ACTION_POLL_MS, ERROR_RETRY_MS, Next, RETRY_LATER_MS, Reconciler, Run, is_failure, wait_for};
use crate::error::{Error, Result};
use crate::provider::{
    EfsFileSystem, Filesystems, IngressRule, LustreCreate, LustreDeployment, LustreFileSystem, MountTarget,
    ProviderError, ProviderResult, RuleSource, SecurityGroup, SecurityGroups, Tag, aws_owned, aws_tags,
};
use crate::service::filesystems::{self as svc, LUSTRE, PERSISTENT, RECONCILER};
use crate::service::networks::{state, subnets_of};
use crate::service::rows;
use crate::store::entity::{filesystem, network, network_subnet as subnet};
use crate::store::queue;

pub struct FilesystemReconciler;

#[async_trait::async_trait]
impl Reconciler for FilesystemReconciler {
    fn kind(&self) -> &'static str {
        RECONCILER
    }

    async fn run(&self, run: &Run<'_>) -> Result<Next> {
        reconcile(run).await
    }
}

/// The throughput per TiB a persistent Lustre filesystem is made with (the least PERSISTENT_2 takes).
const PERSISTENT_THROUGHPUT: i32 = 125;

/// The filesystem fields a run writes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Observed {
    pub state: String,
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
            state: f.state.clone(),
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

    fn state(mut self, state: &str, message: Option<String>) -> Self {
        self.state = state.to_owned();
        self.message = message;
        self
    }

    fn message(mut self, message: impl Into<String>) -> Self {
        self.message = Some(message.into());
        self
    }

    fn error(self, message: impl Into<String>) -> Self {
        self.state(state::ERROR, Some(message.into()))
    }

    /// Gone at the provider outside vps-graph: never made again.
    fn lost(self, message: impl Into<String>) -> Self {
        Observed { lost: true, ..self.error(message) }
    }

    /// A step went through: an ERROR it may have cleared is pending again, and old words go.
    fn progress(self) -> Self {
        match self.state.as_str() {
            state::ERROR => self.state(state::PENDING, None),
            _ => Observed { message: None, ..self },
        }
    }

    /// Still on its way (READY stays READY while, say, a new zone's mount target is made).
    fn waiting(self, message: impl Into<String>) -> Self {
        match self.state.as_str() {
            state::READY | state::DELETING => self.message(message),
            _ => self.state(state::PENDING, Some(message.into())),
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

/// What to do about a thing made under our name (the group, the filesystem) before its id is
/// recorded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Making {
    Create,
    /// A create whose answer was lost, found: ours, so it is recorded, never made twice.
    Adopt(String),
    /// Only someone else's holds the name: left alone.
    Foreign,
}

/// Whether a look by name must come before a create: once a create may have reached the
/// provider, what it made is found instead of made twice.
pub fn must_look(attempts: i32) -> bool {
    attempts > 0
}

/// `found`: what the look by name showed (nothing when no create was attempted).
pub fn making(found: &[Held]) -> Making {
    match found.iter().find(|h| h.owned) {
        Some(ours) => Making::Adopt(ours.id.clone()),
        None if found.is_empty() => Making::Create,
        None => Making::Foreign,
    }
}

/// What a provider call ended in, for the row.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum After {
    /// Done, or so already.
    Done,
    /// It may exist already under our name: look by name now.
    LookAgain,
    /// Nothing done for now: say the provider's words and look again after the wait.
    Wait(String, i64),
    /// The provider was unavailable or rate-limited, or its answer lost: say so and back off.
    Backoff(String, i64),
    /// Refused: ERROR with the provider's words, retried every 5 minutes.
    Fail(String),
}

/// Sorts a call's answer: the AWS codes that mean "already there" or "not yet" first, then the
/// kinds of error every provider call shares.
pub fn after<T>(result: &std::result::Result<T, ProviderError>) -> After {
    let Err(err) = result else { return After::Done };
    let message = err.message().to_owned();
    let code = matches!(err, ProviderError::Refused { .. }).then(|| err.aws_code()).flatten();
    match code {
        Some("InvalidPermission.Duplicate") => After::Done,
        Some("FileSystemAlreadyExists" | "InvalidGroup.Duplicate" | "MountTargetConflict") => After::LookAgain,
        // ENIs of deleted mount targets or file servers linger for a while.
        Some("DependencyViolation" | "FileSystemInUse") => After::Wait(message, RETRY_LATER_MS),
        Some("IncorrectFileSystemLifeCycleState") => After::Wait(message, ACTION_POLL_MS),
        _ if is_failure(err) => After::Fail(message),
        _ if matches!(err, ProviderError::RetryLater { .. } | ProviderError::Unknown { .. }) => {
            After::Backoff(message, wait_for(err))
        }
        _ => After::Wait(message, wait_for(err)),
    }
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
pub fn wanted_rules(kind: &str, network_block: &str, group_id: &str) -> Vec<IngressRule> {
    let from_network = RuleSource::Cidr(network_block.to_owned());
    match kind {
        LUSTRE => {
            let mut rules = IngressRule::lustre(from_network);
            rules.extend(IngressRule::lustre(RuleSource::Group(group_id.to_owned())));
            rules
        }
        _ => IngressRule::nfs(from_network),
    }
}

/// The wanted rules the group does not have yet (descriptions aside): authorizing one it has
/// fails the whole call.
pub fn missing_rules(wanted: &[IngressRule], has: &[IngressRule]) -> Vec<IngressRule> {
    let same =
        |a: &IngressRule, b: &IngressRule| (a.from_port, a.to_port, &a.source) == (b.from_port, b.to_port, &b.source);
    wanted.iter().filter(|w| !has.iter().any(|h| same(w, h))).cloned().collect()
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
        let phase = match f.life_cycle_state.as_str() {
            "available" => Phase::Available,
            "deleting" | "deleted" => Phase::Deleting,
            "error" => Phase::Failed,
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
        let phase = match f.lifecycle.as_str() {
            "AVAILABLE" => Phase::Available,
            "DELETING" => Phase::Deleting,
            "FAILED" | "MISCONFIGURED" => Phase::Failed,
            _ => Phase::Creating,
        };
        let failure = (phase == Phase::Failed).then(|| {
            let why = f.failure_message.clone().unwrap_or_else(|| f.lifecycle.clone());
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

    fn held(&self) -> Held {
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
        Phase::Available if f.kind == LUSTRE => match (&seen.dns_name, &seen.mount_name) {
            (Some(dns), Some(mount)) => {
                let ready = Observed { dns_name: Some(dns.clone()), mount_name: Some(mount.clone()), ..now };
                Made::Write(ready.state(state::READY, None), Next::Drift)
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
        .filter(|s| s.state == state::READY && s.desired_state == state::PRESENT && !s.lost)
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
    if let Some(failed) = ready.iter().filter_map(|s| in_zone(s)).find(|t| t.life_cycle_state == "error") {
        return Targets::Failed(failed.id.clone());
    }
    if let Some(missing) = ready.iter().find(|s| in_zone(s).is_none()) {
        return Targets::Create(missing.provider_id.clone().unwrap_or_default());
    }
    match ready.iter().all(|s| in_zone(s).is_some_and(|t| t.life_cycle_state == "available")) {
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
        Targets::Failed(_) if f.state == state::ERROR => return None,
        Targets::Failed(id) => {
            let message = format!("the provider failed to make mount target {id}; it is made again");
            (now.error(message), Next::After(ERROR_RETRY_MS))
        }
        Targets::Waiting => (now.waiting("waiting for the mount targets to be available"), Next::After(ACTION_POLL_MS)),
        Targets::NoSubnet => (now.waiting("waiting for a ready subnet of the network"), Next::After(RETRY_LATER_MS)),
        Targets::Ready => (Observed { dns_name: seen.dns_name.clone(), ..now.state(state::READY, None) }, Next::Drift),
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
        let going = |t: &MountTarget| matches!(t.life_cycle_state.as_str(), "deleting" | "deleted");
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
pub fn event_type(before: &str, after: &str) -> Option<&'static str> {
    if before == after {
        return None;
    }
    match after {
        state::READY => Some("ready"),
        state::ERROR => Some("error"),
        state::DELETED => Some("deleted"),
        _ => None,
    }
}

/// What one run works with.
struct Ctx<'a> {
    run: &'a Run<'a>,
    groups: &'a dyn SecurityGroups,
    api: &'a dyn Filesystems,
    deployment: &'a str,
    tags: Vec<Tag>,
}

async fn reconcile(run: &Run<'_>) -> Result<Next> {
    let db = &run.services.db;
    let Some(f) = filesystem::Entity::find_by_id(run.resource_id().to_owned()).one(db).await? else {
        return Ok(Next::Done);
    };
    if f.state == state::DELETED {
        return Ok(Next::Done);
    }
    let network = network::Entity::find_by_id(f.network_id.clone()).one(db).await?;
    let provider = run.provider(&f.provider_account_id).await?;
    let (Some(groups), Some(api)) = (provider.security_groups.as_ref(), provider.filesystems.as_ref()) else {
        return Err(Error::internal(format!("account {} offers no filesystems", f.provider_account_id)));
    };
    let deployment = run.services.deployment.as_str();
    let ctx = Ctx {
        run,
        groups: groups.as_ref(),
        api: api.as_ref(),
        deployment,
        tags: aws_tags(&f.provider_name, deployment),
    };
    if f.desired_state == state::ABSENT {
        return remove(&ctx, &f, network.as_ref()).await;
    }
    let network = network.ok_or_else(|| Error::internal(format!("no network {}", f.network_id)))?;
    present(&ctx, &f, &network).await
}

/// The network's VPC and block, once it has been ready.
fn vpc_of(network: &network::Model) -> Option<(&str, &str)> {
    network.ready_at?;
    Some((network.provider_id.as_deref()?, network.ip_range.as_deref()?))
}

async fn present(ctx: &Ctx<'_>, f: &filesystem::Model, network: &network::Model) -> Result<Next> {
    let run = ctx.run;
    if f.lost {
        return Ok(Next::Drift);
    }
    let Some((vpc, block)) = vpc_of(network) else {
        return write(run, f, Observed::of(f).waiting("waiting for the network"), Next::After(ACTION_POLL_MS)).await;
    };
    let Some(group) = f.security_group_id.clone() else { return make_group(ctx, f, vpc).await };
    if f.provider_id.is_none() {
        // The rules come before the filesystem: FSx refuses a group that does not admit Lustre.
        if let Some(next) = admit(ctx, f, vpc, block, &group).await? {
            return Ok(next);
        }
        return make_filesystem(ctx, f, network, &group).await;
    }
    observe(ctx, f, &group).await
}

/// Writes the provider's words of a failed look and waits.
async fn look_failed(run: &Run<'_>, f: &filesystem::Model, err: &ProviderError) -> Result<Next> {
    let (observed, next) = apply(Observed::of(f), after::<()>(&Err(err.clone())));
    // A refused look is no reason for ERROR: it says nothing of the filesystem.
    let next = if is_failure(err) { Next::After(RETRY_LATER_MS) } else { next };
    let observed = Observed { state: f.state.clone(), ..observed };
    write(run, f, observed, next).await
}

/// The filesystem's own security group, in the network's VPC, tagged as ours.
async fn make_group(ctx: &Ctx<'_>, f: &filesystem::Model, vpc: &str) -> Result<Next> {
    let run = ctx.run;
    let mut found = Vec::new();
    if must_look(f.group_attempts) {
        match ctx.groups.security_group_find(&f.region, vpc, &f.provider_name).await {
            Ok(group) => found.extend(group.map(|g| held_group(&g, ctx.deployment))),
            Err(err) => return look_failed(run, f, &err).await,
        }
    }
    match making(&found) {
        Making::Adopt(id) => {
            write(run, f, Observed { security_group_id: Some(id), ..Observed::of(f).progress() }, Next::Now).await
        }
        Making::Foreign => {
            let message = format!(
                "a security group named {} exists in the network's VPC that this deployment did not make; it is left alone",
                f.provider_name
            );
            write(run, f, Observed::of(f).error(message), Next::After(ERROR_RETRY_MS)).await
        }
        Making::Create => {
            let Some(marked) = mark_attempt(run, f, filesystem::Column::GroupAttempts).await? else {
                return Ok(Next::Now);
            };
            let description = format!("vps-graph filesystem {}", f.id);
            let result =
                ctx.groups.security_group_create(&f.region, vpc, &f.provider_name, &description, &ctx.tags).await;
            let (mut observed, next) = apply(Observed::of(&marked), after(&result));
            if let Ok(id) = result {
                observed.security_group_id = Some(id);
            }
            write(run, &marked, observed, next).await
        }
    }
}

fn held_group(group: &SecurityGroup, deployment: &str) -> Held {
    Held { id: group.id.clone(), owned: aws_owned(&group.tags, deployment) }
}

/// Authorizes the rules the group lacks; None when it has them all (the run goes on).
async fn admit(ctx: &Ctx<'_>, f: &filesystem::Model, vpc: &str, block: &str, group: &str) -> Result<Option<Next>> {
    let run = ctx.run;
    let found = match ctx.groups.security_group_find(&f.region, vpc, &f.provider_name).await {
        Ok(found) => found.filter(|g| g.id == group),
        Err(err) => return look_failed(run, f, &err).await.map(Some),
    };
    let Some(found) = found else {
        let message = format!(
            "security group {group} was deleted outside vps-graph; the filesystem is not made: delete this filesystem"
        );
        return write(run, f, Observed::of(f).lost(message), Next::Drift).await.map(Some);
    };
    let missing = missing_rules(&wanted_rules(&f.kind, block, group), &found.ingress);
    if missing.is_empty() {
        return Ok(None);
    }
    let result = ctx.groups.security_group_authorize(&f.region, group, &missing).await;
    let (observed, next) = apply(Observed::of(f), after(&result));
    write(run, f, observed, next).await.map(Some)
}

/// What holds our name at the provider, after a create whose answer may be lost.
async fn held_filesystems(ctx: &Ctx<'_>, f: &filesystem::Model) -> ProviderResult<Vec<Seen>> {
    if f.kind == LUSTRE {
        let found = ctx.api.lustre_find_by_name(&f.region, &f.provider_name).await?;
        return Ok(found.iter().map(|l| Seen::lustre(l, ctx.deployment)).collect());
    }
    let found = ctx.api.efs_find_by_token(&f.region, &f.provider_name).await?;
    Ok(found.iter().map(|e| Seen::efs(e, ctx.deployment)).collect())
}

/// The filesystem itself (encrypted, tagged as ours), its attempt recorded before the call.
async fn make_filesystem(ctx: &Ctx<'_>, f: &filesystem::Model, network: &network::Model, group: &str) -> Result<Next> {
    let run = ctx.run;
    let mut found = Vec::new();
    if must_look(f.create_attempts) {
        match held_filesystems(ctx, f).await {
            Ok(held) => found.extend(held.iter().map(Seen::held)),
            Err(err) => return look_failed(run, f, &err).await,
        }
    }
    match making(&found) {
        Making::Adopt(id) => {
            write(run, f, Observed { provider_id: Some(id), ..Observed::of(f).progress() }, Next::Now).await
        }
        Making::Foreign => write(run, f, Observed::of(f).error(foreign(f)), Next::After(ERROR_RETRY_MS)).await,
        Making::Create if f.kind == LUSTRE => make_lustre(ctx, f, network, group).await,
        Making::Create => {
            let Some(marked) = mark_attempt(run, f, filesystem::Column::CreateAttempts).await? else {
                return Ok(Next::Now);
            };
            let result = ctx.api.efs_create(&f.region, &f.provider_name, &ctx.tags).await;
            let (mut observed, next) = apply(Observed::of(&marked), after(&result));
            if let Ok(made) = result {
                observed.provider_id = Some(made.id);
            }
            write(run, &marked, observed, next).await
        }
    }
}

fn foreign(f: &filesystem::Model) -> String {
    match f.kind.as_str() {
        LUSTRE => format!(
            "an FSx for Lustre file system named {} exists that this deployment did not make; it is left alone",
            f.provider_name
        ),
        _ => format!(
            "an EFS file system with creation token {} exists that this deployment did not make; it is left alone",
            f.provider_name
        ),
    }
}

async fn make_lustre(ctx: &Ctx<'_>, f: &filesystem::Model, network: &network::Model, group: &str) -> Result<Next> {
    let run = ctx.run;
    let subnets = subnets_of(&run.services.db, &network.id).await?;
    let zone = f.zone.clone().unwrap_or_default();
    let Some(subnet_id) = subnets
        .iter()
        .find(|s| s.state == state::READY && s.desired_state == state::PRESENT && s.zone.as_deref() == Some(&zone))
        .and_then(|s| s.provider_id.clone())
    else {
        let message = format!("waiting for the network's subnet in zone {zone}");
        return write(run, f, Observed::of(f).waiting(message), Next::After(RETRY_LATER_MS)).await;
    };
    let Some(marked) = mark_attempt(run, f, filesystem::Column::CreateAttempts).await? else { return Ok(Next::Now) };
    let deployment = match f.deployment.as_deref() {
        Some(PERSISTENT) => LustreDeployment::Persistent2 { per_unit_storage_throughput: PERSISTENT_THROUGHPUT },
        _ => LustreDeployment::Scratch2,
    };
    let groups = [group.to_owned()];
    let request = LustreCreate {
        client_request_token: &f.provider_name,
        storage_capacity_gib: f.size_gib.unwrap_or(svc::LUSTRE_DEFAULT_GIB) as i32,
        deployment,
        subnet_id: &subnet_id,
        security_group_ids: &groups,
        tags: &ctx.tags,
    };
    let result = ctx.api.lustre_create(&f.region, &request).await;
    let (observed, next) = apply(Observed::of(&marked), after(&result));
    let (observed, next) = match result.map(|l| Seen::lustre(&l, ctx.deployment)) {
        Ok(made) if made.owned => (Observed { provider_id: Some(made.id), ..observed }, next),
        // FSx answers an earlier file system for a reused token: that is no proof it is ours.
        Ok(_) => (Observed::of(&marked).error(foreign(f)), Next::After(ERROR_RETRY_MS)),
        Err(_) => (observed, next),
    };
    write(run, &marked, observed, next).await
}

/// Reads the recorded filesystem: waits for it, makes its mount targets, settles it READY, or
/// finds it lost.
async fn observe(ctx: &Ctx<'_>, f: &filesystem::Model, group: &str) -> Result<Next> {
    let run = ctx.run;
    let id = f.provider_id.clone().unwrap_or_default();
    let seen = match read_filesystem(ctx, f, &id).await {
        Ok(seen) => seen,
        Err(err) => return look_failed(run, f, &err).await,
    };
    let seen = match (decide_made(f, seen.as_ref()), seen) {
        (Made::Write(observed, next), _) => return write(run, f, observed, next).await,
        (Made::MountTargets, Some(seen)) => seen,
        (Made::MountTargets, None) => return Err(Error::internal("mount targets of a file system not seen")),
    };
    let targets = match ctx.api.mount_targets_of(&f.region, &id).await {
        Ok(targets) => targets,
        Err(err) => return look_failed(run, f, &err).await,
    };
    let subnets = subnets_of(&run.services.db, &f.network_id).await?;
    let plan = plan_targets(&subnets, &targets);
    if let Some((observed, next)) = after_targets(f, &seen, &plan) {
        return write(run, f, observed, next).await;
    }
    let subnet_id = match plan {
        Targets::Create(subnet_id) => subnet_id,
        Targets::Failed(target) => {
            let result = ctx.api.mount_target_delete(&f.region, &target).await;
            let (observed, next) =
                apply(Observed::of(f).waiting("waiting for the failed mount target to go"), after(&result));
            return write(run, f, observed, if next == Next::Now { Next::After(ACTION_POLL_MS) } else { next }).await;
        }
        _ => return Ok(Next::Now),
    };
    let groups = [group.to_owned()];
    let result = ctx.api.mount_target_create(&f.region, &id, &subnet_id, &groups).await;
    let (observed, next) = apply(Observed::of(f), after(&result));
    write(run, f, observed, next).await
}

async fn read_filesystem(ctx: &Ctx<'_>, f: &filesystem::Model, id: &str) -> ProviderResult<Option<Seen>> {
    if f.kind == LUSTRE {
        return Ok(ctx.api.lustre_get(&f.region, id).await?.map(|l| Seen::lustre(&l, ctx.deployment)));
    }
    Ok(ctx.api.efs_get(&f.region, id).await?.map(|e| Seen::efs(&e, ctx.deployment)))
}

/// Ours to delete, as the provider shows it: the recorded one, or after a lost create answer
/// the one found under our name with our tag. Never a lost one's, never a foreign holder's; but
/// a row lost before its filesystem's id was recorded (its group went outside while the create's
/// answer was lost) still looks by name, so what it may have made is never orphaned.
async fn ours_to_delete(ctx: &Ctx<'_>, f: &filesystem::Model) -> ProviderResult<Option<Seen>> {
    if f.lost && f.provider_id.is_some() {
        return Ok(None);
    }
    match &f.provider_id {
        Some(id) => read_filesystem(ctx, f, id).await,
        None if must_look(f.create_attempts) => Ok(held_filesystems(ctx, f).await?.into_iter().find(|s| s.owned)),
        None => Ok(None),
    }
}

/// Our group, to delete: the recorded one, or after a lost create answer the one found under our
/// name with our tag.
async fn our_group(
    ctx: &Ctx<'_>,
    f: &filesystem::Model,
    network: Option<&network::Model>,
) -> ProviderResult<Option<String>> {
    if let Some(id) = &f.security_group_id {
        return Ok(Some(id.clone()));
    }
    let Some(vpc) = network.and_then(|n| n.provider_id.as_deref()).filter(|_| must_look(f.group_attempts)) else {
        return Ok(None);
    };
    let found = ctx.groups.security_group_find(&f.region, vpc, &f.provider_name).await?;
    Ok(found.filter(|g| aws_owned(&g.tags, ctx.deployment)).map(|g| g.id))
}

/// One step of the delete, in `removal`'s order.
async fn remove(ctx: &Ctx<'_>, f: &filesystem::Model, network: Option<&network::Model>) -> Result<Next> {
    let run = ctx.run;
    let filesystem = match ours_to_delete(ctx, f).await {
        Ok(seen) => seen,
        Err(err) => return look_failed(run, f, &err).await,
    };
    let targets = match (&filesystem, f.kind.as_str()) {
        (Some(seen), kind) if kind != LUSTRE => match ctx.api.mount_targets_of(&f.region, &seen.id).await {
            Ok(targets) => targets,
            Err(err) => return look_failed(run, f, &err).await,
        },
        _ => Vec::new(),
    };
    let group = match filesystem {
        Some(_) => None,
        None => match our_group(ctx, f, network).await {
            Ok(group) => group,
            Err(err) => return look_failed(run, f, &err).await,
        },
    };
    let now = Observed::of(f);
    let (observed, next) = match removal(filesystem.as_ref(), &targets, group.as_deref()) {
        Removal::MountTarget(id) => settle_removal(now, &ctx.api.mount_target_delete(&f.region, &id).await),
        Removal::WaitTargets => (now.waiting("waiting for the mount targets to go"), Next::After(ACTION_POLL_MS)),
        Removal::Filesystem(id) => {
            let result = match f.kind.as_str() {
                LUSTRE => ctx.api.lustre_delete(&f.region, &id).await,
                _ => ctx.api.efs_delete(&f.region, &id).await,
            };
            let (observed, next) = settle_removal(now, &result);
            (observed, if next == Next::Now { Next::After(ACTION_POLL_MS) } else { next })
        }
        Removal::WaitFilesystem => (now.waiting("waiting for the file system to go"), Next::After(ACTION_POLL_MS)),
        Removal::Group(id) => match settle_removal(now, &ctx.groups.security_group_delete(&f.region, &id).await) {
            (observed, Next::Now) => (observed.state(state::DELETED, None), Next::Done),
            waiting => waiting,
        },
        Removal::Finished => (now.state(state::DELETED, None), Next::Done),
    };
    write(run, f, observed, next).await
}

/// A delete's row after its call: it stays DELETING whatever the answer (a refusal is retried
/// 30 s later, as a lingering interface is).
fn settle_removal<T>(now: Observed, result: &std::result::Result<T, ProviderError>) -> (Observed, Next) {
    match after(result) {
        After::Done | After::LookAgain => (Observed { message: None, ..now }, Next::Now),
        After::Wait(message, ms) => (now.message(message), Next::After(ms)),
        After::Backoff(message, ms) => (now.message(message), Next::Backoff(ms)),
        After::Fail(message) => (now.message(message), Next::After(RETRY_LATER_MS)),
    }
}

/// Records a create attempt in `column` before the call is made (version-checked, fenced), so
/// an answer that never comes leaves a trace; returns the row as written, or None when the run
/// must look again.
async fn mark_attempt(
    run: &Run<'_>,
    f: &filesystem::Model,
    column: filesystem::Column,
) -> Result<Option<filesystem::Model>> {
    let txn = run.services.begin().await?;
    lock(&txn, f).await?;
    let changed = filesystem::Entity::update_many()
        .col_expr(column, Expr::col(column).add(1))
        .col_expr(filesystem::Column::Version, Expr::col(filesystem::Column::Version).add(1))
        .filter(filesystem::Column::Id.eq(f.id.clone()))
        .filter(filesystem::Column::Version.eq(f.version))
        .exec(&txn)
        .await?
        .rows_affected;
    if changed == 0 || !queue::fence(&txn, run.claimed).await? {
        return Ok(None);
    }
    let marked = filesystem::Entity::find_by_id(f.id.clone()).one(&txn).await?;
    txn.commit().await?;
    Ok(marked)
}

/// The row locks on PostgreSQL, in the mutations' order: the network's, then the filesystem's
/// (the work item's comes last, with the fence).
async fn lock(txn: &sea_orm::DatabaseTransaction, f: &filesystem::Model) -> Result<()> {
    rows::lock(txn, "networks", &f.network_id).await?;
    rows::lock(txn, "filesystems", &f.id).await
}

/// Writes what was observed with its event, if this run still holds its lease and the row did
/// not change meanwhile (else the run looks again).
async fn write(run: &Run<'_>, current: &filesystem::Model, observed: Observed, next: Next) -> Result<Next> {
    if observed == Observed::of(current) {
        return Ok(next);
    }
    let services = run.services;
    let txn = services.begin().await?;
    lock(&txn, current).await?;
    let now = services.clock.now();
    let mut update = columns(filesystem::Entity::update_many(), &observed, now);
    if observed.state == state::READY && current.ready_at.is_none() {
        update = update.col_expr(filesystem::Column::ReadyAt, Expr::value(now));
    }
    if observed.state == state::DELETED {
        update = update.col_expr(filesystem::Column::DeletedAt, Expr::value(now));
    }
    let changed = update
        .filter(filesystem::Column::Id.eq(current.id.clone()))
        .filter(filesystem::Column::Version.eq(current.version))
        .exec(&txn)
        .await?
        .rows_affected;
    if changed == 0 || !queue::fence(&txn, run.claimed).await? {
        return Ok(Next::Now);
    }
    let written = filesystem::Entity::find_by_id(current.id.clone())
        .one(&txn)
        .await?
        .ok_or_else(|| Error::internal("filesystem vanished"))?;
    let events = event_type(&current.state, &observed.state).map(|t| svc::event(t, &written)).into_iter().collect();
    services.commit(txn, events).await?;
    Ok(next)
}

fn columns(
    update: UpdateMany<filesystem::Entity>,
    observed: &Observed,
    now: chrono::DateTime<chrono::Utc>,
) -> UpdateMany<filesystem::Entity> {
    update
        .col_expr(filesystem::Column::State, Expr::value(observed.state.clone()))
        .col_expr(filesystem::Column::Message, Expr::value(observed.message.clone()))
        .col_expr(filesystem::Column::SecurityGroupId, Expr::value(observed.security_group_id.clone()))
        .col_expr(filesystem::Column::GroupAttempts, Expr::value(observed.group_attempts))
        .col_expr(filesystem::Column::ProviderId, Expr::value(observed.provider_id.clone()))
        .col_expr(filesystem::Column::CreateAttempts, Expr::value(observed.create_attempts))
        .col_expr(filesystem::Column::DnsName, Expr::value(observed.dns_name.clone()))
        .col_expr(filesystem::Column::MountName, Expr::value(observed.mount_name.clone()))
        .col_expr(filesystem::Column::Lost, Expr::value(observed.lost))
        .col_expr(filesystem::Column::Version, Expr::col(filesystem::Column::Version).add(1))
        .col_expr(filesystem::Column::UpdatedAt, Expr::value(now))
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use chrono::Utc;

    use super::*;

    fn fs(kind: &str, state: &str, desired: &str) -> filesystem::Model {
        let now = Utc::now();
        filesystem::Model {
            id: "fs_1".into(),
            tenant_id: "acme".into(),
            project_id: None,
            network_id: "net_1".into(),
            pool_id: "pool_1".into(),
            provider_account_id: "pacct_1".into(),
            name: "data".into(),
            kind: kind.into(),
            size_gib: None,
            deployment: None,
            zone: None,
            region: "us-east-1".into(),
            state: state.into(),
            desired_state: desired.into(),
            message: None,
            provider_name: "bc-fs_1".into(),
            security_group_id: Some("sg-1".into()),
            group_attempts: 1,
            provider_id: Some("fs-1".into()),
            create_attempts: 1,
            dns_name: None,
            mount_name: None,
            lost: false,
            version: 3,
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

    fn subnet(id: &str, zone: &str, provider_id: Option<&str>, state: &str) -> subnet::Model {
        let now = Utc::now();
        subnet::Model {
            id: id.into(),
            network_id: "net_1".into(),
            region: "us-east-1".into(),
            ip_range: "10.0.1.0/24".into(),
            state: state.into(),
            desired_state: state::PRESENT.into(),
            provider_id: provider_id.map(str::to_owned),
            provider_name: format!("bc-{id}"),
            create_attempts: 1,
            lost: false,
            message: None,
            version: 1,
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
            life_cycle_state: state.into(),
            ip_address: None,
            availability_zone: Some(zone.into()),
            vpc_id: None,
        }
    }

    fn refused(code: &str) -> ProviderError {
        ProviderError::Refused { status: 400, message: format!("AWS {code}: the service's words") }
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
            (
                Err(ProviderError::Unknown { message: "timeout".into() }),
                After::Backoff("timeout".into(), RETRY_LATER_MS),
            ),
            (
                Err(ProviderError::Refused { status: 400, message: "AWS BadRequest: no".into() }),
                After::Fail("AWS BadRequest: no".into()),
            ),
            (Err(ProviderError::Misconfigured { message: "no key".into() }), After::Fail("no key".into())),
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
        let pending = Observed::of(&fs(NFS_KIND, state::PENDING, state::PRESENT));
        let failed = Observed::of(&filesystem::Model {
            message: Some("refused".into()),
            ..fs(NFS_KIND, state::ERROR, state::PRESENT)
        });
        let (o, n) = apply(failed.clone(), After::Done);
        assert_eq!((o.state.as_str(), o.message, n), (state::PENDING, None, Next::Now), "an ERROR cleared by a step");
        let (o, n) = apply(failed.clone(), After::LookAgain);
        assert_eq!((o, n), (failed, Next::Now));
        let (o, n) = apply(pending.clone(), After::Wait("busy".into(), RETRY_LATER_MS));
        assert_eq!((o.state.as_str(), o.message.as_deref(), n), (state::PENDING, Some("busy"), Next::After(30_000)));
        let (o, n) = apply(pending, After::Fail("no".into()));
        assert_eq!(
            (o.state.as_str(), o.message.as_deref(), n),
            (state::ERROR, Some("no"), Next::After(ERROR_RETRY_MS))
        );
    }

    const NFS_KIND: &str = crate::service::filesystems::NFS;

    #[test]
    fn the_group_admits_only_the_network_and_only_missing_rules_are_asked() {
        let nfs = wanted_rules(NFS_KIND, "10.20.0.0/16", "sg-1");
        assert_eq!(nfs, vec![IngressRule::tcp(2049, 2049, RuleSource::Cidr("10.20.0.0/16".into()))]);
        let lustre = wanted_rules(LUSTRE, "10.20.0.0/16", "sg-1");
        let ports: Vec<(u16, u16)> = lustre.iter().map(|r| (r.from_port, r.to_port)).collect();
        assert_eq!(ports, [(988, 988), (1018, 1023), (988, 988), (1018, 1023)]);
        assert!(lustre[2..].iter().all(|r| r.source == RuleSource::Group("sg-1".into())), "the servers, to each other");
        assert_eq!(missing_rules(&nfs, &[]), nfs);
        let described = IngressRule { description: Some("set by hand".into()), ..nfs[0].clone() };
        assert!(missing_rules(&nfs, &[described]).is_empty(), "a description is no difference");
        assert_eq!(missing_rules(&lustre, &lustre[..2]), lustre[2..].to_vec());
    }

    #[test]
    fn a_recorded_filesystem_as_the_provider_shows_it() {
        use state::*;
        let pending = fs(NFS_KIND, PENDING, PRESENT);
        let Made::Write(o, n) = decide_made(&pending, None) else { panic!("a write") };
        assert_eq!((o.state.as_str(), o.lost, n), (ERROR, true, Next::Drift), "gone: lost for good");
        assert!(o.message.unwrap().contains("deleted outside vps-graph"));
        let Made::Write(o, _) = decide_made(&pending, Some(&seen(Phase::Deleting))) else { panic!("a write") };
        assert!(o.lost, "being deleted by someone else is gone too");
        let Made::Write(o, n) = decide_made(&pending, Some(&seen(Phase::Creating))) else { panic!("a write") };
        assert_eq!((o.state.as_str(), n), (PENDING, Next::After(ACTION_POLL_MS)));
        assert_eq!(decide_made(&pending, Some(&seen(Phase::Available))), Made::MountTargets);

        let lustre = filesystem::Model { zone: Some("us-east-1a".into()), ..fs(LUSTRE, PENDING, PRESENT) };
        let failed = Seen { failure: Some("no capacity".into()), ..seen(Phase::Failed) };
        let Made::Write(o, n) = decide_made(&lustre, Some(&failed)) else { panic!("a write") };
        assert_eq!((o.state.as_str(), o.message.as_deref(), o.lost), (ERROR, Some("no capacity"), false));
        assert_eq!(n, Next::After(ERROR_RETRY_MS));
        let available = Seen {
            dns_name: Some("fs-1.fsx.us-east-1.amazonaws.com".into()),
            mount_name: Some("abcdefgh".into()),
            ..seen(Phase::Available)
        };
        let Made::Write(o, n) = decide_made(&lustre, Some(&available)) else { panic!("a write") };
        assert_eq!((o.state.as_str(), o.mount_name.as_deref(), n), (READY, Some("abcdefgh"), Next::Drift));
        assert_eq!(o.dns_name.as_deref(), Some("fs-1.fsx.us-east-1.amazonaws.com"));
    }

    #[test]
    fn fsx_words_map_to_phases() {
        let lustre = |lifecycle: &str, tags: Vec<Tag>| LustreFileSystem {
            id: "fs-2".into(),
            lifecycle: lifecycle.into(),
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
            subnet("sub_a", "us-east-1a", Some("subnet-a"), state::READY),
            subnet("sub_b", "us-east-1b", Some("subnet-b"), state::READY),
            subnet("sub_c", "us-east-1c", None, state::PENDING),
            // A second subnet in a zone that has one: EFS takes one target per zone.
            subnet("sub_d", "us-east-1a", Some("subnet-d"), state::READY),
        ];
        assert_eq!(plan_targets(&subnets, &[]), Targets::Create("subnet-a".into()));
        let one = [target("fsmt-a", "subnet-a", "us-east-1a", "available")];
        assert_eq!(plan_targets(&subnets, &one), Targets::Create("subnet-b".into()));
        let two = [one[0].clone(), target("fsmt-b", "subnet-b", "us-east-1b", "creating")];
        assert_eq!(plan_targets(&subnets, &two), Targets::Waiting);
        let both = [one[0].clone(), target("fsmt-b", "subnet-b", "us-east-1b", "available")];
        assert_eq!(plan_targets(&subnets, &both), Targets::Ready);
        assert_eq!(plan_targets(&subnets[2..3], &[]), Targets::NoSubnet);

        let pending = fs(NFS_KIND, state::PENDING, state::PRESENT);
        let (o, n) = after_targets(&pending, &seen(Phase::Available), &Targets::Ready).unwrap();
        assert_eq!(
            (o.state.as_str(), o.dns_name.as_deref(), n),
            (state::READY, seen(Phase::Available).dns_name.as_deref(), Next::Drift)
        );
        assert!(after_targets(&pending, &seen(Phase::Available), &Targets::Create("subnet-b".into())).is_none());
        let ready = fs(NFS_KIND, state::READY, state::PRESENT);
        let (o, _) = after_targets(&ready, &seen(Phase::Available), &Targets::Waiting).unwrap();
        assert_eq!(o.state, state::READY, "a new zone's target does not take a ready filesystem away");
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
        let deleting = Observed::of(&fs(NFS_KIND, state::DELETING, state::ABSENT));
        let (o, n) = settle_removal(deleting.clone(), &Err::<bool, _>(refused("DependencyViolation")));
        assert_eq!((o.state.as_str(), n), (state::DELETING, Next::After(RETRY_LATER_MS)), "ENIs linger");
        let (o, n) = settle_removal(deleting, &Err::<bool, _>(refused("BadRequest")));
        assert_eq!(
            (o.state.as_str(), n),
            (state::DELETING, Next::After(RETRY_LATER_MS)),
            "a delete never errs the row"
        );
    }

    #[test]
    fn a_lost_filesystem_is_never_made_again() {
        let lost = Observed::of(&fs(NFS_KIND, state::READY, state::PRESENT)).lost("gone");
        assert_eq!((lost.state.as_str(), lost.lost, lost.provider_id.as_deref()), (state::ERROR, true, Some("fs-1")));
        assert!(lost.clone().progress().lost, "nothing clears it");
    }

    #[test]
    fn events_mark_transitions_only() {
        use state::*;
        assert_eq!(event_type(PENDING, READY), Some("ready"));
        assert_eq!(event_type(READY, ERROR), Some("error"));
        assert_eq!(event_type(DELETING, DELETED), Some("deleted"));
        assert_eq!(event_type(ERROR, ERROR), None, "a message-only change");
        assert_eq!(event_type(READY, READY), None);
        assert_eq!(event_type(ERROR, PENDING), None);
    }
}
