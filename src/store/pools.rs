//! Pool, pool offer and provider account rows: the reads and inserts of the account and pool
//! calls, offering a pool to a tenant, and the account a reconciler's run reaches the provider
//! with.
use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use sea_orm::sea_query::{Expr, ExprTrait};
use sea_orm::{ActiveModelTrait, ColumnTrait, ConnectionTrait, DbErr, EntityTrait, QueryFilter, QueryOrder, Set};
use serde::{Deserialize, Serialize};
use serde_json::json;

use super::entity::{pool, pool_offer, provider_account};
use crate::error::Result;
use crate::plan::{Cloud, Shape, Subject};
use crate::store::state::{Billing, FilesystemKind, ProviderKind, VolumeKind};

/// The provider account by id (a reconciler's run reads it to reach the provider).
pub async fn find_account(conn: &impl ConnectionTrait, account_id: &str) -> Result<Option<provider_account::Model>> {
    Ok(provider_account::Entity::find_by_id(account_id.to_owned()).one(conn).await?)
}

/// Every provider account, by id.
pub async fn all_accounts(conn: &impl ConnectionTrait) -> Result<Vec<provider_account::Model>> {
    Ok(provider_account::Entity::find().order_by_asc(provider_account::Column::Id).all(conn).await?)
}

/// The provider accounts of `account_ids`, in no order.
pub async fn find_accounts(
    conn: &impl ConnectionTrait,
    account_ids: Vec<String>,
) -> Result<Vec<provider_account::Model>> {
    Ok(provider_account::Entity::find().filter(provider_account::Column::Id.is_in(account_ids)).all(conn).await?)
}

/// What a new provider account row holds besides what every new row starts with.
pub struct NewAccount<'a> {
    pub id: String,
    pub tenant_id: Option<&'a str>,
    pub name: &'a str,
    pub kind: ProviderKind,
    pub api_url: String,
    pub credential_ref: String,
    pub regions: &'a [String],
    pub zones: &'a [String],
    pub sim: bool,
}

/// Inserts the provider account at version 1. The database's own error is returned, so the
/// caller can tell a name in use (a unique violation) from any other failure.
pub async fn insert_account(
    conn: &impl ConnectionTrait,
    new: NewAccount<'_>,
    now: DateTime<Utc>,
) -> std::result::Result<provider_account::Model, DbErr> {
    provider_account::ActiveModel {
        id: Set(new.id),
        tenant_id: Set(new.tenant_id.map(str::to_owned)),
        name: Set(new.name.to_owned()),
        kind: Set(new.kind),
        api_url: Set(new.api_url),
        credential_ref: Set(new.credential_ref),
        regions: Set(json!(new.regions)),
        zones: Set(json!(new.zones)),
        sim: Set(new.sim),
        version: Set(1),
        created_at: Set(now),
        updated_at: Set(now),
        listed_at: Set(None),
    }
    .insert(conn)
    .await
}

/// Records that a whole inventory pass of the account began at `at`.
pub async fn mark_listed(conn: &impl ConnectionTrait, account_id: &str, at: DateTime<Utc>) -> Result<()> {
    provider_account::Entity::update_many()
        .col_expr(provider_account::Column::ListedAt, Expr::value(at))
        .filter(provider_account::Column::Id.eq(account_id))
        .exec(conn)
        .await?;
    Ok(())
}

/// The pool by id.
pub async fn find(conn: &impl ConnectionTrait, pool_id: &str) -> Result<Option<pool::Model>> {
    Ok(pool::Entity::find_by_id(pool_id.to_owned()).one(conn).await?)
}

/// The pools of `pool_ids`, by id.
pub async fn find_many(conn: &impl ConnectionTrait, pool_ids: Vec<String>) -> Result<Vec<pool::Model>> {
    Ok(pool::Entity::find().filter(pool::Column::Id.is_in(pool_ids)).order_by_asc(pool::Column::Id).all(conn).await?)
}

/// What a new pool row holds besides what every new row starts with.
pub struct NewPool<'a> {
    pub id: String,
    pub name: &'a str,
    pub provider_account_id: &'a str,
    pub billing: Billing,
    pub sizes: &'a [String],
    pub images: &'a [String],
}

/// Inserts the pool at version 1. The database's own error is returned, so the caller can tell
/// a name in use (a unique violation) from any other failure.
pub async fn insert(
    conn: &impl ConnectionTrait,
    new: NewPool<'_>,
    now: DateTime<Utc>,
) -> std::result::Result<pool::Model, DbErr> {
    pool::ActiveModel {
        id: Set(new.id),
        name: Set(new.name.to_owned()),
        provider_account_id: Set(new.provider_account_id.to_owned()),
        billing: Set(new.billing),
        sizes: Set(serde_json::json!(new.sizes)),
        images: Set(serde_json::json!(new.images)),
        rates: Set(None),
        version: Set(1),
        created_at: Set(now),
        updated_at: Set(now),
    }
    .insert(conn)
    .await
}

/// Sets the machine sizes and images the pool offers, with a new version.
pub async fn set_machines(
    conn: &impl ConnectionTrait,
    pool_id: &str,
    sizes: &[String],
    images: &[String],
    now: DateTime<Utc>,
) -> Result<()> {
    pool::Entity::update_many()
        .col_expr(pool::Column::Sizes, Expr::value(serde_json::json!(sizes)))
        .col_expr(pool::Column::Images, Expr::value(serde_json::json!(images)))
        .filter(pool::Column::Id.eq(pool_id))
        .exec(conn)
        .await?;
    bump(conn, pool_id, now).await
}

