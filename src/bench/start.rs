//! Start: the README's `serve` as it runs by default (SQLite, the simulated cloud, the demo, the
//! reconcilers running), from exec to the first `/readyz` that answers 200, on a new database and
//! on a restart of it; then its resident memory once idle.
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use tokio::process::Command;

use super::{BenchResult, free_addr, verdict};

/// Starts of each kind: one start is at the mercy of whatever else the machine does.
const STARTS: usize = 5;

pub async fn figures(dir: &Path) -> BenchResult<()> {
    let mut new = Vec::new();
    let mut restart = Vec::new();
    for n in 0..STARTS {
        let database = format!("sqlite://{}/start-{n}.db?mode=rwc", dir.display());
        new.push(start_once(&database).await?);
        restart.push(start_once(&database).await?);
    }
    for (run, mut starts) in [("a new database", new), ("a restart", restart)] {
        starts.sort_by(|a, b| a.0.total_cmp(&b.0));
        let (serving_ms, rss_kib) = starts[STARTS / 2];
        println!(
            "[sqlite] start on {run}: serving after {serving_ms:.1} ms, the median of {STARTS} (fastest {:.1}, slowest {:.1}; target ≤ 50) {}, idle RSS {:.1} MiB (target ≤ 30) {}",
            starts[0].0,
            starts[STARTS - 1].0,
            verdict(serving_ms <= 50.0),
            rss_kib as f64 / 1024.0,
            verdict(rss_kib as f64 <= 30.0 * 1024.0)
        );
    }
    Ok(())
}

/// Milliseconds from spawn to serving, and the RSS in KiB after 3 s idle.
async fn start_once(database: &str) -> BenchResult<(f64, u64)> {
    let addr = free_addr()?;
    let http = reqwest::Client::builder().timeout(Duration::from_millis(200)).build().map_err(|e| e.to_string())?;
    let started = Instant::now();
    let child = Command::new(super::server_exe()?)
        .args(["serve", "--listen", &addr, "--database-url", database])
        .env("RUST_LOG", "warn")
        .stdout(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| format!("cannot start the server: {e}"))?;
    let pid = child.id().ok_or("the server exited")?;
    let serving = loop {
        if http.get(format!("http://{addr}/readyz")).send().await.is_ok_and(|r| r.status().is_success()) {
            break started.elapsed().as_secs_f64() * 1000.0;
        }
        if started.elapsed() > Duration::from_secs(30) {
            return Err("the server did not become ready in 30 s".into());
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    };
    tokio::time::sleep(Duration::from_secs(3)).await;
    let rss = super::rss_kib_of(pid)?;
    drop(child);
    Ok((serving, rss))
}
