//! Usage window rows: the resources a usage pass bills, the windows they have, the insert of
//! the missing ones (each under its unique key, so none is written twice), and the totals a
//! tenant reads.
use std::collections::HashMap;

use chrono::{DateTime, Utc};
use sea_orm::sea_query::{Expr, ExprTrait, OnConflict};
use sea_orm::{
    ColumnTrait, ConnectionTrait, EntityTrait, QueryFilter, QueryOrder, QueryResult, QuerySelect, Set, Value,
};

use super::entity::usage_window as window;
use super::list::Readable;
use super::stmt;
use crate::error::Result;
use crate::ids;
use crate::store::state::{Billing, VolumeKind};

/// A block volume's GiB, per hour.
pub const VOLUME_GIB_HOURS: &str = "vps.volume.gib.hours";
/// A shared volume's GiB, per hour.
pub const SHARE_GIB_HOURS: &str = "vps.share.gib.hours";
/// A snapshot's GiB as the provider reports them, per hour.
pub const SNAPSHOT_GIB_HOURS: &str = "vps.snapshot.gib.hours";
/// One per hour an address is held.
pub const ADDRESS_HOURS: &str = "vps.address.hours";
/// One per hour an instance runs.
pub const INSTANCE_HOURS: &str = "vps.instance.hours";
/// A filesystem's GiB, per hour (a Lustre one's size; an elastic NFS one's is not known).
pub const FILESYSTEM_GIB_HOURS: &str = "vps.filesystem.gib.hours";
/// Every meter, as a rate card names them.
pub const METERS: [&str; 6] =
    [VOLUME_GIB_HOURS, SHARE_GIB_HOURS, SNAPSHOT_GIB_HOURS, ADDRESS_HOURS, INSTANCE_HOURS, FILESYSTEM_GIB_HOURS];
/// The usage source kinds.
pub const SOURCE_VOLUME: &str = "volume";
pub const SOURCE_SNAPSHOT: &str = "snapshot";
pub const SOURCE_ADDRESS: &str = "address";
pub const SOURCE_INSTANCE: &str = "instance";
pub const SOURCE_FILESYSTEM: &str = "filesystem";
/// Resources read per page.
pub const PAGE: usize = 500;
const HOUR_MS: i64 = 3_600_000;
const WINDOW_ID: &str = "uw";

#[derive(Clone, Copy)]
pub enum Source {
    Volumes,
    Snapshots,
    Addresses,
    Instances,
    Filesystems,
}

impl Source {
    pub const ALL: [Source; 5] =
        [Source::Volumes, Source::Snapshots, Source::Addresses, Source::Instances, Source::Filesystems];
}

impl Source {
    fn table(self) -> &'static str {
        match self {
            Source::Volumes => "provider_volumes",
            Source::Snapshots => "provider_snapshots",
            Source::Addresses => "provider_addresses",
            Source::Instances => "instances",
            Source::Filesystems => "filesystems",
        }
    }

    /// The columns beyond the common ones that say the meter and the quantity.
    fn columns(self) -> &'static str {
        match self {
            Source::Volumes => ", kind, COALESCE(observed_size_gib, size_gib) AS gib",
            Source::Snapshots => ", size_gib AS gib",
            Source::Filesystems => ", size_gib AS gib",
            Source::Addresses | Source::Instances => "",
        }
    }

    /// The source kind, meter and quantity of a row; None for a row that does not bill (yet).
    fn meter(self, row: &QueryResult) -> Result<Option<(&'static str, &'static str, f64)>> {
        Ok(match self {
            Source::Volumes => {
                let kind: VolumeKind = row.try_get("", "kind")?;
                let gib: i64 = row.try_get("", "gib")?;
                match kind {
                    VolumeKind::Block => Some((SOURCE_VOLUME, VOLUME_GIB_HOURS, gib as f64)),
                    VolumeKind::Shared => Some((SOURCE_VOLUME, SHARE_GIB_HOURS, gib as f64)),
                }
            }
            Source::Snapshots => {
                let gib: Option<f64> = row.try_get("", "gib")?;
                gib.map(|gib| (SOURCE_SNAPSHOT, SNAPSHOT_GIB_HOURS, gib))
            }
            Source::Addresses => Some((SOURCE_ADDRESS, ADDRESS_HOURS, 1.0)),
            Source::Instances => Some((SOURCE_INSTANCE, INSTANCE_HOURS, 1.0)),
            Source::Filesystems => {
                let gib: Option<i64> = row.try_get("", "gib")?;
                gib.map(|gib| (SOURCE_FILESYSTEM, FILESYSTEM_GIB_HOURS, gib as f64))
            }
        })
    }
}

