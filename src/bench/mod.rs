//! `vps-graph bench`: figures for the foundation, measured against this same binary run as a
//! child server process (so memory is the server's own), driven over HTTP and WebSocket:
//! operator mutations per second, events per second delivered to many subscribers with the
//! append-to-delivery latency, and resident memory per idle subscriber; networks and volumes
//! converging against the simulated cloud; reading pages of volumes (`volumes`); and the usage
//! pass metering many volumes (`usage`).
mod drift;
mod feed;
mod hostile;
mod list;
mod peers;
mod start;
mod usage;
mod volumes;
mod writes;
use std::net::TcpListener;
use std::process::Stdio;
use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::Args;
use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio::process::{Child, Command};
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::http::HeaderValue;
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;

pub(crate) const ADMIN: &str = "bench-admin-token";

#[derive(Args, Debug, Clone)]
pub struct BenchArgs {
    /// Also measure on PostgreSQL: a database is created on this server for the run and dropped.
    #[arg(long, env = "VPS_GRAPH_BENCH_POSTGRES_URL")]
    pub postgres_url: Option<String>,
    /// Operator mutations to send per backend.
    #[arg(long, default_value_t = 2000)]
    pub mutations: usize,
    /// Concurrent mutation senders.
    #[arg(long, default_value_t = 8)]
    pub concurrency: usize,
    /// Live subscribers for the delivery figure.
    #[arg(long, default_value_t = 10_000)]
    pub subscribers: usize,
    /// Subscribers following each tenant's events (the tenants are as many as it takes).
    #[arg(long, default_value_t = 10)]
    pub subscribers_per_tenant: usize,
    /// Events published while they listen, in tenants taken in turn.
    #[arg(long, default_value_t = 1000)]
    pub events: usize,
    /// Events published per second.
    #[arg(long, default_value_t = 100)]
    pub event_rate: u64,
    /// Events in the outbox for the feed's read cost (PostgreSQL; 0 skips it).
    #[arg(long, default_value_t = 10_000_000)]
    pub feed_events: u64,
    /// Volume creates for the write figure (0 skips it).
    #[arg(long, default_value_t = 2000)]
    pub writes: usize,
    /// Idle subscriber counts for the memory figure.
    #[arg(long, value_delimiter = ',', default_values_t = [1000, 10000])]
    pub idle: Vec<usize>,
    /// Networks to converge against the simulated cloud (0 skips it).
    #[arg(long, default_value_t = 1000)]
    pub networks: usize,
    /// Latency of every simulated provider call while they converge, in ms.
    #[arg(long, default_value_t = 200)]
    pub provider_latency_ms: u64,
    /// Reconcile workers of the server while they converge.
    #[arg(long, default_value_t = 32)]
    pub reconcile_workers: usize,
    /// Skip the foundation figures (mutations, deliveries, idle memory).
    #[arg(long)]
    pub only_networks: bool,
    /// Only the hostile figures (`bench::hostile`): the worst documents of each family of attack,
    /// `/healthz` under them, and the rate a tenant's token is throttled at.
    #[arg(long)]
    pub only_hostile: bool,
    /// Only the drift figures (`bench::drift`): the provider calls one account spends on an hour
    /// of drift reads, at each size of `--drift-resources`.
    #[arg(long)]
    pub only_drift: bool,
    /// Settled resources of one account, for the drift figures.
    #[arg(long, value_delimiter = ',', default_values_t = [1000, 10000, 100000])]
    pub drift_resources: Vec<usize>,
    /// The largest size the per-resource design (no inventory pass) is measured at too.
    #[arg(long, default_value_t = 10_000)]
    pub drift_peer_max: usize,
    /// Volumes to converge from create to READY against the simulated cloud (0 skips it).
    #[arg(long, default_value_t = 1000)]
    pub volumes: usize,
    /// Volumes in the tenant whose pages are read (0 skips it).
    #[arg(long, default_value_t = 10_000)]
    pub page_volumes: usize,
    /// `providerVolumes(first: 100)` requests to time.
    #[arg(long, default_value_t = 1000)]
    pub page_requests: usize,
    /// Seconds of each wrk and pgbench load.
    #[arg(long, default_value_t = 10)]
    pub load_secs: u64,
    /// A PostGraphile 5 installation (a folder holding `node_modules/postgraphile`) to measure
    /// the list against on the same PostgreSQL tables.
    #[arg(long, env = "VPS_GRAPH_BENCH_POSTGRAPHILE")]
    pub postgraphile: Option<std::path::PathBuf>,
    /// The Node.js that runs PostGraphile (version 22 or later).
    #[arg(long, env = "VPS_GRAPH_BENCH_NODE", default_value = "node")]
    pub node: std::path::PathBuf,
    /// The `vps-graph` binary to measure (a build of another commit, for a before and after);
    /// this one by default. The bench's clients and the sim are always this binary.
    #[arg(long)]
    pub server: Option<std::path::PathBuf>,
    /// Ready volumes (a day of closed hours each) the usage pass meters (0 skips it).
    #[arg(long, default_value_t = 10_000)]
    pub usage_volumes: usize,
}

