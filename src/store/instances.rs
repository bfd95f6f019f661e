//! Instance rows: the reads and changes of the instance calls and of the instance reconciler.
use sea_orm::{ConnectionTrait, EntityTrait};

use super::entity::instance;
use crate::error::Result;

/// The instance by id, whatever its tenant or state.
pub async fn find(conn: &impl ConnectionTrait, instance_id: &str) -> Result<Option<instance::Model>> {
    Ok(instance::Entity::find_by_id(instance_id.to_owned()).one(conn).await?)
}
