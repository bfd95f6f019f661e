//! The dashboard's list: `providerVolumes(first: 100)` with attachments, their instances and
//! snapshots, over a tenant of many volumes (each attached to one of 100 instances, one snapshot
//! each), pages spread over the tenant, every request executed (no response cache).
//!
//! Measured side by side in one run: this server under wrk at 8 and 32 connections (requests per
//! second, server and PostgreSQL CPU per page); pgbench replaying the very statements the server
//! ran for those pages (captured from its SQL trace), the database's own ceiling; and PostGraphile
//! 5 serving the same tables, when it is installed. Statements per page are read at several page
//! sizes.
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use serde_json::{Value, json};

use super::peers::{self, Load, PostGraphile};
use super::volumes::{in_parallel, tenant_with_pool};
use super::{BenchArgs, BenchResult, Client, Server, verdict};

const PAGE: &str = "query($t: String!, $a: String, $n: Int!) { providerVolumes(tenantId: $t, first: $n, after: $a) { edges { node { id state sizeGiB attachments { instanceId state instance { id name state } } snapshots { id name state sizeGiB } } } pageInfo { endCursor hasNextPage } } }";

/// The same page from PostGraphile's amber preset: the tenant's volumes by id, their
/// attachments (reverse foreign key) with the instance (forward), and their snapshots (a
/// `@foreignKey` smart tag, since snapshots outlive their volume's row in no foreign key).
const PEER_PAGE: &str = "query($t: String!, $a: Cursor) { allProviderVolumes(first: 100, after: $a, condition: { tenantId: $t }, orderBy: ROW_ID_ASC) { edges { node { rowId state sizeGib volumeAttachmentsByVolumeId { nodes { instanceId state instanceByInstanceId { rowId name state } } } providerSnapshotsByVolumeId { nodes { rowId name state sizeGib } } } } pageInfo { endCursor hasNextPage } } }";

const PEER_TAG: &str =
    "COMMENT ON TABLE provider_snapshots IS E'@foreignKey (volume_id) references provider_volumes (id)'";

/// Pages whose statements pgbench replays.
const REPLAYED_PAGES: usize = 20;

pub struct Seeded {
    pub tenant: String,
    pub seed_secs: f64,
}

