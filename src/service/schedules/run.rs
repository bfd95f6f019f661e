//! A schedule's run, due at its next slot: for each volume it covers, the snapshots beyond its
//! retention deleted, then the slot's snapshot taken; then the run recorded with
//! `snapshotSchedule.ran`. Only the latest slot due is taken, so slots missed while the service
//! was down are taken once when it comes back. A run that stops anywhere is run again whole:
//! the slot's snapshot is asked under a key of (schedule, slot, volume), so it is made once, and
//! a delete of one being deleted changes nothing.
use chrono::{DateTime, Duration, Utc};

use super::slots::Cadence;
use crate::authz::Actor;
use crate::error::{Code, Error, Result};
use crate::reconcile::{Next, Reconciler, Run};
use crate::service::snapshots::SnapshotTake;
use crate::services::Services;
use crate::store::entity::{provider_snapshot as snapshot, provider_volume as volume, snapshot_schedule as schedule};
use crate::store::schedules::{self as store, RUNNER, Ran};
use crate::store::state::{Desired, ScheduleState, State};
use crate::views::schedules::event;

/// Runs the schedules as the reconcile runtime claims them.
pub struct ScheduleRunner;

#[async_trait::async_trait]
impl Reconciler for ScheduleRunner {
    fn kind(&self) -> &'static str {
        RUNNER
    }

    async fn run(&self, run: &Run<'_>) -> Result<Next> {
        Ok(match run.services.schedule_run(run.resource_id()).await? {
            Some(wait_ms) => Next::After(wait_ms.max(1)),
            None => Next::Done,
        })
    }
}

/// What a run did of one volume.
#[derive(Default)]
struct Done {
    took: Vec<String>,
    deleted: Vec<String>,
    refused: Vec<String>,
}

impl Services {
    /// Runs the schedule's latest slot if it has not been taken; how long until its next slot
    /// (None: the schedule is gone).
    pub async fn schedule_run(&self, schedule_id: &str) -> Result<Option<i64>> {
        let Some(s) = store::find(&self.db, schedule_id).await? else { return Ok(None) };
        let Some(cadence) = Cadence::of(s.every_hours, s.daily_at_minute) else { return Ok(None) };
        if s.state == ScheduleState::Deleted {
            return Ok(None);
        }
        let now = self.clock.now_ms();
        let slot = cadence.slot_at_or_before(now);
        let taken = s.last_slot_at.unwrap_or(s.created_at).timestamp_millis();
        if slot <= taken {
            return Ok(Some(cadence.slot_after(now) - now));
        }
        let mut done = Done::default();
        for v in self.covered(&s).await? {
            self.keep_and_take(&s, &v, at(slot), &mut done).await?;
        }
        let next = cadence.slot_after(now);
        let ran = Ran { slot: at(slot), outcome: outcome(&done), error: error(&done), next_run_at: at(next) };
        let txn = self.begin().await?;
        if let Some(recorded) = store::record_run(&txn, schedule_id, ran, self.clock.now()).await? {
            self.commit(txn, vec![event("ran", &recorded)]).await?;
        }
        Ok(Some(next - self.clock.now_ms()))
    }

    /// The volumes the schedule covers now: wanted, not deleted.
    async fn covered(&self, s: &schedule::Model) -> Result<Vec<volume::Model>> {
        if let Some(volume_id) = &s.volume_id {
            let found = crate::store::volumes::find(&self.db, volume_id).await?;
            return Ok(found
                .filter(|v| v.desired_state == Desired::Present && v.state != State::Deleted)
                .into_iter()
                .collect());
        }
        match &s.project_id {
            Some(project_id) => store::live_volumes_of_project(&self.db, &s.tenant_id, project_id).await,
            None => Ok(Vec::new()),
        }
    }

    /// Deletes what the slot's snapshot puts beyond retention, then takes it.
    async fn keep_and_take(
        &self,
        s: &schedule::Model,
        v: &volume::Model,
        slot: DateTime<Utc>,
        done: &mut Done,
    ) -> Result<()> {
        let system = Actor::system();
        let name = format!("{}-{}", s.name, slot.format("%Y%m%d-%H%M"));
        let kept = store::kept_snapshots(&self.db, &v.id).await?;
        let others: Vec<&snapshot::Model> =
            kept.iter().filter(|k| !(k.schedule_id.as_deref() == Some(s.id.as_str()) && k.name == name)).collect();
        let oldest_kept = self.clock.now() - Duration::hours(i64::from(s.max_age_hours.unwrap_or(0)));
        for (newer, k) in others.iter().enumerate() {
            // The slot's snapshot is the newest, so `keepLast - 1` of the others stay.
            let past_count = s.keep_last.is_some_and(|keep| newer as i64 >= i64::from(keep) - 1);
            // Kept while younger than the age: one as old as it goes.
            let past_age = s.max_age_hours.is_some() && k.created_at <= oldest_kept;
            if !(past_count || past_age) || !prunable(s, k) {
                continue;
            }
            match self.snapshot_delete(&system, &s.tenant_id, &k.id).await {
                Ok(_) => done.deleted.push(k.id.clone()),
                Err(err) => done.refused.push(refusal(&k.id, err)?),
            }
        }
        let take = SnapshotTake {
            tenant_id: s.tenant_id.clone(),
            volume_id: v.id.clone(),
            name,
            deletion_protection: false,
            idempotency_key: format!("schedule:{}:{}:{}", s.id, slot.timestamp_millis(), v.id),
            schedule_id: Some(s.id.clone()),
        };
        match self.volume_snapshot(&system, take).await {
            Ok(taken) => done.took.push(taken.id),
            Err(err) => done.refused.push(refusal(&v.id, err)?),
        }
        Ok(())
    }
}

/// Whether retention may delete `k`: its own snapshots, and those of calls if told so; never
/// one with deletion protection, nor another schedule's.
fn prunable(s: &schedule::Model, k: &snapshot::Model) -> bool {
    let own = k.schedule_id.as_deref() == Some(s.id.as_str());
    let manual = k.schedule_id.is_none() && s.prune_manual;
    (own || manual) && !k.deletion_protection
}

/// A refusal of a call the run made, as its record says it; an error of the service itself
/// (the database) is returned, so the run is tried again.
fn refusal(of: &str, err: Error) -> Result<String> {
    if err.code == Code::Internal {
        return Err(err);
    }
    Ok(format!("{of}: {} {}", err.code.as_str(), err.message))
}

fn outcome(done: &Done) -> String {
    let mut parts = Vec::new();
    if !done.took.is_empty() {
        parts.push(format!("took {}", done.took.join(", ")));
    }
    if !done.deleted.is_empty() {
        parts.push(format!("deleted {}", done.deleted.join(", ")));
    }
    if parts.is_empty() {
        return "took nothing".into();
    }
    parts.join("; ")
}

fn error(done: &Done) -> Option<String> {
    (!done.refused.is_empty()).then(|| done.refused.join("; "))
}

fn at(ms: i64) -> DateTime<Utc> {
    DateTime::from_timestamp_millis(ms).unwrap_or_default()
}
