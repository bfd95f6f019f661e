use sea_orm::entity::prelude::*;

use crate::store::state::Billing;

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "pools")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: String,
    pub name: String,
    pub provider_account_id: String,
    pub billing: Billing,
    /// The machine sizes and images the pool offers (JSON arrays of strings); empty: any.
    pub sizes: Json,
    pub images: Json,
    /// The rate card (`store::pools::RateCard`), once an operator set one.
    pub rates: Option<Json>,
    pub version: i64,
    pub created_at: DateTimeUtc,
    pub updated_at: DateTimeUtc,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
