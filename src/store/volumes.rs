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
use sea_orm::{ActiveModelTrait, ColumnTrait, ConnectionTrait, EntityTrait, QueryFilter, QueryOrder, Select, Set};

use super::change::UserChange;
use super::columns::Columns;
use super::entity::{instance, provider_volume as volume, volume_attachment as attachment};
use super::session::Session;
use crate::error::Result;
use crate::store::state::{Desired, State, VolumeFilesystem, VolumeKind};

/// Makes the volume hold exactly `size_gib` of its tenant's diskGiB in its pool (0 refunds it).
pub async fn book(conn: &impl ConnectionTrait, v: &volume::Model, size_gib: i64) -> Result<()> {
    let holding =
        super::quota::Holding { tenant_id: &v.tenant_id, pool_id: &v.pool_id, quota: QUOTA, resource_id: &v.id };
    super::quota::hold(conn, &holding, size_gib).await
}

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

/// The volumes attached to `instance_id` that would go with it and have deletion protection.
pub async fn protected_going_with(conn: &impl ConnectionTrait, instance_id: &str) -> Result<Vec<volume::Model>> {
    let attached: Vec<String> = attachment::Entity::find()
        .filter(attachment::Column::InstanceId.eq(instance_id))
        .filter(attachment::Column::State.ne(State::Deleted))
        .all(conn)
        .await?
        .into_iter()
        .map(|a| a.volume_id)
        .collect();
    let going = going_with_instance(conn, attached).await?;
    Ok(going.into_iter().filter(|v| v.deletion_protection && v.desired_state == Desired::Present).collect())
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

/// The attachments (not finished) of each of `volume_ids`, oldest first, with `columns` read.
pub async fn live_attachments_of(
    session: &Session<'_>,
    volume_ids: &[String],
    columns: &Columns<attachment::Entity>,
) -> Result<Vec<attachment::Model>> {
    super::columns::select(session, live_attachments_query(session, volume_ids), columns).await
}

/// `live_attachments_of`, each with its instance (`instance_columns` of it), in one statement:
/// the page's instances cost no statement of their own, and PostgreSQL joins them by key rather
/// than matching every instance against a list of ids.
pub async fn live_attachments_with_instances(
    session: &Session<'_>,
    volume_ids: &[String],
    columns: &Columns<attachment::Entity>,
    instance_columns: &Columns<instance::Entity>,
) -> Result<(Vec<attachment::Model>, Vec<instance::Model>)> {
    let on_instance = attachment::Entity::belongs_to(instance::Entity)
        .from(attachment::Column::InstanceId)
        .to(instance::Column::Id)
        .into();
    let query = live_attachments_query(session, volume_ids);
    super::columns::select_joined(session, query, columns, on_instance, instance_columns).await
}

fn live_attachments_query(session: &Session<'_>, volume_ids: &[String]) -> Select<attachment::Entity> {
    attachment::Entity::find()
        .filter(super::columns::one_of(session.backend(), attachment::Column::VolumeId, volume_ids))
        .filter(attachment::Column::State.ne(State::Deleted))
        .order_by_asc(attachment::Column::Id)
}

/// What a new volume row holds besides what every new row starts with.
pub struct NewVolume<'a> {
    pub id: &'a str,
    pub tenant_id: &'a str,
    pub project_id: Option<&'a str>,
    pub pool_id: &'a str,
    pub provider_account_id: &'a str,
    pub name: &'a str,
    pub description: Option<&'a str>,
    pub region: &'a str,
    pub kind: VolumeKind,
    pub network_id: Option<&'a str>,
    pub filesystem: Option<VolumeFilesystem>,
    pub delete_with_instance: bool,
    pub source_snapshot_id: Option<&'a str>,
    /// A restore that named no size (see the column).
    pub size_from_snapshot: bool,
    pub size_gib: i64,
    pub provider_name: String,
    pub deletion_protection: bool,
}

