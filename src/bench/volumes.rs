//! Volume figures: reading `providerVolumes(first: 100)` with attachments, instances and
//! snapshots over a tenant of many volumes (requests per second, latency, SQL statements per
//! request), and volumes converging from create to READY against a separate sim process.
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::{BenchArgs, BenchResult, Client, Server, count_ready, sim_calls, spawn_sim};

pub struct PageFigures {
    pub rate: f64,
    pub p50_ms: f64,
    pub p99_ms: f64,
    pub statements: u64,
    pub seed_secs: f64,
}

const PAGE: &str = "query($t: String!, $a: String) { providerVolumes(tenantId: $t, first: 100, after: $a) { edges { node { id state sizeGiB attachments { instanceId state instance { id name state } } snapshots { id name state sizeGiB } } } pageInfo { endCursor hasNextPage } } }";

/// Seeds `args.page_volumes` volumes (each attached to one of 100 instances, each with one
/// snapshot) on a server that converges nothing, then reads pages of 100 from 8 clients.
pub async fn read_pages(database_url: &str, args: &BenchArgs) -> BenchResult<PageFigures> {
    let server = Server::start_with(database_url, &["--no-sim", "--reconcile-workers", "0"]).await?;
    let client = &server.client;
    let (tenant, pool) = tenant_with_pool(client, "http://127.0.0.1:9", "bench-read").await?;
    let seeding = Instant::now();
    let mut instances = Vec::new();
    for i in 0..100 {
        let input = json!({ "tenantId": tenant, "poolId": pool, "name": format!("host-{i}"), "region": "nyc3", "size": "s-1vcpu-1gb", "image": "ubuntu-24-04-x64", "idempotencyKey": format!("i{i}") });
        let made = client
            .gql("mutation($i: InstanceCreateInput!) { instanceCreate(input: $i) { id } }", json!({ "i": input }))
            .await?;
        instances.push(made["instanceCreate"]["id"].as_str().unwrap_or_default().to_owned());
    }
    let seed = Arc::new((client.clone(), tenant.clone(), pool.clone(), instances));
    in_parallel(args.page_volumes, move |i| {
        let seed = seed.clone();
        async move {
            let (client, tenant, pool, instances) = &*seed;
            let input = json!({ "tenantId": tenant, "poolId": pool, "name": format!("v{i}"), "region": "nyc3", "sizeGiB": 1,
                "instanceId": instances[i % instances.len()], "idempotencyKey": format!("v{i}") });
            let made = client.gql("mutation($i: ProviderVolumeCreateInput!) { providerVolumeCreate(input: $i) { id } }", json!({ "i": input })).await?;
            let snapshot = json!({ "tenantId": tenant, "volumeId": made["providerVolumeCreate"]["id"], "name": "daily", "idempotencyKey": format!("s{i}") });
            client.gql("mutation($i: ProviderVolumeSnapshotInput!) { providerVolumeSnapshot(input: $i) { id } }", json!({ "i": snapshot })).await?;
            Ok(())
        }
    })
    .await?;
    let seed_secs = seeding.elapsed().as_secs_f64();
    // The cursors of every page, so the clients read all over the tenant.
    let mut cursors: Vec<Option<String>> = vec![None];
    loop {
        let (page, _) = page(client, &tenant, cursors.last().cloned().flatten()).await?;
        let info = &page["providerVolumes"]["pageInfo"];
        if info["hasNextPage"] != true {
            break;
        }
        cursors.push(info["endCursor"].as_str().map(str::to_owned));
    }
    let cursors = Arc::new(cursors);
    let latencies = Arc::new(std::sync::Mutex::new(Vec::new()));
    let statements = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let started = Instant::now();
    let reader = Arc::new((client.clone(), tenant.clone(), cursors, latencies.clone(), statements.clone()));
    in_parallel(args.page_requests, move |i| {
        let reader = reader.clone();
        async move {
            let (client, tenant, cursors, latencies, statements) = &*reader;
            let sent = Instant::now();
            let (body, counted) = page(client, tenant, cursors[i % cursors.len()].clone()).await?;
            let took = sent.elapsed().as_secs_f64() * 1000.0;
            if body["providerVolumes"]["edges"].as_array().is_none_or(|e| e.len() != 100) {
                return Err(format!("a page that is not 100 volumes: {body}"));
            }
            latencies.lock().unwrap_or_else(|e| e.into_inner()).push(took);
            statements.fetch_max(counted, Ordering::Relaxed);
            Ok(())
        }
    })
    .await?;
    let elapsed = started.elapsed().as_secs_f64();
    let mut latencies = latencies.lock().unwrap_or_else(|e| e.into_inner()).clone();
    latencies.sort_by(f64::total_cmp);
    let at = |q: f64| latencies[((latencies.len() as f64 * q) as usize).min(latencies.len() - 1)];
    Ok(PageFigures {
        rate: args.page_requests as f64 / elapsed,
        p50_ms: at(0.50),
        p99_ms: at(0.99),
        statements: statements.load(Ordering::Relaxed),
        seed_secs,
    })
}

/// One page and the SQL statements it cost (the server's `x-sql-statements`).
async fn page(client: &Client, tenant: &str, after: Option<String>) -> BenchResult<(Value, u64)> {
    let response = client
        .http
        .post(format!("http://{}/graphql", client.addr))
        .bearer_auth(super::ADMIN)
        .json(&json!({ "query": PAGE, "variables": { "t": tenant, "a": after } }))
        .send()
        .await
        .map_err(|e| e.to_string())?;
    let statements = response
        .headers()
        .get("x-sql-statements")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    let body: Value = response.json().await.map_err(|e| e.to_string())?;
    if let Some(errors) = body.get("errors") {
        return Err(format!("GraphQL errors: {errors}"));
    }
    Ok((body["data"].clone(), statements))
}

