//! The tools the bench measures with and against, run as child processes when they are
//! installed: wrk (HTTP load), pgbench (the database's own ceiling for a set of statements) and
//! PostGraphile 5 (the peer serving the same tables); and the CPU each process used.
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use tokio::process::{Child, Command};

use super::{BenchResult, free_addr};

/// CPU seconds (user and system) process `pid` has used so far.
pub fn cpu_secs(pid: u32) -> BenchResult<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).map_err(|e| e.to_string())?;
    // The fields after the command (which may hold spaces) start at state, field 3.
    let fields: Vec<&str> = stat.rsplit_once(')').map(|(_, rest)| rest).unwrap_or("").split_whitespace().collect();
    let ticks = |i: usize| fields.get(i).and_then(|f| f.parse::<f64>().ok()).unwrap_or(0.0);
    Ok((ticks(11) + ticks(12)) / clock_ticks())
}

/// CPU seconds each PostgreSQL server process on this machine has used so far, by pid.
pub fn postgres_cpu() -> std::collections::HashMap<u32, f64> {
    let Ok(entries) = std::fs::read_dir("/proc") else { return Default::default() };
    entries
        .flatten()
        .filter_map(|e| e.file_name().to_str().and_then(|n| n.parse::<u32>().ok()))
        .filter(|pid| std::fs::read_to_string(format!("/proc/{pid}/comm")).is_ok_and(|c| c.trim() == "postgres"))
        .filter_map(|pid| cpu_secs(pid).ok().map(|secs| (pid, secs)))
        .collect()
}

/// The CPU PostgreSQL used between two `postgres_cpu` readings: each process's growth, a new
/// one's all. A process that ended between them (an autovacuum worker) is left out rather than
/// taken off, which made the figure negative.
pub fn postgres_cpu_since(before: &std::collections::HashMap<u32, f64>) -> f64 {
    postgres_cpu().into_iter().map(|(pid, secs)| secs - before.get(&pid).copied().unwrap_or(0.0)).sum()
}

fn clock_ticks() -> f64 {
    // SAFETY: sysconf only reads a configuration value.
    let ticks = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if ticks > 0 { ticks as f64 } else { 100.0 }
}

/// Whether `program` runs here (`--version` answers).
pub async fn installed(program: &str) -> bool {
    Command::new(program).arg("--version").stdout(Stdio::null()).stderr(Stdio::null()).status().await.is_ok()
}

pub struct Load {
    pub requests: u64,
    pub rate: f64,
    pub p50_ms: f64,
    pub p99_ms: f64,
    /// Responses that were not 2xx, and socket errors.
    pub errors: u64,
}

