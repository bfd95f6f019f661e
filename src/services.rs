//! The app's handle on what every call and run needs: the database, the event feed, the
//! clock, the metrics and the provider clients; cheap to clone. A commit appends its events to
//! the outbox in the same transaction and wakes this process's feed (and, for a change that
//! woke work, one of its reconcile workers).
use std::sync::Arc;

use sea_orm::{DatabaseConnection, DatabaseTransaction, TransactionTrait};

use crate::clock::Clock;
use crate::error::Result;
use crate::feed::Feed;
use crate::metrics::Metrics;
use crate::store::outbox::{self, NewEvent};

/// What every call and run needs; cheap to clone.
#[derive(Clone)]
pub struct Services {
    pub db: DatabaseConnection,
    pub feed: Feed,
    pub metrics: Arc<Metrics>,
    /// SHA-256 of the static operator token given at start, if any.
    pub admin_token_hash: Option<String>,
    pub clock: Clock,
    /// The in-process simulated cloud's URL, when this process runs one (a `sim` account's API).
    pub sim_url: Option<String>,
    /// This deployment's mark on what it makes at a provider (the database's feed epoch).
    pub deployment: String,
    /// Rouses this process's reconcile workers after a commit that woke work.
    pub work: Arc<tokio::sync::Notify>,
}

impl Services {
    pub async fn begin(&self) -> Result<DatabaseTransaction> {
        Ok(self.db.begin().await?)
    }

    /// Appends `events` and commits, then wakes this process's feed.
    /// In a dry run (`plan::dry_run`), notes what the events would start and rolls back.
    pub async fn commit(&self, txn: DatabaseTransaction, events: Vec<NewEvent>) -> Result<()> {
        if crate::plan::active() {
            note_events(&txn, &events).await?;
            txn.rollback().await?;
            return Ok(());
        }
        let now = self.clock.now();
        for event in events {
            outbox::append(&txn, event, now).await?;
        }
        txn.commit().await?;
        self.feed.wake();
        Ok(())
    }

    /// `commit` for a change that woke a reconciler (`queue::wake` in `txn`): also rouses one of
    /// this process's workers, so the work starts at once rather than at the next poll.
    pub async fn commit_and_wake(&self, txn: DatabaseTransaction, events: Vec<NewEvent>) -> Result<()> {
        let dry_run = crate::plan::active();
        self.commit(txn, events).await?;
        if !dry_run {
            self.work.notify_one();
        }
        Ok(())
    }
}

/// A dry run's note of its events: their types, the provider of each resource they are of, and
/// the meter each resource it creates would start.
async fn note_events(txn: &DatabaseTransaction, events: &[NewEvent]) -> Result<()> {
    for event in events {
        let subject = crate::store::pools::subject_of(txn, &event.subject).await?;
        let meter = match event.event_type.ends_with(".created") {
            true => crate::store::usage::meter_of(txn, &event.subject).await?,
            false => None,
        };
        crate::plan::note(|plan| {
            plan.events.push(event.event_type.clone());
            plan.subjects.extend(subject);
            if let Some((meter, pool_id, quantity)) = meter {
                let resource_id = event.subject.clone();
                plan.meters.push(crate::plan::MeterStart { meter: meter.to_owned(), resource_id, pool_id, quantity });
            }
        });
    }
    Ok(())
}
