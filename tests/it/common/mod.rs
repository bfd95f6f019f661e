//! Test harness: a fresh database per test (SQLite on a temp file always; with `TEST_DATABASE_URL`
//! a new PostgreSQL database, dropped afterwards), the whole app on a loopback port, and a
//! client that speaks GraphQL to it over HTTP and WebSocket.
#![allow(dead_code)]

use std::net::SocketAddr;
use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::http::HeaderValue;
use vps_graph::app::{App, AppConfig};
use vps_graph::clock::Clock;
use vps_graph::config::LimitArgs;
use vps_graph::reconcile::RuntimeConfig;
use vps_graph::sim::SimConfig;

pub const ADMIN: &str = "test-admin-token";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backend {
    Sqlite,
    Postgres,
}

/// Generates `<name>::sqlite` and `<name>::postgres` from one async body taking a `Backend`.
/// The PostgreSQL variant says so and returns when `TEST_DATABASE_URL` is not set.
/// A file's own handle on a `TestApp`, for the helpers it adds (`impl Setup { … }`): every file
/// is a module of one test binary, so none may add methods to `TestApp` itself.
#[macro_export]
macro_rules! local_app {
    ($name:ident) => {
        struct $name($crate::common::TestApp);

        impl std::ops::Deref for $name {
            type Target = $crate::common::TestApp;
            fn deref(&self) -> &$crate::common::TestApp {
                &self.0
            }
        }

        impl From<$crate::common::TestApp> for $name {
            fn from(app: $crate::common::TestApp) -> Self {
                $name(app)
            }
        }
    };
}

#[macro_export]
macro_rules! db_test {
    ($name:ident, $body:expr) => {
        mod $name {
            use super::*;
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn sqlite() {
                ($body)($crate::common::Backend::Sqlite).await;
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn postgres() {
                if $crate::common::postgres_base().is_none() {
                    eprintln!("TEST_DATABASE_URL is not set: PostgreSQL variant not run");
                    return;
                }
                ($body)($crate::common::Backend::Postgres).await;
            }
        }
    };
}

pub fn postgres_base() -> Option<String> {
    std::env::var("TEST_DATABASE_URL").ok().filter(|u| !u.is_empty())
}

/// A database for one test; a PostgreSQL one is dropped with it.
pub struct TestDb {
    pub url: String,
    drop_name: Option<String>,
    drop_file: Option<std::path::PathBuf>,
}

impl TestDb {
    pub async fn new(backend: Backend) -> TestDb {
        match backend {
            // A file, as the service runs: `sqlite::memory:` lives only as long as its one
            // connection, and the pool replaces a connection whose query was cancelled (a client
            // gone mid-request), which left the next request an empty database.
            Backend::Sqlite => {
                let name = format!("vpsg_t_{}.db", ulid::Ulid::generate().to_string().to_lowercase());
                let file = std::env::temp_dir().join(name);
                TestDb { url: format!("sqlite://{}?mode=rwc", file.display()), drop_name: None, drop_file: Some(file) }
            }
            Backend::Postgres => {
                let base = postgres_base().expect("TEST_DATABASE_URL");
                let name = format!("vpsg_t_{}", ulid::Ulid::generate().to_string().to_lowercase());
                vps_graph::store::admin::execute(&base, &format!("CREATE DATABASE {name}"))
                    .await
                    .expect("create the test database");
                TestDb {
                    url: vps_graph::store::admin::with_database(&base, &name),
                    drop_name: Some(name),
                    drop_file: None,
                }
            }
        }
    }
}

impl Drop for TestDb {
    fn drop(&mut self) {
        if let Some(file) = self.drop_file.take() {
            for suffix in ["", "-wal", "-shm"] {
                let _ = std::fs::remove_file(format!("{}{suffix}", file.display()));
            }
        }
        let Some(name) = self.drop_name.take() else { return };
        let base = postgres_base().expect("TEST_DATABASE_URL");
        // Drop runs inside the test's runtime: use a thread with its own.
        let _ = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
            let _ = rt.block_on(vps_graph::store::admin::execute(
                &base,
                &format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"),
            ));
        })
        .join();
    }
}

