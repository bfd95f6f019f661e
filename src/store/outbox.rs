//! The outbox: every change appends its CloudEvents-style event in the change's own transaction,
//! and readers page through it by an opaque cursor.
//!
//! Position: on PostgreSQL each row carries the writing transaction's `txid` (xid8) beside its
//! identity `id`; a reader returns only rows of transactions below the snapshot's xmin, ordered by
//! `(txid, id)`, so no row can later appear behind a cursor already handed out. SQLite has one
//! writer at a time, so `txid` is 0 and the autoincrement id alone is safe. A cursor also carries
//! the feed's epoch (random, written once per database) so a cursor from another database is
//! refused instead of silently skipping.
use std::fmt;

use chrono::{DateTime, Utc};
use sea_orm::{ConnectionTrait, DbBackend, QueryResult, TransactionTrait};
use serde_json::{Value, json};

use super::stmt;
use crate::error::{Error, Result};
use crate::ids;

/// An event about to be appended.
pub struct NewEvent {
    /// e.g. `tenant.created`, `providerVolume.ready`.
    pub event_type: String,
    /// The subject's kind, as in authorization scopes: `tenant`, `pool`, `provider-volume` …
    pub subject_kind: &'static str,
    pub subject: String,
    pub tenant_id: Option<String>,
    pub project_id: Option<String>,
    pub version: i64,
    pub data: Payload,
}

/// An event's data: the subject's view, serialized as the event is built. A view that could not
/// be serialized fails the event's write, and the transaction with it: no event is written
/// with its data missing.
#[derive(Clone, Debug)]
pub enum Payload {
    Json(Value),
    Unwritable(String),
}

impl Payload {
    pub fn of<V: serde::Serialize>(view: &V) -> Payload {
        match serde_json::to_value(view) {
            Ok(data) => Payload::Json(data),
            Err(err) => Payload::Unwritable(err.to_string()),
        }
    }

    /// The view with `key` set besides its own fields (which part of the subject it is).
    pub fn with(self, key: &str, value: Value) -> Payload {
        match self {
            Payload::Json(Value::Object(mut fields)) => {
                fields.insert(key.to_owned(), value);
                Payload::Json(Value::Object(fields))
            }
            Payload::Json(other) => Payload::Unwritable(format!("not an object, so no {key}: {other}")),
            unwritable => unwritable,
        }
    }
}

impl From<Value> for Payload {
    fn from(data: Value) -> Payload {
        Payload::Json(data)
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct Event {
    pub position: Position,
    pub id: String,
    pub event_type: String,
    pub source: String,
    pub subject_kind: String,
    pub subject: String,
    pub tenant_id: Option<String>,
    pub project_id: Option<String>,
    pub version: i64,
    pub time: DateTime<Utc>,
    pub data: Value,
}

/// Where an event sits in the feed. Ordered by `(txid, id)`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Position {
    pub txid: i64,
    pub id: i64,
}

impl Position {
    /// The position a read "after" starts from to include this one (ids are unique).
    pub fn just_before(self) -> Position {
        Position { txid: self.txid, id: self.id - 1 }
    }
}

/// A position as handed to clients: `<epoch>:<txid>:<id>`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cursor {
    pub epoch: String,
    pub position: Position,
}

impl fmt::Display for Cursor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}:{}", self.epoch, self.position.txid, self.position.id)
    }
}

impl Cursor {
    /// Parses a client's cursor and checks it belongs to this feed.
    pub fn parse(text: &str, epoch: &str) -> Result<Position> {
        let invalid = || Error::invalid_input("after", format!("cursor {text:?} is not a cursor of this feed"));
        let mut parts = text.split(':');
        let (Some(e), Some(txid), Some(id), None) = (parts.next(), parts.next(), parts.next(), parts.next()) else {
            return Err(invalid());
        };
        if e != epoch {
            return Err(invalid().with_details(json!({ "field": "after", "reason": "cursorExpired" })));
        }
        let position = Position { txid: txid.parse().map_err(|_| invalid())?, id: id.parse().map_err(|_| invalid())? };
        if position.txid < 0 || position.id < 0 {
            return Err(invalid());
        }
        Ok(position)
    }
}

