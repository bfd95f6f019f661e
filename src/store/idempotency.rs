//! Idempotency records: `(tenant, operation, key) → (request hash, resource id)`. `claim` runs in
//! the mutation's transaction: the first request with a key records the resource it is about to
//! make; a later one with the same input gets that resource, with other input CONFLICT. Two
//! concurrent first requests serialize on the primary key, so exactly one makes the resource.
use chrono::Utc;
use sea_orm::ConnectionTrait;
use serde::Serialize;
use serde_json::json;
use sha2::{Digest, Sha256};

use super::stmt;
use crate::error::{Error, Result};

pub struct Key<'a> {
    pub tenant_id: &'a str,
    pub operation: &'a str,
    pub key: &'a str,
}

#[derive(Debug, PartialEq, Eq)]
pub enum Claim {
    /// The key is new: make the resource with the id given to `claim`.
    New,
    /// The key was used before with the same input: return this resource.
    Existing(String),
}

/// The hash of a request's input, in a form stable across processes.
pub fn request_hash(input: &impl Serialize) -> String {
    let canonical = serde_json::to_vec(input).unwrap_or_default();
    hex(&Sha256::digest(&canonical))
}

pub async fn claim(
    conn: &impl ConnectionTrait,
    key: &Key<'_>,
    request_hash: &str,
    new_resource_id: &str,
) -> Result<Claim> {
    let backend = conn.get_database_backend();
    let inserted = conn
        .execute_raw(stmt(
            backend,
            "INSERT INTO idempotency_records (tenant_id, operation, key, request_hash, resource_id, created_at) \
             VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT DO NOTHING",
            vec![
                key.tenant_id.into(),
                key.operation.into(),
                key.key.into(),
                request_hash.into(),
                new_resource_id.into(),
                Utc::now().into(),
            ],
        ))
        .await?
        .rows_affected();
    if inserted == 1 {
        return Ok(Claim::New);
    }
    let existing = recorded(conn, key, request_hash).await?;
    Ok(Claim::Existing(existing.ok_or_else(|| Error::internal("idempotency record vanished"))?))
}

/// The resource a first request with this key made; CONFLICT when the key was used with other
/// input.
async fn recorded(conn: &impl ConnectionTrait, key: &Key<'_>, request_hash: &str) -> Result<Option<String>> {
    let row = conn
        .query_one_raw(stmt(
            conn.get_database_backend(),
            "SELECT request_hash, resource_id FROM idempotency_records WHERE tenant_id = $1 AND operation = $2 AND key = $3",
            vec![key.tenant_id.into(), key.operation.into(), key.key.into()],
        ))
        .await?;
    let Some(row) = row else { return Ok(None) };
    let stored_hash: String = row.try_get("", "request_hash")?;
    if stored_hash != request_hash {
        return Err(Error::conflict(format!("idempotencyKey {} was used with other input", key.key))
            .with_details(json!({ "reason": "idempotencyKey", "field": "idempotencyKey" })));
    }
    Ok(Some(row.try_get("", "resource_id")?))
}

pub(crate) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
