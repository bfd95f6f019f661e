//! What an AWS network run decides: plain functions of the rows and of what EC2 showed, with
//! no I/O (`super` reads, calls and writes).

use crate::provider::{AwsSubnet, AwsVpc, ProviderError, Refusal, aws_owned, tag_value};
use crate::reconcile::networks::aggregate;
use crate::reconcile::{ERROR_RETRY_MS, Next, RETRY_LATER_MS, is_failure, retry_after};
use crate::store::entity::{network, network_subnet as subnet};
use crate::store::state::{Desired, State};

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
    pub(super) fn of(n: &network::Model) -> Self {
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
    pub state: State,
    pub desired_state: Desired,
    pub provider_id: Option<String>,
    pub create_attempts: i32,
    pub lost: bool,
    pub message: Option<String>,
}

impl SubnetFields {
    pub(super) fn of(s: &subnet::Model) -> Self {
        SubnetFields {
            state: s.state,
            desired_state: s.desired_state,
            provider_id: s.provider_id.clone(),
            create_attempts: s.create_attempts,
            lost: s.lost,
            message: s.message.clone(),
        }
    }

    pub(super) fn with_state(mut self, state: State, message: Option<String>) -> Self {
        self.state = state;
        self.message = message;
        self
    }

    /// Gone for good: an adopted subnet no longer at EC2, or one deleted.
    pub(super) fn deleted(self) -> Self {
        SubnetFields { desired_state: Desired::Absent, ..self.with_state(State::Deleted, None) }
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
    pub(super) fn unchanged(n: &network::Model, rows: &[subnet::Model]) -> Self {
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
    let present = n.desired_state == Desired::Present;
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
    let deleting_adopted = n.adopted && n.desired_state == Desired::Absent;
    let read = !(n.lost || deleting_adopted) && *vpc != VpcSeen::Missing;
    n.provider_id.as_deref().filter(|_| read)
}

pub fn decide(n: &network::Model, rows: &[subnet::Model], seen: &Seen, deployment: &str) -> Plan {
    match (n.adopted, n.desired_state) {
        (true, _) => decide_adopted(n, rows, seen, deployment),
        (false, Desired::Absent) => decide_delete(n, rows, seen, deployment),
        (false, _) => decide_present(n, rows, seen, deployment),
    }
}

pub(super) fn lost_message(vpc_id: &str) -> String {
    format!("VPC {vpc_id} was deleted outside vps-graph; it is not made again: delete the network")
}

pub(super) fn decide_present(n: &network::Model, rows: &[subnet::Model], seen: &Seen, deployment: &str) -> Plan {
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
                if row.desired_state == Desired::Present && row.provider_id.is_some() && !row.lost {
                    *fields =
                        SubnetFields { lost: true, ..fields.clone().with_state(State::Error, Some(gone.clone())) };
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
    if plan.call.is_none() && plan.subnets.iter().any(|s| s.state == State::Error && !s.lost) {
        plan.next = Next::After(ERROR_RETRY_MS);
    }
    plan
}

/// Subnets first (EC2 refuses a VPC that holds any), then the VPC.
pub(super) fn decide_delete(n: &network::Model, rows: &[subnet::Model], seen: &Seen, deployment: &str) -> Plan {
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
pub(super) fn plan_subnets(plan: &mut Plan, rows: &[subnet::Model], listing: Option<&[AwsSubnet]>, deployment: &str) {
    let mut calls = Vec::new();
    for (i, row) in rows.iter().enumerate() {
        let (fields, call) = subnet_step(i, row, listing, deployment);
        plan.subnets[i] = fields;
        calls.extend(call.map(|c| (row.state == State::Error, c)));
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
    if row.state == State::Deleted {
        return (now, None);
    }
    if row.desired_state == Desired::Absent {
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
        (Some(id), _) if by_id(id).is_some() => (now.with_state(State::Ready, None), None),
        (Some(id), _) => {
            let message = format!(
                "subnet {id} was deleted outside vps-graph; it is not made again: remove the subnet or delete the network"
            );
            (SubnetFields { lost: true, ..now.with_state(State::Error, Some(message)) }, None)
        }
        (None, Some(found)) if aws_owned(&found.tags, deployment) => {
            (SubnetFields { provider_id: Some(found.id.clone()), ..now.with_state(State::Ready, None) }, None)
        }
        (None, Some(_)) => {
            let message = format!(
                "a subnet named {} exists in the VPC that this deployment did not make; it is left alone",
                row.provider_name
            );
            (now.with_state(State::Error, Some(message)), None)
        }
        (None, None) => (now, Some(Call::CreateSubnet(i))),
    }
}

/// An adopted network: read, never changed at the provider. Its subnets are EC2's.
pub(super) fn decide_adopted(n: &network::Model, rows: &[subnet::Model], seen: &Seen, deployment: &str) -> Plan {
    let mut plan = Plan::unchanged(n, rows);
    let vpc_id = n.provider_id.clone().unwrap_or_default();
    let region = n.region.clone().unwrap_or_default();
    let gone_message = || format!("the adopted VPC {vpc_id} is gone from {region}: delete the network");
    let forget_subnets = |plan: &mut Plan| {
        for (fields, row) in plan.subnets.iter_mut().zip(rows) {
            if row.state != State::Deleted {
                *fields = fields.clone().deleted();
            }
        }
    };
    if n.desired_state == Desired::Absent {
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
                let present = row.desired_state == Desired::Present && row.state != State::Deleted;
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
            plan.subnets[*i] = SubnetFields { provider_id: Some(made.id), ..fields.with_state(State::Ready, None) };
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
pub(super) fn failed_call(plan: &mut Plan, call: &Call, err: &ProviderError) {
    let busy = err.refusal() == Some(Refusal::InUse);
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
            plan.subnets[*i] = plan.subnets[*i].clone().with_state(State::Error, Some(message))
        }
        Call::CreateSubnet(i) | Call::DeleteSubnet(i, _) => plan.subnets[*i].message = Some(message),
    }
}

/// The network's state and message from the verdict on its VPC and its subnets' states.
pub fn network_state(desired: Desired, verdict: &Verdict, subnets: &[subnet::Model]) -> (State, Option<String>) {
    if desired == Desired::Absent {
        if *verdict == Verdict::Gone && subnets.iter().all(|s| s.state == State::Deleted) {
            return (State::Deleted, None);
        }
        let own = match verdict {
            Verdict::Waiting(message) => message.clone(),
            Verdict::Failed(message) => Some(message.clone()),
            _ => None,
        };
        let message =
            own.or_else(|| subnets.iter().filter(|s| s.state != State::Deleted).find_map(|s| s.message.clone()));
        return (State::Deleting, message);
    }
    match verdict {
        Verdict::Failed(message) => (State::Error, Some(message.clone())),
        Verdict::Waiting(message) => (State::Pending, message.clone()),
        Verdict::Gone => (State::Pending, None),
        // An adopted VPC may have no subnets at all: it is ready once read.
        Verdict::Ready if !subnets.iter().any(|s| s.desired_state == Desired::Present) => (State::Ready, None),
        Verdict::Ready => aggregate(desired, subnets),
    }
}

/// The rows as the plan would leave them (without the adopted subnets still to be recorded).
pub(super) fn applied(rows: &[subnet::Model], plan: &Plan) -> Vec<subnet::Model> {
    rows.iter()
        .zip(&plan.subnets)
        .map(|(row, f)| subnet::Model {
            state: f.state,
            desired_state: f.desired_state,
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
    let (state_now, message) = network_state(n.desired_state, &plan.verdict, &applied(rows, plan));
    plan.vpc == VpcFields::of(n)
        && plan.found.is_empty()
        && rows.iter().zip(&plan.subnets).all(|(row, f)| SubnetFields::of(row) == *f)
        && state_now == n.state
        && message == n.message
}