/// Appends `event`, stamped `time` (the app's clock).
pub async fn append(conn: &impl ConnectionTrait, event: NewEvent, time: DateTime<Utc>) -> Result<()> {
    let data = match event.data {
        Payload::Json(data) => data,
        Payload::Unwritable(why) => {
            return Err(crate::error::Error::internal(format!("the {} event's data: {why}", event.event_type)));
        }
    };
    let source = format!("/vps-graph/{}", event.subject_kind);
    conn.execute_raw(stmt(
        conn.get_database_backend(),
        "INSERT INTO outbox_events (event_id, type, source, subject, subject_kind, tenant_id, project_id, version, time, data) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)",
        vec![
            ids::new_id(ids::EVENT).into(),
            event.event_type.into(),
            source.into(),
            event.subject.into(),
            event.subject_kind.into(),
            event.tenant_id.into(),
            event.project_id.into(),
            event.version.into(),
            time.into(),
            data.into(),
        ],
    ))
    .await?;
    Ok(())
}

/// Up to `limit` events after `after`, in feed order; `tenant_id` narrows to one tenant's events.
pub async fn read_after(
    conn: &impl ConnectionTrait,
    after: Position,
    tenant_id: Option<&str>,
    limit: u64,
) -> Result<Vec<Event>> {
    let rows = conn.query_all_raw(read_after_statement(conn.get_database_backend(), after, tenant_id, limit)).await?;
    rows.iter().map(event_from_row).collect()
}

fn read_after_statement(
    backend: DbBackend,
    after: Position,
    tenant_id: Option<&str>,
    limit: u64,
) -> sea_orm::Statement {
    let tenant_clause = if tenant_id.is_some() { " AND tenant_id = $4" } else { "" };
    // ORDER BY names the table's columns: a bare `txid` is the SELECT's bigint alias, which no
    // index orders, and PostgreSQL would read and sort every event after the cursor.
    let sql = match backend {
        DbBackend::Postgres => format!(
            "SELECT id, txid::text::bigint AS txid, event_id, type, source, subject, subject_kind, tenant_id, project_id, version, time, data \
             FROM outbox_events WHERE (txid, id) > ($1::text::xid8, $2) AND txid < pg_snapshot_xmin(pg_current_snapshot()){tenant_clause} \
             ORDER BY outbox_events.txid, outbox_events.id LIMIT $3"
        ),
        _ => format!(
            "SELECT id, txid, event_id, type, source, subject, subject_kind, tenant_id, project_id, version, time, data \
             FROM outbox_events WHERE (txid, id) > ($1, $2){tenant_clause} ORDER BY txid, id LIMIT $3"
        ),
    };
    let mut values = vec![txid_value(backend, after.txid), after.id.into(), (limit as i64).into()];
    if let Some(tenant_id) = tenant_id {
        values.push(tenant_id.into());
    }
    stmt(backend, &sql, values)
}

/// The first position, in feed order, of the events stamped at or after `since` (of one tenant's
/// when `tenant_id` is given), if any. An event is stamped as its transaction appends it, while
/// its place in the feed is taken at the transaction's first write, so feed order and stamps can
/// disagree by as long as a transaction stays open: the first in feed order is sought among the
/// events stamped from `since` to `slack` after the earliest such stamp, which holds it when no
/// transaction stays open longer than `slack`. Both reads are bounded by the time indexes.
pub async fn first_since(
    conn: &impl ConnectionTrait,
    tenant_id: Option<&str>,
    since: DateTime<Utc>,
    slack: chrono::Duration,
) -> Result<Option<Position>> {
    let backend = conn.get_database_backend();
    let tenant_clause = if tenant_id.is_some() { " AND tenant_id = $2" } else { "" };
    let with_tenant = |mut values: Vec<sea_orm::Value>| {
        if let Some(tenant_id) = tenant_id {
            values.insert(1, tenant_id.into());
        }
        values
    };
    let earliest = format!("SELECT time FROM outbox_events WHERE time >= $1{tenant_clause} ORDER BY time LIMIT 1");
    let Some(row) = conn.query_one_raw(stmt(backend, &earliest, with_tenant(vec![since.into()]))).await? else {
        return Ok(None);
    };
    let until: DateTime<Utc> = row.try_get::<DateTime<Utc>>("", "time")? + slack;
    let last = if tenant_id.is_some() { "$3" } else { "$2" };
    let sql = match backend {
        DbBackend::Postgres => format!(
            "SELECT id, txid::text::bigint AS txid FROM outbox_events WHERE time >= $1{tenant_clause} AND time <= {last} \
             ORDER BY outbox_events.txid, outbox_events.id LIMIT 1"
        ),
        _ => format!(
            "SELECT id, txid FROM outbox_events WHERE time >= $1{tenant_clause} AND time <= {last} ORDER BY txid, id LIMIT 1"
        ),
    };
    let row = conn.query_one_raw(stmt(backend, &sql, with_tenant(vec![since.into(), until.into()]))).await?;
    row.as_ref().map(position_from_row).transpose()
}

