//! The snapshot schedule a client reads, and its `snapshotSchedule.*` events.
use async_graphql::SimpleObject;
use chrono::{DateTime, Utc};
use serde::Serialize;

use crate::store::entity::snapshot_schedule as schedule;
use crate::store::outbox::{NewEvent, Payload};
use crate::store::state::ScheduleState;

pub const KIND: &str = "snapshot-schedule";

/// Snapshots of a volume, or of every volume of a project, taken on a schedule and kept by count
/// and/or age.
#[derive(Clone, Debug, Serialize, SimpleObject)]
#[serde(rename_all = "camelCase")]
pub struct ScheduleView {
    #[graphql(skip)]
    pub id: String,
    pub tenant_id: String,
    /// The project whose volumes it covers, or the volume's project.
    pub project_id: Option<String>,
    /// The one volume it covers; null for every volume of the project.
    pub volume_id: Option<String>,
    pub name: String,
    /// A snapshot every this many hours, on the hours that divide evenly since 1970 (UTC).
    pub every_hours: Option<i32>,
    /// A snapshot every day at this UTC time, `HH:MM`.
    pub daily_at: Option<String>,
    /// Of a volume's snapshots, the newest this many are kept (its manual ones counted).
    pub keep_last: Option<i32>,
    /// Snapshots older than this many hours are deleted.
    pub max_age_hours: Option<i32>,
    /// Whether retention deletes snapshots taken by calls too, not only its own.
    pub prune_manual: bool,
    pub state: ScheduleState,
    /// When its next slot is.
    pub next_run_at: DateTime<Utc>,
    /// The last slot it took (one missed while the service was down is taken once, late).
    pub last_slot_at: Option<DateTime<Utc>>,
    pub last_run_at: Option<DateTime<Utc>>,
    /// What its last run did: the snapshots it took and deleted.
    pub last_outcome: Option<String>,
    /// Why its last run took or deleted less than it should have, if it did.
    pub last_error: Option<String>,
    pub version: i64,
    pub created_at: DateTime<Utc>,
    pub deleted_at: Option<DateTime<Utc>>,
}

pub fn view(s: &schedule::Model) -> ScheduleView {
    ScheduleView {
        id: s.id.clone(),
        tenant_id: s.tenant_id.clone(),
        project_id: s.project_id.clone(),
        volume_id: s.volume_id.clone(),
        name: s.name.clone(),
        every_hours: s.every_hours,
        daily_at: s.daily_at_minute.map(|m| format!("{:02}:{:02}", m / 60, m % 60)),
        keep_last: s.keep_last,
        max_age_hours: s.max_age_hours,
        prune_manual: s.prune_manual,
        state: s.state,
        next_run_at: s.next_run_at,
        last_slot_at: s.last_slot_at,
        last_run_at: s.last_run_at,
        last_outcome: s.last_outcome.clone(),
        last_error: s.last_error.clone(),
        version: s.version,
        created_at: s.created_at,
        deleted_at: s.deleted_at,
    }
}

/// The `snapshotSchedule.*` event of a change to `s`: `created`, `deleted`, or `ran`.
pub fn event(event_type: &str, s: &schedule::Model) -> NewEvent {
    NewEvent {
        event_type: format!("snapshotSchedule.{event_type}"),
        subject_kind: KIND,
        subject: s.id.clone(),
        tenant_id: Some(s.tenant_id.clone()),
        project_id: s.project_id.clone(),
        version: s.version,
        data: Payload::of(&view(s)),
    }
}
