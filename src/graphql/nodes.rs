//! Relay's object identification: `interface Node { id: ID! }` on every object with an id, and
//! `node(id:)` / `nodes(ids:)` to refetch any of them by id alone. Each id is handed to its
//! type's own read, so it is decided exactly as that read is: another tenant's id is NOT_FOUND.
use async_graphql::{Context, ID, Interface, Object, Result};

use super::filesystems::Filesystem;
use super::instances::Instance;
use super::networks::{Network, Subnet};
use super::pools::{Pool, ProviderAccount};
use super::snapshots::ProviderSnapshot;
use super::tenants::{Project, Tenant};
use super::tokens::Token;
use super::volumes::{Attachment, ProviderVolume};
use super::{actor, addresses::ProviderAddress, services};
use crate::error::{Code, Error};
use crate::service::nodes::NodeKind;

/// Most ids one `nodes` call takes.
const MAX_IDS: usize = 100;

/// An object with an id that identifies it among every object of the API.
#[derive(Interface)]
#[graphql(field(name = "id", ty = "ID"))]
pub enum Node {
    Tenant(Tenant),
    Project(Project),
    ProviderAccount(ProviderAccount),
    Pool(Pool),
    Token(Token),
    Network(Network),
    Subnet(Subnet),
    Instance(Instance),
    ProviderVolume(ProviderVolume),
    Attachment(Attachment),
    ProviderSnapshot(ProviderSnapshot),
    ProviderAddress(ProviderAddress),
    Filesystem(Filesystem),
}

#[derive(Default)]
pub struct NodeQuery;

#[Object]
impl NodeQuery {
    /// The object with this id, decided as its type's own read (NOT_FOUND when there is none
    /// the caller may read).
    async fn node(&self, ctx: &Context<'_>, id: ID) -> Result<Node> {
        Ok(node(ctx, &id).await?)
    }

    /// The objects with these ids, in the order asked (at most 100); null where `node` would be
    /// NOT_FOUND.
    #[graphql(complexity = "1 + ids.len().saturating_mul(child_complexity)")]
    async fn nodes(&self, ctx: &Context<'_>, ids: Vec<ID>) -> Result<Vec<Option<Node>>> {
        if ids.len() > MAX_IDS {
            let message = format!("nodes takes at most {MAX_IDS} ids, not {}", ids.len());
            return Err(Error::invalid_input("ids", message).into());
        }
        let mut found = Vec::with_capacity(ids.len());
        for id in &ids {
            match node(ctx, id).await {
                Ok(node) => found.push(Some(node)),
                Err(err) if err.code == Code::NotFound => found.push(None),
                Err(err) => return Err(err.into()),
            }
        }
        Ok(found)
    }
}

async fn node(ctx: &Context<'_>, id: &str) -> Result<Node, Error> {
    let (svc, actor) = (services(ctx), actor(ctx)?);
    let owner = svc.node_owner(id).await?;
    let (tenant, parent) = (owner.tenant_id.as_str(), owner.parent_id.as_deref().unwrap_or_default());
    let missing = || Error::not_found("node", id);
    Ok(match owner.kind {
        NodeKind::Tenant => Node::Tenant(Tenant(svc.tenant_get(actor, tenant).await?)),
        NodeKind::Project => Node::Project(Project(svc.project_get(actor, tenant, id).await?)),
        NodeKind::ProviderAccount => Node::ProviderAccount(ProviderAccount(svc.provider_account_get(actor, id).await?)),
        NodeKind::Pool => Node::Pool(Pool(svc.pool_get(actor, id).await?)),
        NodeKind::Token => Node::Token(Token(svc.token_get(actor, id).await?)),
        NodeKind::Network => Node::Network(Network(svc.network_get(actor, tenant, id).await?)),
        NodeKind::Subnet => {
            let network = svc.network_get(actor, tenant, parent).await?;
            Node::Subnet(Subnet(network.subnets.into_iter().find(|s| s.id == id).ok_or_else(missing)?))
        }
        NodeKind::Instance => Node::Instance(Instance::from(svc.instance_get(actor, tenant, id).await?)),
        NodeKind::ProviderVolume => {
            Node::ProviderVolume(ProviderVolume::whole(svc.volume_get(actor, tenant, id).await?))
        }
        NodeKind::Attachment => {
            let volume = svc.volume_get(actor, tenant, parent).await?;
            Node::Attachment(Attachment::from(volume.attachments.into_iter().find(|a| a.id == id).ok_or_else(missing)?))
        }
        NodeKind::ProviderSnapshot => {
            Node::ProviderSnapshot(ProviderSnapshot(svc.snapshot_get(actor, tenant, id).await?))
        }
        NodeKind::ProviderAddress => Node::ProviderAddress(ProviderAddress(svc.address_get(actor, tenant, id).await?)),
        NodeKind::Filesystem => Node::Filesystem(Filesystem(svc.filesystem_get(actor, tenant, parent, id).await?)),
    })
}
