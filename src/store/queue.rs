//! The reconcile queue: one work item per `(kind, resource id)` with a due time and a lease.
//! Waking is an upsert where the earliest due time wins; a wake that lands while the item is
//! leased marks it to run again right after. Claiming sets owner, expiry and `epoch + 1` in one
//! short statement (PostgreSQL: `FOR UPDATE SKIP LOCKED`); the run's write-back checks that epoch
//! (a fence), so a worker whose lease expired changes nothing. An expired lease is claimable.
//! Leases are measured on the database's clock, never a replica's: replicas whose clocks
//! disagree still agree on when a lease ends. A run renews its lease while it lasts (`renew`).
use sea_orm::sea_query::{Alias, Expr, ExprTrait, LockType, Query, SelectStatement};
use sea_orm::{ConnectionTrait, DbBackend};

use super::stmt;
use crate::error::Result;

pub const WAKE_CHANNEL: &str = "vps_graph_work";

/// What a run is for, in the order an account's budget serves them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Purpose {
    /// A change someone made (a create, an action, a delete), or a run after a failure.
    Asked,
    /// A provider action under way, looked at again.
    Following,
    /// The hourly drift read of a settled resource.
    Drift,
}

impl Purpose {
    pub const ALL: [Purpose; 3] = [Purpose::Asked, Purpose::Following, Purpose::Drift];

