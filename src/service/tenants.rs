//! Tenants and their projects. Tenants are made by operators; a project groups a tenant's
//! resources and is a scope grants can name.
use chrono::Utc;
use sea_orm::ConnectionTrait;
use serde::Serialize;
use serde_json::json;

use super::validate;
use crate::authz::{Actor, Target};
use crate::error::{Error, Result};
use crate::ids;
use crate::services::Services;
use crate::store::entity::{project, tenant};
use crate::store::idempotency::{self, Claim};
use crate::store::outbox::NewEvent;
use crate::store::taken;
use crate::store::tenants::{self as store, NewProject};

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

pub fn tenant_view(t: &tenant::Model) -> serde_json::Value {
    json!({ "id": t.id, "name": t.name, "version": t.version, "createdAt": t.created_at })
}

pub fn project_view(p: &project::Model) -> serde_json::Value {
    json!({ "id": p.id, "tenantId": p.tenant_id, "name": p.name, "description": p.description, "version": p.version, "createdAt": p.created_at })
}

impl Services {
    pub async fn tenant_create(&self, actor: &Actor, input: TenantCreate) -> Result<tenant::Model> {
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
        Ok(created)
    }

    pub async fn tenant_get(&self, actor: &Actor, tenant_id: &str) -> Result<tenant::Model> {
        actor.decide("compute:tenants:read", &Target::tenant(tenant_id))?;
        find_tenant(&self.db, tenant_id).await
    }

    pub async fn tenant_list(&self, actor: &Actor) -> Result<Vec<tenant::Model>> {
        actor.require_operator()?;
        store::all(&self.db).await
    }

    pub async fn project_create(&self, actor: &Actor, input: ProjectCreate) -> Result<project::Model> {
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
        let event = NewEvent {
            event_type: "project.created".into(),
            subject_kind: "project",
            subject: created.id.clone(),
            tenant_id: Some(created.tenant_id.clone()),
            project_id: Some(created.id.clone()),
            version: created.version,
            data: project_view(&created).into(),
        };
        self.commit(txn, vec![event]).await?;
        Ok(created)
    }

    pub async fn project_get(&self, actor: &Actor, tenant_id: &str, project_id: &str) -> Result<project::Model> {
        validate::id("projectId", ids::PROJECT, project_id)?;
        actor.decide("compute:projects:read", &Target::resource(tenant_id, Some(project_id), "project", project_id))?;
        find_project(&self.db, tenant_id, project_id).await
    }

    /// The tenant's projects the caller may read, oldest first.
    pub async fn project_list(&self, actor: &Actor, tenant_id: &str) -> Result<Vec<project::Model>> {
        actor.decide_list("compute:projects:read", tenant_id)?;
        let projects = store::projects_of(&self.db, tenant_id).await?;
        Ok(projects
            .into_iter()
            .filter(|p| {
                actor.allows("compute:projects:read", &Target::resource(tenant_id, Some(&p.id), "project", &p.id))
            })
            .collect())
    }
}

pub(crate) fn tenant_event(event_type: &str, t: &tenant::Model) -> NewEvent {
    NewEvent {
        event_type: event_type.into(),
        subject_kind: "tenant",
        subject: t.id.clone(),
        tenant_id: Some(t.id.clone()),
        project_id: None,
        version: t.version,
        data: tenant_view(t).into(),
    }
}

pub(crate) async fn find_tenant(conn: &impl ConnectionTrait, tenant_id: &str) -> Result<tenant::Model> {
    store::find(conn, tenant_id).await?.ok_or_else(|| Error::not_found("tenant", tenant_id))
}

async fn find_project(conn: &impl ConnectionTrait, tenant_id: &str, project_id: &str) -> Result<project::Model> {
    store::find_project(conn, tenant_id, project_id).await?.ok_or_else(|| Error::not_found("project", project_id))
}
