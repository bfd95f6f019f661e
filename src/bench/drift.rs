//! `bench --only-drift`: what an hour of drift reads costs one DigitalOcean account as it grows.
//! For each size, that many settled resources of every kind the inventory lists (block volumes,
//! shares, the snapshots of both, reserved IPv4 and IPv6, Droplets) are put in the simulated
//! account and in the database, each with its drift read due somewhere in the hour as a settled
//! resource's is; then two hours pass on a manual clock, a minute at a time, every due run done
//! before the next minute. The first hour holds the first pass and the own reads that came due
//! before it; the second is the steady state. The figures, of the second hour: the calls the
//! account sent, the same hour
//! with the inventory pass taken away (the per-resource design: each resource read on its own,
//! measured up to `--drift-peer-max` resources), the oldest drift read at the hour's end, the
//! inventory's memory, and how long a volume create asked at minute 30 took to reach the provider.
//!
//! The account's token has DigitalOcean's 5,000 requests an hour when the inventory runs; the
//! per-resource design is measured without a limit, so that its figure is what it would need.
use std::time::{Duration, Instant};

use sea_orm::{ConnectionTrait, EntityTrait, Set, TransactionTrait};
use serde_json::json;

use super::usage::Owner;
use super::{ADMIN, BenchResult, Client};
use crate::app::{App, AppConfig};
use crate::clock::Clock;
use crate::config::LimitArgs;
use crate::reconcile::{RuntimeConfig, drift_due};
use crate::sim::digitalocean::{Plan, Seeded};
use crate::sim::{Sim, SimConfig};
use crate::store::entity::{instance, provider_address as address, provider_snapshot as snapshot};
use crate::store::entity::{pool, provider_volume as volume};
use crate::store::state::{AddressFamily, Assignment, Desired, OnDelete, State, VolumeKind};
use crate::store::{inventory, queue};

/// DigitalOcean's requests an hour for one token.
const TOKEN_PER_HOUR: usize = 5_000;

/// One simulated hour's figures.
struct Hour {
    calls: u64,
    /// The calls of the hour before (the first after seeding).
    first_calls: u64,
    /// The calls by endpoint, most first.
    by_endpoint: Vec<(String, u64)>,
    /// Own reads (`*.get`) among them.
    reads: u64,
    /// Minutes since the last whole inventory pass began, at the hour's end.
    oldest_read_min: Option<f64>,
    inventory_bytes: Option<f64>,
    /// Calls the account's budget held back, over both hours.
    held_back: u64,
    create_ms: Option<f64>,
    wall_secs: f64,
}

pub async fn figures(dir: &std::path::Path, sizes: &[usize], peer_max: usize) -> BenchResult<()> {
    println!(
        "drift: one DigitalOcean account, two hours on a manual clock, the figures of the second (the steady state); resources of every kind listed (block volumes, shares, snapshots, reserved IPv4 and IPv6, Droplets)"
    );
    for &n in sizes {
        let ours = hour(dir, n, true).await?;
        let peer = if n <= peer_max { Some(hour(dir, n, false).await?) } else { None };
        let per_thousand = ours.calls as f64 * 1000.0 / n as f64;
        let peer_text = match &peer {
            Some(p) => format!(
                "the per-resource design {} calls ({} own reads), {:.1}x",
                p.calls,
                p.reads,
                p.calls as f64 / ours.calls.max(1) as f64
            ),
            None => format!("the per-resource design not run above {peer_max} (at least {n} calls: one read each)"),
        };
        let target = match n {
            n if n >= 100_000 => Some(1_000),
            n if n >= 10_000 => Some(200),
            _ => None,
        };
        let verdict = match target {
            Some(most) => format!(" {} (target ≤ {most})", super::verdict(ours.calls <= most)),
            None => String::new(),
        };
        println!(
            "drift: {n} resources: {} provider calls in one hour{verdict}, {per_thousand:.1} per 1,000 resources; {peer_text}; oldest drift read {}; inventory {}; {} calls held back by the budget; a create asked at minute 30 reached the provider after {}; hour simulated in {:.1} s (the first hour after seeding: {} calls)",
            ours.calls,
            ours.oldest_read_min.map_or("unknown".into(), |m| format!("{m:.0} min")),
            ours.inventory_bytes.map_or("unknown".into(), |b| format!("{:.1} MB", b / 1e6)),
            ours.held_back,
            ours.create_ms.map_or("more than 10 s".into(), |ms| format!("{ms:.0} ms")),
            ours.wall_secs,
            ours.first_calls,
        );
        let endpoints: Vec<String> = ours.by_endpoint.iter().map(|(e, n)| format!("{e} {n}")).collect();
        println!("drift: {n} resources: the hour's calls by endpoint: {}", endpoints.join(", "));
    }
    Ok(())
}

