//! Tenant networks: one VPC per subnet on DigitalOcean. Calls record what the tenant wants and
//! wake the `vps.networks` reconciler; the network's view (also the `network.*` events' data) says
//! what it last saw. Decided on the network: `compute:networks:read` to read, `…:update` to change.
use std::collections::HashMap;

use chrono::{DateTime, Utc};
use sea_orm::sea_query::{Expr, ExprTrait};
use sea_orm::{
    ActiveModelTrait, ColumnTrait, ConnectionTrait, EntityTrait, QueryFilter, QueryOrder, QuerySelect, Set, UpdateMany,
};
use serde::{Deserialize, Serialize};
use serde_json::json;

use super::authz::{Actor, Target};
use super::pools::find_pool;
use super::rows::offered_pool;
use super::{Services, validate};
use crate::error::{Code, Error, Result};
use crate::ids;
use crate::provider;
use crate::store::entity::{network, network_subnet};
use crate::store::idempotency::{self, Claim};
use crate::store::outbox::NewEvent;
use crate::store::queue;

pub const RECONCILER: &str = "vps.networks";
pub const KIND: &str = "network";
const READ: &str = "compute:networks:read";
const UPDATE: &str = "compute:networks:update";
const MAX_SUBNETS: usize = 16;

pub mod state {
    pub const PENDING: &str = "pending";
    pub const READY: &str = "ready";
    pub const DELETING: &str = "deleting";
    pub const DELETED: &str = "deleted";
    pub const ERROR: &str = "error";
    pub const PRESENT: &str = "present";
    pub const ABSENT: &str = "absent";
}

#[derive(Clone, Debug, Serialize)]
pub struct SubnetInput {
    pub region: String,
    pub ip_range: String,
}

