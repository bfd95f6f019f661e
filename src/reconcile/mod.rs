//! The reconciler runtime: workers in every replica claim due work items with a lease, run one
//! reconcile step for the resource, and say when to look again. A run takes nothing but the
//! resource id (level-triggered), calls the provider outside any transaction, and writes back
//! through `store::status` on its lease (the epoch fence): what the provider did always, what the
//! run decided only if the user changed nothing meanwhile. Timing, as the seeds
//! say: a running provider action is looked at again 5 s later; rate-limited or unavailable 30 s;
//! an ERROR is retried by the next change or every 5 minutes; a settled resource is read for drift
//! once an hour, those reads spread evenly over the hour by the resource id. The usage pass
//! (`usage`) is one more reconciler, over a single work item, that runs at each hour's end.
mod addresses;
mod answers;
pub mod events;
pub mod filesystems;
pub mod instances;
pub mod inventory;
pub mod networks;
#[cfg(test)]
mod outcomes;
pub mod resources;
mod snapshots;
pub mod usage;
mod volumes;

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use crate::error::Result;
use crate::provider::Providers;
use crate::services::Services;
use crate::store::notify;
use crate::store::queue::{self, Claimed, Purpose};
use crate::store::status::StatusWrite;

pub const ACTION_POLL_MS: i64 = 5_000;
pub const RETRY_LATER_MS: i64 = 30_000;
pub const ERROR_RETRY_MS: i64 = 5 * 60_000;
pub const DRIFT_MS: i64 = 60 * 60_000;
/// The longest a run backs off from a provider that keeps being unavailable or rate-limited.
pub const BACKOFF_CAP_MS: i64 = 10 * 60_000;

/// When to look at the resource again.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Next {
    /// There is more to do now.
    Now,
    After(i64),
    /// The provider was rate-limited or unavailable, or its answer was lost: at least this long
    /// (what the provider asked for), and twice as long for each such run in a row, from 30 s up
    /// to `BACKOFF_CAP_MS`, so that a provider in trouble is not asked ever faster.
    Backoff(i64),
    /// Settled: the hourly drift read.
    Drift,
    /// Gone for good: drop the work item.
    Done,
}

#[async_trait::async_trait]
pub trait Reconciler: Send + Sync {
    /// The work item kind, e.g. `vps.networks`.
    fn kind(&self) -> &'static str;
    async fn run(&self, run: &Run<'_>) -> Result<Next>;
}

/// One claimed run: the services and the lease every write-back is fenced on.
pub struct Run<'a> {
    pub services: &'a Services,
    /// The provider clients, one per account.
    pub providers: &'a Providers,
    pub claimed: &'a Claimed,
}

impl Run<'_> {
    pub fn resource_id(&self) -> &str {
        &self.claimed.resource_id
    }

    /// The client of a provider account.
    pub async fn provider(&self, account_id: &str) -> Result<Arc<crate::provider::Provider>> {
        let account = crate::store::pools::find_account(&self.services.db, account_id)
            .await?
            .ok_or_else(|| crate::error::Error::internal(format!("no provider account {account_id}")))?;
        Ok(self.providers.for_account(&crate::provider::AccountRef {
            id: &account.id,
            kind: account.kind,
            api_url: &account.api_url,
            credential_ref: &account.credential_ref,
            sim: account.sim,
        }))
    }

    /// Records one more attempt of a call in `column` of row `id` of `E` before the call is sent,
    /// after taking `locks` (table, id) in the store's lock order. The row as marked, or None when
    /// the run must not call but look again (its lease is gone, or the user changed the row
    /// since it was read at `generation`).
    pub async fn mark_attempt<E: crate::store::status::Table>(
        &self,
        locks: &[(&str, &str)],
        id: &str,
        generation: i64,
        column: impl crate::store::status::Column,
    ) -> Result<Option<E::Model>> {
        let txn = self.services.begin().await?;
        for (table, id) in locks {
            crate::store::lock(&txn, table, id).await?;
        }
        let marked = StatusWrite::of(id, generation)
            .attempt(column)
            .write::<E>(&txn, self.claimed, self.services.clock.now())
            .await?;
        if marked.is_some() {
            txn.commit().await?;
        }
        Ok(marked)
    }
}

