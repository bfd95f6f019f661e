//! `vps.event-retention`: the pass that keeps the outbox from growing without end. Events older
//! than the retention are removed oldest first, in feed order, a batch per transaction, and the
//! feed's horizon moves to the last one removed, so a cursor from before it is refused with a
//! coded error rather than silently skipping what was removed (`Feed::read_after`). It calls no
//! provider; a pass cut short, or two replicas at once, remove nothing twice and never move the
//! horizon back (`outbox::remove_before`). It runs on start and then every hour.
use std::time::Duration;

use super::{Next, Reconciler, Run};
use crate::error::Result;
use crate::store::outbox;

pub const KIND: &str = "vps.event-retention";
/// The one work item of the pass.
pub const ITEM: &str = "events";
const EVERY_MS: i64 = 3_600_000;
/// Events removed per transaction: short transactions, however far behind the pass is.
const BATCH: u64 = 5_000;

pub struct EventRetentionReconciler {
    pub retention: Duration,
}

#[async_trait::async_trait]
impl Reconciler for EventRetentionReconciler {
    fn kind(&self) -> &'static str {
        KIND
    }

    async fn run(&self, run: &Run<'_>) -> Result<Next> {
        // Events are stamped with the app's clock (`Services::commit`), the one this is run on.
        let retention = chrono::Duration::from_std(self.retention).unwrap_or(chrono::Duration::MAX);
        let cutoff = run.services.clock.now() - retention;
        let mut removed = 0;
        loop {
            let batch = outbox::remove_before(&run.services.db, cutoff, BATCH).await?;
            removed += batch;
            if batch < BATCH {
                break;
            }
        }
        if removed > 0 {
            tracing::info!(removed, "event retention: {removed} events older than {cutoff} removed");
        }
        Ok(Next::After(EVERY_MS))
    }
}
