//! Firewall rules of a tenant network: traffic one way (inbound or outbound) between the
//! network's instances and their peers (address ranges, instances of the same network), applied
//! by the `vps.networks` reconciler as a provider firewall (DigitalOcean) or security group
//! (AWS) named `bc-` and the rule's id. Like the network's other parts they are decided on the
//! network (`compute:networks:read` to read, `…:update` to change), and their events are the
//! network's (`network.firewallRule.*`, subject the network, with `networkId` and
//! `firewallRuleId`). Calls record what the tenant wants and wake the network's reconciler.
pub mod check;

use chrono::{DateTime, Utc};
use sea_orm::ConnectionTrait;
use serde::Serialize;
use serde_json::json;

use super::pools::find_pool;
use super::{instances, networks, validate};
use crate::authz::{Actor, Target};
use crate::error::{Code, Error, Result};
use crate::ids;
use crate::provider::ProviderKind;
use crate::services::Services;
use crate::store;
use crate::store::entity::{firewall_rule, instance, network};
use crate::store::firewall_rules::{live_of, name_taken};
use crate::store::idempotency::{self, Claim};
use crate::store::outbox::NewEvent;
use crate::store::queue;
use crate::store::state::{Desired, Direction, Protocol, RuleAction, State};
use crate::views::firewall_rules::{FirewallRuleView, KIND, Peers, event, view};

use crate::store::networks::RECONCILER;
/// Rules a network holds that are not deleted.
pub const MAX_PER_NETWORK: u64 = 100;

#[derive(Serialize)]
pub struct FirewallRuleCreate {
    pub tenant_id: String,
    pub network_id: String,
    pub name: String,
    pub direction: Direction,
    pub action: RuleAction,
    pub protocol: Protocol,
    pub from_port: Option<i32>,
    pub to_port: Option<i32>,
    pub peers: Peers,
    /// Instances of the network it applies to; none: every instance on the network.
    pub applies_to: Vec<String>,
    #[serde(skip)]
    pub idempotency_key: String,
}

impl Services {
    pub async fn firewall_rule_create(&self, actor: &Actor, input: FirewallRuleCreate) -> Result<FirewallRuleView> {
        let checked = check::create(&input)?;
        let txn = self.begin().await?;
        let network = self.network_for_change(&txn, actor, &input.tenant_id, &input.network_id).await?;
        // A replay answers what the first request made, whatever the network's state is now.
        let id = ids::new_id(ids::FIREWALL_RULE);
        let key = idempotency::Key {
            tenant_id: &input.tenant_id,
            operation: "firewallRuleCreate",
            key: &input.idempotency_key,
        };
        if let Claim::Existing(existing) =
            idempotency::claim(&txn, &key, &idempotency::request_hash(&input), &id).await?
        {
            drop(txn);
            return load(&self.db, &input.tenant_id, &input.network_id, &existing).await.map(|r| view(&r));
        }
        let pool = find_pool(&txn, &network.pool_id).await?;
        if input.action == RuleAction::Deny {
            return Err(deny_unsupported(pool.account.kind));
        }
        if network.desired_state == Desired::Absent {
            return Err(networks::being_deleted(&network.id));
        }
        let live = live_of(&txn, &network.id).await?;
        if live.iter().any(|r| r.name == input.name) {
            return Err(name_taken(&input.name));
        }
        if live.len() as u64 >= MAX_PER_NETWORK {
            return Err(Error::new(
                Code::QuotaExceeded,
                format!("a network has at most {MAX_PER_NETWORK} firewall rules that are not deleted"),
            )
            .with_details(json!({ "limit": MAX_PER_NETWORK, "used": live.len() })));
        }
        let on_network = store::instances::live_on_network(&txn, &network.id).await?;
        check_named(actor, &network, &on_network, "peers.instanceIds", &checked.peer_instance_ids)?;
        check_named(actor, &network, &on_network, "appliesTo", &checked.applies_to)?;
        let new = store::firewall_rules::NewFirewallRule {
            id: &id,
            tenant_id: &input.tenant_id,
            project_id: network.project_id.as_deref(),
            network_id: &network.id,
            pool_id: &network.pool_id,
            provider_account_id: &network.provider_account_id,
            name: &input.name,
            direction: input.direction,
            action: input.action,
            protocol: input.protocol,
            ports: checked.ports,
            addresses: checked.addresses,
            peer_instance_ids: checked.peer_instance_ids,
            applies_to: checked.applies_to,
            provider_name: crate::views::firewall_rules::targets::provider_name(&id),
        };
        let created = store::firewall_rules::insert(&txn, new, self.clock.now()).await?;
        if pool.account.kind == ProviderKind::Aws {
            check_groups_per_instance(&live, &created, &on_network)?;
        }
        queue::wake(&txn, RECONCILER, &network.id, self.clock.now_ms()).await?;
        self.commit_and_wake(txn, vec![event("created", &created)]).await?;
        Ok(view(&created))
    }

    /// Marks the rule for deletion; deleting one being deleted returns it unchanged.
    pub async fn firewall_rule_delete(
        &self,
        actor: &Actor,
        tenant_id: &str,
        network_id: &str,
        rule_id: &str,
    ) -> Result<FirewallRuleView> {
        validate::id("firewallRuleId", ids::FIREWALL_RULE, rule_id)?;
        let txn = self.begin().await?;
        self.network_for_change(&txn, actor, tenant_id, network_id).await?;
        let current = load(&txn, tenant_id, network_id, rule_id).await?;
        if current.state == State::Deleted {
            return Err(Error::not_found(KIND, rule_id));
        }
        if current.desired_state == Desired::Absent {
            return Ok(view(&current));
        }
        let updated = store::firewall_rules::mark_deleting(&txn, rule_id, self.clock.now()).await?;
        queue::wake(&txn, RECONCILER, network_id, self.clock.now_ms()).await?;
        self.commit_and_wake(txn, vec![event("deleting", &updated)]).await?;
        Ok(view(&updated))
    }

