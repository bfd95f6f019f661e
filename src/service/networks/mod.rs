//! Tenant networks: one VPC per subnet on DigitalOcean. Calls record what the tenant wants and
//! wake the `vps.networks` reconciler; the network's view (also the `network.*` events' data) says
//! what it last saw. Decided on the network: `compute:networks:read` to read, `…:update` to change.
mod placement;

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use sea_orm::ConnectionTrait;
use serde::Serialize;
use serde_json::json;

use super::pools::find_pool;
use super::rows::offered_pool;
use super::validate;
use crate::authz::{Actor, Target};
use crate::error::{Code, Error, Result};
use crate::ids;
use crate::provider;
use crate::services::Services;
use crate::store::entity::{network, network_subnet};
use crate::store::idempotency::{self, Claim};
use crate::store::networks::{self as store, mark_removed};
use crate::store::queue;
use crate::store::state::{Desired, FilesystemKind, ProviderKind, State};
use crate::views::networks::{KIND, NetworkView, event, view};
use placement::*;

use crate::store::networks::{RECONCILER, subnets_of};
pub const READ: &str = "compute:networks:read";
pub const UPDATE: &str = "compute:networks:update";
const MAX_SUBNETS: usize = 16;

/// A subnet asked for: on DigitalOcean in a `region`, on AWS in a `zone` (the region follows
/// from it).
#[derive(Clone, Debug, Serialize)]
pub struct SubnetInput {
    pub region: Option<String>,
    pub zone: Option<String>,
    pub ip_range: String,
}

#[derive(Serialize)]
pub struct NetworkCreate {
    pub tenant_id: String,
    pub pool_id: String,
    pub project_id: Option<String>,
    pub name: String,
    pub description: Option<String>,
    /// AWS: the VPC's CIDR block, which holds every subnet's.
    pub ip_range: Option<String>,
    pub subnets: Vec<SubnetInput>,
    #[serde(skip)]
    pub idempotency_key: String,
}

/// `networkAdopt`: an existing AWS VPC recorded as a network, with the subnets it has.
#[derive(Serialize)]
pub struct NetworkAdopt {
    pub tenant_id: String,
    pub pool_id: String,
    pub project_id: Option<String>,
    pub name: String,
    pub description: Option<String>,
    pub vpc_id: String,
    pub region: Option<String>,
    #[serde(skip)]
    pub idempotency_key: String,
}

/// The VPC name a subnet is made under: derived from its id, so a lost create is found by name.
pub fn provider_name(subnet_id: &str) -> String {
    format!("bc-{}", subnet_id.replace('_', "-"))
}

pub struct NetworkPage {
    pub networks: Vec<NetworkView>,
    /// The last network read (one the caller may read, as every one a list reads).
    pub end_cursor: Option<String>,
    pub has_next_page: bool,
}

/// A network books one `networks` (every private range it holds is one fewer for the account's
/// other networks); refunded once it is deleted.
async fn book(conn: &impl ConnectionTrait, n: &network::Model) -> Result<()> {
    crate::store::quota::hold_all(conn, &n.tenant_id, &n.pool_id, &n.id, &[(store::QUOTA, 1)]).await
}

/// Putting a machine or a share on a network changes who is on it: decided as changing the
/// network (`compute:networks:update`), with the caller's own credential, as putting a volume on
/// an instance is decided on the instance.
pub(crate) fn decide_join(actor: &Actor, network: &network::Model) -> Result<()> {
    actor.decide(UPDATE, &Target::resource(&network.tenant_id, network.project_id.as_deref(), KIND, &network.id))
}

