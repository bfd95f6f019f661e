//! Reads of filesystem rows that more than one resource group needs (a network's delete checks
//! them, the filesystem calls list them).
use sea_orm::{ColumnTrait, ConnectionTrait, EntityTrait, QueryFilter, QueryOrder};

use super::entity::filesystem;
use crate::error::Result;
use crate::store::state::State;

/// The network's filesystems that are not deleted, by name.
pub async fn live_of(conn: &impl ConnectionTrait, network_id: &str) -> Result<Vec<filesystem::Model>> {
    Ok(filesystem::Entity::find()
        .filter(filesystem::Column::NetworkId.eq(network_id))
        .filter(filesystem::Column::State.ne(State::Deleted))
        .order_by_asc(filesystem::Column::Name)
        .all(conn)
        .await?)
}
