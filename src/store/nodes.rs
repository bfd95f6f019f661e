//! The one or two columns `node(id:)` reads of a row to tell whose it is: its tenant, or the
//! parent it is read through. Each read is by primary key and selects only those columns.
use sea_orm::sea_query::{Alias, Expr, ExprTrait};
use sea_orm::{ConnectionTrait, EntityTrait, PrimaryKeyTrait, QueryFilter, QuerySelect};

use super::entity::{filesystem, network_subnet, volume_attachment};
use crate::error::Result;

/// The tenant of the row `id` of `E` (a project or any tenant-owned resource: every such table
/// has `tenant_id`), None when there is no such row.
pub async fn tenant_of<E: EntityTrait>(conn: &impl ConnectionTrait, id: &str) -> Result<Option<String>> {
    let found = E::find()
        .filter(Expr::col(Alias::new("id")).eq(id))
        .select_only()
        .expr(Expr::col(Alias::new("tenant_id")))
        .into_tuple::<String>();
    Ok(found.one(conn).await?)
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
