//! Reads of network rows that more than one resource group needs.
use sea_orm::{ColumnTrait, ConnectionTrait, EntityTrait, QueryFilter};

use super::entity::network_subnet;
use super::state;
use crate::error::Result;

/// The provider id of the VPC of the network's ready subnet in `region` (DigitalOcean keeps one
/// VPC per subnet): where a Droplet or a share of that network goes.
pub async fn ready_subnet_vpc(conn: &impl ConnectionTrait, network_id: &str, region: &str) -> Result<Option<String>> {
    let subnet = network_subnet::Entity::find()
        .filter(network_subnet::Column::NetworkId.eq(network_id))
        .filter(network_subnet::Column::Region.eq(region))
        .filter(network_subnet::Column::DesiredState.eq(state::PRESENT))
        .filter(network_subnet::Column::State.eq(state::READY))
        .one(conn)
        .await?;
    Ok(subnet.and_then(|s| s.provider_id))
}