impl Services {
    pub async fn network_create(&self, actor: &Actor, input: NetworkCreate) -> Result<NetworkView> {
        check_create(&input)?;
        let id = ids::new_id(ids::NETWORK);
        actor.decide_create(UPDATE, &input.tenant_id, input.project_id.as_deref(), KIND, &id)?;
        if input.subnets.is_empty() || input.subnets.len() > MAX_SUBNETS {
            return Err(Error::invalid_input("subnets", format!("a network has 1 to {MAX_SUBNETS} subnets")));
        }
        let txn = self.begin().await?;
        // The key first: a replay answers what it made, whatever the state rules say now.
        let key =
            idempotency::Key { tenant_id: &input.tenant_id, operation: "networkCreate", key: &input.idempotency_key };
        if let Claim::Existing(existing) =
            idempotency::claim(&txn, &key, &idempotency::request_hash(&input), &id).await?
        {
            drop(txn);
            return self.network_load(&self.db, &input.tenant_id, &existing).await;
        }
        let pool = offered_pool(&txn, &input.tenant_id, &input.pool_id).await?;
        if !provider::supports_networks(pool.account.kind) {
            return Err(unsupported("networks", pool.account.kind));
        }
        super::rows::check_project(&txn, &input.tenant_id, input.project_id.as_deref()).await?;
        let place = Place::of(&pool.account, None);
        let vpc = place.check_vpc(input.ip_range.as_deref())?;
        let subnets = place.check_subnets(&input.subnets, &[], vpc)?;
        if !place.aws {
            let ranges: Vec<&str> = subnets.iter().map(|s| s.ip_range.as_str()).collect();
            check_free_on_account(&txn, &pool.account.id, &ranges).await?;
        }
        let taken = store::find_live_named(&txn, &input.tenant_id, &input.name).await?;
        if taken.is_some() {
            return Err(Error::conflict(format!("a network named {} exists in the tenant", input.name))
                .with_details(json!({ "field": "name" })));
        }
        let now = self.clock.now();
        let row = NewNetwork {
            id: &id,
            tenant_id: &input.tenant_id,
            project_id: input.project_id.as_deref(),
            pool: &pool,
            name: &input.name,
            description: input.description.as_deref(),
            region: place.vpc_region(&subnets),
            ip_range: input.ip_range.clone(),
            adopted_vpc: None,
        };
        let created = row.insert(&txn, now).await?;
        book(&txn, &created).await?;
        let mut rows = Vec::new();
        for subnet in &subnets {
            rows.push(insert_subnet(&txn, &id, subnet, now).await?);
        }
        let view = view(&created, &rows);
        queue::wake(&txn, RECONCILER, &id, self.clock.now_ms()).await?;
        self.commit_and_wake(txn, vec![event("created", &view)]).await?;
        Ok(view)
    }

