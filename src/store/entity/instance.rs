use sea_orm::entity::prelude::*;

use crate::store::state::{Desired, OnDelete, State};

/// A machine at the provider (a DigitalOcean Droplet), as far as volumes need one. `provider_id`
/// is the Droplet's id once made; `create_attempts` counts creates whose answer may be lost (the
/// Droplet is then looked up by `provider_name`); `lost` marks one deleted outside.
#[derive(Clone, Debug, Default, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "instances")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: String,
    pub tenant_id: String,
    pub project_id: Option<String>,
    pub pool_id: String,
    pub provider_account_id: String,
    pub network_id: Option<String>,
    pub name: String,
    pub region: String,
    pub size: String,
    pub image: String,
    /// What its delete does to the machine: `delete` it, or `detach` (leave it running and only
    /// let its volumes and addresses go).
    pub on_delete: OnDelete,
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
    /// AWS: the zone of the network's subnet the machine runs in.
    pub zone: Option<String>,
    /// The tenant's own part of the user data (the mounts are rendered before it).
    pub user_data: Option<String>,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
