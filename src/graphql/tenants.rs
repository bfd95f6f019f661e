//! Tenants and projects.
use async_graphql::{Context, ID, InputObject, Object, Result};
use chrono::{DateTime, Utc};

use super::{actor, services};
use crate::service::tenants::{ProjectCreate, TenantCreate};
use crate::views::tenants::{ProjectView, TenantView};

pub struct Tenant(pub TenantView);

#[Object]
impl Tenant {
    pub async fn id(&self) -> ID {
        ID(self.0.id.clone())
    }
    async fn name(&self) -> &str {
        &self.0.name
    }
    async fn version(&self) -> i64 {
        self.0.version
    }
    async fn created_at(&self) -> DateTime<Utc> {
        self.0.created_at
    }
}

pub struct Project(pub ProjectView);

#[Object]
impl Project {
    pub async fn id(&self) -> ID {
        ID(self.0.id.clone())
    }
    async fn tenant_id(&self) -> &str {
        &self.0.tenant_id
    }
    async fn name(&self) -> &str {
        &self.0.name
    }
    async fn description(&self) -> Option<&str> {
        self.0.description.as_deref()
    }
    async fn version(&self) -> i64 {
        self.0.version
    }
    async fn created_at(&self) -> DateTime<Utc> {
        self.0.created_at
    }
}

#[derive(InputObject)]
pub struct TenantCreateInput {
    /// The tenant's id, chosen by the operator: 1 to 128 of `A-Z a-z 0-9 . _ : -`.
    pub id: String,
    pub name: String,
}

#[derive(InputObject)]
pub struct ProjectCreateInput {
    pub tenant_id: String,
    /// Unique in the tenant: lower-case letters, digits and dashes, at most 42.
    pub name: String,
    pub description: Option<String>,
    /// The same key with the same input returns the same project; with other input CONFLICT.
    pub idempotency_key: Option<String>,
}

#[derive(Default)]
pub struct TenantQuery;

#[Object]
impl TenantQuery {
    /// One tenant (operators, or the tenant's own tokens with `compute:tenants:read`).
    async fn tenant(&self, ctx: &Context<'_>, id: String) -> Result<Tenant> {
        Ok(Tenant(services(ctx).tenant_get(actor(ctx)?, &id).await?))
    }

    /// Every tenant (operator).
    #[graphql(complexity = "super::limits::unbounded(child_complexity)")]
    async fn tenants(&self, ctx: &Context<'_>) -> Result<Vec<Tenant>> {
        Ok(services(ctx).tenant_list(actor(ctx)?).await?.into_iter().map(Tenant).collect())
    }

    async fn project(&self, ctx: &Context<'_>, tenant_id: String, project_id: String) -> Result<Project> {
        Ok(Project(services(ctx).project_get(actor(ctx)?, &tenant_id, &project_id).await?))
    }

    /// The tenant's projects the caller may read, oldest first.
    #[graphql(complexity = "super::limits::unbounded(child_complexity)")]
    async fn projects(&self, ctx: &Context<'_>, tenant_id: String) -> Result<Vec<Project>> {
        Ok(services(ctx).project_list(actor(ctx)?, &tenant_id).await?.into_iter().map(Project).collect())
    }
}

#[derive(Default)]
pub struct TenantMutation;

#[Object]
impl TenantMutation {
    /// Creates a tenant (operator). Publishes `tenant.created`.
    async fn tenant_create(&self, ctx: &Context<'_>, input: TenantCreateInput) -> Result<Tenant> {
        let input = TenantCreate { id: input.id, name: input.name };
        Ok(Tenant(services(ctx).tenant_create(actor(ctx)?, input).await?))
    }

    /// Creates a project in a tenant (operator). Publishes `project.created`.
    async fn project_create(&self, ctx: &Context<'_>, input: ProjectCreateInput) -> Result<Project> {
        let input = ProjectCreate {
            tenant_id: input.tenant_id,
            name: input.name,
            description: input.description,
            idempotency_key: input.idempotency_key,
        };
        Ok(Project(services(ctx).project_create(actor(ctx)?, input).await?))
    }
}
