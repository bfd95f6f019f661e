//! Small facts about the database itself (the feed epoch, what first start made), as key/value.
use sea_orm::ConnectionTrait;

use super::stmt;
use crate::error::Result;

/// Sets `key` unless it is set; returns whether this call set it.
pub async fn set_once(conn: &impl ConnectionTrait, key: &str, value: &str) -> Result<bool> {
    let inserted = conn
        .execute_raw(stmt(
            conn.get_database_backend(),
            "INSERT INTO meta (key, value) VALUES ($1, $2) ON CONFLICT DO NOTHING",
            vec![key.into(), value.into()],
        ))
        .await?;
    Ok(inserted.rows_affected() == 1)
}

pub async fn get(conn: &impl ConnectionTrait, key: &str) -> Result<Option<String>> {
    let row = conn
        .query_one_raw(stmt(conn.get_database_backend(), "SELECT value FROM meta WHERE key = $1", vec![key.into()]))
        .await?;
    Ok(match row {
        Some(row) => Some(row.try_get("", "value")?),
        None => None,
    })
}
