use sea_orm::entity::prelude::*;

use crate::store::state::{Desired, State, VolumeFilesystem, VolumeKind};

/// A provider volume: `kind` block (a DigitalOcean volume) or shared (an NFS share on
/// `network_id`). `size_gib` is what the tenant asked (and what diskGiB holds);
/// `observed_size_gib` what the provider last showed. `action_id` is a provider action in flight
/// (a resize), looked at again until it is done; `source_snapshot_id` makes it a restore.
#[derive(Clone, Debug, Default, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "provider_volumes")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: String,
    pub tenant_id: String,
    pub project_id: Option<String>,
    pub pool_id: String,
    pub provider_account_id: String,
    pub name: String,
    pub description: Option<String>,
    pub region: String,
    pub kind: VolumeKind,
    pub network_id: Option<String>,
    pub filesystem: Option<VolumeFilesystem>,
    pub delete_with_instance: bool,
    pub source_snapshot_id: Option<String>,
    /// A restore that named no size: it takes the snapshot's size as the provider reports it.
    pub size_from_snapshot: bool,
    pub size_gib: i64,
    pub observed_size_gib: Option<i64>,
    pub state: State,
    pub desired_state: Desired,
    pub provider_id: Option<String>,
    pub provider_name: String,
    pub device: Option<String>,
    pub mount_source: Option<String>,
    pub create_attempts: i32,
    pub lost: bool,
    pub action_id: Option<String>,
    pub message: Option<String>,
    /// A delete is refused while it is set.
    pub deletion_protection: bool,
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
