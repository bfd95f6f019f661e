//! Cloud firewalls (`/v2/firewalls`): create (202), list, replace (PUT, 200), delete (204), and the
//! tags their targets and peers name, which must exist first.
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use super::{DigitalOcean, id_text, required, strings, unreadable};
use crate::provider::{CloudFirewall, CloudFirewallRule, CloudFirewallSpec, FirewallStatus, ProviderResult};

/// A rule as the API takes it: its peers under `sources` (inbound) or `destinations` (outbound),
/// each list only when it names something.
fn rule_json(rule: &CloudFirewallRule, peers_key: &str) -> Value {
    let mut peers = serde_json::Map::new();
    for (key, list) in [("addresses", &rule.addresses), ("tags", &rule.tags)] {
        if !list.is_empty() {
            peers.insert(key.into(), json!(list));
        }
    }
    if !rule.droplet_ids.is_empty() {
        let ids: Vec<Value> =
            rule.droplet_ids.iter().map(|id| id.parse::<u64>().map_or_else(|_| json!(id), |n| json!(n))).collect();
        peers.insert("droplet_ids".into(), Value::Array(ids));
    }
    json!({ "protocol": rule.protocol, "ports": rule.ports, peers_key: peers })
}

fn spec_json(spec: &CloudFirewallSpec<'_>) -> Value {
    json!({
        "name": spec.name,
        "inbound_rules": spec.inbound.iter().map(|r| rule_json(r, "sources")).collect::<Vec<_>>(),
        "outbound_rules": spec.outbound.iter().map(|r| rule_json(r, "destinations")).collect::<Vec<_>>(),
        "tags": spec.tags,
        "droplet_ids": [],
    })
}

/// A rule as the API shows it; `all` and `0` both say every port.
fn rule_from(body: &Value, peers_key: &str) -> CloudFirewallRule {
    let peers = &body[peers_key];
    let ports = match body["ports"].as_str().unwrap_or("0") {
        "all" | "" => "0".to_owned(),
        other => other.to_owned(),
    };
    CloudFirewallRule {
        protocol: body["protocol"].as_str().unwrap_or_default().to_owned(),
        ports,
        addresses: strings(&peers["addresses"]),
        tags: strings(&peers["tags"]),
        droplet_ids: strings(&peers["droplet_ids"]),
    }
}

fn rules_from(list: &Value, peers_key: &str) -> Vec<CloudFirewallRule> {
    list.as_array().map(|rules| rules.iter().map(|r| rule_from(r, peers_key)).collect()).unwrap_or_default()
}

fn firewall_from(body: &Value) -> ProviderResult<CloudFirewall> {
    let word: String = required(body, "status", "firewall")?;
    let status = FirewallStatus::parse(&word).ok_or_else(|| unreadable(&format!("firewall status {word:?}")))?;
    Ok(CloudFirewall {
        id: required(body, "id", "firewall")?,
        name: required(body, "name", "firewall")?,
        status,
        created_at: body["created_at"].as_str().unwrap_or_default().to_owned(),
        tags: strings(&body["tags"]),
        droplet_ids: body["droplet_ids"].as_array().map(|ids| ids.iter().map(id_text).collect()).unwrap_or_default(),
        inbound: rules_from(&body["inbound_rules"], "sources"),
        outbound: rules_from(&body["outbound_rules"], "destinations"),
    })
}

/// DigitalOcean's cloud firewalls. A create has no idempotency key: a create whose answer was
/// lost is found by its name in the list.
impl DigitalOcean {
    /// Needs at least one rule, and every tag it names to exist (`tag_create`).
    pub async fn firewall_create(&self, spec: &CloudFirewallSpec<'_>) -> ProviderResult<CloudFirewall> {
        let answer = self.call("firewalls.create", Method::POST, "/v2/firewalls", Some(spec_json(spec))).await?;
        firewall_from(&answer.body["firewall"])
    }

    /// Every firewall of the account.
    pub async fn firewalls(&self) -> ProviderResult<Vec<CloudFirewall>> {
        let found = self.list_all("firewalls.list", "/v2/firewalls", "firewalls").await?;
        found.iter().map(firewall_from).collect()
    }

    /// Replaces the firewall with `spec`; None when it is gone.
    pub async fn firewall_update(
        &self,
        id: &str,
        spec: &CloudFirewallSpec<'_>,
    ) -> ProviderResult<Option<CloudFirewall>> {
        let path = format!("/v2/firewalls/{id}");
        let answer = self.call("firewalls.update", Method::PUT, &path, Some(spec_json(spec))).await?;
        if answer.status == StatusCode::NOT_FOUND {
            return Ok(None);
        }
        firewall_from(&answer.body["firewall"]).map(Some)
    }

    /// False when it was already gone.
    pub async fn firewall_delete(&self, id: &str) -> ProviderResult<bool> {
        let answer = self.call("firewalls.delete", Method::DELETE, &format!("/v2/firewalls/{id}"), None).await?;
        Ok(answer.status != StatusCode::NOT_FOUND)
    }

    /// Makes the tag (making one that exists succeeds).
    pub async fn tag_create(&self, name: &str) -> ProviderResult<()> {
        self.call("tags.create", Method::POST, "/v2/tags", Some(json!({ "name": name }))).await.map(drop)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rule_names_only_the_peers_it_has_and_reads_back_the_same() {
        let rule = CloudFirewallRule {
            protocol: "tcp".into(),
            ports: "22".into(),
            addresses: vec!["203.0.113.7/32".into()],
            tags: vec![],
            droplet_ids: vec!["42".into()],
        };
        let sent = rule_json(&rule, "sources");
        assert_eq!(
            sent,
            json!({ "protocol": "tcp", "ports": "22", "sources": { "addresses": ["203.0.113.7/32"], "droplet_ids": [42] } })
        );
        assert_eq!(rule_from(&sent, "sources"), rule);
        let all = json!({ "protocol": "udp", "ports": "all", "destinations": { "addresses": ["0.0.0.0/0"] } });
        assert_eq!(rule_from(&all, "destinations").ports, "0", "all and 0 say the same");
    }

    #[test]
    fn a_firewall_without_a_known_status_is_unreadable() {
        let body = json!({ "id": "f", "name": "bc-x", "status": "mystery" });
        assert!(firewall_from(&body).is_err());
        let body = json!({ "id": "f", "name": "bc-x", "status": "waiting", "inbound_rules": null, "tags": null });
        let read = firewall_from(&body).unwrap();
        assert!(read.inbound.is_empty() && read.tags.is_empty(), "null lists are empty");
    }
}
