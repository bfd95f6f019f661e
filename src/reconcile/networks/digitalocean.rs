//! DigitalOcean's networks: one VPC per subnet. Each run does at most one provider step for one
//! subnet. The decisions are plain functions of the subnet row and what the provider showed
//! (`look` → `decide` → `after`), tested without a network; `run` does the I/O.
use super::{aggregate, mark_create_attempt};
use crate::error::Result;
use crate::provider::digitalocean::DigitalOcean;
use crate::provider::{ProviderError, Vpc, VpcCreate};
use crate::reconcile::{ERROR_RETRY_MS, Next, RETRY_LATER_MS, Run};
use crate::store::entity::{network, network_subnet as subnet};
use crate::store::networks::{self as store, subnets_of};
use crate::store::state::{Desired, State};
use crate::store::status::StatusWrite;

/// What to read at the provider before deciding.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Look {
    Nothing,
    ById(String),
    /// A create may have reached the provider without its answer: find it by its name.
    ByName,
}

/// What the provider showed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Seen {
    NotAsked,
    Found(Vpc),
    Missing,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Call {
    Create,
    Delete(String),
}

/// The subnet fields a run writes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Observed {
    pub state: State,
    pub provider_id: Option<String>,
    pub create_attempts: i32,
    pub lost: bool,
    pub message: Option<String>,
}

impl Observed {
    fn of(s: &subnet::Model) -> Self {
        Observed {
            state: s.state,
            provider_id: s.provider_id.clone(),
            create_attempts: s.create_attempts,
            lost: s.lost,
            message: s.message.clone(),
        }
    }

    fn with_state(mut self, state: State, message: Option<String>) -> Self {
        self.state = state;
        self.message = message;
        self
    }

    fn with_message(mut self, message: String) -> Self {
        self.message = Some(message);
        self
    }