/// What a pool charges: a price per unit of each meter, in one currency. A meter the card does
/// not list is free.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RateCard {
    /// An ISO 4217 code, e.g. `USD`.
    pub currency: String,
    /// Price per unit by meter name (e.g. per GiB-hour of `vps.volume.gib.hours`).
    pub prices: BTreeMap<String, f64>,
}

impl RateCard {
    /// The card a pool's `rates` column holds, if any (one that does not read is none).
    pub fn of(rates: &Option<serde_json::Value>) -> Option<RateCard> {
        rates.as_ref().and_then(|json| serde_json::from_value(json.clone()).ok())
    }

    pub fn price(&self, meter: &str) -> f64 {
        self.prices.get(meter).copied().unwrap_or(0.0)
    }
}

/// The pool's rate card, if it has one.
pub async fn rate_card(conn: &impl ConnectionTrait, pool_id: &str) -> Result<Option<RateCard>> {
    Ok(find(conn, pool_id).await?.and_then(|pool| RateCard::of(&pool.rates)))
}

/// Sets (or, with None, removes) the pool's rate card, with a new version.
pub async fn set_rates(
    conn: &impl ConnectionTrait,
    pool_id: &str,
    card: Option<&RateCard>,
    now: DateTime<Utc>,
) -> Result<()> {
    let rates = card.map(|card| serde_json::json!(card));
    pool::Entity::update_many()
        .col_expr(pool::Column::Rates, Expr::value(rates))
        .filter(pool::Column::Id.eq(pool_id))
        .exec(conn)
        .await?;
    bump(conn, pool_id, now).await
}

/// Bumps the pool's version in SQL (its offers are part of it, so an offer makes a new version).
pub async fn bump(conn: &impl ConnectionTrait, pool_id: &str, now: DateTime<Utc>) -> Result<()> {
    pool::Entity::update_many()
        .col_expr(pool::Column::Version, Expr::col(pool::Column::Version).add(1))
        .col_expr(pool::Column::UpdatedAt, Expr::value(now))
        .filter(pool::Column::Id.eq(pool_id))
        .exec(conn)
        .await?;
    Ok(())
}

/// The offer of the pool to the tenant, if it was offered.
pub async fn find_offer(
    conn: &impl ConnectionTrait,
    tenant_id: &str,
    pool_id: &str,
) -> Result<Option<pool_offer::Model>> {
    Ok(pool_offer::Entity::find_by_id((tenant_id.to_owned(), pool_id.to_owned())).one(conn).await?)
}

/// The offers made to the tenant, in no order.
pub async fn offers_to(conn: &impl ConnectionTrait, tenant_id: &str) -> Result<Vec<pool_offer::Model>> {
    Ok(pool_offer::Entity::find().filter(pool_offer::Column::TenantId.eq(tenant_id)).all(conn).await?)
}

/// Records the offer of the pool to the tenant; an offer made before is kept as it was.
pub async fn offer(conn: &impl ConnectionTrait, tenant_id: &str, pool_id: &str, now: DateTime<Utc>) -> Result<()> {
    pool_offer::Entity::insert(pool_offer::ActiveModel {
        tenant_id: Set(tenant_id.to_owned()),
        pool_id: Set(pool_id.to_owned()),
        created_at: Set(now),
    })
    .on_conflict_do_nothing()
    .exec(conn)
    .await?;
    Ok(())
}

/// A resource at a provider, by its id, as a dry run names it: its provider, and its kind where
/// that changes the provider's calls. None for an id of no resource at a provider.
pub async fn subject_of(conn: &impl ConnectionTrait, resource_id: &str) -> Result<Option<Subject>> {
    let (table, shape) = match resource_id.split_once('_').map(|(prefix, _)| prefix) {
        Some(crate::ids::VOLUME) => ("provider_volumes", "r.kind"),
        Some(crate::ids::SNAPSHOT) => ("provider_snapshots", "r.volume_kind"),
        Some(crate::ids::FILESYSTEM) => ("filesystems", "r.kind"),
        Some(crate::ids::ADDRESS) => ("provider_addresses", "NULL"),
        Some(crate::ids::INSTANCE) => ("instances", "NULL"),
        Some(crate::ids::NETWORK) => ("networks", "NULL"),
        Some(crate::ids::FIREWALL_RULE) => ("firewall_rules", "NULL"),
        _ => return Ok(None),
    };
    let sql = format!(
        "SELECT a.kind, {shape} AS shape FROM {table} r JOIN provider_accounts a ON a.id = r.provider_account_id \
         WHERE r.id = $1"
    );
    let Some(row) =
        conn.query_one_raw(super::stmt(conn.get_database_backend(), &sql, vec![resource_id.into()])).await?
    else {
        return Ok(None);
    };
    let kind: ProviderKind = row.try_get("", "kind")?;
    let shape: Option<String> = row.try_get("", "shape")?;
    let shape = match shape.as_deref() {
        Some(s) if s == VolumeKind::Shared.to_string() => Shape::Shared,
        Some(s) if s == FilesystemKind::Lustre.to_string() => Shape::Lustre,
        _ => Shape::Plain,
    };
    let cloud = match kind {
        ProviderKind::Digitalocean => Cloud::DigitalOcean,
        ProviderKind::Aws => Cloud::Aws,
    };
    Ok(Some(Subject { id: resource_id.to_owned(), cloud, shape }))
}
