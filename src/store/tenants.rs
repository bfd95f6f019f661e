//! Tenant and project rows: the reads and inserts of the tenant and project calls, and the
//! project lookup the resource calls and token grants check a project id with.
use chrono::{DateTime, Utc};
use sea_orm::{ActiveModelTrait, ColumnTrait, ConnectionTrait, DbErr, EntityTrait, QueryFilter, QueryOrder, Set};

use super::entity::{project, tenant};
use crate::error::Result;

/// The tenant by id.
pub async fn find(conn: &impl ConnectionTrait, tenant_id: &str) -> Result<Option<tenant::Model>> {
    Ok(tenant::Entity::find_by_id(tenant_id.to_owned()).one(conn).await?)
}

/// Every tenant, by id.
pub async fn all(conn: &impl ConnectionTrait) -> Result<Vec<tenant::Model>> {
    Ok(tenant::Entity::find().order_by_asc(tenant::Column::Id).all(conn).await?)
}

/// Inserts the tenant at version 1. The database's own error is returned, so the caller can
/// tell a taken id (a unique violation) from any other failure.
pub async fn insert(
    conn: &impl ConnectionTrait,
    tenant_id: &str,
    name: String,
    now: DateTime<Utc>,
) -> std::result::Result<tenant::Model, DbErr> {
    tenant::ActiveModel {
        id: Set(tenant_id.to_owned()),
        name: Set(name),
        version: Set(1),
        created_at: Set(now),
        updated_at: Set(now),
    }
    .insert(conn)
    .await
}

/// The project, if it is the tenant's.
pub async fn find_project(
    conn: &impl ConnectionTrait,
    tenant_id: &str,
    project_id: &str,
) -> Result<Option<project::Model>> {
    Ok(project::Entity::find_by_id(project_id.to_owned())
        .filter(project::Column::TenantId.eq(tenant_id))
        .one(conn)
        .await?)
}

/// The tenant's projects, by id (oldest first: ids grow with time).
pub async fn projects_of(conn: &impl ConnectionTrait, tenant_id: &str) -> Result<Vec<project::Model>> {
    Ok(project::Entity::find()
        .filter(project::Column::TenantId.eq(tenant_id))
        .order_by_asc(project::Column::Id)
        .all(conn)
        .await?)
}

/// What a new project row holds besides what every new row starts with.
pub struct NewProject<'a> {
    pub id: String,
    pub tenant_id: &'a str,
    pub name: &'a str,
    pub description: Option<&'a str>,
}

/// Inserts the project at version 1. The database's own error is returned, so the caller can
/// tell a name the tenant already uses (a unique violation) from any other failure.
pub async fn insert_project(
    conn: &impl ConnectionTrait,
    new: NewProject<'_>,
    now: DateTime<Utc>,
) -> std::result::Result<project::Model, DbErr> {
    project::ActiveModel {
        id: Set(new.id),
        tenant_id: Set(new.tenant_id.to_owned()),
        name: Set(new.name.to_owned()),
        description: Set(new.description.map(str::to_owned)),
        version: Set(1),
        created_at: Set(now),
        updated_at: Set(now),
    }
    .insert(conn)
    .await
}