pub(crate) type BenchResult<T> = Result<T, String>;

static SERVER: std::sync::OnceLock<std::path::PathBuf> = std::sync::OnceLock::new();

/// The server binary the figures are of.
pub(crate) fn server_exe() -> BenchResult<std::path::PathBuf> {
    match SERVER.get() {
        Some(path) => Ok(path.clone()),
        None => std::env::current_exe().map_err(|e| e.to_string()),
    }
}

pub async fn run(args: BenchArgs) -> BenchResult<()> {
    crate::init_crypto();
    if let Some(server) = &args.server {
        let _ = SERVER.set(server.clone());
        println!("vps-graph bench: measuring the server {}", server.display());
    }
    raise_open_files();
    let dir = std::env::temp_dir().join(format!("vps-graph-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let mut backends: Vec<Backend> = vec![("sqlite", format!("sqlite://{}/bench.db?mode=rwc", dir.display()), None)];
    if let Some(base) = &args.postgres_url {
        let name = format!("vpsg_bench_{}", ulid::Ulid::generate().to_string().to_lowercase());
        crate::store::admin::execute(base, &format!("CREATE DATABASE {name}")).await?;
        // Every peer on loopback gets the same plain connection (PostGraphile's default); a
        // server that offers TLS would otherwise cost this one's statements a TLS record each.
        let url = crate::store::admin::with_database(base, &name);
        let url = if url.contains("sslmode=") {
            url
        } else {
            format!("{url}{}sslmode=disable", if url.contains('?') { '&' } else { '?' })
        };
        println!("vps-graph bench: PostgreSQL at {url}");
        backends.push(("postgres", url, Some((base.clone(), name))));
    }
    println!("vps-graph bench: server = this binary as a child process; clients in this process; loopback only");
    if args.only_drift {
        let result = drift::figures(&dir, &args.drift_resources, args.drift_peer_max).await;
        cleanup(backends, &dir).await?;
        return result;
    }
    if args.only_hostile {
        let result = hostile::figures(&backends[0].1).await;
        cleanup(backends, &dir).await?;
        return result;
    }
    for (label, url, _) in &backends {
        if args.networks > 0 {
            let figures = converge_networks(url, &args).await?;
            println!(
                "[{label}] {} networks to READY against the sim ({} ms per provider call, {} workers): {:.1} s, latency-bound ideal {:.1} s ({:.2}x), {:.2} provider calls per network",
                args.networks,
                args.provider_latency_ms,
                args.reconcile_workers,
                figures.wall,
                figures.ideal,
                figures.wall / figures.ideal,
                figures.calls_per_network
            );
        }
        if args.volumes > 0 {
            let figures = volumes::converge(url, &args).await?;
            println!(
                "[{label}] {} block volumes to READY against the sim ({} ms per provider call, {} workers): {:.1} s, latency-bound ideal {:.1} s ({:.2}x), {:.2} provider calls and {:.1} SQL statements per volume",
                args.volumes,
                args.provider_latency_ms,
                args.reconcile_workers,
                figures.wall,
                figures.ideal,
                figures.wall / figures.ideal,
                figures.calls_per_volume,
                figures.statements_per_volume
            );
        }
        if args.page_volumes > 0 {
            list::figures(label, url, &args, &dir).await?;
        }
        if args.writes > 0 {
            writes::figures(label, url, &args, &dir).await?;
        }
        if args.usage_volumes > 0 {
            let figures = usage::pass_figures(url, &args).await?;
            println!(
                "[{label}] usage pass over {} volumes ready {} h (seeded in {:.1} s): {} windows in {:.2} s ({:.0} windows/s); a second pass{} wrote {} in {:.2} s",
                args.usage_volumes,
                usage::HOURS,
                figures.seed_secs,
                figures.windows,
                figures.first_secs,
                figures.windows as f64 / figures.first_secs,
                if url.starts_with("postgres") { ", after ANALYZE," } else { "" },
                figures.second_windows,
                figures.second_secs
            );
        }
        if args.only_networks {
            continue;
        }
        foundation(label, url, &args).await?;
        if let (Some(base), true) = (&args.postgres_url, args.feed_events > 0 && *label == "postgres") {
            feed::growth(label, base, &args).await?;
        }
    }
    if !args.only_networks {
        start::figures(&dir).await?;
        hostile::figures(&backends[0].1).await?;
    }
    cleanup(backends, &dir).await
}

/// A backend the bench measures on: its label, its URL, and the database to drop after (the
/// server's URL and the database's name), if it made one.
type Backend = (&'static str, String, Option<(String, String)>);

/// Drops the databases the bench made and its folder.
async fn cleanup(backends: Vec<Backend>, dir: &std::path::Path) -> BenchResult<()> {
    for (_, _, drop) in backends {
        if let Some((base, name)) = drop {
            crate::store::admin::execute(&base, &format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)")).await?;
        }
    }
    let _ = std::fs::remove_dir_all(dir);
    Ok(())
}

/// Operator mutations, deliveries to live subscribers, and (on SQLite) memory per idle one.
async fn foundation(label: &str, url: &str, args: &BenchArgs) -> BenchResult<()> {
    let server = Server::start(url).await?;
    let rate = mutations(&server.client, args.mutations, args.concurrency).await?;
    println!(
        "[{label}] operator mutations: {rate:.0}/s (projectCreate over HTTP, {} calls, {} concurrent)",
        args.mutations, args.concurrency
    );
    let delivery = feed::deliveries(&server.client, args).await?;
    println!(
        "[{label}] events to {} WebSocket subscribers, {} a tenant, {} events/s: {:.0} deliveries/s ({} events, {} deliveries of {}), append-to-delivery p50 {:.1} ms, p99 {:.1} ms (target ≤ 100) {}",
        args.subscribers,
        args.subscribers_per_tenant,
        args.event_rate,
        delivery.rate,
        args.events,
        delivery.count,
        args.events * args.subscribers_per_tenant,
        delivery.p50_ms,
        delivery.p99_ms,
        verdict(delivery.p99_ms <= 100.0 && delivery.count == args.events * args.subscribers_per_tenant)
    );
    drop(server);
    if label != "sqlite" {
        return Ok(());
    }
    for &n in &args.idle {
        let fresh = Server::start(url).await?;
        let (base, grown) = feed::idle_memory(&fresh, n).await?;
        let per = (grown.saturating_sub(base)) as f64 / n as f64;
        println!(
            "[{label}] idle subscribers: {n} → server RSS {:.1} MiB (from {:.1} MiB), {per:.1} KiB per subscriber (target ≤ 16) {}",
            grown as f64 / 1024.0,
            base as f64 / 1024.0,
            verdict(per <= 16.0)
        );
    }
    Ok(())
}

/// A `vps-graph serve` child on a free loopback port.
pub(crate) struct Server {
    child: Child,
    client: Client,
}

/// Speaks to the server over HTTP and WebSocket as the operator.
#[derive(Clone)]
pub(crate) struct Client {
    pub(crate) addr: String,
    pub(crate) http: reqwest::Client,
}

impl Server {
    async fn start(database_url: &str) -> BenchResult<Server> {
        Server::start_with(database_url, &[]).await
    }

    pub(crate) async fn start_with(database_url: &str, extra: &[&str]) -> BenchResult<Server> {
        Server::spawn(database_url, extra, false).await
    }

    /// A server whose SQL trace (every statement a request runs, values inlined) the bench reads.
    pub(crate) async fn start_traced(database_url: &str, extra: &[&str]) -> BenchResult<(Server, Trace)> {
        let mut server = Server::spawn(database_url, extra, true).await?;
        let stdout = server.child.stdout.take().ok_or("no stdout")?;
        let (lines, receiver) = tokio::sync::mpsc::unbounded_channel();
        tokio::spawn(async move {
            use tokio::io::AsyncBufReadExt;
            let mut reader = tokio::io::BufReader::new(stdout).lines();
            while let Ok(Some(line)) = reader.next_line().await {
                if lines.send(line).is_err() {
                    return;
                }
            }
        });
        Ok((server, Trace(receiver)))
    }

    async fn spawn(database_url: &str, extra: &[&str], traced: bool) -> BenchResult<Server> {
        let addr = free_addr()?;
        let mut command = Command::new(server_exe()?);
        command
            .args(["serve", "--demo", "off", "--listen", &addr, "--database-url", database_url, "--admin-token", ADMIN])
            .args(extra)
            .env("VPS_GRAPH_BENCH_SIM_TOKEN", "bench")
            .kill_on_drop(true);
        if traced {
            command.args(["--log-format", "json"]).env("RUST_LOG", "warn,vps_graph::sql=trace").stdout(Stdio::piped());
        } else {
            command.env("RUST_LOG", "warn").stdout(Stdio::null());
        }
        let child = command.spawn().map_err(|e| format!("cannot start the server: {e}"))?;
        let server = Server { child, client: Client { addr, http: reqwest::Client::new() } };
        for _ in 0..200 {
            if let Ok(r) = server.client.http.get(format!("http://{}/readyz", server.client.addr)).send().await
                && r.status().is_success()
            {
                return Ok(server);
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        Err("the server did not become ready".into())
    }

    pub(crate) fn pid(&self) -> BenchResult<u32> {
        self.child.id().ok_or_else(|| "the server exited".into())
    }

    fn rss_kib(&self) -> BenchResult<u64> {
        rss_kib_of(self.pid()?)
    }
}

/// The resident memory of process `pid`, in KiB.
pub(crate) fn rss_kib_of(pid: u32) -> BenchResult<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).map_err(|e| e.to_string())?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .ok_or_else(|| "no VmRSS".into())
}

/// The SQL trace of a server started with `Server::start_traced`.
pub(crate) struct Trace(tokio::sync::mpsc::UnboundedReceiver<String>);

impl Trace {
    /// The statements the server ran while `request` was answered, in order.
    pub(crate) async fn during<T>(
        &mut self,
        request: impl Future<Output = BenchResult<T>>,
    ) -> BenchResult<Vec<String>> {
        while self.0.try_recv().is_ok() {}
        request.await?;
        let mut statements = Vec::new();
        // The trace is written before the answer is sent; a quiet pipe means it is all here.
        while let Ok(Some(line)) = tokio::time::timeout(Duration::from_millis(300), self.0.recv()).await {
            let Ok(entry) = serde_json::from_str::<Value>(&line) else { continue };
            if entry["target"] == "vps_graph::sql"
                && let Some(sql) = entry["fields"]["message"].as_str()
            {
                statements.push(sql.to_owned());
            }
        }
        Ok(statements)
    }
}

/// POSTs `body` as JSON and decodes the answer.
pub(crate) async fn json_of(request: reqwest::RequestBuilder, body: &Value) -> BenchResult<Value> {
    let response = request.json(body).send().await.map_err(|e| e.to_string())?;
    response.json().await.map_err(|e| e.to_string())
}

/// How a figure stands against its target.
pub(crate) fn verdict(met: bool) -> &'static str {
    if met { "[met]" } else { "[MISSED]" }
}

impl Client {
    pub(crate) async fn gql(&self, query: &str, variables: Value) -> BenchResult<Value> {
        let request = self.http.post(format!("http://{}/graphql", self.addr)).bearer_auth(ADMIN);
        let body = json_of(request, &json!({ "query": query, "variables": variables })).await?;
        match body.get("errors") {
            Some(errors) => Err(format!("GraphQL errors: {errors}")),
            None => Ok(body["data"].clone()),
        }
    }

    /// One figure of the server's /metrics.
    pub(crate) async fn metric(&self, name: &str) -> BenchResult<f64> {
        let url = format!("http://{}/metrics", self.addr);
        let text =
            self.http.get(url).send().await.map_err(|e| e.to_string())?.text().await.map_err(|e| e.to_string())?;
        text.lines()
            .find_map(|line| line.strip_prefix(name).and_then(|rest| rest.strip_prefix(' ')))
            .and_then(|n| n.trim().parse().ok())
            .ok_or_else(|| format!("no {name} at /metrics"))
    }

    pub(crate) async fn ensure_tenant(&self, id: &str) -> BenchResult<()> {
        let tenants = self.gql("{ tenants { id } }", json!({})).await?;
        if !tenants.to_string().contains(&format!("\"{id}\"")) {
            self.gql(
                "mutation($id: String!) { tenantCreate(input: { id: $id, name: $id }) { id } }",
                json!({ "id": id }),
            )
            .await?;
        }
        Ok(())
    }

    pub(crate) async fn project(&self, tenant: &str, name: &str) -> BenchResult<()> {
        self.gql(
            "mutation($t: String!, $n: String!) { projectCreate(input: { tenantId: $t, name: $n }) { id } }",
            json!({ "t": tenant, "n": name }),
        )
        .await
        .map(|_| ())
    }

    async fn subscriber(&self, tenant: &str) -> BenchResult<Subscriber> {
        let mut subscriber = Subscriber::connect(self, ADMIN).await?;
        let subscribe = json!({ "id": "1", "type": "subscribe", "payload": {
            "query": "subscription($t: String) { events(tenantId: $t, types: [\"project.*\"]) { time subject } }",
            "variables": { "t": tenant } } });
        subscriber.ws.send(Message::text(subscribe.to_string())).await.map_err(|e| e.to_string())?;
        Ok(subscriber)
    }

    /// A token of `tenant` with `compute:*` on it; its secret.
    pub(crate) async fn tenant_token(&self, tenant: &str) -> BenchResult<String> {
        let issued = self
            .gql(
                "mutation($t: String!, $s: String!) { tokenIssue(input: { tenantId: $t, grants: [{ permission: \"compute:*\", scope: $s }] }) { secret } }",
                json!({ "t": tenant, "s": format!("tenant/{tenant}") }),
            )
            .await?;
        issued["tokenIssue"]["secret"].as_str().map(str::to_owned).ok_or_else(|| format!("no secret: {issued}"))
    }
}

pub(crate) struct Subscriber {
    pub(crate) ws: tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>,
}

impl Subscriber {
    /// A graphql-transport-ws socket to the server, acknowledged for `token`.
    pub(crate) async fn connect(client: &Client, token: &str) -> BenchResult<Subscriber> {
        let mut request = format!("ws://{}/graphql", client.addr).into_client_request().map_err(|e| e.to_string())?;
        request.headers_mut().insert("Sec-WebSocket-Protocol", HeaderValue::from_static("graphql-transport-ws"));
        let config = WebSocketConfig::default().read_buffer_size(8 * 1024);
        let (mut ws, _) = tokio_tungstenite::connect_async_with_config(request, Some(config), false)
            .await
            .map_err(|e| format!("websocket: {e}"))?;
        let init = json!({ "type": "connection_init", "payload": { "Authorization": format!("Bearer {token}") } });
        ws.send(Message::text(init.to_string())).await.map_err(|e| e.to_string())?;
        let ack = ws.next().await.ok_or("closed before ack")?.map_err(|e| e.to_string())?;
        if !ack.to_text().unwrap_or("").contains("connection_ack") {
            return Err(format!("no ack: {ack}"));
        }
        Ok(Subscriber { ws })
    }
}

async fn mutations(client: &Client, total: usize, concurrency: usize) -> BenchResult<f64> {
    client.ensure_tenant("bench-ops").await?;
    let next = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let started = Instant::now();
    let workers: Vec<_> = (0..concurrency)
        .map(|_| {
            let next = next.clone();
            let client = client.clone();
            tokio::spawn(async move {
                loop {
                    let n = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    if n >= total {
                        return Ok::<(), String>(());
                    }
                    client.project("bench-ops", &format!("p{n}")).await?;
                }
            })
        })
        .collect();
    for worker in workers {
        worker.await.map_err(|e| e.to_string())??;
    }
    Ok(total as f64 / started.elapsed().as_secs_f64())
}

fn raise_open_files() {
    // SAFETY: getrlimit/setrlimit only read and write the struct passed to them.
    unsafe {
        let mut limit = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) == 0 {
            limit.rlim_cur = limit.rlim_max;
            libc::setrlimit(libc::RLIMIT_NOFILE, &limit);
        }
    }
}

pub(crate) fn free_addr() -> BenchResult<String> {
    let port = TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).map_err(|e| e.to_string())?.port();
    Ok(format!("127.0.0.1:{port}"))
}