    pub fn as_str(self) -> &'static str {
        match self {
            Purpose::Asked => "asked",
            Purpose::Following => "following",
            Purpose::Drift => "drift",
        }
    }

    /// A stored word back; anything unknown is served as asked.
    pub fn parse(word: &str) -> Purpose {
        Purpose::ALL.into_iter().find(|p| p.as_str() == word).unwrap_or(Purpose::Asked)
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Claimed {
    pub kind: String,
    pub resource_id: String,
    pub epoch: i64,
    pub owner: String,
    /// Runs in a row that ended in error, this one included.
    pub attempts: i32,
    /// What the run is for: the account's budget serves asked, then following, then drift.
    pub purpose: Purpose,
}

/// Asks for `(kind, resource_id)` to be reconciled at `due_at` (or earlier if already asked),
/// for a change someone made (`asked`). Call it in the transaction of the change that needs it.
pub async fn wake(conn: &impl ConnectionTrait, kind: &str, resource_id: &str, due_at: i64) -> Result<()> {
    crate::plan::note(|plan| plan.woke = true);
    let backend = conn.get_database_backend();
    let least = if backend == DbBackend::Postgres { "LEAST" } else { "MIN" };
    let sql = format!(
        "INSERT INTO work_items (kind, resource_id, due_at) VALUES ($1, $2, $3) \
         ON CONFLICT (kind, resource_id) DO UPDATE SET due_at = {least}(work_items.due_at, excluded.due_at), \
         run_again = work_items.run_again OR work_items.lease_owner IS NOT NULL, \
         due_for = CASE WHEN excluded.due_at <= work_items.due_at THEN 'asked' ELSE work_items.due_for END"
    );
    conn.execute_raw(stmt(backend, &sql, vec![kind.into(), resource_id.into(), due_at.into()])).await?;
    if backend == DbBackend::Postgres {
        // Delivered at commit, to every replica's runtime.
        conn.execute_raw(stmt(backend, "SELECT pg_notify($1, $2)", vec![WAKE_CHANNEL.into(), kind.into()])).await?;
    }
    Ok(())
}

/// Makes the item of `(kind, resource_id)` due at `due_at` for drift if there is none; one that
/// exists is left as it is (a restart does not move it).
pub async fn ensure(conn: &impl ConnectionTrait, kind: &str, resource_id: &str, due_at: i64) -> Result<()> {
    let sql = "INSERT INTO work_items (kind, resource_id, due_at, due_for) VALUES ($1, $2, $3, 'drift') \
               ON CONFLICT (kind, resource_id) DO NOTHING";
    let values = vec![kind.into(), resource_id.into(), due_at.into()];
    conn.execute_raw(stmt(conn.get_database_backend(), sql, values)).await?;
    Ok(())
}

/// Ids per statement: well under SQLite's and PostgreSQL's parameter limits.
const IDS_PER_STATEMENT: usize = 500;

/// Puts off the drift reads of items of `kind`, each `(resource id, due time)` to that later
/// time: those a listing showed as recorded. Only an item waiting for its drift read moves: not
/// one asked for, following an action, running, or already due at `now` (a change may have been
/// asked of it since it came due, which a wake does not relabel). How many moved.
pub async fn put_off_drift(conn: &impl ConnectionTrait, kind: &str, moves: &[(String, i64)], now: i64) -> Result<u64> {
    move_drift(conn, kind, moves, &format!("due_at > {now} AND due_at < $2")).await
}

/// Brings the drift reads of items of `kind` forward to `now`: those a listing did not show as
/// recorded, for their own read to confirm. How many moved.
pub async fn bring_drift_forward(conn: &impl ConnectionTrait, kind: &str, ids: &[String], now: i64) -> Result<u64> {
    let moves: Vec<(String, i64)> = ids.iter().map(|id| (id.clone(), now)).collect();
    move_drift(conn, kind, &moves, "due_at > $2").await
}

/// Moves items of `kind` waiting for their drift read (and matching `when`, which may name the
/// new due time as $2) to their new due times, a statement per due time and chunk of ids.
async fn move_drift(conn: &impl ConnectionTrait, kind: &str, moves: &[(String, i64)], when: &str) -> Result<u64> {
    let backend = conn.get_database_backend();
    let mut by_due: std::collections::BTreeMap<i64, Vec<&str>> = std::collections::BTreeMap::new();
    for (id, due) in moves {
        by_due.entry(*due).or_default().push(id);
    }
    let mut moved = 0;
    for (due, ids) in by_due {
        for chunk in ids.chunks(IDS_PER_STATEMENT) {
            let marks: Vec<String> = (0..chunk.len()).map(|i| format!("${}", i + 3)).collect();
            let sql = format!(
                "UPDATE work_items SET due_at = $2 WHERE kind = $1 AND due_for = 'drift' AND lease_owner IS NULL \
                 AND {when} AND resource_id IN ({})",
                marks.join(", ")
            );
            let mut values: Vec<sea_orm::Value> = vec![kind.into(), due.into()];
            values.extend(chunk.iter().map(|id| (*id).into()));
            moved += conn.execute_raw(stmt(backend, &sql, values)).await?.rows_affected();
        }
    }
    Ok(moved)
}

/// The database's own clock, in ms since the epoch, as an SQL expression.
fn database_now(backend: DbBackend) -> &'static str {
    match backend {
        DbBackend::Postgres => "CAST(EXTRACT(EPOCH FROM clock_timestamp()) * 1000 AS BIGINT)",
        _ => "CAST((julianday('now') - 2440587.5) * 86400000.0 AS INTEGER)",
    }
}

/// Leases up to `limit` items of `kinds` due at `now` to `owner`, for `lease_ms` of the
/// database's clock.
pub async fn claim(
    conn: &impl ConnectionTrait,
    owner: &str,
    kinds: &[&str],
    now: i64,
    lease_ms: i64,
    limit: u64,
) -> Result<Vec<Claimed>> {
    let backend = conn.get_database_backend();
    let kind_list = kinds.iter().map(|k| format!("'{}'", k.replace('\'', ""))).collect::<Vec<_>>().join(", ");
    let clock = database_now(backend);
    let due = format!(
        "SELECT kind, resource_id FROM work_items WHERE kind IN ({kind_list}) AND due_at <= $3 \
         AND (lease_until IS NULL OR lease_until <= {clock}) ORDER BY due_at LIMIT $4"
    );
    let sql = match backend {
        DbBackend::Postgres => format!(
            "UPDATE work_items w SET lease_owner = $1, lease_until = {clock} + $2, lease_epoch = w.lease_epoch + 1, \
             attempts = w.attempts + 1, run_again = false FROM ({due} FOR UPDATE SKIP LOCKED) d \
             WHERE w.kind = d.kind AND w.resource_id = d.resource_id \
             RETURNING w.kind, w.resource_id, w.lease_epoch, w.attempts, w.due_for"
        ),
        _ => format!(
            "UPDATE work_items SET lease_owner = $1, lease_until = {clock} + $2, lease_epoch = lease_epoch + 1, \
             attempts = attempts + 1, run_again = false WHERE (kind, resource_id) IN ({due}) \
             RETURNING kind, resource_id, lease_epoch, attempts, due_for"
        ),
    };
    let rows = conn
        .query_all_raw(stmt(backend, &sql, vec![owner.into(), lease_ms.into(), now.into(), (limit as i64).into()]))
        .await?;
    rows.iter()
        .map(|row| {
            Ok(Claimed {
                kind: row.try_get("", "kind")?,
                resource_id: row.try_get("", "resource_id")?,
                epoch: row.try_get("", "lease_epoch")?,
                owner: owner.to_owned(),
                attempts: row.try_get("", "attempts")?,
                purpose: Purpose::parse(&row.try_get::<String>("", "due_for")?),
            })
        })
        .collect()
}

