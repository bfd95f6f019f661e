//! Process metrics for Prometheus, through the Prometheus client library: counters, gauges and
//! latency histograms, each a typed family. Updates are atomic; a labelled family takes a shared
//! read lock to find its series, and the per-event delivery path touches only a plain counter.
use std::sync::atomic::AtomicU64;
use std::time::Duration;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

/// Latency buckets from 1 ms to about 33 s, doubling.
fn latency() -> Histogram {
    Histogram::new(exponential_buckets(0.001, 2.0, 16))
}

type Latencies<L> = Family<L, Histogram, fn() -> Histogram>;

fn latencies<L: Clone + std::hash::Hash + Eq>() -> Latencies<L> {
    Family::new_with_constructor(latency as fn() -> Histogram)
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct HttpRequest {
    pub route: String,
    pub method: String,
    pub status: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct HttpOperation {
    /// `query`, `mutation`, `subscription`, `batch`, or `none` for a request that is not GraphQL.
    pub operation: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ErrorCode {
    pub code: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ReconcileRun {
    pub kind: String,
    /// What the run converged (`volume`, `snapshot`, `address` …): one work kind may hold several.
    pub resource: String,
    pub outcome: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ProviderCall {
    pub provider: String,
    pub endpoint: String,
    pub status: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct Account {
    pub account: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct AccountPurpose {
    pub account: String,
    pub purpose: String,
}

pub struct Metrics {
    registry: Registry,
    pub http_requests: Family<HttpRequest, Counter>,
    pub http_seconds: Latencies<HttpOperation>,
    pub graphql_errors: Family<ErrorCode, Counter>,
    pub subscribers: Gauge,
    /// Executions answering them: subscribers that ask the same share one.
    pub subscription_executions: Gauge,
    pub websocket_connections: Gauge,
    pub events_delivered: Counter,
    pub events_tailed: Counter,
    /// Subscribers registered on this process's event feed (a socket's token watch too).
    pub feed_registered: Gauge,
    /// How old the newest event was when the tailer handed it to the subscribers.
    pub feed_lag_seconds: Gauge<f64, AtomicU64>,
    pub reconcile_runs: Family<ReconcileRun, Counter>,
    pub reconcile_seconds: Latencies<ReconcileRun>,
    pub queue_due: Gauge,
    pub queue_failing: Gauge,
    pub queue_oldest_due_seconds: Gauge<f64, AtomicU64>,
    pub provider_calls: Family<ProviderCall, Counter>,
    pub provider_seconds: Latencies<ProviderCall>,
    pub provider_budget_remaining: Family<Account, Gauge>,
    pub provider_budget_limit: Family<Account, Gauge>,
    pub provider_calls_last_hour: Family<AccountPurpose, Gauge>,
    pub inventory_listed: Family<Account, Gauge>,
    pub inventory_bytes: Family<Account, Gauge>,
    pub inventory_listed_at: Family<Account, Gauge>,
}

/// What an account's last inventory pass listed.
pub struct Inventory {
    /// Resources listed, of every kind.
    pub listed: usize,
    /// About what the listing held in memory.
    pub bytes: usize,
    /// When it began, in ms on the service clock.
    pub listed_at: i64,
}

impl Default for Metrics {
    fn default() -> Self {
        let mut metrics = Metrics {
            registry: Registry::default(),
            http_requests: Family::default(),
            http_seconds: latencies(),
            graphql_errors: Family::default(),
            subscribers: Gauge::default(),
            subscription_executions: Gauge::default(),
            websocket_connections: Gauge::default(),
            events_delivered: Counter::default(),
            events_tailed: Counter::default(),
            feed_lag_seconds: Gauge::default(),
            feed_registered: Gauge::default(),
            reconcile_runs: Family::default(),
            reconcile_seconds: latencies(),
            queue_due: Gauge::default(),
            queue_failing: Gauge::default(),
            queue_oldest_due_seconds: Gauge::default(),
            provider_calls: Family::default(),
            provider_seconds: latencies(),
            provider_budget_remaining: Family::default(),
            provider_budget_limit: Family::default(),
            provider_calls_last_hour: Family::default(),
            inventory_listed: Family::default(),
            inventory_bytes: Family::default(),
            inventory_listed_at: Family::default(),
        };
        metrics.register();
        metrics
    }
}

impl Metrics {
    fn register(&mut self) {
        let r = &mut self.registry;
        r.register("vps_graph_http_requests", "HTTP requests by route, method and status.", self.http_requests.clone());
        r.register(
            "vps_graph_http_request_seconds",
            "HTTP request latency by GraphQL operation type.",
            self.http_seconds.clone(),
        );
        r.register("vps_graph_graphql_errors", "GraphQL errors by extensions.code.", self.graphql_errors.clone());
        r.register("vps_graph_subscribers", "Open GraphQL subscriptions.", self.subscribers.clone());
        r.register(
            "vps_graph_subscription_executions",
            "Executions answering the open subscriptions: those that ask the same share one.",
            self.subscription_executions.clone(),
        );
        r.register(
            "vps_graph_websocket_connections",
            "Open WebSocket connections.",
            self.websocket_connections.clone(),
        );
        r.register("vps_graph_events_delivered", "Events delivered to subscribers.", self.events_delivered.clone());
        r.register(
            "vps_graph_events_tailed",
            "Events read from the outbox by this process's tailer.",
            self.events_tailed.clone(),
        );
        r.register(
            "vps_graph_feed_registered",
            "Subscribers registered on this process's event feed, each seeing every event committed from then on \
             (a socket's token watch counts too).",
            self.feed_registered.clone(),
        );
        r.register(
            "vps_graph_feed_lag_seconds",
            "Age of the newest event when this process's tailer handed it out.",
            self.feed_lag_seconds.clone(),
        );
        r.register(
            "vps_graph_reconcile_runs",
            "Reconcile runs by kind, resource and outcome.",
            self.reconcile_runs.clone(),
        );
        r.register(
            "vps_graph_reconcile_run_seconds",
            "Reconcile run latency by kind, resource and outcome.",
            self.reconcile_seconds.clone(),
        );
        r.register("vps_graph_queue_due", "Work items due now.", self.queue_due.clone());
        r.register("vps_graph_sql_statements", "SQL statements run.", crate::store::SQL_STATEMENTS.clone());
        r.register("vps_graph_queue_failing", "Work items whose last run failed.", self.queue_failing.clone());
        r.register(
            "vps_graph_queue_oldest_due_seconds",
            "How long the oldest due work item has waited.",
            self.queue_oldest_due_seconds.clone(),
        );
        r.register(
            "vps_graph_provider_calls",
            "Provider calls by provider, endpoint and status.",
            self.provider_calls.clone(),
        );
        r.register(
            "vps_graph_provider_call_seconds",
            "Provider call latency by provider, endpoint and status.",
            self.provider_seconds.clone(),
        );
        r.register(
            "vps_graph_provider_budget_remaining",
            "Provider API requests left in the account's budget.",
            self.provider_budget_remaining.clone(),
        );
        r.register(
            "vps_graph_provider_budget_limit",
            "The provider's limit of API requests an hour for the account.",
            self.provider_budget_limit.clone(),
        );
        r.register(
            "vps_graph_provider_calls_last_hour",
            "Provider API requests this replica sent for the account in the last hour, by purpose (asked, following, drift).",
            self.provider_calls_last_hour.clone(),
        );
        r.register(
            "vps_graph_inventory_listed",
            "Resources the account's last inventory pass listed, of every kind.",
            self.inventory_listed.clone(),
        );
        r.register(
            "vps_graph_inventory_bytes",
            "About the memory the account's last inventory pass held for its listings.",
            self.inventory_bytes.clone(),
        );
        r.register(
            "vps_graph_inventory_listed_at_seconds",
            "When the account's last whole inventory pass began (every settled resource read for drift), in seconds since the epoch.",
            self.inventory_listed_at.clone(),
        );
    }

    /// An inventory pass of `account`; `whole` when it took every listing it needed.
    pub fn inventory(&self, account: &str, figures: &Inventory, whole: bool) {
        let labels = Account { account: account.to_owned() };
        self.inventory_listed.get_or_create(&labels).set(figures.listed as i64);
        self.inventory_bytes.get_or_create(&labels).set(figures.bytes as i64);
        if whole {
            self.inventory_listed_at.get_or_create(&labels).set(figures.listed_at / 1000);
        }
    }

    /// The account's calls of the last hour, by purpose (`asked`, `following`, `drift`).
    pub fn provider_calls_last_hour(&self, account: &str, by_purpose: &[(&str, u64)]) {
        for (purpose, calls) in by_purpose {
            let labels = AccountPurpose { account: account.to_owned(), purpose: (*purpose).to_owned() };
            self.provider_calls_last_hour.get_or_create(&labels).set(*calls as i64);
        }
    }

    /// The OpenMetrics text exposition.
    pub fn render(&self) -> String {
        let mut out = String::new();
        let _ = prometheus_client::encoding::text::encode(&mut out, &self.registry);
        out
    }

    /// Counts a provider call and its latency.
    pub fn provider_call(&self, provider: &str, endpoint: &str, status: &str, took: Duration) {
        let labels =
            ProviderCall { provider: provider.to_owned(), endpoint: endpoint.to_owned(), status: status.to_owned() };
        self.provider_calls.get_or_create(&labels).inc();
        self.provider_seconds.get_or_create(&labels).observe(took.as_secs_f64());
    }
}

/// Keeps a gauge up by one while alive.
pub struct GaugeGuard {
    gauge: Gauge,
}

impl GaugeGuard {
    pub fn new(gauge: &Gauge) -> Self {
        gauge.inc();
        GaugeGuard { gauge: gauge.clone() }
    }
}

impl Drop for GaugeGuard {
    fn drop(&mut self) {
        self.gauge.dec();
    }
}
