use sea_orm::entity::prelude::*;

use crate::store::state::{Deployment, Desired, FilesystemKind, State};

/// A shared filesystem on a tenant network: `kind` `nfs` (EFS, a mount target in each zone of
/// the network) or `lustre` (FSx for Lustre in `zone`). The reconciler makes its security group
/// first (`security_group_id`, `group_attempts` counting creates whose answer may be lost), then
/// the filesystem (`provider_id`, `create_attempts`); `provider_name` (`bc-` and the id) is its
/// creation token and `Name` tag. `dns_name` and `mount_name` say how to mount it once ready.
/// `lost` marks one gone at the provider outside vps-graph (never made again).
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "filesystems")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: String,
    pub tenant_id: String,
    pub project_id: Option<String>,
    pub network_id: String,
    pub pool_id: String,
    pub provider_account_id: String,
    pub name: String,
    pub kind: FilesystemKind,
    pub size_gib: Option<i64>,
    pub deployment: Option<Deployment>,
    pub zone: Option<String>,
    pub region: String,
    pub state: State,
    pub desired_state: Desired,
    pub message: Option<String>,
    pub provider_name: String,
    pub security_group_id: Option<String>,
    pub group_attempts: i32,
    pub provider_id: Option<String>,
    pub create_attempts: i32,
    pub dns_name: Option<String>,
    pub mount_name: Option<String>,
    pub lost: bool,
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
