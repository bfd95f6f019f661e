//! Snapshot schedules.
use async_graphql::{ComplexObject, Context, ID, InputObject, Object, Result, SimpleObject};

use super::plans::planned;
use super::{actor, services};
use crate::error::Error;
use crate::service::schedules::{Cadence, ScheduleCreate};
use crate::views::schedules::ScheduleView;

/// Snapshots of a volume, or of every volume of a project, on a schedule.
#[derive(Clone, SimpleObject)]
#[graphql(complex)]
pub struct SnapshotSchedule {
    #[graphql(flatten)]
    pub view: ScheduleView,
}

#[ComplexObject]
impl SnapshotSchedule {
    pub async fn id(&self) -> ID {
        ID(self.view.id.clone())
    }
}

#[derive(InputObject)]
pub struct SnapshotScheduleCreateInput {
    pub tenant_id: String,
    /// The volume it snapshots; without it, every volume of `projectId` (those made later too).
    pub volume_id: Option<String>,
    pub project_id: Option<String>,
    /// At most 28 characters: each snapshot is named `<name>-YYYYMMDD-HHMM` (its slot, UTC).
    pub name: String,
    /// A snapshot every this many hours (1 to 168), on the hours that divide evenly since 1970
    /// UTC. Give this or `dailyAt`.
    pub every_hours: Option<i32>,
    /// A snapshot every day at this UTC time, `HH:MM`.
    pub daily_at: Option<String>,
    /// Keep the newest this many of a volume's snapshots (1 to 25, its manual ones counted).
    pub keep_last: Option<i32>,
    /// Delete snapshots older than this many hours. Give this, `keepLast`, or both.
    pub max_age_hours: Option<i32>,
    /// Retention deletes snapshots taken by calls too (never one with deletion protection).
    #[graphql(default)]
    pub prune_manual: bool,
    pub idempotency_key: String,
    /// Runs the whole call and records nothing: the answer it would give, with its plan (quota,
    /// provider calls, meters, monthly cost) in the response's `extensions.plan`.
    #[graphql(default)]
    pub dry_run: bool,
}

#[derive(InputObject)]
pub struct SnapshotScheduleDeleteInput {
    pub tenant_id: String,
    pub schedule_id: String,
    /// Runs the whole call and records nothing: the answer it would give, with its plan (quota,
    /// provider calls, meters, monthly cost) in the response's `extensions.plan`.
    #[graphql(default)]
    pub dry_run: bool,
}

fn cadence(every_hours: Option<i32>, daily_at: Option<&str>) -> Result<Cadence, Error> {
    match (every_hours, daily_at) {
        (Some(hours), None) => Ok(Cadence::EveryHours(hours)),
        (None, Some(at)) => Cadence::daily_at(at),
        _ => Err(Error::invalid_input("everyHours", "give everyHours or dailyAt, one of them")),
    }
}

#[derive(Default)]
pub struct ScheduleQuery;

#[Object]
impl ScheduleQuery {
    /// A snapshot schedule, deleted ones included (`compute:volumes:read`).
    async fn snapshot_schedule(
        &self,
        ctx: &Context<'_>,
        tenant_id: String,
        schedule_id: String,
    ) -> Result<SnapshotSchedule> {
        let view = services(ctx).schedule_get(actor(ctx)?, &tenant_id, &schedule_id).await?;
        Ok(SnapshotSchedule { view })
    }

    /// The tenant's active snapshot schedules the caller may read (at most 100 a tenant, so one
    /// list); with `volumeId`, those made on that volume (a project's schedules, which cover it
    /// too, are listed without it).
    async fn snapshot_schedules(
        &self,
        ctx: &Context<'_>,
        tenant_id: String,
        volume_id: Option<String>,
    ) -> Result<Vec<SnapshotSchedule>> {
        let views = services(ctx).schedule_list(actor(ctx)?, &tenant_id, volume_id.as_deref()).await?;
        Ok(views.into_iter().map(|view| SnapshotSchedule { view }).collect())
    }
}

#[derive(Default)]
pub struct ScheduleMutation;

#[Object]
impl ScheduleMutation {
    /// Snapshots a volume (or every volume of a project) every N hours or daily at a UTC time,
    /// deleting the oldest beyond `keepLast` and/or `maxAgeHours` (its own only, unless
    /// `pruneManual`). Each slot is taken once, under a key of the schedule, the slot and the
    /// volume; a slot missed while the service was down is taken once when it is back.
    /// Publishes `snapshotSchedule.created`, then `snapshotSchedule.ran` at each slot.
    /// INVALID_INPUT for a bad field, INVALID_STATE for a volume being deleted, LIMIT_EXCEEDED past
    /// 100 schedules a tenant.
    async fn snapshot_schedule_create(
        &self,
        ctx: &Context<'_>,
        input: SnapshotScheduleCreateInput,
    ) -> Result<SnapshotSchedule> {
        let dry_run = input.dry_run;
        planned(ctx, dry_run, async move {
            let create = ScheduleCreate {
                cadence: cadence(input.every_hours, input.daily_at.as_deref())?,
                tenant_id: input.tenant_id,
                volume_id: input.volume_id,
                project_id: input.project_id,
                name: input.name,
                keep_last: input.keep_last,
                max_age_hours: input.max_age_hours,
                prune_manual: input.prune_manual,
                idempotency_key: input.idempotency_key,
            };
            Ok(SnapshotSchedule { view: services(ctx).schedule_create(actor(ctx)?, create).await? })
        })
        .await
    }

    /// Stops a schedule; the snapshots it took stay. Publishes `snapshotSchedule.deleted`.
    async fn snapshot_schedule_delete(
        &self,
        ctx: &Context<'_>,
        input: SnapshotScheduleDeleteInput,
    ) -> Result<SnapshotSchedule> {
        let dry_run = input.dry_run;
        planned(ctx, dry_run, async move {
            let view = services(ctx).schedule_delete(actor(ctx)?, &input.tenant_id, &input.schedule_id).await?;
            Ok(SnapshotSchedule { view })
        })
        .await
    }
}
