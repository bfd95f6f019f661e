use sea_orm::entity::prelude::*;

use crate::store::state::{Desired, State};

/// A volume on an instance: `desired_state` present (attach) or absent (detach); `state` pending,
/// ready, deleting (a detach running), deleted (detached) or error. `action_id` is the provider
/// action in flight.
#[derive(Clone, Debug, Default, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "volume_attachments")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: String,
    pub volume_id: String,
    pub instance_id: String,
    pub state: State,
    pub desired_state: Desired,
    pub action_id: Option<String>,
    pub message: Option<String>,
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
