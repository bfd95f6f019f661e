//! Provider address rows: the reads, the insert and the user changes of the address calls, and
//! what the address reconciler reads and locks. Row locks are the caller's (`store::lock`), except
//! where a function says it takes them.
use chrono::{DateTime, Utc};
use sea_orm::{ActiveModelTrait, ColumnTrait, ConnectionTrait, EntityTrait, QueryFilter, QueryOrder, Set};

use super::change::UserChange;
use super::entity::provider_address as address;
use crate::error::Result;
use crate::store::state::{AddressFamily, Assignment, Desired, State};

/// The quota an address books, one per address.
pub const QUOTA: &str = "addresses";

/// The address by id, whatever its tenant (the reconciler's read).
pub async fn find(conn: &impl ConnectionTrait, address_id: &str) -> Result<Option<address::Model>> {
    Ok(address::Entity::find_by_id(address_id.to_owned()).one(conn).await?)
}

/// The addresses wanted on an instance (assigned, or on their way), oldest first.
pub async fn on_instance(conn: &impl ConnectionTrait, instance_id: &str) -> Result<Vec<address::Model>> {
    Ok(address::Entity::find()
        .filter(address::Column::InstanceId.eq(instance_id))
        .filter(address::Column::State.ne(State::Deleted))
        .order_by_asc(address::Column::Id)
        .all(conn)
        .await?)
}

/// Other live rows of `a`'s account that record `ip`, each locked (`store::lock`) after the read.
pub async fn recorded_elsewhere(
    conn: &impl ConnectionTrait,
    a: &address::Model,
    ip: &str,
) -> Result<Vec<address::Model>> {
    let found = address::Entity::find()
        .filter(address::Column::ProviderAccountId.eq(a.provider_account_id.clone()))
        .filter(address::Column::Address.eq(ip))
        .filter(address::Column::Id.ne(a.id.clone()))
        .filter(address::Column::State.ne(State::Deleted))
        .all(conn)
        .await?;
    for other in &found {
        super::lock(conn, "provider_addresses", &other.id).await?;
    }
    Ok(found)
}

/// What a new address row holds besides what every new row starts with.
pub struct NewAddress<'a> {
    pub id: &'a str,
    pub tenant_id: &'a str,
    pub project_id: Option<&'a str>,
    pub pool_id: &'a str,
    pub provider_account_id: &'a str,
    pub name: &'a str,
    pub region: &'a str,
    pub family: AddressFamily,
    pub deletion_protection: bool,
}

/// Inserts the address, pending and on no instance; a name the tenant already uses is CONFLICT.
pub async fn insert(conn: &impl ConnectionTrait, new: NewAddress<'_>, now: DateTime<Utc>) -> Result<address::Model> {
    address::ActiveModel {
        id: Set(new.id.to_owned()),
        tenant_id: Set(new.tenant_id.to_owned()),
        project_id: Set(new.project_id.map(str::to_owned)),
        pool_id: Set(new.pool_id.to_owned()),
        provider_account_id: Set(new.provider_account_id.to_owned()),
        name: Set(new.name.to_owned()),
        region: Set(new.region.to_owned()),
        family: Set(new.family),
        state: Set(State::Pending),
        desired_state: Set(Desired::Present),
        address: Set(None),
        fingerprint: Set(None),
        reserve_attempts: Set(0),
        lost: Set(false),
        message: Set(None),
        instance_id: Set(None),
        assignment_state: Set(Assignment::None),
        assignment_message: Set(None),
        action_id: Set(None),
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
    .map_err(super::taken("name", || format!("an address named {} exists in the tenant", new.name)))
}

/// Puts the address on `instance_id`, the assignment pending (the reconciler assigns it).
pub async fn mark_assign(
    conn: &impl ConnectionTrait,
    a: &address::Model,
    instance_id: &str,
    now: DateTime<Utc>,
) -> Result<address::Model> {
    UserChange::of(&a.id)
        .set(address::Column::InstanceId, instance_id)
        .set(address::Column::AssignmentState, Assignment::Pending.as_str())
        .set(address::Column::AssignmentMessage, Option::<String>::None)
        .write::<address::Entity>(conn, now)
        .await
}

/// Marks the address for release: deleting, no longer wanted.
pub async fn mark_deleting(
    conn: &impl ConnectionTrait,
    a: &address::Model,
    now: DateTime<Utc>,
) -> Result<address::Model> {
    UserChange::of(&a.id).deleting().write::<address::Entity>(conn, now).await
}

/// Marks the address's assignment unwanted: the reconciler unassigns it, and it stays reserved.
pub async fn mark_unassign(
    conn: &impl ConnectionTrait,
    a: &address::Model,
    now: DateTime<Utc>,
) -> Result<address::Model> {
    UserChange::of(&a.id)
        .set(address::Column::AssignmentState, Assignment::Deleting.as_str())
        .set(address::Column::AssignmentMessage, Option::<String>::None)
        .write::<address::Entity>(conn, now)
        .await
}
