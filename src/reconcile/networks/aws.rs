//! `vps.networks` on AWS: one VPC per network (named `bc-<network id>`) with one subnet per zone.
//! A run reads the VPC and its subnets, decides (`look` → `decide` → `after`, plain functions of
//! the rows and what EC2 showed, tested without a network), makes at most one provider call, and
//! writes everything it learned back in one version-checked, fenced transaction. A delete removes
//! the subnets first, then the VPC (EC2 refuses a VPC that still holds subnets). An adopted
//! network (`networkAdopt`) is only read: its subnets are recorded from EC2, nothing is ever made
//! or deleted at the provider for it.
use sea_orm::prelude::DateTimeUtc;
use sea_orm::sea_query::{Expr, ExprTrait};
use sea_orm::{ActiveModelTrait, ColumnTrait, DatabaseTransaction, EntityTrait, QueryFilter, Set};

use super::{aggregate, lock_network, mark_create_attempt};
use crate::error::{Error, Result};
use crate::ids;
use crate::provider::{AwsNetworks, AwsSubnet, AwsVpc, Provider, ProviderError, aws_owned, aws_tags, tag_value};
use crate::reconcile::{ERROR_RETRY_MS, Next, RETRY_LATER_MS, Run, is_failure, retry_after};
use crate::service::filesystems;
use crate::service::networks::{self as svc, state, subnets_of};
use crate::store::entity::{network, network_subnet as subnet};
use crate::store::queue;

/// The `Name` of a network's VPC: derived from its id, so a create whose answer was lost is found.
pub fn vpc_name(network_id: &str) -> String {
    format!("bc-{}", network_id.to_lowercase())
}

/// The network's own fields a run writes: its VPC's.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VpcFields {
    pub provider_id: Option<String>,
    pub create_attempts: i32,
    pub lost: bool,
    pub ip_range: Option<String>,
}

impl VpcFields {
    fn of(n: &network::Model) -> Self {
        VpcFields {
            provider_id: n.provider_id.clone(),
            create_attempts: n.create_attempts,
            lost: n.lost,
            ip_range: n.ip_range.clone(),
        }
    }
}

/// What a run made of the VPC; with the subnets, the network's state follows from it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Not there yet (not made, a create on its way, or a delete waiting): why, if known.
    Waiting(Option<String>),
    Ready,
    Failed(String),
    /// Deleted, or never made, for a network being deleted.
    Gone,
}

/// The subnet fields a run writes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SubnetFields {
    pub state: String,
    pub desired_state: String,
    pub provider_id: Option<String>,
    pub create_attempts: i32,
    pub lost: bool,
    pub message: Option<String>,
}

impl SubnetFields {
    fn of(s: &subnet::Model) -> Self {
        SubnetFields {
            state: s.state.clone(),
            desired_state: s.desired_state.clone(),
            provider_id: s.provider_id.clone(),
            create_attempts: s.create_attempts,
            lost: s.lost,
            message: s.message.clone(),
        }
    }

    fn with_state(mut self, state: &str, message: Option<String>) -> Self {
        self.state = state.to_owned();
        self.message = message;
        self
    }

    /// Gone for good: an adopted subnet no longer at EC2, or one deleted.
    fn deleted(self) -> Self {
        SubnetFields { desired_state: state::ABSENT.into(), ..self.with_state(state::DELETED, None) }
    }
}

/// How to read the VPC before deciding.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Look {
    Nothing,
    ById(String),
    /// A create may have reached EC2 without its answer: every VPC under our name.
    ByName(String),
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum VpcSeen {
    NotAsked,
    Found(AwsVpc),
    Missing,
    Named(Vec<AwsVpc>),
}

/// What EC2 showed: the VPC, and the subnets of the VPC when its id is known.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Seen {
    pub vpc: VpcSeen,
    pub subnets: Option<Vec<AwsSubnet>>,
}

/// The one provider step of a run. Subnets are named by their index in the network's rows.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Call {
    CreateVpc,
    /// Ours, found by name after a lost create answer, which may have stopped before DNS was on.
    EnableDns(String),
    CreateSubnet(usize),
    DeleteSubnet(usize, String),
    DeleteVpc(String),
}

/// What a call answered.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Answer {
    Vpc(AwsVpc),
    Subnet(AwsSubnet),
    Done,
}

/// Everything a run writes, and its one call if any. `subnets` follows the network's rows, one for
/// one; `found` are an adopted VPC's subnets not recorded yet.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Plan {
    pub vpc: VpcFields,
    pub verdict: Verdict,
    pub subnets: Vec<SubnetFields>,
    pub found: Vec<AwsSubnet>,
    pub call: Option<Call>,
    pub next: Next,
}

impl Plan {
    fn unchanged(n: &network::Model, rows: &[subnet::Model]) -> Self {
        Plan {
            vpc: VpcFields::of(n),
            verdict: Verdict::Waiting(None),
            subnets: rows.iter().map(SubnetFields::of).collect(),
            found: Vec::new(),
            call: None,
            next: Next::Drift,
        }
    }
}

pub fn look(n: &network::Model) -> Look {
    let present = n.desired_state == state::PRESENT;
    match &n.provider_id {
        _ if n.lost => Look::Nothing,
        _ if n.adopted && !present => Look::Nothing,
        Some(id) if present => Look::ById(id.clone()),
        // Deleting after more than one create was sent: a lost answer's VPC may stand beside the
        // recorded one under the name (EC2 has no client token for VPCs); each of ours goes.
        Some(_) if n.create_attempts > 1 => Look::ByName(vpc_name(&n.id)),
        // Deleting: by id, without looking first (a delete of one gone answers so).
        Some(_) => Look::Nothing,
        None if n.create_attempts > 0 => Look::ByName(vpc_name(&n.id)),
        None => Look::Nothing,
    }
}

/// The VPC whose subnets to read: one known, not lost, and not just seen gone.
pub fn subnets_to_read<'a>(n: &'a network::Model, vpc: &VpcSeen) -> Option<&'a str> {
    let deleting_adopted = n.adopted && n.desired_state == state::ABSENT;
    let read = !(n.lost || deleting_adopted) && *vpc != VpcSeen::Missing;
    n.provider_id.as_deref().filter(|_| read)
}