    /// Records an existing AWS VPC as a network. The reconciler reads the VPC and records its
    /// subnets; nothing is ever made or deleted at the provider for it, and it takes no
    /// filesystems.
    pub async fn network_adopt(&self, actor: &Actor, input: NetworkAdopt) -> Result<NetworkView> {
        check_adopt(&input)?;
        let id = ids::new_id(ids::NETWORK);
        actor.decide_create(UPDATE, &input.tenant_id, input.project_id.as_deref(), KIND, &id)?;
        let txn = self.begin().await?;
        // The key first: a replay answers what it made, whatever the state rules say now.
        let key =
            idempotency::Key { tenant_id: &input.tenant_id, operation: "networkAdopt", key: &input.idempotency_key };
        if let Claim::Existing(existing) =
            idempotency::claim(&txn, &key, &idempotency::request_hash(&input), &id).await?
        {
            drop(txn);
            return self.network_load(&self.db, &input.tenant_id, &existing).await;
        }
        let pool = offered_pool(&txn, &input.tenant_id, &input.pool_id).await?;
        if pool.account.kind != ProviderKind::Aws {
            return Err(unsupported("networkAdopt", pool.account.kind));
        }
        if pool.account.tenant_id.as_deref() != Some(input.tenant_id.as_str()) {
            // A platform account's VPCs are the platform's (or other tenants'), never the tenant's.
            return Err(Error::invalid_input("poolId", "only a VPC of the tenant's own (BYO) account can be adopted")
                .with_details(json!({ "field": "poolId", "reason": "notOwnAccount" })));
        }
        super::rows::check_project(&txn, &input.tenant_id, input.project_id.as_deref()).await?;
        let regions = crate::views::pools::strings(&pool.account.regions);
        let region = input.region.clone().or_else(|| regions.first().cloned()).unwrap_or_default();
        super::rows::check_region(&pool, &region)?;
        let recorded = store::find_live_by_vpc(&txn, &pool.account.id, &input.vpc_id).await?;
        if recorded.is_some() {
            return Err(vpc_taken(&input.vpc_id));
        }
        let now = self.clock.now();
        let row = NewNetwork {
            id: &id,
            tenant_id: &input.tenant_id,
            project_id: input.project_id.as_deref(),
            pool: &pool,
            name: &input.name,
            description: input.description.as_deref(),
            region: Some(region),
            ip_range: None,
            adopted_vpc: Some(input.vpc_id.clone()),
        };
        // Two adopts of one VPC racing past the check above: the live-VPC index refuses one.
        let created = row.insert(&txn, now).await?;
        book(&txn, &created).await?;
        let view = view(&created, &[]);
        queue::wake(&txn, RECONCILER, &id, self.clock.now_ms()).await?;
        self.commit_and_wake(txn, vec![event("created", &view)]).await?;
        Ok(view)
    }

    pub async fn network_add_subnet(
        &self,
        actor: &Actor,
        tenant_id: &str,
        network_id: &str,
        subnet: SubnetInput,
    ) -> Result<NetworkView> {
        let txn = self.begin().await?;
        let (current, subnets) = self.network_for_update(&txn, actor, tenant_id, network_id).await?;
        if current.desired_state == Desired::Absent {
            return Err(being_deleted(network_id));
        }
        if current.adopted {
            return Err(adopted_is_read_only());
        }
        let pool = find_pool(&txn, &current.pool_id).await?;
        let place = Place::of(&pool.account, current.region.as_deref());
        let vpc = current.ip_range.as_deref().and_then(crate::cidr::parse_private);
        let placed = place.check_subnets(std::slice::from_ref(&subnet), &subnets, vpc)?;
        if !place.aws {
            check_free_on_account(&txn, &pool.account.id, &[placed[0].ip_range.as_str()]).await?;
        }
        let now = self.clock.now();
        let added = insert_subnet(&txn, network_id, &placed[0], now).await?;
        let updated = store::mark_pending(&txn, current, now).await?;
        let mut all = subnets;
        all.push(added);
        let view = view(&updated, &all);
        queue::wake(&txn, RECONCILER, network_id, self.clock.now_ms()).await?;
        self.commit_and_wake(txn, vec![event("updated", &view)]).await?;
        Ok(view)
    }

    pub async fn network_remove_subnet(
        &self,
        actor: &Actor,
        tenant_id: &str,
        network_id: &str,
        subnet_id: &str,
    ) -> Result<NetworkView> {
        let txn = self.begin().await?;
        let (current, mut subnets) = self.network_for_update(&txn, actor, tenant_id, network_id).await?;
        let Some(position) = subnets.iter().position(|s| s.id == subnet_id) else {
            return Err(Error::not_found("subnet", subnet_id));
        };
        if subnets[position].desired_state == Desired::Absent {
            drop(txn);
            return self.network_load(&self.db, tenant_id, network_id).await;
        }
        if current.desired_state == Desired::Absent {
            return Err(being_deleted(network_id));
        }
        if current.adopted {
            return Err(adopted_is_read_only());
        }
        if subnets.iter().filter(|s| s.desired_state == Desired::Present).count() == 1 {
            return Err(Error::invalid_input(
                "subnetId",
                "a network keeps at least one subnet: delete the network instead",
            ));
        }
        refuse_if_used(&txn, network_id, Some(&subnets[position])).await?;
        let now = self.clock.now();
        subnets[position] = mark_removed(&txn, &subnets[position], now).await?;
        let updated = store::mark_subnets_changed(&txn, current, now).await?;
        let view = view(&updated, &subnets);
        queue::wake(&txn, RECONCILER, network_id, self.clock.now_ms()).await?;
        self.commit_and_wake(txn, vec![event("updated", &view)]).await?;
        Ok(view)
    }

