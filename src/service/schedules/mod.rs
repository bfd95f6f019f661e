//! Snapshot schedules: a volume's snapshots (or those of every volume of a project) taken every
//! N hours or daily at a UTC time, and the oldest beyond a count or an age deleted. A schedule is
//! a caller of this layer like any other: each slot's run (`run.rs`) takes its snapshots through
//! `volume_snapshot`, under an idempotency key made of the schedule, the slot and the volume, so
//! a crash, a second replica or a lost answer never takes one twice. Decided on the volume, or
//! on the project, with `compute:volumes:manage` (`…:read` to read).
mod run;
mod slots;

use serde::Serialize;
use serde_json::json;

use super::rows;
use super::validate;
use super::volumes::{MANAGE, MAX_SNAPSHOTS, READ};
use crate::authz::{Actor, Target};
use crate::error::{Code, Error, Result};
use crate::ids;
use crate::services::Services;
use crate::store::entity::snapshot_schedule::Model as Schedule;
use crate::store::idempotency::{self, Claim};
use crate::store::queue;
use crate::store::schedules::{self as store, NewSchedule, RUNNER};
use crate::store::state::{Desired, ScheduleState, State};
use crate::views::schedules::{KIND, ScheduleView, event, view};
use crate::views::snapshots::KIND as SNAPSHOT_KIND;
use crate::views::volumes::KIND as VOLUME_KIND;
pub use run::ScheduleRunner;
pub use slots::Cadence;
use slots::at;

/// Active schedules a tenant may have.
pub const MAX_SCHEDULES: u64 = 100;
/// The longest gap between slots of an `everyHours` schedule: a week.
pub const MAX_EVERY_HOURS: i32 = 168;
/// The oldest a schedule may keep snapshots: a year.
pub const MAX_AGE_HOURS: i32 = 366 * 24;
/// A schedule's name is at most this long: its snapshots are named `<name>-YYYYMMDD-HHMM`.
pub const MAX_NAME: usize = 28;

#[derive(Serialize)]
pub struct ScheduleCreate {
    pub tenant_id: String,
    /// One volume, or (without it) every volume of `project_id`.
    pub volume_id: Option<String>,
    pub project_id: Option<String>,
    pub name: String,
    pub cadence: Cadence,
    pub keep_last: Option<i32>,
    pub max_age_hours: Option<i32>,
    pub prune_manual: bool,
    #[serde(skip)]
    pub idempotency_key: String,
}

impl Services {
    /// Records a schedule, active, its first slot the first after now; publishes
    /// `snapshotSchedule.created`.
    pub async fn schedule_create(&self, actor: &Actor, input: ScheduleCreate) -> Result<ScheduleView> {
        check_create(&input)?;
        let id = ids::new_id(ids::SNAPSHOT_SCHEDULE);
        let txn = self.begin().await?;
        let project_id = match (&input.volume_id, &input.project_id) {
            (Some(volume_id), _) => {
                let volume = self.volume_decided(&txn, actor, &input.tenant_id, volume_id).await?;
                if volume.state == State::Deleted {
                    return Err(Error::not_found(VOLUME_KIND, volume_id));
                }
                if volume.desired_state == Desired::Absent {
                    return Err(Error::new(Code::InvalidState, format!("volume {volume_id} is being deleted"))
                        .with_details(json!({ "reason": "deleting" })));
                }
                volume.project_id
            }
            (None, Some(project_id)) => {
                actor.decide_create(MANAGE, &input.tenant_id, Some(project_id), KIND, &id)?;
                rows::check_project(&txn, &input.tenant_id, Some(project_id)).await?;
                Some(project_id.clone())
            }
            (None, None) => unreachable!("check_create asks one"),
        };
        // Deleting the snapshots calls took is deleting snapshots: the caller must be allowed to.
        if input.prune_manual {
            actor.decide_create(MANAGE, &input.tenant_id, project_id.as_deref(), SNAPSHOT_KIND, &id)?;
        }
        let key = idempotency::Key {
            tenant_id: &input.tenant_id,
            operation: "snapshotScheduleCreate",
            key: &input.idempotency_key,
        };
        if let Claim::Existing(existing) =
            idempotency::claim(&txn, &key, &idempotency::request_hash(&input), &id).await?
        {
            drop(txn);
            return find_in_tenant(&self.db, &input.tenant_id, &existing).await.map(|s| view(&s));
        }
        // The tenant's row first: two creates at once count one after the other.
        crate::store::lock(&txn, "tenants", &input.tenant_id).await?;
        if store::active_count(&txn, &input.tenant_id).await? >= MAX_SCHEDULES {
            return Err(Error::new(Code::LimitExceeded, format!("a tenant has at most {MAX_SCHEDULES} schedules"))
                .with_details(json!({ "limit": MAX_SCHEDULES, "resource": "snapshotSchedules" })));
        }
        let now = self.clock.now();
        let next = input.cadence.slot_after(now.timestamp_millis());
        let new = NewSchedule {
            id: &id,
            tenant_id: &input.tenant_id,
            project_id: project_id.as_deref(),
            volume_id: input.volume_id.as_deref(),
            name: &input.name,
            every_hours: input.cadence.every_hours(),
            daily_at_minute: input.cadence.daily_at_minute(),
            keep_last: input.keep_last,
            max_age_hours: input.max_age_hours,
            prune_manual: input.prune_manual,
            next_run_at: at(next),
        };
        let created = store::insert(&txn, new, now).await?;
        queue::wake(&txn, RUNNER, &id, next).await?;
        self.commit(txn, vec![event("created", &created)]).await?;
        Ok(view(&created))
    }