pub fn decide(n: &network::Model, rows: &[subnet::Model], seen: &Seen, deployment: &str) -> Plan {
    match (n.adopted, n.desired_state.as_str()) {
        (true, _) => decide_adopted(n, rows, seen, deployment),
        (false, state::ABSENT) => decide_delete(n, rows, seen, deployment),
        (false, _) => decide_present(n, rows, seen, deployment),
    }
}

fn lost_message(vpc_id: &str) -> String {
    format!("VPC {vpc_id} was deleted outside vps-graph; it is not made again: delete the network")
}

fn decide_present(n: &network::Model, rows: &[subnet::Model], seen: &Seen, deployment: &str) -> Plan {
    let mut plan = Plan::unchanged(n, rows);
    let vpc_id = n.provider_id.clone().unwrap_or_default();
    if n.lost {
        plan.verdict = Verdict::Failed(lost_message(&vpc_id));
        return plan;
    }
    match (&n.provider_id, &seen.vpc) {
        (Some(_), VpcSeen::Missing) => {
            plan.vpc.lost = true;
            plan.verdict = Verdict::Failed(lost_message(&vpc_id));
            let gone = format!("its VPC {vpc_id} was deleted outside vps-graph");
            for (fields, row) in plan.subnets.iter_mut().zip(rows) {
                if row.desired_state == state::PRESENT && row.provider_id.is_some() && !row.lost {
                    *fields =
                        SubnetFields { lost: true, ..fields.clone().with_state(state::ERROR, Some(gone.clone())) };
                }
            }
        }
        (Some(_), _) => {
            plan.verdict = Verdict::Ready;
            plan_subnets(&mut plan, rows, seen.subnets.as_deref(), deployment);
        }
        (None, VpcSeen::Named(vpcs)) if !vpcs.is_empty() => {
            match vpcs.iter().find(|v| aws_owned(&v.tags, deployment)) {
                Some(ours) => plan.call = Some(Call::EnableDns(ours.id.clone())),
                None => {
                    let message = format!(
                        "a VPC named {} exists that this deployment did not make; it is left alone",
                        vpc_name(&n.id)
                    );
                    plan.verdict = Verdict::Failed(message);
                    plan.next = Next::After(ERROR_RETRY_MS);
                }
            }
        }
        (None, _) => plan.call = Some(Call::CreateVpc),
    }
    if plan.call.is_none() && plan.subnets.iter().any(|s| s.state == state::ERROR && !s.lost) {
        plan.next = Next::After(ERROR_RETRY_MS);
    }
    plan
}

/// Subnets first (EC2 refuses a VPC that holds any), then the VPC.
fn decide_delete(n: &network::Model, rows: &[subnet::Model], seen: &Seen, deployment: &str) -> Plan {
    let mut plan = Plan::unchanged(n, rows);
    plan.next = Next::Now;
    plan_subnets(&mut plan, rows, seen.subnets.as_deref(), deployment);
    if plan.call.is_some() {
        return plan;
    }
    let vpc = match (&n.provider_id, &seen.vpc) {
        _ if n.lost => None,
        // Another of ours under the name first; the recorded one last, even when the listing
        // does not show it (yet).
        (Some(id), VpcSeen::Named(vpcs)) => {
            let other = vpcs.iter().find(|v| &v.id != id && aws_owned(&v.tags, deployment));
            Some(other.map_or_else(|| id.clone(), |v| v.id.clone()))
        }
        (Some(id), _) => Some(id.clone()),
        // Under our name after a lost create: deleted only if ours.
        (None, VpcSeen::Named(vpcs)) => vpcs.iter().find(|v| aws_owned(&v.tags, deployment)).map(|v| v.id.clone()),
        (None, _) => None,
    };
    match vpc {
        Some(id) => plan.call = Some(Call::DeleteVpc(id)),
        None => plan.verdict = Verdict::Gone,
    }
    plan
}

/// The subnets' fields as `listing` (the VPC's subnets) shows them, and the first call one needs:
/// a subnet converging before one in error, so an error in one does not hold back the others.
fn plan_subnets(plan: &mut Plan, rows: &[subnet::Model], listing: Option<&[AwsSubnet]>, deployment: &str) {
    let mut calls = Vec::new();
    for (i, row) in rows.iter().enumerate() {
        let (fields, call) = subnet_step(i, row, listing, deployment);
        plan.subnets[i] = fields;
        calls.extend(call.map(|c| (row.state == state::ERROR, c)));
    }
    calls.sort_by_key(|(failed, _)| *failed);
    plan.call = calls.into_iter().next().map(|(_, call)| call);
}

/// One subnet of a made network: its fields as seen, and the call it needs.
pub fn subnet_step(
    i: usize,
    row: &subnet::Model,
    listing: Option<&[AwsSubnet]>,
    deployment: &str,
) -> (SubnetFields, Option<Call>) {
    let now = SubnetFields::of(row);
    let by_id = |id: &str| listing.and_then(|l| l.iter().find(|s| s.id == id));
    let by_name =
        listing.and_then(|l| l.iter().find(|s| tag_value(&s.tags, "Name") == Some(row.provider_name.as_str())));
    let ours = by_name.filter(|s| aws_owned(&s.tags, deployment));
    if row.state == state::DELETED {
        return (now, None);
    }
    if row.desired_state == state::ABSENT {
        return match (&row.provider_id, by_name) {
            _ if row.lost => (now.deleted(), None),
            // Without a listing (the VPC was not read) the delete itself says whether it is gone.
            (Some(id), _) if listing.is_none() || by_id(id).is_some() => (now, Some(Call::DeleteSubnet(i, id.clone()))),
            (None, _) if ours.is_some() => (now, ours.map(|s| Call::DeleteSubnet(i, s.id.clone()))),
            // Gone already, never made, or under our name but not ours (never deleted).
            _ => (now.deleted(), None),
        };
    }
    // A present subnet is only judged against a listing of its VPC.
    if listing.is_none() {
        return (now, None);
    }
    match (&row.provider_id, by_name) {
        _ if row.lost => (now, None),
        (Some(id), _) if by_id(id).is_some() => (now.with_state(state::READY, None), None),
        (Some(id), _) => {
            let message = format!(
                "subnet {id} was deleted outside vps-graph; it is not made again: remove the subnet or delete the network"
            );
            (SubnetFields { lost: true, ..now.with_state(state::ERROR, Some(message)) }, None)
        }
        (None, Some(found)) if aws_owned(&found.tags, deployment) => {
            (SubnetFields { provider_id: Some(found.id.clone()), ..now.with_state(state::READY, None) }, None)
        }
        (None, Some(_)) => {
            let message = format!(
                "a subnet named {} exists in the VPC that this deployment did not make; it is left alone",
                row.provider_name
            );
            (now.with_state(state::ERROR, Some(message)), None)
        }
        (None, None) => (now, Some(Call::CreateSubnet(i))),
    }
}