struct Convergence {
    wall: f64,
    ideal: f64,
    calls_per_network: f64,
}

/// Creates `args.networks` one-subnet networks on a server whose provider is a separate sim
/// process answering every call after `provider_latency_ms`, and times them to READY. The sim's
/// rate limits are lifted: the real API's 250 a minute would make this a rate-limit benchmark.
async fn converge_networks(database_url: &str, args: &BenchArgs) -> BenchResult<Convergence> {
    let (_sim, sim_addr) = spawn_sim(args.provider_latency_ms)?;
    let workers = args.reconcile_workers.to_string();
    let server = Server::start_with(database_url, &["--no-sim", "--reconcile-workers", &workers]).await?;
    let client = &server.client;
    let (tenant, pool) = volumes::tenant_with_pool(client, &format!("http://{sim_addr}"), "bench-net").await?;
    let started = Instant::now();
    let next = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let senders: Vec<_> = (0..8)
        .map(|_| {
            let (client, next, tenant, pool, total) = (client.clone(), next.clone(), tenant.clone(), pool.clone(), args.networks);
            tokio::spawn(async move {
                loop {
                    let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    if i >= total {
                        return Ok::<(), String>(());
                    }
                    let input = json!({ "tenantId": tenant, "poolId": pool, "name": format!("n{i}"), "idempotencyKey": format!("k{i}"),
                        "subnets": [{ "region": "nyc3", "ipRange": format!("10.{}.{}.0/24", 100 + i / 256, i % 256) }] });
                    client.gql("mutation($i: NetworkCreateInput!) { networkCreate(input: $i) { id } }", json!({ "i": input })).await?;
                }
            })
        })
        .collect();
    for sender in senders {
        sender.await.map_err(|e| e.to_string())??;
    }
    loop {
        let ready = count_ready(client, &tenant, "networks").await?;
        if ready == args.networks {
            break;
        }
        if started.elapsed() > Duration::from_secs(1800) {
            return Err(format!("only {ready} of {} networks became READY", args.networks));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let wall = started.elapsed().as_secs_f64();
    let total_calls = sim_calls(client, &sim_addr).await?;
    // Each network needs one create call; W workers make W calls at a time.
    let ideal = args.networks.div_ceil(args.reconcile_workers) as f64 * args.provider_latency_ms as f64 / 1000.0;
    Ok(Convergence { wall, ideal, calls_per_network: total_calls as f64 / args.networks as f64 })
}

/// `vps-graph sim` as a child process answering every call after `latency_ms`, its rate limits
/// lifted (the real API's 250 a minute would make a convergence a rate-limit benchmark).
pub(crate) fn spawn_sim(latency_ms: u64) -> BenchResult<(Child, String)> {
    let addr = free_addr()?;
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let latency = latency_ms.to_string();
    let child = Command::new(exe)
        .args(["sim", "--listen", &addr, "--sim-latency-ms", &latency])
        .args(["--sim-per-hour", "100000000", "--sim-per-minute", "100000000"])
        .env("RUST_LOG", "warn")
        .stdout(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| format!("cannot start the sim: {e}"))?;
    Ok((child, addr))
}

/// Every call the sim at `addr` received.
pub(crate) async fn sim_calls(client: &Client, addr: &str) -> BenchResult<u64> {
    let calls: Value = client
        .http
        .get(format!("http://{addr}/_sim/calls"))
        .send()
        .await
        .map_err(|e| e.to_string())?
        .json()
        .await
        .map_err(|e| e.to_string())?;
    Ok(calls["endpoints"].as_object().map(|m| m.values().filter_map(Value::as_u64).sum()).unwrap_or(0))
}

/// How many of the tenant's resources in the list `field` (`networks`, `providerVolumes`) are READY.
pub(crate) async fn count_ready(client: &Client, tenant: &str, field: &str) -> BenchResult<usize> {
    let query = format!(
        "query($t: String!, $a: String) {{ {field}(tenantId: $t, first: 1000, after: $a) {{ edges {{ node {{ state }} }} pageInfo {{ endCursor hasNextPage }} }} }}"
    );
    let mut after: Option<String> = None;
    let mut ready = 0;
    loop {
        let page = client.gql(&query, json!({ "t": tenant, "a": after })).await?;
        let list = &page[field];
        ready +=
            list["edges"].as_array().map(|e| e.iter().filter(|n| n["node"]["state"] == "READY").count()).unwrap_or(0);
        if list["pageInfo"]["hasNextPage"] != true {
            return Ok(ready);
        }
        after = list["pageInfo"]["endCursor"].as_str().map(str::to_owned);
    }
}
