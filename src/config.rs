//! The flags of each command (`cli` puts them together); every flag also reads a `VPS_GRAPH_*`
//! variable.
use std::net::SocketAddr;

use clap::{Args, ValueEnum};

#[derive(Args, Debug, Clone)]
pub struct DatabaseArgs {
    /// Database URL: `sqlite://path?mode=rwc` (created and migrated on start) or `postgres://…`.
    #[arg(long, env = "VPS_GRAPH_DATABASE_URL", default_value = "sqlite://data/vps-graph.db?mode=rwc")]
    pub database_url: String,
    /// Most database connections (PostgreSQL; SQLite always uses one).
    #[arg(long, env = "VPS_GRAPH_DB_MAX_CONNECTIONS", default_value_t = 16)]
    pub db_max_connections: u32,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Demo {
    Auto,
    On,
    Off,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Toggle {
    On,
    Off,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum LogFormat {
    Pretty,
    Json,
}

#[derive(Args, Debug, Clone)]
pub struct ServeArgs {
    #[command(flatten)]
    pub database: DatabaseArgs,
    /// Address to listen on.
    #[arg(long, env = "VPS_GRAPH_LISTEN", default_value = "127.0.0.1:8080")]
    pub listen: SocketAddr,
    /// Log format (the level is set with RUST_LOG, default info).
    #[arg(long, env = "VPS_GRAPH_LOG_FORMAT", value_enum, default_value = "pretty")]
    pub log_format: LogFormat,
    /// A static operator token for automation, like an admin secret, at least 16 characters
    /// (kept only as a hash in memory).
    #[arg(long, env = "VPS_GRAPH_ADMIN_TOKEN", hide_env_values = true)]
    pub admin_token: Option<crate::secret::Secret>,
    /// When set, `/metrics` answers only requests bearing this token.
    #[arg(long, env = "VPS_GRAPH_METRICS_TOKEN", hide_env_values = true)]
    pub metrics_token: Option<crate::secret::Secret>,
    /// Create the demo tenant, pool and tokens on first start: `auto` does on SQLite only.
    #[arg(long, env = "VPS_GRAPH_DEMO", value_enum, default_value = "auto")]
    pub demo: Demo,
    #[command(flatten)]
    pub limits: LimitArgs,
    #[command(flatten)]
    pub load: LoadArgs,
    #[command(flatten)]
    pub reconcile: ReconcileArgs,
    /// Do not run the in-process simulated cloud (accounts made with `sim: true` need it).
    #[arg(long, env = "VPS_GRAPH_NO_SIM")]
    pub no_sim: bool,
    #[command(flatten)]
    pub sim: SimTiming,
}

#[derive(Args, Debug, Clone, Copy)]
pub struct ReconcileArgs {
    /// Concurrent reconcile runs in this process; 0 serves the API only (other replicas
    /// converge the cloud).
    #[arg(long, env = "VPS_GRAPH_RECONCILE_WORKERS", default_value_t = 8)]
    pub reconcile_workers: usize,
    /// How long a claimed run holds its lease before another replica may take it over, in ms.
    #[arg(long, env = "VPS_GRAPH_LEASE_MS", default_value_t = 60_000)]
    pub lease_ms: i64,
    /// How long to wait for a provider's answer, in ms.
    #[arg(long, env = "VPS_GRAPH_PROVIDER_TIMEOUT_MS", default_value_t = 30_000)]
    pub provider_timeout_ms: u64,
}

/// The simulated cloud's timing, budgets and keeping.
#[derive(Args, Debug, Clone)]
pub struct SimTiming {
    /// The file the simulated cloud keeps what it holds in, read at start and written as it
    /// changes (`serve` on SQLite: `sim-cloud.json` beside the database file, unless given).
    #[arg(long, env = "VPS_GRAPH_SIM_STATE")]
    pub sim_state: Option<std::path::PathBuf>,
    /// Added to every simulated API call, in ms.
    #[arg(long, env = "VPS_GRAPH_SIM_LATENCY_MS", default_value_t = 0)]
    pub sim_latency_ms: u64,
    /// How long a simulated asynchronous action takes, in ms.
    #[arg(long, env = "VPS_GRAPH_SIM_ACTION_MS", default_value_t = 2_000)]
    pub sim_action_ms: u64,
    /// Requests per token per sliding hour at the simulated API.
    #[arg(long, env = "VPS_GRAPH_SIM_PER_HOUR", default_value_t = 5_000)]
    pub sim_per_hour: usize,
    /// Requests per token per minute (the burst limit).
    #[arg(long, env = "VPS_GRAPH_SIM_PER_MINUTE", default_value_t = 250)]
    pub sim_per_minute: usize,
    /// Least time between two snapshots of one simulated volume, in seconds (0: no limit).
    #[arg(long, env = "VPS_GRAPH_SIM_SNAPSHOT_INTERVAL_SECS", default_value_t = 600)]
    pub sim_snapshot_interval_secs: u64,
}

impl SimTiming {
    pub fn config(&self) -> crate::sim::SimConfig {
        crate::sim::SimConfig {
            latency: std::time::Duration::from_millis(self.sim_latency_ms),
            action_time: std::time::Duration::from_millis(self.sim_action_ms),
            per_hour: self.sim_per_hour,
            per_minute: self.sim_per_minute,
            burst_window: std::time::Duration::from_secs(60),
            snapshot_interval: std::time::Duration::from_secs(self.sim_snapshot_interval_secs),
            page_limit: None,
            clock: crate::clock::Clock::system(),
            state_file: self.sim_state.clone(),
        }
    }
}

#[derive(Args, Debug, Clone)]
pub struct SimArgs {
    /// Address to listen on.
    #[arg(long, env = "VPS_GRAPH_SIM_LISTEN", default_value = "127.0.0.1:9090")]
    pub listen: SocketAddr,
    #[command(flatten)]
    pub timing: SimTiming,
}

#[derive(Args, Debug, Clone, Copy)]
pub struct LimitArgs {
    /// Deepest selection a query may have.
    #[arg(long, env = "VPS_GRAPH_MAX_DEPTH", default_value_t = 12)]
    pub max_depth: usize,
    /// Highest complexity a query may have: each field counts one, and a list or connection
    /// counts its items' cost times its `first` (or its cap, or 10 for a list without one).
    /// Introspection is not counted.
    #[arg(long, env = "VPS_GRAPH_MAX_COMPLEXITY", default_value_t = 20_000)]
    pub max_complexity: usize,
    /// Answer introspection (`__schema`, `__type`): GraphiQL, codegen and every GraphQL tool
    /// need it.
    #[arg(long, env = "VPS_GRAPH_INTROSPECTION", value_enum, default_value = "on")]
    pub introspection: Toggle,
    /// Most aliases a query may use.
    #[arg(long, env = "VPS_GRAPH_MAX_ALIASES", default_value_t = 30)]
    pub max_aliases: usize,
    /// Most selections a document may hold once its fragments are expanded where they are
    /// spread (fields, spreads, directives and input values; each fragment's definition counted
    /// once more), measured before any work.
    #[arg(long, env = "VPS_GRAPH_MAX_SELECTIONS", default_value_t = 5_000)]
    pub max_selections: usize,
    /// Most operations in one batched request.
    #[arg(long, env = "VPS_GRAPH_MAX_BATCH", default_value_t = 10)]
    pub max_batch: usize,
    /// Largest request body, in bytes.
    #[arg(long, env = "VPS_GRAPH_MAX_BODY_BYTES", default_value_t = 256 * 1024)]
    pub max_body_bytes: usize,
    /// Longest a request may take before it is answered with TIMEOUT, in milliseconds.
    #[arg(long, env = "VPS_GRAPH_REQUEST_TIMEOUT_MS", default_value_t = 30_000)]
    pub request_timeout_ms: u64,
    /// How long a WebSocket may take to send `connection_init` before it is closed (4408), in
    /// milliseconds.
    #[arg(long, env = "VPS_GRAPH_WS_INIT_TIMEOUT_MS", default_value_t = 10_000)]
    pub ws_init_timeout_ms: u64,
    /// How often the event tailer looks at the outbox when nothing woke it, in milliseconds.
    #[arg(long, env = "VPS_GRAPH_FEED_POLL_MS", default_value_t = 1000)]
    pub feed_poll_ms: u64,
    /// How long events stay in the feed: older ones are removed by an hourly pass, and a cursor
    /// from before them is refused (`30d`, `12h`, `90m`, `3600s`).
    #[arg(long, env = "VPS_GRAPH_EVENT_RETENTION", default_value = "30d", value_parser = parse_duration)]
    pub event_retention: std::time::Duration,
}

/// The load one process takes: requests in flight, each caller's request budget, sockets and
/// connections, and how long an idle one is kept.
#[derive(Args, Debug, Clone, Copy)]
pub struct LoadArgs {
    /// Most requests in flight at once; one more is answered 503 with Retry-After at once.
    #[arg(long, env = "VPS_GRAPH_MAX_IN_FLIGHT", default_value_t = 1024)]
    pub max_in_flight: usize,
    /// Requests a token (or an address, for requests without a valid token) may send a minute;
    /// past it 429 with RateLimit-* headers. WebSocket operations count too.
    #[arg(long, env = "VPS_GRAPH_RATE_LIMIT", default_value_t = 60_000)]
    pub rate_limit: u64,
    /// Count operator tokens against the rate limit and the per-token socket cap too.
    #[arg(long, env = "VPS_GRAPH_RATE_LIMIT_OPERATORS")]
    pub rate_limit_operators: bool,
    /// Most WebSockets and event streams (GraphQL over SSE subscriptions) open at once.
    #[arg(long, env = "VPS_GRAPH_MAX_SOCKETS", default_value_t = 30_000)]
    pub max_sockets: usize,
    /// Most WebSockets and event streams one token holds at once (operators are not counted).
    #[arg(long, env = "VPS_GRAPH_MAX_SOCKETS_PER_TOKEN", default_value_t = 1_000)]
    pub max_sockets_per_token: usize,
    /// Most TCP connections open at once; past it a new one is closed as it is accepted.
    #[arg(long, env = "VPS_GRAPH_MAX_CONNECTIONS", default_value_t = 40_000)]
    pub max_connections: usize,
    /// How long a connection may take to send a request's headers, or keep still between two
    /// requests, in milliseconds.
    #[arg(long, env = "VPS_GRAPH_HEADER_TIMEOUT_MS", default_value_t = 10_000)]
    pub header_timeout_ms: u64,
    /// How often a WebSocket is pinged; one that sends nothing back by the next ping is closed
    /// (1001), in milliseconds.
    #[arg(long, env = "VPS_GRAPH_WS_PING_MS", default_value_t = 30_000)]
    pub ws_ping_ms: u64,
    /// How long a WebSocket may hold no subscription before it is closed (1000), in
    /// milliseconds.
    #[arg(long, env = "VPS_GRAPH_WS_IDLE_MS", default_value_t = 300_000)]
    pub ws_idle_ms: u64,
}

impl Default for LoadArgs {
    fn default() -> Self {
        LoadArgs {
            max_in_flight: 1024,
            rate_limit: 60_000,
            rate_limit_operators: false,
            max_sockets: 30_000,
            max_sockets_per_token: 1_000,
            max_connections: 40_000,
            header_timeout_ms: 10_000,
            ws_ping_ms: 30_000,
            ws_idle_ms: 300_000,
        }
    }
}

/// `<n>d`, `<n>h`, `<n>m` or `<n>s`.
fn parse_duration(text: &str) -> Result<std::time::Duration, String> {
    let unit = |secs: u64| text[..text.len() - 1].parse::<u64>().map(|n| n * secs);
    let secs = match text.chars().last() {
        Some('d') => unit(86_400),
        Some('h') => unit(3_600),
        Some('m') => unit(60),
        Some('s') => unit(1),
        _ => return Err(format!("{text:?}: write a whole number with d, h, m or s, as 30d")),
    };
    match secs {
        Ok(secs) if secs > 0 => Ok(std::time::Duration::from_secs(secs)),
        _ => Err(format!("{text:?}: write a whole number above zero with d, h, m or s, as 30d")),
    }
}

impl Default for LimitArgs {
    fn default() -> Self {
        LimitArgs {
            max_depth: 12,
            max_complexity: 20_000,
            introspection: Toggle::On,
            max_aliases: 30,
            max_selections: 5_000,
            max_batch: 10,
            max_body_bytes: 256 * 1024,
            feed_poll_ms: 1000,
            event_retention: std::time::Duration::from_secs(30 * 86_400),
            request_timeout_ms: 30_000,
            ws_init_timeout_ms: 10_000,
        }
    }
}
