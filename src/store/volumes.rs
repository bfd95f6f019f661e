//! Provider volume rows: the reads and changes of the volume calls and of the volume reconciler.

/// The work item kind of `vps.provider-resources`, the one reconciler of provider volumes (with
/// their attachments), snapshots and addresses.
pub const RECONCILER: &str = "vps.provider-resources";
/// The quota a volume's size is booked on.
pub const QUOTA: &str = "diskGiB";

/// The tag that records which Droplets have a share: `bc-nfs-` and 16 hex digits of the id's
/// SHA-256.
pub fn share_tag(volume_id: &str) -> String {
    use sha2::{Digest, Sha256};
    let digest = Sha256::digest(volume_id.as_bytes());
    format!("bc-nfs-{}", &crate::store::idempotency::hex(&digest)[..16])
}

use chrono::{DateTime, Utc};
use sea_orm::sea_query::{Expr, ExprTrait};
use sea_orm::{ColumnTrait, ConnectionTrait, EntityTrait, QueryFilter, QueryOrder, UpdateMany};

use super::entity::{provider_volume as volume, volume_attachment as attachment};
use crate::error::{Error, Result};
use crate::store::state::{Desired, State, VolumeKind};

/// The volume by id, whatever its tenant or state.
pub async fn find(conn: &impl ConnectionTrait, volume_id: &str) -> Result<Option<volume::Model>> {
    Ok(volume::Entity::find_by_id(volume_id.to_owned()).one(conn).await?)
}

/// The block volumes of `volume_ids` that are deleted with their instance.
pub async fn going_with_instance(conn: &impl ConnectionTrait, volume_ids: Vec<String>) -> Result<Vec<volume::Model>> {
    Ok(volume::Entity::find()
        .filter(volume::Column::Id.is_in(volume_ids))
        .filter(volume::Column::DeleteWithInstance.eq(true))
        .filter(volume::Column::Kind.eq(VolumeKind::Block))
        .all(conn)
        .await?)
}

/// The network's volumes that are not deleted (in `region`, if given), by id.
pub async fn live_on_network(
    conn: &impl ConnectionTrait,
    network_id: &str,
    region: Option<&str>,
) -> Result<Vec<volume::Model>> {
    let mut volumes = volume::Entity::find()
        .filter(volume::Column::NetworkId.eq(network_id))
        .filter(volume::Column::State.ne(State::Deleted));
    if let Some(region) = region {
        volumes = volumes.filter(volume::Column::Region.eq(region));
    }
    Ok(volumes.order_by_asc(volume::Column::Id).all(conn).await?)
}

/// A volume's attachments that are not finished, oldest first.
pub async fn live_attachments(conn: &impl ConnectionTrait, volume_id: &str) -> Result<Vec<attachment::Model>> {
    Ok(attachment::Entity::find()
        .filter(attachment::Column::VolumeId.eq(volume_id))
        .filter(attachment::Column::State.ne(State::Deleted))
        .order_by_asc(attachment::Column::Id)
        .all(conn)
        .await?)
}

/// Marks the volume for deletion: deleting, no longer wanted.
pub async fn mark_deleting(
    conn: &impl ConnectionTrait,
    v: &volume::Model,
    now: DateTime<Utc>,
) -> Result<volume::Model> {
    bump(
        conn,
        v,
        |u| {
            u.col_expr(volume::Column::DesiredState, Expr::value(Desired::Absent))
                .col_expr(volume::Column::State, Expr::value(State::Deleting))
        },
        now,
    )
    .await
}

/// Writes a user change of the volume row, its version and generation bumped in SQL; returns
/// the row written.
pub async fn bump(
    conn: &impl ConnectionTrait,
    current: &volume::Model,
    change: impl FnOnce(UpdateMany<volume::Entity>) -> UpdateMany<volume::Entity>,
    now: DateTime<Utc>,
) -> Result<volume::Model> {
    let update = volume::Entity::update_many()
        .col_expr(volume::Column::Version, Expr::col(volume::Column::Version).add(1))
        .col_expr(volume::Column::Generation, Expr::col(volume::Column::Generation).add(1))
        .col_expr(volume::Column::UpdatedAt, Expr::value(now))
        .filter(volume::Column::Id.eq(current.id.clone()));
    change(update).exec(conn).await?;
    volume::Entity::find_by_id(current.id.clone()).one(conn).await?.ok_or_else(|| Error::internal("volume vanished"))
}

/// The volumes restored from the snapshot that are not made yet: they wait for it.
pub async fn restores_waiting_for(conn: &impl ConnectionTrait, snapshot_id: &str) -> Result<Vec<volume::Model>> {
    Ok(volume::Entity::find()
        .filter(volume::Column::SourceSnapshotId.eq(snapshot_id))
        .filter(volume::Column::ProviderId.is_null())
        .all(conn)
        .await?)
}
