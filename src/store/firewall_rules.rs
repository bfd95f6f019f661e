//! Firewall rule rows: the reads, the insert and the delete of the firewall rule calls, and the
//! reads of the networks reconciler that applies them.
use chrono::{DateTime, Utc};
use sea_orm::{ActiveModelTrait, ColumnTrait, ConnectionTrait, EntityTrait, QueryFilter, QueryOrder, Set};
use serde_json::json;

use super::change::UserChange;
use super::entity::firewall_rule;
use crate::error::{Error, Result};
use crate::store::state::{Desired, Direction, Protocol, RuleAction, State};

/// The network's rules that are not deleted, by name.
pub async fn live_of(conn: &impl ConnectionTrait, network_id: &str) -> Result<Vec<firewall_rule::Model>> {
    Ok(firewall_rule::Entity::find()
        .filter(firewall_rule::Column::NetworkId.eq(network_id))
        .filter(firewall_rule::Column::State.ne(State::Deleted))
        .order_by_asc(firewall_rule::Column::Name)
        .all(conn)
        .await?)
}

/// The rule, if it is the tenant's and on the network (whatever its state).
pub async fn find_on_network(
    conn: &impl ConnectionTrait,
    tenant_id: &str,
    network_id: &str,
    rule_id: &str,
) -> Result<Option<firewall_rule::Model>> {
    Ok(firewall_rule::Entity::find_by_id(rule_id.to_owned())
        .filter(firewall_rule::Column::TenantId.eq(tenant_id))
        .filter(firewall_rule::Column::NetworkId.eq(network_id))
        .one(conn)
        .await?)
}

/// The strings of a JSON array column (an id list, an address list).
pub fn strings(json: &serde_json::Value) -> Vec<String> {
    json.as_array().map(|a| a.iter().filter_map(|v| v.as_str().map(str::to_owned)).collect()).unwrap_or_default()
}

/// What a new rule row holds besides what every new row starts with; its project, pool and
/// account are its network's.
pub struct NewFirewallRule<'a> {
    pub id: &'a str,
    pub tenant_id: &'a str,
    pub project_id: Option<&'a str>,
    pub network_id: &'a str,
    pub pool_id: &'a str,
    pub provider_account_id: &'a str,
    pub name: &'a str,
    pub direction: Direction,
    pub action: RuleAction,
    pub protocol: Protocol,
    pub ports: Option<(i32, i32)>,
    pub addresses: Vec<String>,
    pub peer_instance_ids: Vec<String>,
    pub applies_to: Vec<String>,
    pub provider_name: String,
}

/// Inserts the rule, pending; a name taken on the network is CONFLICT.
pub async fn insert(
    conn: &impl ConnectionTrait,
    new: NewFirewallRule<'_>,
    now: DateTime<Utc>,
) -> Result<firewall_rule::Model> {
    firewall_rule::ActiveModel {
        id: Set(new.id.to_owned()),
        tenant_id: Set(new.tenant_id.to_owned()),
        project_id: Set(new.project_id.map(str::to_owned)),
        network_id: Set(new.network_id.to_owned()),
        pool_id: Set(new.pool_id.to_owned()),
        provider_account_id: Set(new.provider_account_id.to_owned()),
        name: Set(new.name.to_owned()),
        direction: Set(new.direction),
        action: Set(new.action),
        protocol: Set(new.protocol),
        from_port: Set(new.ports.map(|p| p.0)),
        to_port: Set(new.ports.map(|p| p.1)),
        addresses: Set(json!(new.addresses)),
        peer_instance_ids: Set(json!(new.peer_instance_ids)),
        applies_to: Set(json!(new.applies_to)),
        state: Set(State::Pending),
        desired_state: Set(Desired::Present),
        message: Set(None),
        provider_name: Set(new.provider_name),
        provider_id: Set(None),
        create_attempts: Set(0),
        lost: Set(false),
        version: Set(1),
        generation: Set(1),
        created_at: Set(now),
        updated_at: Set(now),
        ready_at: Set(None),
        deleted_at: Set(None),
    }
    .insert(conn)
    .await
    .map_err(|err| match super::is_unique_violation(&err) {
        true => name_taken(new.name),
        false => err.into(),
    })
}

/// CONFLICT: the network has a rule (not deleted) of that name.
pub fn name_taken(name: &str) -> Error {
    Error::conflict(format!("a firewall rule named {name} exists on the network"))
        .with_details(json!({ "field": "name" }))
}

/// Marks the rule for deletion (deleting, no longer wanted), its version and generation bumped;
/// returns the row written.
pub async fn mark_deleting(
    conn: &impl ConnectionTrait,
    rule_id: &str,
    now: DateTime<Utc>,
) -> Result<firewall_rule::Model> {
    UserChange::of(rule_id).deleting().write::<firewall_rule::Entity>(conn, now).await
}
