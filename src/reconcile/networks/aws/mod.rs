//! `vps.networks` on AWS: one VPC per network (named `bc-<network id>`) with one subnet per zone.
//! A run reads the VPC and its subnets, decides (`look` → `decide` → `after`, plain functions of
//! the rows and what EC2 showed, tested without a network), makes at most one provider call, and
//! writes everything it learned back in one version-checked, fenced transaction. A delete removes
//! the subnets first, then the VPC (EC2 refuses a VPC that still holds subnets). An adopted
//! network (`networkAdopt`) is only read: its subnets are recorded from EC2, nothing is ever made
//! or deleted at the provider for it.
mod decide;
#[cfg(test)]
mod tests;

pub use decide::*;

use sea_orm::DatabaseTransaction;
use sea_orm::prelude::DateTimeUtc;

use super::mark_create_attempt;
use crate::error::Result;
use crate::ids;
use crate::provider::aws::Aws;
use crate::provider::{AwsSubnet, ProviderError, aws_tags, tag_value};
use crate::reconcile::{ERROR_RETRY_MS, Next, Run, is_failure, retry_after};
use crate::store::entity::{network, network_subnet as subnet};
use crate::store::networks::{self as store, NewSubnet, subnets_of};
use crate::store::state::State;
use crate::store::status::StatusWrite;
use crate::store::{filesystems, queue};

/// A run on an AWS account (`NetworkReconciler::run` hands it over).
pub(super) async fn run(run: &Run<'_>, network: network::Model, rows: Vec<subnet::Model>, api: &Aws) -> Result<Next> {
    let deployment = run.services.deployment.clone();
    let seen = match observe(api, &network).await {
        Ok(seen) => seen,
        // The network is as it was, as far as we know: look again soon, and write nothing.
        Err(err) if !is_failure(&err) => return Ok(retry_after(&err)),
        Err(err) => {
            let mut plan = Plan::unchanged(&network, &rows);
            plan.verdict = Verdict::Failed(err.message().to_owned());
            plan.next = Next::After(ERROR_RETRY_MS);
            return finish(run, &network, &rows, &plan).await;
        }
    };
    let (mut network, mut rows) = (network, rows);
    let mut plan = decide(&network, &rows, &seen, &deployment);
    if let Some(call) = plan.call.clone() {
        // Recorded before the call, so a write-back lost to a crash or a concurrent change leaves
        // a trace: what was made is then looked up by its name, never orphaned or made twice.
        match &call {
            Call::CreateVpc => {
                let Some(marked) = mark_vpc_attempt(run, &network).await? else { return Ok(Next::Now) };
                plan.vpc.create_attempts = marked.create_attempts;
                network = marked;
            }
            Call::CreateSubnet(i) => {
                let Some(marked) = mark_create_attempt(run, &rows[*i]).await? else { return Ok(Next::Now) };
                plan.subnets[*i].create_attempts = marked.create_attempts;
                rows[*i] = marked;
            }
            _ => {}
        }
        let answer = execute(api, &network, &rows, &call, &deployment).await;
        plan = after(plan, &call, answer);
    }
    finish(run, &network, &rows, &plan).await
}

async fn finish(run: &Run<'_>, network: &network::Model, rows: &[subnet::Model], plan: &Plan) -> Result<Next> {
    if !write_back(run, network, rows, plan).await? {
        return Ok(Next::Now);
    }
    let now = store::find(&run.services.db, &network.id).await?;
    Ok(if now.is_none_or(|n| n.state == State::Deleted) { Next::Done } else { plan.next })
}

async fn observe(api: &Aws, n: &network::Model) -> std::result::Result<Seen, ProviderError> {
    let region = n.region.as_deref().unwrap_or_default();
    let vpc = match look(n) {
        Look::Nothing => VpcSeen::NotAsked,
        Look::ById(id) => api.vpc_get(region, &id).await?.map_or(VpcSeen::Missing, VpcSeen::Found),
        Look::ByName(name) => VpcSeen::Named(api.vpcs_find_by_name(region, &name).await?),
    };
    let subnets = match subnets_to_read(n, &vpc) {
        Some(id) => Some(api.subnets_of_vpc(region, id).await?),
        None => None,
    };
    Ok(Seen { vpc, subnets })
}

async fn execute(
    api: &Aws,
    n: &network::Model,
    rows: &[subnet::Model],
    call: &Call,
    deployment: &str,
) -> std::result::Result<Answer, ProviderError> {
    let region = n.region.as_deref().unwrap_or_default();
    match call {
        Call::CreateVpc => {
            let ip_range = n.ip_range.as_deref().unwrap_or_default();
            api.vpc_create(region, ip_range, &aws_tags(&vpc_name(&n.id), deployment)).await.map(Answer::Vpc)
        }
        Call::EnableDns(id) => api.vpc_enable_dns(region, id).await.map(|_| Answer::Done),
        Call::CreateSubnet(i) => {
            let s = &rows[*i];
            let vpc = n.provider_id.as_deref().unwrap_or_default();
            let zone = s.zone.as_deref().unwrap_or_default();
            let tags = aws_tags(&s.provider_name, deployment);
            api.subnet_create(&s.region, vpc, zone, &s.ip_range, &tags).await.map(Answer::Subnet)
        }
        Call::DeleteSubnet(_, id) => api.subnet_delete(region, id).await.map(|_| Answer::Done),
        Call::DeleteVpc(id) => api.vpc_delete(region, id).await.map(|_| Answer::Done),
    }
}

