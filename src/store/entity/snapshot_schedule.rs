use sea_orm::entity::prelude::*;

use crate::store::state::ScheduleState;

/// A snapshot schedule: of one volume (`volume_id`) or of every volume of a project
/// (`project_id` without `volume_id`); every `every_hours` hours or daily at `daily_at_minute`
/// (minutes past midnight UTC); keeping the newest `keep_last` and/or those younger than
/// `max_age_hours`. `last_slot_at` is the last slot it took, so a slot is taken once.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "snapshot_schedules")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: String,
    pub tenant_id: String,
    pub project_id: Option<String>,
    pub volume_id: Option<String>,
    pub name: String,
    pub every_hours: Option<i32>,
    pub daily_at_minute: Option<i32>,
    pub keep_last: Option<i32>,
    pub max_age_hours: Option<i32>,
    pub prune_manual: bool,
    pub state: ScheduleState,
    pub next_run_at: DateTimeUtc,
    pub last_slot_at: Option<DateTimeUtc>,
    pub last_run_at: Option<DateTimeUtc>,
    pub last_outcome: Option<String>,
    pub last_error: Option<String>,
    pub version: i64,
    pub created_at: DateTimeUtc,
    pub updated_at: DateTimeUtc,
    pub deleted_at: Option<DateTimeUtc>,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