/// `next`, or at once when the user changed the row between the run's read (at `looked_at`)
/// and its write-back (`written`): what the run decided was not written, so decide again.
pub fn again_if_changed(next: Next, looked_at: i64, written: i64) -> Next {
    if looked_at == written { next } else { Next::Now }
}

/// What to do after a provider error while looking or acting: back off from a provider that
/// was unavailable or rate-limited or whose answer was lost; retry a refusal in 5 minutes.
pub fn retry_after(err: &crate::provider::ProviderError) -> Next {
    use crate::provider::ProviderError;
    match err {
        ProviderError::RetryLater { .. } | ProviderError::Unknown { .. } => Next::Backoff(wait_for(err)),
        _ => Next::After(wait_for(err)),
    }
}

/// How long a run backs off after `streak` runs in a row that met a provider in trouble: 30 s,
/// then doubling, at most `BACKOFF_CAP_MS`, and never less than the provider asked.
pub fn backoff_ms(at_least: i64, streak: i32) -> i64 {
    let doubled = RETRY_LATER_MS.saturating_mul(1_i64 << streak.saturating_sub(1).clamp(0, 10));
    doubled.min(BACKOFF_CAP_MS).max(at_least)
}

pub fn wait_for(err: &crate::provider::ProviderError) -> i64 {
    use crate::provider::ProviderError;
    match err {
        ProviderError::RetryLater { after, .. } => std::cmp::max(RETRY_LATER_MS, after.as_millis() as i64),
        ProviderError::Unknown { .. } => RETRY_LATER_MS,
        _ => ERROR_RETRY_MS,
    }
}

/// Whether a provider error leaves the resource in error (a refusal or a misconfigured account),
/// rather than waiting.
pub fn is_failure(err: &crate::provider::ProviderError) -> bool {
    use crate::provider::ProviderError;
    matches!(err, ProviderError::Refused { .. } | ProviderError::Misconfigured { .. })
}

/// The next drift read of `resource_id` after `now`: once an hour, at an offset derived from the
/// id so that reads spread evenly over the hour.
pub fn drift_due(now: i64, resource_id: &str) -> i64 {
    let offset = (fnv1a(resource_id) % DRIFT_MS as u64) as i64;
    let slot = now - now.rem_euclid(DRIFT_MS) + offset;
    if slot <= now { slot + DRIFT_MS } else { slot }
}

/// What a work item's resource id names, for logs and metrics: `vps.provider-resources` (one
/// reconciler, as the seeds say) converges volumes, snapshots and addresses alike.
fn resource_of(resource_id: &str) -> &'static str {
    use crate::ids;
    match resource_id.split_once('_').map(|(prefix, _)| prefix) {
        Some(ids::VOLUME) => "volume",
        Some(ids::SNAPSHOT) => "snapshot",
        Some(ids::ADDRESS) => "address",
        Some(ids::NETWORK) => "network",
        Some(ids::INSTANCE) => "instance",
        Some(ids::FILESYSTEM) => "filesystem",
        _ => "other",
    }
}

fn fnv1a(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325, |hash, b| (hash ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3))
}

#[derive(Clone, Debug)]
pub struct RuntimeConfig {
    pub workers: usize,
    pub lease_ms: i64,
    /// How often idle workers look for due work when nothing woke them.
    pub poll: Duration,
}

impl Default for RuntimeConfig {
    fn default() -> Self {
        RuntimeConfig { workers: 8, lease_ms: 60_000, poll: Duration::from_secs(1) }
    }
}

struct Shared {
    services: Services,
    providers: Arc<Providers>,
    reconcilers: Vec<Arc<dyn Reconciler>>,
    kinds: Vec<&'static str>,
    owner: String,
    config: RuntimeConfig,
    wake: Arc<Notify>,
    stop: CancellationToken,
}

