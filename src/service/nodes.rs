//! Relay's object identification: the objects `node(id:)` and `nodes(ids:)` name, told apart by
//! their ids' prefixes, read in one statement per kind (and per kind of parent) whatever the
//! number of ids, and each decided exactly as its type's own read decides it. An id the caller
//! may not read is NOT_FOUND naming that id and nothing else (not the parent it would be read
//! through); ACCESS_DENIED stays for an object of the caller's own tenant that no grant reads.
use std::collections::HashMap;

use super::networks::{self};
use super::tokens::Token;
use super::volumes::{self};
use super::{addresses, instances};
use crate::authz::{Actor, Target};
use crate::error::{Code, Error, Result};
use crate::ids;
use crate::services::Services;
use crate::store::entity::{
    api_token, filesystem, firewall_rule, instance, network, network_subnet, pool, project, provider_account,
    provider_address, provider_snapshot, provider_volume, tenant, volume_attachment,
};
use crate::store::{networks as network_rows, nodes as store, pools as pool_rows, tokens as token_rows};
use crate::views::filesystems::FilesystemView;
use crate::views::firewall_rules::FirewallRuleView;
use crate::views::networks::{NetworkView, SubnetView};
use crate::views::pools::{AccountView, PoolView};
use crate::views::snapshots::SnapshotView;
use crate::views::tenants::{ProjectView, TenantView};
use crate::views::volumes::{AttachmentView, VolumeView};

/// The kinds of object `node(id:)` resolves, told apart by the id's prefix. A tenant's id is
/// the one without a prefix: the tenant id pattern has no `_`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
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
    FirewallRule,
}

/// Most statements one `nodes` call costs, whatever its ids: one per kind, and the parents
/// (networks, volumes) and children (subnets, attachments, grants, offers, accounts) read with
/// them.
pub const MAX_STATEMENTS: usize = 20;

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
        ids::FIREWALL_RULE => NodeKind::FirewallRule,
        _ => return None,
    })
}

/// An object `node(id:)` answers.
pub enum NodeView {
    Tenant(TenantView),
    Project(ProjectView),
    ProviderAccount(AccountView),
    Pool(PoolView),
    Token(Token),
    Network(NetworkView),
    Subnet(SubnetView),
    Instance(InstanceView),
    ProviderVolume(VolumeView),
    Attachment(AttachmentView),
    ProviderSnapshot(SnapshotView),
    ProviderAddress(crate::views::addresses::AddressView),
    Filesystem(FilesystemView),
    FirewallRule(FirewallRuleView),
}

use crate::views::instances::InstanceView;

/// What was decided of each id read.
type Found = HashMap<String, Result<NodeView>>;

impl Services {
    /// The objects `ids` name, in the order asked: each decided as its type's own read, NOT_FOUND
    /// naming only its id where there is none the caller may read.
    pub async fn nodes_get(&self, actor: &Actor, ids: &[String]) -> Result<Vec<Result<NodeView>>> {
        let mut asked: HashMap<NodeKind, Vec<String>> = HashMap::new();
        for id in ids {
            if let Some(kind) = node_kind(id) {
                let of_kind = asked.entry(kind).or_default();
                if !of_kind.contains(id) {
                    of_kind.push(id.clone());
                }
            }
        }
        let asked = |kind| asked.get(&kind).cloned().unwrap_or_default();
        let mut found = Found::new();
        self.operator_nodes(
            actor,
            &asked(NodeKind::ProviderAccount),
            &asked(NodeKind::Pool),
            &asked(NodeKind::Token),
            &mut found,
        )
        .await?;
        self.tenant_nodes(actor, &asked(NodeKind::Tenant), &asked(NodeKind::Project), &mut found).await?;
        self.network_nodes(
            actor,
            &asked(NodeKind::Network),
            &asked(NodeKind::Subnet),
            &asked(NodeKind::Filesystem),
            &asked(NodeKind::FirewallRule),
            &mut found,
        )
        .await?;
        self.volume_nodes(actor, &asked(NodeKind::ProviderVolume), &asked(NodeKind::Attachment), &mut found).await?;
        self.resource_nodes(
            actor,
            &asked(NodeKind::Instance),
            &asked(NodeKind::ProviderSnapshot),
            &asked(NodeKind::ProviderAddress),
            &mut found,
        )
        .await?;
        Ok(ids
            .iter()
            .map(|id| match found.remove(id) {
                Some(Err(err)) if err.code == Code::NotFound => Err(missing(id)),
                Some(decided) => decided,
                None => Err(missing(id)),
            })
            .collect())
    }

