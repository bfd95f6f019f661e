//! A schedule's run, due at its next slot: for each volume it covers, the snapshots beyond its
//! retention deleted, then the slot's snapshot taken; then the run recorded with
//! `snapshotSchedule.ran`. Only the latest slot due is taken, so slots missed while the service
//! was down are taken once when it comes back. A run that stops anywhere is run again whole:
//! the slot's snapshot is asked under a key of (schedule, slot, volume), so it is made once, and
//! a delete of one being deleted changes nothing.
use chrono::{DateTime, Duration, Utc};

use super::slots::{Cadence, at};
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

/// What a run did of its volumes.
#[derive(Default)]
struct Done {
    took: Vec<String>,
    deleted: Vec<String>,
    refused: Vec<String>,
    /// A volume at its snapshot limit: the slot is tried again once retention made room.
    full: bool,
}

/// How long a slot that met a volume at its snapshot limit waits before it is tried again,
/// while the deletes retention asked make room.
pub const FULL_RETRY_MS: i64 = 60_000;

impl Services {
    /// Runs the schedule's latest slot if it has not been taken; how long until its next run
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
        let Some(volumes) = self.covered(&s).await? else {
            self.schedule_ended(&s).await?;
            return Ok(None);
        };
        let mut done = Done::default();
        for v in &volumes {
            self.keep_and_take(&s, v, at(slot), &mut done).await?;
        }
        // A slot that met a full volume is not recorded as taken: it goes again shortly (its
        // takes replayed where they were made), until the next slot replaces it.
        let next = match done.full {
            true => (now + FULL_RETRY_MS).min(cadence.slot_after(now)),
            false => cadence.slot_after(now),
        };
        let ran = Ran {
            slot: (!done.full).then(|| at(slot)),
            outcome: outcome(&done),
            error: error(&done),
            next_run_at: at(next),
        };
        let txn = self.begin().await?;
        if let Some(recorded) = store::record_run(&txn, schedule_id, ran, self.clock.now()).await? {
            self.commit(txn, vec![event("ran", &recorded)]).await?;
        }
        Ok(Some(next - self.clock.now_ms()))
    }

    /// The volumes the schedule covers now (wanted, not deleted); None when it covers none
    /// ever again: its one volume is gone.
    async fn covered(&self, s: &schedule::Model) -> Result<Option<Vec<volume::Model>>> {
        if let Some(volume_id) = &s.volume_id {
            let found = crate::store::volumes::find(&self.db, volume_id).await?;
            let live = found.filter(|v| v.desired_state == Desired::Present && v.state != State::Deleted);
            return Ok(live.map(|v| vec![v]));
        }
        match &s.project_id {
            Some(project_id) => Ok(Some(store::live_volumes_of_project(&self.db, &s.tenant_id, project_id).await?)),
            None => Ok(None),
        }
    }

    /// Deletes a schedule whose volume is gone, with `snapshotSchedule.deleted`.
    async fn schedule_ended(&self, s: &schedule::Model) -> Result<()> {
        let txn = self.begin().await?;
        crate::store::lock(&txn, "snapshot_schedules", &s.id).await?;
        let deleted = store::mark_deleted(&txn, &s.id, self.clock.now()).await?;
        self.commit(txn, vec![event("deleted", &deleted)]).await
    }

    /// Takes the slot's snapshot of `v`, then deletes what it puts beyond retention. Nothing is
    /// deleted for a take refused; for a volume at its limit, retention makes room for the next
    /// try.
    async fn keep_and_take(
        &self,
        s: &schedule::Model,
        v: &volume::Model,
        slot: DateTime<Utc>,
        done: &mut Done,
    ) -> Result<()> {
        let take = SnapshotTake {
            tenant_id: s.tenant_id.clone(),
            volume_id: v.id.clone(),
            name: format!("{}-{}", s.name, slot.format("%Y%m%d-%H%M")),
            deletion_protection: false,
            idempotency_key: format!("{}:{}:{}", s.id, slot.timestamp_millis(), v.id),
            schedule_id: Some(s.id.clone()),
        };
        let keep = match self.volume_snapshot(&Actor::system(), take).await {
            Ok(taken) => {
                done.took.push(taken.id);
                s.keep_last.map(i64::from)
            }
            Err(err) if err.code == Code::QuotaExceeded => {
                done.full = true;
                done.refused.push(refusal(&v.id, err)?);
                Some(s.keep_last.map_or(0, |keep| i64::from(keep) - 1))
            }
            Err(err) => {
                done.refused.push(refusal(&v.id, err)?);
                return Ok(());
            }
        };
        self.prune(s, v, keep, done).await
    }

    /// Deletes the schedule's snapshots of `v` (and the manual ones, with `pruneManual`) beyond
    /// the newest `keep` of them or older than its age, never the volume's newest READY one: a
    /// run of failed takes never leaves a volume without a good snapshot.
    async fn prune(&self, s: &schedule::Model, v: &volume::Model, keep: Option<i64>, done: &mut Done) -> Result<()> {
        let kept = store::kept_snapshots(&self.db, &v.id).await?;
        let newest_ready = kept.iter().find(|k| k.state == State::Ready).map(|k| k.id.clone());
        let oldest_kept = self.clock.now() - Duration::hours(i64::from(s.max_age_hours.unwrap_or(0)));
        for (newer, k) in kept.iter().filter(|k| prunable(s, k)).enumerate() {
            let past_count = keep.is_some_and(|keep| newer as i64 >= keep);
            // Kept while younger than the age: one as old as it goes.
            let past_age = s.max_age_hours.is_some() && k.created_at <= oldest_kept;
            if !(past_count || past_age) || newest_ready.as_deref() == Some(k.id.as_str()) {
                continue;
            }
            match self.snapshot_delete(&Actor::system(), &s.tenant_id, &k.id).await {
                Ok(_) => done.deleted.push(k.id.clone()),
                Err(err) => done.refused.push(refusal(&k.id, err)?),
            }
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

/// The most ids an outcome lists of each kind; past it, how many more.
const LISTED: usize = 10;

fn listed(ids: &[String]) -> String {
    match ids.len() > LISTED {
        true => format!("{} and {} more", ids[..LISTED].join(", "), ids.len() - LISTED),
        false => ids.join(", "),
    }
}

fn outcome(done: &Done) -> String {
    let mut parts = Vec::new();
    if !done.took.is_empty() {
        parts.push(format!("took {}", listed(&done.took)));
    }
    if !done.deleted.is_empty() {
        parts.push(format!("deleted {}", listed(&done.deleted)));
    }
    if parts.is_empty() {
        return "took nothing".into();
    }
    parts.join("; ")
}

fn error(done: &Done) -> Option<String> {
    (!done.refused.is_empty()).then(|| listed(&done.refused))
}
