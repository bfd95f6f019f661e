//! The simulated cloud: in-memory models with HTTP faces shaped like the real APIs, for the
//! default run, dashboard development and tests. Every call is counted (per endpoint and per
//! name), rate-limited per token with the real headers, and can be made to fail: the next N calls
//! of an endpoint answer a status, act but drop the answer, or stall. It is not a provider: the
//! real clients talk to it over HTTP.
pub mod aws;
mod control;
pub mod digitalocean;
mod saved;

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::Router;
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug)]
pub struct SimConfig {
    /// Added to every call.
    pub latency: Duration,
    /// How long an asynchronous action takes to complete.
    pub action_time: Duration,
    /// Per-token budget: requests per sliding hour, and the burst per minute.
    pub per_hour: usize,
    pub per_minute: usize,
    /// The window the burst limit counts `per_minute` in: a minute, as DigitalOcean's (shorter in
    /// tests, so that waiting out a burst takes a test a second).
    pub burst_window: Duration,
    /// Least time between two snapshots of one volume (zero: no limit).
    pub snapshot_interval: Duration,
    /// The most items one page of a list holds, whatever was asked (None: each API's own). Tests
    /// set it low so that a list crosses a page boundary with a few items.
    pub page_limit: Option<usize>,
    /// The clock actions take their time on: the app's, so that a test that drives the app's
    /// clock drives the provider's actions too (rate limits stay on real time).
    pub clock: crate::clock::Clock,
    /// Where the cloud is kept across restarts (`saved`); None: in memory only.
    pub state_file: Option<std::path::PathBuf>,
}

impl Default for SimConfig {
    fn default() -> Self {
        SimConfig {
            latency: Duration::ZERO,
            action_time: Duration::from_secs(2),
            per_hour: 5000,
            per_minute: 250,
            burst_window: Duration::from_secs(60),
            snapshot_interval: Duration::from_secs(600),
            page_limit: None,
            clock: crate::clock::Clock::system(),
            state_file: None,
        }
    }
}

/// What the next calls of an endpoint do instead of answering normally.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "fault", rename_all = "lowercase")]
pub enum Fault {
    /// Answer this status with the API's error body; nothing is done.
    Status { status: u16 },
    /// Do it, then never answer (the client times out).
    Drop,
    /// Never answer and do nothing.
    Stall,
    /// Answer as usual, but the work the call starts fails: an action ends `errored` (an NFS
    /// action `ACTION_FAILED`), a share goes `FAILED`, a Droplet's create fails and the Droplet is
    /// gone; on the AWS face a file system goes `error` (EFS) or `FAILED` with the message (FSx),
    /// a mount target `error`, an instance `terminated`.
    Fail {
        #[serde(default)]
        message: Option<String>,
    },
}

tokio::task_local! {
    /// The failure a `Fault::Fail` gives the work its request starts, while that request runs.
    static FAILING: String;
}

/// What the work started by the request being handled is to fail with, if it is to fail.
fn failing() -> Option<String> {
    FAILING.try_with(Clone::clone).ok()
}

/// Runs a request's handler so that the work it starts fails with `message`.
async fn failing_with<F: std::future::Future>(message: Option<String>, handler: F) -> F::Output {
    FAILING.scope(message.unwrap_or_else(|| "the provider could not complete it".into()), handler).await
}

/// A record's status word: one of a few the code writes and compares. (An alias, so that serde
/// reads it with `word` instead of borrowing it from the saved text.)
pub(crate) type Word = &'static str;

/// A record's status word read back from the saved cloud, as the `&'static str` the code keeps
/// and compares (a word this code never writes is kept too, once).
fn word<'de, D: serde::Deserializer<'de>>(reader: D) -> Result<Word, D::Error> {
    const WORDS: &[&str] = &[
        "new",
        "active",
        "off",
        "archive",
        "creating",
        "available",
        "deleting",
        "deleted",
        "error",
        "pending",
        "running",
        "shutting-down",
        "terminated",
        "stopping",
        "stopped",
        "CREATING",
        "ACTIVE",
        "AVAILABLE",
        "INACTIVE",
        "DELETING",
        "DELETED",
        "FAILED",
        "UPDATING",
        "MISCONFIGURED",
    ];
    let word = <String as serde::Deserialize>::deserialize(reader)?;
    Ok(WORDS.iter().copied().find(|w| *w == word).unwrap_or_else(|| Box::leak(word.into_boxed_str())))
}

#[derive(Clone)]
pub struct Sim {
    inner: Arc<Inner>,
}

struct Inner {
    config: SimConfig,
    digitalocean: Mutex<digitalocean::Model>,
    aws: Mutex<aws::Model>,
    control: Mutex<Control>,
}

#[derive(Default)]
struct Control {
    faults: HashMap<String, VecDeque<Fault>>,
    calls: BTreeMap<String, u64>,
    names: BTreeMap<String, u64>,
    requests: HashMap<String, VecDeque<Instant>>,
}

/// A token's budget after counting one request.
pub struct Budget {
    pub limit: usize,
    pub remaining: usize,
    pub reset_at: i64,
    /// Set when the request is over the budget: seconds to wait.
    pub refused_for: Option<u64>,
}

impl Sim {
    /// A sim holding what its state file held (see `saved`), or nothing; while it lives, it
    /// keeps that file up to date.
    pub fn new(config: SimConfig) -> Sim {
        let restored = config.state_file.as_deref().and_then(|path| saved::load(path, &config));
        let (digitalocean, aws) =
            restored.unwrap_or_else(|| (digitalocean::Model::new(&config), aws::Model::new(&config)));
        let sim = Sim {
            inner: Arc::new(Inner {
                digitalocean: Mutex::new(digitalocean),
                aws: Mutex::new(aws),
                config,
                control: Mutex::new(Control::default()),
            }),
        };
        if let Some(path) = sim.inner.config.state_file.clone() {
            saved::keep(&sim, path);
        }
        sim
    }

