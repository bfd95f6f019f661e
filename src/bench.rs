//! `vps-graph bench`: figures for the foundation, measured against this same binary run as a
//! child server process (so memory is the server's own), driven over HTTP and WebSocket:
//! operator mutations per second, events per second delivered to many subscribers with the
//! append-to-delivery latency, and resident memory per idle subscriber.
use std::net::TcpListener;
use std::process::Stdio;
use std::sync::Arc;
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use clap::Args;
use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio::process::{Child, Command};
use tokio::sync::Mutex;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::http::HeaderValue;
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;

const ADMIN: &str = "bench-admin-token";

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
    #[arg(long, default_value_t = 1000)]
    pub subscribers: usize,
    /// Events published while they listen.
    #[arg(long, default_value_t = 200)]
    pub events: usize,
    /// Idle subscriber counts for the memory figure.
    #[arg(long, value_delimiter = ',', default_values_t = [1000, 10000])]
    pub idle: Vec<usize>,
}

type BenchResult<T> = Result<T, String>;

pub async fn run(args: BenchArgs) -> BenchResult<()> {
    crate::init_crypto();
    raise_open_files();
    let dir = std::env::temp_dir().join(format!("vps-graph-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let mut backends = vec![("sqlite", format!("sqlite://{}/bench.db?mode=rwc", dir.display()), None)];
    if let Some(base) = &args.postgres_url {
        let name = format!("vpsg_bench_{}", ulid::Ulid::generate().to_string().to_lowercase());
        admin_sql(base, &format!("CREATE DATABASE {name}")).await?;
        backends.push(("postgres", with_database(base, &name), Some((base.clone(), name))));
    }
    println!("vps-graph bench: server = this binary as a child process; clients in this process; loopback only");
    for (label, url, _) in &backends {
        let server = Server::start(url).await?;
        let rate = mutations(&server.client, args.mutations, args.concurrency).await?;
        println!(
            "[{label}] operator mutations: {rate:.0}/s (projectCreate over HTTP, {} calls, {} concurrent)",
            args.mutations, args.concurrency
        );
        let delivery = deliveries(&server.client, args.subscribers, args.events).await?;
        println!(
            "[{label}] events to {} WebSocket subscribers: {:.0} deliveries/s ({} events, {} deliveries), append-to-delivery p50 {:.1} ms, p99 {:.1} ms",
            args.subscribers, delivery.rate, args.events, delivery.count, delivery.p50_ms, delivery.p99_ms
        );
        if *label == "sqlite" {
            for &n in &args.idle {
                let fresh = Server::start(url).await?;
                let (base, grown) = idle_memory(&fresh, n).await?;
                println!(
                    "[{label}] idle subscribers: {n} → server RSS {:.1} MiB (from {:.1} MiB), {:.1} KiB per subscriber",
                    grown as f64 / 1024.0,
                    base as f64 / 1024.0,
                    (grown - base) as f64 / n as f64
                );
            }
        }
    }
    for (_, _, drop) in backends {
        if let Some((base, name)) = drop {
            admin_sql(&base, &format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)")).await?;
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}

/// A `vps-graph serve` child on a free loopback port.
struct Server {
    child: Child,
    client: Client,
}

/// Speaks to the server over HTTP and WebSocket as the operator.
#[derive(Clone)]
struct Client {
    addr: String,
    http: reqwest::Client,
}

impl Server {
    async fn start(database_url: &str) -> BenchResult<Server> {
        let port = TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).map_err(|e| e.to_string())?.port();
        let addr = format!("127.0.0.1:{port}");
        let exe = std::env::current_exe().map_err(|e| e.to_string())?;
        let child = Command::new(exe)
            .args(["serve", "--no-demo", "--listen", &addr, "--database-url", database_url, "--admin-token", ADMIN])
            .env("RUST_LOG", "warn")
            .stdout(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| format!("cannot start the server: {e}"))?;
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

    fn rss_kib(&self) -> BenchResult<u64> {
        let pid = self.child.id().ok_or("the server exited")?;
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).map_err(|e| e.to_string())?;
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.split_whitespace().next())
            .and_then(|v| v.parse().ok())
            .ok_or_else(|| "no VmRSS".into())
    }
}

impl Client {
    async fn gql(&self, query: &str, variables: Value) -> BenchResult<Value> {
        let body: Value = self
            .http
            .post(format!("http://{}/graphql", self.addr))
            .bearer_auth(ADMIN)
            .json(&json!({ "query": query, "variables": variables }))
            .send()
            .await
            .map_err(|e| e.to_string())?
            .json()
            .await
            .map_err(|e| e.to_string())?;
        match body.get("errors") {
            Some(errors) => Err(format!("GraphQL errors: {errors}")),
            None => Ok(body["data"].clone()),
        }
    }

    async fn ensure_tenant(&self, id: &str) -> BenchResult<()> {
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

    async fn project(&self, tenant: &str, name: &str) -> BenchResult<()> {
        self.gql(
            "mutation($t: String!, $n: String!) { projectCreate(input: { tenantId: $t, name: $n }) { id } }",
            json!({ "t": tenant, "n": name }),
        )
        .await
        .map(|_| ())
    }

    async fn subscriber(&self, tenant: &str) -> BenchResult<Subscriber> {
        let mut request = format!("ws://{}/graphql", self.addr).into_client_request().map_err(|e| e.to_string())?;
        request.headers_mut().insert("Sec-WebSocket-Protocol", HeaderValue::from_static("graphql-transport-ws"));
        let config = WebSocketConfig::default().read_buffer_size(8 * 1024);
        let (mut ws, _) = tokio_tungstenite::connect_async_with_config(request, Some(config), false)
            .await
            .map_err(|e| format!("websocket: {e}"))?;
        let init = json!({ "type": "connection_init", "payload": { "Authorization": format!("Bearer {ADMIN}") } });
        ws.send(Message::text(init.to_string())).await.map_err(|e| e.to_string())?;
        let ack = ws.next().await.ok_or("closed before ack")?.map_err(|e| e.to_string())?;
        if !ack.to_text().unwrap_or("").contains("connection_ack") {
            return Err(format!("no ack: {ack}"));
        }
        let subscribe = json!({ "id": "1", "type": "subscribe", "payload": {
            "query": "subscription($t: String) { events(tenantId: $t, types: [\"project.*\"]) { time subject } }",
            "variables": { "t": tenant } } });
        ws.send(Message::text(subscribe.to_string())).await.map_err(|e| e.to_string())?;
        Ok(Subscriber { ws })
    }
}

struct Subscriber {
    ws: tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>,
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

struct Delivery {
    rate: f64,
    count: usize,
    p50_ms: f64,
    p99_ms: f64,
}

async fn deliveries(client: &Client, subscribers: usize, events: usize) -> BenchResult<Delivery> {
    let tenant = format!("bench-feed-{subscribers}");
    client.ensure_tenant(&tenant).await?;
    let latencies = Arc::new(Mutex::new(Vec::with_capacity(subscribers * events)));
    let last_arrival = Arc::new(Mutex::new(Instant::now()));
    let mut readers = Vec::new();
    for _ in 0..subscribers {
        let mut subscriber = client.subscriber(&tenant).await?;
        let latencies = latencies.clone();
        let last_arrival = last_arrival.clone();
        readers.push(tokio::spawn(async move {
            let mut mine = Vec::with_capacity(events);
            while mine.len() < events {
                let Ok(Some(Ok(message))) = tokio::time::timeout(Duration::from_secs(30), subscriber.ws.next()).await
                else {
                    break;
                };
                let Ok(frame) = serde_json::from_str::<Value>(message.to_text().unwrap_or("{}")) else { continue };
                if let Some(time) = frame["payload"]["data"]["events"]["time"].as_str()
                    && let Ok(time) = time.parse::<DateTime<Utc>>()
                {
                    mine.push((Utc::now() - time).num_microseconds().unwrap_or(0) as f64 / 1000.0);
                }
            }
            *last_arrival.lock().await = Instant::now();
            latencies.lock().await.extend(mine);
        }));
    }
    // No ack for `subscribe`: give the server a moment to register every subscription.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let started = Instant::now();
    for n in 0..events {
        client.project(&tenant, &format!("e{n}")).await?;
    }
    for reader in readers {
        reader.await.map_err(|e| e.to_string())?;
    }
    let elapsed = last_arrival.lock().await.duration_since(started).as_secs_f64();
    let mut latencies = std::mem::take(&mut *latencies.lock().await);
    latencies.sort_by(f64::total_cmp);
    let at = |q: f64| latencies.get(((latencies.len() as f64 - 1.0) * q) as usize).copied().unwrap_or(f64::NAN);
    Ok(Delivery { rate: latencies.len() as f64 / elapsed, count: latencies.len(), p50_ms: at(0.50), p99_ms: at(0.99) })
}

/// The server's RSS before and after `n` idle subscriptions (each its own WebSocket).
async fn idle_memory(server: &Server, n: usize) -> BenchResult<(u64, u64)> {
    let client = &server.client;
    client.ensure_tenant("bench-idle").await?;
    // Warm the allocator and the schema with a few subscribers first.
    let warm: Vec<Subscriber> =
        futures_util::future::try_join_all((0..10).map(|_| client.subscriber("bench-idle"))).await?;
    drop(warm);
    tokio::time::sleep(Duration::from_millis(500)).await;
    let base = server.rss_kib()?;
    let mut open = Vec::with_capacity(n);
    for chunk in (0..n).collect::<Vec<_>>().chunks(200) {
        let batch = futures_util::future::try_join_all(chunk.iter().map(|_| client.subscriber("bench-idle"))).await?;
        open.extend(batch);
    }
    tokio::time::sleep(Duration::from_secs(2)).await;
    let grown = server.rss_kib()?;
    drop(open);
    Ok((base, grown))
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

async fn admin_sql(base: &str, sql: &str) -> BenchResult<()> {
    use sqlx::Connection;
    let mut conn = sqlx::PgConnection::connect(base).await.map_err(|e| format!("postgres: {e}"))?;
    sqlx::raw_sql(sqlx::AssertSqlSafe(sql.to_owned()))
        .execute(&mut conn)
        .await
        .map_err(|e| format!("postgres: {e}"))?;
    Ok(())
}

fn with_database(base: &str, name: &str) -> String {
    let (head, query) = base.split_once('?').map_or((base, None), |(h, q)| (h, Some(q)));
    let scheme_end = head.find("://").map_or(0, |i| i + 3);
    let host = head[scheme_end..].find('/').map_or(head, |i| &head[..scheme_end + i]);
    match query {
        Some(q) => format!("{host}/{name}?{q}"),
        None => format!("{host}/{name}"),
    }
}
