//! The queries every resource table shares: a page of the tenant's rows in the order made (the
//! one query behind every list), and one row if it is the tenant's.
//! The caller checks the filter first (`service::rows::list_query`); this only reads.
use sea_orm::sea_query::{Alias, Expr, ExprTrait};
use sea_orm::{Condition, ConnectionTrait, EntityTrait, QueryFilter, QueryOrder, QuerySelect, Select};

use super::columns::Columns;
use super::session::Session;
use crate::error::Result;
use crate::store::state::State;

/// What a list of a tenant's resources asks for (every resource table has `tenant_id`,
/// `pool_id`, `project_id`, `state` and an `id` that sorts in the order made).
pub struct ListFilter {
    pub pool_id: Option<String>,
    pub project_id: Option<String>,
    pub include_deleted: bool,
    pub first: u64,
    pub after: Option<String>,
}

/// Which of a tenant's rows a caller may read (`Actor::readable`): every one, or those of some
/// projects and those with some ids. A list reads only these, so that the last row of a page,
/// whose id is the page's cursor, is always one the caller may read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Readable {
    All,
    Only { projects: Vec<String>, ids: Vec<String> },
}

impl Readable {
    /// The condition on a table's project and id columns; None when every row is readable.
    pub fn condition(&self, project: Expr, id: Expr) -> Option<Condition> {
        let Readable::Only { projects, ids } = self else { return None };
        // An empty list is written `1 = 2` by sea-query: it reads nothing.
        Some(Condition::any().add(project.is_in(projects.iter().cloned())).add(id.is_in(ids.iter().cloned())))
    }
}

/// The tenant's rows of `E` that `filter` asks for and the caller may read, in the order made,
/// one more than the page (so the caller can tell whether there is a next page).
pub fn query<E: EntityTrait>(tenant_id: &str, filter: &ListFilter, readable: &Readable) -> Select<E> {
    let col = |name: &str| Expr::col(Alias::new(name));
    let mut query = E::find().filter(col("tenant_id").eq(tenant_id));
    if let Some(readable) = readable.condition(col("project_id"), col("id")) {
        query = query.filter(readable);
    }
    if let Some(pool_id) = &filter.pool_id {
        query = query.filter(col("pool_id").eq(pool_id.as_str()));
    }
    if let Some(project_id) = &filter.project_id {
        query = query.filter(col("project_id").eq(project_id.as_str()));
    }
    if !filter.include_deleted {
        query = query.filter(col("state").ne(State::Deleted));
    }
    if let Some(after) = &filter.after {
        query = query.filter(col("id").gt(after.as_str()));
    }
    query.order_by_asc(col("id")).limit(filter.first + 1)
}

/// Reads the page `query` describes.
pub async fn page<E: EntityTrait>(
    conn: &impl ConnectionTrait,
    tenant_id: &str,
    filter: &ListFilter,
    readable: &Readable,
) -> Result<Vec<E::Model>> {
    Ok(query::<E>(tenant_id, filter, readable).all(conn).await?)
}

/// The page `query` describes, with only `columns` read (`store::columns`).
pub async fn page_of<E: EntityTrait>(
    session: &Session<'_>,
    tenant_id: &str,
    filter: &ListFilter,
    readable: &Readable,
    columns: &Columns<E>,
) -> Result<Vec<E::Model>>
where
    E::Model: Default,
{
    super::columns::select(session, query::<E>(tenant_id, filter, readable), columns).await
}

/// The row of `E` with `id`, if it is the tenant's (whatever its state).
pub async fn find_in_tenant<E: EntityTrait>(
    conn: &impl ConnectionTrait,
    tenant_id: &str,
    id: &str,
) -> Result<Option<E::Model>> {
    let col = |name: &str| Expr::col(Alias::new(name));
    Ok(E::find().filter(col("id").eq(id)).filter(col("tenant_id").eq(tenant_id)).one(conn).await?)
}
