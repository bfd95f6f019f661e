//! Network rows: the user changes the network calls write, and the reads more than one resource
//! group needs.
use chrono::{DateTime, Utc};
use sea_orm::sea_query::{Expr, ExprTrait};
use sea_orm::{ColumnTrait, ConnectionTrait, EntityTrait, QueryFilter, UpdateMany};

use super::entity::{network, network_subnet};
use crate::error::{Error, Result};
use crate::store::state::{Desired, State};

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

/// Writes a user change of the network row, its version and generation bumped in SQL.
pub async fn bump(
    conn: &impl ConnectionTrait,
    current: network::Model,
    change: impl FnOnce(UpdateMany<network::Entity>) -> UpdateMany<network::Entity>,
    now: DateTime<Utc>,
) -> Result<network::Model> {
    let update = network::Entity::update_many()
        .col_expr(network::Column::Version, Expr::col(network::Column::Version).add(1))
        .col_expr(network::Column::Generation, Expr::col(network::Column::Generation).add(1))
        .col_expr(network::Column::UpdatedAt, Expr::value(now))
        .filter(network::Column::Id.eq(current.id.clone()));
    change(update).exec(conn).await?;
    network::Entity::find_by_id(current.id.clone()).one(conn).await?.ok_or_else(|| Error::internal("network vanished"))
}

/// Marks a subnet for removal (its VPC is deleted by the reconciler).
pub async fn mark_removed(
    conn: &impl ConnectionTrait,
    subnet: &network_subnet::Model,
    now: DateTime<Utc>,
) -> Result<network_subnet::Model> {
    network_subnet::Entity::update_many()
        .col_expr(network_subnet::Column::DesiredState, Expr::value(Desired::Absent))
        .col_expr(network_subnet::Column::State, Expr::value(State::Deleting))
        .col_expr(network_subnet::Column::Version, Expr::col(network_subnet::Column::Version).add(1))
        .col_expr(network_subnet::Column::Generation, Expr::col(network_subnet::Column::Generation).add(1))
        .col_expr(network_subnet::Column::UpdatedAt, Expr::value(now))
        .filter(network_subnet::Column::Id.eq(subnet.id.clone()))
        .exec(conn)
        .await?;
    network_subnet::Entity::find_by_id(subnet.id.clone())
        .one(conn)
        .await?
        .ok_or_else(|| Error::internal("subnet vanished"))
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
