//! Reads of filesystem rows that more than one resource group needs (a network's delete checks
//! them, the filesystem calls list them).
use sea_orm::{ColumnTrait, ConnectionTrait, EntityTrait, QueryFilter, QueryOrder};

use super::entity::filesystem;
use crate::error::Result;
use crate::store::state::State;

/// The work item kind of the filesystem reconciler.
pub const RECONCILER: &str = "vps.filesystems";

/// The network's filesystems that are not deleted, by name.
pub async fn live_of(conn: &impl ConnectionTrait, network_id: &str) -> Result<Vec<filesystem::Model>> {
    Ok(filesystem::Entity::find()
        .filter(filesystem::Column::NetworkId.eq(network_id))
        .filter(filesystem::Column::State.ne(State::Deleted))
        .order_by_asc(filesystem::Column::Name)
        .all(conn)
        .await?)
}

/// The tenant's filesystems of `filesystem_ids` that are not deleted, in no order.
pub async fn live_in_tenant(
    conn: &impl ConnectionTrait,
    tenant_id: &str,
    filesystem_ids: Vec<String>,
) -> Result<Vec<filesystem::Model>> {
    Ok(filesystem::Entity::find()
        .filter(filesystem::Column::Id.is_in(filesystem_ids))
        .filter(filesystem::Column::TenantId.eq(tenant_id))
        .filter(filesystem::Column::State.ne(State::Deleted))
        .all(conn)
        .await?)
}

/// The filesystems of `filesystem_ids`, whatever their tenant or state, in no order.
pub async fn find_many(conn: &impl ConnectionTrait, filesystem_ids: Vec<String>) -> Result<Vec<filesystem::Model>> {
    Ok(filesystem::Entity::find().filter(filesystem::Column::Id.is_in(filesystem_ids)).all(conn).await?)
}