/// The resources of each kind for `n` in all.
fn plan(n: usize, tag: &str) -> Plan {
    let part = |percent: usize| n * percent / 100;
    Plan {
        region: "nyc3".into(),
        tag: tag.to_owned(),
        volumes: n - part(5) - part(20) - part(5) - part(15) - part(5) - part(15),
        shares: part(5),
        volume_snapshots: part(20),
        share_snapshots: part(5),
        ipv4: part(15),
        ipv6: part(5),
        droplets: part(15),
    }
}

/// One hour of `n` settled resources, with the inventory pass or without it.
async fn hour(dir: &std::path::Path, n: usize, with_inventory: bool) -> BenchResult<Hour> {
    let start_ms = chrono::Utc::now().timestamp_millis() / 60_000 * 60_000;
    let clock = Clock::manual(start_ms);
    let per_hour = if with_inventory { TOKEN_PER_HOUR } else { usize::MAX / 2 };
    let sim_config = SimConfig {
        action_time: Duration::from_millis(10),
        per_hour,
        per_minute: usize::MAX / 2,
        snapshot_interval: Duration::ZERO,
        clock: clock.clone(),
        ..SimConfig::default()
    };
    let (sim, sim_url) = Sim::spawn_local(sim_config).await.map_err(|e| e.to_string())?;
    let name = format!("drift-{n}-{}", if with_inventory { "inventory" } else { "per-resource" });
    let database_url = format!("sqlite://{}/{name}.db?mode=rwc", dir.display());
    let token_file = dir.join(format!("{name}.token"));
    std::fs::write(&token_file, "bench").map_err(|e| e.to_string())?;
    let app = App::start(AppConfig {
        database_url,
        db_max_connections: 16,
        admin_token: Some(ADMIN.into()),
        metrics_token: None,
        demo: false,
        limits: LimitArgs::default(),
        load: crate::config::LoadArgs::default(),
        sim: None,
        runtime: RuntimeConfig { workers: 8, lease_ms: 60_000, poll: Duration::from_millis(20) },
        provider_timeout: Duration::from_secs(5),
        clock: clock.clone(),
    })
    .await
    .map_err(|e| e.describe())?;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.map_err(|e| e.to_string())?;
    let addr = listener.local_addr().map_err(|e| e.to_string())?.to_string();
    tokio::spawn(crate::http::serve(listener, app.router(), crate::config::LoadArgs::default(), app.stop.clone()));
    let client = Client { addr, http: reqwest::Client::new() };
    let credential_ref = format!("file:{}", token_file.display());
    // The tenant's own account: nothing is metered, so the usage pass stays out of the hours.
    let at = super::volumes::PoolAt { api_url: &sim_url, credential_ref: &credential_ref, own: true };
    let (tenant, pool_id) = super::volumes::tenant_with_pool_at(&client, &at, "drift").await?;
    let db = &app.services.db;
    let account = pool::Entity::find_by_id(pool_id.clone())
        .one(db)
        .await
        .map_err(|e| e.to_string())?
        .ok_or("the pool vanished")?
        .provider_account_id;
    let seeded = sim.seed_digitalocean(&plan(n, &crate::provider::ownership_tag(&app.services.deployment)));
    let owner = Owner { tenant, pool: pool_id, account: account.clone() };
    settle_rows(db, &owner, &seeded, clock.now_ms()).await?;
    if !with_inventory {
        let sql = format!("DELETE FROM work_items WHERE kind = '{}'", inventory::RECONCILER);
        db.execute_unprepared(&sql).await.map_err(|e| e.to_string())?;
    }
    // The first hour begins with the first pass, and the own reads that come due before it ends;
    // the second is the steady state the figures are of.
    let first = one_hour(db, &clock, &sim, None).await?;
    let second = one_hour(db, &clock, &sim, Some((&client, &owner))).await?;
    let listed_at = gauge(&app, "vps_graph_inventory_listed_at_seconds", &account);
    let oldest_read_min = listed_at.map(|at| (clock.now_ms() as f64 / 1000.0 - at) / 60.0);
    let inventory_bytes = gauge(&app, "vps_graph_inventory_bytes", &account);
    let held_back = held_back(&app);
    app.shutdown(Duration::from_secs(5)).await;
    Ok(Hour { first_calls: first.calls, oldest_read_min, inventory_bytes, held_back, ..second })
}

