//! DigitalOcean's side of a round: one cloud firewall per rule, targeting the tags of the
//! instances it names (or the network's tag), and carrying this deployment's mark among its
//! target tags (a firewall has no description); the machines carry those tags. The open egress
//! firewall lets out everything, to the machines tagged as needing it.
use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};

use super::{Answer, Applying, Change, Cloud, Found, Machine, Picture, Want};
use crate::provider::digitalocean::DigitalOcean;
use crate::provider::{CloudFirewall, CloudFirewallRule, CloudFirewallSpec, FirewallStatus};
use crate::store::entity::{firewall_rule, network};
use crate::store::firewall_rules::strings;
use crate::store::state::{Direction, Protocol};
use crate::views::firewall_rules::targets::{self, egress_tag, instance_tag, needs_egress, network_tag};

pub struct DoCloud {
    cloud: Arc<DigitalOcean>,
    network_id: String,
    marker: String,
    /// The tags this round made already: each is made once.
    made_tags: Mutex<BTreeSet<String>>,
}

/// A firewall as made: its target tags and its rules each way.
struct Spec {
    tags: Vec<String>,
    inbound: Vec<CloudFirewallRule>,
    outbound: Vec<CloudFirewallRule>,
}

impl DoCloud {
    pub fn new(network: &network::Model, cloud: Arc<DigitalOcean>, deployment: &str) -> Self {
        DoCloud {
            cloud,
            network_id: network.id.clone(),
            marker: targets::marker(deployment),
            made_tags: Mutex::default(),
        }
    }

    fn spec(&self, want: Want<'_>) -> Spec {
        match want {
            Want::Rule(r) => {
                let named = strings(&r.applies_to);
                let mut tags: Vec<String> = if named.is_empty() {
                    vec![network_tag(&self.network_id)]
                } else {
                    named.iter().map(|id| instance_tag(id)).collect()
                };
                tags.push(self.marker.clone());
                let rule = CloudFirewallRule {
                    protocol: r.protocol.as_str().to_owned(),
                    ports: ports(r),
                    addresses: strings(&r.addresses),
                    tags: strings(&r.peer_instance_ids).iter().map(|id| instance_tag(id)).collect(),
                    droplet_ids: Vec::new(),
                };
                let (inbound, outbound) = match r.direction {
                    Direction::Inbound => (vec![rule], Vec::new()),
                    Direction::Outbound => (Vec::new(), vec![rule]),
                };
                Spec { tags, inbound, outbound }
            }
            Want::Egress => {
                let everywhere = vec!["0.0.0.0/0".to_owned(), "::/0".to_owned()];
                let outbound = ["tcp", "udp", "icmp"]
                    .map(|protocol| CloudFirewallRule {
                        protocol: protocol.to_owned(),
                        ports: "0".to_owned(),
                        addresses: everywhere.clone(),
                        ..CloudFirewallRule::default()
                    })
                    .to_vec();
                Spec { tags: vec![egress_tag(&self.network_id), self.marker.clone()], inbound: Vec::new(), outbound }
            }
        }
    }

    /// Makes every tag the spec names (DigitalOcean refuses a firewall naming a tag that does
    /// not exist).
    async fn with_tags(&self, spec: &Spec) -> Answer<()> {
        let peers = spec.inbound.iter().chain(&spec.outbound).flat_map(|r| &r.tags);
        let all: BTreeSet<&String> = spec.tags.iter().chain(peers).collect();
        for tag in all {
            if self.made_tags.lock().unwrap_or_else(|e| e.into_inner()).contains(tag) {
                continue;
            }
            self.cloud.tag_create(tag).await?;
            self.made_tags.lock().unwrap_or_else(|e| e.into_inner()).insert(tag.clone());
        }
        Ok(())
    }
}

/// The ports as DigitalOcean writes them: one, a range, or `0` for all (and for ICMP).
fn ports(r: &firewall_rule::Model) -> String {
    match (r.protocol, r.from_port, r.to_port) {
        (Protocol::Icmp, _, _) | (_, None, _) => "0".to_owned(),
        (_, Some(from), Some(to)) if to != from => format!("{from}-{to}"),
        (_, Some(from), _) => from.to_string(),
    }
}

/// Everything a firewall says, one fact per line.
fn lines(
    tags: &[String],
    droplet_ids: &[String],
    inbound: &[CloudFirewallRule],
    outbound: &[CloudFirewallRule],
) -> BTreeSet<String> {
    let mut lines: BTreeSet<String> = tags.iter().map(|t| format!("target tag {t}")).collect();
    lines.extend(droplet_ids.iter().map(|d| format!("target droplet {d}")));
    for (way, rules) in [("in", inbound), ("out", outbound)] {
        for r in rules {
            let head = format!("{way} {} {}", r.protocol, r.ports);
            lines.extend(r.addresses.iter().map(|a| format!("{head} address {a}")));
            lines.extend(r.tags.iter().map(|t| format!("{head} tag {t}")));
            lines.extend(r.droplet_ids.iter().map(|d| format!("{head} droplet {d}")));
        }
    }
    lines
}