/// When the first event after `after` was stamped (None when there is none).
pub async fn first_time_after(conn: &impl ConnectionTrait, after: Position) -> Result<Option<DateTime<Utc>>> {
    let backend = conn.get_database_backend();
    let sql = match backend {
        DbBackend::Postgres => {
            "SELECT time FROM outbox_events WHERE (txid, id) > ($1::text::xid8, $2) \
             ORDER BY outbox_events.txid, outbox_events.id LIMIT 1"
        }
        _ => "SELECT time FROM outbox_events WHERE (txid, id) > ($1, $2) ORDER BY txid, id LIMIT 1",
    };
    let row = conn.query_one_raw(stmt(backend, sql, vec![txid_value(backend, after.txid), after.id.into()])).await?;
    Ok(row.map(|row| row.try_get("", "time")).transpose()?)
}

/// The position of the newest event a reader may see now (the start for "from now on").
pub async fn head(conn: &impl ConnectionTrait) -> Result<Position> {
    let backend = conn.get_database_backend();
    let sql = match backend {
        DbBackend::Postgres => {
            "SELECT id, txid::text::bigint AS txid FROM outbox_events \
             WHERE txid < pg_snapshot_xmin(pg_current_snapshot()) ORDER BY outbox_events.txid DESC, outbox_events.id DESC LIMIT 1"
        }
        _ => "SELECT id, txid FROM outbox_events ORDER BY txid DESC, id DESC LIMIT 1",
    };
    let row = conn.query_one_raw(stmt(backend, sql, vec![])).await?;
    Ok(match row {
        Some(row) => position_from_row(&row)?,
        None => Position::default(),
    })
}

/// A row's `txid` and `id` (PostgreSQL's xid8 read as `txid::text::bigint AS txid`).
fn position_from_row(row: &QueryResult) -> Result<Position> {
    Ok(Position { txid: row.try_get("", "txid")?, id: row.try_get("", "id")? })
}

/// A position's `txid` as a parameter: text cast to xid8 on PostgreSQL, an integer on SQLite.
fn txid_value(backend: DbBackend, txid: i64) -> sea_orm::Value {
    match backend {
        DbBackend::Postgres => txid.to_string().into(),
        _ => txid.into(),
    }
}

fn event_from_row(row: &QueryResult) -> Result<Event> {
    Ok(Event {
        position: position_from_row(row)?,
        id: row.try_get("", "event_id")?,
        event_type: row.try_get("", "type")?,
        source: row.try_get("", "source")?,
        subject_kind: row.try_get("", "subject_kind")?,
        subject: row.try_get("", "subject")?,
        tenant_id: row.try_get("", "tenant_id")?,
        project_id: row.try_get("", "project_id")?,
        version: row.try_get("", "version")?,
        time: row.try_get("", "time")?,
        data: row.try_get("", "data")?,
    })
}

const EPOCH_KEY: &str = "feed_epoch";

/// Writes the feed's epoch once per database.
pub async fn ensure_feed_epoch(conn: &impl ConnectionTrait) -> Result<()> {
    let epoch = ulid::Ulid::generate().to_string().to_lowercase()[16..].to_owned();
    super::meta::set_once(conn, EPOCH_KEY, &epoch).await?;
    Ok(())
}

pub async fn feed_epoch(conn: &impl ConnectionTrait) -> Result<String> {
    super::meta::get(conn, EPOCH_KEY).await?.ok_or_else(|| Error::internal("feed epoch missing"))
}

const HORIZON_KEY: &str = "feed_horizon";

/// The position of the newest event removed by retention: every event at or before it is gone,
/// every event after it is kept. The start of the feed when none was removed.
pub async fn horizon(conn: &impl ConnectionTrait) -> Result<Position> {
    let Some(text) = super::meta::get(conn, HORIZON_KEY).await? else { return Ok(Position::default()) };
    let (txid, id) = text.split_once(':').ok_or_else(|| Error::internal(format!("feed horizon {text:?}")))?;
    let number = |n: &str| n.parse::<i64>().map_err(|_| Error::internal(format!("feed horizon {text:?}")));
    Ok(Position { txid: number(txid)?, id: number(id)? })
}

