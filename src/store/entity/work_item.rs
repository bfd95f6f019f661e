use sea_orm::entity::prelude::*;

/// One slot per `(kind, resource_id)` in the reconcile queue; due times are milliseconds on the
/// service clock so tests can drive them, lease times on the database's.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "work_items")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub kind: String,
    #[sea_orm(primary_key, auto_increment = false)]
    pub resource_id: String,
    pub due_at: i64,
    pub lease_owner: Option<String>,
    pub lease_until: Option<i64>,
    pub lease_epoch: i64,
    pub run_again: bool,
    pub attempts: i32,
    pub last_error: Option<String>,
    /// State-changing provider calls its runs sent, each recorded before it was sent.
    pub provider_calls: i64,
    /// What it is due for: `asked`, `following` or `drift` (`provider::fence::Purpose`).
    pub due_for: String,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