/// The condition that picks a run's work item while the run holds its lease ($1 … $4), and its
/// values; a statement adds its own values from $5.
const FENCED: &str = "kind = $1 AND resource_id = $2 AND lease_epoch = $3 AND lease_owner = $4";

fn fenced_key(claimed: &Claimed) -> Vec<sea_orm::Value> {
    vec![
        claimed.kind.clone().into(),
        claimed.resource_id.clone().into(),
        claimed.epoch.into(),
        claimed.owner.clone().into(),
    ]
}

/// Extends the run's lease to `lease_ms` from the database's now. False once the lease has
/// changed hands (it ran out and another worker claimed the item): from then on the run's
/// provider calls and write-back are refused.
pub async fn renew(conn: &impl ConnectionTrait, claimed: &Claimed, lease_ms: i64) -> Result<bool> {
    let backend = conn.get_database_backend();
    let sql = format!("UPDATE work_items SET lease_until = {} + $5 WHERE {FENCED}", database_now(backend));
    let mut values = fenced_key(claimed);
    values.push(lease_ms.into());
    Ok(conn.execute_raw(stmt(backend, &sql, values)).await?.rows_affected() == 1)
}

/// Records, on the run's lease, that it is about to send a state-changing provider call. False
/// once the lease has changed hands: the call must not be sent.
pub async fn mark_call(conn: &impl ConnectionTrait, claimed: &Claimed) -> Result<bool> {
    let backend = conn.get_database_backend();
    let sql = format!("UPDATE work_items SET provider_calls = provider_calls + 1 WHERE {FENCED}");
    Ok(conn.execute_raw(stmt(backend, &sql, fenced_key(claimed))).await?.rows_affected() == 1)
}

/// In a write-back transaction: whether this run still holds its lease. On PostgreSQL the item
/// stays locked until the transaction ends, so the lease cannot change hands meanwhile.
pub async fn fence(conn: &impl ConnectionTrait, claimed: &Claimed) -> Result<bool> {
    let held = conn.get_database_backend().build(&lease_held(claimed));
    Ok(conn.query_one_raw(held).await?.is_some())
}

/// The run's work item while its lease holds, locked on PostgreSQL (SQLite has one writer at a
/// time): `fence`'s query, and the condition of `store::status`'s write.
pub fn lease_held(claimed: &Claimed) -> SelectStatement {
    let col = |name: &str| Expr::col(Alias::new(name));
    let mut select = Query::select();
    select
        .expr(Expr::val(1))
        .from(Alias::new("work_items"))
        .and_where(col("kind").eq(claimed.kind.as_str()))
        .and_where(col("resource_id").eq(claimed.resource_id.as_str()))
        .and_where(col("lease_epoch").eq(claimed.epoch))
        .and_where(col("lease_owner").eq(claimed.owner.as_str()))
        .lock(LockType::Update);
    select
}