/// Removes, in feed order, up to `limit` of the oldest events written before `cutoff`, stopping
/// at the first one that is not (so what is kept is always every event after one position), and
/// moves the horizon to the last removed, in one transaction. Returns how many it removed.
pub async fn remove_before(conn: &sea_orm::DatabaseConnection, cutoff: DateTime<Utc>, limit: u64) -> Result<u64> {
    let txn = conn.begin().await?;
    let backend = txn.get_database_backend();
    // On PostgreSQL only rows of finished transactions: a reader never passes an unfinished one,
    // so no event can later commit behind the horizon.
    let oldest = match backend {
        DbBackend::Postgres => {
            "SELECT id, txid::text::bigint AS txid, time FROM outbox_events \
             WHERE txid < pg_snapshot_xmin(pg_current_snapshot()) ORDER BY outbox_events.txid, outbox_events.id LIMIT $1"
        }
        _ => "SELECT id, txid, time FROM outbox_events ORDER BY txid, id LIMIT $1",
    };
    let rows = txn.query_all_raw(stmt(backend, oldest, vec![(limit as i64).into()])).await?;
    let mut last = None;
    let mut count = 0;
    for row in &rows {
        let time: DateTime<Utc> = row.try_get("", "time")?;
        if time >= cutoff {
            break;
        }
        last = Some(position_from_row(row)?);
        count += 1;
    }
    let Some(last) = last else { return Ok(0) };
    let remove = match backend {
        DbBackend::Postgres => "DELETE FROM outbox_events WHERE (txid, id) <= ($1::text::xid8, $2)",
        _ => "DELETE FROM outbox_events WHERE (txid, id) <= ($1, $2)",
    };
    txn.execute_raw(stmt(backend, remove, vec![txid_value(backend, last.txid), last.id.into()])).await?;
    // Zero-padded, so the text order is the position order and a horizon only moves forward
    // when two passes overlap.
    let text = format!("{:020}:{:020}", last.txid, last.id);
    txn.execute_raw(stmt(
        backend,
        "INSERT INTO meta (key, value) VALUES ($1, $2) ON CONFLICT (key) DO UPDATE SET value = excluded.value \
         WHERE meta.value < excluded.value",
        vec![HORIZON_KEY.into(), text.into()],
    ))
    .await?;
    txn.commit().await?;
    Ok(count)
}

/// The bench's figures of a large feed (PostgreSQL): `count` more `project.created` events over
/// 10 tenants, 100,000 to a transaction. Few tenants, so that a tenant's page after the middle of
/// even the small feed is a full page: over 1,000 a tenant had 10 events in 10,000, and the page
/// compared with one of 100 at ten million held 5.
pub async fn seed_for_bench(conn: &impl ConnectionTrait, count: u64) -> Result<()> {
    let mut left = count as i64;
    while left > 0 {
        let n = left.min(100_000);
        conn.execute_unprepared(&format!(
            "INSERT INTO outbox_events (event_id, type, source, subject, subject_kind, tenant_id, version, time, data) \
             SELECT 'evt_bench_' || (b.base + g), 'project.created', '/vps-graph/project', 'proj_' || (b.base + g), 'project', \
             'bench-growth-' || ((b.base + g) % 10), 1, now(), '{{}}'::jsonb \
             FROM (SELECT coalesce(max(id), 0) AS base FROM outbox_events) b, generate_series(1, {n}) g"
        ))
        .await?;
        left -= n;
    }
    Ok(())
}

/// The position of the event with row id `id` (the bench's cursor into the middle of the feed).
pub async fn position_of(conn: &impl ConnectionTrait, id: i64) -> Result<Option<Position>> {
    let backend = conn.get_database_backend();
    let sql = match backend {
        DbBackend::Postgres => {
            "SELECT id, txid::text::bigint AS txid FROM outbox_events WHERE id >= $1 ORDER BY id LIMIT 1"
        }
        _ => "SELECT id, txid FROM outbox_events WHERE id >= $1 ORDER BY id LIMIT 1",
    };
    let row = conn.query_one_raw(stmt(backend, sql, vec![id.into()])).await?;
    row.as_ref().map(position_from_row).transpose()
}

/// PostgreSQL's plan of the feed's page read, as run (`EXPLAIN (ANALYZE, BUFFERS)`).
pub async fn explain_read_after(
    conn: &impl ConnectionTrait,
    after: Position,
    tenant_id: Option<&str>,
    limit: u64,
) -> Result<Vec<String>> {
    let read = read_after_statement(conn.get_database_backend(), after, tenant_id, limit);
    let explain = format!("EXPLAIN (ANALYZE, BUFFERS) {read}");
    let rows = conn.query_all_raw(stmt(conn.get_database_backend(), &explain, vec![])).await?;
    rows.iter().map(|row| Ok(row.try_get::<String>("", "QUERY PLAN")?)).collect()
}
