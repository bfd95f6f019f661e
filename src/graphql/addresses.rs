//! Provider addresses: reserved public IPs and their assignment to an instance.
use async_graphql::{Context, ID, InputObject, Object, Result, Subscription};
use chrono::{DateTime, Utc};
use futures_util::Stream;

use super::instances::Instance;
use super::loaders::loaders;
use super::pages::Connection;
use super::plans::planned;
use super::render::Render;
use super::{actor, services};
use crate::service::addresses::AddressCreate;
use crate::service::protection::Protection;
use crate::store::list::ListFilter;
use crate::store::state::{AddressFamily, Assignment, Desired, State};
use crate::views::addresses::AddressView;

pub struct ProviderAddress(pub AddressView);

#[Object]
impl ProviderAddress {
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
    async fn region(&self) -> &str {
        &self.0.region
    }
    async fn family(&self) -> AddressFamily {
        self.0.family
    }
    /// The reserved IP, once the provider handed it out (none once it was released outside).
    async fn address(&self) -> Option<&str> {
        self.0.address.as_deref()
    }
    async fn state(&self) -> State {
        self.0.state
    }
    async fn desired_state(&self) -> Desired {
        self.0.desired_state
    }
    /// Why it is not ready: the provider's words, or ours.
    async fn message(&self) -> Option<&str> {
        self.0.message.as_deref()
    }
    /// Released at the provider outside vps-graph: no longer managed (delete it).
    async fn lost(&self) -> bool {
        self.0.lost
    }
    /// The instance it is assigned (or being assigned) to.
    async fn instance_id(&self) -> Option<&str> {
        self.0.instance_id.as_deref()
    }
    /// That instance, when the caller may read it.
    async fn instance(&self, ctx: &Context<'_>) -> Result<Option<Instance>> {
        let Some(instance_id) = &self.0.instance_id else { return Ok(None) };
        Ok(loaders(ctx)?.instances.load_one(instance_id.clone()).await?.flatten().map(Instance::from))
    }
    async fn assignment_state(&self) -> Assignment {
        self.0.assignment_state
    }
    /// Why the assignment is not as wanted.
    async fn assignment_message(&self) -> Option<&str> {
        self.0.assignment_message.as_deref()
    }
    /// Bumped by every change: keep the view with the highest.
    async fn version(&self) -> i64 {
        self.0.version
    }
    /// A delete is refused while it is set (`details.reason: deletionProtected`).
    async fn deletion_protection(&self) -> bool {
        self.0.deletion_protection
    }
    async fn created_at(&self) -> DateTime<Utc> {
        self.0.created_at
    }
    /// Billing starts here.
    async fn ready_at(&self) -> Option<DateTime<Utc>> {
        self.0.ready_at
    }
    /// Billing ends here.
    async fn deleted_at(&self) -> Option<DateTime<Utc>> {
        self.0.deleted_at
    }
}

/// A page of addresses goes to the executor: an address's instance is read by a loader.
impl Render for ProviderAddress {}

#[derive(InputObject)]
pub struct ProviderAddressCreateInput {
    pub tenant_id: String,
    pub project_id: Option<String>,
    pub pool_id: String,
    /// Unique in the tenant among addresses not deleted.
    pub name: String,
    pub region: String,
    #[graphql(default_with = "AddressFamily::Ipv4")]
    pub family: AddressFamily,
    /// A delete is refused while it is set (INVALID_STATE, `reason: deletionProtected`); an
    /// update call turns it off.
    #[graphql(default)]
    pub deletion_protection: bool,
    pub idempotency_key: String,
    /// Runs the whole call and records nothing: the answer it would give, with its plan (quota,
    /// provider calls, meters, monthly cost) in the response's `extensions.plan`.
    #[graphql(default)]
    pub dry_run: bool,
}

#[derive(InputObject)]
pub struct ProviderAddressAssignInput {
    pub tenant_id: String,
    pub address_id: String,
    pub instance_id: String,
    /// Runs the whole call and records nothing: the answer it would give, with its plan (quota,
    /// provider calls, meters, monthly cost) in the response's `extensions.plan`.
    #[graphql(default)]
    pub dry_run: bool,
}

#[derive(InputObject)]
pub struct ProviderAddressUnassignInput {
    pub tenant_id: String,
    pub address_id: String,
    /// Runs the whole call and records nothing: the answer it would give, with its plan (quota,
    /// provider calls, meters, monthly cost) in the response's `extensions.plan`.
    #[graphql(default)]
    pub dry_run: bool,
}

#[derive(InputObject)]
pub struct ProviderAddressDeleteInput {
    pub tenant_id: String,
    pub address_id: String,
    /// Runs the whole call and records nothing: the answer it would give, with its plan (quota,
    /// provider calls, meters, monthly cost) in the response's `extensions.plan`.
    #[graphql(default)]
    pub dry_run: bool,
}

#[derive(InputObject)]
pub struct ProviderAddressUpdateInput {
    pub tenant_id: String,
    pub address_id: String,
    /// Turns deletion protection on or off (left as it is when not given).
    pub deletion_protection: Option<bool>,
    /// Runs the whole call and records nothing: the answer it would give, with its plan (quota,
    /// provider calls, meters, monthly cost) in the response's `extensions.plan`.
    #[graphql(default)]
    pub dry_run: bool,
}

#[derive(Default)]
pub struct AddressQuery;

#[Object]
impl AddressQuery {
    /// One address (`compute:addresses:read` on `provider-address/{id}`).
    async fn provider_address(
        &self,
        ctx: &Context<'_>,
        tenant_id: String,
        address_id: String,
    ) -> Result<ProviderAddress> {
        Ok(ProviderAddress(services(ctx).address_get(actor(ctx)?, &tenant_id, &address_id).await?))
    }

