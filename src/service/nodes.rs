//! Relay's object identification: which tenant (and network) an id belongs to, so that
//! `node(id:)` can hand it to that type's own read, which decides it. An id of another tenant is
//! then NOT_FOUND there, as its own read says; an id of no known kind is NOT_FOUND here.
use sea_orm::{EntityTrait, QuerySelect};

use super::Services;
use crate::error::{Error, Result};
use crate::ids;
use crate::store::entity::{
    filesystem, instance, network, project, provider_address, provider_snapshot, provider_volume,
};

/// The kinds of object `node(id:)` resolves, told apart by the id's prefix.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NodeKind {
    ProviderVolume,
    ProviderSnapshot,
    ProviderAddress,
    Network,
    Instance,
    Filesystem,
    Project,
}

/// Where an object lives: its tenant, and for a filesystem its network.
#[derive(Clone, Debug)]
pub struct NodeOwner {
    pub kind: NodeKind,
    pub tenant_id: String,
    pub network_id: Option<String>,
}

pub fn node_kind(id: &str) -> Option<NodeKind> {
    let (prefix, _) = id.split_once('_')?;
    Some(match prefix {
        ids::VOLUME => NodeKind::ProviderVolume,
        ids::SNAPSHOT => NodeKind::ProviderSnapshot,
        ids::ADDRESS => NodeKind::ProviderAddress,
        ids::NETWORK => NodeKind::Network,
        ids::INSTANCE => NodeKind::Instance,
        ids::FILESYSTEM => NodeKind::Filesystem,
        ids::PROJECT => NodeKind::Project,
        _ => return None,
    })
}

impl Services {
    /// The owner of the object `id` names; NOT_FOUND when no object has it.
    pub async fn node_owner(&self, id: &str) -> Result<NodeOwner> {
        let missing = || Error::not_found("node", id);
        let kind = node_kind(id).ok_or_else(missing)?;
        let db = &self.db;
        let (tenant_id, network_id): (String, Option<String>) = match kind {
            NodeKind::ProviderVolume => {
                tenant_of::<provider_volume::Entity>(db, id, provider_volume::Column::TenantId).await?
            }
            NodeKind::ProviderSnapshot => {
                tenant_of::<provider_snapshot::Entity>(db, id, provider_snapshot::Column::TenantId).await?
            }
            NodeKind::ProviderAddress => {
                tenant_of::<provider_address::Entity>(db, id, provider_address::Column::TenantId).await?
            }
            NodeKind::Network => tenant_of::<network::Entity>(db, id, network::Column::TenantId).await?,
            NodeKind::Instance => tenant_of::<instance::Entity>(db, id, instance::Column::TenantId).await?,
            NodeKind::Project => tenant_of::<project::Entity>(db, id, project::Column::TenantId).await?,
            NodeKind::Filesystem => filesystem::Entity::find_by_id(id.to_owned())
                .select_only()
                .column(filesystem::Column::TenantId)
                .column(filesystem::Column::NetworkId)
                .into_tuple::<(String, String)>()
                .one(db)
                .await?
                .map(|(tenant, network)| (tenant, Some(network))),
        }
        .ok_or_else(missing)?;
        Ok(NodeOwner { kind, tenant_id, network_id })
    }
}

async fn tenant_of<E>(
    db: &sea_orm::DatabaseConnection,
    id: &str,
    tenant: E::Column,
) -> Result<Option<(String, Option<String>)>>
where
    E: EntityTrait,
    <E::PrimaryKey as sea_orm::PrimaryKeyTrait>::ValueType: From<String>,
{
    let found = E::find_by_id(id.to_owned()).select_only().column(tenant).into_tuple::<String>().one(db).await?;
    Ok(found.map(|tenant| (tenant, None)))
}
