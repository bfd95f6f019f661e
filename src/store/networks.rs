//! Network and subnet rows: the reads, inserts and user changes of the network calls, what the
//! network reconciler reads and records, and the reads more than one resource group needs.
use chrono::{DateTime, Utc};
use sea_orm::{
    ActiveModelTrait, ColumnTrait, ConnectionTrait, DbErr, EntityTrait, QueryFilter, QueryOrder, QuerySelect, Set,
};

use super::change::UserChange;
use super::entity::{network, network_subnet};
use crate::error::Result;
use crate::store::state::{Desired, State};

/// The work item kind of the network reconciler.
pub const RECONCILER: &str = "vps.networks";
/// The quota a network books one of.
pub const QUOTA: &str = "networks";

/// The network by id, whatever its tenant or state.
pub async fn find(conn: &impl ConnectionTrait, network_id: &str) -> Result<Option<network::Model>> {
    Ok(network::Entity::find_by_id(network_id.to_owned()).one(conn).await?)
}

/// `list::find_in_tenant` for a change: the row read `FOR UPDATE` on PostgreSQL, so that changes of one
/// network take turns (the network's lock comes first in `store::lock`'s order).
pub async fn find_in_tenant_for_update(
    conn: &impl ConnectionTrait,
    tenant_id: &str,
    network_id: &str,
) -> Result<Option<network::Model>> {
    let mut query = network::Entity::find_by_id(network_id.to_owned()).filter(network::Column::TenantId.eq(tenant_id));
    if conn.get_database_backend() == sea_orm::DbBackend::Postgres {
        query = query.lock_exclusive();
    }
    Ok(query.one(conn).await?)
}

/// The tenant's network named `name` that is not deleted.
pub async fn find_live_named(
    conn: &impl ConnectionTrait,
    tenant_id: &str,
    name: &str,
) -> Result<Option<network::Model>> {
    Ok(network::Entity::find()
        .filter(network::Column::TenantId.eq(tenant_id))
        .filter(network::Column::Name.eq(name))
        .filter(network::Column::State.ne(State::Deleted))
        .one(conn)
        .await?)
}

/// The account's network, not deleted, recorded on the VPC `vpc_id`.
pub async fn find_live_by_vpc(
    conn: &impl ConnectionTrait,
    account_id: &str,
    vpc_id: &str,
) -> Result<Option<network::Model>> {
    Ok(network::Entity::find()
        .filter(network::Column::ProviderAccountId.eq(account_id))
        .filter(network::Column::ProviderId.eq(vpc_id))
        .filter(network::Column::State.ne(State::Deleted))
        .one(conn)
        .await?)
}

/// The ids of the account's networks that are not deleted, whichever tenant's.
pub async fn live_ids_on_account(conn: &impl ConnectionTrait, account_id: &str) -> Result<Vec<String>> {
    Ok(network::Entity::find()
        .filter(network::Column::ProviderAccountId.eq(account_id))
        .filter(network::Column::State.ne(State::Deleted))
        .select_only()
        .column(network::Column::Id)
        .into_tuple()
        .all(conn)
        .await?)
}

/// The IP ranges of the subnets of `network_ids` that are not deleted.
pub async fn live_subnet_ranges(conn: &impl ConnectionTrait, network_ids: Vec<String>) -> Result<Vec<String>> {
    Ok(network_subnet::Entity::find()
        .filter(network_subnet::Column::NetworkId.is_in(network_ids))
        .filter(network_subnet::Column::State.ne(State::Deleted))
        .select_only()
        .column(network_subnet::Column::IpRange)
        .into_tuple()
        .all(conn)
        .await?)
}

/// The network's subnets, whatever their state, by id.
pub async fn subnets_of(conn: &impl ConnectionTrait, network_id: &str) -> Result<Vec<network_subnet::Model>> {
    Ok(network_subnet::Entity::find()
        .filter(network_subnet::Column::NetworkId.eq(network_id))
        .order_by_asc(network_subnet::Column::Id)
        .all(conn)
        .await?)
}

