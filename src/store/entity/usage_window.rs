use sea_orm::entity::prelude::*;

/// One closed UTC hour `[window_start, window_end)` of one resource on one meter, written once
/// by the `vps.ancillary-usage` pass (unique on resource_id, meter, window_start). `quantity`
/// is the GiB (or 1 for an address) the hour bills; `source_kind` volume, snapshot or address.
#[derive(Clone, Debug, PartialEq, DeriveEntityModel)]
#[sea_orm(table_name = "usage_windows")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: String,
    pub tenant_id: String,
    pub project_id: Option<String>,
    pub pool_id: String,
    pub source_kind: String,
    pub resource_id: String,
    pub meter: String,
    pub window_start: DateTimeUtc,
    pub window_end: DateTimeUtc,
    pub quantity: f64,
    pub created_at: DateTimeUtc,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