impl Source {
    /// The source of a resource id, if its kind bills.
    fn of(resource_id: &str) -> Option<Source> {
        Some(match resource_id.split_once('_')?.0 {
            ids::VOLUME => Source::Volumes,
            ids::SNAPSHOT => Source::Snapshots,
            ids::ADDRESS => Source::Addresses,
            ids::INSTANCE => Source::Instances,
            ids::FILESYSTEM => Source::Filesystems,
            _ => return None,
        })
    }
}

/// The meter a resource bills once ready, if it is on a metered pool and its quantity is known
/// (a snapshot's size is the provider's to say): (meter, pool, units per hour).
pub async fn meter_of(conn: &impl ConnectionTrait, resource_id: &str) -> Result<Option<(&'static str, String, f64)>> {
    let Some(source) = Source::of(resource_id) else { return Ok(None) };
    let sql = format!(
        "SELECT pool_id{} FROM {} WHERE id = $1 AND pool_id IN (SELECT id FROM pools WHERE billing = $2)",
        source.columns(),
        source.table()
    );
    let values = vec![resource_id.into(), Billing::Metered.into()];
    let Some(row) = conn.query_one_raw(stmt(conn.get_database_backend(), &sql, values)).await? else {
        return Ok(None);
    };
    let pool_id: String = row.try_get("", "pool_id")?;
    Ok(source.meter(&row)?.map(|(_, meter, quantity)| (meter, pool_id, quantity)))
}

/// A resource that bills, as one page of the pass read it.
pub struct Billable {
    pub id: String,
    pub tenant_id: String,
    pub project_id: Option<String>,
    pub pool_id: String,
    /// None while it does not bill (a snapshot of unknown size).
    pub meter: Option<(&'static str, &'static str, f64)>,
    pub ready_ms: i64,
    pub deleted_ms: Option<i64>,
}

/// One page (by id, after `after`) of the ready resources of `source` on metered pools: the live
/// ones, or those deleted after `horizon`.
pub async fn billable_page(
    conn: &impl ConnectionTrait,
    source: Source,
    live: bool,
    horizon: i64,
    after: &str,
) -> Result<Vec<Billable>> {
    let backend = conn.get_database_backend();
    let mut values: Vec<Value> = vec![after.into(), Billing::Metered.into()];
    let deleted = if live {
        "deleted_at IS NULL"
    } else {
        values.push(millis(horizon).into());
        "deleted_at > $3"
    };
    let sql = format!(
        "SELECT id, tenant_id, project_id, pool_id, ready_at, deleted_at{} FROM {} \
         WHERE ready_at IS NOT NULL AND {deleted} AND id > $1 \
         AND pool_id IN (SELECT id FROM pools WHERE billing = $2) ORDER BY id LIMIT {PAGE}",
        source.columns(),
        source.table(),
    );
    let rows = conn.query_all_raw(stmt(backend, &sql, values)).await?;
    rows.iter()
        .map(|row| {
            let ready_at: DateTime<Utc> = row.try_get("", "ready_at")?;
            let deleted_at: Option<DateTime<Utc>> = row.try_get("", "deleted_at")?;
            Ok(Billable {
                id: row.try_get("", "id")?,
                tenant_id: row.try_get("", "tenant_id")?,
                project_id: row.try_get("", "project_id")?,
                pool_id: row.try_get("", "pool_id")?,
                meter: source.meter(row)?,
                ready_ms: ready_at.timestamp_millis(),
                deleted_ms: deleted_at.map(|d| d.timestamp_millis()),
            })
        })
        .collect()
}

/// The windows one resource has on one meter since the horizon.
#[derive(Clone, Copy)]
pub struct Written {
    pub first: i64,
    pub last: i64,
    pub count: i64,
}

/// (resource_id, meter, first window start, last window start, windows)
type WrittenRow = (String, String, DateTime<Utc>, DateTime<Utc>, i64);

