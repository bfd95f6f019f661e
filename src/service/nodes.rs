//! Relay's object identification: which tenant (and parent) an id belongs to, so that
//! `node(id:)` can hand it to that type's own read, which decides it. An id of another tenant is
//! then NOT_FOUND there, as its own read says; an id of no known kind is NOT_FOUND here.
use sea_orm::{ColumnTrait, EntityTrait, QueryFilter, QuerySelect};

use super::Services;
use super::authz::Actor;
use super::pools::PoolView;
use super::tokens::Token;
use crate::error::{Error, Result};
use crate::ids;
use crate::store::entity::{
    api_token, filesystem, instance, network, network_subnet, pool, pool_offer, project, provider_account,
    provider_address, provider_snapshot, provider_volume, volume_attachment,
};

/// The kinds of object `node(id:)` resolves, told apart by the id's prefix. A tenant's id is
/// the one without a prefix: the tenant id pattern has no `_`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NodeKind {
    Tenant,
    Project,
    ProviderAccount,
    Pool,
    Token,
    Network,
    Subnet,
    Instance,
    ProviderVolume,
    Attachment,
    ProviderSnapshot,
    ProviderAddress,
    Filesystem,
}

/// Where an object lives: its tenant (none for the operator's objects) and, for an object
/// read through its parent (a subnet or filesystem of a network, an attachment of a volume),
/// that parent's id.
#[derive(Clone, Debug)]
pub struct NodeOwner {
    pub kind: NodeKind,
    pub tenant_id: String,
    pub parent_id: Option<String>,
}

pub fn node_kind(id: &str) -> Option<NodeKind> {
    let Some((prefix, _)) = id.split_once('_') else {
        return Some(NodeKind::Tenant);
    };
    Some(match prefix {
        ids::PROJECT => NodeKind::Project,
        ids::PROVIDER_ACCOUNT => NodeKind::ProviderAccount,
        ids::POOL => NodeKind::Pool,
        ids::TOKEN => NodeKind::Token,
        ids::NETWORK => NodeKind::Network,
        ids::SUBNET => NodeKind::Subnet,
        ids::INSTANCE => NodeKind::Instance,
        ids::VOLUME => NodeKind::ProviderVolume,
        ids::ATTACHMENT => NodeKind::Attachment,
        ids::SNAPSHOT => NodeKind::ProviderSnapshot,
        ids::ADDRESS => NodeKind::ProviderAddress,
        ids::FILESYSTEM => NodeKind::Filesystem,
        _ => return None,
    })
}

impl Services {
    /// The owner of the object `id` names, for the kinds a tenant owns; NOT_FOUND when no
    /// object has it. Pools, provider accounts and tokens are decided by their own reads below.
    pub async fn node_owner(&self, id: &str) -> Result<NodeOwner> {
        let missing = || Error::not_found("node", id);
        let kind = node_kind(id).ok_or_else(missing)?;
        let db = &self.db;
        let (tenant_id, parent_id): (String, Option<String>) = match kind {
            NodeKind::Tenant => (id.to_owned(), None),
            NodeKind::ProviderAccount | NodeKind::Pool | NodeKind::Token => (String::new(), None),
            NodeKind::Project => owned::<project::Entity>(db, id, project::Column::TenantId).await?,
            NodeKind::Network => owned::<network::Entity>(db, id, network::Column::TenantId).await?,
            NodeKind::Instance => owned::<instance::Entity>(db, id, instance::Column::TenantId).await?,
            NodeKind::ProviderVolume => {
                owned::<provider_volume::Entity>(db, id, provider_volume::Column::TenantId).await?
            }
            NodeKind::ProviderSnapshot => {
                owned::<provider_snapshot::Entity>(db, id, provider_snapshot::Column::TenantId).await?
            }
            NodeKind::ProviderAddress => {
                owned::<provider_address::Entity>(db, id, provider_address::Column::TenantId).await?
            }
            NodeKind::Filesystem => {
                let found =
                    pair::<filesystem::Entity>(db, id, filesystem::Column::TenantId, filesystem::Column::NetworkId);
                found.await?.ok_or_else(missing)?
            }
            NodeKind::Subnet => {
                let network_id = parent::<network_subnet::Entity>(db, id, network_subnet::Column::NetworkId).await?;
                let network_id = network_id.ok_or_else(missing)?;
                let (tenant, _) = owned::<network::Entity>(db, &network_id, network::Column::TenantId).await?;
                (tenant, Some(network_id))
            }
            NodeKind::Attachment => {
                let volume_id =
                    parent::<volume_attachment::Entity>(db, id, volume_attachment::Column::VolumeId).await?;
                let volume_id = volume_id.ok_or_else(missing)?;
                let (tenant, _) =
                    owned::<provider_volume::Entity>(db, &volume_id, provider_volume::Column::TenantId).await?;
                (tenant, Some(volume_id))
            }
        };
        Ok(NodeOwner { kind, tenant_id, parent_id })
    }