    pub fn config(&self) -> &SimConfig {
        &self.inner.config
    }

    /// The DigitalOcean face at `/v2/`, the AWS face (EC2, EFS, FSx) at `POST /` and
    /// `/2015-02-01/`, and the control endpoints at `/_sim/`.
    pub fn router(&self) -> Router {
        digitalocean::router(self.clone()).merge(aws::router(self.clone())).merge(control::router(self.clone()))
    }

    /// Serves the sim on `listener` until the process ends.
    pub async fn serve(self, listener: tokio::net::TcpListener) -> std::io::Result<()> {
        axum::serve(listener, self.router()).await
    }

    /// Starts a sim on a free loopback port; returns it with its base URL.
    pub async fn spawn_local(config: SimConfig) -> std::io::Result<(Sim, String)> {
        let listener = tokio::net::TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], 0))).await?;
        let url = format!("http://{}", listener.local_addr()?);
        let sim = Sim::new(config);
        tokio::spawn(sim.clone().serve(listener));
        Ok((sim, url))
    }

    fn with_digitalocean<T>(&self, f: impl FnOnce(&mut digitalocean::Model) -> T) -> T {
        f(&mut self.inner.digitalocean.lock().unwrap_or_else(|e| e.into_inner()))
    }

    fn control<T>(&self, f: impl FnOnce(&mut Control) -> T) -> T {
        f(&mut self.inner.control.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// Starts an asynchronous action in the DigitalOcean model, as an attach or a resize does.
    pub fn start_action(&self, kind: &str, resource_type: &str, region: &str) -> u64 {
        self.with_digitalocean(|model| model.start_action(kind, resource_type, region))
    }

    /// Every selective destroy asked for (`DELETE /v2/droplets/{id}/destroy_with_associated_resources/selective`),
    /// in order: the droplet's id and the request body.
    pub fn selective_destroys(&self) -> Vec<(u64, serde_json::Value)> {
        self.with_digitalocean(|model| model.selective_destroys())
    }

    /// Makes the next `count` calls of `endpoint` (e.g. `vpcs.create`, `efs.CreateFileSystem`) end
    /// in `fault`.
    pub fn inject(&self, endpoint: &str, fault: Fault, count: usize) {
        self.control(|c| c.faults.entry(endpoint.to_owned()).or_default().extend(std::iter::repeat_n(fault, count)));
    }

    pub fn clear_faults(&self) {
        self.control(|c| c.faults.clear());
    }

    fn take_fault(&self, endpoint: &str) -> Option<Fault> {
        self.control(|c| c.faults.get_mut(endpoint).and_then(VecDeque::pop_front))
    }

    fn count_call(&self, endpoint: &str) {
        self.control(|c| *c.calls.entry(endpoint.to_owned()).or_default() += 1);
    }

    /// Counts a call that names a resource (a create, say), as `endpoint:name`.
    pub fn count_name(&self, endpoint: &str, name: &str) {
        self.control(|c| *c.names.entry(format!("{endpoint}:{name}")).or_default() += 1);
    }

    /// Calls received per endpoint.
    pub fn calls(&self, endpoint: &str) -> u64 {
        self.control(|c| c.calls.get(endpoint).copied().unwrap_or(0))
    }

    /// Calls received per endpoint and name.
    pub fn name_calls(&self, endpoint: &str, name: &str) -> u64 {
        self.control(|c| c.names.get(&format!("{endpoint}:{name}")).copied().unwrap_or(0))
    }

    pub fn all_calls(&self) -> (BTreeMap<String, u64>, BTreeMap<String, u64>) {
        self.control(|c| (c.calls.clone(), c.names.clone()))
    }

    /// The budget an unauthenticated request is told of: the whole hour's, nothing spent.
    fn unspent(&self) -> Budget {
        let limit = self.inner.config.per_hour;
        Budget { limit, remaining: limit, reset_at: chrono::Utc::now().timestamp() + 3600, refused_for: None }
    }

    /// Counts one request of `token` against its sliding-hour budget and minute burst.
    fn spend(&self, token: &str) -> Budget {
        let config = &self.inner.config;
        let now = Instant::now();
        let unix = chrono::Utc::now().timestamp();
        self.control(|c| {
            let window = c.requests.entry(token.to_owned()).or_default();
            while window.front().is_some_and(|t| now.duration_since(*t) >= Duration::from_secs(3600)) {
                window.pop_front();
            }
            let burst = config.burst_window;
            let in_burst = window.iter().rev().take_while(|t| now.duration_since(**t) < burst).count();
            let oldest_expires =
                |t: Option<&Instant>| unix + t.map_or(3600, |t| 3600 - now.duration_since(*t).as_secs() as i64);
            let refused_for = if window.len() >= config.per_hour {
                Some(oldest_expires(window.front()).saturating_sub(unix).max(1) as u64)
            } else if in_burst >= config.per_minute {
                // Until the oldest request of the burst window leaves it.
                let oldest = window.iter().rev().nth(in_burst - 1).map_or(burst, |t| burst - now.duration_since(*t));
                Some(oldest.as_secs_f64().ceil().max(1.0) as u64)
            } else {
                window.push_back(now);
                None
            };
            Budget {
                limit: config.per_hour,
                // A refusal, burst or hourly, says 0 remain, as DigitalOcean's does.
                remaining: if refused_for.is_some() { 0 } else { config.per_hour.saturating_sub(window.len()) },
                reset_at: oldest_expires(window.front()),
                refused_for,
            }
        })
    }
}