fn found(f: CloudFirewall, marker: &str) -> Found {
    let applying = match f.status {
        FirewallStatus::Waiting => Applying::Waiting,
        FirewallStatus::Succeeded => Applying::Done,
        FirewallStatus::Failed => {
            Applying::Failed(format!("DigitalOcean could not apply firewall {} to its Droplets", f.name))
        }
    };
    Found {
        lines: lines(&f.tags, &f.droplet_ids, &f.inbound, &f.outbound),
        owned: f.tags.iter().any(|t| t == marker),
        id: f.id,
        name: f.name,
        applying,
    }
}

#[async_trait::async_trait]
impl Cloud for DoCloud {
    async fn look(&self, machines: &[String]) -> Answer<Picture> {
        let found = self.cloud.firewalls().await?.into_iter().map(|f| found(f, &self.marker)).collect();
        let mut picture = Picture { found, ..Picture::default() };
        let machine = |tags: Vec<String>| Machine { carries: tags.into_iter().collect(), private_ip: None };
        for d in self.cloud.droplets_tagged(&network_tag(&self.network_id)).await? {
            if machines.contains(&d.id) {
                picture.machines.insert(d.id, machine(d.tags));
            }
        }
        // A machine without the network's tag yet: read alone (one that is gone is skipped).
        let untagged: Vec<&String> = machines.iter().filter(|id| !picture.machines.contains_key(*id)).collect();
        for id in untagged {
            if let Some(d) = self.cloud.droplet_get(id).await? {
                picture.machines.insert(d.id, machine(d.tags));
            }
        }
        Ok(picture)
    }

    fn lines(&self, want: Want<'_>, _: &Picture) -> BTreeSet<String> {
        let spec = self.spec(want);
        lines(&spec.tags, &[], &spec.inbound, &spec.outbound)
    }

    async fn create(&self, name: &str, want: Want<'_>, _: &Picture) -> Answer<String> {
        let spec = self.spec(want);
        self.with_tags(&spec).await?;
        let made = CloudFirewallSpec { name, tags: &spec.tags, inbound: &spec.inbound, outbound: &spec.outbound };
        Ok(self.cloud.firewall_create(&made).await?.id)
    }

    async fn update(&self, found: &Found, want: Want<'_>, _: &Picture) -> Answer<()> {
        let spec = self.spec(want);
        self.with_tags(&spec).await?;
        let put =
            CloudFirewallSpec { name: &found.name, tags: &spec.tags, inbound: &spec.inbound, outbound: &spec.outbound };
        // One gone meanwhile is seen gone by the next look.
        self.cloud.firewall_update(&found.id, &put).await.map(|_| ())
    }

    async fn delete(&self, id: &str) -> Answer<()> {
        self.cloud.firewall_delete(id).await.map(|_| ())
    }

    /// Once some rule of the network is applied, every machine carries the network's tag and its
    /// instance's (a tag alone makes no firewall apply, and a peer instance is its tag); the
    /// egress tag goes to those whose rules let nothing out.
    fn carried(
        &self,
        instance_id: &str,
        applying: &[(&firewall_rule::Model, &str)],
        ruled: bool,
        egress: Option<&str>,
        _: &Picture,
    ) -> BTreeSet<String> {
        if !ruled {
            return BTreeSet::new();
        }
        let mut tags = BTreeSet::from([network_tag(&self.network_id), instance_tag(instance_id)]);
        let rules: Vec<&firewall_rule::Model> = applying.iter().map(|(r, _)| *r).collect();
        if needs_egress(&rules) && egress.is_some() {
            tags.insert(egress_tag(&self.network_id));
        }
        tags
    }

    fn manages(&self, instance_id: &str, item: &str) -> bool {
        item == network_tag(&self.network_id)
            || item == instance_tag(instance_id)
            || item == egress_tag(&self.network_id)
    }

    /// One call per tag and way, for every machine at once: the egress tag on first, then the
    /// others, then what comes off, the egress tag last, so that a call that fails half way
    /// never leaves a machine without its way out.
    async fn carry(&self, changes: &[Change]) -> Answer<()> {
        let egress = egress_tag(&self.network_id);
        let mut calls: BTreeMap<(u8, bool, &String), Vec<String>> = BTreeMap::new();
        for c in changes {
            for tag in c.wanted.difference(&c.held) {
                calls.entry((u8::from(*tag != egress), true, tag)).or_default().push(c.machine.clone());
            }
            for tag in c.held.difference(&c.wanted) {
                calls.entry((2 + u8::from(*tag == egress), false, tag)).or_default().push(c.machine.clone());
            }
        }
        for ((_, on, tag), machines) in &calls {
            self.cloud.tag_droplets(tag, machines, *on).await?;
        }
        Ok(())
    }
}
