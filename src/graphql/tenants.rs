//! Tenants and projects.
use async_graphql::{ComplexObject, Context, ID, InputObject, Object, Result, SimpleObject};

use super::plans::planned;
use super::{actor, services};
use crate::service::tenants::{ProjectCreate, TenantCreate};
use crate::views::tenants::{ProjectView, TenantView};

#[derive(SimpleObject)]
#[graphql(complex)]
pub struct Tenant {
    #[graphql(flatten)]
    pub view: TenantView,
}

#[ComplexObject]
impl Tenant {
    pub async fn id(&self) -> ID {
        ID(self.view.id.clone())
    }
}

#[derive(SimpleObject)]
#[graphql(complex)]
pub struct Project {
    #[graphql(flatten)]
    pub view: ProjectView,
}

#[ComplexObject]
impl Project {
    pub async fn id(&self) -> ID {
        ID(self.view.id.clone())
    }
}

#[derive(InputObject)]
pub struct TenantCreateInput {
    /// The tenant's id, chosen by the operator: 1 to 128 of `A-Z a-z 0-9 . _ : -`.
    pub id: String,
    pub name: String,
    /// Runs the whole call and records nothing: the answer it would give, with its plan (quota,
    /// provider calls, meters, monthly cost) in the response's `extensions.plan`.
    #[graphql(default)]
    pub dry_run: bool,
}

#[derive(InputObject)]
pub struct ProjectCreateInput {
    pub tenant_id: String,
    /// Unique in the tenant: lower-case letters, digits and dashes, at most 42.
    pub name: String,
    pub description: Option<String>,
    /// The same key with the same input returns the same project; with other input CONFLICT.
    pub idempotency_key: Option<String>,
    /// Runs the whole call and records nothing: the answer it would give, with its plan (quota,
    /// provider calls, meters, monthly cost) in the response's `extensions.plan`.
    #[graphql(default)]
    pub dry_run: bool,
}

#[derive(Default)]
pub struct TenantQuery;

#[Object]
impl TenantQuery {
    /// One tenant (operators, or the tenant's own tokens with `compute:tenants:read`).
    async fn tenant(&self, ctx: &Context<'_>, id: String) -> Result<Tenant> {
        Ok(Tenant { view: services(ctx).tenant_get(actor(ctx)?, &id).await? })
    }

    /// Every tenant (operator).
    #[graphql(complexity = "super::limits::unbounded(child_complexity)")]
    async fn tenants(&self, ctx: &Context<'_>) -> Result<Vec<Tenant>> {
        Ok(services(ctx).tenant_list(actor(ctx)?).await?.into_iter().map(|view| Tenant { view }).collect())
    }

    async fn project(&self, ctx: &Context<'_>, tenant_id: String, project_id: String) -> Result<Project> {
        Ok(Project { view: services(ctx).project_get(actor(ctx)?, &tenant_id, &project_id).await? })
    }

    /// The tenant's projects the caller may read, oldest first.
    #[graphql(complexity = "super::limits::unbounded(child_complexity)")]
    async fn projects(&self, ctx: &Context<'_>, tenant_id: String) -> Result<Vec<Project>> {
        Ok(services(ctx)
            .project_list(actor(ctx)?, &tenant_id)
            .await?
            .into_iter()
            .map(|view| Project { view })
            .collect())
    }
}

#[derive(Default)]
pub struct TenantMutation;

#[Object]
impl TenantMutation {
    /// Creates a tenant (operator). Publishes `tenant.created`.
    async fn tenant_create(&self, ctx: &Context<'_>, input: TenantCreateInput) -> Result<Tenant> {
        let dry_run = input.dry_run;
        planned(ctx, dry_run, async move {
            let input = TenantCreate { id: input.id, name: input.name };
            Ok(Tenant { view: services(ctx).tenant_create(actor(ctx)?, input).await? })
        })
        .await
    }

    /// Creates a project in a tenant (operator). Publishes `project.created`.
    async fn project_create(&self, ctx: &Context<'_>, input: ProjectCreateInput) -> Result<Project> {
        let dry_run = input.dry_run;
        planned(ctx, dry_run, async move {
            let input = ProjectCreate {
                tenant_id: input.tenant_id,
                name: input.name,
                description: input.description,
                idempotency_key: input.idempotency_key,
            };
            Ok(Project { view: services(ctx).project_create(actor(ctx)?, input).await? })
        })
        .await
    }
}
