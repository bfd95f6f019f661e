//! The firewall rule a client reads, and its `network.firewallRule.*` events.
pub mod targets;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::store::entity::firewall_rule;
use crate::store::firewall_rules::strings;
use crate::store::outbox::{NewEvent, Payload};
use crate::store::state::{Desired, Direction, Protocol, RuleAction, State};

pub const KIND: &str = "firewallRule";

/// Where a rule's traffic comes from (inbound) or goes to (outbound).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Peers {
    /// IPv4 or IPv6 CIDRs (an address alone is its /32 or /128).
    pub addresses: Vec<String>,
    /// Instances of the same network.
    pub instance_ids: Vec<String>,
}
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FirewallRuleView {
    pub id: String,
    pub tenant_id: String,
    pub project_id: Option<String>,
    pub network_id: String,
    pub name: String,
    pub direction: Direction,
    pub action: RuleAction,
    pub protocol: Protocol,
    pub from_port: Option<i32>,
    pub to_port: Option<i32>,
    pub peers: Peers,
    pub applies_to: Vec<String>,
    pub state: State,
    pub desired_state: Desired,
    pub message: Option<String>,
    pub provider_name: String,
    pub provider_id: Option<String>,
    pub version: i64,
    pub created_at: DateTime<Utc>,
    pub ready_at: Option<DateTime<Utc>>,
    pub deleted_at: Option<DateTime<Utc>>,
}

pub fn view(r: &firewall_rule::Model) -> FirewallRuleView {
    FirewallRuleView {
        id: r.id.clone(),
        tenant_id: r.tenant_id.clone(),
        project_id: r.project_id.clone(),
        network_id: r.network_id.clone(),
        name: r.name.clone(),
        direction: r.direction,
        action: r.action,
        protocol: r.protocol,
        from_port: r.from_port,
        to_port: r.to_port,
        peers: Peers { addresses: strings(&r.addresses), instance_ids: strings(&r.peer_instance_ids) },
        applies_to: strings(&r.applies_to),
        state: r.state,
        desired_state: r.desired_state,
        message: r.message.clone(),
        provider_name: r.provider_name.clone(),
        provider_id: r.provider_id.clone(),
        version: r.version,
        created_at: r.created_at,
        ready_at: r.ready_at,
        deleted_at: r.deleted_at,
    }
}

/// The `network.firewallRule.*` event of a change to `r`: published on its network, its data
/// the rule's view, which names it again as `firewallRuleId` beside its `networkId`.
pub fn event(event_type: &str, r: &firewall_rule::Model) -> NewEvent {
    let data = Payload::of(&view(r)).with("firewallRuleId", json!(r.id));
    NewEvent {
        event_type: format!("network.firewallRule.{event_type}"),
        subject_kind: super::networks::KIND,
        subject: r.network_id.clone(),
        tenant_id: Some(r.tenant_id.clone()),
        project_id: r.project_id.clone(),
        version: r.version,
        data,
    }
}
