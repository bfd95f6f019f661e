//! Tenants and their projects. Tenants are made by operators; a project groups a tenant's
//! resources and is a scope grants can name.
use chrono::Utc;
use sea_orm::ConnectionTrait;
use serde::Serialize;

use super::validate;
use crate::authz::{Actor, Target};
use crate::error::{Error, Result};
use crate::ids;
use crate::services::Services;
use crate::store::idempotency::{self, Claim};
use crate::store::taken;
use crate::store::tenants::{self as store, NewProject};
use crate::views::tenants::{ProjectView, TenantView, project_event, tenant_event};

pub struct TenantCreate {
    pub id: String,
    pub name: String,
}

#[derive(Serialize)]
pub struct ProjectCreate {
    pub tenant_id: String,
    pub name: String,
    pub description: Option<String>,
    #[serde(skip)]
    pub idempotency_key: Option<String>,
}

impl Services {
    pub async fn tenant_create(&self, actor: &Actor, input: TenantCreate) -> Result<TenantView> {
        actor.require_operator()?;
        validate::tenant_id("id", &input.id)?;
        validate::max_len("name", &input.name, 128)?;
        if input.name.trim().is_empty() {
            return Err(Error::invalid_input("name", "a tenant needs a name"));
        }
        let now = Utc::now();
        let txn = self.begin().await?;
        let created = store::insert(&txn, &input.id, input.name, now).await;
        let created = created.map_err(taken("id", || format!("tenant {} exists", input.id)))?;
        let event = tenant_event("tenant.created", &created);
        self.commit(txn, vec![event]).await?;
        Ok(created.into())
    }

    pub async fn tenant_get(&self, actor: &Actor, tenant_id: &str) -> Result<TenantView> {
        actor.decide("compute:tenants:read", &Target::tenant(tenant_id))?;
        find_tenant(&self.db, tenant_id).await
    }

    pub async fn tenant_list(&self, actor: &Actor) -> Result<Vec<TenantView>> {
        actor.require_operator()?;
        Ok(store::all(&self.db).await?.into_iter().map(Into::into).collect())
    }

    pub async fn project_create(&self, actor: &Actor, input: ProjectCreate) -> Result<ProjectView> {
        actor.require_operator()?;
        validate::tenant_id("tenantId", &input.tenant_id)?;
        validate::name("name", &input.name)?;
        if let Some(description) = &input.description {
            validate::max_len("description", description, 256)?;
        }
        if let Some(key) = &input.idempotency_key {
            validate::idempotency_key(key)?;
        }
        let txn = self.begin().await?;
        find_tenant(&txn, &input.tenant_id).await?;
        let id = ids::new_id(ids::PROJECT);
        if let Some(key) = &input.idempotency_key {
            let key = idempotency::Key { tenant_id: &input.tenant_id, operation: "projectCreate", key };
            if let Claim::Existing(existing) =
                idempotency::claim(&txn, &key, &idempotency::request_hash(&input), &id).await?
            {
                drop(txn);
                return find_project(&self.db, &input.tenant_id, &existing).await;
            }
        }
        let now = Utc::now();
        let new = NewProject {
            id,
            tenant_id: &input.tenant_id,
            name: &input.name,
            description: input.description.as_deref(),
        };
        let taken_name = taken("name", || format!("project {} exists in tenant {}", input.name, input.tenant_id));
        let created = store::insert_project(&txn, new, now).await.map_err(taken_name)?;
        self.commit(txn, vec![project_event("project.created", &created)]).await?;
        Ok(created.into())
    }

    pub async fn project_get(&self, actor: &Actor, tenant_id: &str, project_id: &str) -> Result<ProjectView> {
        validate::id("projectId", ids::PROJECT, project_id)?;
        actor.decide("compute:projects:read", &Target::resource(tenant_id, Some(project_id), "project", project_id))?;
        find_project(&self.db, tenant_id, project_id).await
    }

    /// The tenant's projects the caller may read, oldest first.
    pub async fn project_list(&self, actor: &Actor, tenant_id: &str) -> Result<Vec<ProjectView>> {
        actor.decide_list("compute:projects:read", tenant_id)?;
        let projects = store::projects_of(&self.db, tenant_id).await?;
        Ok(projects
            .into_iter()
            .filter(|p| {
                actor.allows("compute:projects:read", &Target::resource(tenant_id, Some(&p.id), "project", &p.id))
            })
            .map(Into::into)
            .collect())
    }
}

pub(crate) async fn find_tenant(conn: &impl ConnectionTrait, tenant_id: &str) -> Result<TenantView> {
    store::find(conn, tenant_id).await?.map(Into::into).ok_or_else(|| Error::not_found("tenant", tenant_id))
}

async fn find_project(conn: &impl ConnectionTrait, tenant_id: &str, project_id: &str) -> Result<ProjectView> {
    let found = store::find_project(conn, tenant_id, project_id).await?;
    found.map(Into::into).ok_or_else(|| Error::not_found("project", project_id))
}
