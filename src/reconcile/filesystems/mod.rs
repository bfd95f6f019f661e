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
mod decide;
#[cfg(test)]
mod tests;

pub use decide::*;

use super::{ACTION_POLL_MS, ERROR_RETRY_MS, Next, RETRY_LATER_MS, Reconciler, Run, again_if_changed, is_failure};
use crate::error::{Error, Result};
use crate::provider::aws::Aws;
use crate::provider::{
    Flow, LustreCreate, LustreDeployment, Provider, ProviderError, ProviderResult, SecurityGroup, Tag, aws_owned,
    aws_tags,
};
use crate::store::entity::{filesystem, network};
use crate::store::filesystems::{self as store_rows, RECONCILER};
use crate::store::networks::subnets_of;
use crate::store::state::{Deployment, Desired, FilesystemKind, State};
use crate::store::status::StatusWrite;

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
/// What one run works with.
struct Ctx<'a> {
    run: &'a Run<'a>,
    cloud: &'a Aws,
    deployment: &'a str,
    tags: Vec<Tag>,
}

async fn reconcile(run: &Run<'_>) -> Result<Next> {
    let db = &run.services.db;
    let Some(f) = crate::store::filesystems::find(db, run.resource_id()).await? else {
        return Ok(Next::Done);
    };
    if f.state == State::Deleted {
        return Ok(Next::Done);
    }
    let network = crate::store::networks::find(db, &f.network_id).await?;
    let provider = run.provider(&f.provider_account_id).await?;
    let cloud = match provider.as_ref() {
        Provider::Aws(cloud) => cloud.as_ref(),
        Provider::DigitalOcean(_) => return Err(super::not_offered("filesystems", &f.provider_account_id)),
    };
    let deployment = run.services.deployment.as_str();
    let ctx = Ctx { run, cloud, deployment, tags: aws_tags(&f.provider_name, deployment) };
    if f.desired_state == Desired::Absent {
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
    // The rules come before the filesystem (FSx refuses a group that does not admit Lustre), and
    // a ready one's drift read puts back a rule revoked outside.
    let admits = f.provider_id.is_none() || f.state == State::Ready;
    if admits && let Some(next) = admit(ctx, f, vpc, block, &group).await? {
        return Ok(next);
    }
    if f.provider_id.is_none() {
        return make_filesystem(ctx, f, network, &group).await;
    }
    observe(ctx, f, &group).await
}

/// Writes the provider's words of a failed look and waits.
async fn look_failed(run: &Run<'_>, f: &filesystem::Model, err: &ProviderError) -> Result<Next> {
    let (observed, next) = apply(Observed::of(f), after::<()>(&Err(err.clone())));
    // A refused look is no reason for ERROR: it says nothing of the filesystem.
    let next = if is_failure(err) { Next::After(RETRY_LATER_MS) } else { next };
    let observed = Observed { state: f.state, ..observed };
    write(run, f, observed, next).await
}

/// The filesystem's own security group, in the network's VPC, tagged as ours.
async fn make_group(ctx: &Ctx<'_>, f: &filesystem::Model, vpc: &str) -> Result<Next> {
    let run = ctx.run;
    let mut found = Vec::new();
    if must_look(f.group_attempts) {
        match ctx.cloud.security_group_find(&f.region, vpc, &f.provider_name).await {
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
                ctx.cloud.security_group_create(&f.region, vpc, &f.provider_name, &description, &ctx.tags).await;
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
    let found = match ctx.cloud.security_group_find(&f.region, vpc, &f.provider_name).await {
        Ok(found) => found.filter(|g| g.id == group),
        Err(err) => return look_failed(run, f, &err).await.map(Some),
    };
    let Some(found) = found else {
        if f.provider_id.is_some() {
            // AWS keeps a group while a filesystem's interfaces use it: the filesystem's own read
            // says what became of them.
            return Ok(None);
        }
        let message = format!(
            "security group {group} was deleted outside vps-graph; the filesystem is not made: delete this filesystem"
        );
        return write(run, f, Observed::of(f).lost(message), Next::Drift).await.map(Some);
    };
    let missing = missing_rules(&wanted_rules(f.kind, block, group), &found.ingress);
    if missing.is_empty() {
        return Ok(None);
    }
    let result = ctx.cloud.security_group_authorize(&f.region, group, Flow::Ingress, &missing).await;
    let (observed, next) = apply(Observed::of(f), after(&result));
    write(run, f, observed, next).await.map(Some)
}

/// What holds our name at the provider, after a create whose answer may be lost.
async fn held_filesystems(ctx: &Ctx<'_>, f: &filesystem::Model) -> ProviderResult<Vec<Seen>> {
    if f.kind == FilesystemKind::Lustre {
        let found = ctx.cloud.lustre_find_by_name(&f.region, &f.provider_name).await?;
        return Ok(found.iter().map(|l| Seen::lustre(l, ctx.deployment)).collect());
    }
    let found = ctx.cloud.efs_find_by_token(&f.region, &f.provider_name).await?;
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
        Making::Create if f.kind == FilesystemKind::Lustre => make_lustre(ctx, f, network, group).await,
        Making::Create => {
            let Some(marked) = mark_attempt(run, f, filesystem::Column::CreateAttempts).await? else {
                return Ok(Next::Now);
            };
            let result = ctx.cloud.efs_create(&f.region, &f.provider_name, &ctx.tags).await;
            let (mut observed, next) = apply(Observed::of(&marked), after(&result));
            if let Ok(made) = result {
                observed.provider_id = Some(made.id);
            }
            write(run, &marked, observed, next).await
        }
    }
}

fn foreign(f: &filesystem::Model) -> String {
    match f.kind {
        FilesystemKind::Lustre => format!(
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
        .find(|s| s.state == State::Ready && s.desired_state == Desired::Present && s.zone.as_deref() == Some(&zone))
        .and_then(|s| s.provider_id.clone())
    else {
        let message = format!("waiting for the network's subnet in zone {zone}");
        return write(run, f, Observed::of(f).waiting(message), Next::After(RETRY_LATER_MS)).await;
    };
    let Some(marked) = mark_attempt(run, f, filesystem::Column::CreateAttempts).await? else { return Ok(Next::Now) };
    let deployment = match f.deployment {
        Some(Deployment::Persistent) => {
            LustreDeployment::Persistent2 { per_unit_storage_throughput: PERSISTENT_THROUGHPUT }
        }
        _ => LustreDeployment::Scratch2,
    };
    let groups = [group.to_owned()];
    let request = LustreCreate {
        client_request_token: &f.provider_name,
        storage_capacity_gib: f.size_gib.unwrap_or(crate::provider::LUSTRE_DEFAULT_GIB) as i32,
        deployment,
        subnet_id: &subnet_id,
        security_group_ids: &groups,
        tags: &ctx.tags,
    };
    let result = ctx.cloud.lustre_create(&f.region, &request).await;
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
    let targets = match ctx.cloud.mount_targets_of(&f.region, &id).await {
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
            let result = ctx.cloud.mount_target_delete(&f.region, &target).await;
            let (observed, next) =
                apply(Observed::of(f).waiting("waiting for the failed mount target to go"), after(&result));
            return write(run, f, observed, if next == Next::Now { Next::After(ACTION_POLL_MS) } else { next }).await;
        }
        _ => return Ok(Next::Now),
    };
    let groups = [group.to_owned()];
    let result = ctx.cloud.mount_target_create(&f.region, &id, &subnet_id, &groups).await;
    let (observed, next) = apply(Observed::of(f), after(&result));
    write(run, f, observed, next).await
}

async fn read_filesystem(ctx: &Ctx<'_>, f: &filesystem::Model, id: &str) -> ProviderResult<Option<Seen>> {
    if f.kind == FilesystemKind::Lustre {
        return Ok(ctx.cloud.lustre_get(&f.region, id).await?.map(|l| Seen::lustre(&l, ctx.deployment)));
    }
    Ok(ctx.cloud.efs_get(&f.region, id).await?.map(|e| Seen::efs(&e, ctx.deployment)))
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
    let found = ctx.cloud.security_group_find(&f.region, vpc, &f.provider_name).await?;
    Ok(found.filter(|g| aws_owned(&g.tags, ctx.deployment)).map(|g| g.id))
}

/// One step of the delete, in `removal`'s order.
async fn remove(ctx: &Ctx<'_>, f: &filesystem::Model, network: Option<&network::Model>) -> Result<Next> {
    let run = ctx.run;
    let filesystem = match ours_to_delete(ctx, f).await {
        Ok(seen) => seen,
        Err(err) => return look_failed(run, f, &err).await,
    };
    let targets = match (&filesystem, f.kind) {
        (Some(seen), kind) if kind != FilesystemKind::Lustre => {
            match ctx.cloud.mount_targets_of(&f.region, &seen.id).await {
                Ok(targets) => targets,
                Err(err) => return look_failed(run, f, &err).await,
            }
        }
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
        Removal::MountTarget(id) => settle_removal(now, &ctx.cloud.mount_target_delete(&f.region, &id).await),
        Removal::WaitTargets => (now.waiting("waiting for the mount targets to go"), Next::After(ACTION_POLL_MS)),
        Removal::Filesystem(id) => {
            let result = match f.kind {
                FilesystemKind::Lustre => ctx.cloud.lustre_delete(&f.region, &id).await,
                _ => ctx.cloud.efs_delete(&f.region, &id).await,
            };
            let (observed, next) = settle_removal(now, &result);
            (observed, if next == Next::Now { Next::After(ACTION_POLL_MS) } else { next })
        }
        Removal::WaitFilesystem => (now.waiting("waiting for the file system to go"), Next::After(ACTION_POLL_MS)),
        Removal::Group(id) => match settle_removal(now, &ctx.cloud.security_group_delete(&f.region, &id).await) {
            (observed, Next::Now) => (observed.state(State::Deleted, None), Next::Done),
            waiting => waiting,
        },
        Removal::Finished => (now.state(State::Deleted, None), Next::Done),
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

/// Records a create attempt in `column` before the call is made (see `Run::mark_attempt`), so
/// an answer that never comes leaves a trace; returns the row as written, or None when the run
/// must look again.
async fn mark_attempt(
    run: &Run<'_>,
    f: &filesystem::Model,
    column: filesystem::Column,
) -> Result<Option<filesystem::Model>> {
    let locks = [("networks", f.network_id.as_str()), ("filesystems", f.id.as_str())];
    run.mark_attempt::<filesystem::Entity>(&locks, &f.id, f.generation, column).await
}

/// The row locks on PostgreSQL, in the mutations' order: the network's, then the filesystem's
/// (the work item's comes last, with the fence).
async fn lock(txn: &sea_orm::DatabaseTransaction, f: &filesystem::Model) -> Result<()> {
    crate::store::lock(txn, "networks", &f.network_id).await?;
    crate::store::lock(txn, "filesystems", &f.id).await
}

/// Writes what was observed with its event, if this run still holds its lease
/// (`store::status`).
async fn write(run: &Run<'_>, current: &filesystem::Model, observed: Observed, next: Next) -> Result<Next> {
    if observed == Observed::of(current) {
        return Ok(next);
    }
    let services = run.services;
    let txn = services.begin().await?;
    lock(&txn, current).await?;
    let now = services.clock.now();
    let Some(written) = status(current, &observed).write::<filesystem::Entity>(&txn, run.claimed, now).await? else {
        return Ok(Next::Now);
    };
    if written.state == State::Deleted {
        let refunds = [(store_rows::QUOTA, 0), (store_rows::GIB_QUOTA, 0)];
        crate::store::quota::hold_all(&txn, &written.tenant_id, &written.pool_id, &written.id, &refunds).await?;
    }
    let events = event_type(current.state, written.state)
        .map(|t| crate::views::filesystems::event(t, &written))
        .into_iter()
        .collect();
    services.commit(txn, events).await?;
    Ok(again_if_changed(next, current.generation, written.generation))
}

/// The row's write: the group and file system as facts, the state and message as decided.
fn status(current: &filesystem::Model, observed: &Observed) -> StatusWrite {
    StatusWrite::of(&current.id, current.generation)
        .fact(filesystem::Column::SecurityGroupId, observed.security_group_id.clone())
        .fact(filesystem::Column::GroupAttempts, observed.group_attempts)
        .fact(filesystem::Column::ProviderId, observed.provider_id.clone())
        .fact(filesystem::Column::CreateAttempts, observed.create_attempts)
        .fact(filesystem::Column::DnsName, observed.dns_name.clone())
        .fact(filesystem::Column::MountName, observed.mount_name.clone())
        .fact(filesystem::Column::Lost, observed.lost)
        .decided(filesystem::Column::Message, observed.message.clone())
        .state(observed.state)
}
