//! Quota booking: a resource holds an amount of one quota (`diskGiB`, `addresses` …) of a
//! (tenant, pool). `hold` sets that amount: the difference is charged with one conditional
//! UPDATE (`used + delta <= max`), and the ledger row keyed by the resource id remembers it, so
//! booking, growing and refunding are all idempotent. Call it inside the mutation's transaction.
//! The quota rows themselves (their max, set when a pool is offered or by an operator, and the
//! lists) are read and written here too.
use chrono::{DateTime, Utc};
use sea_orm::sea_query::Expr;
use sea_orm::{ActiveModelTrait, ColumnTrait, ConnectionTrait, DbBackend, EntityTrait, QueryFilter, QueryOrder, Set};
use serde_json::json;

use super::entity::quota;
use super::stmt;
use crate::error::{Code, Error, Result};

pub struct Holding<'a> {
    pub tenant_id: &'a str,
    pub pool_id: &'a str,
    /// The quota's resource name, e.g. `diskGiB`.
    pub quota: &'a str,
    /// The resource that holds it, e.g. a `pvol_…` id.
    pub resource_id: &'a str,
}

/// Makes `holding` hold exactly `amount` (0 refunds it). QUOTA_EXCEEDED when the growth does not
/// fit, or when there is no quota row at all (fail closed).
pub async fn hold(conn: &impl ConnectionTrait, holding: &Holding<'_>, amount: i64) -> Result<()> {
    let backend = conn.get_database_backend();
    let now = Utc::now();
    conn.execute_raw(stmt(
        backend,
        "INSERT INTO quota_ledger (resource_id, quota_resource, tenant_id, pool_id, amount, updated_at) \
         VALUES ($1, $2, $3, $4, 0, $5) ON CONFLICT DO NOTHING",
        vec![
            holding.resource_id.into(),
            holding.quota.into(),
            holding.tenant_id.into(),
            holding.pool_id.into(),
            now.into(),
        ],
    ))
    .await?;
    // Row lock on PostgreSQL so two replays of one booking cannot both charge; SQLite has one writer.
    let lock = if backend == DbBackend::Postgres { " FOR UPDATE" } else { "" };
    let row = conn
        .query_one_raw(stmt(
            backend,
            &format!("SELECT amount, tenant_id, pool_id FROM quota_ledger WHERE resource_id = $1 AND quota_resource = $2{lock}"),
            vec![holding.resource_id.into(), holding.quota.into()],
        ))
        .await?
        .ok_or_else(|| Error::internal("quota ledger row vanished"))?;
    let (tenant_id, pool_id): (String, String) = (row.try_get("", "tenant_id")?, row.try_get("", "pool_id")?);
    if tenant_id != holding.tenant_id || pool_id != holding.pool_id {
        return Err(Error::internal(format!(
            "{} holds {} of {tenant_id}/{pool_id}, not of the quota named",
            holding.resource_id, holding.quota
        )));
    }
    let held: i64 = row.try_get("", "amount")?;
    let delta = amount - held;
    if delta == 0 {
        return Ok(());
    }
    // Growth must fit under max; a refund always goes through, even where an operator has since
    // lowered max below what is used.
    let charged = conn
        .execute_raw(stmt(
            backend,
            "UPDATE quotas SET used = used + $1, version = version + 1, updated_at = $2 \
             WHERE tenant_id = $3 AND pool_id = $4 AND resource = $5 AND ($1 <= 0 OR used + $1 <= max) AND used + $1 >= 0",
            vec![delta.into(), now.into(), holding.tenant_id.into(), holding.pool_id.into(), holding.quota.into()],
        ))
        .await?
        .rows_affected();
    if charged == 0 {
        return Err(exceeded(conn, holding, delta).await);
    }
    if crate::plan::active() {
        note_change(conn, holding, delta).await?;
    }
    conn.execute_raw(stmt(
        backend,
        "UPDATE quota_ledger SET amount = $1, updated_at = $2 WHERE resource_id = $3 AND quota_resource = $4",
        vec![amount.into(), now.into(), holding.resource_id.into(), holding.quota.into()],
    ))
    .await?;
    Ok(())
}

/// Makes the resource `resource_id` of (tenant, pool) hold each `(quota, amount)` (0 refunds
/// it): the bookings of one resource that holds several quotas (an instance: `instances` and
/// `diskGiB`), all or none, in the caller's transaction.
pub async fn hold_all(
    conn: &impl ConnectionTrait,
    tenant_id: &str,
    pool_id: &str,
    resource_id: &str,
    amounts: &[(&str, i64)],
) -> Result<()> {
    for (quota, amount) in amounts {
        hold(conn, &Holding { tenant_id, pool_id, quota, resource_id }, *amount).await?;
    }
    Ok(())
}