/// The running workers, and a way to run what is due without waiting for them.
pub struct Runtime {
    workers: tokio::task::JoinHandle<()>,
    shared: Arc<Shared>,
}

/// Most runs one `run_due` makes: work that is due again and again without settling is a bug of
/// its reconciler, told as an error rather than looped on.
const MAX_RUNS_DUE: usize = 10_000;

impl Runtime {
    /// Runs every work item due on the app's clock here, one after another, until none is due:
    /// what the workers do, without waiting for one to look. A test on a manual clock moves the
    /// clock, then runs what came due, and so never waits on a worker's poll.
    pub async fn run_due(&self) -> crate::error::Result<usize> {
        let shared = &self.shared;
        let mut ran = 0;
        loop {
            // One at a time, as a worker claims: a run may move other items' due times (an
            // inventory pass puts off the reads it made needless), and a batch would run them.
            let now = shared.services.clock.now_ms();
            let claimed =
                queue::claim(&shared.services.db, &shared.owner, &shared.kinds, now, shared.config.lease_ms, 1).await?;
            if claimed.is_empty() {
                return Ok(ran);
            }
            for item in claimed {
                run_one(shared, item).await;
                ran += 1;
            }
            if ran >= MAX_RUNS_DUE {
                return Err(crate::error::Error::internal(format!("work still due after {ran} runs")));
            }
        }
    }

    /// Waits for the workers to stop (after `stop` was cancelled) and give back their leases.
    pub async fn stopped(self) {
        let _ = self.workers.await;
    }
}

/// Starts the workers; `wake` rouses them (the services notify it after a commit), and they give
/// back their leases when `stop` is cancelled.
pub fn start(
    services: Services,
    providers: Arc<Providers>,
    reconcilers: Vec<Arc<dyn Reconciler>>,
    config: RuntimeConfig,
    wake: Arc<Notify>,
    stop: CancellationToken,
) -> Runtime {
    let kinds = reconcilers.iter().map(|r| r.kind()).collect();
    let shared = Arc::new(Shared {
        owner: crate::ids::new_id("worker"),
        services,
        providers,
        reconcilers,
        kinds,
        config,
        wake: wake.clone(),
        stop,
    });
    if crate::store::is_postgres(&shared.services.db) {
        let woken = wake.clone();
        tokio::spawn(notify::listen(shared.services.db.clone(), queue::WAKE_CHANNEL, shared.stop.clone(), move || {
            woken.notify_one()
        }));
    }
    tokio::spawn(report_depth(shared.clone()));
    let running = shared.clone();
    let workers = tokio::spawn(async move {
        let shared = running;
        // Workers stop between runs, so a run is never cut between its provider call and its
        // write-back by a graceful stop.
        let workers: Vec<_> = (0..shared.config.workers).map(|_| tokio::spawn(work(shared.clone()))).collect();
        for worker in workers {
            let _ = worker.await;
        }
        let now = shared.services.clock.now_ms();
        if let Err(err) = queue::release(&shared.services.db, &shared.owner, now).await {
            tracing::warn!(error = err.describe(), "could not give back the leases");
        }
    });
    Runtime { workers, shared }
}

async fn work(shared: Arc<Shared>) {
    while !shared.stop.is_cancelled() {
        // Listen before looking, so a wake that lands meanwhile is not missed.
        let woken = shared.wake.notified();
        tokio::pin!(woken);
        woken.as_mut().enable();
        let now = shared.services.clock.now_ms();
        match queue::claim(&shared.services.db, &shared.owner, &shared.kinds, now, shared.config.lease_ms, 1).await {
            Ok(claimed) if !claimed.is_empty() => {
                for item in claimed {
                    run_one(&shared, item).await;
                }
                continue;
            }
            Ok(_) => {}
            Err(err) => tracing::warn!(error = err.describe(), "could not claim work"),
        }
        tokio::select! {
            _ = shared.stop.cancelled() => break,
            _ = &mut woken => {}
            _ = tokio::time::sleep(shared.config.poll) => {}
        }
    }
}

