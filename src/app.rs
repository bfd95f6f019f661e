//! Wiring: the database, the feed, the services, the reconcilers, the simulated cloud, the
//! schema and the router of one process.
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use crate::clock::Clock;
use crate::config::{Demo, LimitArgs, LoadArgs, ServeArgs};
use crate::error::{Error, Result};
use crate::feed::Feed;
use crate::graphql::{self, Limits, Schemas};
use crate::http::{self, HttpState};
use crate::metrics::Metrics;
use crate::provider::Providers;
use crate::reconcile::events::{self, EventRetentionReconciler};
use crate::reconcile::filesystems::FilesystemReconciler;
use crate::reconcile::instances::InstanceReconciler;
use crate::reconcile::inventory::{self, InventoryReconciler};
use crate::reconcile::networks::NetworkReconciler;
use crate::reconcile::resources::ProviderResourceReconciler;
use crate::reconcile::usage::{self, UsageReconciler};
use crate::reconcile::{self, Reconciler, RuntimeConfig};
use crate::service::bootstrap::{self, FirstStart};
use crate::service::tokens;
use crate::services::Services;
use crate::sim::{Sim, SimConfig};
use crate::store::{self, queue};

/// What a process needs to start, from the command line or from a test.
#[derive(Clone, Debug)]
pub struct AppConfig {
    pub database_url: String,
    pub db_max_connections: u32,
    pub admin_token: Option<crate::secret::Secret>,
    /// When set, `/metrics` needs it as a bearer token.
    pub metrics_token: Option<crate::secret::Secret>,
    pub demo: bool,
    pub limits: LimitArgs,
    pub load: LoadArgs,
    /// The in-process simulated cloud, if any.
    pub sim: Option<SimConfig>,
    pub runtime: RuntimeConfig,
    pub provider_timeout: Duration,
    pub clock: Clock,
}

impl From<&ServeArgs> for AppConfig {
    fn from(args: &ServeArgs) -> Self {
        AppConfig {
            database_url: args.database.database_url.clone(),
            db_max_connections: args.database.db_max_connections,
            admin_token: args.admin_token.clone(),
            metrics_token: args.metrics_token.clone(),
            demo: match args.demo {
                Demo::On => true,
                Demo::Off => false,
                Demo::Auto => args.database.database_url.starts_with("sqlite:"),
            },
            limits: args.limits,
            load: args.load,
            sim: (!args.no_sim).then(|| {
                let mut sim = args.sim.config();
                sim.state_file =
                    sim.state_file.or_else(|| beside_sqlite(&args.database.database_url, "sim-cloud.json"));
                sim
            }),
            runtime: RuntimeConfig {
                workers: args.reconcile.reconcile_workers,
                lease_ms: args.reconcile.lease_ms,
                ..RuntimeConfig::default()
            },
            provider_timeout: Duration::from_millis(args.reconcile.provider_timeout_ms),
            clock: Clock::system(),
        }
    }
}

/// `name` in the folder of a SQLite database file (none for PostgreSQL or an in-memory one): where
/// the demo keeps its simulated cloud, so that the cloud and the rows describing it go together.
fn beside_sqlite(database_url: &str, name: &str) -> Option<std::path::PathBuf> {
    let file = std::path::Path::new(sqlite_file(database_url)?);
    Some(file.parent().unwrap_or(std::path::Path::new("")).join(name))
}

/// The file of a SQLite database URL; None for PostgreSQL or an in-memory database.
fn sqlite_file(url: &str) -> Option<&str> {
    let rest = url.strip_prefix("sqlite://").or_else(|| url.strip_prefix("sqlite:"))?;
    let path = rest.split('?').next().unwrap_or("");
    (!path.is_empty() && !path.starts_with(':')).then_some(path)
}

/// `sqlite::memory:`, `sqlite://:memory:` or a `mode=memory` URL.
fn sqlite_in_memory(url: &str) -> bool {
    url.starts_with("sqlite:") && (sqlite_file(url).is_none() || url.contains("mode=memory"))
}

pub struct App {
    pub services: Services,
    /// The provider clients, one per account: the reconcilers' (and the budget the GraphQL
    /// layer shows).
    pub providers: Arc<Providers>,
    pub schema: Schemas,
    pub stop: CancellationToken,
    /// Set on the first start of a database with the demo on: the tokens to print once.
    pub first_start: Option<FirstStart>,
    /// The in-process simulated cloud, when running.
    pub sim: Option<Sim>,
    limits: LimitArgs,
    load: http::Load,
    /// Whether the database answers, as its prober last saw.
    pub health: store::health::Health,
    metrics_token: Option<crate::secret::Secret>,
    runtime: reconcile::Runtime,
}

