use sea_orm::entity::prelude::*;

use crate::store::state::ProviderKind;

/// `credential_ref` names where the secret lives (`env:NAME` or `file:PATH`); the secret itself
/// is never stored and the reference is never returned by the API.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "provider_accounts")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: String,
    pub tenant_id: Option<String>,
    pub name: String,
    pub kind: ProviderKind,
    pub api_url: String,
    pub credential_ref: String,
    pub regions: Json,
    pub zones: Json,
    pub sim: bool,
    pub version: i64,
    pub created_at: DateTimeUtc,
    pub updated_at: DateTimeUtc,
    /// When its last whole inventory pass began (`reconcile::inventory`).
    pub listed_at: Option<DateTimeUtc>,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