async fn run_one(shared: &Shared, claimed: Claimed) {
    let Some(reconciler) = shared.reconcilers.iter().find(|r| r.kind() == claimed.kind) else { return };
    let run = Run { services: &shared.services, providers: &shared.providers, claimed: &claimed };
    let started = std::time::Instant::now();
    let resource = resource_of(&claimed.resource_id);
    let span = tracing::info_span!(
        "reconcile",
        kind = %claimed.kind,
        resource,
        id = %claimed.resource_id,
        attempt = claimed.attempts
    );
    let fence = Arc::new(LeaseFence { db: shared.services.db.clone(), claimed: claimed.clone() });
    let fenced = crate::provider::fence::scope(fence, claimed.purpose, reconciler.run(&run));
    let running = std::panic::AssertUnwindSafe(tracing::Instrument::instrument(fenced, span));
    let mut running = std::pin::pin!(futures_util::FutureExt::catch_unwind(running));
    let ran = tokio::select! {
        ran = &mut running => ran,
        () = hold_lease(shared, &claimed) => {
            // Another worker may have the item now. The run is not cut short (it could be inside
            // a transaction), but from here the fence refuses its provider calls and its writes.
            tracing::warn!(kind = claimed.kind, resource = claimed.resource_id, "the run's lease changed hands");
            running.await
        }
    };
    // A panic is this run's error: its item backs off, the worker goes on.
    let result = ran.unwrap_or_else(|panic| Err(panicked(panic.as_ref())));
    let took = started.elapsed();
    let now = shared.services.clock.now_ms();
    // More of the same work keeps its purpose; a look at a running action follows it; a settled
    // resource waits for its drift read.
    let same = claimed.purpose;
    let (next_due, next_for, failed, outcome) = match &result {
        Ok(Next::Now) => (Some(now), same, None, "more"),
        Ok(Next::After(ms)) => (Some(now + ms), Purpose::Following, None, "requeued"),
        // The streak of such runs is the item's attempts, kept while they last.
        Ok(Next::Backoff(ms)) => (
            Some(now + backoff_ms(*ms, claimed.attempts)),
            same,
            Some("the provider is unavailable or rate-limited".into()),
            "backoff",
        ),
        Ok(Next::Drift) => (Some(drift_due(now, &claimed.resource_id)), Purpose::Drift, None, "settled"),
        Ok(Next::Done) => (None, same, None, "done"),
        Err(err) => {
            tracing::warn!(
                kind = claimed.kind,
                resource = claimed.resource_id,
                error = err.describe(),
                "reconcile failed"
            );
            (Some(now + RETRY_LATER_MS), same, Some(err.describe()), "failed")
        }
    };
    let labels = crate::metrics::ReconcileRun {
        kind: claimed.kind.clone(),
        resource: resource.to_owned(),
        outcome: outcome.to_owned(),
    };
    shared.services.metrics.reconcile_runs.get_or_create(&labels).inc();
    shared.services.metrics.reconcile_seconds.get_or_create(&labels).observe(took.as_secs_f64());
    if let Err(err) = queue::finish(&shared.services.db, &claimed, now, next_due, next_for, failed.as_deref()).await {
        tracing::warn!(error = err.describe(), "could not finish a run; its lease will expire");
    }
}

/// A run's state-changing provider calls, each recorded on its work item's lease before it is
/// sent (`queue::mark_call`); none is sent once the lease has changed hands.
struct LeaseFence {
    db: sea_orm::DatabaseConnection,
    claimed: Claimed,
}

#[async_trait::async_trait]
impl crate::provider::fence::CallFence for LeaseFence {
    async fn before_change(&self) -> bool {
        match queue::mark_call(&self.db, &self.claimed).await {
            Ok(held) => held,
            Err(err) => {
                // Unknown whether the lease holds: do not send.
                tracing::warn!(error = err.describe(), "could not record a provider call");
                false
            }
        }
    }
}