/// An adopted network: read, never changed at the provider. Its subnets are EC2's.
fn decide_adopted(n: &network::Model, rows: &[subnet::Model], seen: &Seen, deployment: &str) -> Plan {
    let mut plan = Plan::unchanged(n, rows);
    let vpc_id = n.provider_id.clone().unwrap_or_default();
    let region = n.region.clone().unwrap_or_default();
    let gone_message = || format!("the adopted VPC {vpc_id} is gone from {region}: delete the network");
    let forget_subnets = |plan: &mut Plan| {
        for (fields, row) in plan.subnets.iter_mut().zip(rows) {
            if row.state != state::DELETED {
                *fields = fields.clone().deleted();
            }
        }
    };
    if n.desired_state == state::ABSENT {
        forget_subnets(&mut plan);
        plan.verdict = Verdict::Gone;
        plan.next = Next::Now;
        return plan;
    }
    if n.lost {
        plan.verdict = Verdict::Failed(gone_message());
        return plan;
    }
    match &seen.vpc {
        // A VPC this deployment made is some network's, never a tenant's to adopt.
        VpcSeen::Found(vpc) if aws_owned(&vpc.tags, deployment) => {
            let message = format!("VPC {vpc_id} was made by vps-graph for a network; it is not adopted");
            plan.verdict = Verdict::Failed(message);
        }
        VpcSeen::Found(vpc) => {
            plan.vpc.ip_range = Some(vpc.cidr_block.clone());
            plan.verdict = Verdict::Ready;
            let listing = seen.subnets.clone().unwrap_or_default();
            for (fields, row) in plan.subnets.iter_mut().zip(rows) {
                let present = row.desired_state == state::PRESENT && row.state != state::DELETED;
                let there = row.provider_id.as_ref().is_some_and(|id| listing.iter().any(|s| &s.id == id));
                if present && !there {
                    *fields = fields.clone().deleted();
                }
            }
            let recorded = |id: &str| rows.iter().any(|r| r.provider_id.as_deref() == Some(id));
            plan.found = listing.into_iter().filter(|s| !recorded(&s.id)).collect();
        }
        // Read before: it went away. Never read: the id may be wrong, or not yet visible.
        VpcSeen::Missing if n.ip_range.is_some() => {
            plan.vpc.lost = true;
            plan.verdict = Verdict::Failed(gone_message());
            forget_subnets(&mut plan);
        }
        VpcSeen::Missing => {
            let message = format!("VPC {vpc_id} was not found in {region}; it is looked for again every 5 minutes");
            plan.verdict = Verdict::Failed(message);
            plan.next = Next::After(ERROR_RETRY_MS);
        }
        VpcSeen::NotAsked | VpcSeen::Named(_) => {}
    }
    plan
}

/// The plan after `call` answered. A create is answered on the rows as marked before the call,
/// its attempt already counted.
pub fn after(mut plan: Plan, call: &Call, answer: std::result::Result<Answer, ProviderError>) -> Plan {
    plan.next = Next::Now;
    match (call, answer) {
        (Call::CreateVpc, Ok(Answer::Vpc(vpc))) => {
            plan.vpc.provider_id = Some(vpc.id);
            plan.verdict = Verdict::Ready;
        }
        (Call::EnableDns(id), Ok(_)) => {
            plan.vpc.provider_id = Some(id.clone());
            plan.verdict = Verdict::Ready;
        }
        (Call::CreateSubnet(i), Ok(Answer::Subnet(made))) => {
            let fields = plan.subnets[*i].clone();
            plan.subnets[*i] = SubnetFields { provider_id: Some(made.id), ..fields.with_state(state::READY, None) };
        }
        (Call::DeleteSubnet(i, _), Ok(_)) => plan.subnets[*i] = plan.subnets[*i].clone().deleted(),
        // The recorded VPC was the last to go; after any other of ours, look again.
        (Call::DeleteVpc(id), Ok(_)) if plan.vpc.provider_id.as_ref() == Some(id) => plan.verdict = Verdict::Gone,
        (Call::DeleteVpc(_), Ok(_)) => {}
        (Call::CreateVpc | Call::CreateSubnet(_), Ok(_)) => {}
        (call, Err(err)) => failed_call(&mut plan, call, &err),
    }
    plan
}

/// A call that did not succeed: wait and say why, or fail (a refusal, retried every 5 minutes).
fn failed_call(plan: &mut Plan, call: &Call, err: &ProviderError) {
    let busy = err.aws_code() == Some("DependencyViolation");
    let message = match err {
        ProviderError::Unknown { message } if matches!(call, Call::CreateVpc | Call::CreateSubnet(_)) => {
            format!("the create's answer was lost ({message}); looking for it by its name")
        }
        other => other.message().to_owned(),
    };
    // A delete EC2 refuses while something remains in it is looked at again soon.
    plan.next = if busy { Next::After(RETRY_LATER_MS) } else { retry_after(err) };
    let fails = is_failure(err) && !busy;
    match call {
        Call::CreateVpc | Call::EnableDns(_) if fails => plan.verdict = Verdict::Failed(message),
        Call::CreateVpc | Call::EnableDns(_) | Call::DeleteVpc(_) => plan.verdict = Verdict::Waiting(Some(message)),
        Call::CreateSubnet(i) if fails => {
            plan.subnets[*i] = plan.subnets[*i].clone().with_state(state::ERROR, Some(message))
        }
        Call::CreateSubnet(i) | Call::DeleteSubnet(i, _) => plan.subnets[*i].message = Some(message),
    }
}

