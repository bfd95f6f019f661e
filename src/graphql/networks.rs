//! Tenant networks and their subnets.
use async_graphql::{Context, ID, InputObject, Object, Result, Subscription};
use chrono::{DateTime, Utc};
use futures_util::Stream;

use super::pages::{Connection, Edge};
use super::plans::planned;
use super::render::Render;
use super::{actor, services};
use crate::service::networks::{NetworkAdopt, NetworkCreate, SubnetInput};
use crate::store::list::ListFilter;
use crate::store::state::{Desired, State};
use crate::views::networks::{NetworkView, SubnetView};

pub struct Subnet(pub SubnetView);

#[Object]
impl Subnet {
    pub async fn id(&self) -> ID {
        ID(self.0.id.clone())
    }
    async fn region(&self) -> &str {
        &self.0.region
    }
    /// AWS: the subnet's availability zone.
    async fn zone(&self) -> Option<&str> {
        self.0.zone.as_deref()
    }
    async fn ip_range(&self) -> &str {
        &self.0.ip_range
    }
    async fn state(&self) -> State {
        self.0.state
    }
    async fn desired_state(&self) -> Desired {
        self.0.desired_state
    }
    /// The provider's id once made: the subnet's VPC on DigitalOcean, the EC2 subnet on AWS.
    async fn provider_id(&self) -> Option<&str> {
        self.0.provider_id.as_deref()
    }
    /// Why it is not ready: the provider's words, or ours.
    async fn message(&self) -> Option<&str> {
        self.0.message.as_deref()
    }
    async fn ready_at(&self) -> Option<DateTime<Utc>> {
        self.0.ready_at
    }
    async fn deleted_at(&self) -> Option<DateTime<Utc>> {
        self.0.deleted_at
    }
}

pub struct Network(pub NetworkView);

