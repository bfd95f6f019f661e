//! `vps.ancillary-usage`: the usage pass. On a metered pool every volume, snapshot, address,
//! instance and filesystem bills from `ready_at` until `deleted_at` in whole UTC hours; the pass writes each hour's
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
//! an address and an instance one per hour; a Lustre filesystem its size (an elastic NFS one has
//! no size recorded, and bills no window).
use chrono::{DateTime, Utc};
use sea_orm::ConnectionTrait;

use super::{Next, Reconciler, Run};
use crate::error::Result;
use crate::services::Services;
use crate::store::usage::{Billable, NewWindow, PAGE, Source, Written, billable_page, written_windows};

pub const KIND: &str = "vps.ancillary-usage";
/// The one work item of the pass.
pub const ITEM: &str = "usage";
pub const HOUR_MS: i64 = 3_600_000;
/// How far back before the current hour a pass looks for a window still to write.
pub const LOOKBACK_HOURS: i64 = 31 * 24;
/// How long after an hour boundary the next pass runs.
const AFTER_BOUNDARY_MS: i64 = 1_000;
/// Windows per insert (11 values each: well under SQLite's and PostgreSQL's parameter limits).
const BATCH: usize = 500;

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
    for source in Source::ALL {
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

/// Where to go on from, for a resource that bills from `first`: after the last window when
/// every hour from `first` to it is there, else `first` again (what exists is skipped).
fn resume_at(written: Written, first: i64) -> i64 {
    if written.first == first && written.count == (written.last - written.first) / HOUR_MS + 1 {
        written.last + HOUR_MS
    } else {
        first
    }
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
        let Some((_, meter, _)) = resource.meter else { continue };
        let Some((first, last)) = billed_hours(resource.ready_ms, resource.deleted_ms, now_ms, horizon) else {
            continue;
        };
        let start = written.get(&(resource.id.clone(), meter.to_owned())).map_or(first, |w| resume_at(*w, first));
        let mut hour = start;
        while hour <= last {
            batch.push(NewWindow { resource, hour_ms: hour });
            if batch.len() == BATCH {
                inserted += crate::store::usage::insert(conn, &std::mem::take(&mut batch), now).await?;
            }
            hour += HOUR_MS;
        }
    }
    inserted += crate::store::usage::insert(conn, &batch, now).await?;
    Ok(inserted)
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
        assert_eq!(resume_at(whole, T0), T0 + 3 * H);
        let gap = Written { first: T0, last: T0 + 2 * H, count: 2 };
        assert_eq!(resume_at(gap, T0), T0, "a gap: from the first hour again");
        let late = Written { first: T0 + H, last: T0 + 2 * H, count: 2 };
        assert_eq!(resume_at(late, T0), T0, "the first hours missing");
    }

    #[test]
    fn usage_passes_run_just_after_each_hour_boundary() {
        assert_eq!(until_next_pass(T0), H + AFTER_BOUNDARY_MS);
        assert_eq!(until_next_pass(T0 + H - 10), 10 + AFTER_BOUNDARY_MS);
        assert_eq!(T0 + 7 + until_next_pass(T0 + 7), T0 + H + AFTER_BOUNDARY_MS);
    }
}