/// The network's state and message from the verdict on its VPC and its subnets' states.
pub fn network_state(desired: &str, verdict: &Verdict, subnets: &[subnet::Model]) -> (String, Option<String>) {
    if desired == state::ABSENT {
        if *verdict == Verdict::Gone && subnets.iter().all(|s| s.state == state::DELETED) {
            return (state::DELETED.into(), None);
        }
        let own = match verdict {
            Verdict::Waiting(message) => message.clone(),
            Verdict::Failed(message) => Some(message.clone()),
            _ => None,
        };
        let message =
            own.or_else(|| subnets.iter().filter(|s| s.state != state::DELETED).find_map(|s| s.message.clone()));
        return (state::DELETING.into(), message);
    }
    match verdict {
        Verdict::Failed(message) => (state::ERROR.into(), Some(message.clone())),
        Verdict::Waiting(message) => (state::PENDING.into(), message.clone()),
        Verdict::Gone => (state::PENDING.into(), None),
        // An adopted VPC may have no subnets at all: it is ready once read.
        Verdict::Ready if !subnets.iter().any(|s| s.desired_state == state::PRESENT) => (state::READY.into(), None),
        Verdict::Ready => aggregate(desired, subnets),
    }
}

/// The rows as the plan would leave them (without the adopted subnets still to be recorded).
fn applied(rows: &[subnet::Model], plan: &Plan) -> Vec<subnet::Model> {
    rows.iter()
        .zip(&plan.subnets)
        .map(|(row, f)| subnet::Model {
            state: f.state.clone(),
            desired_state: f.desired_state.clone(),
            provider_id: f.provider_id.clone(),
            create_attempts: f.create_attempts,
            lost: f.lost,
            message: f.message.clone(),
            ..row.clone()
        })
        .collect()
}

/// Whether the plan changes nothing that is recorded.
pub fn changes_nothing(n: &network::Model, rows: &[subnet::Model], plan: &Plan) -> bool {
    let (state_now, message) = network_state(&n.desired_state, &plan.verdict, &applied(rows, plan));
    plan.vpc == VpcFields::of(n)
        && plan.found.is_empty()
        && rows.iter().zip(&plan.subnets).all(|(row, f)| SubnetFields::of(row) == *f)
        && state_now == n.state
        && message == n.message
}

/// A run on an AWS account (`NetworkReconciler::run` hands it over).
pub(super) async fn run(
    run: &Run<'_>,
    network: network::Model,
    rows: Vec<subnet::Model>,
    provider: &Provider,
) -> Result<Next> {
    let Some(api) = provider.aws_networks.clone() else {
        return Err(Error::internal(format!("account {} offers no AWS networks", network.provider_account_id)));
    };
    let deployment = run.services.deployment.clone();
    let seen = match observe(api.as_ref(), &network).await {
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
        let answer = execute(api.as_ref(), &network, &rows, &call, &deployment).await;
        plan = after(plan, &call, answer);
    }
    finish(run, &network, &rows, &plan).await
}

async fn finish(run: &Run<'_>, network: &network::Model, rows: &[subnet::Model], plan: &Plan) -> Result<Next> {
    if !write_back(run, network, rows, plan).await? {
        return Ok(Next::Now);
    }
    let now = network::Entity::find_by_id(network.id.clone()).one(&run.services.db).await?;
    Ok(if now.is_none_or(|n| n.state == state::DELETED) { Next::Done } else { plan.next })
}