/// The subnets of each of `network_ids`, whatever their state, by id.
pub async fn subnets_of_many(
    conn: &impl ConnectionTrait,
    network_ids: Vec<String>,
) -> Result<Vec<network_subnet::Model>> {
    Ok(network_subnet::Entity::find()
        .filter(network_subnet::Column::NetworkId.is_in(network_ids))
        .order_by_asc(network_subnet::Column::Id)
        .all(conn)
        .await?)
}

/// What a new network row holds besides what every new row starts with.
pub struct NewNetwork<'a> {
    pub id: &'a str,
    pub tenant_id: &'a str,
    pub project_id: Option<&'a str>,
    pub pool_id: &'a str,
    pub provider_account_id: &'a str,
    pub name: &'a str,
    pub description: Option<&'a str>,
    pub region: Option<String>,
    /// The range asked of a network vps-graph makes.
    pub ip_range: Option<String>,
    /// The VPC an adopted network is: recorded at once, and never made or deleted.
    pub adopted_vpc: Option<String>,
}

/// Inserts the network, pending. The database's own error is returned, so the caller can tell
/// which unique index refused it.
pub async fn insert(
    conn: &impl ConnectionTrait,
    new: NewNetwork<'_>,
    now: DateTime<Utc>,
) -> std::result::Result<network::Model, DbErr> {
    let adopted = new.adopted_vpc.is_some();
    network::ActiveModel {
        id: Set(new.id.to_owned()),
        tenant_id: Set(new.tenant_id.to_owned()),
        project_id: Set(new.project_id.map(str::to_owned)),
        pool_id: Set(new.pool_id.to_owned()),
        provider_account_id: Set(new.provider_account_id.to_owned()),
        name: Set(new.name.to_owned()),
        description: Set(new.description.map(str::to_owned)),
        state: Set(State::Pending),
        desired_state: Set(Desired::Present),
        message: Set(None),
        version: Set(1),
        generation: Set(1),
        created_at: Set(now),
        updated_at: Set(now),
        ready_at: Set(None),
        deleted_at: Set(None),
        region: Set(new.region),
        ip_range: Set(new.ip_range),
        provider_id: Set(new.adopted_vpc),
        create_attempts: Set(0),
        lost: Set(false),
        adopted: Set(adopted),
        egress_provider_id: Set(None),
        egress_attempts: Set(0),
    }
    .insert(conn)
    .await
}

/// What a new subnet row holds besides what every new row starts with.
pub struct NewSubnet<'a> {
    pub id: &'a str,
    pub network_id: &'a str,
    pub region: String,
    pub ip_range: String,
    pub zone: Option<String>,
    pub provider_name: String,
}

/// Inserts a subnet the user asked for, pending (the reconciler makes it).
pub async fn insert_subnet(
    conn: &impl ConnectionTrait,
    new: NewSubnet<'_>,
    now: DateTime<Utc>,
) -> Result<network_subnet::Model> {
    Ok(network_subnet::ActiveModel {
        id: Set(new.id.to_owned()),
        network_id: Set(new.network_id.to_owned()),
        region: Set(new.region),
        ip_range: Set(new.ip_range),
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
    }
    .insert(conn)
    .await?)
}

/// Records a subnet found in an adopted VPC, ready as the provider shows it (`provider_id` its
/// subnet there, `provider_name` its name there).
pub async fn record_found_subnet(
    conn: &impl ConnectionTrait,
    new: NewSubnet<'_>,
    provider_id: String,
    now: DateTime<Utc>,
) -> Result<network_subnet::Model> {
    Ok(network_subnet::ActiveModel {
        id: Set(new.id.to_owned()),
        network_id: Set(new.network_id.to_owned()),
        region: Set(new.region),
        ip_range: Set(new.ip_range),
        state: Set(State::Ready),
        desired_state: Set(Desired::Present),
        provider_id: Set(Some(provider_id)),
        provider_name: Set(new.provider_name),
        create_attempts: Set(0),
        lost: Set(false),
        message: Set(None),
        version: Set(1),
        generation: Set(1),
        created_at: Set(now),
        updated_at: Set(now),
        ready_at: Set(Some(now)),
        deleted_at: Set(None),
        zone: Set(new.zone),
    }
    .insert(conn)
    .await?)
}

