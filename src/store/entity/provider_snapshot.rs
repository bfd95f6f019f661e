use sea_orm::entity::prelude::*;

use crate::store::state::{Desired, State, VolumeKind};

/// A snapshot of a provider volume; it outlives the volume. `size_gib` is the billable size the
/// provider reports; `min_disk_size` the smallest volume a restore makes.
#[derive(Clone, Debug, Default, PartialEq, DeriveEntityModel)]
#[sea_orm(table_name = "provider_snapshots")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: String,
    pub tenant_id: String,
    pub project_id: Option<String>,
    pub pool_id: String,
    pub provider_account_id: String,
    pub volume_id: String,
    pub volume_kind: VolumeKind,
    pub region: String,
    pub name: String,
    pub state: State,
    pub desired_state: Desired,
    pub provider_id: Option<String>,
    pub provider_name: String,
    pub size_gib: Option<f64>,
    pub min_disk_size: i64,
    pub create_attempts: i32,
    pub lost: bool,
    pub message: Option<String>,
    /// A delete is refused while it is set.
    pub deletion_protection: bool,
    /// The schedule that took it; None for one taken by a call.
    pub schedule_id: Option<String>,
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
