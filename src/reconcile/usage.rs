//! `vps.ancillary-usage`: the usage pass. On a metered pool every volume, snapshot and address
//! bills from `ready_at` until `deleted_at` in whole UTC hours; the pass writes each hour's
//! window once it has closed, then looks again just after the next hour boundary. It calls no
//! provider and holds no transaction: every window is one row under the unique key
//! (resource_id, meter, window_start), inserted with ON CONFLICT DO NOTHING, so a rerun, a pass
//! cut short by a crash, or two replicas running it at once (a lease that ran out mid-pass)
//! write no window twice. It never changes a window already written.
//!
//! Which resources a pass reads: those with `ready_at` set on a metered pool that are live
//! (`deleted_at` null) or were deleted after the horizon, 31 days (744 hours) before the current
//! hour; each read through its table's `(deleted_at, id) WHERE ready_at IS NOT NULL` index in
//! pages of 500 by id. The windows a page already has are found in one aggregate query per
//! page (first, last and count of its windows since the horizon, per resource), so the pass
//! resumes each resource after its last window, and rewrites from the start (skipping what
//! exists) only if what it finds has a gap. Windows before the horizon are never written: a
//! pass that has not run for 31 days bills the last 31 days only.
//!
//! Quantity: a GiB meter's quantity is the size when the pass writes the window, not a
//! time-weighted mean. Sizes only grow and the pass runs at each hour's end, so a resize bills
//! the larger size from the hour it happened in. A volume bills the size the provider last
//! showed (`observed_size_gib`, else `size_gib`); a snapshot the GiB the provider reports, and
//! no window while that is unknown (they are written, from its ready hour, once it is known);
//! an address one per hour.
use std::collections::HashMap;

use chrono::{DateTime, Utc};
use sea_orm::sea_query::{Expr, OnConflict};
use sea_orm::{ColumnTrait, ConnectionTrait, EntityTrait, QueryFilter, QueryResult, QuerySelect, Set, Value};

use super::{Next, Reconciler, Run};
use crate::error::Result;
use crate::ids;
use crate::service::Services;
use crate::service::usage::{
    ADDRESS_HOURS, SHARE_GIB_HOURS, SNAPSHOT_GIB_HOURS, SOURCE_ADDRESS, SOURCE_SNAPSHOT, SOURCE_VOLUME,
    VOLUME_GIB_HOURS,
};

use crate::store::entity::usage_window as window;
use crate::store::state::{Billing, VolumeKind};
use crate::store::stmt;

pub const KIND: &str = "vps.ancillary-usage";
/// The one work item of the pass.
pub const ITEM: &str = "usage";
pub const HOUR_MS: i64 = 3_600_000;
/// How far back before the current hour a pass looks for a window still to write.
pub const LOOKBACK_HOURS: i64 = 31 * 24;
/// How long after an hour boundary the next pass runs.
const AFTER_BOUNDARY_MS: i64 = 1_000;
/// Resources read per page.
const PAGE: usize = 500;
/// Windows per insert (11 values each: well under SQLite's and PostgreSQL's parameter limits).
const BATCH: usize = 500;
const WINDOW_ID: &str = "uw";

pub struct UsageReconciler;

#[async_trait::async_trait]
impl Reconciler for UsageReconciler {
    fn kind(&self) -> &'static str {
        KIND
    }

    async fn run(&self, run: &Run<'_>) -> Result<Next> {
        let now = run.services.clock.now();
        pass(run.services, now).await?;
        Ok(Next::After(until_next_pass(now.timestamp_millis())))
    }
}

/// Writes every window closed by `now` that is not written yet; returns how many it wrote.
pub async fn pass(services: &Services, now: DateTime<Utc>) -> Result<u64> {
    let now_ms = now.timestamp_millis();
    let horizon = floor_hour(now_ms) - LOOKBACK_HOURS * HOUR_MS;
    let mut written = 0;
    for source in [Source::Volumes, Source::Snapshots, Source::Addresses] {
        for live in [true, false] {
            let mut after = String::new();
            loop {
                let page = billable_page(&services.db, source, live, horizon, &after).await?;
                let Some(last) = page.last() else { break };
                after = last.id.clone();
                written += write_page(&services.db, &page, now, horizon).await?;
                if page.len() < PAGE {
                    break;
                }
            }
        }
    }
    tracing::info!(windows = written, "usage pass: {written} windows written");
    Ok(written)
}