/// One hour, a minute at a time, each minute's due runs done before the next; with `asker`, a
/// volume create is asked at minute 30 and timed.
async fn one_hour(
    db: &sea_orm::DatabaseConnection,
    clock: &Clock,
    sim: &Sim,
    asker: Option<(&Client, &Owner)>,
) -> BenchResult<Hour> {
    let before = sim.all_calls().0;
    let reads_before = own_reads(sim);
    let began = Instant::now();
    let mut create_ms = None;
    for minute in 1..=60 {
        clock.advance(60_000);
        until_idle(db, clock).await?;
        if let (30, Some((client, owner))) = (minute, asker) {
            create_ms = create_wait(client, sim, owner).await?;
        }
    }
    let wall_secs = began.elapsed().as_secs_f64();
    let mut by_endpoint: Vec<(String, u64)> = sim
        .all_calls()
        .0
        .into_iter()
        .map(|(endpoint, n)| (endpoint.clone(), n - before.get(&endpoint).copied().unwrap_or(0)))
        .filter(|(_, n)| *n > 0)
        .collect();
    by_endpoint.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    let calls = by_endpoint.iter().map(|(_, n)| n).sum();
    let reads = own_reads(sim) - reads_before;
    Ok(Hour {
        calls,
        first_calls: 0,
        by_endpoint,
        reads,
        oldest_read_min: None,
        inventory_bytes: None,
        held_back: 0,
        create_ms,
        wall_secs,
    })
}

