//! AWS's side of a round: one security group per rule in the network's VPC (an inbound rule's
//! group lets nothing out, an outbound rule's nothing in), tagged as this deployment's, and the
//! open egress group; a machine carries the groups of the rules applied to it, or the VPC's
//! `default` group when none is. EC2 has no tags for peers: a peer instance is its machine's
//! private address.
use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex};

use super::{Answer, Applying, Change, Cloud, Found, Machine, Picture, Want};
use crate::cidr::is_ipv6;
use crate::provider::aws::Aws;
use crate::provider::{Flow, GroupRule, MachineState, RuleSource, SecurityGroup, aws_owned, aws_tags};
use crate::store::entity::{firewall_rule, network};
use crate::store::firewall_rules::strings;
use crate::store::state::{Direction, Protocol};
use crate::views::firewall_rules::targets::needs_egress;

pub struct AwsCloud {
    cloud: Arc<Aws>,
    region: String,
    vpc: String,
    deployment: String,
    /// The groups as the last look showed them, for an update's difference.
    held: Mutex<HashMap<String, SecurityGroup>>,
}

/// A group's rules each way.
struct Rules {
    ingress: Vec<GroupRule>,
    egress: Vec<GroupRule>,
}

impl AwsCloud {
    /// None while the network's VPC is not made.
    pub fn new(network: &network::Model, cloud: Arc<Aws>, deployment: &str) -> Option<Self> {
        Some(AwsCloud {
            cloud,
            region: network.region.clone()?,
            vpc: network.provider_id.clone()?,
            deployment: deployment.to_owned(),
            held: Mutex::default(),
        })
    }

    fn rules(&self, want: Want<'_>, picture: &Picture) -> Rules {
        let Want::Rule(r) = want else {
            let egress = vec![
                GroupRule::everything(RuleSource::Cidr("0.0.0.0/0".into())),
                GroupRule::everything(RuleSource::Cidr6("::/0".into())),
            ];
            return Rules { ingress: Vec::new(), egress };
        };
        let (protocol, from_port, to_port) = match r.protocol {
            Protocol::Icmp => ("icmp", -1, -1),
            p => (p.as_str(), r.from_port.unwrap_or(0), r.to_port.unwrap_or(65535)),
        };
        let addresses = strings(&r.addresses).into_iter().map(|a| match is_ipv6(&a) {
            true => RuleSource::Cidr6(a),
            false => RuleSource::Cidr(a),
        });
        // A peer whose machine is not made yet is added when it is (the rule then differs).
        let peers = strings(&r.peer_instance_ids)
            .into_iter()
            .filter_map(|id| picture.peer_ips.get(&id).map(|ip| RuleSource::Cidr(format!("{ip}/32"))));
        // One source once (an address may also be a peer's): EC2 refuses a call that names a
        // permission twice.
        let sources: BTreeSet<RuleSource> = addresses.chain(peers).collect();
        let perms: Vec<GroupRule> = sources
            .into_iter()
            .map(|source| GroupRule { protocol: protocol.to_owned(), from_port, to_port, source, description: None })
            .collect();
        match r.direction {
            Direction::Inbound => Rules { ingress: perms, egress: Vec::new() },
            Direction::Outbound => Rules { ingress: Vec::new(), egress: perms },
        }
    }

    /// Authorizes what is missing, then revokes what is extra, each way.
    async fn sync(&self, id: &str, held: &Rules, wanted: &Rules) -> Answer<()> {
        for (flow, held, wanted) in
            [(Flow::Ingress, &held.ingress, &wanted.ingress), (Flow::Egress, &held.egress, &wanted.egress)]
        {
            let missing: Vec<GroupRule> = wanted.iter().filter(|w| !held.iter().any(|h| h.same(w))).cloned().collect();
            if !missing.is_empty() {
                self.cloud.security_group_authorize(&self.region, id, flow, &missing).await?;
            }
            let extra: Vec<GroupRule> = held.iter().filter(|h| !wanted.iter().any(|w| w.same(h))).cloned().collect();
            if !extra.is_empty() {
                self.cloud.security_group_revoke(&self.region, id, flow, &extra).await?;
            }
        }
        Ok(())
    }
}

fn lines(rules: &Rules) -> BTreeSet<String> {
    let line = |way: &str, r: &GroupRule| {
        let source = match &r.source {
            RuleSource::Cidr(c) => format!("cidr {c}"),
            RuleSource::Cidr6(c) => format!("cidr6 {c}"),
            RuleSource::Group(g) => format!("group {g}"),
        };
        format!("{way} {} {} {} {source}", r.protocol, r.from_port, r.to_port)
    };
    let ingress = rules.ingress.iter().map(|r| line("ingress", r));
    ingress.chain(rules.egress.iter().map(|r| line("egress", r))).collect()
}

