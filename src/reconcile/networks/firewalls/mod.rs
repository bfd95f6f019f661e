//! A network's firewall rules, applied by `vps.networks` in the same run as its subnets: one
//! provider firewall (DigitalOcean) or security group (AWS) per rule, named `bc-` and the rule's
//! id, plus the network's open egress one, and what each machine of the network carries (tags at
//! DigitalOcean, groups at AWS). A round reads everything once (the account's firewalls or the
//! VPC's groups, and the network's machines), decides each rule with `decide`, makes the calls,
//! and writes each rule back on the lease. Order within a round: the egress firewall before the
//! rules (a machine never loses its way out), the rules before the machines, the machines before
//! a firewall is deleted (EC2 refuses a group a machine carries).
mod aws;
mod decide;
mod digitalocean;
#[cfg(test)]
mod tests;

use std::collections::{BTreeSet, HashMap};

pub use decide::*;

use crate::error::Result;
use crate::provider::{Provider, ProviderError};
use crate::reconcile::{ACTION_POLL_MS, ERROR_RETRY_MS, Next, Run, retry_after};
use crate::store::entity::{firewall_rule, network};
use crate::store::firewall_rules as store;
use crate::store::state::{Desired, Direction, State};
use crate::store::status::StatusWrite;
use crate::views::firewall_rules::targets::applies;

type Answer<T> = std::result::Result<T, ProviderError>;

/// Provider calls one round makes at most before it hands over to the next run.
const CALLS_PER_ROUND: usize = 20;

/// A firewall or security group found at the provider, in the round's words: `lines` says
/// everything it does, one fact per line, comparable with what a rule wants (`Cloud::lines`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Found {
    pub id: String,
    pub name: String,
    pub owned: bool,
    pub applying: Applying,
    pub lines: BTreeSet<String>,
}

/// A machine of the network: what it carries (DigitalOcean tags, AWS group ids) and its private
/// address (an AWS rule names a peer instance by it).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Machine {
    pub carries: BTreeSet<String>,
    pub private_ip: Option<String>,
}

/// What a round read at the provider.
#[derive(Clone, Debug, Default)]
pub struct Picture {
    pub found: Vec<Found>,
    /// By provider id: the network's ready instances' machines that the provider shows.
    pub machines: HashMap<String, Machine>,
    /// The VPC's `default` group (AWS): what a machine carries when no rule applies to it.
    pub default_group: Option<String>,
    /// Instance id → private address, for AWS peers.
    pub peer_ips: HashMap<String, String>,
}

impl Picture {
    fn seen(&self, recorded: Option<&str>, name: &str, wanted: &BTreeSet<String>) -> Seen {
        let held = |f: &Found| Held {
            id: f.id.clone(),
            owned: f.owned,
            matches: f.lines == *wanted,
            applying: f.applying.clone(),
        };
        Seen {
            by_id: recorded.and_then(|id| self.found.iter().find(|f| f.id == id)).map(held),
            by_name: self.found.iter().filter(|f| f.name == name).map(held).collect(),
        }
    }

    fn found(&self, id: &str) -> Option<&Found> {
        self.found.iter().find(|f| f.id == id)
    }
}

/// What a firewall or group is made to say: one rule's, or the network's open egress.
#[derive(Clone, Copy, Debug)]
pub enum Want<'a> {
    Rule(&'a firewall_rule::Model),
    Egress,
}

/// What a machine must carry, against what it does (only what the round manages).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Change {
    pub machine: String,
    pub held: BTreeSet<String>,
    pub wanted: BTreeSet<String>,
}