    /// The tenant's addresses in the order they were made (at most 1000 a page), optionally of
    /// one pool or project; deleted ones only with `includeDeleted`.
    #[allow(clippy::too_many_arguments)]
    #[graphql(complexity = "super::limits::page(first, child_complexity)")]
    async fn provider_addresses(
        &self,
        ctx: &Context<'_>,
        tenant_id: String,
        pool_id: Option<String>,
        project_id: Option<String>,
        #[graphql(default)] include_deleted: bool,
        #[graphql(default = 100)] first: i32,
        after: Option<String>,
    ) -> Result<Connection<ProviderAddress>> {
        let filter = ListFilter { pool_id, project_id, include_deleted, first: first.max(0) as u64, after };
        let page = services(ctx).address_list(actor(ctx)?, &tenant_id, filter).await?;
        if ctx.look_ahead().field("edges").field("node").field("instance").exists() {
            // The page's instances in one statement, whatever its size.
            let instance_ids: std::collections::BTreeSet<String> =
                page.items.iter().filter_map(|a| a.instance_id.clone()).collect();
            loaders(ctx)?.instances.load_many(instance_ids).await?;
        }
        Ok(Connection::of(page, |a| &a.id, ProviderAddress))
    }
}

#[derive(Default)]
pub struct AddressMutation;

#[Object]
impl AddressMutation {
    /// Records an address and returns it PENDING, booking one `addresses`; the reconciler
    /// reserves it. Publishes `providerAddress.created`, then `providerAddress.ready` or
    /// `providerAddress.error`. UNSUPPORTED where the pool's provider has no addresses,
    /// INVALID_INPUT for a bad field or a region the account does not use, CONFLICT for a name
    /// taken, QUOTA_EXCEEDED.
    async fn provider_address_create(
        &self,
        ctx: &Context<'_>,
        input: ProviderAddressCreateInput,
    ) -> Result<ProviderAddress> {
        let dry_run = input.dry_run;
        planned(ctx, dry_run, async move {
            let create = AddressCreate {
                tenant_id: input.tenant_id,
                project_id: input.project_id,
                pool_id: input.pool_id,
                name: input.name,
                region: input.region,
                family: input.family,
                deletion_protection: input.deletion_protection,
                idempotency_key: input.idempotency_key,
            };
            Ok(ProviderAddress(services(ctx).address_create(actor(ctx)?, create).await?))
        })
        .await
    }

    /// Assigns it to an instance; publishes `providerAddress.assigned` once the provider did.
    /// Assigning it again to the same instance returns it unchanged. CONFLICT while it is on
    /// another instance, ACCESS_DENIED for an instance of another tenant or one the caller may
    /// not update, INVALID_INPUT for an instance on another account or region, INVALID_STATE
    /// for an instance being deleted, an address being unassigned or deleted, or one released
    /// outside (`reason: notManaged`).
    async fn provider_address_assign(
        &self,
        ctx: &Context<'_>,
        input: ProviderAddressAssignInput,
    ) -> Result<ProviderAddress> {
        let dry_run = input.dry_run;
        planned(ctx, dry_run, async move {
            let view = services(ctx)
                .address_assign(actor(ctx)?, &input.tenant_id, &input.address_id, &input.instance_id)
                .await?;
            Ok(ProviderAddress(view))
        })
        .await
    }

    /// Unassigns it and keeps it reserved; publishes `providerAddress.unassigned` once the
    /// provider let it go. One on no instance is returned as it is.
    async fn provider_address_unassign(
        &self,
        ctx: &Context<'_>,
        input: ProviderAddressUnassignInput,
    ) -> Result<ProviderAddress> {
        let dry_run = input.dry_run;
        planned(ctx, dry_run, async move {
            Ok(ProviderAddress(services(ctx).address_unassign(actor(ctx)?, &input.tenant_id, &input.address_id).await?))
        })
        .await
    }

    /// Changes its settings (deletion protection); publishes `providerAddress.updated`. Asking
    /// what it already has returns it unchanged; INVALID_STATE while it is being deleted.
    async fn provider_address_update(
        &self,
        ctx: &Context<'_>,
        input: ProviderAddressUpdateInput,
    ) -> Result<ProviderAddress> {
        let dry_run = input.dry_run;
        planned(ctx, dry_run, async move {
            let update = Protection { tenant_id: input.tenant_id, id: input.address_id, on: input.deletion_protection };
            Ok(ProviderAddress(services(ctx).address_update(actor(ctx)?, update).await?))
        })
        .await
    }

    /// Marks it for release and returns it DELETING; publishes `providerAddress.deleted` once
    /// the provider released it and its `addresses` is refunded. INVALID_STATE while it is
    /// assigned, or while it has deletion protection (`reason: deletionProtected`); deleting one
    /// being deleted returns it.
    async fn provider_address_delete(
        &self,
        ctx: &Context<'_>,
        input: ProviderAddressDeleteInput,
    ) -> Result<ProviderAddress> {
        let dry_run = input.dry_run;
        planned(ctx, dry_run, async move {
            Ok(ProviderAddress(services(ctx).address_delete(actor(ctx)?, &input.tenant_id, &input.address_id).await?))
        })
        .await
    }
}

#[derive(Default)]
pub struct AddressSubscription;

#[Subscription]
impl AddressSubscription {
    /// The address's new view on every change.
    async fn provider_address_changed(
        &self,
        ctx: &Context<'_>,
        tenant_id: String,
        address_id: String,
    ) -> Result<impl Stream<Item = Result<ProviderAddress>> + use<>> {
        let svc = services(ctx).clone();
        let filter = svc.address_watch(actor(ctx)?, &tenant_id, &address_id).await?;
        super::changes(ctx, &svc.feed, filter, ProviderAddress).await
    }
}
