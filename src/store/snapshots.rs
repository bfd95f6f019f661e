//! Provider snapshot rows: the reads, the insert and the delete of the snapshot calls, and the
//! reads of the snapshot reconciler and of the volume reconciler that wakes them.
use chrono::{DateTime, Utc};
use sea_orm::{
    ActiveModelTrait, ColumnTrait, ConnectionTrait, EntityTrait, PaginatorTrait, QueryFilter, QueryOrder, Set,
};

use super::change::UserChange;
use super::columns::Columns;
use super::entity::provider_snapshot as snapshot;
use super::list::{ListFilter, Readable};
use super::session::Session;
use crate::error::Result;
use crate::store::state::{Desired, State, VolumeKind};

/// The snapshot by id, whatever its tenant or state.
pub async fn find(conn: &impl ConnectionTrait, snapshot_id: &str) -> Result<Option<snapshot::Model>> {
    Ok(snapshot::Entity::find_by_id(snapshot_id.to_owned()).one(conn).await?)
}

/// A page of the tenant's snapshots (of one volume, if given), as `store::list` reads pages.
pub async fn page(
    conn: &impl ConnectionTrait,
    tenant_id: &str,
    filter: &ListFilter,
    readable: &Readable,
    volume_id: Option<&str>,
) -> Result<Vec<snapshot::Model>> {
    let mut query = super::list::query::<snapshot::Entity>(tenant_id, filter, readable);
    if let Some(volume_id) = volume_id {
        query = query.filter(snapshot::Column::VolumeId.eq(volume_id));
    }
    Ok(query.all(conn).await?)
}

/// The snapshots (not deleted) of each of `volume_ids`, oldest first.
pub async fn live_of_volumes(
    session: &Session<'_>,
    volume_ids: &[String],
    columns: &Columns<snapshot::Entity>,
) -> Result<Vec<snapshot::Model>> {
    let query = snapshot::Entity::find()
        .filter(super::columns::one_of(session.backend(), snapshot::Column::VolumeId, volume_ids))
        .filter(snapshot::Column::State.ne(State::Deleted))
        .order_by_asc(snapshot::Column::Id);
    super::columns::select(session, query, columns).await
}

/// How many snapshots of the volume are not deleted (a volume keeps a bounded number).
pub async fn live_count_of_volume(conn: &impl ConnectionTrait, volume_id: &str) -> Result<u64> {
    Ok(snapshot::Entity::find()
        .filter(snapshot::Column::VolumeId.eq(volume_id))
        .filter(snapshot::Column::State.ne(State::Deleted))
        .count(conn)
        .await?)
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

/// What a new snapshot row holds besides what every new row starts with; its tenant, project,
/// pool, account and region are its volume's.
pub struct NewSnapshot<'a> {
    pub id: &'a str,
    pub tenant_id: &'a str,
    pub project_id: Option<&'a str>,
    pub pool_id: &'a str,
    pub provider_account_id: &'a str,
    pub volume_id: &'a str,
    pub volume_kind: VolumeKind,
    pub region: &'a str,
    pub name: &'a str,
    pub provider_name: String,
    /// The volume's asked size when the snapshot is asked; the provider's figure replaces it.
    pub min_disk_size: i64,
    pub deletion_protection: bool,
    /// The schedule taking it, if one is.
    pub schedule_id: Option<&'a str>,
}

/// Inserts the snapshot, pending; a name the volume's snapshots already use is CONFLICT.
pub async fn insert(conn: &impl ConnectionTrait, new: NewSnapshot<'_>, now: DateTime<Utc>) -> Result<snapshot::Model> {
    snapshot::ActiveModel {
        id: Set(new.id.to_owned()),
        tenant_id: Set(new.tenant_id.to_owned()),
        project_id: Set(new.project_id.map(str::to_owned)),
        pool_id: Set(new.pool_id.to_owned()),
        provider_account_id: Set(new.provider_account_id.to_owned()),
        volume_id: Set(new.volume_id.to_owned()),
        volume_kind: Set(new.volume_kind),
        region: Set(new.region.to_owned()),
        name: Set(new.name.to_owned()),
        state: Set(State::Pending),
        desired_state: Set(Desired::Present),
        provider_id: Set(None),
        provider_name: Set(new.provider_name),
        size_gib: Set(None),
        min_disk_size: Set(new.min_disk_size),
        create_attempts: Set(0),
        lost: Set(false),
        message: Set(None),
        deletion_protection: Set(new.deletion_protection),
        schedule_id: Set(new.schedule_id.map(str::to_owned)),
        version: Set(1),
        generation: Set(1),
        created_at: Set(now),
        updated_at: Set(now),
        ready_at: Set(None),
        deleted_at: Set(None),
    }
    .insert(conn)
    .await
    .map_err(super::taken("name", || format!("the volume has a snapshot named {}", new.name)))
}

/// Marks the snapshot for deletion (deleting, no longer wanted), its version and generation
/// bumped; returns the row written.
pub async fn mark_deleting(
    conn: &impl ConnectionTrait,
    snapshot_id: &str,
    now: DateTime<Utc>,
) -> Result<snapshot::Model> {
    UserChange::of(snapshot_id).deleting().write::<snapshot::Entity>(conn, now).await
}