/// Milliseconds from `now_ms` until just after the next hour boundary.
pub fn until_next_pass(now_ms: i64) -> i64 {
    floor_hour(now_ms) + HOUR_MS - now_ms + AFTER_BOUNDARY_MS
}

fn floor_hour(ms: i64) -> i64 {
    ms - ms.rem_euclid(HOUR_MS)
}

fn ceil_hour(ms: i64) -> i64 {
    let floor = floor_hour(ms);
    if floor == ms { ms } else { floor + HOUR_MS }
}

/// The first and last start (inclusive) of the closed hours that overlap `[ready, deleted or
/// now)`, not before `horizon`; None when there is none.
pub fn billed_hours(ready_ms: i64, deleted_ms: Option<i64>, now_ms: i64, horizon_ms: i64) -> Option<(i64, i64)> {
    let end = deleted_ms.unwrap_or(now_ms).min(now_ms);
    if end <= ready_ms {
        return None;
    }
    let first = floor_hour(ready_ms).max(horizon_ms);
    let last = ceil_hour(end).min(floor_hour(now_ms)) - HOUR_MS;
    (first <= last).then_some((first, last))
}

#[derive(Clone, Copy)]
enum Source {
    Volumes,
    Snapshots,
    Addresses,
}

impl Source {
    fn table(self) -> &'static str {
        match self {
            Source::Volumes => "provider_volumes",
            Source::Snapshots => "provider_snapshots",
            Source::Addresses => "provider_addresses",
        }
    }

    /// The columns beyond the common ones that say the meter and the quantity.
    fn columns(self) -> &'static str {
        match self {
            Source::Volumes => ", kind, COALESCE(observed_size_gib, size_gib) AS gib",
            Source::Snapshots => ", size_gib AS gib",
            Source::Addresses => "",
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
        })
    }
}

/// A resource that bills, as one page of the pass read it.
struct Billable {
    id: String,
    tenant_id: String,
    project_id: Option<String>,
    pool_id: String,
    /// None while it does not bill (a snapshot of unknown size).
    meter: Option<(&'static str, &'static str, f64)>,
    ready_ms: i64,
    deleted_ms: Option<i64>,
}