pub struct Convergence {
    pub wall: f64,
    pub ideal: f64,
    pub calls_per_volume: f64,
    /// SQL statements the server ran per volume, its create mutation and its convergence to
    /// READY (the bench's own polling reads taken out).
    pub statements_per_volume: f64,
}

/// Creates `args.volumes` block volumes on a server whose provider is a separate sim process
/// answering every call after `provider_latency_ms` (rate limits lifted), and times them to READY.
pub async fn converge(database_url: &str, args: &BenchArgs) -> BenchResult<Convergence> {
    let (_sim, sim_addr) = spawn_sim(args.provider_latency_ms)?;
    let workers = args.reconcile_workers.to_string();
    let server = Server::start_with(database_url, &["--no-sim", "--reconcile-workers", &workers]).await?;
    let client = &server.client;
    let (tenant, pool) = tenant_with_pool(client, &format!("http://{sim_addr}"), "bench-vol").await?;
    let statements_before = sql_statements(client).await?;
    let started = Instant::now();
    let maker = Arc::new((client.clone(), tenant.clone(), pool.clone()));
    in_parallel(args.volumes, move |i| {
        let maker = maker.clone();
        async move {
            let (client, tenant, pool) = &*maker;
            let input = json!({ "tenantId": tenant, "poolId": pool, "name": format!("v{i}"), "region": "nyc3", "sizeGiB": 1, "idempotencyKey": format!("v{i}") });
            client.gql("mutation($i: ProviderVolumeCreateInput!) { providerVolumeCreate(input: $i) { id } }", json!({ "i": input })).await.map(drop)
        }
    })
    .await?;
    let mut polls = 0;
    loop {
        let ready = count_ready(client, &tenant, "providerVolumes").await?;
        polls += 1;
        if ready == args.volumes {
            break;
        }
        if started.elapsed() > Duration::from_secs(1800) {
            return Err(format!("only {ready} of {} volumes became READY", args.volumes));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let wall = started.elapsed().as_secs_f64();
    // What one poll costs, measured once things are still (the drift reads are an hour away).
    let before_poll = sql_statements(client).await?;
    count_ready(client, &tenant, "providerVolumes").await?;
    let per_poll = sql_statements(client).await? - before_poll;
    let statements = (before_poll - statements_before).saturating_sub(polls * per_poll);
    let total = sim_calls(client, &sim_addr).await?;
    // Each volume needs one create call; W workers make W calls at a time.
    let ideal = args.volumes.div_ceil(args.reconcile_workers) as f64 * args.provider_latency_ms as f64 / 1000.0;
    Ok(Convergence {
        wall,
        ideal,
        calls_per_volume: total as f64 / args.volumes as f64,
        statements_per_volume: statements as f64 / args.volumes as f64,
    })
}

/// The server's `vps_graph_sql_statements` counter, read at /metrics.
async fn sql_statements(client: &Client) -> BenchResult<u64> {
    let url = format!("http://{}/metrics", client.addr);
    let text = client.http.get(url).send().await.map_err(|e| e.to_string())?.text().await.map_err(|e| e.to_string())?;
    text.lines()
        .find_map(|line| line.strip_prefix("vps_graph_sql_statements_total "))
        .and_then(|n| n.trim().parse().ok())
        .ok_or_else(|| "no vps_graph_sql_statements_total at /metrics".to_owned())
}

/// A fresh tenant with a pool on an account at `api_url`, offered with room for everything.
pub(super) async fn tenant_with_pool(client: &Client, api_url: &str, prefix: &str) -> BenchResult<(String, String)> {
    let tenant = format!("{prefix}-{}", ulid::Ulid::generate().to_string().to_lowercase());
    client.ensure_tenant(&tenant).await?;
    let suffix = &tenant[tenant.len() - 10..];
    let account = client
        .gql(
            "mutation($n: String!, $u: String!) { providerAccountCreate(input: { name: $n, kind: DIGITALOCEAN, apiUrl: $u, credentialRef: \"env:VPS_GRAPH_BENCH_SIM_TOKEN\", regions: [\"nyc3\"] }) { id } }",
            json!({ "n": format!("a-{suffix}"), "u": api_url }),
        )
        .await?;
    let pool = client
        .gql(
            "mutation($n: String!, $a: String!) { poolCreate(input: { name: $n, providerAccountId: $a, billing: METERED }) { id } }",
            json!({ "n": format!("p-{suffix}"), "a": account["providerAccountCreate"]["id"] }),
        )
        .await?["poolCreate"]["id"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    client
        .gql(
            "mutation($p: String!, $t: String!) { poolOffer(input: { poolId: $p, tenantId: $t, quotas: [{ resource: \"diskGiB\", max: 100000000 }] }) { tenantId } }",
            json!({ "p": pool, "t": tenant }),
        )
        .await?;
    Ok((tenant, pool))
}

/// Runs `make(i)` for i in 0..total from 8 concurrent senders.
async fn in_parallel<F, Fut>(total: usize, make: F) -> BenchResult<()>
where
    F: Fn(usize) -> Fut + Send + Sync + 'static + Clone,
    Fut: std::future::Future<Output = BenchResult<()>> + Send + 'static,
{
    let next = Arc::new(AtomicUsize::new(0));
    let senders: Vec<_> = (0..8)
        .map(|_| {
            let (next, make) = (next.clone(), make.clone());
            tokio::spawn(async move {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= total {
                        return Ok::<(), String>(());
                    }
                    make(i).await?;
                }
            })
        })
        .collect();
    for sender in senders {
        sender.await.map_err(|e| e.to_string())??;
    }
    Ok(())
}