    /// One pool, read as `pools` reads it: an operator reads any; anyone else reads a pool
    /// offered to their tenant with `compute:pools:read`, and any other is NOT_FOUND.
    pub async fn pool_get(&self, actor: &Actor, pool_id: &str) -> Result<PoolView> {
        let missing = || Error::not_found("pool", pool_id);
        if !actor.is_operator() {
            let tenant_id = actor.tenant_id.as_deref().ok_or_else(missing)?;
            let offer = pool_offer::Entity::find()
                .filter(pool_offer::Column::TenantId.eq(tenant_id))
                .filter(pool_offer::Column::PoolId.eq(pool_id))
                .one(&self.db)
                .await?;
            offer.ok_or_else(missing)?;
            return self
                .pool_list(actor, tenant_id)
                .await?
                .into_iter()
                .find(|p| p.pool.id == pool_id)
                .ok_or_else(missing);
        }
        let pool = pool::Entity::find_by_id(pool_id.to_owned()).one(&self.db).await?.ok_or_else(missing)?;
        let account = self.provider_account_get(actor, &pool.provider_account_id).await?;
        Ok(PoolView { pool, account })
    }

    /// One provider account (operator), as `providerAccounts` reads them; to anyone else an
    /// account that is not their tenant's own is NOT_FOUND, as every other tenant's object is.
    pub async fn provider_account_get(&self, actor: &Actor, account_id: &str) -> Result<provider_account::Model> {
        let missing = || Error::not_found("provider account", account_id);
        let found = provider_account::Entity::find_by_id(account_id.to_owned()).one(&self.db).await?;
        let account = found.ok_or_else(missing)?;
        if !actor.is_operator() && (account.tenant_id.is_none() || account.tenant_id != actor.tenant_id) {
            return Err(missing());
        }
        actor.require_operator()?;
        Ok(account)
    }

    /// One token (operator), as `tokens` reads them; another tenant's token, or an operator
    /// token asked by a tenant, is NOT_FOUND as every other tenant's object is.
    pub async fn token_get(&self, actor: &Actor, token_id: &str) -> Result<Token> {
        let missing = || Error::not_found("token", token_id);
        let owner = api_token::Entity::find_by_id(token_id.to_owned())
            .select_only()
            .column(api_token::Column::TenantId)
            .into_tuple::<Option<String>>()
            .one(&self.db)
            .await?
            .ok_or_else(missing)?;
        if !actor.is_operator() && (owner.is_none() || owner != actor.tenant_id) {
            return Err(missing());
        }
        let listed = self.token_list(actor, owner.as_deref()).await?;
        listed.into_iter().find(|t| t.token.id == token_id).ok_or_else(missing)
    }
}

async fn owned<E>(db: &sea_orm::DatabaseConnection, id: &str, tenant: E::Column) -> Result<(String, Option<String>)>
where
    E: EntityTrait,
    <E::PrimaryKey as sea_orm::PrimaryKeyTrait>::ValueType: From<String>,
{
    let found = parent::<E>(db, id, tenant).await?;
    found.map(|tenant| (tenant, None)).ok_or_else(|| Error::not_found("node", id))
}

/// One string column of the row `id`, None when there is no such row.
async fn parent<E>(db: &sea_orm::DatabaseConnection, id: &str, column: E::Column) -> Result<Option<String>>
where
    E: EntityTrait,
    <E::PrimaryKey as sea_orm::PrimaryKeyTrait>::ValueType: From<String>,
{
    Ok(E::find_by_id(id.to_owned()).select_only().column(column).into_tuple::<String>().one(db).await?)
}

async fn pair<E>(
    db: &sea_orm::DatabaseConnection,
    id: &str,
    first: E::Column,
    second: E::Column,
) -> Result<Option<(String, Option<String>)>>
where
    E: EntityTrait,
    <E::PrimaryKey as sea_orm::PrimaryKeyTrait>::ValueType: From<String>,
{
    let found =
        E::find_by_id(id.to_owned()).select_only().column(first).column(second).into_tuple::<(String, String)>();
    Ok(found.one(db).await?.map(|(a, b)| (a, Some(b))))
}
