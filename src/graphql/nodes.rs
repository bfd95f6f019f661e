//! Relay's object identification: `interface Node { id: ID! }` on the tenant's resources, and
//! `node(id:)` / `nodes(ids:)` to refetch any of them by id alone. Each id is handed to its
//! type's own read, so it is decided exactly as that read is: another tenant's id is NOT_FOUND.
use async_graphql::{Context, ID, Interface, Object, Result};

use super::filesystems::Filesystem;
use super::instances::Instance;
use super::networks::Network;
use super::snapshots::ProviderSnapshot;
use super::tenants::Project;
use super::volumes::ProviderVolume;
use super::{actor, addresses::ProviderAddress, services};
use crate::error::{Code, Error};
use crate::service::nodes::NodeKind;

/// Most ids one `nodes` call takes.
const MAX_IDS: usize = 100;

/// An object with an id that identifies it among every object of the API.
#[derive(Interface)]
#[graphql(field(name = "id", ty = "ID"))]
pub enum Node {
    ProviderVolume(ProviderVolume),
    ProviderSnapshot(ProviderSnapshot),
    ProviderAddress(ProviderAddress),
    Network(Network),
    Instance(Instance),
    Filesystem(Filesystem),
    Project(Project),
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
    let tenant = owner.tenant_id.as_str();
    Ok(match owner.kind {
        NodeKind::ProviderVolume => {
            Node::ProviderVolume(ProviderVolume::whole(svc.volume_get(actor, tenant, id).await?))
        }
        NodeKind::ProviderSnapshot => {
            Node::ProviderSnapshot(ProviderSnapshot(svc.snapshot_get(actor, tenant, id).await?))
        }
        NodeKind::ProviderAddress => Node::ProviderAddress(ProviderAddress(svc.address_get(actor, tenant, id).await?)),
        NodeKind::Network => Node::Network(Network(svc.network_get(actor, tenant, id).await?)),
        NodeKind::Instance => Node::Instance(Instance(svc.instance_get(actor, tenant, id).await?)),
        NodeKind::Project => Node::Project(Project(svc.project_get(actor, tenant, id).await?)),
        NodeKind::Filesystem => {
            let network = owner.network_id.as_deref().unwrap_or_default();
            Node::Filesystem(Filesystem(svc.filesystem_get(actor, tenant, network, id).await?))
        }
    })
}