/// One page (by id, after `after`) of the ready resources of `source` on metered pools: the live
/// ones, or those deleted after `horizon`.
async fn billable_page(
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
struct Written {
    first: i64,
    last: i64,
    count: i64,
}

impl Written {
    /// Where to go on from, for a resource that bills from `first`: after the last window when
    /// every hour from `first` to it is there, else `first` again (what exists is skipped).
    fn resume_at(self, first: i64) -> i64 {
        if self.first == first && self.count == (self.last - self.first) / HOUR_MS + 1 {
            self.last + HOUR_MS
        } else {
            first
        }
    }
}

/// (resource_id, meter, first window start, last window start, windows)
type WrittenRow = (String, String, DateTime<Utc>, DateTime<Utc>, i64);

/// The windows since `horizon` of each resource of `ids`, per (resource, meter), in one query.
async fn written_windows(
    conn: &impl ConnectionTrait,
    ids: Vec<String>,
    horizon: i64,
) -> Result<HashMap<(String, String), Written>> {
    use sea_orm::sea_query::ExprTrait;
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

/// Writes the windows the resources of `page` still miss; returns how many rows were inserted.
async fn write_page(conn: &impl ConnectionTrait, page: &[Billable], now: DateTime<Utc>, horizon: i64) -> Result<u64> {
    let now_ms = now.timestamp_millis();
    let ids = page.iter().filter(|b| b.meter.is_some()).map(|b| b.id.clone()).collect::<Vec<_>>();
    if ids.is_empty() {
        return Ok(0);
    }
    let written = written_windows(conn, ids, horizon).await?;
    let mut inserted = 0;
    let mut batch = Vec::with_capacity(BATCH);
    for resource in page {
        let Some((source_kind, meter, quantity)) = resource.meter else { continue };
        let Some((first, last)) = billed_hours(resource.ready_ms, resource.deleted_ms, now_ms, horizon) else {
            continue;
        };
        let start = written.get(&(resource.id.clone(), meter.to_owned())).map_or(first, |w| w.resume_at(first));
        let mut hour = start;
        while hour <= last {
            batch.push(window::ActiveModel {
                id: Set(ids::new_id(WINDOW_ID)),
                tenant_id: Set(resource.tenant_id.clone()),
                project_id: Set(resource.project_id.clone()),
                pool_id: Set(resource.pool_id.clone()),
                source_kind: Set(source_kind.to_owned()),
                resource_id: Set(resource.id.clone()),
                meter: Set(meter.to_owned()),
                window_start: Set(millis(hour)),
                window_end: Set(millis(hour + HOUR_MS)),
                quantity: Set(quantity),
                created_at: Set(now),
            });
            if batch.len() == BATCH {
                inserted += insert(conn, std::mem::take(&mut batch)).await?;
            }
            hour += HOUR_MS;
        }
    }
    inserted += insert(conn, batch).await?;
    Ok(inserted)
}

/// Inserts `windows` in one statement, skipping any already written.
async fn insert(conn: &impl ConnectionTrait, windows: Vec<window::ActiveModel>) -> Result<u64> {
    if windows.is_empty() {
        return Ok(0);
    }
    let once = OnConflict::columns([window::Column::ResourceId, window::Column::Meter, window::Column::WindowStart])
        .do_nothing()
        .to_owned();
    Ok(window::Entity::insert_many(windows).on_conflict(once).exec_without_returning(conn).await?)
}

fn millis(ms: i64) -> DateTime<Utc> {
    DateTime::from_timestamp_millis(ms).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    const H: i64 = HOUR_MS;
    const T0: i64 = 500_000 * H;

    #[test]
    fn usage_bills_each_closed_hour_that_overlaps_ready_until_deleted() {
        // Ready 10 min into hour 0, deleted 5 min into hour 3: hours 0 to 3, once all closed.
        assert_eq!(billed_hours(T0 + 600_000, Some(T0 + 3 * H + 300_000), T0 + 10 * H, 0), Some((T0, T0 + 3 * H)));
        // Deleted on a boundary: the hour it starts is not used.
        assert_eq!(billed_hours(T0, Some(T0 + 2 * H), T0 + 10 * H, 0), Some((T0, T0 + H)));
    }

    #[test]
    fn usage_writes_no_hour_before_it_has_closed() {
        assert_eq!(billed_hours(T0 + 1, None, T0 + H - 1, 0), None, "hour 0 still open");
        assert_eq!(billed_hours(T0 + 1, None, T0 + H, 0), Some((T0, T0)), "hour 0 closed on the boundary");
        assert_eq!(billed_hours(T0 + 1, None, T0 + 3 * H + 5, 0), Some((T0, T0 + 2 * H)));
    }

    #[test]
    fn usage_of_no_time_or_before_the_horizon_is_not_written() {
        assert_eq!(billed_hours(T0 + 5, Some(T0 + 5), T0 + 5 * H, 0), None, "deleted the moment it was ready");
        assert_eq!(billed_hours(T0, Some(T0 + H), T0 + 50 * H, T0 + 10 * H), None, "all before the horizon");
        assert_eq!(billed_hours(T0, None, T0 + 50 * H, T0 + 10 * H), Some((T0 + 10 * H, T0 + 49 * H)));
    }

    #[test]
    fn usage_resumes_after_the_last_window_unless_there_is_a_gap() {
        let whole = Written { first: T0, last: T0 + 2 * H, count: 3 };
        assert_eq!(whole.resume_at(T0), T0 + 3 * H);
        let gap = Written { first: T0, last: T0 + 2 * H, count: 2 };
        assert_eq!(gap.resume_at(T0), T0, "a gap: from the first hour again");
        let late = Written { first: T0 + H, last: T0 + 2 * H, count: 2 };
        assert_eq!(late.resume_at(T0), T0, "the first hours missing");
    }

    #[test]
    fn usage_passes_run_just_after_each_hour_boundary() {
        assert_eq!(until_next_pass(T0), H + AFTER_BOUNDARY_MS);
        assert_eq!(until_next_pass(T0 + H - 10), 10 + AFTER_BOUNDARY_MS);
        assert_eq!(T0 + 7 + until_next_pass(T0 + 7), T0 + H + AFTER_BOUNDARY_MS);
    }
}