    /// Marks the network and its subnets for deletion; deleting one being deleted returns it.
    pub async fn network_delete(&self, actor: &Actor, tenant_id: &str, network_id: &str) -> Result<NetworkView> {
        let txn = self.begin().await?;
        let (current, subnets) = self.network_for_update(&txn, actor, tenant_id, network_id).await?;
        if current.desired_state == Desired::Absent {
            drop(txn);
            return self.network_load(&self.db, tenant_id, network_id).await;
        }
        refuse_if_used(&txn, network_id, None).await?;
        let now = self.clock.now();
        let mut marked = Vec::new();
        for subnet in subnets {
            marked.push(if subnet.desired_state == Desired::Absent {
                subnet
            } else {
                mark_removed(&txn, &subnet, now).await?
            });
        }
        // Its rules go first: the reconciler removes them before its subnets.
        let mut events = super::firewall_rules::mark_all_deleting(&txn, network_id, now).await?;
        let updated = store::mark_deleting(&txn, current, now).await?;
        let view = view(&updated, &marked);
        queue::wake(&txn, RECONCILER, network_id, self.clock.now_ms()).await?;
        events.push(event("deleting", &view));
        self.commit_and_wake(txn, events).await?;
        Ok(view)
    }

    pub async fn network_get(&self, actor: &Actor, tenant_id: &str, network_id: &str) -> Result<NetworkView> {
        validate::tenant_id("tenantId", tenant_id)?;
        validate::id("networkId", ids::NETWORK, network_id)?;
        let view = self.network_load(&self.db, tenant_id, network_id).await?;
        actor.decide(READ, &Target::resource(tenant_id, view.project_id.as_deref(), KIND, network_id))?;
        Ok(view)
    }

    /// The tenant's networks in the order they were made, a page at a time.
    pub async fn network_list(
        &self,
        actor: &Actor,
        tenant_id: &str,
        filter: crate::store::list::ListFilter,
    ) -> Result<NetworkPage> {
        actor.decide_list(READ, tenant_id)?;
        super::rows::check_list(tenant_id, &filter, ids::NETWORK)?;
        let readable = actor.readable(READ, tenant_id, Some(KIND));
        let mut rows = crate::store::list::page::<network::Entity>(&self.db, tenant_id, &filter, &readable).await?;
        let has_next_page = rows.len() as u64 > filter.first;
        rows.truncate(filter.first as usize);
        let end_cursor = rows.last().map(|n| n.id.clone());
        let readable: Vec<network::Model> = rows
            .into_iter()
            .filter(|n| actor.allows(READ, &Target::resource(tenant_id, n.project_id.as_deref(), KIND, &n.id)))
            .collect();
        let ids: Vec<String> = readable.iter().map(|n| n.id.clone()).collect();
        let subnets = store::subnets_of_many(&self.db, ids).await?;
        let mut by_network: HashMap<&str, Vec<network_subnet::Model>> = HashMap::new();
        for subnet in &subnets {
            by_network.entry(subnet.network_id.as_str()).or_default().push(subnet.clone());
        }
        let networks =
            readable.iter().map(|n| view(n, by_network.get(n.id.as_str()).map(Vec::as_slice).unwrap_or(&[]))).collect();
        Ok(NetworkPage { networks, end_cursor, has_next_page })
    }