/// `n` volumes in a fresh tenant, each attached to one of 100 instances and with one snapshot,
/// made through the API on a server that converges nothing.
pub async fn seed(client: &Client, n: usize) -> BenchResult<Seeded> {
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
    let seed = Arc::new((client.clone(), tenant.clone(), pool, instances));
    in_parallel(n, move |i| {
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
    Ok(Seeded { tenant, seed_secs: seeding.elapsed().as_secs_f64() })
}

/// Every figure of the list, printed as it is measured.
pub async fn figures(label: &str, database_url: &str, args: &BenchArgs, dir: &Path) -> BenchResult<()> {
    let postgres = database_url.starts_with("postgres");
    let server = Server::start_with(database_url, &["--no-sim", "--reconcile-workers", "0"]).await?;
    let client = &server.client;
    let seeded = seed(client, args.page_volumes).await?;
    if postgres {
        crate::store::admin::execute(database_url, "ANALYZE").await?;
    }
    println!(
        "[{label}] list: {} volumes, each attached to one of 100 instances with one snapshot (seeded through the API in {:.0} s{})",
        args.page_volumes,
        seeded.seed_secs,
        if postgres { ", then ANALYZE" } else { "" }
    );
    let tenant = &seeded.tenant;
    for size in [1, 10, 100] {
        let (page, statements) = page(client, tenant, None, size).await?;
        let edges = page["providerVolumes"]["edges"].as_array().map_or(0, Vec::len);
        println!(
            "[{label}] list: first {size}: {edges} volumes in {statements} SQL statements (target ≤ 4 at any size) {}",
            verdict(statements <= 4)
        );
    }
    let cursors = cursors(client, tenant).await?;
    let bodies: Vec<String> = cursors
        .iter()
        .map(|a| json!({ "query": PAGE, "variables": { "t": tenant, "a": a, "n": 100 } }).to_string())
        .collect();
    if !peers::installed("wrk").await {
        println!("[{label}] list: wrk is not installed (apt-get install -y wrk): no load figures");
        return Ok(());
    }
    let url = format!("http://{}/graphql", client.addr);
    let mut ours = Vec::new();
    for connections in [8, 32] {
        let measured = measure(&url, &bodies, connections, args.load_secs, dir, server.pid()?).await?;
        // On SQLite the database works inside the server: its CPU is the page's whole cost, and
        // the target (the server's own share, on PostgreSQL) does not apply.
        let server_cpu = match postgres {
            true => format!(
                "server CPU {:.2} ms per page (target ≤ 2.5) {}, PostgreSQL CPU {:.2} ms per page",
                measured.server_cpu_ms,
                verdict(measured.server_cpu_ms <= 2.5),
                measured.postgres_cpu_ms
            ),
            false => format!("server CPU, SQLite's included, {:.2} ms per page", measured.server_cpu_ms),
        };
        println!(
            "[{label}] list: vps-graph at {connections} connections: {:.0} requests/s, p50 {:.1} ms, p99 {:.1} ms, {server_cpu}, {} errors",
            measured.load.rate, measured.load.p50_ms, measured.load.p99_ms, measured.load.errors
        );
        ours.push((connections, measured));
    }
    let typename = json!({ "query": "{ __typename }" }).to_string();
    let trivial = peers::wrk(&url, super::ADMIN, std::slice::from_ref(&typename), 32, args.load_secs, dir).await?;
    println!("[{label}] list: vps-graph {{ __typename }} at 32 connections: {:.0} requests/s", trivial.rate);
    if !postgres {
        return Ok(());
    }
    let replayed = replayed_pages(database_url, tenant, &cursors).await?;
    if replayed.iter().any(String::is_empty) {
        println!("[{label}] list: the server wrote no SQL trace (a build before it had one): no pgbench figure");
        drop(server);
        return peer_figures(label, database_url, args, tenant, &ours, &typename, trivial.rate, dir).await;
    }
    for (connections, measured) in &ours {
        let tps = peers::pgbench(database_url, &replayed, *connections, args.load_secs, dir).await?;
        let ratio = measured.load.rate / tps;
        println!(
            "[{label}] list: pgbench of the server's own statements for those pages at {connections} clients: {tps:.0} pages/s; vps-graph reaches {:.0} % (target ≥ 50 %) {}",
            ratio * 100.0,
            verdict(ratio >= 0.5)
        );
    }
    drop(server);
    peer_figures(label, database_url, args, tenant, &ours, &typename, trivial.rate, dir).await
}

struct Measured {
    load: Load,
    server_cpu_ms: f64,
    postgres_cpu_ms: f64,
}

/// A wrk run with the CPU the server process and PostgreSQL used over it, per request.
async fn measure(
    url: &str,
    bodies: &[String],
    connections: usize,
    secs: u64,
    dir: &Path,
    pid: u32,
) -> BenchResult<Measured> {
    // A short warm-up at the same load, not counted.
    peers::wrk(url, super::ADMIN, bodies, connections, 2, dir).await?;
    let (server_before, postgres_before) = (peers::cpu_secs(pid)?, peers::postgres_cpu());
    let load = peers::wrk(url, super::ADMIN, bodies, connections, secs, dir).await?;
    let server_cpu = peers::cpu_secs(pid)? - server_before;
    let postgres_cpu = peers::postgres_cpu_since(&postgres_before);
    let per_page = |secs: f64| secs * 1000.0 / load.requests.max(1) as f64;
    Ok(Measured { server_cpu_ms: per_page(server_cpu), postgres_cpu_ms: per_page(postgres_cpu), load })
}

#[allow(clippy::too_many_arguments)]
async fn peer_figures(
    label: &str,
    database_url: &str,
    args: &BenchArgs,
    tenant: &str,
    ours: &[(usize, Measured)],
    typename: &str,
    our_trivial: f64,
    dir: &Path,
) -> BenchResult<()> {
    let Some(install) = &args.postgraphile else {
        println!(
            "[{label}] list: PostGraphile 5 not given (--postgraphile <folder with node_modules/postgraphile>, --node <Node ≥ 22>): no ratio to it"
        );
        return Ok(());
    };
    crate::store::admin::execute(database_url, PEER_TAG).await?;
    let peer = PostGraphile::start(install, &args.node, database_url).await?;
    let cursors = peer_cursors(&peer.url, tenant).await?;
    let bodies: Vec<String> = cursors
        .iter()
        .map(|a| json!({ "query": PEER_PAGE, "variables": { "t": tenant, "a": a } }).to_string())
        .collect();
    for (connections, mine) in ours {
        let theirs = measure(&peer.url, &bodies, *connections, args.load_secs, dir, peer.pid()?).await?;
        let ratio = mine.load.rate / theirs.load.rate;
        println!(
            "[{label}] list: PostGraphile 5 at {connections} connections: {:.0} requests/s, p99 {:.1} ms, server CPU {:.2} ms per page, PostgreSQL CPU {:.2} ms per page, {} errors; vps-graph at {ratio:.2}x (target ≥ 3x) {}",
            theirs.load.rate,
            theirs.load.p99_ms,
            theirs.server_cpu_ms,
            theirs.postgres_cpu_ms,
            theirs.load.errors,
            verdict(ratio >= 3.0)
        );
    }
    let trivial = peers::wrk(&peer.url, super::ADMIN, &[typename.to_owned()], 32, args.load_secs, dir).await?;
    println!(
        "[{label}] list: PostGraphile 5 {{ __typename }} at 32 connections: {:.0} requests/s; vps-graph at {:.2}x",
        trivial.rate,
        our_trivial / trivial.rate
    );
    Ok(())
}

/// One page of `size` and the SQL statements it cost (the server's `x-sql-statements`).
async fn page(client: &Client, tenant: &str, after: Option<&str>, size: usize) -> BenchResult<(Value, u64)> {
    let response = client
        .http
        .post(format!("http://{}/graphql", client.addr))
        .bearer_auth(super::ADMIN)
        .json(&json!({ "query": PAGE, "variables": { "t": tenant, "a": after, "n": size } }))
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
    check_page(&body["data"]["providerVolumes"]["edges"], "attachments", "instance", "snapshots")?;
    Ok((body["data"].clone(), statements))
}

/// Every volume of a full page has its attachment, the attachment its instance, and a snapshot.
fn check_page(edges: &Value, attachments: &str, instance: &str, snapshots: &str) -> BenchResult<()> {
    let list = |v: &Value| v.as_array().cloned().or_else(|| v["nodes"].as_array().cloned()).unwrap_or_default();
    for edge in edges.as_array().into_iter().flatten() {
        let node = &edge["node"];
        let attached = list(&node[attachments]);
        if attached.len() != 1 || attached[0][instance].is_null() || list(&node[snapshots]).len() != 1 {
            return Err(format!("a volume without its attachment, instance or snapshot: {node}"));
        }
    }
    Ok(())
}

/// The `after` of every page of 100 (None for the first).
async fn cursors(client: &Client, tenant: &str) -> BenchResult<Vec<Option<String>>> {
    let mut cursors: Vec<Option<String>> = vec![None];
    loop {
        let (page, _) = page(client, tenant, cursors.last().cloned().flatten().as_deref(), 100).await?;
        let info = &page["providerVolumes"]["pageInfo"];
        if info["hasNextPage"] != true {
            return Ok(cursors);
        }
        cursors.push(info["endCursor"].as_str().map(str::to_owned));
    }
}

/// PostGraphile's own cursors for the same pages, each page checked to be the same shape.
async fn peer_cursors(url: &str, tenant: &str) -> BenchResult<Vec<Option<String>>> {
    let http = reqwest::Client::new();
    let mut cursors: Vec<Option<String>> = vec![None];
    loop {
        let variables = json!({ "t": tenant, "a": cursors.last().cloned().flatten() });
        let body = super::json_of(http.post(url), &json!({ "query": PEER_PAGE, "variables": variables })).await?;
        if let Some(errors) = body.get("errors") {
            return Err(format!("PostGraphile: {errors}"));
        }
        let list = &body["data"]["allProviderVolumes"];
        check_page(
            &list["edges"],
            "volumeAttachmentsByVolumeId",
            "instanceByInstanceId",
            "providerSnapshotsByVolumeId",
        )?;
        if list["pageInfo"]["hasNextPage"] != true {
            return Ok(cursors);
        }
        cursors.push(list["pageInfo"]["endCursor"].as_str().map(str::to_owned));
    }
}

/// The statements the server runs for pages spread over the tenant, one pgbench script a page,
/// read from the SQL trace of a server started for it.
async fn replayed_pages(database_url: &str, tenant: &str, cursors: &[Option<String>]) -> BenchResult<Vec<String>> {
    let (server, mut trace) = Server::start_traced(database_url, &["--no-sim", "--reconcile-workers", "0"]).await?;
    let step = (cursors.len() / REPLAYED_PAGES).max(1);
    let mut scripts = Vec::new();
    for after in cursors.iter().step_by(step) {
        let statements = trace.during(page(&server.client, tenant, after.as_deref(), 100)).await?;
        scripts.push(statements.iter().map(|s| format!("{s};\n")).collect());
    }
    Ok(scripts)
}
