//! Volume figures: volumes converging from create to READY against a separate sim process.
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde_json::json;

use super::{BenchArgs, BenchResult, Client, Server, count_ready, sim_calls, spawn_sim};

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
    Ok(client.metric("vps_graph_sql_statements_total").await? as u64)
}

/// Where a bench tenant's pool is: an account at `api_url` whose token `credential_ref` names,
/// the platform's (metered) or, `own`, the tenant's (BYO: nothing metered).
pub(super) struct PoolAt<'a> {
    pub api_url: &'a str,
    pub credential_ref: &'a str,
    pub own: bool,
}

/// The token of the sims the bench's server processes reach.
pub(super) const SIM_TOKEN: &str = "env:VPS_GRAPH_BENCH_SIM_TOKEN";

/// A fresh tenant with a pool on the platform's account at `api_url`, offered with room for
/// everything.
pub(super) async fn tenant_with_pool(client: &Client, api_url: &str, prefix: &str) -> BenchResult<(String, String)> {
    tenant_with_pool_at(client, &PoolAt { api_url, credential_ref: SIM_TOKEN, own: false }, prefix).await
}

/// A fresh tenant (`prefix`-…) with a pool `at`, offered with room for everything.
pub(super) async fn tenant_with_pool_at(
    client: &Client,
    at: &PoolAt<'_>,
    prefix: &str,
) -> BenchResult<(String, String)> {
    let tenant = format!("{prefix}-{}", ulid::Ulid::generate().to_string().to_lowercase());
    client.ensure_tenant(&tenant).await?;
    let suffix = &tenant[tenant.len() - 10..];
    let account = client
        .gql(
            "mutation($n: String!, $u: String!, $c: String!, $t: String) { providerAccountCreate(input: { name: $n, tenantId: $t, kind: DIGITALOCEAN, apiUrl: $u, credentialRef: $c, regions: [\"nyc3\"] }) { id } }",
            json!({ "n": format!("a-{suffix}"), "u": at.api_url, "c": at.credential_ref, "t": at.own.then_some(&tenant) }),
        )
        .await?;
    let pool = client
        .gql(
            "mutation($n: String!, $a: String!, $b: Billing!) { poolCreate(input: { name: $n, providerAccountId: $a, billing: $b }) { id } }",
            json!({ "n": format!("p-{suffix}"), "a": account["providerAccountCreate"]["id"], "b": if at.own { "BYO" } else { "METERED" } }),
        )
        .await?["poolCreate"]["id"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    client
        .gql(
            "mutation($p: String!, $t: String!) { poolOffer(input: { poolId: $p, tenantId: $t, quotas: [{ resource: \"diskGiB\", max: 100000000 }, { resource: \"instances\", max: 100000 }, { resource: \"networks\", max: 100000 }] }) { tenantId } }",
            json!({ "p": pool, "t": tenant }),
        )
        .await?;
    Ok((tenant, pool))
}

/// Runs `make(i)` for i in 0..total from 8 concurrent senders.
pub(super) async fn in_parallel<F, Fut>(total: usize, make: F) -> BenchResult<()>
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