    /// Checks the caller may watch the network; the subscription then follows its own events
    /// (its filesystems' and firewall rules' have their own subscriptions).
    pub async fn network_watch(&self, actor: &Actor, tenant_id: &str, network_id: &str) -> Result<crate::feed::Filter> {
        let view = self.network_get(actor, tenant_id, network_id).await?;
        let filter = crate::feed::Filter::resource(actor, view.tenant_id, "network.*", view.id);
        Ok(filter.except("network.filesystem.*").except("network.firewallRule.*"))
    }

    pub(crate) async fn network_load(
        &self,
        conn: &impl ConnectionTrait,
        tenant_id: &str,
        network_id: &str,
    ) -> Result<NetworkView> {
        let found = crate::store::list::find_in_tenant::<network::Entity>(conn, tenant_id, network_id)
            .await?
            .ok_or_else(|| Error::not_found(KIND, network_id))?;
        let subnets = subnets_of(conn, network_id).await?;
        Ok(view(&found, &subnets))
    }

    /// The network for a change of one of its parts (locked on PostgreSQL), after deciding
    /// `compute:networks:update`; a deleted one is NOT_FOUND.
    pub(crate) async fn network_for_change(
        &self,
        conn: &impl ConnectionTrait,
        actor: &Actor,
        tenant_id: &str,
        network_id: &str,
    ) -> Result<network::Model> {
        Ok(self.network_for_update(conn, actor, tenant_id, network_id).await?.0)
    }

    /// The network and its subnets for a change, after deciding `compute:networks:update`.
    async fn network_for_update(
        &self,
        conn: &impl ConnectionTrait,
        actor: &Actor,
        tenant_id: &str,
        network_id: &str,
    ) -> Result<(network::Model, Vec<network_subnet::Model>)> {
        let found = self.network_decided(conn, actor, tenant_id, network_id).await?;
        if found.state == State::Deleted {
            return Err(Error::not_found(KIND, network_id));
        }
        let subnets = subnets_of(conn, network_id).await?;
        Ok((found, subnets))
    }

    /// The network locked for a change once `actor` may update it, whatever its state: a replay
    /// answers before the state rules of a first call (the row outlives the network).
    pub(crate) async fn network_decided(
        &self,
        conn: &impl ConnectionTrait,
        actor: &Actor,
        tenant_id: &str,
        network_id: &str,
    ) -> Result<network::Model> {
        validate::tenant_id("tenantId", tenant_id)?;
        validate::id("networkId", ids::NETWORK, network_id)?;
        // The network's row lock first (PostgreSQL): changes of one network take turns, and take
        // their locks in the reconciler's order (network, subnets, work item).
        let found = store::find_in_tenant_for_update(conn, tenant_id, network_id)
            .await?
            .ok_or_else(|| Error::not_found(KIND, network_id))?;
        actor.decide(UPDATE, &Target::resource(tenant_id, found.project_id.as_deref(), KIND, network_id))?;
        Ok(found)
    }
}

/// A network row about to be written, with what creating and adopting share.
struct NewNetwork<'a> {
    id: &'a str,
    tenant_id: &'a str,
    project_id: Option<&'a str>,
    pool: &'a super::pools::PoolRow,
    name: &'a str,
    description: Option<&'a str>,
    region: Option<String>,
    ip_range: Option<String>,
    adopted_vpc: Option<String>,
}

impl NewNetwork<'_> {
    async fn insert(self, conn: &impl ConnectionTrait, now: DateTime<Utc>) -> Result<network::Model> {
        let new = store::NewNetwork {
            id: self.id,
            tenant_id: self.tenant_id,
            project_id: self.project_id,
            pool_id: &self.pool.pool.id,
            provider_account_id: &self.pool.account.id,
            name: self.name,
            description: self.description,
            region: self.region,
            ip_range: self.ip_range,
            adopted_vpc: self.adopted_vpc,
        };
        store::insert(conn, new, now).await.map_err(|err| match crate::store::unique_violation(&err) {
            // PostgreSQL names the index, SQLite its columns.
            Some(text) if text.contains("live_vpc") || text.contains("provider_id") => {
                Error::conflict("the VPC is recorded as a network already").with_details(json!({ "field": "vpcId" }))
            }
            Some(_) => name_taken(self.name),
            None => err.into(),
        })
    }
}