/// Records a VPC create attempt on the network before the call (see `Run::mark_attempt`);
/// returns the network as written, or None when the run must look again.
async fn mark_vpc_attempt(run: &Run<'_>, current: &network::Model) -> Result<Option<network::Model>> {
    let (id, generation) = (&current.id, current.generation);
    run.mark_attempt::<network::Entity>(&[("networks", id)], id, generation, network::Column::CreateAttempts).await
}

/// Writes the plan (the network's VPC fields and state, its subnets, the adopted subnets found)
/// with the network's event, if this run still holds its lease (`store::status`). The network's
/// filesystems are woken when it turns ready or its subnets change. False: look again (the
/// lease is gone, or the user changed the network or a subnet meanwhile).
async fn write_back(run: &Run<'_>, current: &network::Model, rows: &[subnet::Model], plan: &Plan) -> Result<bool> {
    if changes_nothing(current, rows, plan) {
        return Ok(true);
    }
    let services = run.services;
    let txn = services.begin().await?;
    crate::store::lock(&txn, "networks", &current.id).await?;
    let now = services.clock.now();
    let mut subnets_changed = !plan.found.is_empty();
    let mut unchanged = true;
    for (row, fields) in rows.iter().zip(&plan.subnets) {
        if SubnetFields::of(row) == *fields {
            continue;
        }
        let Some(written) = subnet_status(row, fields).write::<subnet::Entity>(&txn, run.claimed, now).await? else {
            return Ok(false);
        };
        unchanged &= written.generation == row.generation;
        subnets_changed = true;
    }
    for found in &plan.found {
        record_subnet(&txn, current, found, now).await?;
    }
    let subnets = subnets_of(&txn, &current.id).await?;
    let (state_now, message) = network_state(current.desired_state, &plan.verdict, &subnets);
    let status = vpc_status(current, &plan.vpc).decided(network::Column::Message, message).state(state_now);
    let Some(written) = status.write::<network::Entity>(&txn, run.claimed, now).await? else {
        return Ok(false);
    };
    super::refund_if_deleted(&txn, &written).await?;
    unchanged &= written.generation == current.generation;
    let turned_ready = written.state == State::Ready && current.state != State::Ready;
    let event_type = if written.state != current.state { written.state.as_str() } else { "updated" };
    let event = crate::views::networks::event(event_type, &crate::views::networks::view(&written, &subnets));
    if turned_ready || subnets_changed {
        // The filesystem reconciler places mount targets and file systems in these subnets.
        let due = services.clock.now_ms();
        for fs in filesystems::live_of(&txn, &current.id).await? {
            queue::wake(&txn, filesystems::RECONCILER, &fs.id, due).await?;
        }
        services.commit_and_wake(txn, vec![event]).await?;
    } else {
        services.commit(txn, vec![event]).await?;
    }
    Ok(unchanged)
}

/// A subnet's write: its EC2 subnet as facts, its states and message as decided.
fn subnet_status(row: &subnet::Model, fields: &SubnetFields) -> StatusWrite {
    StatusWrite::of(&row.id, row.generation)
        .fact(subnet::Column::ProviderId, fields.provider_id.clone())
        .fact(subnet::Column::CreateAttempts, fields.create_attempts)
        .fact(subnet::Column::Lost, fields.lost)
        .decided(subnet::Column::DesiredState, fields.desired_state)
        .decided(subnet::Column::Message, fields.message.clone())
        .state(fields.state)
}

/// The network's write of its VPC, as facts.
fn vpc_status(current: &network::Model, vpc: &VpcFields) -> StatusWrite {
    StatusWrite::of(&current.id, current.generation)
        .fact(network::Column::ProviderId, vpc.provider_id.clone())
        .fact(network::Column::CreateAttempts, vpc.create_attempts)
        .fact(network::Column::Lost, vpc.lost)
        .fact(network::Column::IpRange, vpc.ip_range.clone())
}

/// An adopted VPC's subnet, recorded as EC2 shows it: ready, named by its `Name` tag or its id.
async fn record_subnet(
    txn: &DatabaseTransaction,
    n: &network::Model,
    found: &AwsSubnet,
    now: DateTimeUtc,
) -> Result<subnet::Model> {
    let name = tag_value(&found.tags, "Name").unwrap_or(&found.id).to_owned();
    let id = ids::new_id(ids::SUBNET);
    let new = NewSubnet {
        id: &id,
        network_id: &n.id,
        region: n.region.clone().unwrap_or_default(),
        ip_range: found.cidr_block.clone(),
        zone: Some(found.availability_zone.clone()),
        provider_name: name,
    };
    store::record_found_subnet(txn, new, found.id.clone(), now).await
}
