use sea_orm::entity::prelude::*;

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
    pub state: String,
    pub desired_state: String,
    pub message: Option<String>,
    pub version: i64,
    pub generation: i64,
    pub created_at: DateTimeUtc,
    pub updated_at: DateTimeUtc,
    pub ready_at: Option<DateTimeUtc>,
    pub deleted_at: Option<DateTimeUtc>,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