/// What `holding` holds now (0 when it holds nothing).
pub async fn held(conn: &impl ConnectionTrait, resource_id: &str, quota: &str) -> Result<i64> {
    let backend = conn.get_database_backend();
    let row = conn
        .query_one_raw(stmt(
            backend,
            "SELECT amount FROM quota_ledger WHERE resource_id = $1 AND quota_resource = $2",
            vec![resource_id.into(), quota.into()],
        ))
        .await?;
    Ok(match row {
        Some(row) => row.try_get("", "amount")?,
        None => 0,
    })
}

/// A dry run's note of a booking just charged: the quota's use before and after, and its max.
async fn note_change(conn: &impl ConnectionTrait, holding: &Holding<'_>, delta: i64) -> Result<()> {
    let (max, used) = max_and_used(conn, holding).await?.ok_or_else(|| Error::internal("a quota charged vanished"))?;
    crate::plan::note(|plan| {
        plan.quota.push(crate::plan::QuotaChange {
            pool_id: holding.pool_id.to_owned(),
            resource: holding.quota.to_owned(),
            held_by: holding.resource_id.to_owned(),
            before: used - delta,
            after: used,
            max,
        })
    });
    Ok(())
}

/// The quota row's max and use, if the row exists.
async fn max_and_used(conn: &impl ConnectionTrait, holding: &Holding<'_>) -> Result<Option<(i64, i64)>> {
    let row = conn
        .query_one_raw(stmt(
            conn.get_database_backend(),
            "SELECT max, used FROM quotas WHERE tenant_id = $1 AND pool_id = $2 AND resource = $3",
            vec![holding.tenant_id.into(), holding.pool_id.into(), holding.quota.into()],
        ))
        .await?;
    Ok(match row {
        Some(row) => Some((row.try_get("", "max")?, row.try_get("", "used")?)),
        None => None,
    })
}

async fn exceeded(conn: &impl ConnectionTrait, holding: &Holding<'_>, requested: i64) -> Error {
    let (limit, used) = match max_and_used(conn, holding).await {
        Ok(found) => found.unwrap_or((0, 0)),
        Err(err) => return err,
    };
    Error::new(
        Code::QuotaExceeded,
        format!("quota {} of pool {} has room for {} more, {requested} asked", holding.quota, holding.pool_id, (limit - used).max(0)),
    )
    .with_details(json!({ "resource": holding.quota, "poolId": holding.pool_id, "limit": limit, "used": used, "requested": requested }))
}

/// Sets the max of the tenant's quota `resource` on the pool, making the row (nothing used) when
/// there is none; the row as it is now.
pub async fn set_max(
    conn: &impl ConnectionTrait,
    tenant_id: &str,
    pool_id: &str,
    resource: &str,
    max: i64,
    now: DateTime<Utc>,
) -> Result<quota::Model> {
    // Imported here only: module-wide, ExprTrait's `max` makes `exceeded`'s `i64::max` ambiguous.
    use sea_orm::sea_query::ExprTrait;
    let key = (tenant_id.to_owned(), pool_id.to_owned(), resource.to_owned());
    let row = match quota::Entity::find_by_id(key.clone()).one(conn).await? {
        Some(_) => {
            // `version + 1` in SQL: a booking may bump it concurrently.
            quota::Entity::update_many()
                .col_expr(quota::Column::Max, Expr::value(max))
                .col_expr(quota::Column::Version, Expr::col(quota::Column::Version).add(1))
                .col_expr(quota::Column::UpdatedAt, Expr::value(now))
                .filter(quota::Column::TenantId.eq(tenant_id))
                .filter(quota::Column::PoolId.eq(pool_id))
                .filter(quota::Column::Resource.eq(resource))
                .exec(conn)
                .await?;
            quota::Entity::find_by_id(key).one(conn).await?.ok_or_else(|| Error::internal("quota row vanished"))?
        }
        None => {
            quota::ActiveModel {
                tenant_id: Set(tenant_id.to_owned()),
                pool_id: Set(pool_id.to_owned()),
                resource: Set(resource.to_owned()),
                max: Set(max),
                used: Set(0),
                version: Set(1),
                updated_at: Set(now),
            }
            .insert(conn)
            .await?
        }
    };
    Ok(row)
}

/// The tenant's quota rows, on one pool or on all, by pool and then resource.
pub async fn list(conn: &impl ConnectionTrait, tenant_id: &str, pool_id: Option<&str>) -> Result<Vec<quota::Model>> {
    let mut query = quota::Entity::find().filter(quota::Column::TenantId.eq(tenant_id));
    if let Some(pool_id) = pool_id {
        query = query.filter(quota::Column::PoolId.eq(pool_id));
    }
    Ok(query.order_by_asc(quota::Column::PoolId).order_by_asc(quota::Column::Resource).all(conn).await?)
}
