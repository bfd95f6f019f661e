//! Snapshot schedule rows, and what a schedule's run reads: the volumes it covers and the
//! snapshots it keeps.
use chrono::{DateTime, Utc};
use sea_orm::sea_query::{Expr, ExprTrait};
use sea_orm::{
    ActiveModelTrait, ColumnTrait, ConnectionTrait, EntityTrait, PaginatorTrait, QueryFilter, QueryOrder, Set,
};

use super::entity::{provider_snapshot as snapshot, provider_volume as volume, snapshot_schedule as schedule};
use crate::error::Result;
use crate::store::state::{Desired, ScheduleState, State};

/// The work item kind of the schedules' runs.
pub const RUNNER: &str = "vps.snapshot-schedules";

pub struct NewSchedule<'a> {
    pub id: &'a str,
    pub tenant_id: &'a str,
    pub project_id: Option<&'a str>,
    pub volume_id: Option<&'a str>,
    pub name: &'a str,
    pub every_hours: Option<i32>,
    pub daily_at_minute: Option<i32>,
    pub keep_last: Option<i32>,
    pub max_age_hours: Option<i32>,
    pub prune_manual: bool,
    pub next_run_at: DateTime<Utc>,
}

/// Inserts the schedule, active; a name another active schedule of the tenant has is CONFLICT.
pub async fn insert(conn: &impl ConnectionTrait, new: NewSchedule<'_>, now: DateTime<Utc>) -> Result<schedule::Model> {
    schedule::ActiveModel {
        id: Set(new.id.to_owned()),
        tenant_id: Set(new.tenant_id.to_owned()),
        project_id: Set(new.project_id.map(str::to_owned)),
        volume_id: Set(new.volume_id.map(str::to_owned)),
        name: Set(new.name.to_owned()),
        every_hours: Set(new.every_hours),
        daily_at_minute: Set(new.daily_at_minute),
        keep_last: Set(new.keep_last),
        max_age_hours: Set(new.max_age_hours),
        prune_manual: Set(new.prune_manual),
        state: Set(ScheduleState::Active),
        next_run_at: Set(new.next_run_at),
        last_slot_at: Set(None),
        last_run_at: Set(None),
        last_outcome: Set(None),
        last_error: Set(None),
        version: Set(1),
        created_at: Set(now),
        updated_at: Set(now),
        deleted_at: Set(None),
    }
    .insert(conn)
    .await
    .map_err(super::taken("name", || format!("a schedule named {} exists", new.name)))
}

pub async fn find(conn: &impl ConnectionTrait, schedule_id: &str) -> Result<Option<schedule::Model>> {
    Ok(schedule::Entity::find_by_id(schedule_id.to_owned()).one(conn).await?)
}

/// The tenant's active schedules (of one volume, if named), oldest first.
pub async fn active_of(
    conn: &impl ConnectionTrait,
    tenant_id: &str,
    volume_id: Option<&str>,
) -> Result<Vec<schedule::Model>> {
    let mut query = schedule::Entity::find()
        .filter(schedule::Column::TenantId.eq(tenant_id))
        .filter(schedule::Column::State.eq(ScheduleState::Active));
    if let Some(volume_id) = volume_id {
        query = query.filter(schedule::Column::VolumeId.eq(volume_id));
    }
    Ok(query.order_by_asc(schedule::Column::Id).all(conn).await?)
}

/// How many active schedules the tenant has.
pub async fn active_count(conn: &impl ConnectionTrait, tenant_id: &str) -> Result<u64> {
    Ok(schedule::Entity::find()
        .filter(schedule::Column::TenantId.eq(tenant_id))
        .filter(schedule::Column::State.eq(ScheduleState::Active))
        .count(conn)
        .await?)
}

/// Marks the schedule deleted, with a new version; the row written.
pub async fn mark_deleted(
    conn: &impl ConnectionTrait,
    schedule_id: &str,
    now: DateTime<Utc>,
) -> Result<schedule::Model> {
    update(conn, schedule_id, now, |row| {
        row.state = Set(ScheduleState::Deleted);
        row.deleted_at = Set(Some(now));
    })
    .await
}

/// What a run did: the slot it took, what came of it, and when the next is due.
pub struct Ran {
    /// The slot taken; None when it is to be tried again (its record stays as it was).
    pub slot: Option<DateTime<Utc>>,
    pub outcome: String,
    pub error: Option<String>,
    pub next_run_at: DateTime<Utc>,
}

/// Records a run, with a new version, unless the schedule was deleted meanwhile (None).
pub async fn record_run(
    conn: &impl ConnectionTrait,
    schedule_id: &str,
    ran: Ran,
    now: DateTime<Utc>,
) -> Result<Option<schedule::Model>> {
    let mut update = schedule::Entity::update_many();
    if let Some(slot) = ran.slot {
        update = update.col_expr(schedule::Column::LastSlotAt, Expr::value(Some(slot)));
    }
    let written = update
        .col_expr(schedule::Column::LastRunAt, Expr::value(Some(now)))
        .col_expr(schedule::Column::LastOutcome, Expr::value(Some(ran.outcome)))
        .col_expr(schedule::Column::LastError, Expr::value(ran.error))
        .col_expr(schedule::Column::NextRunAt, Expr::value(ran.next_run_at))
        .col_expr(schedule::Column::Version, Expr::col(schedule::Column::Version).add(1))
        .col_expr(schedule::Column::UpdatedAt, Expr::value(now))
        .filter(schedule::Column::Id.eq(schedule_id))
        .filter(schedule::Column::State.eq(ScheduleState::Active))
        .exec(conn)
        .await?;
    if written.rows_affected == 0 {
        return Ok(None);
    }
    find(conn, schedule_id).await
}

async fn update(
    conn: &impl ConnectionTrait,
    schedule_id: &str,
    now: DateTime<Utc>,
    change: impl FnOnce(&mut schedule::ActiveModel),
) -> Result<schedule::Model> {
    let current = find(conn, schedule_id)
        .await?
        .ok_or_else(|| crate::error::Error::internal(format!("schedule {schedule_id} vanished")))?;
    let version = current.version;
    let mut row: schedule::ActiveModel = current.into();
    change(&mut row);
    row.version = Set(version + 1);
    row.updated_at = Set(now);
    Ok(row.update(conn).await?)
}

/// The volumes of the project a schedule covers: wanted, and not deleted.
pub async fn live_volumes_of_project(
    conn: &impl ConnectionTrait,
    tenant_id: &str,
    project_id: &str,
) -> Result<Vec<volume::Model>> {
    Ok(volume::Entity::find()
        .filter(volume::Column::TenantId.eq(tenant_id))
        .filter(volume::Column::ProjectId.eq(project_id))
        .filter(volume::Column::DesiredState.eq(Desired::Present))
        .filter(volume::Column::State.ne(State::Deleted))
        .order_by_asc(volume::Column::Id)
        .all(conn)
        .await?)
}

/// The volume's snapshots still wanted (not deleted nor being deleted), newest first.
pub async fn kept_snapshots(conn: &impl ConnectionTrait, volume_id: &str) -> Result<Vec<snapshot::Model>> {
    Ok(snapshot::Entity::find()
        .filter(snapshot::Column::VolumeId.eq(volume_id))
        .filter(snapshot::Column::DesiredState.eq(Desired::Present))
        .filter(snapshot::Column::State.ne(State::Deleted))
        .order_by_desc(snapshot::Column::CreatedAt)
        .order_by_desc(snapshot::Column::Id)
        .all(conn)
        .await?)
}
