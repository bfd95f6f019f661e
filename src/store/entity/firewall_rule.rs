use sea_orm::entity::prelude::*;

use crate::store::state::{Desired, Direction, Protocol, RuleAction, State};

/// A firewall rule of a tenant network: traffic of `protocol` (on ports `from_port`..=`to_port`,
/// none: all; ICMP has none) allowed `direction` between the instances it `applies_to` (a JSON
/// array of instance ids; empty: every instance on the network) and its peers, `addresses`
/// (CIDRs) and `peer_instance_ids`. The networks reconciler applies it as a provider firewall or
/// security group named `provider_name` (`provider_id` once made; `create_attempts` counts
/// creates whose answer may be lost); `lost` marks one deleted outside vps-graph.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "firewall_rules")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: String,
    pub tenant_id: String,
    pub project_id: Option<String>,
    pub network_id: String,
    pub pool_id: String,
    pub provider_account_id: String,
    pub name: String,
    pub direction: Direction,
    pub action: RuleAction,
    pub protocol: Protocol,
    pub from_port: Option<i32>,
    pub to_port: Option<i32>,
    pub addresses: Json,
    pub peer_instance_ids: Json,
    pub applies_to: Json,
    pub state: State,
    pub desired_state: Desired,
    pub message: Option<String>,
    pub provider_name: String,
    pub provider_id: Option<String>,
    pub create_attempts: i32,
    pub lost: bool,
    pub version: i64,
    /// Bumped by each user change of what is asked; see `store::status`.
    pub generation: i64,
    pub created_at: DateTimeUtc,
    pub updated_at: DateTimeUtc,
    pub ready_at: Option<DateTimeUtc>,
    pub deleted_at: Option<DateTimeUtc>,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