/// The sim's settings for tests that drive the clock: actions of 50 ms, no least time between
/// snapshots, and no rate limit.
pub fn quick_sim() -> SimConfig {
    SimConfig {
        action_time: Duration::from_millis(50),
        snapshot_interval: Duration::ZERO,
        per_hour: 1_000_000,
        per_minute: 1_000_000,
        ..SimConfig::default()
    }
}

pub fn config(url: &str) -> AppConfig {
    AppConfig {
        database_url: url.to_owned(),
        db_max_connections: 16,
        admin_token: Some(ADMIN.into()),
        metrics_token: None,
        demo: false,
        limits: LimitArgs { feed_poll_ms: 200, ..LimitArgs::default() },
        load: vps_graph::config::LoadArgs::default(),
        sim: Some(SimConfig::default()),
        runtime: RuntimeConfig { workers: 4, lease_ms: 5_000, poll: Duration::from_millis(50) },
        provider_timeout: Duration::from_secs(2),
        clock: Clock::system(),
    }
}

/// Where every manual clock starts: on the hour, so that hour-bound tests (usage) count from it.
pub const START: i64 = 1_800_000_000_000;

/// One test's world: the app on a fresh database, tenant `acme` with a `compute:*` token, and a
/// pool at the in-process sim offered to it. Each test file adds its own helpers with an `impl`
/// (the harness is a module of every test crate, so the type is each crate's own).
pub struct TestApp {
    pub server: TestServer,
    /// The app's clock, which the sim's actions run on too: manual from `START` unless the
    /// builder was told `real_time`.
    pub clock: Clock,
    pub account: String,
    pub pool: String,
    pub token: String,
}

/// How a `TestApp` is made; see `TestApp::driven`, `TestApp::on_clock` and `TestApp::real_time`.
pub struct TestAppBuilder {
    backend: Backend,
    clock: Clock,
    lease_ms: Option<i64>,
    provider_timeout: Option<Duration>,
    sim: SimConfig,
    workers: Option<usize>,
    aws_zones: Option<Vec<&'static str>>,
    regions: Vec<&'static str>,
    own_account: bool,
    quotas: Value,
}

impl TestApp {
    /// The mutation `field` with `input`, by the tenant's token, selecting `selection`: its whole
    /// answer (data or errors).
    pub async fn call(&self, field: &str, selection: &str, input: Value) -> Value {
        let mut chars = field.chars();
        let input_type = chars.next().unwrap().to_ascii_uppercase().to_string() + chars.as_str() + "Input";
        let query = format!("mutation($i: {input_type}!) {{ {field}(input: $i) {{ {selection} }} }}");
        self.server.gql(Some(&self.token), &query, json!({ "i": input })).await
    }

    /// A test that drives the clock itself: a manual clock and the quick sim. (Leases are
    /// measured on the database's clock, so moving the manual one never expires a run's lease.)
    pub fn driven(backend: Backend) -> TestAppBuilder {
        TestApp::on_clock(backend)
    }

    /// A manual clock and the quick sim, with the usual lease.
    pub fn on_clock(backend: Backend) -> TestAppBuilder {
        TestAppBuilder {
            backend,
            clock: Clock::manual(START),
            lease_ms: None,
            provider_timeout: None,
            sim: quick_sim(),
            workers: None,
            aws_zones: None,
            regions: vec!["nyc3"],
            own_account: false,
            quotas: json!([]),
        }
    }

    /// The system clock and the sim at its own pace: for what needs no clock.
    pub fn real_time(backend: Backend) -> TestAppBuilder {
        TestAppBuilder { clock: Clock::system(), sim: SimConfig::default(), ..TestApp::on_clock(backend) }
    }
}

