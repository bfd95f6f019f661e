//! Provider snapshot rows: the reads of the snapshot reconciler and of the volume reconciler that
//! wakes them.
use sea_orm::{ColumnTrait, ConnectionTrait, EntityTrait, QueryFilter};

use super::entity::provider_snapshot as snapshot;
use crate::error::Result;
use crate::store::state::Desired;

/// The snapshot by id, whatever its tenant or state.
pub async fn find(conn: &impl ConnectionTrait, snapshot_id: &str) -> Result<Option<snapshot::Model>> {
    Ok(snapshot::Entity::find_by_id(snapshot_id.to_owned()).one(conn).await?)
}

/// The snapshots of the volume asked before it was made: they wait for it.
pub async fn waiting_for_volume(conn: &impl ConnectionTrait, volume_id: &str) -> Result<Vec<snapshot::Model>> {
    Ok(snapshot::Entity::find()
        .filter(snapshot::Column::VolumeId.eq(volume_id))
        .filter(snapshot::Column::ProviderId.is_null())
        .filter(snapshot::Column::DesiredState.eq(Desired::Present))
        .all(conn)
        .await?)
}