/// The rows of what the sim was seeded with, settled, and each one's drift read due in the hour.
async fn settle_rows(db: &sea_orm::DatabaseConnection, owner: &Owner, seeded: &Seeded, now_ms: i64) -> BenchResult<()> {
    let at = chrono::DateTime::from_timestamp_millis(now_ms).unwrap_or_default() - chrono::Duration::days(1);
    let txn = db.begin().await.map_err(|e| e.to_string())?;
    let mut items: Vec<(&str, String)> = Vec::new();
    let mut volume_ids = Vec::new();
    let mut share_ids = Vec::new();
    let volumes = seeded.volumes.iter().map(|v| (v, VolumeKind::Block));
    let shares = seeded.shares.iter().map(|s| (s, VolumeKind::Shared));
    let volume_rows: Vec<volume::ActiveModel> = volumes
        .chain(shares)
        .map(|((provider_id, name, size), kind)| {
            let row = owner.ready_volume(name, kind, *size, Some(provider_id.clone()), at);
            let id = row.id.clone().unwrap();
            if kind == VolumeKind::Block {
                volume_ids.push(id.clone())
            } else {
                share_ids.push(id.clone())
            }
            items.push((crate::store::volumes::RECONCILER, id));
            row
        })
        .collect();
    insert_chunks::<volume::Entity>(&txn, volume_rows).await?;
    let block = seeded.volume_snapshots.iter().map(|(p, of, size)| (p, &volume_ids[*of], VolumeKind::Block, size));
    let shared = seeded.share_snapshots.iter().map(|(p, of, size)| (p, &share_ids[*of], VolumeKind::Shared, size));
    let snapshot_rows: Vec<snapshot::ActiveModel> = block
        .chain(shared)
        .enumerate()
        .map(|(i, (provider_id, volume_id, kind, size))| {
            let id = crate::ids::new_id(crate::ids::SNAPSHOT);
            items.push((crate::store::volumes::RECONCILER, id.clone()));
            snapshot::ActiveModel {
                provider_name: Set(crate::service::snapshots::provider_name(&id, kind)),
                id: Set(id),
                tenant_id: Set(owner.tenant.clone()),
                project_id: Set(None),
                pool_id: Set(owner.pool.clone()),
                provider_account_id: Set(owner.account.clone()),
                volume_id: Set(volume_id.clone()),
                volume_kind: Set(kind),
                region: Set("nyc3".into()),
                name: Set(format!("s-{i}")),
                state: Set(State::Ready),
                desired_state: Set(Desired::Present),
                provider_id: Set(Some(provider_id.clone())),
                size_gib: Set(Some(*size)),
                min_disk_size: Set(10),
                create_attempts: Set(1),
                lost: Set(false),
                message: Set(None),
                deletion_protection: Set(false),
                schedule_id: Set(None),
                version: Set(1),
                generation: Set(1),
                created_at: Set(at),
                updated_at: Set(at),
                ready_at: Set(Some(at)),
                deleted_at: Set(None),
            }
        })
        .collect();
    insert_chunks::<snapshot::Entity>(&txn, snapshot_rows).await?;
    let v4 = seeded.ipv4.iter().map(|ip| (ip, AddressFamily::Ipv4));
    let v6 = seeded.ipv6.iter().map(|ip| (ip, AddressFamily::Ipv6));
    let address_rows: Vec<address::ActiveModel> = v4
        .chain(v6)
        .enumerate()
        .map(|(i, (ip, family))| {
            let id = crate::ids::new_id(crate::ids::ADDRESS);
            items.push((crate::store::volumes::RECONCILER, id.clone()));
            address::ActiveModel {
                id: Set(id),
                tenant_id: Set(owner.tenant.clone()),
                project_id: Set(None),
                pool_id: Set(owner.pool.clone()),
                provider_account_id: Set(owner.account.clone()),
                name: Set(format!("a-{i}")),
                region: Set("nyc3".into()),
                family: Set(family),
                state: Set(State::Ready),
                desired_state: Set(Desired::Present),
                address: Set(Some(ip.clone())),
                fingerprint: Set(None),
                reserve_attempts: Set(1),
                lost: Set(false),
                message: Set(None),
                instance_id: Set(None),
                assignment_state: Set(Assignment::None),
                assignment_message: Set(None),
                action_id: Set(None),
                deletion_protection: Set(false),
                version: Set(1),
                generation: Set(1),
                created_at: Set(at),
                updated_at: Set(at),
                ready_at: Set(Some(at)),
                deleted_at: Set(None),
            }
        })
        .collect();
    insert_chunks::<address::Entity>(&txn, address_rows).await?;
    let instance_rows: Vec<instance::ActiveModel> = seeded
        .droplets
        .iter()
        .map(|(provider_id, name)| {
            let id = crate::ids::new_id(crate::ids::INSTANCE);
            items.push((crate::store::instances::RECONCILER, id.clone()));
            instance::ActiveModel {
                provider_name: Set(crate::service::instances::provider_name(&id)),
                id: Set(id),
                tenant_id: Set(owner.tenant.clone()),
                project_id: Set(None),
                pool_id: Set(owner.pool.clone()),
                provider_account_id: Set(owner.account.clone()),
                network_id: Set(None),
                name: Set(name.clone()),
                region: Set("nyc3".into()),
                size: Set("s-1vcpu-1gb".into()),
                image: Set("ubuntu-24-04-x64".into()),
                on_delete: Set(OnDelete::Delete),
                state: Set(State::Ready),
                desired_state: Set(Desired::Present),
                provider_id: Set(Some(provider_id.clone())),
                create_attempts: Set(1),
                lost: Set(false),
                message: Set(None),
                version: Set(1),
                generation: Set(1),
                created_at: Set(at),
                updated_at: Set(at),
                ready_at: Set(Some(at)),
                deleted_at: Set(None),
                zone: Set(None),
                user_data: Set(None),
            }
        })
        .collect();
    insert_chunks::<instance::Entity>(&txn, instance_rows).await?;
    for (kind, id) in &items {
        queue::ensure(&txn, kind, id, drift_due(now_ms, id)).await.map_err(|e| e.describe())?;
    }
    txn.commit().await.map_err(|e| e.to_string())
}

