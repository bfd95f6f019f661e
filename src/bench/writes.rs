//! Writes: `providerVolumeCreate` (validation, quota, idempotency, outbox, wake) from 8 clients on
//! a server that converges nothing, against pgbench running the very statements one create ran
//! (read from the server's SQL trace) in one transaction, its ids, name and key made fresh for
//! every transaction.
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use serde_json::json;

use super::volumes::{in_parallel, tenant_with_pool};
use super::{BenchArgs, BenchResult, Client, Server, peers, verdict};

const CREATE: &str = "mutation($i: ProviderVolumeCreateInput!) { providerVolumeCreate(input: $i) { id state } }";

pub async fn figures(label: &str, database_url: &str, args: &BenchArgs, dir: &Path) -> BenchResult<()> {
    let server = Server::start_with(database_url, &["--no-sim", "--reconcile-workers", "0"]).await?;
    let client = &server.client;
    let (tenant, pool) = tenant_with_pool(client, "http://127.0.0.1:9", "bench-write").await?;
    let started = Instant::now();
    let maker = Arc::new((client.clone(), tenant.clone(), pool.clone()));
    in_parallel(args.writes, move |i| {
        let maker = maker.clone();
        async move {
            let (client, tenant, pool) = &*maker;
            client.gql(CREATE, json!({ "i": input(tenant, pool, &format!("w{i}")) })).await.map(drop)
        }
    })
    .await?;
    let rate = args.writes as f64 / started.elapsed().as_secs_f64();
    println!("[{label}] writes: providerVolumeCreate from 8 clients: {rate:.0}/s ({} creates)", args.writes);
    if !database_url.starts_with("postgres") {
        return Ok(());
    }
    drop(server);
    let (traced, mut trace) = Server::start_traced(database_url, &["--no-sim", "--reconcile-workers", "0"]).await?;
    let name = "traced-create-0";
    let statements = trace.during(create(&traced.client, &tenant, &pool, name)).await?;
    if statements.is_empty() {
        println!("[{label}] writes: the server wrote no SQL trace (a build before it had one): no pgbench figure");
        return Ok(());
    }
    let script = pgbench_script(&statements, name);
    let tps = peers::pgbench(database_url, &[script], 8, args.load_secs, dir).await?;
    let ratio = rate / tps;
    println!(
        "[{label}] writes: pgbench of the same {} statements in one transaction at 8 clients: {tps:.0}/s; vps-graph reaches {:.0} % (target ≥ 50 %) {}",
        statements.len(),
        ratio * 100.0,
        verdict(ratio >= 0.5)
    );
    Ok(())
}

fn input(tenant: &str, pool: &str, name: &str) -> serde_json::Value {
    json!({ "tenantId": tenant, "poolId": pool, "name": name, "region": "nyc3", "sizeGiB": 1, "idempotencyKey": name })
}

async fn create(client: &Client, tenant: &str, pool: &str, name: &str) -> BenchResult<()> {
    client.gql(CREATE, json!({ "i": input(tenant, pool, name) })).await.map(drop)
}

/// The id prefixes of the rows a create makes (the others name rows it reads: pool, account).
const MINTED: &str = "pvol|evt";

/// One transaction of `statements` for pgbench: every id the create made (`<prefix>_<ulid>`)
/// and its name (also its idempotency key) become fresh per transaction through `:r`.
fn pgbench_script(statements: &[String], name: &str) -> String {
    let id = regex::Regex::new(&format!("'({MINTED})_([0-9a-z]{{26}})'")).expect("a valid pattern");
    let mut fresh: Vec<String> = Vec::new();
    let mut script = String::from("\\set r random(1, 1000000000000)\nBEGIN;\n");
    for statement in statements {
        let mut sql = statement.replace(&format!("'{name}'"), "'w:r'");
        for found in id.find_iter(statement) {
            if !fresh.iter().any(|f| f == found.as_str()) {
                fresh.push(found.as_str().to_owned());
            }
        }
        for (k, literal) in fresh.iter().enumerate() {
            let prefix = literal.trim_matches('\'').split('_').next().unwrap_or("id");
            sql = sql.replace(literal, &format!("'{prefix}_{k}x:r'"));
        }
        script.push_str(&sql);
        script.push_str(";\n");
    }
    script.push_str("COMMIT;\n");
    script
}