#[Object]
impl Network {
    pub async fn id(&self) -> ID {
        ID(self.0.id.clone())
    }
    async fn tenant_id(&self) -> &str {
        &self.0.tenant_id
    }
    async fn project_id(&self) -> Option<&str> {
        self.0.project_id.as_deref()
    }
    async fn pool_id(&self) -> &str {
        &self.0.pool_id
    }
    async fn name(&self) -> &str {
        &self.0.name
    }
    async fn description(&self) -> Option<&str> {
        self.0.description.as_deref()
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
    /// Bumped by every change: keep the view with the highest.
    async fn version(&self) -> i64 {
        self.0.version
    }
    /// AWS: the region of the network's VPC.
    async fn region(&self) -> Option<&str> {
        self.0.region.as_deref()
    }
    /// AWS: the VPC's CIDR block.
    async fn ip_range(&self) -> Option<&str> {
        self.0.ip_range.as_deref()
    }
    /// AWS: the VPC's id, once made (or the one adopted).
    async fn provider_id(&self) -> Option<&str> {
        self.0.provider_id.as_deref()
    }
    /// Recorded from an existing VPC (`networkAdopt`): only read, never changed at the provider.
    async fn adopted(&self) -> bool {
        self.0.adopted
    }
    #[graphql(complexity = "super::limits::unbounded(child_complexity)")]
    async fn subnets(&self) -> Vec<Subnet> {
        self.0.subnets.iter().cloned().map(Subnet).collect()
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

/// A page of networks goes to the executor: a network's subnets are objects of their own.
impl Render for Network {}

/// A subnet: on DigitalOcean in a `region` (a VPC of its own), on AWS in a `zone` of the
/// network's region, inside the network's `ipRange`.
#[derive(InputObject)]
pub struct SubnetSpec {
    /// DigitalOcean: one of the pool's regions; one subnet per region. AWS: optional, the
    /// zone's region.
    pub region: Option<String>,
    /// AWS: one of the account's zones; one subnet per zone.
    pub zone: Option<String>,
    /// A private IPv4 block, /16 to /28, not overlapping the network's other subnets.
    pub ip_range: String,
}

impl From<SubnetSpec> for SubnetInput {
    fn from(spec: SubnetSpec) -> Self {
        SubnetInput { region: spec.region, zone: spec.zone, ip_range: spec.ip_range }
    }
}

#[derive(InputObject)]
pub struct NetworkCreateInput {
    pub tenant_id: String,
    pub pool_id: String,
    pub project_id: Option<String>,
    /// Unique in the tenant among networks not deleted.
    pub name: String,
    pub description: Option<String>,
    /// AWS: the VPC's CIDR block (private, /16 to /28), holding every subnet's.
    pub ip_range: Option<String>,
    pub subnets: Vec<SubnetSpec>,
    pub idempotency_key: String,
    /// Runs the whole call and records nothing: the answer it would give, with its plan (quota,
    /// provider calls, meters, monthly cost) in the response's `extensions.plan`.
    #[graphql(default)]
    pub dry_run: bool,
}

/// An existing AWS VPC to record as a network.
#[derive(InputObject)]
pub struct NetworkAdoptInput {
    pub tenant_id: String,
    pub pool_id: String,
    pub project_id: Option<String>,
    /// Unique in the tenant among networks not deleted.
    pub name: String,
    pub description: Option<String>,
    pub vpc_id: String,
    /// The VPC's region; the account's first when absent.
    pub region: Option<String>,
    pub idempotency_key: String,
    /// Runs the whole call and records nothing: the answer it would give, with its plan (quota,
    /// provider calls, meters, monthly cost) in the response's `extensions.plan`.
    #[graphql(default)]
    pub dry_run: bool,
}

#[derive(InputObject)]
pub struct NetworkAddSubnetInput {
    pub tenant_id: String,
    pub network_id: String,
    pub subnet: SubnetSpec,
    /// Runs the whole call and records nothing: the answer it would give, with its plan (quota,
    /// provider calls, meters, monthly cost) in the response's `extensions.plan`.
    #[graphql(default)]
    pub dry_run: bool,
}

#[derive(InputObject)]
pub struct NetworkRemoveSubnetInput {
    pub tenant_id: String,
    pub network_id: String,
    pub subnet_id: String,
    /// Runs the whole call and records nothing: the answer it would give, with its plan (quota,
    /// provider calls, meters, monthly cost) in the response's `extensions.plan`.
    #[graphql(default)]
    pub dry_run: bool,
}

#[derive(InputObject)]
pub struct NetworkDeleteInput {
    pub tenant_id: String,
    pub network_id: String,
    /// Runs the whole call and records nothing: the answer it would give, with its plan (quota,
    /// provider calls, meters, monthly cost) in the response's `extensions.plan`.
    #[graphql(default)]
    pub dry_run: bool,
}

#[derive(Default)]
pub struct NetworkQuery;

#[Object]
impl NetworkQuery {
    async fn network(&self, ctx: &Context<'_>, tenant_id: String, network_id: String) -> Result<Network> {
        Ok(Network(services(ctx).network_get(actor(ctx)?, &tenant_id, &network_id).await?))
    }

    /// The tenant's networks in the order they were made (at most 1000 a page).
    #[allow(clippy::too_many_arguments)]
    #[graphql(complexity = "super::limits::page(first, child_complexity)")]
    async fn networks(
        &self,
        ctx: &Context<'_>,
        tenant_id: String,
        pool_id: Option<String>,
        project_id: Option<String>,
        #[graphql(default)] include_deleted: bool,
        #[graphql(default = 100)] first: i32,
        after: Option<String>,
    ) -> Result<Connection<Network>> {
        let filter = ListFilter { pool_id, project_id, include_deleted, first: first.max(0) as u64, after };
        let page = services(ctx).network_list(actor(ctx)?, &tenant_id, filter).await?;
        Ok(Connection::new(
            page.networks.into_iter().map(|n| Edge { cursor: n.id.clone(), node: Network(n) }).collect(),
            page.end_cursor,
            page.has_next_page,
        ))
    }
}

#[derive(Default)]
pub struct NetworkMutation;

#[Object]
impl NetworkMutation {
    /// Records a network with its subnets and returns it PENDING; the reconciler makes one VPC
    /// per subnet. Publishes `network.created`, then `network.ready` or `network.error`.
    async fn network_create(&self, ctx: &Context<'_>, input: NetworkCreateInput) -> Result<Network> {
        let dry_run = input.dry_run;
        planned(ctx, dry_run, async move {
            let create = NetworkCreate {
                tenant_id: input.tenant_id,
                pool_id: input.pool_id,
                project_id: input.project_id,
                name: input.name,
                description: input.description,
                ip_range: input.ip_range,
                subnets: input.subnets.into_iter().map(Into::into).collect(),
                idempotency_key: input.idempotency_key,
            };
            Ok(Network(services(ctx).network_create(actor(ctx)?, create).await?))
        })
        .await
    }

    /// Records an existing AWS VPC as a network and returns it PENDING; the reconciler reads the
    /// VPC and its subnets (READY) and never changes them. An adopted network takes instances
    /// but no filesystems; deleting it only forgets it. UNSUPPORTED on another provider.
    async fn network_adopt(&self, ctx: &Context<'_>, input: NetworkAdoptInput) -> Result<Network> {
        let dry_run = input.dry_run;
        planned(ctx, dry_run, async move {
            let adopt = NetworkAdopt {
                tenant_id: input.tenant_id,
                pool_id: input.pool_id,
                project_id: input.project_id,
                name: input.name,
                description: input.description,
                vpc_id: input.vpc_id,
                region: input.region,
                idempotency_key: input.idempotency_key,
            };
            Ok(Network(services(ctx).network_adopt(actor(ctx)?, adopt).await?))
        })
        .await
    }

    /// Adds a subnet (INVALID_STATE while the network is being deleted).
    async fn network_add_subnet(&self, ctx: &Context<'_>, input: NetworkAddSubnetInput) -> Result<Network> {
        let dry_run = input.dry_run;
        planned(ctx, dry_run, async move {
            let view = services(ctx)
                .network_add_subnet(actor(ctx)?, &input.tenant_id, &input.network_id, input.subnet.into())
                .await?;
            Ok(Network(view))
        })
        .await
    }

    /// Removes a subnet: its VPC is deleted.
    async fn network_remove_subnet(&self, ctx: &Context<'_>, input: NetworkRemoveSubnetInput) -> Result<Network> {
        let dry_run = input.dry_run;
        planned(ctx, dry_run, async move {
            let view = services(ctx)
                .network_remove_subnet(actor(ctx)?, &input.tenant_id, &input.network_id, &input.subnet_id)
                .await?;
            Ok(Network(view))
        })
        .await
    }

    /// Marks the network for deletion and returns it DELETING; publishes `network.deleting`, then
    /// `network.deleted` once every VPC is gone.
    async fn network_delete(&self, ctx: &Context<'_>, input: NetworkDeleteInput) -> Result<Network> {
        let dry_run = input.dry_run;
        planned(ctx, dry_run, async move {
            Ok(Network(services(ctx).network_delete(actor(ctx)?, &input.tenant_id, &input.network_id).await?))
        })
        .await
    }
}

#[derive(Default)]
pub struct NetworkSubscription;

#[Subscription]
impl NetworkSubscription {
    /// The network's new view on every change (its filesystems' events have their own
    /// subscription, `filesystemChanged`).
    async fn network_changed(
        &self,
        ctx: &Context<'_>,
        tenant_id: String,
        network_id: String,
    ) -> Result<impl Stream<Item = Result<Network>> + use<>> {
        let svc = services(ctx).clone();
        let filter = svc.network_watch(actor(ctx)?, &tenant_id, &network_id).await?;
        super::changes(ctx, &svc.feed, filter, Network).await
    }
}
