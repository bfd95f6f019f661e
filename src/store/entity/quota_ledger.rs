use sea_orm::entity::prelude::*;

/// What one resource holds of one quota: booking and refund set `amount`, so replaying either
/// changes nothing.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "quota_ledger")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub resource_id: String,
    #[sea_orm(primary_key, auto_increment = false)]
    pub quota_resource: String,
    pub tenant_id: String,
    pub pool_id: String,
    pub amount: i64,
    pub updated_at: DateTimeUtc,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