#[derive(Serialize)]
pub struct NetworkCreate {
    pub tenant_id: String,
    pub pool_id: String,
    pub project_id: Option<String>,
    pub name: String,
    pub description: Option<String>,
    pub subnets: Vec<SubnetInput>,
    #[serde(skip)]
    pub idempotency_key: String,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SubnetView {
    pub id: String,
    pub region: String,
    pub ip_range: String,
    pub state: String,
    pub desired_state: String,
    /// The provider's id of its VPC, once made.
    pub provider_id: Option<String>,
    pub message: Option<String>,
    pub ready_at: Option<DateTime<Utc>>,
    pub deleted_at: Option<DateTime<Utc>>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NetworkView {
    pub id: String,
    pub tenant_id: String,
    pub project_id: Option<String>,
    pub pool_id: String,
    pub provider_account_id: String,
    pub name: String,
    pub description: Option<String>,
    pub state: String,
    pub desired_state: String,
    pub message: Option<String>,
    pub version: i64,
    pub created_at: DateTime<Utc>,
    pub ready_at: Option<DateTime<Utc>>,
    pub deleted_at: Option<DateTime<Utc>>,
    pub subnets: Vec<SubnetView>,
}

pub fn view(n: &network::Model, subnets: &[network_subnet::Model]) -> NetworkView {
    NetworkView {
        id: n.id.clone(),
        tenant_id: n.tenant_id.clone(),
        project_id: n.project_id.clone(),
        pool_id: n.pool_id.clone(),
        provider_account_id: n.provider_account_id.clone(),
        name: n.name.clone(),
        description: n.description.clone(),
        state: n.state.clone(),
        desired_state: n.desired_state.clone(),
        message: n.message.clone(),
        version: n.version,
        created_at: n.created_at,
        ready_at: n.ready_at,
        deleted_at: n.deleted_at,
        subnets: subnets
            .iter()
            .filter(|s| s.network_id == n.id)
            .map(|s| SubnetView {
                id: s.id.clone(),
                region: s.region.clone(),
                ip_range: s.ip_range.clone(),
                state: s.state.clone(),
                desired_state: s.desired_state.clone(),
                provider_id: s.provider_id.clone(),
                message: s.message.clone(),
                ready_at: s.ready_at,
                deleted_at: s.deleted_at,
            })
            .collect(),
    }
}

/// The `network.*` event of a change to `view`.
pub fn event(event_type: &str, view: &NetworkView) -> NewEvent {
    NewEvent {
        event_type: format!("network.{event_type}"),
        subject_kind: KIND,
        subject: view.id.clone(),
        tenant_id: Some(view.tenant_id.clone()),
        project_id: view.project_id.clone(),
        version: view.version,
        data: serde_json::to_value(view).unwrap_or_default(),
    }
}

/// The VPC name a subnet is made under: derived from its id, so a lost create is found by name.
pub fn provider_name(subnet_id: &str) -> String {
    format!("bc-{}", subnet_id.replace('_', "-"))
}

pub struct NetworkPage {
    pub networks: Vec<NetworkView>,
    /// The last network read, even one the caller may not see.
    pub end_cursor: Option<String>,
    pub has_next_page: bool,
}

impl Services {
    pub async fn network_create(&self, actor: &Actor, input: NetworkCreate) -> Result<NetworkView> {
        check_create(&input)?;
        let id = ids::new_id(ids::NETWORK);
        actor.decide(UPDATE, &Target::resource(&input.tenant_id, input.project_id.as_deref(), KIND, &id))?;
        if input.subnets.is_empty() || input.subnets.len() > MAX_SUBNETS {
            return Err(Error::invalid_input("subnets", format!("a network has 1 to {MAX_SUBNETS} subnets")));
        }
        let txn = self.begin().await?;
        let pool = offered_pool(&txn, &input.tenant_id, &input.pool_id).await?;
        if !provider::supports_networks(&pool.account.kind) {
            return Err(unsupported("networks", &pool.account.kind));
        }
        super::rows::check_project(&txn, &input.tenant_id, input.project_id.as_deref()).await?;
        let regions = super::pools::strings(&pool.account.regions);
        check_subnets(&input.subnets, &[], &regions)?;
        let key =
            idempotency::Key { tenant_id: &input.tenant_id, operation: "networkCreate", key: &input.idempotency_key };
        if let Claim::Existing(existing) =
            idempotency::claim(&txn, &key, &idempotency::request_hash(&input), &id).await?
        {
            drop(txn);
            return self.network_load(&self.db, &input.tenant_id, &existing).await;
        }
        let taken = network::Entity::find()
            .filter(network::Column::TenantId.eq(input.tenant_id.clone()))
            .filter(network::Column::Name.eq(input.name.clone()))
            .filter(network::Column::State.ne(state::DELETED))
            .one(&txn)
            .await?;
        if taken.is_some() {
            return Err(Error::conflict(format!("a network named {} exists in the tenant", input.name))
                .with_details(json!({ "field": "name" })));
        }
        let now = self.clock.now();
        let created = network::ActiveModel {
            id: Set(id.clone()),
            tenant_id: Set(input.tenant_id.clone()),
            project_id: Set(input.project_id.clone()),
            pool_id: Set(input.pool_id.clone()),
            provider_account_id: Set(pool.account.id.clone()),
            name: Set(input.name.clone()),
            description: Set(input.description.clone()),
            state: Set(state::PENDING.into()),
            desired_state: Set(state::PRESENT.into()),
            message: Set(None),
            version: Set(1),
            generation: Set(1),
            created_at: Set(now),
            updated_at: Set(now),
            ready_at: Set(None),
            deleted_at: Set(None),
        }
        .insert(&txn)
        .await
        .map_err(|err| match crate::store::is_unique_violation(&err) {
            true => name_taken(&input.name),
            false => err.into(),
        })?;
        let mut subnets = Vec::new();
        for subnet in &input.subnets {
            subnets.push(insert_subnet(&txn, &id, subnet, now).await?);
        }
        let view = view(&created, &subnets);
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
        if current.desired_state == state::ABSENT {
            return Err(being_deleted(network_id));
        }
        let pool = find_pool(&txn, &current.pool_id).await?;
        check_subnets(std::slice::from_ref(&subnet), &subnets, &super::pools::strings(&pool.account.regions))?;
        let now = self.clock.now();
        let added = insert_subnet(&txn, network_id, &subnet, now).await?;
        let updated =
            bump(&txn, current, |u| u.col_expr(network::Column::State, Expr::value(state::PENDING)), now).await?;
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
        if subnets[position].desired_state == state::ABSENT {
            drop(txn);
            return self.network_load(&self.db, tenant_id, network_id).await;
        }
        if current.desired_state == state::ABSENT {
            return Err(being_deleted(network_id));
        }
        if subnets.iter().filter(|s| s.desired_state == state::PRESENT).count() == 1 {
            return Err(Error::invalid_input(
                "subnetId",
                "a network keeps at least one subnet: delete the network instead",
            ));
        }
        refuse_if_used(&txn, network_id, Some(&subnets[position].region)).await?;
        let now = self.clock.now();
        subnets[position] = mark_removed(&txn, &subnets[position], now).await?;
        let updated = bump(&txn, current, |u| u, now).await?;
        let view = view(&updated, &subnets);
        queue::wake(&txn, RECONCILER, network_id, self.clock.now_ms()).await?;
        self.commit_and_wake(txn, vec![event("updated", &view)]).await?;
        Ok(view)
    }

    /// Marks the network and its subnets for deletion; deleting one being deleted returns it.
    pub async fn network_delete(&self, actor: &Actor, tenant_id: &str, network_id: &str) -> Result<NetworkView> {
        let txn = self.begin().await?;
        let (current, subnets) = self.network_for_update(&txn, actor, tenant_id, network_id).await?;
        if current.desired_state == state::ABSENT {
            drop(txn);
            return self.network_load(&self.db, tenant_id, network_id).await;
        }
        refuse_if_used(&txn, network_id, None).await?;
        let now = self.clock.now();
        let mut marked = Vec::new();
        for subnet in subnets {
            marked.push(if subnet.desired_state == state::ABSENT {
                subnet
            } else {
                mark_removed(&txn, &subnet, now).await?
            });
        }
        let updated = bump(
            &txn,
            current,
            |u| {
                u.col_expr(network::Column::DesiredState, Expr::value(state::ABSENT))
                    .col_expr(network::Column::State, Expr::value(state::DELETING))
            },
            now,
        )
        .await?;
        let view = view(&updated, &marked);
        queue::wake(&txn, RECONCILER, network_id, self.clock.now_ms()).await?;
        self.commit_and_wake(txn, vec![event("deleting", &view)]).await?;
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
        filter: super::rows::ListFilter,
    ) -> Result<NetworkPage> {
        actor.decide_list(READ, tenant_id)?;
        let mut rows =
            super::rows::list_query::<network::Entity>(tenant_id, &filter, ids::NETWORK)?.all(&self.db).await?;
        let has_next_page = rows.len() as u64 > filter.first;
        rows.truncate(filter.first as usize);
        let end_cursor = rows.last().map(|n| n.id.clone());
        let readable: Vec<network::Model> = rows
            .into_iter()
            .filter(|n| actor.allows(READ, &Target::resource(tenant_id, n.project_id.as_deref(), KIND, &n.id)))
            .collect();
        let ids: Vec<String> = readable.iter().map(|n| n.id.clone()).collect();
        let subnets = network_subnet::Entity::find()
            .filter(network_subnet::Column::NetworkId.is_in(ids))
            .order_by_asc(network_subnet::Column::Id)
            .all(&self.db)
            .await?;
        let mut by_network: HashMap<&str, Vec<network_subnet::Model>> = HashMap::new();
        for subnet in &subnets {
            by_network.entry(subnet.network_id.as_str()).or_default().push(subnet.clone());
        }
        let networks =
            readable.iter().map(|n| view(n, by_network.get(n.id.as_str()).map(Vec::as_slice).unwrap_or(&[]))).collect();
        Ok(NetworkPage { networks, end_cursor, has_next_page })
    }

    /// Checks the caller may watch the network; the subscription then follows its events.
    pub async fn network_watch(&self, actor: &Actor, tenant_id: &str, network_id: &str) -> Result<super::feed::Filter> {
        let view = self.network_get(actor, tenant_id, network_id).await?;
        Ok(super::feed::Filter::resource(actor, view.tenant_id, "network.*", view.id))
    }

    pub(crate) async fn network_load(
        &self,
        conn: &impl ConnectionTrait,
        tenant_id: &str,
        network_id: &str,
    ) -> Result<NetworkView> {
        let found = network::Entity::find_by_id(network_id.to_owned())
            .filter(network::Column::TenantId.eq(tenant_id))
            .one(conn)
            .await?
            .ok_or_else(|| Error::not_found(KIND, network_id))?;
        let subnets = subnets_of(conn, network_id).await?;
        Ok(view(&found, &subnets))
    }

    /// The network and its subnets for a change, after deciding `compute:networks:update`.
    async fn network_for_update(
        &self,
        conn: &impl ConnectionTrait,
        actor: &Actor,
        tenant_id: &str,
        network_id: &str,
    ) -> Result<(network::Model, Vec<network_subnet::Model>)> {
        validate::tenant_id("tenantId", tenant_id)?;
        validate::id("networkId", ids::NETWORK, network_id)?;
        // The network's row lock first (PostgreSQL): changes of one network take turns, and take
        // their locks in the reconciler's order (network, subnets, work item).
        let mut query =
            network::Entity::find_by_id(network_id.to_owned()).filter(network::Column::TenantId.eq(tenant_id));
        if conn.get_database_backend() == sea_orm::DbBackend::Postgres {
            query = query.lock_exclusive();
        }
        let found = query.one(conn).await?.ok_or_else(|| Error::not_found(KIND, network_id))?;
        actor.decide(UPDATE, &Target::resource(tenant_id, found.project_id.as_deref(), KIND, network_id))?;
        if found.state == state::DELETED {
            return Err(Error::not_found(KIND, network_id));
        }
        let subnets = subnets_of(conn, network_id).await?;
        Ok((found, subnets))
    }
}

pub(crate) async fn subnets_of(conn: &impl ConnectionTrait, network_id: &str) -> Result<Vec<network_subnet::Model>> {
    Ok(network_subnet::Entity::find()
        .filter(network_subnet::Column::NetworkId.eq(network_id))
        .order_by_asc(network_subnet::Column::Id)
        .all(conn)
        .await?)
}

/// The input rules of `networkCreate` that need no database.
fn check_create(input: &NetworkCreate) -> Result<()> {
    validate::tenant_id("tenantId", &input.tenant_id)?;
    validate::id("poolId", ids::POOL, &input.pool_id)?;
    if let Some(project_id) = &input.project_id {
        validate::id("projectId", ids::PROJECT, project_id)?;
    }
    validate::name("name", &input.name)?;
    if let Some(description) = &input.description {
        validate::max_len("description", description, 256)?;
    }
    validate::idempotency_key(&input.idempotency_key)
}

/// Checks new subnets against the account's regions and the network's live subnets.
fn check_subnets(new: &[SubnetInput], existing: &[network_subnet::Model], regions: &[String]) -> Result<()> {
    let mut taken: Vec<(String, (u32, u8))> = existing
        .iter()
        .filter(|s| s.desired_state == state::PRESENT)
        .filter_map(|s| crate::cidr::parse_private(&s.ip_range).map(|r| (s.region.clone(), r)))
        .collect();
    for subnet in new {
        validate::region("subnets.region", &subnet.region)?;
        if !regions.contains(&subnet.region) {
            return Err(Error::invalid_input(
                "subnets.region",
                format!("the pool's account does not use region {}", subnet.region),
            )
            .with_details(json!({ "field": "subnets.region", "regions": regions })));
        }
        let Some(range) = crate::cidr::parse_private(&subnet.ip_range) else {
            return Err(Error::invalid_input(
                "subnets.ipRange",
                format!("{:?} is not a private CIDR block from /16 to /28", subnet.ip_range),
            ));
        };
        if taken.iter().any(|(region, _)| *region == subnet.region) {
            return Err(Error::invalid_input(
                "subnets.region",
                format!("the network has a subnet in {} already", subnet.region),
            ));
        }
        if taken.iter().any(|(_, other)| crate::cidr::overlaps(*other, range)) {
            return Err(Error::invalid_input(
                "subnets.ipRange",
                format!("{} overlaps another subnet of the network", subnet.ip_range),
            ));
        }
        taken.push((subnet.region.clone(), range));
    }
    Ok(())
}

/// The resources that keep a network (or its subnet in `region`) from being removed: shared
/// volumes that are not deleted (`volumeIds`); filesystems register here as they arrive.
async fn refuse_if_used(conn: &impl ConnectionTrait, network_id: &str, region: Option<&str>) -> Result<()> {
    use crate::store::entity::provider_volume as volume;
    let mut query = volume::Entity::find()
        .filter(volume::Column::NetworkId.eq(network_id))
        .filter(volume::Column::State.ne(state::DELETED));
    if let Some(region) = region {
        query = query.filter(volume::Column::Region.eq(region));
    }
    let users: Vec<String> =
        query.order_by_asc(volume::Column::Id).all(conn).await?.into_iter().map(|v| v.id).collect();
    if users.is_empty() {
        return Ok(());
    }
    Err(Error::new(Code::InvalidState, "shared volumes are on the network: delete them first")
        .with_details(json!({ "reason": "inUse", "volumeIds": users })))
}

/// A pool whose provider lacks a capability: refused before anything is recorded.
pub(crate) fn unsupported(capability: &str, kind: &str) -> Error {
    Error::new(Code::Unsupported, format!("a {kind} pool offers no {capability}"))
        .with_details(json!({ "reason": capability }))
}

fn name_taken(name: &str) -> Error {
    Error::conflict(format!("a network named {name} exists in the tenant")).with_details(json!({ "field": "name" }))
}

fn being_deleted(network_id: &str) -> Error {
    Error::new(Code::InvalidState, format!("network {network_id} is being deleted"))
        .with_details(json!({ "reason": "deleting" }))
}

async fn insert_subnet(
    conn: &impl ConnectionTrait,
    network_id: &str,
    subnet: &SubnetInput,
    now: DateTime<Utc>,
) -> Result<network_subnet::Model> {
    let id = ids::new_id(ids::SUBNET);
    Ok(network_subnet::ActiveModel {
        id: Set(id.clone()),
        network_id: Set(network_id.to_owned()),
        region: Set(subnet.region.clone()),
        ip_range: Set(subnet.ip_range.clone()),
        state: Set(state::PENDING.into()),
        desired_state: Set(state::PRESENT.into()),
        provider_id: Set(None),
        provider_name: Set(provider_name(&id)),
        create_attempts: Set(0),
        lost: Set(false),
        message: Set(None),
        version: Set(1),
        created_at: Set(now),
        updated_at: Set(now),
        ready_at: Set(None),
        deleted_at: Set(None),
    }
    .insert(conn)
    .await?)
}

/// Writes a change of the network row with its version and generation bumped in SQL.
async fn bump(
    conn: &impl ConnectionTrait,
    current: network::Model,
    change: impl FnOnce(UpdateMany<network::Entity>) -> UpdateMany<network::Entity>,
    now: DateTime<Utc>,
) -> Result<network::Model> {
    let update = network::Entity::update_many()
        .col_expr(network::Column::Version, Expr::col(network::Column::Version).add(1))
        .col_expr(network::Column::Generation, Expr::col(network::Column::Generation).add(1))
        .col_expr(network::Column::UpdatedAt, Expr::value(now))
        .filter(network::Column::Id.eq(current.id.clone()));
    change(update).exec(conn).await?;
    network::Entity::find_by_id(current.id.clone()).one(conn).await?.ok_or_else(|| Error::internal("network vanished"))
}

/// Marks a subnet for removal (its VPC is deleted by the reconciler).
async fn mark_removed(
    conn: &impl ConnectionTrait,
    subnet: &network_subnet::Model,
    now: DateTime<Utc>,
) -> Result<network_subnet::Model> {
    network_subnet::Entity::update_many()
        .col_expr(network_subnet::Column::DesiredState, Expr::value(state::ABSENT))
        .col_expr(network_subnet::Column::State, Expr::value(state::DELETING))
        .col_expr(network_subnet::Column::Version, Expr::col(network_subnet::Column::Version).add(1))
        .col_expr(network_subnet::Column::UpdatedAt, Expr::value(now))
        .filter(network_subnet::Column::Id.eq(subnet.id.clone()))
        .exec(conn)
        .await?;
    network_subnet::Entity::find_by_id(subnet.id.clone())
        .one(conn)
        .await?
        .ok_or_else(|| Error::internal("subnet vanished"))
}