/// The provider id of the VPC of the network's ready subnet in `region` (DigitalOcean keeps one
/// VPC per subnet): where a Droplet or a share of that network goes.
pub async fn ready_subnet_vpc(conn: &impl ConnectionTrait, network_id: &str, region: &str) -> Result<Option<String>> {
    let subnet = network_subnet::Entity::find()
        .filter(network_subnet::Column::NetworkId.eq(network_id))
        .filter(network_subnet::Column::Region.eq(region))
        .filter(network_subnet::Column::DesiredState.eq(Desired::Present))
        .filter(network_subnet::Column::State.eq(State::Ready))
        .one(conn)
        .await?;
    Ok(subnet.and_then(|s| s.provider_id))
}

/// Records a subnet added: the network is pending until its new subnet is made.
pub async fn mark_pending(
    conn: &impl ConnectionTrait,
    current: network::Model,
    now: DateTime<Utc>,
) -> Result<network::Model> {
    UserChange::of(&current.id)
        .set(network::Column::State, State::Pending.as_str())
        .write::<network::Entity>(conn, now)
        .await
}

/// Records a subnet removed on the network row: its version and generation move.
pub async fn mark_subnets_changed(
    conn: &impl ConnectionTrait,
    current: network::Model,
    now: DateTime<Utc>,
) -> Result<network::Model> {
    UserChange::of(&current.id).write::<network::Entity>(conn, now).await
}

/// Marks the network for deletion: deleting, no longer wanted.
pub async fn mark_deleting(
    conn: &impl ConnectionTrait,
    current: network::Model,
    now: DateTime<Utc>,
) -> Result<network::Model> {
    UserChange::of(&current.id).deleting().write::<network::Entity>(conn, now).await
}

/// Marks a subnet for removal (its VPC is deleted by the reconciler).
pub async fn mark_removed(
    conn: &impl ConnectionTrait,
    subnet: &network_subnet::Model,
    now: DateTime<Utc>,
) -> Result<network_subnet::Model> {
    UserChange::of(&subnet.id).deleting().write::<network_subnet::Entity>(conn, now).await
}

/// The network, if it is the tenant's and not deleted.
pub async fn find_live_in_tenant(
    conn: &impl ConnectionTrait,
    tenant_id: &str,
    network_id: &str,
) -> Result<Option<network::Model>> {
    Ok(network::Entity::find_by_id(network_id.to_owned())
        .filter(network::Column::TenantId.eq(tenant_id))
        .filter(network::Column::State.ne(State::Deleted))
        .one(conn)
        .await?)
}

/// The network's subnets in `region` that are wanted (not being removed), in no order.
pub async fn wanted_subnets_in(
    conn: &impl ConnectionTrait,
    network_id: &str,
    region: &str,
) -> Result<Vec<network_subnet::Model>> {
    Ok(network_subnet::Entity::find()
        .filter(network_subnet::Column::NetworkId.eq(network_id))
        .filter(network_subnet::Column::Region.eq(region))
        .filter(network_subnet::Column::DesiredState.eq(Desired::Present))
        .all(conn)
        .await?)
}

/// The provider id of the network's ready subnet in `zone` (AWS keeps one subnet per zone):
/// where an EC2 instance of that zone goes.
pub async fn ready_subnet_in_zone(
    conn: &impl ConnectionTrait,
    network_id: &str,
    zone: Option<String>,
) -> Result<Option<String>> {
    let subnet = network_subnet::Entity::find()
        .filter(network_subnet::Column::NetworkId.eq(network_id))
        .filter(network_subnet::Column::Zone.eq(zone))
        .filter(network_subnet::Column::DesiredState.eq(Desired::Present))
        .filter(network_subnet::Column::State.eq(State::Ready))
        .one(conn)
        .await?;
    Ok(subnet.and_then(|s| s.provider_id))
}