/// Inserts the volume, pending; a name the tenant already uses is CONFLICT.
pub async fn insert(conn: &impl ConnectionTrait, new: NewVolume<'_>, now: DateTime<Utc>) -> Result<volume::Model> {
    volume::ActiveModel {
        id: Set(new.id.to_owned()),
        tenant_id: Set(new.tenant_id.to_owned()),
        project_id: Set(new.project_id.map(str::to_owned)),
        pool_id: Set(new.pool_id.to_owned()),
        provider_account_id: Set(new.provider_account_id.to_owned()),
        name: Set(new.name.to_owned()),
        description: Set(new.description.map(str::to_owned)),
        region: Set(new.region.to_owned()),
        kind: Set(new.kind),
        network_id: Set(new.network_id.map(str::to_owned)),
        filesystem: Set(new.filesystem),
        delete_with_instance: Set(new.delete_with_instance),
        source_snapshot_id: Set(new.source_snapshot_id.map(str::to_owned)),
        size_from_snapshot: Set(new.size_from_snapshot),
        deletion_protection: Set(new.deletion_protection),
        size_gib: Set(new.size_gib),
        observed_size_gib: Set(None),
        state: Set(State::Pending),
        desired_state: Set(Desired::Present),
        provider_id: Set(None),
        provider_name: Set(new.provider_name),
        device: Set(None),
        mount_source: Set(None),
        create_attempts: Set(0),
        lost: Set(false),
        action_id: Set(None),
        message: Set(None),
        version: Set(1),
        generation: Set(1),
        created_at: Set(now),
        updated_at: Set(now),
        ready_at: Set(None),
        deleted_at: Set(None),
    }
    .insert(conn)
    .await
    .map_err(super::taken("name", || format!("a volume named {} exists in the tenant", new.name)))
}

/// Inserts an attachment of the volume on the instance, pending.
pub async fn insert_attachment(
    conn: &impl ConnectionTrait,
    attachment_id: &str,
    volume_id: &str,
    instance_id: &str,
    now: DateTime<Utc>,
) -> Result<attachment::Model> {
    Ok(attachment::ActiveModel {
        id: Set(attachment_id.to_owned()),
        volume_id: Set(volume_id.to_owned()),
        instance_id: Set(instance_id.to_owned()),
        state: Set(State::Pending),
        desired_state: Set(Desired::Present),
        action_id: Set(None),
        message: Set(None),
        version: Set(1),
        generation: Set(1),
        created_at: Set(now),
        updated_at: Set(now),
        ready_at: Set(None),
        deleted_at: Set(None),
    }
    .insert(conn)
    .await?)
}

/// Records a change of the volume's attachments on the volume: its version and generation move,
/// so watchers and the reconciler see a new spec.
pub async fn mark_attachments_changed(
    conn: &impl ConnectionTrait,
    v: &volume::Model,
    now: DateTime<Utc>,
) -> Result<volume::Model> {
    UserChange::of(&v.id).write::<volume::Entity>(conn, now).await
}

/// Records the size the tenant asked for.
pub async fn mark_resized(
    conn: &impl ConnectionTrait,
    v: &volume::Model,
    size_gib: i64,
    now: DateTime<Utc>,
) -> Result<volume::Model> {
    UserChange::of(&v.id).set(volume::Column::SizeGib, size_gib).write::<volume::Entity>(conn, now).await
}

/// Marks the volume for deletion: deleting, no longer wanted.
pub async fn mark_deleting(
    conn: &impl ConnectionTrait,
    v: &volume::Model,
    now: DateTime<Utc>,
) -> Result<volume::Model> {
    UserChange::of(&v.id).deleting().write::<volume::Entity>(conn, now).await
}

/// The volumes restored from the snapshot that are not made yet: they wait for it.
pub async fn restores_waiting_for(conn: &impl ConnectionTrait, snapshot_id: &str) -> Result<Vec<volume::Model>> {
    Ok(volume::Entity::find()
        .filter(volume::Column::SourceSnapshotId.eq(snapshot_id))
        .filter(volume::Column::ProviderId.is_null())
        .all(conn)
        .await?)
}