impl App {
    pub async fn start(config: AppConfig) -> Result<App> {
        if config.admin_token.as_ref().is_some_and(|t| t.expose().trim().len() < 16) {
            return Err(Error::invalid_input("adminToken", "the admin token must be at least 16 characters"));
        }
        if sqlite_in_memory(&config.database_url) {
            return Err(Error::invalid_input(
                "databaseUrl",
                "an in-memory SQLite database lives only as long as its connection: one replaced by the \
                 pool would start empty; give a file, e.g. sqlite://data/vps-graph.db?mode=rwc",
            ));
        }
        prepare_sqlite_dir(&config.database_url);
        let db = store::connect(&config.database_url, config.db_max_connections).await?;
        let metrics = Arc::new(Metrics::default());
        let stop = CancellationToken::new();
        let poll = Duration::from_millis(config.limits.feed_poll_ms.max(10));
        let feed = Feed::start(db.clone(), metrics.clone(), config.clock.clone(), poll, stop.clone()).await?;
        let (sim, sim_url) = match config.sim.clone() {
            Some(sim_config) => {
                let sim_config = SimConfig { clock: config.clock.clone(), ..sim_config };
                let (sim, url) = Sim::spawn_local(sim_config)
                    .await
                    .map_err(|e| Error::internal(format!("the simulated cloud: {e}")))?;
                (Some(sim), Some(url))
            }
            None => (None, None),
        };
        let work = Arc::new(Notify::new());
        let providers = Arc::new(Providers::new(sim_url.clone(), config.provider_timeout, metrics.clone()));
        let services = Services {
            db,
            deployment: feed.epoch().to_owned(),
            feed,
            sim_url,
            metrics,
            admin_token_hash: config.admin_token.as_ref().map(|t| tokens::hash_secret(t.expose())),
            clock: config.clock.clone(),
            work: work.clone(),
        };
        let reconcilers: Vec<Arc<dyn Reconciler>> = vec![
            Arc::new(NetworkReconciler),
            Arc::new(InstanceReconciler),
            Arc::new(ProviderResourceReconciler),
            Arc::new(FilesystemReconciler),
            Arc::new(InventoryReconciler),
            Arc::new(UsageReconciler),
            Arc::new(EventRetentionReconciler { retention: config.limits.event_retention }),
            Arc::new(crate::service::schedules::ScheduleRunner),
        ];
        // The usage pass's one work item: made on the first start, and due now on every start,
        // so a pass catches up on the hours that closed while no process ran.
        queue::wake(&services.db, usage::KIND, usage::ITEM, services.clock.now_ms()).await?;
        queue::wake(&services.db, events::KIND, events::ITEM, services.clock.now_ms()).await?;
        for account in store::pools::all_accounts(&services.db).await? {
            queue::ensure(&services.db, inventory::KIND, &account.id, services.clock.now_ms()).await?;
        }
        let runtime = reconcile::start(
            services.clone(),
            providers.clone(),
            reconcilers,
            config.runtime.clone(),
            work,
            stop.clone(),
        );
        let first_start = if config.demo { bootstrap::demo(&services).await? } else { None };
        let health = store::health::Health::up();
        health.watch(&config.database_url, stop.clone());
        let limits = Limits {
            depth: config.limits.max_depth,
            complexity: config.limits.max_complexity,
            aliases: config.limits.max_aliases,
            selections: config.limits.max_selections,
            deadline: Duration::from_millis(config.limits.request_timeout_ms),
            introspection: config.limits.introspection == crate::config::Toggle::On,
        };
        let schema = graphql::build(services.clone(), providers.clone(), limits);
        let metrics_token = config.metrics_token;
        let load = http::Load::new(config.load);
        Ok(App {
            services,
            providers,
            schema,
            stop,
            first_start,
            sim,
            limits: config.limits,
            load,
            health,
            metrics_token,
            runtime,
        })
    }

    /// Stops the feed and the reconcilers: runs in progress finish, then the leases are given back.
    pub async fn shutdown(self, within: Duration) {
        self.stop.cancel();
        if tokio::time::timeout(within, self.runtime.stopped()).await.is_err() {
            tracing::warn!("reconcile runs still going after {within:?}; their leases will expire");
        }
    }

    /// Runs the reconcile work due now on the app's clock, here (`reconcile::Runtime::run_due`).
    pub async fn run_due(&self) -> Result<usize> {
        self.runtime.run_due().await
    }

    pub fn router(&self) -> Router {
        let state = HttpState {
            schema: self.schema.clone(),
            services: self.services.clone(),
            metrics: self.services.metrics.clone(),
            max_batch: self.limits.max_batch,
            ws_init_timeout: Duration::from_millis(self.limits.ws_init_timeout_ms),
            request_timeout: Duration::from_millis(self.limits.request_timeout_ms),
            metrics_token: self.metrics_token.clone(),
            max_body_bytes: self.limits.max_body_bytes,
            load: self.load.clone(),
            health: self.health.clone(),
        };
        http::router(state, &self.limits)
    }
}

/// A relative SQLite file needs its folder (`./data/` by default) before it can be created.
fn prepare_sqlite_dir(url: &str) {
    let Some(path) = sqlite_file(url) else { return };
    if let Some(parent) = std::path::Path::new(path).parent().filter(|p| !p.as_os_str().is_empty()) {
        let _ = std::fs::create_dir_all(parent);
    }
}

#[cfg(test)]
mod tests {
    use super::beside_sqlite;

    #[test]
    fn the_demo_cloud_is_kept_beside_its_sqlite_file() {
        let at = |url: &str| beside_sqlite(url, "sim-cloud.json").map(|p| p.display().to_string());
        assert_eq!(at("sqlite://data/vps-graph.db?mode=rwc").as_deref(), Some("data/sim-cloud.json"));
        assert_eq!(at("sqlite:///var/lib/vg/db.sqlite").as_deref(), Some("/var/lib/vg/sim-cloud.json"));
        assert_eq!(at("sqlite://vps-graph.db").as_deref(), Some("sim-cloud.json"));
        assert_eq!(at("sqlite::memory:"), None);
        assert_eq!(at("postgres://postgres@127.0.0.1/test"), None);
    }

    #[test]
    fn an_in_memory_sqlite_database_is_told_apart_from_a_file() {
        for url in ["sqlite::memory:", "sqlite://:memory:", "sqlite://shared.db?mode=memory&cache=shared"] {
            assert!(super::sqlite_in_memory(url), "{url}");
        }
        for url in ["sqlite://data/vps-graph.db?mode=rwc", "sqlite:db.sqlite", "postgres://postgres@127.0.0.1/test"] {
            assert!(!super::sqlite_in_memory(url), "{url}");
        }
    }
}
