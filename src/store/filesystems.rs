//! Filesystem rows: the reads, the insert and the delete of the filesystem calls, the reads of
//! the filesystem reconciler, and the reads a network's delete and an instance's mounts need.
use chrono::{DateTime, Utc};
use sea_orm::{ActiveModelTrait, ColumnTrait, ConnectionTrait, EntityTrait, QueryFilter, QueryOrder, Set};
use serde_json::json;

use super::change::UserChange;
use super::entity::{filesystem, instance, instance_filesystem};
use crate::error::{Error, Result};
use crate::store::state::{Deployment, Desired, FilesystemKind, State};

/// The work item kind of the filesystem reconciler.
pub const RECONCILER: &str = "vps.filesystems";
/// The quotas a filesystem books: one `filesystems`, and its size (a Lustre one's; an elastic
/// NFS one has none to book) on `filesystemGiB`.
pub const QUOTA: &str = "filesystems";
pub const GIB_QUOTA: &str = "filesystemGiB";

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

/// The filesystem by id, whatever its tenant or state.
pub async fn find(conn: &impl ConnectionTrait, filesystem_id: &str) -> Result<Option<filesystem::Model>> {
    Ok(filesystem::Entity::find_by_id(filesystem_id.to_owned()).one(conn).await?)
}

/// The filesystem, if it is the tenant's and on the network (whatever its state).
pub async fn find_on_network(
    conn: &impl ConnectionTrait,
    tenant_id: &str,
    network_id: &str,
    filesystem_id: &str,
) -> Result<Option<filesystem::Model>> {
    Ok(filesystem::Entity::find_by_id(filesystem_id.to_owned())
        .filter(filesystem::Column::TenantId.eq(tenant_id))
        .filter(filesystem::Column::NetworkId.eq(network_id))
        .one(conn)
        .await?)
}

/// The instances (not deleted) that mount any of `filesystem_ids`, by id.
pub async fn mounted_by(conn: &impl ConnectionTrait, filesystem_ids: &[String]) -> Result<Vec<String>> {
    let instance_ids: Vec<String> = instance_filesystem::Entity::find()
        .filter(instance_filesystem::Column::FilesystemId.is_in(filesystem_ids.to_vec()))
        .all(conn)
        .await?
        .into_iter()
        .map(|m| m.instance_id)
        .collect();
    if instance_ids.is_empty() {
        return Ok(Vec::new());
    }
    let mut live: Vec<String> = instance::Entity::find()
        .filter(instance::Column::Id.is_in(instance_ids))
        .filter(instance::Column::State.ne(State::Deleted))
        .order_by_asc(instance::Column::Id)
        .all(conn)
        .await?
        .into_iter()
        .map(|i| i.id)
        .collect();
    live.dedup();
    Ok(live)
}

/// What a new filesystem row holds besides what every new row starts with; its project, pool,
/// account and region are its network's.
pub struct NewFilesystem<'a> {
    pub id: &'a str,
    pub tenant_id: &'a str,
    pub project_id: Option<&'a str>,
    pub network_id: &'a str,
    pub pool_id: &'a str,
    pub provider_account_id: &'a str,
    pub name: &'a str,
    pub kind: FilesystemKind,
    pub size_gib: Option<i64>,
    pub deployment: Option<Deployment>,
    pub zone: Option<String>,
    pub region: &'a str,
    pub provider_name: String,
    pub deletion_protection: bool,
}

/// Inserts the filesystem, pending; a name taken on the network is CONFLICT.
pub async fn insert(
    conn: &impl ConnectionTrait,
    new: NewFilesystem<'_>,
    now: DateTime<Utc>,
) -> Result<filesystem::Model> {
    filesystem::ActiveModel {
        id: Set(new.id.to_owned()),
        tenant_id: Set(new.tenant_id.to_owned()),
        project_id: Set(new.project_id.map(str::to_owned)),
        network_id: Set(new.network_id.to_owned()),
        pool_id: Set(new.pool_id.to_owned()),
        provider_account_id: Set(new.provider_account_id.to_owned()),
        name: Set(new.name.to_owned()),
        kind: Set(new.kind),
        size_gib: Set(new.size_gib),
        deployment: Set(new.deployment),
        zone: Set(new.zone),
        region: Set(new.region.to_owned()),
        state: Set(State::Pending),
        desired_state: Set(Desired::Present),
        message: Set(None),
        provider_name: Set(new.provider_name),
        security_group_id: Set(None),
        group_attempts: Set(0),
        provider_id: Set(None),
        create_attempts: Set(0),
        dns_name: Set(None),
        mount_name: Set(None),
        lost: Set(false),
        deletion_protection: Set(new.deletion_protection),
        version: Set(1),
        generation: Set(1),
        created_at: Set(now),
        updated_at: Set(now),
        ready_at: Set(None),
        deleted_at: Set(None),
    }
    .insert(conn)
    .await
    .map_err(|err| match super::is_unique_violation(&err) {
        true => name_taken(new.name),
        false => err.into(),
    })
}

/// CONFLICT: the network has a filesystem (not deleted) of that name.
pub fn name_taken(name: &str) -> Error {
    Error::conflict(format!("a filesystem named {name} exists on the network")).with_details(json!({ "field": "name" }))
}

/// Marks the filesystem for deletion (deleting, no longer wanted), its version and generation
/// bumped; returns the row written.
pub async fn mark_deleting(
    conn: &impl ConnectionTrait,
    filesystem_id: &str,
    now: DateTime<Utc>,
) -> Result<filesystem::Model> {
    UserChange::of(filesystem_id).deleting().write::<filesystem::Entity>(conn, now).await
}