/// Ends a run: look again at `next_due` for `next_for` (or right away, as asked, when woken
/// meanwhile), or with None drop the item (unless woken meanwhile). `failed` keeps the attempt
/// count and the error.
pub async fn finish(
    conn: &impl ConnectionTrait,
    claimed: &Claimed,
    now: i64,
    next_due: Option<i64>,
    next_for: Purpose,
    failed: Option<&str>,
) -> Result<()> {
    let backend = conn.get_database_backend();
    let key = fenced_key(claimed);
    if next_due.is_none() {
        let deleted = conn
            .execute_raw(stmt(
                backend,
                &format!("DELETE FROM work_items WHERE {FENCED} AND NOT run_again"),
                key.clone(),
            ))
            .await?;
        if deleted.rows_affected() == 1 {
            return Ok(());
        }
    }
    let mut values = key;
    values.extend([
        now.into(),
        next_due.unwrap_or(now).into(),
        failed.map(str::to_owned).into(),
        next_for.as_str().into(),
    ]);
    conn.execute_raw(stmt(
        backend,
        &format!(
            "UPDATE work_items SET lease_owner = NULL, lease_until = NULL, \
             due_at = CASE WHEN run_again THEN $5 ELSE $6 END, \
             due_for = CASE WHEN run_again THEN 'asked' ELSE $8 END, run_again = false, last_error = $7, \
             attempts = CASE WHEN $7 IS NULL THEN 0 ELSE attempts END WHERE {FENCED}"
        ),
        values,
    ))
    .await?;
    Ok(())
}

/// Gives back every lease `owner` holds (on shutdown), due now.
pub async fn release(conn: &impl ConnectionTrait, owner: &str, now: i64) -> Result<()> {
    conn.execute_raw(stmt(
        conn.get_database_backend(),
        "UPDATE work_items SET lease_owner = NULL, lease_until = NULL, due_at = $2 WHERE lease_owner = $1",
        vec![owner.into(), now.into()],
    ))
    .await?;
    Ok(())
}

/// How many items are due now, and the oldest due time among them.
/// Work items due now, the oldest due time among them, and the items whose last run failed.
pub async fn depth(conn: &impl ConnectionTrait, now: i64) -> Result<(i64, Option<i64>, i64)> {
    let row = conn
        .query_one_raw(stmt(
            conn.get_database_backend(),
            "SELECT COUNT(CASE WHEN due_at <= $1 THEN 1 END) AS due, MIN(CASE WHEN due_at <= $1 THEN due_at END) AS oldest, \
             COUNT(last_error) AS failing FROM work_items",
            vec![now.into()],
        ))
        .await?;
    match row {
        Some(row) => Ok((row.try_get("", "due")?, row.try_get("", "oldest")?, row.try_get("", "failing")?)),
        None => Ok((0, None, 0)),
    }
}

/// The work item of `(kind, resource_id)`, for tests and operators: (due_at, attempts, last_error).
pub async fn item(
    conn: &impl ConnectionTrait,
    kind: &str,
    resource_id: &str,
) -> Result<Option<(i64, i32, Option<String>)>> {
    let row = conn
        .query_one_raw(stmt(
            conn.get_database_backend(),
            "SELECT due_at, attempts, last_error FROM work_items WHERE kind = $1 AND resource_id = $2",
            vec![kind.into(), resource_id.into()],
        ))
        .await?;
    match row {
        Some(row) => {
            Ok(Some((row.try_get("", "due_at")?, row.try_get("", "attempts")?, row.try_get("", "last_error")?)))
        }
        None => Ok(None),
    }
}

/// When each work item of `resource_id` (of any kind) is due next, for tests and operators: a
/// resource none of whose items is due at `now` has had every run it was due.
pub async fn due_times(conn: &impl ConnectionTrait, resource_id: &str) -> Result<Vec<i64>> {
    let rows = conn
        .query_all_raw(stmt(
            conn.get_database_backend(),
            "SELECT due_at FROM work_items WHERE resource_id = $1",
            vec![resource_id.into()],
        ))
        .await?;
    rows.iter().map(|row| Ok(row.try_get("", "due_at")?)).collect()
}
