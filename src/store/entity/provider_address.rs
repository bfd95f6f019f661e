use sea_orm::entity::prelude::*;

use crate::store::state::{AddressFamily, Assignment, Desired, State};

/// A reserved public address (a DigitalOcean reserved IPv4 or IPv6). A reserved IP has no name
/// or tag at the provider, so this row is the ownership record: `address` is the IP it holds
/// (at most one live row per account records one), `fingerprint` what tells that reservation
/// apart where the provider has one (a reserved IPv6's reservation time). `reserve_attempts`
/// counts reserves sent; one whose answer was lost is never sent again. `lost` marks an address
/// released outside: never called for again.
///
/// The assignment: `instance_id` is the instance it is wanted on; `assignment_state` none,
/// pending, ready, deleting (an unassign running) or error, with `assignment_message`;
/// `action_id` the provider action in flight.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "provider_addresses")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: String,
    pub tenant_id: String,
    pub project_id: Option<String>,
    pub pool_id: String,
    pub provider_account_id: String,
    pub name: String,
    pub region: String,
    pub family: AddressFamily,
    pub state: State,
    pub desired_state: Desired,
    pub address: Option<String>,
    pub fingerprint: Option<String>,
    pub reserve_attempts: i32,
    pub lost: bool,
    pub message: Option<String>,
    pub instance_id: Option<String>,
    pub assignment_state: Assignment,
    pub assignment_message: Option<String>,
    pub action_id: Option<String>,
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