    pub async fn firewall_rule_get(
        &self,
        actor: &Actor,
        tenant_id: &str,
        network_id: &str,
        rule_id: &str,
    ) -> Result<FirewallRuleView> {
        validate::id("firewallRuleId", ids::FIREWALL_RULE, rule_id)?;
        self.network_get(actor, tenant_id, network_id).await?;
        load(&self.db, tenant_id, network_id, rule_id).await.map(|r| view(&r))
    }

    /// The network's rules that are not deleted, sorted by name.
    pub async fn firewall_rule_list(
        &self,
        actor: &Actor,
        tenant_id: &str,
        network_id: &str,
    ) -> Result<Vec<FirewallRuleView>> {
        self.network_get(actor, tenant_id, network_id).await?;
        Ok(live_of(&self.db, network_id).await?.iter().map(view).collect())
    }

    /// Checks the caller may watch the rule; the subscription follows its network's
    /// `network.firewallRule.*` events about it.
    pub async fn firewall_rule_watch(
        &self,
        actor: &Actor,
        tenant_id: &str,
        network_id: &str,
        rule_id: &str,
    ) -> Result<crate::feed::Filter> {
        let found = self.firewall_rule_get(actor, tenant_id, network_id, rule_id).await?;
        let filter = crate::feed::Filter::resource(actor, found.tenant_id, "network.firewallRule.*", found.network_id);
        Ok(filter.part("firewallRuleId", found.id))
    }
}

/// Marks the network's wanted rules for deletion, in the network delete's transaction (the
/// network locked first): the reconciler removes them before its subnets.
pub(crate) async fn mark_all_deleting(
    conn: &impl ConnectionTrait,
    network_id: &str,
    now: DateTime<Utc>,
) -> Result<Vec<NewEvent>> {
    let mut events = Vec::new();
    for rule in live_of(conn, network_id).await?.iter().filter(|r| r.desired_state == Desired::Present) {
        let updated = store::firewall_rules::mark_deleting(conn, &rule.id, now).await?;
        events.push(event("deleting", &updated));
    }
    Ok(events)
}

/// UNSUPPORTED: the providers' firewalls only allow.
fn deny_unsupported(kind: ProviderKind) -> Error {
    let words = match kind {
        ProviderKind::Aws => "an AWS security group only allows traffic",
        ProviderKind::Digitalocean => "a DigitalOcean cloud firewall only allows traffic",
    };
    Error::new(Code::Unsupported, format!("{words}: a rule that denies cannot be applied; allow what may pass instead"))
        .with_details(json!({ "reason": "deny", "field": "action" }))
}

/// Each named instance is one of the network's, not being deleted, that the caller may read;
/// otherwise INVALID_INPUT naming its place in the list (the same words whatever the reason, so
/// nothing is told of another tenant's or project's instances).
fn check_named(
    actor: &Actor,
    network: &network::Model,
    on_network: &[instance::Model],
    list: &str,
    named: &[String],
) -> Result<()> {
    for (n, id) in named.iter().enumerate() {
        let readable = |i: &instance::Model| {
            let target = Target::resource(&i.tenant_id, i.project_id.as_deref(), crate::views::instances::KIND, &i.id);
            i.desired_state == Desired::Present && actor.allows(instances::READ, &target)
        };
        if !on_network.iter().any(|i| &i.id == id && readable(i)) {
            let field = format!("{list}[{n}]");
            return Err(Error::invalid_input(
                &field,
                format!("{field}: {id} is not an instance of network {} (or is being deleted)", network.id),
            )
            .with_details(json!({ "field": field, "reason": "notOnNetwork" })));
        }
    }
    Ok(())
}

/// AWS: no machine of the network carries more security groups than EC2 lets it with the new
/// rule (nor would a new one, which the rules naming no instance apply to).
fn check_groups_per_instance(
    live: &[firewall_rule::Model],
    created: &firewall_rule::Model,
    on_network: &[instance::Model],
) -> Result<()> {
    let mut rules = live.to_vec();
    rules.push(created.clone());
    let max = crate::views::firewall_rules::targets::MAX_GROUPS_PER_INSTANCE;
    let over = |id: Option<&str>| {
        crate::views::firewall_rules::targets::groups_needed(&crate::views::firewall_rules::targets::applying(
            &rules, id,
        )) > max
    };
    let mut crowded: Vec<String> = on_network
        .iter()
        .filter(|i| i.desired_state == Desired::Present && over(Some(&i.id)))
        .map(|i| i.id.clone())
        .collect();
    if crowded.is_empty() && !over(None) {
        return Ok(());
    }
    crowded.sort();
    Err(Error::new(
        Code::QuotaExceeded,
        format!(
            "on AWS a machine carries at most {max} security groups: one per rule that applies to it, and one more while \
             no outbound rule does; with this rule {} would carry more",
            if crowded.is_empty() { "a new instance of the network".to_owned() } else { crowded.join(", ") }
        ),
    )
    .with_details(json!({ "limit": max, "reason": "securityGroupsPerInstance", "instanceIds": crowded })))
}

pub(crate) async fn load(
    conn: &impl ConnectionTrait,
    tenant_id: &str,
    network_id: &str,
    rule_id: &str,
) -> Result<firewall_rule::Model> {
    store::firewall_rules::find_on_network(conn, tenant_id, network_id, rule_id)
        .await?
        .ok_or_else(|| Error::not_found(KIND, rule_id))
}
