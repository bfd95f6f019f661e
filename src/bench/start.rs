//! Start: the README's `serve` as it runs by default (SQLite, the simulated cloud, the demo, the
//! reconcilers running), from exec to the first `/readyz` that answers 200, on a new database and
//! on a restart of it; then its resident memory once idle.
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use tokio::process::Command;

use super::{BenchResult, free_addr, verdict};

pub async fn figures(dir: &Path) -> BenchResult<()> {
    let database = format!("sqlite://{}/start.db?mode=rwc", dir.display());
    for run in ["a new database", "a restart"] {
        let (serving_ms, rss_kib) = start_once(&database).await?;
        println!(
            "[sqlite] start on {run}: serving after {serving_ms:.1} ms (target ≤ 50) {}, idle RSS {:.1} MiB (target ≤ 30) {}",
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
