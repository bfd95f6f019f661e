//! Relay's object identification: `interface Node { id: ID! }` on every object with an id, and
//! `node(id:)` / `nodes(ids:)` to refetch any of them by id alone. Each id is handed to its
//! type's own read, so it is decided exactly as that read is: another tenant's id is NOT_FOUND.
use async_graphql::{Context, ID, Interface, Object, Result};

use super::filesystems::Filesystem;
use super::firewall_rules::FirewallRule;
use super::instances::Instance;
use super::networks::{Network, Subnet};
use super::pools::{Pool, ProviderAccount};
use super::snapshots::ProviderSnapshot;
use super::tenants::{Project, Tenant};
use super::tokens::Token;
use super::volumes::{Attachment, ProviderVolume};
use super::{actor, addresses::ProviderAddress, services};
use crate::error::{Code, Error};
use crate::service::nodes::NodeView;

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
    FirewallRule(FirewallRule),
}

#[derive(Default)]
pub struct NodeQuery;

/// What `node` and `nodes` weigh besides their ids: the statements of one call.
const STATEMENTS: usize = crate::service::nodes::MAX_STATEMENTS;

#[Object]
impl NodeQuery {
    /// The object with this id, decided as its type's own read (NOT_FOUND when there is none
    /// the caller may read).
    #[graphql(complexity = "1 + STATEMENTS + child_complexity")]
    async fn node(&self, ctx: &Context<'_>, id: ID) -> Result<Node> {
        let mut found = read(ctx, std::slice::from_ref(&id.0)).await?;
        Ok(found.pop().unwrap_or_else(|| Err(Error::not_found("node", &id)))?)
    }

    /// The objects with these ids, in the order asked (at most 100), read in one statement per
    /// kind; null where `node` would be NOT_FOUND.
    #[graphql(complexity = "1 + STATEMENTS + ids.len().saturating_mul(1 + child_complexity)")]
    async fn nodes(&self, ctx: &Context<'_>, ids: Vec<ID>) -> Result<Vec<Option<Node>>> {
        if ids.len() > MAX_IDS {
            let message = format!("nodes takes at most {MAX_IDS} ids, not {}", ids.len());
            return Err(Error::invalid_input("ids", message).into());
        }
        let ids: Vec<String> = ids.into_iter().map(|id| id.0).collect();
        let mut found = Vec::with_capacity(ids.len());
        for decided in read(ctx, &ids).await? {
            match decided {
                Ok(node) => found.push(Some(node)),
                Err(err) if err.code == Code::NotFound => found.push(None),
                Err(err) => return Err(err.into()),
            }
        }
        Ok(found)
    }
}

async fn read(ctx: &Context<'_>, ids: &[String]) -> Result<Vec<Result<Node, Error>>, Error> {
    let found = services(ctx).nodes_get(actor(ctx)?, ids).await?;
    Ok(found.into_iter().map(|decided| decided.map(Node::from)).collect())
}

impl From<NodeView> for Node {
    fn from(view: NodeView) -> Self {
        match view {
            NodeView::Tenant(t) => Node::Tenant(Tenant { view: t }),
            NodeView::Project(p) => Node::Project(Project { view: p }),
            NodeView::ProviderAccount(a) => Node::ProviderAccount(ProviderAccount { view: a }),
            NodeView::Pool(p) => Node::Pool(Pool { view: p }),
            NodeView::Token(t) => Node::Token(Token(t)),
            NodeView::Network(n) => Node::Network(Network(n)),
            NodeView::Subnet(s) => Node::Subnet(Subnet(s)),
            NodeView::Instance(i) => Node::Instance(Instance::from(i)),
            NodeView::ProviderVolume(v) => Node::ProviderVolume(ProviderVolume::whole(v)),
            NodeView::Attachment(a) => Node::Attachment(Attachment::from(a)),
            NodeView::ProviderSnapshot(s) => Node::ProviderSnapshot(ProviderSnapshot::from(s)),
            NodeView::ProviderAddress(a) => Node::ProviderAddress(ProviderAddress(a)),
            NodeView::Filesystem(f) => Node::Filesystem(Filesystem(f)),
            NodeView::FirewallRule(r) => Node::FirewallRule(FirewallRule(r)),
        }
    }
}