/// The resources that keep a network (or `subnet` of it) from being removed, each refused with
/// its ids: shared volumes in the subnet's region (`volumeIds`), filesystems (`filesystemIds`:
/// an nfs one has a mount target in every subnet, a lustre one lives in its zone's), and
/// instances that are not deleted (`instanceIds`: a VPC cannot go while machines are in it).
async fn refuse_if_used(
    conn: &impl ConnectionTrait,
    network_id: &str,
    subnet: Option<&network_subnet::Model>,
) -> Result<()> {
    let region = subnet.map(|s| s.region.as_str());
    let users: Vec<String> =
        crate::store::volumes::live_on_network(conn, network_id, region).await?.into_iter().map(|v| v.id).collect();
    if !users.is_empty() {
        return Err(Error::new(Code::InvalidState, "shared volumes are on the network: delete them first")
            .with_details(json!({ "reason": "inUse", "volumeIds": users })));
    }
    let filesystems: Vec<String> = crate::store::filesystems::live_of(conn, network_id)
        .await?
        .into_iter()
        .filter(|f| subnet.is_none_or(|s| f.kind == FilesystemKind::Nfs || f.zone == s.zone))
        .map(|f| f.id)
        .collect();
    if !filesystems.is_empty() {
        return Err(Error::new(Code::InvalidState, "filesystems are on the network: delete them first")
            .with_details(json!({ "reason": "inUse", "filesystemIds": filesystems })));
    }
    let instances: Vec<String> = crate::store::instances::live_on_network(conn, network_id)
        .await?
        .into_iter()
        .filter(|i| subnet.is_none_or(|s| i.region == s.region && (s.zone.is_none() || i.zone == s.zone)))
        .map(|i| i.id)
        .collect();
    if !instances.is_empty() {
        return Err(Error::new(Code::InvalidState, "instances are on the network: delete them first")
            .with_details(json!({ "reason": "inUse", "instanceIds": instances })));
    }
    Ok(())
}

/// A pool whose provider lacks a capability: refused before anything is recorded.
pub(crate) fn unsupported(capability: &str, kind: ProviderKind) -> Error {
    Error::new(Code::Unsupported, format!("a {kind} pool offers no {capability}"))
        .with_details(json!({ "reason": capability }))
}

fn vpc_taken(vpc_id: &str) -> Error {
    Error::conflict(format!("VPC {vpc_id} is recorded as a network already")).with_details(json!({ "field": "vpcId" }))
}

fn adopted_is_read_only() -> Error {
    Error::invalid_input("networkId", "an adopted network's subnets are the VPC's own: change them at the provider")
        .with_details(json!({ "field": "networkId", "reason": "adopted" }))
}

fn name_taken(name: &str) -> Error {
    Error::conflict(format!("a network named {name} exists in the tenant")).with_details(json!({ "field": "name" }))
}

pub(crate) fn being_deleted(network_id: &str) -> Error {
    Error::new(Code::InvalidState, format!("network {network_id} is being deleted"))
        .with_details(json!({ "reason": "deleting" }))
}

async fn insert_subnet(
    conn: &impl ConnectionTrait,
    network_id: &str,
    subnet: &PlacedSubnet,
    now: DateTime<Utc>,
) -> Result<network_subnet::Model> {
    let id = ids::new_id(ids::SUBNET);
    let new = store::NewSubnet {
        id: &id,
        network_id,
        region: subnet.region.clone(),
        ip_range: subnet.ip_range.clone(),
        zone: subnet.zone.clone(),
        provider_name: provider_name(&id),
    };
    store::insert_subnet(conn, new, now).await
}