    /// Provider accounts, pools and tokens: the operator's objects, a pool as offered to the
    /// caller's tenant, a tenant's own account or token as the operator surface decides it.
    async fn operator_nodes(
        &self,
        actor: &Actor,
        account_ids: &[String],
        pool_ids: &[String],
        token_ids: &[String],
        found: &mut Found,
    ) -> Result<()> {
        let own =
            |tenant_id: &Option<String>| actor.is_operator() || (tenant_id.is_some() && *tenant_id == actor.tenant_id);
        for account in store::rows_by_id::<provider_account::Entity>(&self.db, account_ids).await? {
            let decided = if own(&account.tenant_id) { actor.require_operator() } else { Err(missing(&account.id)) };
            found.insert(account.id.clone(), decided.map(|_| NodeView::ProviderAccount(AccountView::from(&account))));
        }
        let pools = store::rows_by_id::<pool::Entity>(&self.db, pool_ids).await?;
        if !pools.is_empty() {
            // To a tenant a pool is one offered to it, read with `compute:pools:read`; any
            // other is missing, as `pools` would not list it.
            let offered: Vec<String> = match &actor.tenant_id {
                Some(tenant_id) if !actor.is_operator() => {
                    pool_rows::offers_to(&self.db, tenant_id).await?.into_iter().map(|o| o.pool_id).collect()
                }
                _ => Vec::new(),
            };
            let account_ids: Vec<String> = pools.iter().map(|p| p.provider_account_id.clone()).collect();
            let accounts: HashMap<String, provider_account::Model> =
                pool_rows::find_accounts(&self.db, account_ids).await?.into_iter().map(|a| (a.id.clone(), a)).collect();
            for pool in pools {
                let decided = match &actor.tenant_id {
                    _ if actor.is_operator() => Ok(()),
                    Some(tenant_id) if offered.contains(&pool.id) => {
                        actor.decide("compute:pools:read", &Target::tenant(tenant_id))
                    }
                    _ => Err(missing(&pool.id)),
                };
                let Some(account) = accounts.get(&pool.provider_account_id) else { continue };
                found.insert(pool.id.clone(), decided.map(|_| NodeView::Pool(PoolView::of(&pool, account))));
            }
        }
        let tokens = store::rows_by_id::<api_token::Entity>(&self.db, token_ids).await?;
        let readable: Vec<api_token::Model> = tokens.into_iter().filter(|t| own(&t.tenant_id)).collect();
        let ids: Vec<String> = readable.iter().map(|t| t.id.clone()).collect();
        let grants = match actor.is_operator() && !ids.is_empty() {
            true => token_rows::grants_of_many(&self.db, ids).await?,
            false => Vec::new(),
        };
        for token in readable {
            let of = grants.iter().filter(|g| g.token_id == token.id);
            let grants = of.map(|g| crate::authz::Grant::new(&g.permission, &g.scope)).collect();
            let decided = actor.require_operator().map(|_| NodeView::Token(Token { token: token.clone(), grants }));
            found.insert(token.id, decided);
        }
        Ok(())
    }

    async fn tenant_nodes(
        &self,
        actor: &Actor,
        tenant_ids: &[String],
        project_ids: &[String],
        found: &mut Found,
    ) -> Result<()> {
        for tenant in store::rows_by_id::<tenant::Entity>(&self.db, tenant_ids).await? {
            let decided = actor.decide("compute:tenants:read", &Target::tenant(&tenant.id));
            found.insert(tenant.id.clone(), decided.map(|_| NodeView::Tenant(tenant.into())));
        }
        for project in store::rows_by_id::<project::Entity>(&self.db, project_ids).await? {
            let target = Target::resource(&project.tenant_id, Some(&project.id), "project", &project.id);
            let decided = actor.decide("compute:projects:read", &target);
            found.insert(project.id.clone(), decided.map(|_| NodeView::Project(project.into())));
        }
        Ok(())
    }