/// Renews the run's lease a few times per lease while the run lasts; returns once the lease has
/// changed hands. A renewal the database could not take is tried again at the next tick: the
/// lease still holds until it runs out.
async fn hold_lease(shared: &Shared, claimed: &Claimed) {
    let lease_ms = shared.config.lease_ms;
    let every = Duration::from_millis((lease_ms / 3).max(1) as u64);
    loop {
        tokio::time::sleep(every).await;
        match queue::renew(&shared.services.db, claimed, lease_ms).await {
            Ok(true) => {}
            Ok(false) => return,
            Err(err) => tracing::warn!(error = err.describe(), "could not renew a lease"),
        }
    }
}

fn panicked(panic: &(dyn std::any::Any + Send)) -> crate::error::Error {
    let text = panic
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "no message".into());
    crate::error::Error::internal(format!("the run panicked: {text}"))
}

/// The run of a resource on an account whose cloud does not offer its kind: the service refuses
/// such a resource before recording it (`provider::supports_*`), so only a row written around it
/// gets here, and it waits as a failure says, never calling the wrong cloud.
pub(crate) fn not_offered(kind: &str, account_id: &str) -> crate::error::Error {
    crate::error::Error::new(crate::error::Code::Unsupported, format!("account {account_id}'s cloud offers no {kind}"))
}

/// Queue depth and the oldest due item, for /metrics.
async fn report_depth(shared: Arc<Shared>) {
    loop {
        let now = shared.services.clock.now_ms();
        if let Ok((due, oldest, failing)) = queue::depth(&shared.services.db, now).await {
            let metrics = &shared.services.metrics;
            metrics.queue_due.set(due);
            metrics.queue_failing.set(failing);
            metrics.queue_oldest_due_seconds.set(oldest.map_or(0.0, |t| (now - t) as f64 / 1000.0));
        }
        tokio::select! {
            _ = shared.stop.cancelled() => return,
            _ = tokio::time::sleep(Duration::from_secs(5)) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_from_30_seconds_up_to_the_cap_and_honours_the_providers_wait() {
        let waits: Vec<i64> = (1..=7).map(|streak| backoff_ms(RETRY_LATER_MS, streak) / 1000).collect();
        assert_eq!(waits, [30, 60, 120, 240, 480, 600, 600]);
        assert_eq!(backoff_ms(RETRY_LATER_MS, 0), RETRY_LATER_MS);
        assert_eq!(backoff_ms(RETRY_LATER_MS, i32::MAX), BACKOFF_CAP_MS);
        assert_eq!(backoff_ms(900_000, 1), 900_000, "a provider's Retry-After beyond the cap is honoured");
    }

    #[test]
    fn a_runs_logs_and_metrics_name_what_it_converged() {
        let id = |prefix: &str| crate::ids::new_id(prefix);
        let named: Vec<&str> = [crate::ids::VOLUME, crate::ids::SNAPSHOT, crate::ids::ADDRESS, crate::ids::NETWORK]
            .iter()
            .map(|p| resource_of(&id(p)))
            .collect();
        assert_eq!(named, ["volume", "snapshot", "address", "network"]);
        assert_eq!(resource_of("usage"), "other");
    }

    #[test]
    fn drift_reads_come_once_an_hour_at_an_offset_of_the_id() {
        let now = 10 * DRIFT_MS + 123;
        let due = drift_due(now, "net_a");
        assert!(due > now && due <= now + DRIFT_MS);
        assert_eq!(drift_due(due, "net_a"), due + DRIFT_MS, "the same slot every hour");
        let slots: std::collections::BTreeSet<i64> =
            (0..200).map(|i| drift_due(now, &format!("net_{i}")).rem_euclid(DRIFT_MS) / 60_000).collect();
        assert!(slots.len() > 40, "200 resources spread over the hour's minutes, not bunched: {}", slots.len());
    }
}