async fn insert_chunks<E: EntityTrait>(txn: &sea_orm::DatabaseTransaction, rows: Vec<E::ActiveModel>) -> BenchResult<()>
where
    E::ActiveModel: Send,
{
    let mut rows = rows.into_iter().peekable();
    while rows.peek().is_some() {
        let chunk: Vec<E::ActiveModel> = rows.by_ref().take(200).collect();
        E::insert_many(chunk).exec(txn).await.map_err(|e| e.to_string())?;
    }
    Ok(())
}

/// Waits until no work item is due on `clock` (every run due has come and gone).
async fn until_idle(db: &sea_orm::DatabaseConnection, clock: &Clock) -> BenchResult<()> {
    for _ in 0..60_000 {
        let (due, _, _) = queue::depth(db, clock.now_ms()).await.map_err(|e| e.describe())?;
        if due == 0 {
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    Err("the reconcilers never caught up with a minute".into())
}

/// Asks for a volume and times how long until its create reaches the provider (None: more than
/// 10 s, the clock held still meanwhile).
async fn create_wait(client: &Client, sim: &Sim, owner: &Owner) -> BenchResult<Option<f64>> {
    let creates = sim.calls("volumes.create");
    let asked = Instant::now();
    client
        .gql(
            "mutation($i: ProviderVolumeCreateInput!) { providerVolumeCreate(input: $i) { id } }",
            json!({ "i": { "tenantId": owner.tenant, "poolId": owner.pool, "name": "asked-at-minute-30",
                "region": "nyc3", "sizeGiB": 10, "idempotencyKey": "asked-at-minute-30" } }),
        )
        .await?;
    while asked.elapsed() < Duration::from_secs(10) {
        if sim.calls("volumes.create") > creates {
            return Ok(Some(asked.elapsed().as_secs_f64() * 1000.0));
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    Ok(None)
}

fn own_reads(sim: &Sim) -> u64 {
    sim.all_calls().0.iter().filter(|(endpoint, _)| endpoint.ends_with(".get")).map(|(_, n)| n).sum()
}

/// The calls the accounts' budgets held back (counted under the status `budget`).
fn held_back(app: &App) -> u64 {
    let text = app.services.metrics.render();
    let counts =
        text.lines().filter(|l| l.starts_with("vps_graph_provider_calls_total{") && l.contains("status=\"budget\""));
    counts.filter_map(|l| l.rsplit(' ').next()?.parse::<u64>().ok()).sum()
}

/// An account's gauge in the app's metrics.
fn gauge(app: &App, name: &str, account: &str) -> Option<f64> {
    let wanted = format!("{name}{{account=\"{account}\"}} ");
    app.services.metrics.render().lines().find_map(|line| line.strip_prefix(&wanted)?.trim().parse().ok())
}