/// wrk for `secs` at `connections` against `url`, POSTing one of `bodies` (JSON, chosen at
/// random per request) with the bearer token `token`.
pub async fn wrk(
    url: &str,
    token: &str,
    bodies: &[String],
    connections: usize,
    secs: u64,
    dir: &Path,
) -> BenchResult<Load> {
    let script = dir.join(format!("load-{}.lua", ulid::Ulid::generate()));
    let quoted: Vec<String> = bodies.iter().map(|b| format!("[==[{b}]==]")).collect();
    let lua = format!(
        r#"local bodies = {{ {} }}
local headers = {{ ["Content-Type"] = "application/json", ["Authorization"] = "Bearer {token}" }}
init = function(args) math.randomseed(os.time() + tonumber(tostring({{}}):sub(8), 16)) end
request = function() return wrk.format("POST", nil, headers, bodies[math.random(#bodies)]) end
done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format("WRK %d %d %.1f %.1f %d\n", summary.requests, summary.duration,
    latency:percentile(50), latency:percentile(99), e.connect + e.read + e.write + e.status + e.timeout))
end
"#,
        quoted.join(",\n")
    );
    std::fs::write(&script, lua).map_err(|e| e.to_string())?;
    let threads = connections.min(2).to_string();
    let output = Command::new("wrk")
        .args(["-t", &threads, "-c", &connections.to_string(), "-d", &format!("{secs}s"), "--timeout", "10s"])
        .arg("-s")
        .arg(&script)
        .arg(url)
        .output()
        .await
        .map_err(|e| format!("wrk: {e}"))?;
    let _ = std::fs::remove_file(&script);
    let text = String::from_utf8_lossy(&output.stdout);
    let line =
        text.lines().find_map(|l| l.strip_prefix("WRK ")).ok_or_else(|| format!("wrk printed no figures: {text}"))?;
    let n: Vec<f64> = line.split_whitespace().filter_map(|f| f.parse().ok()).collect();
    let [requests, micros, p50, p99, errors] = n[..] else { return Err(format!("wrk figures: {line}")) };
    Ok(Load {
        requests: requests as u64,
        rate: requests / (micros / 1e6),
        p50_ms: p50 / 1000.0,
        p99_ms: p99 / 1000.0,
        errors: errors as u64,
    })
}

/// pgbench for `secs` at `clients`, each transaction one of `scripts` (chosen at random);
/// returns transactions per second.
pub async fn pgbench(
    database_url: &str,
    scripts: &[String],
    clients: usize,
    secs: u64,
    dir: &Path,
) -> BenchResult<f64> {
    let mut files = Vec::new();
    for (i, script) in scripts.iter().enumerate() {
        let file = dir.join(format!("pgbench-{}-{i}.sql", ulid::Ulid::generate()));
        std::fs::write(&file, script).map_err(|e| e.to_string())?;
        files.push(file);
    }
    let mut command = Command::new("pgbench");
    command.args(["-n", "-c", &clients.to_string(), "-j", "2", "-T", &secs.to_string()]);
    for file in &files {
        command.arg("-f").arg(file);
    }
    let output = command.arg(database_url).output().await.map_err(|e| format!("pgbench: {e}"))?;
    for file in files {
        let _ = std::fs::remove_file(file);
    }
    let text = String::from_utf8_lossy(&output.stdout);
    if !output.status.success() {
        return Err(format!("pgbench failed: {text}{}", String::from_utf8_lossy(&output.stderr)));
    }
    text.lines()
        .find_map(|l| l.strip_prefix("tps = "))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .ok_or_else(|| format!("pgbench printed no tps: {text}"))
}

/// A PostGraphile 5 server (amber preset) on `database_url`, from an installation folder
/// holding `node_modules/postgraphile`, run by `node` (PostGraphile 5 needs Node 22 or later).
pub struct PostGraphile {
    child: Child,
    pub url: String,
}

impl PostGraphile {
    pub async fn start(install: &Path, node: &Path, database_url: &str) -> BenchResult<PostGraphile> {
        let cli: PathBuf = install.join("node_modules/postgraphile/dist/cli-run.js");
        if !cli.exists() {
            return Err(format!("no PostGraphile at {}", cli.display()));
        }
        let addr = free_addr()?;
        let (host, port) = addr.split_once(':').unwrap_or(("127.0.0.1", "5056"));
        let child = Command::new(node)
            .arg(&cli)
            .args(["-P", "postgraphile/presets/amber", "-c", database_url, "-s", "public", "-n", host, "-p", port])
            .current_dir(install)
            .env("GRAPHILE_ENV", "production")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| format!("cannot start PostGraphile: {e}"))?;
        let server = PostGraphile { child, url: format!("http://{addr}/graphql") };
        let http = reqwest::Client::new();
        for _ in 0..300 {
            let answer = http.post(&server.url).json(&serde_json::json!({ "query": "{ __typename }" })).send().await;
            if answer.is_ok_and(|r| r.status().is_success()) {
                return Ok(server);
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        Err("PostGraphile did not answer within 30 s".into())
    }

    pub fn pid(&self) -> BenchResult<u32> {
        self.child.id().ok_or_else(|| "PostGraphile exited".into())
    }
}
