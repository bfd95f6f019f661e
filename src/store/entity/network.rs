use sea_orm::entity::prelude::*;

use crate::store::state::{Desired, State};

/// A tenant network. `desired_state` is what the tenant asked (`present` or `absent`); `state` what
/// the reconciler last saw (`pending`, `ready`, `deleting`, `deleted`, `error`).
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "networks")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: String,
    pub tenant_id: String,
    pub project_id: Option<String>,
    pub pool_id: String,
    pub provider_account_id: String,
    pub name: String,
    pub description: Option<String>,
    pub state: State,
    pub desired_state: Desired,
    pub message: Option<String>,
    pub version: i64,
    /// Bumped by each user change of what is asked; see `store::status`.
    pub generation: i64,
    pub created_at: DateTimeUtc,
    pub updated_at: DateTimeUtc,
    pub ready_at: Option<DateTimeUtc>,
    pub deleted_at: Option<DateTimeUtc>,
    /// AWS: the VPC's region and CIDR block, and its id once made (DigitalOcean keeps one VPC
    /// per subnet, on the subnet rows, and leaves these empty).
    pub region: Option<String>,
    pub ip_range: Option<String>,
    pub provider_id: Option<String>,
    /// VPC creates whose answer may be lost (the VPC is then looked up by its `Name` tag).
    pub create_attempts: i32,
    /// The VPC was deleted outside vps-graph: never made again.
    pub lost: bool,
    /// Recorded from an existing VPC (`networkAdopt`): read only, never created or deleted.
    pub adopted: bool,
    /// The firewall (DigitalOcean) or security group (AWS) that lets the network's ruled
    /// machines send anything while no outbound rule applies to them, once made; its creates
    /// whose answer may be lost (it is then looked up by name).
    pub egress_provider_id: Option<String>,
    pub egress_attempts: i32,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