    /// The subnet's write: its VPC as facts, its state and message as decided.
    fn status(&self, s: &subnet::Model) -> StatusWrite {
        StatusWrite::of(&s.id, s.generation)
            .fact(subnet::Column::ProviderId, self.provider_id.clone())
            .fact(subnet::Column::CreateAttempts, self.create_attempts)
            .fact(subnet::Column::Lost, self.lost)
            .decided(subnet::Column::Message, self.message.clone())
            .state(self.state)
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Step {
    Write(Observed, Next),
    Call(Call),
}

/// Whether a subnet has something to converge (a settled one is only read for drift).
pub fn needs_work(s: &subnet::Model) -> bool {
    match s.desired_state {
        Desired::Absent => s.state != State::Deleted,
        _ => s.state != State::Ready && !s.lost,
    }
}

pub fn look(s: &subnet::Model) -> Look {
    match (&s.provider_id, s.desired_state) {
        _ if s.lost => Look::Nothing,
        (Some(_), Desired::Absent) => Look::Nothing,
        (Some(id), _) => Look::ById(id.clone()),
        (None, _) if s.create_attempts > 0 => Look::ByName,
        (None, _) => Look::Nothing,
    }
}

/// What this deployment writes in the description of the VPCs it makes.
pub fn marker(deployment: &str, subnet_id: &str) -> String {
    format!("vps-graph {deployment} {subnet_id}")
}

pub fn decide(s: &subnet::Model, seen: &Seen, marker: &str) -> Step {
    let now = Observed::of(s);
    if s.desired_state == Desired::Absent {
        return match (&s.provider_id, seen) {
            _ if s.lost => Step::Write(now.with_state(State::Deleted, None), Next::Now),
            (Some(id), _) => Step::Call(Call::Delete(id.clone())),
            (None, Seen::Found(vpc)) if vpc.description == marker => Step::Call(Call::Delete(vpc.id.clone())),
            // Never made, refused, or under our name but not ours (never deleted): done.
            _ => Step::Write(now.with_state(State::Deleted, None), Next::Now),
        };
    }
    match (&s.provider_id, seen) {
        (Some(_), Seen::Found(_)) => Step::Write(now.with_state(State::Ready, None), Next::Now),
        (Some(id), Seen::Missing) => {
            let message = format!(
                "VPC {id} was deleted outside vps-graph; it is not made again: remove the subnet or delete the network"
            );
            Step::Write(Observed { lost: true, ..now.with_state(State::Error, Some(message)) }, Next::Now)
        }
        (None, Seen::Found(vpc)) if vpc.description == marker => {
            Step::Write(Observed { provider_id: Some(vpc.id.clone()), ..now.with_state(State::Ready, None) }, Next::Now)
        }
        (None, Seen::Found(vpc)) => {
            let message =
                format!("a VPC named {} exists that this deployment did not make; it is left alone", vpc.name);
            Step::Write(now.with_state(State::Error, Some(message)), Next::After(ERROR_RETRY_MS))
        }
        (None, _) => Step::Call(Call::Create),
        (Some(_), Seen::NotAsked) => Step::Write(now, Next::Now),
    }
}

/// The subnet after `call` answered `answer` (the created VPC, or nothing for a delete). A create
/// is made on the subnet as marked before the call, its attempt already counted.
pub fn after(
    s: &subnet::Model,
    call: &Call,
    answer: std::result::Result<Option<Vpc>, ProviderError>,
) -> (Observed, Next) {
    let now = Observed::of(s);
    match (call, answer) {
        (Call::Create, Ok(Some(vpc))) => {
            (Observed { provider_id: Some(vpc.id), ..now.with_state(State::Ready, None) }, Next::Now)
        }
        (Call::Delete(_), Ok(_)) => (now.with_state(State::Deleted, None), Next::Now),
        (_, Err(ProviderError::RetryLater { message, after })) => {
            let wait = std::cmp::max(RETRY_LATER_MS, after.as_millis() as i64);
            (now.with_message(message), Next::Backoff(wait))
        }
        (Call::Create, Err(ProviderError::Unknown { message })) => {
            let message = format!("the create's answer was lost ({message}); looking for the VPC by its name");
            (now.with_message(message), Next::Backoff(RETRY_LATER_MS))
        }
        // A first refusal may be our own earlier create under this name (its answer lost in a
        // crash): look by name once before calling it an error.
        (Call::Create, Err(ProviderError::Refused { message, .. })) if s.create_attempts <= 1 => {
            (now.with_message(message), Next::Now)
        }
        (Call::Delete(_), Err(ProviderError::Unknown { message })) => {
            (now.with_message(message), Next::Backoff(RETRY_LATER_MS))
        }
        (_, Err(err)) => (now.with_state(State::Error, Some(err.message().to_owned())), Next::After(ERROR_RETRY_MS)),
        (Call::Create, Ok(None)) => (now, Next::Now),
    }
}

/// A provider error while looking: wait, and say why.
fn looked_badly(s: &subnet::Model, err: ProviderError) -> (Observed, Next) {
    let now = Observed::of(s);
    match err {
        ProviderError::RetryLater { message, .. } | ProviderError::Unknown { message } => {
            (now.with_message(message), Next::Backoff(RETRY_LATER_MS))
        }
        other => (now.with_state(State::Error, Some(other.message().to_owned())), Next::After(ERROR_RETRY_MS)),
    }
}
/// One step for the subnet that needs work most, or the drift read of a settled network.
pub(super) async fn run(run: &Run<'_>, subnets: &[subnet::Model], api: &DigitalOcean) -> Result<Next> {
    let services = run.services;
    let Some(target) = pick(subnets) else {
        return drift(run, api, subnets).await;
    };
    let marker = marker(&services.deployment, &target.id);
    let (observed, hint) = match observe(api, target).await {
        Err(err) => looked_badly(target, err),
        Ok(seen) => match decide(target, &seen, &marker) {
            Step::Write(observed, next) => (observed, next),
            Step::Call(Call::Create) => {
                // Recorded before the call, so a write-back lost to a crash or a concurrent
                // change leaves a trace: the VPC is then looked up by name, never orphaned.
                let Some(marked) = mark_create_attempt(run, target).await? else { return Ok(Next::Now) };
                let answer = execute(api, &marked, &Call::Create, &marker).await;
                let (observed, next) = after(&marked, &Call::Create, answer);
                return finish_step(run, &marked, observed, next).await;
            }
            Step::Call(call) => {
                let answer = execute(api, target, &call, &marker).await;
                after(target, &call, answer)
            }
        },
    };
    finish_step(run, target, observed, hint).await
}

async fn finish_step(run: &Run<'_>, subnet: &subnet::Model, observed: Observed, hint: Next) -> Result<Next> {
    if !write_back(run, subnet, observed).await? {
        return Ok(Next::Now);
    }
    next_after(run, hint).await
}

/// The subnet to work on: one that is converging before one in error, so an error in one
/// subnet does not hold back the others.
fn pick(subnets: &[subnet::Model]) -> Option<&subnet::Model> {
    let waiting = || subnets.iter().filter(|s| needs_work(s));
    waiting().find(|s| s.state != State::Error).or_else(|| waiting().next())
}

async fn observe(api: &DigitalOcean, s: &subnet::Model) -> std::result::Result<Seen, ProviderError> {
    let found = match look(s) {
        Look::Nothing => return Ok(Seen::NotAsked),
        Look::ById(id) => api.vpc_get(&id).await?,
        Look::ByName => api.vpc_find_by_name(&s.provider_name).await?,
    };
    Ok(found.map_or(Seen::Missing, Seen::Found))
}

async fn execute(
    api: &DigitalOcean,
    s: &subnet::Model,
    call: &Call,
    marker: &str,
) -> std::result::Result<Option<Vpc>, ProviderError> {
    match call {
        Call::Create => {
            let request =
                VpcCreate { name: &s.provider_name, region: &s.region, ip_range: &s.ip_range, description: marker };
            api.vpc_create(&request).await.map(Some)
        }
        Call::Delete(id) => api.vpc_delete(id).await.map(|_| None),
    }
}

/// A settled network: read each ready subnet's VPC (one gone outside is lost, never remade).
async fn drift(run: &Run<'_>, api: &DigitalOcean, subnets: &[subnet::Model]) -> Result<Next> {
    for s in subnets.iter().filter(|s| s.state == State::Ready && s.desired_state == Desired::Present) {
        let observed = match observe(api, s).await {
            // The VPC is as it was, as far as we know: read it again soon, and write nothing.
            Err(ProviderError::RetryLater { .. } | ProviderError::Unknown { .. }) => {
                return Ok(Next::Backoff(RETRY_LATER_MS));
            }
            Err(err) => looked_badly(s, err).0,
            Ok(seen) => match decide(s, &seen, "") {
                Step::Write(observed, _) => observed,
                Step::Call(_) => continue,
            },
        };
        if !write_back(run, s, observed).await? {
            return Ok(Next::Now);
        }
    }
    next_after(run, Next::Drift).await
}

/// When to come back, given the step's own hint and whether work is left.
async fn next_after(run: &Run<'_>, hint: Next) -> Result<Next> {
    let db = &run.services.db;
    let network = store::find(db, run.resource_id()).await?;
    if network.as_ref().is_none_or(|n| n.state == State::Deleted) {
        return Ok(Next::Done);
    }
    Ok(match hint {
        Next::Now if subnets_of(db, run.resource_id()).await?.iter().any(needs_work) => Next::Now,
        Next::Now | Next::Drift => Next::Drift,
        other => other,
    })
}

/// Writes what was observed of one subnet and the network's state that follows, with its event,
/// if this run still holds its lease (`store::status`). False: look again (the lease is gone, or
/// the user changed the subnet meanwhile).
async fn write_back(run: &Run<'_>, current: &subnet::Model, observed: Observed) -> Result<bool> {
    if observed == Observed::of(current) {
        return Ok(true);
    }
    let services = run.services;
    let txn = services.begin().await?;
    crate::store::lock(&txn, "networks", &current.network_id).await?;
    let now = services.clock.now();
    let Some(written) = observed.status(current).write::<subnet::Entity>(&txn, run.claimed, now).await? else {
        return Ok(false);
    };
    let Some(before) = store::find(&txn, &current.network_id).await? else {
        return Ok(false);
    };
    let subnets = subnets_of(&txn, &before.id).await?;
    // The network's state follows from its subnets as they are now, under its lock.
    let (state_now, message) = aggregate(before.desired_state, &subnets);
    let network_status =
        StatusWrite::of(&before.id, before.generation).decided(network::Column::Message, message).state(state_now);
    let Some(network) = network_status.write::<network::Entity>(&txn, run.claimed, now).await? else {
        return Ok(false);
    };
    super::refund_if_deleted(&txn, &network).await?;
    let event_type = if network.state != before.state { network.state.as_str() } else { "updated" };
    let event = crate::views::networks::event(event_type, &crate::views::networks::view(&network, &subnets));
    services.commit(txn, vec![event]).await?;
    Ok(written.generation == current.generation)
}

#[cfg(test)]
mod tests {
    use chrono::Utc;

    use super::*;

    fn subnet(state: State, desired: Desired, provider_id: Option<&str>, attempts: i32, lost: bool) -> subnet::Model {
        let now = Utc::now();
        subnet::Model {
            id: "sub_1".into(),
            network_id: "net_1".into(),
            region: "nyc3".into(),
            ip_range: "10.1.0.0/24".into(),
            state,
            desired_state: desired,
            provider_id: provider_id.map(str::to_owned),
            provider_name: "bc-sub-1".into(),
            create_attempts: attempts,
            lost,
            message: None,
            version: 1,
            generation: 1,
            created_at: now,
            updated_at: now,
            ready_at: None,
            deleted_at: None,
            zone: None,
        }
    }

    fn vpc(id: &str, description: &str) -> Vpc {
        Vpc {
            id: id.into(),
            name: "bc-sub-1".into(),
            region: "nyc3".into(),
            ip_range: "10.1.0.0/24".into(),
            description: description.into(),
        }
    }

    const MINE: &str = "vps-graph dep sub_1";

    #[test]
    fn look_before_deciding() {
        let cases = [
            (subnet(State::Pending, Desired::Present, None, 0, false), Look::Nothing),
            (subnet(State::Pending, Desired::Present, None, 1, false), Look::ByName),
            (subnet(State::Ready, Desired::Present, Some("v"), 0, false), Look::ById("v".into())),
            (subnet(State::Error, Desired::Present, Some("v"), 0, true), Look::Nothing),
            (subnet(State::Deleting, Desired::Absent, Some("v"), 0, false), Look::Nothing),
            (subnet(State::Deleting, Desired::Absent, None, 2, false), Look::ByName),
            (subnet(State::Deleting, Desired::Absent, None, 0, false), Look::Nothing),
        ];
        for (s, expected) in cases {
            assert_eq!(look(&s), expected, "{s:?}");
        }
    }

    #[test]
    fn decide_table() {
        let ready = |id: &str| Observed {
            state: State::Ready,
            provider_id: Some(id.into()),
            create_attempts: 0,
            lost: false,
            message: None,
        };
        // (subnet, seen, expected step)
        let cases: Vec<(subnet::Model, Seen, Step)> = vec![
            // Never created: create.
            (subnet(State::Pending, Desired::Present, None, 0, false), Seen::NotAsked, Step::Call(Call::Create)),
            // A lost create found by name, ours: adopt it, never create twice.
            (
                subnet(State::Pending, Desired::Present, None, 1, false),
                Seen::Found(vpc("v1", MINE)),
                Step::Write(Observed { create_attempts: 1, ..ready("v1") }, Next::Now),
            ),
            // Looked by name, nothing there: create.
            (subnet(State::Pending, Desired::Present, None, 1, false), Seen::Missing, Step::Call(Call::Create)),
            // Under our name but not made by this deployment: left alone, error.
            (
                subnet(State::Pending, Desired::Present, None, 1, false),
                Seen::Found(vpc("v9", "someone else")),
                Step::Write(
                    Observed {
                        state: State::Error,
                        provider_id: None,
                        create_attempts: 1,
                        lost: false,
                        message: Some(
                            "a VPC named bc-sub-1 exists that this deployment did not make; it is left alone".into(),
                        ),
                    },
                    Next::After(ERROR_RETRY_MS),
                ),
            ),
            // Settled and still there.
            (
                subnet(State::Ready, Desired::Present, Some("v1"), 0, false),
                Seen::Found(vpc("v1", MINE)),
                Step::Write(ready("v1"), Next::Now),
            ),
            // Deleting: by id, without looking.
            (
                subnet(State::Deleting, Desired::Absent, Some("v1"), 0, false),
                Seen::NotAsked,
                Step::Call(Call::Delete("v1".into())),
            ),
            // Deleting one never created: finished without a call.
            (
                subnet(State::Deleting, Desired::Absent, None, 0, false),
                Seen::NotAsked,
                Step::Write(
                    Observed {
                        state: State::Deleted,
                        provider_id: None,
                        create_attempts: 0,
                        lost: false,
                        message: None,
                    },
                    Next::Now,
                ),
            ),
            // Deleting one whose create answer was lost: found by name, ours: delete it.
            (
                subnet(State::Deleting, Desired::Absent, None, 1, false),
                Seen::Found(vpc("v2", MINE)),
                Step::Call(Call::Delete("v2".into())),
            ),
            // ... not ours: never deleted.
            (
                subnet(State::Deleting, Desired::Absent, None, 1, false),
                Seen::Found(vpc("v3", "other")),
                Step::Write(
                    Observed {
                        state: State::Deleted,
                        provider_id: None,
                        create_attempts: 1,
                        lost: false,
                        message: None,
                    },
                    Next::Now,
                ),
            ),
            // Deleting a lost one: nothing to call.
            (
                subnet(State::Error, Desired::Absent, Some("v1"), 0, true),
                Seen::NotAsked,
                Step::Write(
                    Observed {
                        state: State::Deleted,
                        provider_id: Some("v1".into()),
                        create_attempts: 0,
                        lost: true,
                        message: None,
                    },
                    Next::Now,
                ),
            ),
        ];
        for (s, seen, expected) in cases {
            assert_eq!(decide(&s, &seen, MINE), expected, "{s:?} {seen:?}");
        }
    }

    #[test]
    fn a_vpc_deleted_behind_our_back_is_lost_for_good() {
        let s = subnet(State::Ready, Desired::Present, Some("v1"), 0, false);
        let Step::Write(observed, _) = decide(&s, &Seen::Missing, MINE) else { panic!("a write") };
        assert_eq!(observed.state, State::Error);
        assert!(observed.lost);
        let lost = subnet(State::Error, Desired::Present, Some("v1"), 0, true);
        assert!(!needs_work(&lost), "never made again");
        assert_eq!(look(&lost), Look::Nothing);
    }

    #[test]
    fn after_a_call() {
        // A create is answered on the subnet as marked before the call (its attempt counted).
        let pending = subnet(State::Pending, Desired::Present, None, 1, false);
        let (o, n) = after(&pending, &Call::Create, Ok(Some(vpc("v1", MINE))));
        assert_eq!((o.state, o.provider_id.as_deref(), o.create_attempts, n), (State::Ready, Some("v1"), 1, Next::Now));
        let limited = Err(ProviderError::RetryLater {
            message: "rate-limited".into(),
            after: std::time::Duration::from_secs(30),
        });
        let (o, n) = after(&pending, &Call::Create, limited);
        assert_eq!(
            (o.state, o.create_attempts, n),
            (State::Pending, 1, Next::Backoff(RETRY_LATER_MS)),
            "a 429: back off from 30 s"
        );
        let (o, n) = after(&pending, &Call::Create, Err(ProviderError::Unknown { message: "timeout".into() }));
        assert_eq!(
            (o.create_attempts, n),
            (1, Next::Backoff(RETRY_LATER_MS)),
            "a lost answer is looked up by name next"
        );
        let refused = || Err(ProviderError::refused(422, "name taken"));
        let (o, n) = after(&pending, &Call::Create, refused());
        assert_eq!((o.state, o.create_attempts, n), (State::Pending, 1, Next::Now), "a first refusal looks by name");
        let again = subnet(State::Pending, Desired::Present, None, 2, false);
        let (o, n) = after(&again, &Call::Create, refused());
        assert_eq!((o.state, o.message.as_deref(), n), (State::Error, Some("name taken"), Next::After(ERROR_RETRY_MS)));
        let deleting = subnet(State::Deleting, Desired::Absent, Some("v1"), 0, false);
        let (o, _) = after(&deleting, &Call::Delete("v1".into()), Ok(None));
        assert_eq!(o.state, State::Deleted);
    }

    #[test]
    fn network_state_follows_its_subnets() {
        let ready = subnet(State::Ready, Desired::Present, Some("v"), 0, false);
        let pending = subnet(State::Pending, Desired::Present, None, 0, false);
        let removing = subnet(State::Deleting, Desired::Absent, Some("v"), 0, false);
        let failed = subnet(State::Error, Desired::Present, None, 1, false);
        assert_eq!(aggregate(Desired::Present, std::slice::from_ref(&ready)).0, State::Ready);
        assert_eq!(aggregate(Desired::Present, &[ready.clone(), pending.clone()]).0, State::Pending);
        assert_eq!(
            aggregate(Desired::Present, &[ready.clone(), removing.clone()]).0,
            State::Ready,
            "a subnet being removed does not hold the network"
        );
        assert_eq!(aggregate(Desired::Present, &[ready.clone(), failed]).0, State::Error);
        assert_eq!(aggregate(Desired::Absent, &[removing]).0, State::Deleting);
        assert_eq!(
            aggregate(Desired::Absent, &[subnet(State::Deleted, Desired::Absent, None, 0, false)]).0,
            State::Deleted
        );
    }
}