impl TestAppBuilder {
    /// The DigitalOcean regions of the pool's account (`nyc3` unless told).
    pub fn regions(self, regions: &[&'static str]) -> Self {
        TestAppBuilder { regions: regions.to_vec(), ..self }
    }

    /// The pool is on an AWS account at the sim with these zones of us-east-1.
    pub fn aws(self, zones: &[&'static str]) -> Self {
        TestAppBuilder { aws_zones: Some(zones.to_vec()), ..self }
    }

    /// The pool is on the tenant's own account (BYO), not the platform's.
    pub fn own_account(self) -> Self {
        TestAppBuilder { own_account: true, ..self }
    }

    /// The quotas the pool is offered with, besides ample ones of what the test does not name
    /// (`ROOMY`).
    pub fn quotas(self, quotas: Value) -> Self {
        TestAppBuilder { quotas, ..self }
    }

    pub fn sim(self, sim: SimConfig) -> Self {
        TestAppBuilder { sim, ..self }
    }

    /// The reconcile workers' lease (5 s unless told).
    pub fn lease_ms(self, lease_ms: i64) -> Self {
        TestAppBuilder { lease_ms: Some(lease_ms), ..self }
    }

    /// How long the provider clients wait for an answer (2 s unless told).
    pub fn provider_timeout(self, timeout: Duration) -> Self {
        TestAppBuilder { provider_timeout: Some(timeout), ..self }
    }

    /// Reconciler workers (0: none runs, and only what the calls record is seen).
    pub fn workers(self, workers: usize) -> Self {
        TestAppBuilder { workers: Some(workers), ..self }
    }

    pub async fn build(self) -> TestApp {
        let db = TestDb::new(self.backend).await;
        let mut config = config(&db.url);
        config.clock = self.clock.clone();
        config.sim = Some(self.sim);
        if let Some(lease_ms) = self.lease_ms {
            config.runtime.lease_ms = lease_ms;
        }
        if let Some(timeout) = self.provider_timeout {
            config.provider_timeout = timeout;
        }
        if let Some(workers) = self.workers {
            config.runtime.workers = workers;
        }
        let mut server = TestServer::with_config(config).await;
        server._db = Some(db);
        server.tenant("acme").await;
        let tenant = self.own_account.then_some("acme");
        let (account, pool) = match &self.aws_zones {
            Some(zones) => server.aws_sim_pool("aws", zones, tenant).await,
            None => server.sim_account_pool("sim", &self.regions, tenant).await,
        };
        server.offer(&pool, "acme", self.quotas).await;
        let token = server.token(Some("acme"), &[("compute:*", "tenant/acme")]).await;
        TestApp { server, clock: self.clock, account, pool, token }
    }
}

/// What a test pool is offered of what its test does not name: room enough that a test of
/// something else never meets a quota. Addresses are left out: tests of addresses name theirs,
/// and one tells a missing row apart.
pub const ROOMY: [(&str, i64); 5] = [
    ("diskGiB", 1_000_000),
    ("instances", 10_000),
    ("networks", 10_000),
    ("filesystems", 10_000),
    ("filesystemGiB", 100_000_000),
];

/// `quotas`, and `ROOMY`'s of the resources it does not name.
pub fn with_room(quotas: Value) -> Value {
    let mut all = quotas.as_array().cloned().unwrap_or_default();
    for (resource, max) in ROOMY {
        if !all.iter().any(|q| q["resource"] == resource) {
            all.push(json!({ "resource": resource, "max": max }));
        }
    }
    Value::Array(all)
}

/// The diskGiB acme's instances hold (each books its size's disk until it is deleted), so that
/// a test of volumes can tell their own bookings apart.
pub async fn instance_disks(server: &TestServer, token: &str) -> i64 {
    let query = "{ instances(tenantId: \"acme\", first: 1000) { edges { node { size } } } }";
    let data = server.ok(Some(token), query, json!({})).await;
    let sizes = data["instances"]["edges"].as_array().cloned().unwrap_or_default();
    let disk = |size: &str| vps_graph::provider::sizes::disk_gib(vps_graph::provider::ProviderKind::Digitalocean, size);
    sizes.iter().map(|e| disk(e["node"]["size"].as_str().unwrap()).unwrap_or(0)).sum()
}

/// The app on a loopback port.
pub struct TestServer {
    pub app: App,
    pub addr: SocketAddr,
    pub http: reqwest::Client,
    _db: Option<TestDb>,
}

impl TestServer {
    /// Sends `subscribe` for `id` on `ws` and returns once the feed has registered it: from then
    /// on it sees every event committed (a subscription without a cursor reads from its start).
    /// The socket's own token watch is registered before its acknowledgement.
    pub async fn subscribe_live(&self, ws: &mut Ws, id: &str, query: &str, variables: Value) {
        let before = self.app.services.feed.registered();
        ws.subscribe(id, query, variables).await;
        self.registered_beyond(before).await;
    }

    /// Waits until the feed holds more registrations than `before`.
    pub async fn registered_beyond(&self, before: usize) {
        for _ in 0..2_000 {
            if self.app.services.feed.registered() > before {
                return;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        panic!("no subscription was registered on the feed beyond the {before} there were");
    }

    pub async fn start(backend: Backend) -> TestServer {
        let db = TestDb::new(backend).await;
        let mut server = TestServer::with_config(config(&db.url)).await;
        server._db = Some(db);
        server
    }

    pub async fn with_config(config: AppConfig) -> TestServer {
        vps_graph::init_crypto();
        // Logs only when asked (`RUST_LOG=warn cargo test …`): a failing test's server says why.
        if std::env::var_os("RUST_LOG").is_some() {
            let _ =
                tracing_subscriber::fmt().with_env_filter(tracing_subscriber::EnvFilter::from_default_env()).try_init();
        }
        let load = config.load;
        let app = App::start(config).await.expect("app starts");
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        let (router, stop) = (app.router(), app.stop.clone());
        tokio::spawn(vps_graph::http::serve(listener, router, load, stop));
        TestServer { app, addr, http: reqwest::Client::new(), _db: None }
    }

    /// Keeps `db` as long as the server (dropped with it).
    pub fn keep(&mut self, db: TestDb) {
        self._db = Some(db);
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// POSTs a GraphQL request and returns the response body.
    pub async fn gql(&self, token: Option<&str>, query: &str, variables: Value) -> Value {
        let mut request = self.http.post(self.url("/graphql")).json(&json!({ "query": query, "variables": variables }));
        if let Some(token) = token {
            request = request.bearer_auth(token);
        }
        request.send().await.expect("request").json().await.expect("json body")
    }

    /// `data` of a request that must succeed.
    pub async fn ok(&self, token: Option<&str>, query: &str, variables: Value) -> Value {
        let body = self.gql(token, query, variables).await;
        assert!(body.get("errors").is_none(), "unexpected errors: {body}");
        body["data"].clone()
    }

    /// The body of a query and the SQL statements it cost (`x-sql-statements`, which only an
    /// operator token is told).
    pub async fn counted(&self, token: &str, query: &str, variables: Value) -> (Value, u64) {
        let response = self
            .http
            .post(self.url("/graphql"))
            .bearer_auth(token)
            .json(&json!({ "query": query, "variables": variables }))
            .send()
            .await
            .expect("graphql request");
        let statements = response.headers()["x-sql-statements"].to_str().unwrap().parse().expect("a count");
        (response.json().await.expect("json body"), statements)
    }

    /// `extensions.code` of the first error of a request that must fail.
    pub async fn code(&self, token: Option<&str>, query: &str, variables: Value) -> String {
        let body = self.gql(token, query, variables).await;
        first_code(&body).unwrap_or_else(|| panic!("expected an error: {body}"))
    }

    pub async fn tenant(&self, id: &str) {
        self.ok(
            Some(ADMIN),
            "mutation($i: TenantCreateInput!) { tenantCreate(input: $i) { id } }",
            json!({ "i": { "id": id, "name": id } }),
        )
        .await;
    }

    pub async fn project(&self, tenant: &str, name: &str) -> String {
        let data = self
            .ok(
                Some(ADMIN),
                "mutation($i: ProjectCreateInput!) { projectCreate(input: $i) { id } }",
                json!({ "i": { "tenantId": tenant, "name": name } }),
            )
            .await;
        data["projectCreate"]["id"].as_str().expect("project id").to_owned()
    }

    /// Issues a token with `grants` of (permission, scope) and returns its secret.
    pub async fn token(&self, tenant: Option<&str>, grants: &[(&str, &str)]) -> String {
        self.token_with_id(tenant, grants).await.0
    }

    /// Issues a token with `grants` and returns its secret and its id.
    pub async fn token_with_id(&self, tenant: Option<&str>, grants: &[(&str, &str)]) -> (String, String) {
        let grants: Vec<Value> = grants.iter().map(|(p, s)| json!({ "permission": p, "scope": s })).collect();
        let data = self
            .ok(
                Some(ADMIN),
                "mutation($i: TokenIssueInput!) { tokenIssue(input: $i) { secret token { id } } }",
                json!({ "i": { "tenantId": tenant, "grants": grants } }),
            )
            .await;
        let secret = data["tokenIssue"]["secret"].as_str().expect("secret").to_owned();
        (secret, data["tokenIssue"]["token"]["id"].as_str().expect("token id").to_owned())
    }

    /// A platform DigitalOcean account and a METERED pool on it; returns the pool id.
    pub async fn pool(&self, name: &str) -> String {
        let account = self
            .ok(
                Some(ADMIN),
                "mutation($i: ProviderAccountCreateInput!) { providerAccountCreate(input: $i) { id } }",
                json!({ "i": { "name": format!("{name}-account"), "kind": "DIGITALOCEAN", "credentialRef": "env:DO_TOKEN", "regions": ["nyc3"] } }),
            )
            .await;
        let pool = self
            .ok(
                Some(ADMIN),
                "mutation($i: PoolCreateInput!) { poolCreate(input: $i) { id } }",
                json!({ "i": { "name": name, "providerAccountId": account["providerAccountCreate"]["id"], "billing": "METERED" } }),
            )
            .await;
        pool["poolCreate"]["id"].as_str().expect("pool id").to_owned()
    }

    /// A pool on an account at the in-process sim using `regions`: the platform's (METERED), or
    /// with `tenant` that tenant's own (BYO). Returns the pool id.
    pub async fn sim_pool(&self, name: &str, regions: &[&str], tenant: Option<&str>) -> String {
        self.sim_account_pool(name, regions, tenant).await.1
    }

    /// `sim_pool`, with the account's id first.
    pub async fn sim_account_pool(&self, name: &str, regions: &[&str], tenant: Option<&str>) -> (String, String) {
        let account = self
            .ok(
                Some(ADMIN),
                "mutation($i: ProviderAccountCreateInput!) { providerAccountCreate(input: $i) { id } }",
                json!({ "i": { "name": name, "kind": "DIGITALOCEAN", "sim": true, "regions": regions, "tenantId": tenant } }),
            )
            .await["providerAccountCreate"]["id"]
            .as_str()
            .expect("account id")
            .to_owned();
        let billing = if tenant.is_some() { "BYO" } else { "METERED" };
        let pool = self
            .ok(
                Some(ADMIN),
                "mutation($i: PoolCreateInput!) { poolCreate(input: $i) { id } }",
                json!({ "i": { "name": name, "providerAccountId": account, "billing": billing } }),
            )
            .await;
        (account, pool["poolCreate"]["id"].as_str().expect("pool id").to_owned())
    }

    /// A platform AWS account (us-east-1, zone us-east-1a) and a METERED pool on it; returns the
    /// pool id. Nothing is ever sent to it: for the calls an AWS pool refuses.
    pub async fn aws_pool(&self, name: &str) -> String {
        let account = self
            .ok(
                Some(ADMIN),
                "mutation($i: ProviderAccountCreateInput!) { providerAccountCreate(input: $i) { id } }",
                json!({ "i": { "name": name, "kind": "AWS", "credentialRef": "env:X", "regions": ["us-east-1"], "zones": ["us-east-1a"] } }),
            )
            .await;
        let pool = self
            .ok(
                Some(ADMIN),
                "mutation($i: PoolCreateInput!) { poolCreate(input: $i) { id } }",
                json!({ "i": { "name": name, "providerAccountId": account["providerAccountCreate"]["id"], "billing": "METERED" } }),
            )
            .await;
        pool["poolCreate"]["id"].as_str().expect("pool id").to_owned()
    }

    /// An AWS account at the in-process sim's AWS face (us-east-1, with `zones`) and a pool on
    /// it: the platform's (METERED), or `tenant`'s own (BYO). Returns the account's id and the
    /// pool's.
    pub async fn aws_sim_pool(&self, name: &str, zones: &[&str], tenant: Option<&str>) -> (String, String) {
        let account = self
            .ok(
                Some(ADMIN),
                "mutation($i: ProviderAccountCreateInput!) { providerAccountCreate(input: $i) { id } }",
                json!({ "i": { "name": name, "kind": "AWS", "sim": true, "regions": ["us-east-1"], "zones": zones, "tenantId": tenant } }),
            )
            .await["providerAccountCreate"]["id"]
            .as_str()
            .expect("account id")
            .to_owned();
        let pool = self
            .ok(
                Some(ADMIN),
                "mutation($i: PoolCreateInput!) { poolCreate(input: $i) { id } }",
                json!({ "i": { "name": name, "providerAccountId": account, "billing": if tenant.is_some() { "BYO" } else { "METERED" } } }),
            )
            .await["poolCreate"]["id"]
            .as_str()
            .expect("pool id")
            .to_owned();
        (account, pool)
    }

    /// Offers `pool` to `tenant` with `quotas`, and ample ones of the resources they do not name
    /// (`with_room`).
    pub async fn offer(&self, pool: &str, tenant: &str, quotas: Value) -> Value {
        self.offer_exactly(pool, tenant, with_room(quotas)).await
    }

    /// Offers `pool` to `tenant` with `quotas` and no other.
    pub async fn offer_exactly(&self, pool: &str, tenant: &str, quotas: Value) -> Value {
        self.ok(
            Some(ADMIN),
            "mutation($i: PoolOfferInput!) { poolOffer(input: $i) { quotas { resource max used } } }",
            json!({ "i": { "poolId": pool, "tenantId": tenant, "quotas": quotas } }),
        )
        .await
    }

    /// A WebSocket speaking graphql-transport-ws, initialised with `init` as payload.
    pub async fn ws(&self, init: Value) -> Ws {
        let mut ws = self.ws_uninitialised().await;
        ws.send(json!({ "type": "connection_init", "payload": init })).await;
        ws
    }

    /// A WebSocket speaking graphql-transport-ws that has sent nothing yet.
    pub async fn ws_uninitialised(&self) -> Ws {
        let mut request = format!("ws://{}/graphql", self.addr).into_client_request().expect("ws request");
        request.headers_mut().insert("Sec-WebSocket-Protocol", HeaderValue::from_static("graphql-transport-ws"));
        let (stream, _) = tokio_tungstenite::connect_async(request).await.expect("ws connect");
        Ws { stream }
    }
}

/// Waits until no work item of `id` is due on `clock`: every run that was due has happened and
/// set its next look in the future (or finished). A test that asserts something did not happen
/// moves the clock past the moment it would have, then waits here, so the run it rules out has
/// really come and gone.
pub async fn idle(server: &TestServer, clock: &Clock, id: &str) {
    let db = &server.app.services.db;
    // What is due runs here at once (with no worker, that is the only way it runs).
    server.app.run_due().await.expect("due work runs");
    for _ in 0..1_000 {
        let due = vps_graph::store::queue::due_times(db, id).await.expect("work items");
        if due.iter().all(|&at| at > clock.now_ms()) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("{id} never went idle");
}

/// Reads with `read` until `check` holds, running what is due here first (as a worker would,
/// so no step waits on a worker's poll) and moving the app's clock a second at a time (so a look
/// "5 s later" comes round) while the sim's actions finish in real time.
pub async fn until<F, Fut>(app: &TestApp, what: &str, read: F, check: impl Fn(&Value) -> bool) -> Value
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = Value>,
{
    for _ in 0..600 {
        app.server.app.run_due().await.expect("due work runs");
        let seen = read().await;
        if check(&seen) {
            return seen;
        }
        app.clock.advance(1_000);
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("never {what}: {}", read().await);
}

/// A loopback port nothing listens on now, for a server run as a child process.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// GraphQL over HTTP to a server at `base` that may still be starting: asked again every 100 ms
/// until it answers (30 s at most).
pub async fn gql_at(http: &reqwest::Client, base: &str, token: &str, query: &str, variables: Value) -> Value {
    for _ in 0..300 {
        let sent = http
            .post(format!("{base}/graphql"))
            .bearer_auth(token)
            .json(&json!({ "query": query, "variables": variables }))
            .send()
            .await;
        if let Ok(response) = sent {
            return response.json().await.unwrap();
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("the server never answered at {base}");
}

pub fn first_code(body: &Value) -> Option<String> {
    body["errors"][0]["extensions"]["code"].as_str().map(str::to_owned)
}

pub struct Ws {
    stream: tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>,
}

impl Ws {
    pub async fn send(&mut self, message: Value) {
        self.stream.send(Message::text(message.to_string())).await.expect("ws send");
    }

    /// The next protocol message (pings answered, keep-alives skipped), or None when closed or
    /// nothing came within `wait`.
    pub async fn next(&mut self, wait: Duration) -> Option<Value> {
        loop {
            let message = tokio::time::timeout(wait, self.stream.next()).await.ok()??.ok()?;
            match message {
                Message::Text(text) => {
                    let value: Value = serde_json::from_str(&text).expect("json frame");
                    match value["type"].as_str() {
                        Some("ping") => self.send(json!({ "type": "pong" })).await,
                        Some("ka") => {}
                        _ => return Some(value),
                    }
                }
                Message::Close(_) => return None,
                _ => {}
            }
        }
    }

    /// The next protocol message, or what came instead: nothing in time, a close frame (its
    /// code and reason), or the stream's end or failure.
    pub async fn next_or_why(&mut self, wait: Duration) -> Result<Value, String> {
        loop {
            let message = match tokio::time::timeout(wait, self.stream.next()).await {
                Err(_) => return Err(format!("nothing within {wait:?}")),
                Ok(None) => return Err("the stream ended".into()),
                Ok(Some(Err(err))) => return Err(format!("the stream failed: {err}")),
                Ok(Some(Ok(message))) => message,
            };
            match message {
                Message::Text(text) => {
                    let value: Value = serde_json::from_str(&text).expect("json frame");
                    match value["type"].as_str() {
                        Some("ping") => self.send(json!({ "type": "pong" })).await,
                        Some("ka") => {}
                        _ => return Ok(value),
                    }
                }
                Message::Close(frame) => return Err(format!("closed: {frame:?}")),
                _ => {}
            }
        }
    }

    pub async fn subscribe(&mut self, id: &str, query: &str, variables: Value) {
        self.send(json!({ "id": id, "type": "subscribe", "payload": { "query": query, "variables": variables } }))
            .await;
    }
}

/// The names of every VPC the simulated DigitalOcean at `sim_url` holds, all pages.
pub async fn vpc_names(sim_url: &str) -> Vec<String> {
    let http = reqwest::Client::new();
    let mut names = Vec::new();
    for page in 1.. {
        let url = format!("{sim_url}/v2/vpcs?page={page}&per_page=200");
        let body: Value = http.get(url).bearer_auth("inspector").send().await.unwrap().json().await.unwrap();
        let vpcs = body["vpcs"].as_array().unwrap();
        names.extend(vpcs.iter().map(|v| v["name"].as_str().unwrap().to_owned()));
        if body["links"]["pages"]["next"].is_null() {
            break;
        }
    }
    names
}

impl Ws {
    /// Sends a text frame as it is.
    pub async fn send_text(&mut self, text: String) -> bool {
        self.stream.send(Message::text(text)).await.is_ok()
    }

    /// Reads until the server closes the socket: its close code and reason, or None when it
    /// dropped the connection without a close frame. Panics when it stays open for `wait`.
    pub async fn closed(&mut self, wait: Duration) -> Option<(u16, String)> {
        self.read_until_closed(wait).await.1
    }

    /// The protocol messages that came before the server closed the socket, and its close
    /// frame as `closed` gives it.
    pub async fn read_until_closed(&mut self, wait: Duration) -> (Vec<Value>, Option<(u16, String)>) {
        let deadline = tokio::time::Instant::now() + wait;
        let mut seen = Vec::new();
        loop {
            let next = tokio::time::timeout_at(deadline, self.stream.next()).await;
            let Some(message) = next.expect("the server kept the socket open") else { return (seen, None) };
            match message {
                Ok(Message::Close(Some(frame))) => return (seen, Some((frame.code.into(), frame.reason.to_string()))),
                Ok(Message::Close(None)) | Err(_) => return (seen, None),
                Ok(Message::Text(text)) => seen.push(serde_json::from_str(&text).expect("json frame")),
                Ok(_) => {}
            }
        }
    }
}
