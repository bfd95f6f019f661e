//! Small helpers every resource group's calls share: row locks, the pool a tenant was offered,
//! the project a resource goes in, and pages in the order resources were made.
use sea_orm::ConnectionTrait;

use super::pools::{PoolRow, find_pool};
use super::validate;
use crate::error::{Error, Result};
use crate::store::{pools, tenants};

pub const MAX_PAGE: u64 = 1000;

/// The pool, if it was offered to the tenant (NOT_FOUND otherwise).
pub async fn offered_pool(conn: &impl ConnectionTrait, tenant_id: &str, pool_id: &str) -> Result<PoolRow> {
    let offered = pools::find_offer(conn, tenant_id, pool_id).await?;
    if offered.is_none() {
        return Err(Error::not_found("pool", pool_id));
    }
    find_pool(conn, pool_id).await
}

/// The region must be one the pool's account uses.
pub fn check_region(pool: &PoolRow, region: &str) -> Result<()> {
    let regions = crate::views::pools::strings(&pool.account.regions);
    if regions.iter().any(|r| r == region) {
        return Ok(());
    }
    Err(Error::invalid_input("region", format!("the pool's account does not use region {region}"))
        .with_details(serde_json::json!({ "field": "region", "regions": regions })))
}

/// The project must be the tenant's.
pub async fn check_project(conn: &impl ConnectionTrait, tenant_id: &str, project_id: Option<&str>) -> Result<()> {
    let Some(project_id) = project_id else { return Ok(()) };
    tenants::find_project(conn, tenant_id, project_id).await?.ok_or_else(|| Error::not_found("project", project_id))?;
    Ok(())
}

use crate::store::list::ListFilter;

/// Checks what a list asks for before it is read (`store::list`). `id_prefix` is the resources'
/// id prefix, to check the cursor.
pub fn check_list(tenant_id: &str, filter: &ListFilter, id_prefix: &str) -> Result<()> {
    validate::tenant_id("tenantId", tenant_id)?;
    validate::range("first", filter.first as i64, 1, MAX_PAGE as i64)?;
    if let Some(after) = &filter.after {
        validate::id("after", id_prefix, after)?;
    }
    Ok(())
}

/// A page of a list, in the order resources were made.
pub struct Page<T> {
    pub items: Vec<T>,
    /// The last row read: lists read only rows the caller may read (`Actor::readable`), so a
    /// cursor never carries an id the caller may not.
    pub end_cursor: Option<String>,
    pub has_next_page: bool,
}

impl<T> Page<T> {
    pub fn empty() -> Self {
        Page { items: Vec::new(), end_cursor: None, has_next_page: false }
    }
}

/// Splits one extra row off a page read with `limit(first + 1)`, then keeps the rows `keep`
/// allows, as views.
pub fn page<M, T>(mut rows: Vec<M>, first: u64, id: impl Fn(&M) -> &str, keep: impl FnMut(M) -> Option<T>) -> Page<T> {
    let has_next_page = rows.len() as u64 > first;
    rows.truncate(first as usize);
    let end_cursor = rows.last().map(|r| id(r).to_owned());
    let mut items = Vec::with_capacity(rows.len());
    items.extend(rows.into_iter().filter_map(keep));
    Page { items, end_cursor, has_next_page }
}
