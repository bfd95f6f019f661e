//! Instance rows: the reads, the insert and the changes of the instance calls and of the
//! instance reconciler, and the filesystems an instance asked to mount.
use chrono::{DateTime, Utc};
use sea_orm::sea_query::{Expr, ExprTrait};
use sea_orm::{ActiveModelTrait, ColumnTrait, ConnectionTrait, EntityTrait, QueryFilter, QueryOrder, Set};

use super::change::UserChange;
use super::columns::Columns;
use super::entity::{instance, instance_filesystem};
use super::session::Session;
use crate::error::{Error, Result};
use crate::store::state::{Desired, OnDelete, State};

/// The work item kind of the instance reconciler.
pub const RECONCILER: &str = "vps.instances";
/// The quota an instance books one of (its disk books `diskGiB` too).
pub const QUOTA: &str = "instances";

/// The instance by id, whatever its tenant or state.
pub async fn find(conn: &impl ConnectionTrait, instance_id: &str) -> Result<Option<instance::Model>> {
    Ok(instance::Entity::find_by_id(instance_id.to_owned()).one(conn).await?)
}

/// The instance, if it is the tenant's and not deleted.
pub async fn find_live_in_tenant(
    conn: &impl ConnectionTrait,
    tenant_id: &str,
    instance_id: &str,
) -> Result<Option<instance::Model>> {
    Ok(instance::Entity::find_by_id(instance_id.to_owned())
        .filter(instance::Column::TenantId.eq(tenant_id))
        .filter(instance::Column::State.ne(State::Deleted))
        .one(conn)
        .await?)
}

/// The instances of `instance_ids`, in no order.
pub async fn find_many(
    session: &Session<'_>,
    instance_ids: &[String],
    columns: &Columns<instance::Entity>,
) -> Result<Vec<instance::Model>> {
    let query =
        instance::Entity::find().filter(super::columns::one_of(session.backend(), instance::Column::Id, instance_ids));
    super::columns::select(session, query, columns).await
}

/// The network's instances that are not deleted, by id.
pub async fn live_on_network(conn: &impl ConnectionTrait, network_id: &str) -> Result<Vec<instance::Model>> {
    Ok(instance::Entity::find()
        .filter(instance::Column::NetworkId.eq(network_id))
        .filter(instance::Column::State.ne(State::Deleted))
        .order_by_asc(instance::Column::Id)
        .all(conn)
        .await?)
}

/// What a new instance row holds besides what every new row starts with.
pub struct NewInstance<'a> {
    pub id: &'a str,
    pub tenant_id: &'a str,
    pub project_id: Option<&'a str>,
    pub pool_id: &'a str,
    pub provider_account_id: &'a str,
    pub network_id: Option<&'a str>,
    pub name: &'a str,
    pub region: &'a str,
    pub size: &'a str,
    pub image: &'a str,
    pub on_delete: OnDelete,
    /// The name its machine is made under (derived from the id).
    pub provider_name: String,
    pub zone: Option<String>,
    pub user_data: Option<&'a str>,
}

/// Inserts the instance, pending; a name the tenant already uses is CONFLICT.
pub async fn insert(conn: &impl ConnectionTrait, new: NewInstance<'_>, now: DateTime<Utc>) -> Result<instance::Model> {
    instance::ActiveModel {
        id: Set(new.id.to_owned()),
        tenant_id: Set(new.tenant_id.to_owned()),
        project_id: Set(new.project_id.map(str::to_owned)),
        pool_id: Set(new.pool_id.to_owned()),
        provider_account_id: Set(new.provider_account_id.to_owned()),
        network_id: Set(new.network_id.map(str::to_owned)),
        name: Set(new.name.to_owned()),
        region: Set(new.region.to_owned()),
        size: Set(new.size.to_owned()),
        image: Set(new.image.to_owned()),
        on_delete: Set(new.on_delete),
        state: Set(State::Pending),
        desired_state: Set(Desired::Present),
        provider_id: Set(None),
        provider_name: Set(new.provider_name),
        create_attempts: Set(0),
        lost: Set(false),
        message: Set(None),
        version: Set(1),
        generation: Set(1),
        created_at: Set(now),
        updated_at: Set(now),
        ready_at: Set(None),
        deleted_at: Set(None),
        zone: Set(new.zone),
        user_data: Set(new.user_data.map(str::to_owned)),
    }
    .insert(conn)
    .await
    .map_err(super::taken("name", || format!("an instance named {} exists in the tenant", new.name)))
}

