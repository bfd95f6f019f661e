//! The one or two columns `node(id:)` reads of a row to tell whose it is: its tenant, or the
//! parent it is read through. Each read is by primary key and selects only those columns.
use sea_orm::{ConnectionTrait, EntityTrait, PrimaryKeyTrait, QuerySelect};

use super::entity::{
    filesystem, instance, network, network_subnet, project, provider_address, provider_snapshot, provider_volume,
    volume_attachment,
};
use crate::error::Result;

/// The tenant of the project `id`, None when there is no such project.
pub async fn project_tenant(conn: &impl ConnectionTrait, id: &str) -> Result<Option<String>> {
    column::<project::Entity>(conn, id, project::Column::TenantId).await
}

/// The tenant of the network `id`, None when there is no such network.
pub async fn network_tenant(conn: &impl ConnectionTrait, id: &str) -> Result<Option<String>> {
    column::<network::Entity>(conn, id, network::Column::TenantId).await
}

/// The tenant of the instance `id`, None when there is no such instance.
pub async fn instance_tenant(conn: &impl ConnectionTrait, id: &str) -> Result<Option<String>> {
    column::<instance::Entity>(conn, id, instance::Column::TenantId).await
}

/// The tenant of the volume `id`, None when there is no such volume.
pub async fn volume_tenant(conn: &impl ConnectionTrait, id: &str) -> Result<Option<String>> {
    column::<provider_volume::Entity>(conn, id, provider_volume::Column::TenantId).await
}

/// The tenant of the snapshot `id`, None when there is no such snapshot.
pub async fn snapshot_tenant(conn: &impl ConnectionTrait, id: &str) -> Result<Option<String>> {
    column::<provider_snapshot::Entity>(conn, id, provider_snapshot::Column::TenantId).await
}

/// The tenant of the address `id`, None when there is no such address.
pub async fn address_tenant(conn: &impl ConnectionTrait, id: &str) -> Result<Option<String>> {
    column::<provider_address::Entity>(conn, id, provider_address::Column::TenantId).await
}

/// The tenant and the network of the filesystem `id`, None when there is no such filesystem.
pub async fn filesystem_tenant_and_network(conn: &impl ConnectionTrait, id: &str) -> Result<Option<(String, String)>> {
    let found = filesystem::Entity::find_by_id(id.to_owned())
        .select_only()
        .column(filesystem::Column::TenantId)
        .column(filesystem::Column::NetworkId)
        .into_tuple::<(String, String)>();
    Ok(found.one(conn).await?)
}

/// The network of the subnet `id`, None when there is no such subnet.
pub async fn subnet_network(conn: &impl ConnectionTrait, id: &str) -> Result<Option<String>> {
    column::<network_subnet::Entity>(conn, id, network_subnet::Column::NetworkId).await
}

/// The volume of the attachment `id`, None when there is no such attachment.
pub async fn attachment_volume(conn: &impl ConnectionTrait, id: &str) -> Result<Option<String>> {
    column::<volume_attachment::Entity>(conn, id, volume_attachment::Column::VolumeId).await
}

/// One string column of the row `id`, None when there is no such row.
async fn column<E>(conn: &impl ConnectionTrait, id: &str, column: E::Column) -> Result<Option<String>>
where
    E: EntityTrait,
    <E::PrimaryKey as PrimaryKeyTrait>::ValueType: From<String>,
{
    Ok(E::find_by_id(id.to_owned()).select_only().column(column).into_tuple::<String>().one(conn).await?)
}
