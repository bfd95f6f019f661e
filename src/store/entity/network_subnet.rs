use sea_orm::entity::prelude::*;

use crate::store::state::{Desired, State};

/// One subnet of a network: on DigitalOcean, one VPC named `provider_name`; on AWS, one EC2
/// subnet of the network's VPC in `zone` (tagged `Name=provider_name`), in the network's region. `create_attempts`
/// counts creates whose outcome may have reached the provider, so a lost answer is looked up by
/// name instead of created again; `lost` marks a VPC deleted outside, never made again.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "network_subnets")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: String,
    pub network_id: String,
    pub region: String,
    pub ip_range: String,
    pub state: State,
    pub desired_state: Desired,
    pub provider_id: Option<String>,
    pub provider_name: String,
    pub create_attempts: i32,
    pub lost: bool,
    pub message: Option<String>,
    pub version: i64,
    /// Bumped by each user change of what is asked; see `store::status`.
    pub generation: i64,
    pub created_at: DateTimeUtc,
    pub updated_at: DateTimeUtc,
    pub ready_at: Option<DateTimeUtc>,
    pub deleted_at: Option<DateTimeUtc>,
    pub zone: Option<String>,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
