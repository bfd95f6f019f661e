//! Leases hold. A run renews its lease while it is alive, so a second replica's worker never
//! takes the work item of a run that is still waiting on a stalled provider, however short the
//! lease; the provider is asked once. Every state-changing provider call of a run is recorded on
//! its lease first, and one whose lease changed hands sends nothing. A run that panics is that
//! run's error: its item backs off and runs again, and the worker that ran it goes on working.
use crate::common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use common::{Backend, TestApp};
use serde_json::json;
use tokio_util::sync::CancellationToken;
use vps_graph::reconcile::{self, Next, Reconciler, Run, RuntimeConfig};
use vps_graph::sim::Fault;
use vps_graph::store::queue;

const NETWORKS: &str = "vps.networks";

db_test!(a_run_stalled_past_its_lease_keeps_it_and_the_provider_is_asked_once, |backend: Backend| async move {
    // A 1 s lease; the VPC create stalls and the client waits 10 s for its answer.
    let s =
        TestApp::real_time(backend).lease_ms(1_000).provider_timeout(Duration::from_secs(10)).workers(2).build().await;
    let sim = s.server.app.sim.as_ref().unwrap();
    sim.inject("vpcs.create", Fault::Stall, 1);
    let input = json!({ "i": { "tenantId": "acme", "poolId": s.pool, "name": "lan", "idempotencyKey": "lan",
        "subnets": [{ "region": "nyc3", "ipRange": "10.60.0.0/24" }] } });
    s.server.ok(Some(&s.token), "mutation($i: NetworkCreateInput!) { networkCreate(input: $i) { id } }", input).await;
    let asked = Instant::now();
    while sim.calls("vpcs.create") == 0 {
        assert!(asked.elapsed() < Duration::from_secs(10), "the VPC create was never sent");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // For three leases' time the run waits on the provider. Another replica's worker asks for
    // due work all along, as far in the future as it likes: it never gets the network's item.
    let db = &s.server.app.services.db;
    let stalled = Instant::now();
    while stalled.elapsed() < Duration::from_secs(3) {
        let taken = queue::claim(db, "another-replica", &[NETWORKS], i64::MAX / 2, 60_000, 10).await.unwrap();
        assert!(taken.is_empty(), "a replica took a running item after {:?}: {taken:?}", stalled.elapsed());
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(sim.calls("vpcs.create"), 1, "the provider was asked once while the run lasted");
});

/// Panics on its first run, then is done.
struct PanicsOnce {
    runs: AtomicUsize,
}

#[async_trait::async_trait]
impl Reconciler for PanicsOnce {
    fn kind(&self) -> &'static str {
        "test.panics-once"
    }

    async fn run(&self, _run: &Run<'_>) -> vps_graph::error::Result<Next> {
        if self.runs.fetch_add(1, Ordering::SeqCst) == 0 {
            panic!("a bug in a reconciler");
        }
        Ok(Next::Done)
    }
}

db_test!(a_run_that_panics_backs_off_and_its_worker_goes_on, |backend: Backend| async move {
    let s = TestApp::on_clock(backend).workers(0).build().await;
    let services = s.server.app.services.clone();
    let reconciler = Arc::new(PanicsOnce { runs: AtomicUsize::new(0) });
    let stop = CancellationToken::new();
    let config = RuntimeConfig { workers: 1, lease_ms: 5_000, poll: Duration::from_millis(20) };
    let providers = s.server.app.providers.clone();
    let runtime =
        reconcile::start(services.clone(), providers, vec![reconciler.clone()], config, Arc::default(), stop.clone());
    let kind = reconciler.kind();
    queue::wake(&services.db, kind, "item", s.clock.now_ms()).await.unwrap();

    let failed = wait_for(|| async {
        queue::item(&services.db, kind, "item").await.unwrap().filter(|(_, _, error)| error.is_some())
    })
    .await;
    let (due_at, attempts, error) = failed;
    assert!(error.as_deref().unwrap().contains("a bug in a reconciler"), "{error:?}");
    assert_eq!(attempts, 1);
    assert_eq!(due_at, s.clock.now_ms() + reconcile::RETRY_LATER_MS, "backs off like any failed run");

    // Past its back-off, the same single worker runs it again, and it is done.
    s.clock.advance(reconcile::RETRY_LATER_MS);
    wait_for(|| async { queue::item(&services.db, kind, "item").await.unwrap().is_none().then_some(()) }).await;
    assert_eq!(reconciler.runs.load(Ordering::SeqCst), 2);
    stop.cancel();
    runtime.stopped().await;
});

/// Polls `read` until it gives something, at most 10 s.
async fn wait_for<T, F, Fut>(read: F) -> T
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    for _ in 0..500 {
        if let Some(found) = read().await {
            return found;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("never happened");
}

/// Reserves an address at the provider, after taking its own lease away first when `steal`.
struct Reserves {
    account: String,
    steal: bool,
    answer: tokio::sync::Mutex<Option<Result<String, String>>>,
}

#[async_trait::async_trait]
impl Reconciler for Reserves {
    fn kind(&self) -> &'static str {
        "test.reserves"
    }

    async fn run(&self, run: &Run<'_>) -> vps_graph::error::Result<Next> {
        if self.steal {
            // Another replica took the item over (its lease ran out under a stalled run, say).
            let db = &run.services.db;
            let taken = format!(
                "UPDATE work_items SET lease_epoch = lease_epoch + 1, lease_owner = 'another-replica' \
                 WHERE kind = '{}'",
                self.kind()
            );
            sea_orm::ConnectionTrait::execute_unprepared(db, &taken).await.unwrap();
        }
        let addresses = run.provider(&self.account).await?.digitalocean().unwrap().clone();
        let reserved = addresses.address_reserve(vps_graph::provider::Family::V4, "nyc3").await;
        *self.answer.lock().await = Some(reserved.map(|a| a.ip).map_err(|e| e.message().to_owned()));
        Ok(Next::After(3_600_000))
    }
}

async fn reserve_in_a_run(s: &TestApp, steal: bool) -> (Result<String, String>, i64) {
    let services = s.server.app.services.clone();
    let reconciler = Arc::new(Reserves { account: s.account.clone(), steal, answer: Default::default() });
    let stop = CancellationToken::new();
    let config = RuntimeConfig { workers: 1, lease_ms: 5_000, poll: Duration::from_millis(20) };
    let providers = s.server.app.providers.clone();
    let runtime =
        reconcile::start(services.clone(), providers, vec![reconciler.clone()], config, Arc::default(), stop.clone());
    queue::wake(&services.db, reconciler.kind(), "item", s.clock.now_ms()).await.unwrap();
    let answer = wait_for(|| async { reconciler.answer.lock().await.clone() }).await;
    let calls = wait_for(|| async {
        use sea_orm::EntityTrait;
        let item =
            vps_graph::store::entity::work_item::Entity::find_by_id((reconciler.kind().to_owned(), "item".to_owned()))
                .one(&services.db)
                .await
                .unwrap()
                .unwrap();
        // Once the run has finished (the stolen item stays leased to the other replica).
        (steal || item.lease_owner.is_none()).then_some(item.provider_calls)
    })
    .await;
    stop.cancel();
    runtime.stopped().await;
    (answer, calls)
}

db_test!(a_run_whose_lease_changed_hands_sends_no_state_changing_call, |backend: Backend| async move {
    let s = TestApp::on_clock(backend).workers(0).build().await;
    let sim = s.server.app.sim.as_ref().unwrap();
    let (answer, calls) = reserve_in_a_run(&s, true).await;
    assert!(answer.as_ref().is_err_and(|e| e.contains("lease changed hands")), "{answer:?}");
    assert_eq!(sim.calls("reserved_ips.create"), 0, "nothing was sent");
    assert_eq!(calls, 0, "nothing recorded on the lease the run lost");

    // The same run holding its lease sends it, recorded first.
    let (answer, calls) = reserve_in_a_run(&s, false).await;
    assert!(answer.is_ok(), "{answer:?}");
    assert_eq!(sim.calls("reserved_ips.create"), 1);
    assert_eq!(calls, 1, "the call was recorded on the lease");
});
