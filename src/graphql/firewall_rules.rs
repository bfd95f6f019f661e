//! Firewall rules of a tenant network (DigitalOcean cloud firewalls, AWS security groups).
use async_graphql::{Context, ID, InputObject, Object, Result, SimpleObject, Subscription};
use chrono::{DateTime, Utc};
use futures_util::Stream;

use super::plans::planned;
use super::{actor, services};
use crate::service::firewall_rules::FirewallRuleCreate;
use crate::store::state::{Desired, Direction, Protocol, RuleAction, State};
use crate::views::firewall_rules::FirewallRuleView;
use crate::views::firewall_rules::Peers;

/// Where a rule's traffic comes from (INBOUND) or goes to (OUTBOUND).
#[derive(SimpleObject)]
pub struct FirewallPeers {
    /// IPv4 and IPv6 CIDRs, in canonical form (an address alone is its /32 or /128).
    pub addresses: Vec<String>,
    /// Instances of the same network.
    pub instance_ids: Vec<String>,
}

pub struct FirewallRule(pub FirewallRuleView);

#[Object]
impl FirewallRule {
    pub async fn id(&self) -> ID {
        ID(self.0.id.clone())
    }
    async fn tenant_id(&self) -> &str {
        &self.0.tenant_id
    }
    async fn project_id(&self) -> Option<&str> {
        self.0.project_id.as_deref()
    }
    async fn network_id(&self) -> &str {
        &self.0.network_id
    }
    async fn name(&self) -> &str {
        &self.0.name
    }
    async fn direction(&self) -> Direction {
        self.0.direction
    }
    async fn action(&self) -> RuleAction {
        self.0.action
    }
    async fn protocol(&self) -> Protocol {
        self.0.protocol
    }
    /// The first port (TCP, UDP); none: every port, or ICMP, which has none.
    async fn from_port(&self) -> Option<i32> {
        self.0.from_port
    }
    /// The last port of the range (the first, for one port).
    async fn to_port(&self) -> Option<i32> {
        self.0.to_port
    }
    async fn peers(&self) -> FirewallPeers {
        let Peers { addresses, instance_ids } = self.0.peers.clone();
        FirewallPeers { addresses, instance_ids }
    }
    /// The instances it applies to; empty: every instance on the network, those made later too.
    async fn applies_to(&self) -> &[String] {
        &self.0.applies_to
    }
    async fn state(&self) -> State {
        self.0.state
    }
    async fn desired_state(&self) -> Desired {
        self.0.desired_state
    }
    async fn message(&self) -> Option<&str> {
        self.0.message.as_deref()
    }
    /// The firewall's (DigitalOcean) or security group's (AWS) name: `bc-` and the id.
    async fn provider_name(&self) -> &str {
        &self.0.provider_name
    }
    /// The firewall's or security group's id at the provider, once made.
    async fn provider_id(&self) -> Option<&str> {
        self.0.provider_id.as_deref()
    }
    async fn version(&self) -> i64 {
        self.0.version
    }
    async fn created_at(&self) -> DateTime<Utc> {
        self.0.created_at
    }
    async fn ready_at(&self) -> Option<DateTime<Utc>> {
        self.0.ready_at
    }
    async fn deleted_at(&self) -> Option<DateTime<Utc>> {
        self.0.deleted_at
    }
}

#[derive(InputObject)]
pub struct FirewallPeersInput {
    /// IPv4 or IPv6 CIDRs with no host bits set, or single addresses.
    #[graphql(default)]
    pub addresses: Vec<String>,
    /// Instances of the same network, not being deleted.
    #[graphql(default)]
    pub instance_ids: Vec<String>,
}

#[derive(InputObject)]
pub struct FirewallRuleCreateInput {
    pub tenant_id: String,
    pub network_id: String,
    /// Unique in the network among rules not deleted.
    pub name: String,
    pub direction: Direction,
    /// ALLOW (the default). DENY is UNSUPPORTED: the providers' firewalls only allow.
    #[graphql(default_with = "RuleAction::Allow")]
    pub action: RuleAction,
    pub protocol: Protocol,
    /// TCP and UDP: one port, or with `toPort` a range, each 1 to 65535; neither: every port.
    /// ICMP takes none.
    pub from_port: Option<i32>,
    pub to_port: Option<i32>,
    /// Where the traffic comes from (INBOUND) or goes to (OUTBOUND): at least one, at most 50.
    pub peers: FirewallPeersInput,
    /// Instances of the network it applies to (at most 50); none: every instance on the network.
    #[graphql(default)]
    pub applies_to: Vec<String>,
    pub idempotency_key: String,
    /// Runs the whole call and records nothing: the answer it would give, with its plan (quota,
    /// provider calls, meters, monthly cost) in the response's `extensions.plan`.
    #[graphql(default)]
    pub dry_run: bool,
}

