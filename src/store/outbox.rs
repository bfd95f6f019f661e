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
use sea_orm::{ConnectionTrait, DbBackend, QueryResult};
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
    pub data: Value,
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

pub async fn append(conn: &impl ConnectionTrait, event: NewEvent) -> Result<()> {
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
            Utc::now().into(),
            event.data.into(),
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
    let backend = conn.get_database_backend();
    let tenant_clause = if tenant_id.is_some() { " AND tenant_id = $4" } else { "" };
    let sql = match backend {
        DbBackend::Postgres => format!(
            "SELECT id, txid::text::bigint AS txid, event_id, type, source, subject, subject_kind, tenant_id, project_id, version, time, data \
             FROM outbox_events WHERE (txid, id) > ($1::text::xid8, $2) AND txid < pg_snapshot_xmin(pg_current_snapshot()){tenant_clause} \
             ORDER BY txid, id LIMIT $3"
        ),
        _ => format!(
            "SELECT id, txid, event_id, type, source, subject, subject_kind, tenant_id, project_id, version, time, data \
             FROM outbox_events WHERE (txid, id) > ($1, $2){tenant_clause} ORDER BY txid, id LIMIT $3"
        ),
    };
    let txid: sea_orm::Value = match backend {
        DbBackend::Postgres => after.txid.to_string().into(),
        _ => after.txid.into(),
    };
    let mut values = vec![txid, after.id.into(), (limit as i64).into()];
    if let Some(tenant_id) = tenant_id {
        values.push(tenant_id.into());
    }
    let rows = conn.query_all_raw(stmt(backend, &sql, values)).await?;
    rows.iter().map(event_from_row).collect()
}

/// The position of the newest event a reader may see now (the start for "from now on").
pub async fn head(conn: &impl ConnectionTrait) -> Result<Position> {
    let backend = conn.get_database_backend();
    let sql = match backend {
        DbBackend::Postgres => {
            "SELECT id, txid::text::bigint AS txid FROM outbox_events \
             WHERE txid < pg_snapshot_xmin(pg_current_snapshot()) ORDER BY txid DESC, id DESC LIMIT 1"
        }
        _ => "SELECT id, txid FROM outbox_events ORDER BY txid DESC, id DESC LIMIT 1",
    };
    let row = conn.query_one_raw(stmt(backend, sql, vec![])).await?;
    Ok(match row {
        Some(row) => Position { txid: row.try_get("", "txid")?, id: row.try_get("", "id")? },
        None => Position::default(),
    })
}

fn event_from_row(row: &QueryResult) -> Result<Event> {
    Ok(Event {
        position: Position { txid: row.try_get("", "txid")?, id: row.try_get("", "id")? },
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