/// The windows since `horizon` of each resource of `ids`, per (resource, meter), in one query.
pub async fn written_windows(
    conn: &impl ConnectionTrait,
    ids: Vec<String>,
    horizon: i64,
) -> Result<HashMap<(String, String), Written>> {
    let rows: Vec<WrittenRow> = window::Entity::find()
        .select_only()
        .column(window::Column::ResourceId)
        .column(window::Column::Meter)
        .column_as(Expr::col(window::Column::WindowStart).min(), "first")
        .column_as(Expr::col(window::Column::WindowStart).max(), "last")
        .column_as(Expr::col(window::Column::Id).count(), "windows")
        .filter(window::Column::ResourceId.is_in(ids))
        .filter(window::Column::WindowStart.gte(millis(horizon)))
        .group_by(window::Column::ResourceId)
        .group_by(window::Column::Meter)
        .into_tuple()
        .all(conn)
        .await?;
    Ok(rows
        .into_iter()
        .map(|(id, meter, first, last, count)| {
            let written = Written { first: first.timestamp_millis(), last: last.timestamp_millis(), count };
            ((id, meter), written)
        })
        .collect())
}

/// A window to write: one hour (from `hour_ms`) of a billing resource.
pub struct NewWindow<'a> {
    pub resource: &'a Billable,
    pub hour_ms: i64,
}

/// Inserts `windows` in one statement, skipping any already written.
pub async fn insert(conn: &impl ConnectionTrait, windows: &[NewWindow<'_>], now: DateTime<Utc>) -> Result<u64> {
    let windows: Vec<window::ActiveModel> = windows.iter().filter_map(|w| row(w, now)).collect();
    if windows.is_empty() {
        return Ok(0);
    }
    let once = OnConflict::columns([window::Column::ResourceId, window::Column::Meter, window::Column::WindowStart])
        .do_nothing()
        .to_owned();
    Ok(window::Entity::insert_many(windows).on_conflict(once).exec_without_returning(conn).await?)
}

fn row(w: &NewWindow<'_>, now: DateTime<Utc>) -> Option<window::ActiveModel> {
    let (source_kind, meter, quantity) = w.resource.meter?;
    Some(window::ActiveModel {
        id: Set(ids::new_id(WINDOW_ID)),
        tenant_id: Set(w.resource.tenant_id.clone()),
        project_id: Set(w.resource.project_id.clone()),
        pool_id: Set(w.resource.pool_id.clone()),
        source_kind: Set(source_kind.to_owned()),
        resource_id: Set(w.resource.id.clone()),
        meter: Set(meter.to_owned()),
        window_start: Set(millis(w.hour_ms)),
        window_end: Set(millis(w.hour_ms + HOUR_MS)),
        quantity: Set(quantity),
        created_at: Set(now),
    })
}

/// (meter, source kind, total quantity, windows)
pub type Total = (String, String, f64, i64);

/// The totals per meter of the tenant's windows on the pool that start in `[from, to)`, by meter.
pub async fn totals(
    conn: &impl ConnectionTrait,
    tenant_id: &str,
    pool_id: &str,
    readable: &Readable,
    from: DateTime<Utc>,
    to: DateTime<Utc>,
) -> Result<Vec<Total>> {
    let mut query = window::Entity::find();
    if let Some(readable) =
        readable.condition(Expr::col(window::Column::ProjectId), Expr::col(window::Column::ResourceId))
    {
        query = query.filter(readable);
    }
    Ok(query
        .select_only()
        .column(window::Column::Meter)
        .column(window::Column::SourceKind)
        .column_as(Expr::col(window::Column::Quantity).sum(), "quantity")
        .column_as(Expr::col(window::Column::Id).count(), "windows")
        .filter(window::Column::TenantId.eq(tenant_id))
        .filter(window::Column::PoolId.eq(pool_id))
        .filter(window::Column::WindowStart.gte(from))
        .filter(window::Column::WindowStart.lt(to))
        .group_by(window::Column::Meter)
        .group_by(window::Column::SourceKind)
        .order_by_asc(window::Column::Meter)
        .into_tuple()
        .all(conn)
        .await?)
}

fn millis(ms: i64) -> DateTime<Utc> {
    DateTime::from_timestamp_millis(ms).unwrap_or_default()
}
