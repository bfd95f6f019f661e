//! API token and token grant rows: issuing (the token, then its grants), the conditional revoke,
//! the lists, and the reads that authenticate a bearer secret by its hash.
use chrono::{DateTime, Utc};
use sea_orm::sea_query::Expr;
use sea_orm::{ActiveModelTrait, ColumnTrait, ConnectionTrait, EntityTrait, QueryFilter, QueryOrder, QuerySelect, Set};

use super::entity::{api_token, token_grant};
use crate::error::Result;

/// The token by id, revoked or not.
pub async fn find(conn: &impl ConnectionTrait, token_id: &str) -> Result<Option<api_token::Model>> {
    Ok(api_token::Entity::find_by_id(token_id.to_owned()).one(conn).await?)
}

/// The token by id if it is not revoked.
pub async fn find_active(conn: &impl ConnectionTrait, token_id: &str) -> Result<Option<api_token::Model>> {
    Ok(api_token::Entity::find_by_id(token_id.to_owned())
        .filter(api_token::Column::RevokedAt.is_null())
        .one(conn)
        .await?)
}

/// The token that is not revoked whose secret hashes to `secret_hash`.
pub async fn find_active_by_hash(conn: &impl ConnectionTrait, secret_hash: &str) -> Result<Option<api_token::Model>> {
    Ok(api_token::Entity::find()
        .filter(api_token::Column::SecretHash.eq(secret_hash))
        .filter(api_token::Column::RevokedAt.is_null())
        .one(conn)
        .await?)
}

/// The tenant of the token `token_id` (None inside for an operator token); None when there is
/// no such token. Only that column is read.
pub async fn tenant_of(conn: &impl ConnectionTrait, token_id: &str) -> Result<Option<Option<String>>> {
    Ok(api_token::Entity::find_by_id(token_id.to_owned())
        .select_only()
        .column(api_token::Column::TenantId)
        .into_tuple::<Option<String>>()
        .one(conn)
        .await?)
}

/// The tokens of one tenant or, with None, the operator tokens (of no tenant), by id.
pub async fn list(conn: &impl ConnectionTrait, tenant_id: Option<&str>) -> Result<Vec<api_token::Model>> {
    let query = match tenant_id {
        Some(t) => api_token::Entity::find().filter(api_token::Column::TenantId.eq(t)),
        None => api_token::Entity::find().filter(api_token::Column::TenantId.is_null()),
    };
    Ok(query.order_by_asc(api_token::Column::Id).all(conn).await?)
}

/// What a new token row holds: it is never revoked when made.
pub struct NewToken<'a> {
    pub id: String,
    pub tenant_id: Option<&'a str>,
    pub name: String,
    pub secret_hash: String,
}

/// Inserts the token, not revoked.
pub async fn insert(conn: &impl ConnectionTrait, new: NewToken<'_>, now: DateTime<Utc>) -> Result<api_token::Model> {
    Ok(api_token::ActiveModel {
        id: Set(new.id),
        tenant_id: Set(new.tenant_id.map(str::to_owned)),
        name: Set(new.name),
        secret_hash: Set(new.secret_hash),
        created_at: Set(now),
        revoked_at: Set(None),
    }
    .insert(conn)
    .await?)
}

/// Revokes the token if it is not revoked yet; the rows changed (0 or 1), so that of two revokes
/// racing only one goes on to publish an event.
pub async fn revoke(conn: &impl ConnectionTrait, token_id: &str, now: DateTime<Utc>) -> Result<u64> {
    Ok(api_token::Entity::update_many()
        .col_expr(api_token::Column::RevokedAt, Expr::value(now))
        .filter(api_token::Column::Id.eq(token_id))
        .filter(api_token::Column::RevokedAt.is_null())
        .exec(conn)
        .await?
        .rows_affected)
}

/// Inserts one grant of the token (the caller leaves out a grant given twice: the three
/// columns are the key).
pub async fn insert_grant(
    conn: &impl ConnectionTrait,
    token_id: &str,
    permission: &str,
    scope: &str,
) -> Result<token_grant::Model> {
    Ok(token_grant::ActiveModel {
        token_id: Set(token_id.to_owned()),
        permission: Set(permission.to_owned()),
        scope: Set(scope.to_owned()),
    }
    .insert(conn)
    .await?)
}

/// The token's grants, in no order.
pub async fn grants_of(conn: &impl ConnectionTrait, token_id: &str) -> Result<Vec<token_grant::Model>> {
    Ok(token_grant::Entity::find().filter(token_grant::Column::TokenId.eq(token_id)).all(conn).await?)
}

/// The grants of each of `token_ids`, in no order.
pub async fn grants_of_many(conn: &impl ConnectionTrait, token_ids: Vec<String>) -> Result<Vec<token_grant::Model>> {
    Ok(token_grant::Entity::find().filter(token_grant::Column::TokenId.is_in(token_ids)).all(conn).await?)
}