fn description(want: Want<'_>) -> String {
    match want {
        Want::Rule(r) => format!("vps-graph firewall rule {}", r.id),
        Want::Egress => "vps-graph open egress of a network".to_owned(),
    }
}

#[async_trait::async_trait]
impl Cloud for AwsCloud {
    async fn look(&self, _: &[String]) -> Answer<Picture> {
        let groups = self.cloud.security_groups_of_vpc(&self.region, &self.vpc).await?;
        let mut picture = Picture::default();
        for g in &groups {
            if g.name == "default" {
                picture.default_group = Some(g.id.clone());
            }
            let rules = Rules { ingress: g.ingress.clone(), egress: g.egress.clone() };
            picture.found.push(Found {
                id: g.id.clone(),
                name: g.name.clone(),
                owned: aws_owned(&g.tags, &self.deployment),
                applying: Applying::Done,
                lines: lines(&rules),
            });
        }
        *self.held.lock().unwrap_or_else(|e| e.into_inner()) = groups.into_iter().map(|g| (g.id.clone(), g)).collect();
        for m in self.cloud.instances_in_vpc(&self.region, &self.vpc).await? {
            if matches!(m.state, MachineState::Terminated | MachineState::ShuttingDown) {
                continue;
            }
            let machine = Machine { carries: m.security_group_ids.into_iter().collect(), private_ip: m.private_ip };
            picture.machines.insert(m.id, machine);
        }
        Ok(picture)
    }

    fn lines(&self, want: Want<'_>, picture: &Picture) -> BTreeSet<String> {
        lines(&self.rules(want, picture))
    }

    /// Makes the group, then its rules; a failure after the group is made is left for the next
    /// round, which finds the group and puts its rules right.
    async fn create(&self, name: &str, want: Want<'_>, picture: &Picture) -> Answer<String> {
        let tags = aws_tags(name, &self.deployment);
        let id = self.cloud.security_group_create(&self.region, &self.vpc, name, &description(want), &tags).await?;
        let fresh =
            Rules { ingress: Vec::new(), egress: vec![GroupRule::everything(RuleSource::Cidr("0.0.0.0/0".into()))] };
        if let Err(err) = self.sync(&id, &fresh, &self.rules(want, picture)).await {
            tracing::warn!(group = %id, error = %err.message(), "a new security group's rules are left for the next round");
        }
        Ok(id)
    }

    async fn update(&self, found: &Found, want: Want<'_>, picture: &Picture) -> Answer<()> {
        let held = self.held.lock().unwrap_or_else(|e| e.into_inner()).get(&found.id).cloned();
        let Some(held) = held else { return Ok(()) };
        let held = Rules { ingress: held.ingress, egress: held.egress };
        self.sync(&found.id, &held, &self.rules(want, picture)).await
    }

    async fn delete(&self, id: &str) -> Answer<()> {
        self.cloud.security_group_delete(&self.region, id).await.map(|_| ())
    }

    fn carried(
        &self,
        _: &str,
        applying: &[(&firewall_rule::Model, &str)],
        _: bool,
        egress: Option<&str>,
        picture: &Picture,
    ) -> BTreeSet<String> {
        let mut groups: BTreeSet<String> = applying.iter().map(|(_, id)| (*id).to_owned()).collect();
        let rules: Vec<&firewall_rule::Model> = applying.iter().map(|(r, _)| *r).collect();
        if let Some(egress) = egress.filter(|_| needs_egress(&rules)) {
            groups.insert(egress.to_owned());
        }
        if groups.is_empty() {
            groups.extend(picture.default_group.clone());
        }
        groups
    }

    /// A machine's groups are set whole.
    fn manages(&self, _: &str, _: &str) -> bool {
        true
    }

    async fn carry(&self, changes: &[Change]) -> Answer<()> {
        if changes.iter().any(|c| c.wanted.is_empty()) {
            let message = format!("the VPC {} shows no default security group to give back to machines", self.vpc);
            return Err(crate::provider::ProviderError::refused(404, message));
        }
        for c in changes {
            let groups: Vec<String> = c.wanted.iter().cloned().collect();
            self.cloud.instance_set_groups(&self.region, &c.machine, &groups).await?;
        }
        Ok(())
    }
}