/// One provider's firewalls, in the terms of a round.
#[async_trait::async_trait]
pub trait Cloud: Send + Sync {
    /// The firewalls or groups the round decides on, and the machines of `machines` (provider
    /// ids) it shows.
    async fn look(&self, machines: &[String]) -> Answer<Picture>;
    /// What `want` must say, comparable with `Found::lines`.
    fn lines(&self, want: Want<'_>, picture: &Picture) -> BTreeSet<String>;
    /// Makes it under `name`; its id.
    async fn create(&self, name: &str, want: Want<'_>, picture: &Picture) -> Answer<String>;
    /// Puts `found` back to what `want` says.
    async fn update(&self, found: &Found, want: Want<'_>, picture: &Picture) -> Answer<()>;
    async fn delete(&self, id: &str) -> Answer<()>;
    /// What the machine of `instance_id` carries with these rules (made, by provider id) and the
    /// open egress applied to it; `ruled`: some rule of the network is applied.
    fn carried(
        &self,
        instance_id: &str,
        applying: &[(&firewall_rule::Model, &str)],
        ruled: bool,
        egress: Option<&str>,
        picture: &Picture,
    ) -> BTreeSet<String>;
    /// Whether `item` on the machine of `instance_id` is the round's to set.
    fn manages(&self, instance_id: &str, item: &str) -> bool;
    async fn carry(&self, changes: &[Change]) -> Answer<()>;
}

/// A run's firewall round, or None when the network has no rule and no egress firewall (its
/// subnets are then all there is).
pub(super) async fn run(run: &Run<'_>, network: &network::Model, provider: &Provider) -> Result<Option<Next>> {
    let rules = store::live_of(&run.services.db, &network.id).await?;
    if rules.is_empty() && network.egress_provider_id.is_none() {
        return Ok(None);
    }
    let deployment = &run.services.deployment;
    let cloud: Box<dyn Cloud> = match provider {
        Provider::Aws(aws) => match aws::AwsCloud::new(network, aws.clone(), deployment) {
            Some(cloud) => Box::new(cloud),
            // Its VPC is not made yet: what was never made can go, the rest waits.
            None => return before_vpc(run, &rules).await.map(Some),
        },
        Provider::DigitalOcean(digitalocean) => {
            Box::new(digitalocean::DoCloud::new(network, digitalocean.clone(), deployment))
        }
    };
    Round::new(run, network, cloud.as_ref()).go(rules).await.map(Some)
}

/// An AWS network whose VPC is not made: rules never made are deleted at once.
async fn before_vpc(run: &Run<'_>, rules: &[firewall_rule::Model]) -> Result<Next> {
    for r in rules.iter().filter(|r| r.desired_state == Desired::Absent && r.provider_id.is_none()) {
        if !write_rule(run, r, Observed::of(r).state(State::Deleted, None)).await? {
            return Ok(Next::Now);
        }
    }
    // The VPC is made by this same work item, whose subnets say when to look again.
    Ok(Next::Drift)
}

/// The network's open egress, as a round left it.
struct Egress {
    /// Made and saying what is wanted: machines may carry it.
    ready: Option<String>,
    /// Why the machines wait for it.
    blocked: Option<String>,
    /// No longer wanted: deleted once no machine carries it.
    delete: Option<String>,
}

struct Round<'r, 'a> {
    run: &'r Run<'a>,
    network: &'r network::Model,
    cloud: &'r dyn Cloud,
    picture: Picture,
    next: Next,
    calls: usize,
}

impl<'r, 'a> Round<'r, 'a> {
    fn new(run: &'r Run<'a>, network: &'r network::Model, cloud: &'r dyn Cloud) -> Self {
        Round { run, network, cloud, picture: Picture::default(), next: Next::Drift, calls: 0 }
    }

    /// When to look again, given one more outcome. A provider in trouble (a backoff) is asked
    /// nothing more this round, and the round waits it out whatever else was done.
    fn then(&mut self, next: Next) {
        self.next = match (self.next, next) {
            (Next::Backoff(a), Next::Backoff(b)) => Next::Backoff(a.max(b)),
            (Next::Backoff(_), _) => self.next,
            (_, Next::Backoff(_)) => next,
            (current, next) => sooner(current, next),
        };
    }

    /// Whether one more call fits in this round; if not, the next run goes on (at once, unless
    /// the provider asked for a wait).
    fn call(&mut self) -> bool {
        if matches!(self.next, Next::Backoff(_)) {
            return false;
        }
        self.calls += 1;
        if self.calls > CALLS_PER_ROUND {
            self.then(Next::Now);
            return false;
        }
        true
    }

    async fn go(mut self, rules: Vec<firewall_rule::Model>) -> Result<Next> {
        let db = &self.run.services.db;
        let instances = crate::store::instances::live_on_network(db, &self.network.id).await?;
        // Made machines, running or not (a stopped one still carries its groups).
        let ready: Vec<(&str, &str)> = instances
            .iter()
            .filter(|i| matches!(i.state, State::Ready | State::Error) && i.desired_state == Desired::Present)
            .filter_map(|i| Some((i.id.as_str(), i.provider_id.as_deref()?)))
            .collect();
        let machine_ids: Vec<String> = ready.iter().map(|(_, m)| (*m).to_owned()).collect();
        self.picture = match self.cloud.look(&machine_ids).await {
            Ok(picture) => picture,
            Err(err) => return Ok(retry_after(&err)),
        };
        for i in &instances {
            let ip = i.provider_id.as_ref().and_then(|m| self.picture.machines.get(m)?.private_ip.clone());
            if let Some(ip) = ip {
                self.picture.peer_ips.insert(i.id.clone(), ip);
            }
        }
        let Some(egress) = self.egress(&rules).await? else { return Ok(Next::Now) };
        let mut applied = Vec::new();
        let mut deletes = Vec::new();
        for r in &rules {
            match self.rule(r).await? {
                Some(Step::Applied { waiting }) => applied.push((r, waiting)),
                Some(Step::Delete(id)) => deletes.push((r, id)),
                Some(_) => {}
                None => return Ok(Next::Now),
            }
        }
        let twins = self.twins(&rules, self.network.egress_provider_id.as_deref());
        let targets = match &egress.blocked {
            Some(why) if !applied.is_empty() => Err(After::Wait(why.clone(), ACTION_POLL_MS)),
            _ => self.targets(&ready, &applied, egress.ready.as_deref()).await,
        };
        if !self.settle(&applied, targets).await? {
            return Ok(Next::Now);
        }
        for (r, id) in deletes {
            if !self.call() {
                break;
            }
            let answer = self.cloud.delete(&id).await;
            let outcome = after(&answer);
            let gone = matches!(outcome, After::Done);
            let (observed, next) = apply(Observed::of(r), outcome);
            let observed = if gone { observed.state(State::Deleted, None) } else { observed };
            self.then(next);
            if !write_rule(self.run, r, observed).await? {
                return Ok(Next::Now);
            }
        }
        for id in twins {
            if !self.call() {
                break;
            }
            let answer = self.cloud.delete(&id).await;
            tracing::warn!(firewall = %id, done = answer.is_ok(), "deleted a second firewall of ours under a rule's name");
        }
        if let Some(id) = egress.delete
            && self.call()
        {
            match after(&self.cloud.delete(&id).await) {
                After::Done => {
                    self.write_egress(None).await?;
                    self.then(Next::Now);
                }
                outcome => self.then(waits(outcome).1),
            }
        }
        Ok(self.next)
    }

    /// Ours under a recorded one's name that are not it: a create sent twice (DigitalOcean names
    /// are not unique, and a run may outlive its lease), deleted so that nothing of a rule stays
    /// behind it.
    fn twins(&self, rules: &[firewall_rule::Model], egress: Option<&str>) -> Vec<String> {
        let egress_name = crate::views::firewall_rules::targets::egress_name(&self.network.id);
        let recorded = rules
            .iter()
            .filter_map(|r| Some((r.provider_name.as_str(), r.provider_id.as_deref()?)))
            .chain(egress.map(|id| (egress_name.as_str(), id)));
        let mut twins = Vec::new();
        for (name, id) in recorded {
            let others = self.picture.found.iter().filter(|f| f.owned && f.name == name && f.id != id);
            twins.extend(others.map(|f| f.id.clone()));
        }
        twins
    }

    /// The egress step: made before any rule needs it, deleted after the machines let it go.
    /// None: the run must look again.
    async fn egress(&mut self, rules: &[firewall_rule::Model]) -> Result<Option<Egress>> {
        let wanted =
            rules.iter().any(|r| r.desired_state == Desired::Present && !r.lost && r.direction == Direction::Inbound);
        let name = crate::views::firewall_rules::targets::egress_name(&self.network.id);
        let lines = self.cloud.lines(Want::Egress, &self.picture);
        let recorded = self.network.egress_provider_id.as_deref();
        let seen = self.picture.seen(recorded, &name, &lines);
        let mut egress = Egress { ready: None, blocked: None, delete: None };
        let waiting = |why: &str| Some(format!("waiting for the network's open egress firewall {name}: {why}"));
        match egress_step(wanted, recorded, &seen) {
            EgressStep::Ready(id) => egress.ready = Some(id),
            EgressStep::Delete(id) => egress.delete = Some(id),
            EgressStep::Rest => {}
            EgressStep::Foreign => {
                egress.blocked = waiting("one exists that this deployment did not make; it is left alone");
            }
            EgressStep::Forget => {
                self.write_egress(None).await?;
                self.then(Next::Now);
                egress.blocked = waiting("it was deleted outside vps-graph and is made again");
            }
            EgressStep::Adopt(id) => {
                self.write_egress(Some(id)).await?;
                self.then(Next::Now);
                egress.blocked = waiting("found");
            }
            EgressStep::Update(id) if self.call() => {
                let answer = self.put_back(&id, Want::Egress).await;
                egress.blocked = self.egress_outcome(after(&answer), "put back");
            }
            EgressStep::Create if self.call() => {
                let attempts = crate::store::entity::network::Column::EgressAttempts;
                let locks = [("networks", self.network.id.as_str())];
                let (id, generation) = (&self.network.id, self.network.generation);
                if self.run.mark_attempt::<network::Entity>(&locks, id, generation, attempts).await?.is_none() {
                    return Ok(None);
                }
                let answer = self.cloud.create(&name, Want::Egress, &self.picture).await;
                if let Ok(id) = &answer {
                    self.write_egress(Some(id.clone())).await?;
                }
                egress.blocked = self.egress_outcome(after(&answer), "being made");
            }
            EgressStep::Update(_) | EgressStep::Create => egress.blocked = waiting("next run"),
        }
        Ok(Some(egress))
    }

    /// Puts the firewall or group `id` back to what `want` says (one gone meanwhile is seen gone
    /// by the next look).
    async fn put_back(&self, id: &str, want: Want<'_>) -> Answer<()> {
        match self.picture.found(id) {
            Some(found) => self.cloud.update(found, want, &self.picture).await,
            None => Ok(()),
        }
    }

    fn egress_outcome(&mut self, outcome: After, done: &str) -> Option<String> {
        let name = crate::views::firewall_rules::targets::egress_name(&self.network.id);
        let (message, next) = waits(outcome);
        self.then(next);
        let why = message.unwrap_or_else(|| done.to_owned());
        Some(format!("waiting for the network's open egress firewall {name}: {why}"))
    }

    /// One rule's step; the calls it needs made and the row written. None: look again.
    async fn rule(&mut self, r: &firewall_rule::Model) -> Result<Option<Step>> {
        let lines = self.cloud.lines(Want::Rule(r), &self.picture);
        let seen = self.picture.seen(r.provider_id.as_deref(), &r.provider_name, &lines);
        let since = (self.run.services.clock.now() - r.updated_at).num_milliseconds();
        let retry_in = ERROR_RETRY_MS - since;
        let step = step(r, &seen, since);
        let now = Observed::of(r);
        let written = match &step {
            Step::Create if self.call() => {
                let locks = [("networks", r.network_id.as_str())];
                let column = firewall_rule::Column::CreateAttempts;
                let Some(marked) =
                    self.run.mark_attempt::<firewall_rule::Entity>(&locks, &r.id, r.generation, column).await?
                else {
                    return Ok(None);
                };
                let answer = self.cloud.create(&r.provider_name, Want::Rule(r), &self.picture).await;
                let (mut observed, next) = apply(Observed::of(&marked), after(&answer));
                if let Ok(id) = answer {
                    observed.provider_id = Some(id);
                }
                self.then(next);
                write_rule(self.run, &marked, observed).await?
            }
            Step::Update(id) if self.call() => {
                let answer = self.put_back(id, Want::Rule(r)).await;
                let outcome = after(&answer);
                // Put back: the provider may take a moment to show it (never a tight loop).
                let applying = outcome == After::Done;
                let (observed, next) = apply(now, outcome);
                self.then(if applying { Next::After(ACTION_POLL_MS) } else { next });
                write_rule(self.run, r, observed).await?
            }
            Step::Wait(observed) => {
                self.then(Next::After(ACTION_POLL_MS));
                write_rule(self.run, r, observed.clone()).await?
            }
            Step::Adopt(id) => {
                self.then(Next::Now);
                write_rule(self.run, r, Observed { provider_id: Some(id.clone()), ..now.progress() }).await?
            }
            Step::Write(observed) => {
                let settled = observed.lost || observed.state == State::Deleted;
                self.then(if observed.state == State::Error && !settled {
                    Next::After(ERROR_RETRY_MS)
                } else {
                    Next::Now
                });
                write_rule(self.run, r, observed.clone()).await?
            }
            Step::Rest if r.state == State::Error && !r.lost => {
                self.then(Next::After(retry_in.max(0)));
                true
            }
            _ => true,
        };
        Ok(written.then_some(step))
    }

    /// Sets what the network's made machines carry for the rules applied. Err: how the rules
    /// applied wait.
    async fn targets(
        &mut self,
        ready: &[(&str, &str)],
        applied: &[(&firewall_rule::Model, bool)],
        egress: Option<&str>,
    ) -> std::result::Result<(), After> {
        let mut changes = Vec::new();
        let ruled = !applied.is_empty();
        for (instance_id, machine_id) in ready {
            let Some(machine) = self.picture.machines.get(*machine_id) else { continue };
            let applying: Vec<(&firewall_rule::Model, &str)> = applied
                .iter()
                .filter(|(r, _)| applies(r, Some(instance_id)))
                .filter_map(|(r, _)| Some((*r, r.provider_id.as_deref()?)))
                .collect();
            let wanted = self.cloud.carried(instance_id, &applying, ruled, egress, &self.picture);
            let held: BTreeSet<String> =
                machine.carries.iter().filter(|c| self.cloud.manages(instance_id, c)).cloned().collect();
            if wanted != held {
                changes.push(Change { machine: (*machine_id).to_owned(), held, wanted });
            }
        }
        if changes.is_empty() {
            return Ok(());
        }
        if !self.call() {
            return Err(After::LookAgain);
        }
        match after(&self.cloud.carry(&changes).await) {
            After::Done => {
                // Applied to machines just now: the provider may take a moment (DigitalOcean's
                // `waiting`), which the next look shows.
                self.then(Next::Now);
                Err(After::LookAgain)
            }
            outcome => Err(outcome),
        }
    }

    /// Writes the applied rules: READY once their machines carry them and the provider applied
    /// them, else what they wait for. False: look again.
    async fn settle(
        &mut self,
        applied: &[(&firewall_rule::Model, bool)],
        targets: std::result::Result<(), After>,
    ) -> Result<bool> {
        for (r, waiting) in applied {
            let now = Observed::of(r);
            let observed = match (&targets, waiting) {
                (Ok(()), false) => now.progress().state(State::Ready, None),
                (Ok(()), true) => {
                    self.then(Next::After(ACTION_POLL_MS));
                    now.waiting("being applied to its machines")
                }
                (Err(After::LookAgain), _) => now,
                (Err(outcome), _) => {
                    let (observed, next) = apply(now, outcome.clone());
                    self.then(next);
                    observed
                }
            };
            if !write_rule(self.run, r, observed).await? {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// Records the network's egress firewall or group (a fact: written whatever the user did).
    async fn write_egress(&self, id: Option<String>) -> Result<()> {
        let services = self.run.services;
        let txn = services.begin().await?;
        crate::store::lock(&txn, "networks", &self.network.id).await?;
        let write = StatusWrite::of(&self.network.id, self.network.generation)
            .fact(network::Column::EgressProviderId, id)
            .write::<network::Entity>(&txn, self.run.claimed, services.clock.now())
            .await?;
        if write.is_some() {
            txn.commit().await?;
        }
        Ok(())
    }
}

/// Writes a rule as observed (facts always, the decided state and message only at the
/// generation it was read at), with its event. False: look again (the lease is gone, or the
/// user changed the rule meanwhile).
async fn write_rule(run: &Run<'_>, r: &firewall_rule::Model, observed: Observed) -> Result<bool> {
    if observed == Observed::of(r) {
        return Ok(true);
    }
    let services = run.services;
    let txn = services.begin().await?;
    crate::store::lock(&txn, "networks", &r.network_id).await?;
    let status = StatusWrite::of(&r.id, r.generation)
        .fact(firewall_rule::Column::ProviderId, observed.provider_id.clone())
        .fact(firewall_rule::Column::CreateAttempts, observed.create_attempts)
        .fact(firewall_rule::Column::Lost, observed.lost)
        .decided(firewall_rule::Column::Message, observed.message.clone())
        .state(observed.state);
    let Some(written) = status.write::<firewall_rule::Entity>(&txn, run.claimed, services.clock.now()).await? else {
        return Ok(false);
    };
    let events = event_type(r.state, written.state)
        .map(|t| crate::views::firewall_rules::event(t, &written))
        .into_iter()
        .collect();
    services.commit(txn, events).await?;
    Ok(written.generation == r.generation)
}