    /// Networks, and what is read through one: its subnets, filesystems and firewall rules.
    async fn network_nodes(
        &self,
        actor: &Actor,
        network_ids: &[String],
        subnet_ids: &[String],
        filesystem_ids: &[String],
        rule_ids: &[String],
        found: &mut Found,
    ) -> Result<()> {
        let subnets = store::rows_by_id::<network_subnet::Entity>(&self.db, subnet_ids).await?;
        let filesystems = store::rows_by_id::<filesystem::Entity>(&self.db, filesystem_ids).await?;
        let rules = store::rows_by_id::<firewall_rule::Entity>(&self.db, rule_ids).await?;
        let mut wanted = network_ids.to_vec();
        wanted.extend(subnets.iter().map(|s| s.network_id.clone()));
        wanted.extend(filesystems.iter().map(|f| f.network_id.clone()));
        wanted.extend(rules.iter().map(|r| r.network_id.clone()));
        wanted.sort();
        wanted.dedup();
        let networks: HashMap<String, network::Model> = store::rows_by_id::<network::Entity>(&self.db, &wanted)
            .await?
            .into_iter()
            .map(|n| (n.id.clone(), n))
            .collect();
        let decide = |network_id: &str| -> Result<()> {
            let network = networks.get(network_id).ok_or_else(|| missing(network_id))?;
            let target = Target::resource(
                &network.tenant_id,
                network.project_id.as_deref(),
                crate::views::networks::KIND,
                &network.id,
            );
            actor.decide(networks::READ, &target)
        };
        let read: Vec<String> = network_ids.iter().filter(|id| networks.contains_key(*id)).cloned().collect();
        let of_networks = network_rows::subnets_of_many(&self.db, read.clone()).await?;
        for id in read {
            let decided =
                decide(&id).map(|_| NodeView::Network(crate::views::networks::view(&networks[&id], &of_networks)));
            found.insert(id, decided);
        }
        for subnet in subnets {
            let decided =
                decide(&subnet.network_id).map(|_| NodeView::Subnet(crate::views::networks::subnet_view(&subnet)));
            found.insert(subnet.id, decided);
        }
        for filesystem in filesystems {
            let decided = decide(&filesystem.network_id)
                .map(|_| NodeView::Filesystem(crate::views::filesystems::view(&filesystem)));
            found.insert(filesystem.id, decided);
        }
        for rule in rules {
            let decided =
                decide(&rule.network_id).map(|_| NodeView::FirewallRule(crate::views::firewall_rules::view(&rule)));
            found.insert(rule.id, decided);
        }
        Ok(())
    }

    /// Volumes, and their attachments (read through their volume).
    async fn volume_nodes(
        &self,
        actor: &Actor,
        volume_ids: &[String],
        attachment_ids: &[String],
        found: &mut Found,
    ) -> Result<()> {
        let attachments = store::rows_by_id::<volume_attachment::Entity>(&self.db, attachment_ids).await?;
        let mut wanted = volume_ids.to_vec();
        wanted.extend(attachments.iter().map(|a| a.volume_id.clone()));
        wanted.sort();
        wanted.dedup();
        let volumes = store::rows_by_id::<provider_volume::Entity>(&self.db, &wanted).await?;
        let ids: Vec<String> = volumes.iter().map(|v| v.id.clone()).collect();
        let live = store::live_attachments_of(&self.db, &ids).await?;
        let views: HashMap<String, Result<VolumeView>> = volumes
            .iter()
            .map(|v| {
                let target =
                    Target::resource(&v.tenant_id, v.project_id.as_deref(), crate::views::volumes::KIND, &v.id);
                (v.id.clone(), actor.decide(volumes::READ, &target).map(|_| crate::views::volumes::view(v, &live)))
            })
            .collect();
        for id in volume_ids {
            if let Some(decided) = views.get(id) {
                found.insert(id.clone(), decided.clone().map(NodeView::ProviderVolume));
            }
        }
        for attachment in attachments {
            // Only an attachment that is not finished is one of its volume's.
            let Some(decided) = views.get(&attachment.volume_id) else { continue };
            let view = decided.clone().and_then(|volume| {
                let own = volume.attachments.into_iter().find(|a| a.id == attachment.id);
                own.map(NodeView::Attachment).ok_or_else(|| missing(&attachment.id))
            });
            found.insert(attachment.id, view);
        }
        Ok(())
    }

    /// Instances, snapshots and addresses: each decided on itself.
    async fn resource_nodes(
        &self,
        actor: &Actor,
        instance_ids: &[String],
        snapshot_ids: &[String],
        address_ids: &[String],
        found: &mut Found,
    ) -> Result<()> {
        let decide = |permission: &str, tenant_id: &str, project_id: Option<&str>, kind: &str, id: &str| {
            actor.decide(permission, &Target::resource(tenant_id, project_id, kind, id))
        };
        for i in store::rows_by_id::<instance::Entity>(&self.db, instance_ids).await? {
            let decided =
                decide(instances::READ, &i.tenant_id, i.project_id.as_deref(), crate::views::instances::KIND, &i.id);
            found.insert(i.id.clone(), decided.map(|_| NodeView::Instance(i.into())));
        }
        for s in store::rows_by_id::<provider_snapshot::Entity>(&self.db, snapshot_ids).await? {
            let decided =
                decide(volumes::READ, &s.tenant_id, s.project_id.as_deref(), crate::views::snapshots::KIND, &s.id);
            found.insert(s.id.clone(), decided.map(|_| NodeView::ProviderSnapshot(crate::views::snapshots::view(&s))));
        }
        for a in store::rows_by_id::<provider_address::Entity>(&self.db, address_ids).await? {
            let decided =
                decide(addresses::READ, &a.tenant_id, a.project_id.as_deref(), crate::views::addresses::KIND, &a.id);
            found.insert(a.id.clone(), decided.map(|_| NodeView::ProviderAddress(crate::views::addresses::view(&a))));
        }
        Ok(())
    }
}

fn missing(id: &str) -> Error {
    Error::not_found("node", id)
}
