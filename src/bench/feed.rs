//! The feed's figures: events delivered to many live WebSocket subscribers spread over many
//! tenants at a steady rate (append-to-delivery latency), server memory per idle subscriber,
//! and the cost of reading a page of the feed with ten million events in the outbox.
use std::sync::Arc;
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use futures_util::StreamExt;
use serde_json::Value;
use tokio::sync::Mutex;

use super::{BenchArgs, BenchResult, Client, Server, Subscriber, verdict};
use crate::store::outbox::{self, Position};

pub struct Delivery {
    pub rate: f64,
    pub count: usize,
    pub p50_ms: f64,
    pub p99_ms: f64,
}

/// `args.subscribers` live subscribers, `args.subscribers_per_tenant` to a tenant, each
/// following its tenant's `project.*` events; `args.events` projects are made at
/// `args.event_rate` a second in tenants taken in turn, so each event concerns the few
/// subscribers of its tenant and every other subscription must cost it nothing.
pub async fn deliveries(client: &Client, args: &BenchArgs) -> BenchResult<Delivery> {
    let per_tenant = args.subscribers_per_tenant.max(1);
    let tenants: Vec<String> =
        (0..args.subscribers.div_ceil(per_tenant)).map(|t| format!("bench-feed-{}-{t}", args.subscribers)).collect();
    for tenant in &tenants {
        client.ensure_tenant(tenant).await?;
    }
    // Every tenant's subscribers wait for as many events as go to it.
    let expected = |t: usize| args.events / tenants.len() + usize::from(t < args.events % tenants.len());
    let latencies = Arc::new(Mutex::new(Vec::with_capacity(args.events * per_tenant)));
    let mut readers = Vec::new();
    for n in 0..args.subscribers {
        let t = n % tenants.len();
        let subscriber = client.subscriber(&tenants[t]).await?;
        readers.push(tokio::spawn(listen(subscriber, expected(t), latencies.clone())));
    }
    // No ack for `subscribe`: wait until the server holds every subscription.
    let registering = Instant::now();
    while client.metric("vps_graph_subscribers").await? < args.subscribers as f64 {
        if registering.elapsed() > Duration::from_secs(120) {
            return Err("the server never held every subscription".into());
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let started = Instant::now();
    let mut tick = tokio::time::interval(Duration::from_secs_f64(1.0 / args.event_rate.max(1) as f64));
    let mut sends = Vec::with_capacity(args.events);
    for n in 0..args.events {
        tick.tick().await;
        let (client, tenant) = (client.clone(), tenants[n % tenants.len()].clone());
        sends.push(tokio::spawn(async move { client.project(&tenant, &format!("e{n}")).await }));
    }
    for send in sends {
        send.await.map_err(|e| e.to_string())??;
    }
    for reader in readers {
        reader.await.map_err(|e| e.to_string())?;
    }
    let elapsed = started.elapsed().as_secs_f64();
    let mut latencies = std::mem::take(&mut *latencies.lock().await);
    latencies.sort_by(f64::total_cmp);
    let at = |q: f64| latencies.get(((latencies.len() as f64 - 1.0) * q) as usize).copied().unwrap_or(f64::NAN);
    Ok(Delivery { rate: latencies.len() as f64 / elapsed, count: latencies.len(), p50_ms: at(0.50), p99_ms: at(0.99) })
}

/// Reads `expected` events, noting how long after its append each arrived.
async fn listen(mut subscriber: Subscriber, expected: usize, latencies: Arc<Mutex<Vec<f64>>>) {
    let mut mine = Vec::with_capacity(expected);
    while mine.len() < expected {
        let Ok(Some(Ok(message))) = tokio::time::timeout(Duration::from_secs(60), subscriber.ws.next()).await else {
            break;
        };
        let Ok(frame) = serde_json::from_str::<Value>(message.to_text().unwrap_or("{}")) else { continue };
        if frame["type"] == "ping" {
            use futures_util::SinkExt;
            let pong = tokio_tungstenite::tungstenite::Message::text(r#"{"type":"pong"}"#);
            let _ = subscriber.ws.send(pong).await;
            continue;
        }
        if let Some(time) = frame["payload"]["data"]["events"]["time"].as_str()
            && let Ok(time) = time.parse::<DateTime<Utc>>()
        {
            mine.push((Utc::now() - time).num_microseconds().unwrap_or(0) as f64 / 1000.0);
        }
    }
    latencies.lock().await.extend(mine);
}

/// The server's RSS before and after `n` idle subscriptions (each its own WebSocket).
pub async fn idle_memory(server: &Server, n: usize) -> BenchResult<(u64, u64)> {
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

/// A page of the feed read at 10,000 events and again at `args.feed_events`, on a database of
/// its own (PostgreSQL), with the plan of the read at the larger size.
pub async fn growth(label: &str, base: &str, args: &BenchArgs) -> BenchResult<()> {
    let name = format!("vpsg_bench_feed_{}", ulid::Ulid::generate().to_string().to_lowercase());
    crate::store::admin::execute(base, &format!("CREATE DATABASE {name}")).await?;
    let url = crate::store::admin::with_database(base, &name);
    let result = growth_in(label, &url, args).await;
    crate::store::admin::execute(base, &format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)")).await?;
    result
}

async fn growth_in(label: &str, url: &str, args: &BenchArgs) -> BenchResult<()> {
    let db = crate::store::connect(url, 2).await.map_err(|e| e.describe())?;
    let seeding = Instant::now();
    outbox::seed_for_bench(&db, 10_000).await.map_err(|e| e.describe())?;
    crate::store::admin::execute(url, "ANALYZE outbox_events").await?;
    let small = read_cost(&db).await?;
    outbox::seed_for_bench(&db, args.feed_events.saturating_sub(10_000)).await.map_err(|e| e.describe())?;
    crate::store::admin::execute(url, "ANALYZE outbox_events").await?;
    let seed_secs = seeding.elapsed().as_secs_f64();
    let large = read_cost(&db).await?;
    for (what, small, large) in [("the whole feed", small.0, large.0), ("one tenant's", small.1, large.1)] {
        let ratio = large / small;
        println!(
            "[{label}] feed: a page of 100 of {what} events after a cursor in the middle: {small:.3} ms at 10,000 events, {large:.3} ms at {} ({ratio:.2}x; target flat, ≤ 1.5x) {}",
            args.feed_events,
            verdict(ratio <= 1.5)
        );
    }
    let plan = outbox::explain_read_after(&db, middle(&db).await?, Some("bench-growth-7"), 100)
        .await
        .map_err(|e| e.describe())?;
    println!(
        "[{label}] feed: the plan of one tenant's page at {} events (seeded in {seed_secs:.0} s):",
        args.feed_events
    );
    for line in plan {
        println!("    {line}");
    }
    Ok(())
}

/// The mean time of a page read after the middle of the feed, whole and for one tenant.
async fn read_cost(db: &sea_orm::DatabaseConnection) -> BenchResult<(f64, f64)> {
    let after = middle(db).await?;
    let mut figures = [0.0; 2];
    for (slot, tenant) in [None, Some("bench-growth-7")].into_iter().enumerate() {
        let started = Instant::now();
        for _ in 0..200 {
            outbox::read_after(db, after, tenant, 100).await.map_err(|e| e.describe())?;
        }
        figures[slot] = started.elapsed().as_secs_f64() * 1000.0 / 200.0;
    }
    Ok((figures[0], figures[1]))
}

/// The position of the event halfway through the feed.
async fn middle(db: &sea_orm::DatabaseConnection) -> BenchResult<Position> {
    let head = outbox::head(db).await.map_err(|e| e.describe())?;
    Ok(outbox::position_of(db, head.id / 2).await.map_err(|e| e.describe())?.unwrap_or_default())
}
