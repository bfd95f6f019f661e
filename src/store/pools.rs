//! Pool and provider account rows.
use sea_orm::{ConnectionTrait, EntityTrait};

use super::entity::provider_account;
use crate::error::Result;

/// The provider account by id (a reconciler's run reads it to reach the provider).
pub async fn find_account(conn: &impl ConnectionTrait, account_id: &str) -> Result<Option<provider_account::Model>> {
    Ok(provider_account::Entity::find_by_id(account_id.to_owned()).one(conn).await?)
}