    /// Stops the schedule: its snapshots stay. Publishes `snapshotSchedule.deleted`; a deleted one
    /// is returned as it is.
    pub async fn schedule_delete(&self, actor: &Actor, tenant_id: &str, schedule_id: &str) -> Result<ScheduleView> {
        let txn = self.begin().await?;
        crate::store::lock(&txn, "snapshot_schedules", schedule_id).await?;
        let current = self.schedule_decided(&txn, actor, MANAGE, tenant_id, schedule_id).await?;
        if current.state == ScheduleState::Deleted {
            return Ok(view(&current));
        }
        let deleted = store::mark_deleted(&txn, schedule_id, self.clock.now()).await?;
        self.commit(txn, vec![event("deleted", &deleted)]).await?;
        Ok(view(&deleted))
    }

    pub async fn schedule_get(&self, actor: &Actor, tenant_id: &str, schedule_id: &str) -> Result<ScheduleView> {
        Ok(view(&self.schedule_decided(&self.db, actor, READ, tenant_id, schedule_id).await?))
    }

    /// The tenant's active schedules the caller may read (of one volume, if named).
    pub async fn schedule_list(
        &self,
        actor: &Actor,
        tenant_id: &str,
        volume_id: Option<&str>,
    ) -> Result<Vec<ScheduleView>> {
        validate::tenant_id("tenantId", tenant_id)?;
        if let Some(volume_id) = volume_id {
            validate::id("volumeId", ids::VOLUME, volume_id)?;
        }
        actor.decide_list(READ, tenant_id)?;
        let all = store::active_of(&self.db, tenant_id, volume_id).await?;
        Ok(all.iter().filter(|s| may(actor, READ, s)).map(view).collect())
    }

    /// The schedule, once the caller is decided on it with `permission`.
    async fn schedule_decided(
        &self,
        conn: &impl sea_orm::ConnectionTrait,
        actor: &Actor,
        permission: &str,
        tenant_id: &str,
        schedule_id: &str,
    ) -> Result<Schedule> {
        validate::tenant_id("tenantId", tenant_id)?;
        validate::id("scheduleId", ids::SNAPSHOT_SCHEDULE, schedule_id)?;
        let found = find_in_tenant(conn, tenant_id, schedule_id).await?;
        if !may(actor, permission, &found) {
            actor.decide(permission, &Target::resource(tenant_id, found.project_id.as_deref(), KIND, schedule_id))?;
        }
        Ok(found)
    }
}

/// The schedule of the tenant; NOT_FOUND for another tenant's.
async fn find_in_tenant(conn: &impl sea_orm::ConnectionTrait, tenant_id: &str, schedule_id: &str) -> Result<Schedule> {
    store::find(conn, schedule_id)
        .await?
        .filter(|s| s.tenant_id == tenant_id)
        .ok_or_else(|| Error::not_found(KIND, schedule_id))
}

/// Whether `permission` is granted on the schedule, or, for a volume's schedule, on its volume
/// (whoever may manage the volume made it).
fn may(actor: &Actor, permission: &str, s: &Schedule) -> bool {
    let project = s.project_id.as_deref();
    actor.allows(permission, &Target::resource(&s.tenant_id, project, KIND, &s.id))
        || s.volume_id
            .as_deref()
            .is_some_and(|v| actor.allows(permission, &Target::resource(&s.tenant_id, project, VOLUME_KIND, v)))
}

fn check_create(input: &ScheduleCreate) -> Result<()> {
    validate::tenant_id("tenantId", &input.tenant_id)?;
    validate::name("name", &input.name)?;
    validate::max_len("name", &input.name, MAX_NAME)?;
    validate::idempotency_key(&input.idempotency_key)?;
    match (&input.volume_id, &input.project_id) {
        (Some(_), Some(_)) => {
            return Err(Error::invalid_input(
                "projectId",
                "name a volume or a project, not both (a volume's project is its own)",
            ));
        }
        (Some(volume_id), None) => validate::id("volumeId", ids::VOLUME, volume_id)?,
        (None, Some(project_id)) => validate::id("projectId", ids::PROJECT, project_id)?,
        (None, None) => {
            return Err(Error::invalid_input("volumeId", "name a volume, or a project for all its volumes"));
        }
    }
    input.cadence.check()?;
    if input.keep_last.is_none() && input.max_age_hours.is_none() {
        return Err(Error::invalid_input(
            "keepLast",
            "keep the newest keepLast, those younger than maxAgeHours, or both",
        ));
    }
    if let Some(keep) = input.keep_last {
        validate::range("keepLast", i64::from(keep), 1, MAX_SNAPSHOTS as i64)?;
    }
    if let Some(hours) = input.max_age_hours {
        validate::range("maxAgeHours", i64::from(hours), 1, i64::from(MAX_AGE_HOURS))?;
    }
    Ok(())
}