#[derive(InputObject)]
pub struct FirewallRuleDeleteInput {
    pub tenant_id: String,
    pub network_id: String,
    pub firewall_rule_id: String,
    /// Runs the whole call and records nothing: the answer it would give, with its plan (quota,
    /// provider calls, meters, monthly cost) in the response's `extensions.plan`.
    #[graphql(default)]
    pub dry_run: bool,
}

#[derive(Default)]
pub struct FirewallRuleQuery;

#[Object]
impl FirewallRuleQuery {
    /// One firewall rule of the network (`compute:networks:read` on the network).
    async fn firewall_rule(
        &self,
        ctx: &Context<'_>,
        tenant_id: String,
        network_id: String,
        firewall_rule_id: String,
    ) -> Result<FirewallRule> {
        let view = services(ctx).firewall_rule_get(actor(ctx)?, &tenant_id, &network_id, &firewall_rule_id).await?;
        Ok(FirewallRule(view))
    }

    /// The network's firewall rules that are not deleted, sorted by name (at most 100).
    #[graphql(complexity = "super::limits::list(100, child_complexity)")]
    async fn firewall_rules(
        &self,
        ctx: &Context<'_>,
        tenant_id: String,
        network_id: String,
    ) -> Result<Vec<FirewallRule>> {
        let views = services(ctx).firewall_rule_list(actor(ctx)?, &tenant_id, &network_id).await?;
        Ok(views.into_iter().map(FirewallRule).collect())
    }
}

#[derive(Default)]
pub struct FirewallRuleMutation;

#[Object]
impl FirewallRuleMutation {
    /// Records a rule PENDING on the network and returns it; the networks reconciler applies it
    /// at the provider as a firewall (DigitalOcean) or security group (AWS) named `bc-` and its
    /// id. Once any rule applies to an instance, inbound traffic no rule allows is dropped; once
    /// an outbound rule applies to it, so is outbound traffic no rule allows. Publishes
    /// `network.firewallRule.created`, then `…ready` or `…error`.
    async fn firewall_rule_create(&self, ctx: &Context<'_>, input: FirewallRuleCreateInput) -> Result<FirewallRule> {
        let dry_run = input.dry_run;
        planned(ctx, dry_run, async move {
            let create = FirewallRuleCreate {
                tenant_id: input.tenant_id,
                network_id: input.network_id,
                name: input.name,
                direction: input.direction,
                action: input.action,
                protocol: input.protocol,
                from_port: input.from_port,
                to_port: input.to_port,
                peers: Peers { addresses: input.peers.addresses, instance_ids: input.peers.instance_ids },
                applies_to: input.applies_to,
                idempotency_key: input.idempotency_key,
            };
            Ok(FirewallRule(services(ctx).firewall_rule_create(actor(ctx)?, create).await?))
        })
        .await
    }

    /// Marks the rule for deletion and returns it DELETING; the reconciler takes it off the
    /// machines and deletes its firewall or security group, then publishes
    /// `network.firewallRule.deleted`.
    async fn firewall_rule_delete(&self, ctx: &Context<'_>, input: FirewallRuleDeleteInput) -> Result<FirewallRule> {
        let dry_run = input.dry_run;
        planned(ctx, dry_run, async move {
            let view = services(ctx)
                .firewall_rule_delete(actor(ctx)?, &input.tenant_id, &input.network_id, &input.firewall_rule_id)
                .await?;
            Ok(FirewallRule(view))
        })
        .await
    }
}

#[derive(Default)]
pub struct FirewallRuleSubscription;

#[Subscription]
impl FirewallRuleSubscription {
    /// The rule's new view at each of its events: created, ready, error, deleting and deleted
    /// (`network.firewallRule.*`).
    async fn firewall_rule_changed(
        &self,
        ctx: &Context<'_>,
        tenant_id: String,
        network_id: String,
        firewall_rule_id: String,
    ) -> Result<impl Stream<Item = Result<FirewallRule>> + use<>> {
        let svc = services(ctx).clone();
        let filter = svc.firewall_rule_watch(actor(ctx)?, &tenant_id, &network_id, &firewall_rule_id).await?;
        super::changes(ctx, &svc.feed, filter, FirewallRule).await
    }
}