async fn observe(api: &dyn AwsNetworks, n: &network::Model) -> std::result::Result<Seen, ProviderError> {
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
    api: &dyn AwsNetworks,
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

/// Records a VPC create attempt on the network before the call (fenced and version-checked);
/// returns the network as written, or None when the run must look again.
async fn mark_vpc_attempt(run: &Run<'_>, current: &network::Model) -> Result<Option<network::Model>> {
    let txn = run.services.begin().await?;
    lock_network(&txn, &current.id).await?;
    let changed = network::Entity::update_many()
        .col_expr(network::Column::CreateAttempts, Expr::col(network::Column::CreateAttempts).add(1))
        .col_expr(network::Column::Version, Expr::col(network::Column::Version).add(1))
        .filter(network::Column::Id.eq(current.id.clone()))
        .filter(network::Column::Version.eq(current.version))
        .exec(&txn)
        .await?
        .rows_affected;
    if changed == 0 || !queue::fence(&txn, run.claimed).await? {
        return Ok(None);
    }
    let marked = network::Entity::find_by_id(current.id.clone()).one(&txn).await?;
    txn.commit().await?;
    Ok(marked)
}

/// Writes the plan (the network's VPC fields and state, its subnets, the adopted subnets found)
/// with the network's event, if this run still holds its lease and nothing changed meanwhile.
/// The network's filesystems are woken when it turns ready or its subnets change. False: look again.
async fn write_back(run: &Run<'_>, current: &network::Model, rows: &[subnet::Model], plan: &Plan) -> Result<bool> {
    if changes_nothing(current, rows, plan) {
        return Ok(true);
    }
    let services = run.services;
    let txn = services.begin().await?;
    lock_network(&txn, &current.id).await?;
    let now = services.clock.now();
    let mut subnets_changed = !plan.found.is_empty();
    for (row, fields) in rows.iter().zip(&plan.subnets) {
        if SubnetFields::of(row) == *fields {
            continue;
        }
        if !write_subnet(&txn, row, fields, now).await? {
            return Ok(false);
        }
        subnets_changed = true;
    }
    for found in &plan.found {
        record_subnet(&txn, current, found, now).await?;
    }
    if !queue::fence(&txn, run.claimed).await? {
        return Ok(false);
    }
    let subnets = subnets_of(&txn, &current.id).await?;
    let (state_now, message) = network_state(&current.desired_state, &plan.verdict, &subnets);
    let Some(written) = write_network(&txn, current, &plan.vpc, &state_now, message, now).await? else {
        return Ok(false);
    };
    let turned_ready = written.state == state::READY && current.state != state::READY;
    let event_type = if written.state != current.state { written.state.clone() } else { "updated".into() };
    let event = svc::event(&event_type, &svc::view(&written, &subnets));
    if turned_ready || subnets_changed {
        // The filesystem reconciler places mount targets and file systems in these subnets.
        let due = services.clock.now_ms();
        for fs in crate::store::filesystems::live_of(&txn, &current.id).await? {
            queue::wake(&txn, filesystems::RECONCILER, &fs.id, due).await?;
        }
        services.commit_and_wake(txn, vec![event]).await?;
    } else {
        services.commit(txn, vec![event]).await?;
    }
    Ok(true)
}

/// The fields of one subnet, if its version is still `current`'s.
async fn write_subnet(
    txn: &DatabaseTransaction,
    current: &subnet::Model,
    fields: &SubnetFields,
    now: DateTimeUtc,
) -> Result<bool> {
    let mut update = subnet::Entity::update_many()
        .col_expr(subnet::Column::State, Expr::value(fields.state.clone()))
        .col_expr(subnet::Column::DesiredState, Expr::value(fields.desired_state.clone()))
        .col_expr(subnet::Column::ProviderId, Expr::value(fields.provider_id.clone()))
        .col_expr(subnet::Column::CreateAttempts, Expr::value(fields.create_attempts))
        .col_expr(subnet::Column::Lost, Expr::value(fields.lost))
        .col_expr(subnet::Column::Message, Expr::value(fields.message.clone()))
        .col_expr(subnet::Column::Version, Expr::col(subnet::Column::Version).add(1))
        .col_expr(subnet::Column::UpdatedAt, Expr::value(now));
    if fields.state == state::READY && current.ready_at.is_none() {
        update = update.col_expr(subnet::Column::ReadyAt, Expr::value(now));
    }
    if fields.state == state::DELETED && current.deleted_at.is_none() {
        update = update.col_expr(subnet::Column::DeletedAt, Expr::value(now));
    }
    let changed = update
        .filter(subnet::Column::Id.eq(current.id.clone()))
        .filter(subnet::Column::Version.eq(current.version))
        .exec(txn)
        .await?
        .rows_affected;
    Ok(changed == 1)
}

/// An adopted VPC's subnet, recorded as EC2 shows it: ready, named by its `Name` tag or its id.
async fn record_subnet(
    txn: &DatabaseTransaction,
    n: &network::Model,
    found: &AwsSubnet,
    now: DateTimeUtc,
) -> Result<subnet::Model> {
    let name = tag_value(&found.tags, "Name").unwrap_or(&found.id).to_owned();
    Ok(subnet::ActiveModel {
        id: Set(ids::new_id(ids::SUBNET)),
        network_id: Set(n.id.clone()),
        region: Set(n.region.clone().unwrap_or_default()),
        ip_range: Set(found.cidr_block.clone()),
        state: Set(state::READY.into()),
        desired_state: Set(state::PRESENT.into()),
        provider_id: Set(Some(found.id.clone())),
        provider_name: Set(name),
        create_attempts: Set(0),
        lost: Set(false),
        message: Set(None),
        version: Set(1),
        created_at: Set(now),
        updated_at: Set(now),
        ready_at: Set(Some(now)),
        deleted_at: Set(None),
        zone: Set(Some(found.availability_zone.clone())),
    }
    .insert(txn)
    .await?)
}

/// The network's VPC fields and state, if its version is still `current`'s; the row written.
async fn write_network(
    txn: &DatabaseTransaction,
    current: &network::Model,
    vpc: &VpcFields,
    state_now: &str,
    message: Option<String>,
    now: DateTimeUtc,
) -> Result<Option<network::Model>> {
    let mut update = network::Entity::update_many()
        .col_expr(network::Column::State, Expr::value(state_now))
        .col_expr(network::Column::Message, Expr::value(message))
        .col_expr(network::Column::ProviderId, Expr::value(vpc.provider_id.clone()))
        .col_expr(network::Column::CreateAttempts, Expr::value(vpc.create_attempts))
        .col_expr(network::Column::Lost, Expr::value(vpc.lost))
        .col_expr(network::Column::IpRange, Expr::value(vpc.ip_range.clone()))
        .col_expr(network::Column::Version, Expr::col(network::Column::Version).add(1))
        .col_expr(network::Column::UpdatedAt, Expr::value(now));
    if state_now == state::READY && current.ready_at.is_none() {
        update = update.col_expr(network::Column::ReadyAt, Expr::value(now));
    }
    if state_now == state::DELETED {
        update = update.col_expr(network::Column::DeletedAt, Expr::value(now));
    }
    let changed = update
        .filter(network::Column::Id.eq(current.id.clone()))
        .filter(network::Column::Version.eq(current.version))
        .exec(txn)
        .await?
        .rows_affected;
    if changed == 0 {
        return Ok(None);
    }
    Ok(network::Entity::find_by_id(current.id.clone()).one(txn).await?)
}

#[cfg(test)]
mod tests {
    use chrono::Utc;

    use super::*;
    use crate::provider::Tag;

    const DEP: &str = "dep";

    fn network(desired: &str, provider_id: Option<&str>, attempts: i32, lost: bool, adopted: bool) -> network::Model {
        let now = Utc::now();
        network::Model {
            id: "net_1".into(),
            tenant_id: "acme".into(),
            project_id: None,
            pool_id: "pool_1".into(),
            provider_account_id: "acct_1".into(),
            name: "web".into(),
            description: None,
            state: if desired == state::ABSENT { state::DELETING } else { state::PENDING }.into(),
            desired_state: desired.into(),
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
        }
    }

    fn row(n: u8, state: &str, desired: &str, provider_id: Option<&str>, attempts: i32) -> subnet::Model {
        let now = Utc::now();
        subnet::Model {
            id: format!("sub_{n}"),
            network_id: "net_1".into(),
            region: "us-east-1".into(),
            ip_range: format!("10.20.{n}.0/24"),
            state: state.into(),
            desired_state: desired.into(),
            provider_id: provider_id.map(str::to_owned),
            provider_name: format!("bc-sub-{n}"),
            create_attempts: attempts,
            lost: false,
            message: None,
            version: 1,
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
        use state::*;
        let cases = [
            (network(PRESENT, None, 0, false, false), Look::Nothing),
            (network(PRESENT, None, 1, false, false), Look::ByName("bc-net_1".into())),
            (network(PRESENT, Some("vpc-1"), 1, false, false), Look::ById("vpc-1".into())),
            (network(PRESENT, Some("vpc-1"), 1, true, false), Look::Nothing),
            (network(ABSENT, Some("vpc-1"), 1, false, false), Look::Nothing),
            (network(ABSENT, Some("vpc-1"), 2, false, false), Look::ByName("bc-net_1".into())),
            (network(ABSENT, None, 2, false, false), Look::ByName("bc-net_1".into())),
            (network(PRESENT, Some("vpc-9"), 0, false, true), Look::ById("vpc-9".into())),
            (network(ABSENT, Some("vpc-9"), 0, false, true), Look::Nothing),
        ];
        for (n, expected) in cases {
            assert_eq!(look(&n), expected, "{n:?}");
        }
        let deleting = network(ABSENT, Some("vpc-1"), 1, false, false);
        assert_eq!(subnets_to_read(&deleting, &VpcSeen::NotAsked), Some("vpc-1"), "a delete reads the subnets");
        let present = network(PRESENT, Some("vpc-1"), 1, false, false);
        assert_eq!(subnets_to_read(&present, &VpcSeen::Missing), None);
    }

    #[test]
    fn the_vpc_is_created_or_looked_up_by_name_and_a_foreign_one_is_never_adopted() {
        use state::*;
        let rows = vec![row(1, PENDING, PRESENT, None, 0)];
        // (network, seen, expected call, expected verdict)
        let cases = [
            (network(PRESENT, None, 0, false, false), VpcSeen::NotAsked, Some(Call::CreateVpc), Verdict::Waiting(None)),
            (
                network(PRESENT, None, 1, false, false),
                VpcSeen::Named(vec![]),
                Some(Call::CreateVpc),
                Verdict::Waiting(None),
            ),
            (
                network(PRESENT, None, 1, false, false),
                VpcSeen::Named(vec![vpc("vpc-f", None), vpc("vpc-1", Some(DEP))]),
                Some(Call::EnableDns("vpc-1".into())),
                Verdict::Waiting(None),
            ),
            (
                network(PRESENT, None, 1, false, false),
                VpcSeen::Named(vec![vpc("vpc-f", Some("other deployment"))]),
                None,
                Verdict::Failed(
                    "a VPC named bc-net_1 exists that this deployment did not make; it is left alone".into(),
                ),
            ),
        ];
        for (n, vpc_seen, call, verdict) in cases {
            let plan = decide(&n, &rows, &seen(vpc_seen.clone(), None), DEP);
            assert_eq!((&plan.call, &plan.verdict), (&call, &verdict), "{vpc_seen:?}");
            if call.is_none() {
                assert_eq!(plan.next, Next::After(ERROR_RETRY_MS), "a foreign VPC: looked at again in 5 minutes");
                assert_eq!(network_state(PRESENT, &plan.verdict, &rows).0, ERROR);
            }
        }
    }

    #[test]
    fn a_vpc_deleted_outside_is_lost_and_never_made_again() {
        use state::*;
        let n = network(PRESENT, Some("vpc-1"), 1, false, false);
        let rows = vec![row(1, READY, PRESENT, Some("subnet-1"), 1)];
        let plan = decide(&n, &rows, &seen(VpcSeen::Missing, None), DEP);
        assert_eq!(plan.call, None);
        assert!(plan.vpc.lost);
        assert!(plan.subnets[0].lost && plan.subnets[0].state == ERROR, "its subnets went with it");
        assert_eq!(network_state(PRESENT, &plan.verdict, &applied(&rows, &plan)).0, ERROR);
        let lost = network::Model { lost: true, ..n };
        assert_eq!(look(&lost), Look::Nothing);
        let again = decide(&lost, &rows, &seen(VpcSeen::NotAsked, None), DEP);
        assert_eq!(again.call, None, "never made again");
        assert!(matches!(again.verdict, Verdict::Failed(_)));
    }

    #[test]
    fn subnets_are_made_one_per_run_and_a_lost_answer_is_found_by_name_and_tag() {
        use state::*;
        let n = network(PRESENT, Some("vpc-1"), 1, false, false);
        let found = VpcSeen::Found(vpc("vpc-1", Some(DEP)));
        let rows = vec![row(1, PENDING, PRESENT, None, 0), row(2, PENDING, PRESENT, None, 0)];
        let plan = decide(&n, &rows, &seen(found.clone(), Some(vec![])), DEP);
        assert_eq!(plan.call, Some(Call::CreateSubnet(0)));
        assert_eq!(network_state(PRESENT, &plan.verdict, &rows).0, PENDING);

        // Subnet 1's create answer was lost: it is ours under its name; subnet 2 is made next.
        let rows = vec![row(1, PENDING, PRESENT, None, 1), row(2, PENDING, PRESENT, None, 0)];
        let listing = vec![ec2_subnet("subnet-1", Some("bc-sub-1"), Some(DEP))];
        let plan = decide(&n, &rows, &seen(found.clone(), Some(listing)), DEP);
        assert_eq!((plan.subnets[0].state.as_str(), plan.subnets[0].provider_id.as_deref()), (READY, Some("subnet-1")));
        assert_eq!(plan.call, Some(Call::CreateSubnet(1)));

        // Under its name without our tag: left alone.
        let listing = vec![ec2_subnet("subnet-f", Some("bc-sub-1"), None)];
        let plan = decide(&n, &rows[..1], &seen(found.clone(), Some(listing)), DEP);
        assert_eq!((plan.call.as_ref(), plan.subnets[0].state.as_str()), (None, ERROR));
        assert_eq!(plan.subnets[0].provider_id, None);
        assert_eq!(plan.next, Next::After(ERROR_RETRY_MS));

        // A made subnet gone at EC2: lost, never made again.
        let rows = vec![row(1, READY, PRESENT, Some("subnet-1"), 1)];
        let plan = decide(&n, &rows, &seen(found.clone(), Some(vec![])), DEP);
        assert_eq!((plan.call.as_ref(), plan.subnets[0].state.as_str(), plan.subnets[0].lost), (None, ERROR, true));

        // All there: ready, nothing to do, read again in an hour.
        let listing = vec![ec2_subnet("subnet-1", Some("bc-sub-1"), Some(DEP))];
        let plan = decide(&n, &rows, &seen(found, Some(listing)), DEP);
        assert_eq!((plan.call.as_ref(), plan.next), (None, Next::Drift));
        assert_eq!(network_state(PRESENT, &plan.verdict, &rows).0, READY);
        let settled = network::Model { state: READY.into(), ..n };
        assert!(changes_nothing(&settled, &rows, &plan));
    }

    #[test]
    fn a_delete_after_two_creates_removes_every_vpc_of_ours_under_the_name_the_recorded_one_last() {
        use state::*;
        // Two creates were sent: the first one's answer was lost and the look missed its VPC.
        let n = network(ABSENT, Some("vpc-2"), 2, false, false);
        let named = vec![vpc("vpc-1", Some(DEP)), vpc("vpc-2", Some(DEP)), vpc("vpc-f", None)];
        let plan = decide(&n, &[], &seen(VpcSeen::Named(named), Some(vec![])), DEP);
        assert_eq!(
            plan.call,
            Some(Call::DeleteVpc("vpc-1".into())),
            "the stray one of ours first, never the foreign one"
        );
        let after_stray = after(plan, &Call::DeleteVpc("vpc-1".into()), Ok(Answer::Done));
        assert_eq!(network_state(ABSENT, &after_stray.verdict, &[]).0, DELETING, "not done: look again");
        let named = vec![vpc("vpc-2", Some(DEP)), vpc("vpc-f", None)];
        let plan = decide(&n, &[], &seen(VpcSeen::Named(named), Some(vec![])), DEP);
        assert_eq!(plan.call, Some(Call::DeleteVpc("vpc-2".into())), "then the recorded one");
        let done = after(plan, &Call::DeleteVpc("vpc-2".into()), Ok(Answer::Done));
        assert_eq!(network_state(ABSENT, &done.verdict, &[]).0, DELETED);
        // The listing not showing the recorded one yet: it is deleted all the same.
        let plan = decide(&n, &[], &seen(VpcSeen::Named(vec![]), Some(vec![])), DEP);
        assert_eq!(plan.call, Some(Call::DeleteVpc("vpc-2".into())));
    }

    #[test]
    fn a_delete_removes_the_subnets_then_the_vpc_and_waits_on_a_dependency_violation() {
        use state::*;
        let n = network(ABSENT, Some("vpc-1"), 1, false, false);
        let listing = vec![ec2_subnet("subnet-1", Some("bc-sub-1"), Some(DEP))];
        let rows = vec![row(1, DELETING, ABSENT, Some("subnet-1"), 1), row(2, DELETING, ABSENT, Some("subnet-2"), 1)];
        let plan = decide(&n, &rows, &seen(VpcSeen::NotAsked, Some(listing)), DEP);
        assert_eq!(plan.call, Some(Call::DeleteSubnet(0, "subnet-1".into())), "subnets first");
        assert_eq!(plan.subnets[1].state, DELETED, "one gone already needs no call");

        let deleted = after(plan, &Call::DeleteSubnet(0, "subnet-1".into()), Ok(Answer::Done));
        assert_eq!((deleted.subnets[0].state.as_str(), deleted.next), (DELETED, Next::Now));
        let rows = applied(&rows, &deleted);
        let plan = decide(&n, &rows, &seen(VpcSeen::NotAsked, Some(vec![])), DEP);
        assert_eq!(plan.call, Some(Call::DeleteVpc("vpc-1".into())), "then the VPC");

        let busy = Err(ProviderError::Refused {
            status: 400,
            message: "AWS DependencyViolation: The vpc 'vpc-1' has dependencies and cannot be deleted.".into(),
        });
        let waiting = after(plan.clone(), &Call::DeleteVpc("vpc-1".into()), busy);
        assert_eq!(waiting.next, Next::After(RETRY_LATER_MS));
        let (state_now, message) = network_state(ABSENT, &waiting.verdict, &rows);
        assert_eq!(state_now, DELETING);
        assert!(message.is_some_and(|m| m.contains("DependencyViolation")));

        let done = after(plan, &Call::DeleteVpc("vpc-1".into()), Ok(Answer::Done));
        assert_eq!(network_state(ABSENT, &done.verdict, &rows).0, DELETED);

        // A subnet whose create answer was lost is deleted only when ours; a foreign one never.
        let rows = vec![row(1, DELETING, ABSENT, None, 1)];
        let ours = vec![ec2_subnet("subnet-1", Some("bc-sub-1"), Some(DEP))];
        let plan = decide(&n, &rows, &seen(VpcSeen::NotAsked, Some(ours)), DEP);
        assert_eq!(plan.call, Some(Call::DeleteSubnet(0, "subnet-1".into())));
        let foreign = vec![ec2_subnet("subnet-f", Some("bc-sub-1"), None)];
        let plan = decide(&n, &rows, &seen(VpcSeen::NotAsked, Some(foreign)), DEP);
        assert_eq!(plan.subnets[0].state, DELETED);
        assert_eq!(plan.call, Some(Call::DeleteVpc("vpc-1".into())));

        // A VPC never made, or under our name but not ours: nothing to delete.
        let never = network(ABSENT, None, 1, false, false);
        let plan = decide(&never, &[], &seen(VpcSeen::Named(vec![vpc("vpc-f", None)]), None), DEP);
        assert_eq!((plan.call, plan.verdict), (None, Verdict::Gone));
        // A removed subnet of a live network is deleted while the network stays ready.
        let live = network(PRESENT, Some("vpc-1"), 1, false, false);
        let rows = vec![row(1, READY, PRESENT, Some("subnet-1"), 1), row(2, DELETING, ABSENT, Some("subnet-2"), 1)];
        let listing = vec![
            ec2_subnet("subnet-1", Some("bc-sub-1"), Some(DEP)),
            AwsSubnet { id: "subnet-2".into(), ..ec2_subnet("subnet-2", Some("bc-sub-2"), Some(DEP)) },
        ];
        let plan = decide(&live, &rows, &seen(VpcSeen::Found(vpc("vpc-1", Some(DEP))), Some(listing)), DEP);
        assert_eq!(plan.call, Some(Call::DeleteSubnet(1, "subnet-2".into())));
        assert_eq!(network_state(PRESENT, &plan.verdict, &rows).0, READY);
    }

    #[test]
    fn after_a_create() {
        use state::*;
        let n = network(PRESENT, None, 1, false, false);
        let rows = vec![row(1, PENDING, PRESENT, None, 0)];
        let plan = decide(&n, &rows, &seen(VpcSeen::NotAsked, None), DEP);
        let made = after(plan.clone(), &Call::CreateVpc, Ok(Answer::Vpc(vpc("vpc-1", Some(DEP)))));
        assert_eq!((made.vpc.provider_id.as_deref(), made.next), (Some("vpc-1"), Next::Now));
        assert_eq!(network_state(PRESENT, &made.verdict, &rows).0, PENDING, "ready once its subnets are");
        let lost = after(plan.clone(), &Call::CreateVpc, Err(ProviderError::Unknown { message: "timeout".into() }));
        assert_eq!((lost.vpc.provider_id.as_deref(), lost.next), (None, Next::Backoff(RETRY_LATER_MS)));
        assert!(matches!(&lost.verdict, Verdict::Waiting(Some(m)) if m.contains("lost")));
        let refused = Err(ProviderError::Refused { status: 400, message: "AWS VpcLimitExceeded: too many".into() });
        let refused = after(plan.clone(), &Call::CreateVpc, refused);
        assert_eq!(refused.next, Next::After(ERROR_RETRY_MS));
        assert_eq!(network_state(PRESENT, &refused.verdict, &rows).0, ERROR);
        let limited = Err(ProviderError::RetryLater {
            message: "AWS RequestLimitExceeded: slow down".into(),
            after: std::time::Duration::from_secs(1),
        });
        let n = network(PRESENT, Some("vpc-1"), 1, false, false);
        let plan = decide(&n, &rows, &seen(VpcSeen::Found(vpc("vpc-1", Some(DEP))), Some(vec![])), DEP);
        let waiting = after(plan, &Call::CreateSubnet(0), limited);
        assert_eq!((waiting.subnets[0].state.as_str(), waiting.next), (PENDING, Next::Backoff(RETRY_LATER_MS)));
    }

    #[test]
    fn an_adopted_network_is_read_and_never_made_or_deleted() {
        use state::*;
        let n = network(PRESENT, Some("vpc-9"), 0, false, true);
        let recorded = row(1, READY, PRESENT, Some("subnet-1"), 0);
        let listing = vec![
            ec2_subnet("subnet-2", Some("theirs"), None),
            AwsSubnet { id: "subnet-3".into(), ..ec2_subnet("x", None, None) },
        ];
        let found = VpcSeen::Found(AwsVpc { cidr_block: "172.16.0.0/16".into(), ..vpc("vpc-9", None) });
        let plan = decide(&n, std::slice::from_ref(&recorded), &seen(found, Some(listing)), DEP);
        assert_eq!(plan.vpc.ip_range.as_deref(), Some("172.16.0.0/16"));
        assert_eq!(plan.found.iter().map(|s| s.id.as_str()).collect::<Vec<_>>(), ["subnet-2", "subnet-3"]);
        assert_eq!((plan.subnets[0].state.as_str(), plan.subnets[0].desired_state.as_str()), (DELETED, ABSENT));
        assert_eq!(plan.verdict, Verdict::Ready);

        let plan = decide(&n, &[], &seen(VpcSeen::Missing, None), DEP);
        assert!(matches!(&plan.verdict, Verdict::Failed(m) if m.contains("vpc-9")));
        assert_eq!((plan.next, plan.vpc.lost), (Next::After(ERROR_RETRY_MS), false));
        let read_before = network::Model { ip_range: Some("172.16.0.0/16".into()), ..n.clone() };
        assert!(decide(&read_before, &[], &seen(VpcSeen::Missing, None), DEP).vpc.lost, "gone after being read");

        // No provider call for any state or observation.
        let rows = vec![recorded.clone(), row(2, DELETING, ABSENT, Some("subnet-2"), 0)];
        for desired in [PRESENT, ABSENT] {
            for lost in [false, true] {
                let n = network(desired, Some("vpc-9"), 0, lost, true);
                for vpc_seen in [VpcSeen::NotAsked, VpcSeen::Missing, VpcSeen::Found(vpc("vpc-9", None))] {
                    let plan = decide(&n, &rows, &seen(vpc_seen, Some(vec![])), DEP);
                    assert_eq!(plan.call, None, "{desired} lost={lost}");
                }
            }
        }
        let deleting = network(ABSENT, Some("vpc-9"), 0, false, true);
        let plan = decide(&deleting, &rows, &seen(VpcSeen::NotAsked, None), DEP);
        assert!(plan.subnets.iter().all(|s| s.state == DELETED));
        assert_eq!(network_state(ABSENT, &plan.verdict, &applied(&rows, &plan)).0, DELETED);
    }
}