/// Records the filesystems the instance mounts, `(filesystem id, path)` in the order asked.
pub async fn insert_mounts(conn: &impl ConnectionTrait, instance_id: &str, mounts: &[(String, String)]) -> Result<()> {
    for (position, (filesystem_id, path)) in mounts.iter().enumerate() {
        instance_filesystem::ActiveModel {
            instance_id: Set(instance_id.to_owned()),
            filesystem_id: Set(filesystem_id.clone()),
            path: Set(path.clone()),
            position: Set(position as i32),
        }
        .insert(conn)
        .await?;
    }
    Ok(())
}

/// Marks the instance for deletion (the reconciler deletes its machine), its version and
/// generation bumped in SQL.
pub async fn mark_deleting(conn: &impl ConnectionTrait, instance_id: &str, now: DateTime<Utc>) -> Result<()> {
    UserChange::of(instance_id).deleting().write::<instance::Entity>(conn, now).await?;
    Ok(())
}

/// Writes the end of the instance's delete (DELETED, no message), its version bumped in SQL;
/// returns the row written. The reconciler's, after its lease check.
pub async fn mark_deleted(
    conn: &impl ConnectionTrait,
    instance_id: &str,
    now: DateTime<Utc>,
) -> Result<instance::Model> {
    instance::Entity::update_many()
        .col_expr(instance::Column::State, Expr::value(State::Deleted))
        .col_expr(instance::Column::Message, Expr::value(Option::<String>::None))
        .col_expr(instance::Column::DeletedAt, Expr::value(now))
        .col_expr(instance::Column::Version, Expr::col(instance::Column::Version).add(1))
        .col_expr(instance::Column::UpdatedAt, Expr::value(now))
        .filter(instance::Column::Id.eq(instance_id))
        .exec(conn)
        .await?;
    instance::Entity::find_by_id(instance_id.to_owned())
        .one(conn)
        .await?
        .ok_or_else(|| Error::internal("instance vanished"))
}

/// The filesystems the instance asked to mount, in the order asked.
pub async fn mounts_asked(conn: &impl ConnectionTrait, instance_id: &str) -> Result<Vec<instance_filesystem::Model>> {
    Ok(instance_filesystem::Entity::find()
        .filter(instance_filesystem::Column::InstanceId.eq(instance_id))
        .order_by_asc(instance_filesystem::Column::Position)
        .all(conn)
        .await?)
}

/// The filesystems each of `instance_ids` asked to mount, by instance, in the order asked.
pub async fn mounts_asked_of(
    conn: &impl ConnectionTrait,
    instance_ids: &[String],
) -> Result<Vec<instance_filesystem::Model>> {
    Ok(instance_filesystem::Entity::find()
        .filter(instance_filesystem::Column::InstanceId.is_in(instance_ids.to_vec()))
        .order_by_asc(instance_filesystem::Column::InstanceId)
        .order_by_asc(instance_filesystem::Column::Position)
        .all(conn)
        .await?)
}

/// Whether one of `instance_ids` is being deleted (wanted gone, not gone yet).
pub async fn any_going(conn: &impl ConnectionTrait, instance_ids: Vec<String>) -> Result<bool> {
    if instance_ids.is_empty() {
        return Ok(false);
    }
    let going = instance::Entity::find()
        .filter(instance::Column::Id.is_in(instance_ids))
        .filter(instance::Column::DesiredState.eq(Desired::Absent))
        .filter(instance::Column::State.ne(State::Deleted))
        .one(conn)
        .await?;
    Ok(going.is_some())
}

/// The ids of `instance_ids` that are ready.
pub async fn ready_of(conn: &impl ConnectionTrait, instance_ids: Vec<String>) -> Result<Vec<String>> {
    let ready = instance::Entity::find()
        .filter(instance::Column::Id.is_in(instance_ids))
        .filter(instance::Column::State.eq(State::Ready))
        .all(conn)
        .await?;
    Ok(ready.into_iter().map(|i| i.id).collect())
}
