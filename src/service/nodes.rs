//! Relay's object identification: which tenant (and parent) an id belongs to, so that
//! `node(id:)` can hand it to that type's own read, which decides it. An id of another tenant is
//! then NOT_FOUND there, as its own read says; an id of no known kind is NOT_FOUND here.
use super::Services;
use super::authz::Actor;
use super::pools::PoolView;
use super::tokens::Token;
use crate::error::{Error, Result};
use crate::ids;
use crate::store::entity::{
    instance, network, project, provider_account, provider_address, provider_snapshot, provider_volume,
};
use crate::store::{nodes as store, pools, tokens};

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
            NodeKind::Project => owned(store::tenant_of::<project::Entity>(db, id).await?, id)?,
            NodeKind::Network => owned(store::tenant_of::<network::Entity>(db, id).await?, id)?,
            NodeKind::Instance => owned(store::tenant_of::<instance::Entity>(db, id).await?, id)?,
            NodeKind::ProviderVolume => owned(store::tenant_of::<provider_volume::Entity>(db, id).await?, id)?,
            NodeKind::ProviderSnapshot => owned(store::tenant_of::<provider_snapshot::Entity>(db, id).await?, id)?,
            NodeKind::ProviderAddress => owned(store::tenant_of::<provider_address::Entity>(db, id).await?, id)?,
            NodeKind::Filesystem => {
                let found = store::filesystem_tenant_and_network(db, id).await?;
                found.map(|(tenant, network)| (tenant, Some(network))).ok_or_else(missing)?
            }
            NodeKind::Subnet => {
                let network_id = store::subnet_network(db, id).await?.ok_or_else(missing)?;
                let (tenant, _) = owned(store::tenant_of::<network::Entity>(db, &network_id).await?, &network_id)?;
                (tenant, Some(network_id))
            }
            NodeKind::Attachment => {
                let volume_id = store::attachment_volume(db, id).await?.ok_or_else(missing)?;
                let (tenant, _) =
                    owned(store::tenant_of::<provider_volume::Entity>(db, &volume_id).await?, &volume_id)?;
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
            let offer = pools::find_offer(&self.db, tenant_id, pool_id).await?;
            offer.ok_or_else(missing)?;
            return self
                .pool_list(actor, tenant_id)
                .await?
                .into_iter()
                .find(|p| p.pool.id == pool_id)
                .ok_or_else(missing);
        }
        let pool = pools::find(&self.db, pool_id).await?.ok_or_else(missing)?;
        let account = self.provider_account_get(actor, &pool.provider_account_id).await?;
        Ok(PoolView { pool, account })
    }

    /// One provider account (operator), as `providerAccounts` reads them; to anyone else an
    /// account that is not their tenant's own is NOT_FOUND, as every other tenant's object is.
    pub async fn provider_account_get(&self, actor: &Actor, account_id: &str) -> Result<provider_account::Model> {
        let missing = || Error::not_found("provider account", account_id);
        let found = pools::find_account(&self.db, account_id).await?;
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
        let owner = tokens::tenant_of(&self.db, token_id).await?.ok_or_else(missing)?;
        if !actor.is_operator() && (owner.is_none() || owner != actor.tenant_id) {
            return Err(missing());
        }
        let listed = self.token_list(actor, owner.as_deref()).await?;
        listed.into_iter().find(|t| t.token.id == token_id).ok_or_else(missing)
    }
}

/// The tenant a row's tenant column read (`store::nodes`) names; NOT_FOUND, naming `id`, when
/// there was no row.
fn owned(found: Option<String>, id: &str) -> Result<(String, Option<String>)> {
    found.map(|tenant| (tenant, None)).ok_or_else(|| Error::not_found("node", id))
}
