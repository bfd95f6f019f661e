//! Small helpers every resource group's calls share: row locks, the pool a tenant was offered,
//! the project a resource goes in, and pages in the order resources were made.
use sea_orm::{ColumnTrait, ConnectionTrait, DbBackend, EntityTrait, QueryFilter, Statement};

use super::pools::{PoolView, find_pool};
use crate::error::{Error, Result};
use crate::store::entity::{pool_offer, project};

pub const MAX_PAGE: u64 = 1000;

/// Takes `table`'s row lock for `id` on PostgreSQL (SQLite has one writer at a time). Changes of
/// one resource take turns; callers take their locks in one order: volume, then instance.
pub async fn lock(conn: &impl ConnectionTrait, table: &str, id: &str) -> Result<()> {
    if conn.get_database_backend() == DbBackend::Postgres {
        let sql = format!("SELECT id FROM {table} WHERE id = $1 FOR UPDATE");
        conn.execute_raw(Statement::from_sql_and_values(DbBackend::Postgres, sql, vec![id.into()])).await?;
    }
    Ok(())
}

/// The pool, if it was offered to the tenant (NOT_FOUND otherwise).
pub async fn offered_pool(conn: &impl ConnectionTrait, tenant_id: &str, pool_id: &str) -> Result<PoolView> {
    let offered = pool_offer::Entity::find_by_id((tenant_id.to_owned(), pool_id.to_owned())).one(conn).await?;
    if offered.is_none() {
        return Err(Error::not_found("pool", pool_id));
    }
    find_pool(conn, pool_id).await
}

/// The project must be the tenant's.
pub async fn check_project(conn: &impl ConnectionTrait, tenant_id: &str, project_id: Option<&str>) -> Result<()> {
    let Some(project_id) = project_id else { return Ok(()) };
    project::Entity::find_by_id(project_id.to_owned())
        .filter(project::Column::TenantId.eq(tenant_id))
        .one(conn)
        .await?
        .ok_or_else(|| Error::not_found("project", project_id))?;
    Ok(())
}

/// Splits one extra row off a page read with `limit(first + 1)`: whether there is a next page.
pub fn page<T>(mut rows: Vec<T>, first: u64) -> (Vec<T>, bool) {
    let more = rows.len() as u64 > first;
    rows.truncate(first as usize);
    (rows, more)
}
