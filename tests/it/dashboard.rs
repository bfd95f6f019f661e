//! The dashboard at `/dashboard`, driven in headless Chromium as a person would use it, against
//! the binary itself (SQLite, the in-process simulated cloud, the demo tenant): sign in through
//! the URL fragment, create a volume and watch it go PENDING → READY without reload, see a refused
//! create's QUOTA_EXCEEDED by its form, snapshot and restore, make a network, an instance, a
//! firewall rule and a shared volume whose mount line is copied; then the server is killed and
//! started again while the page is open: the page says it is offline, comes back, and shows a
//! volume made while it was away, with nothing shown twice; and the hour goes on against the
//! cloud made before the restart (attach, resize, detach, an address assigned, an NFS filesystem
//! mounted by a new instance), then a phone's width. The steps are listed in the driver,
//! `playground/tests/dashboard.mjs`; a screenshot of each goes under `target/dashboard/`.
//! Skipped, with a message, only where Chromium is absent. And, without a browser: the demo
//! killed in the middle of a provider action keeps its simulated cloud, READY where it was READY.
use crate::common;

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::{Value, json};

fn chromium() -> Option<String> {
    let path = std::env::var("CHROMIUM").unwrap_or_else(|_| "/usr/bin/chromium".into());
    Path::new(&path).exists().then_some(path)
}

/// The binary, serving on `listen` from the SQLite file in `data`.
pub(crate) struct Server {
    child: Child,
    listen: String,
    data: PathBuf,
}

impl Server {
    /// Starts the binary; the first start's tenant token comes on `token` (a restart prints none).
    pub(crate) fn start(listen: &str, data: &Path, token: std::sync::mpsc::Sender<String>) -> Server {
        let database = format!("sqlite://{}?mode=rwc", data.join("vps-graph.db").display());
        let mut child = Command::new(env!("CARGO_BIN_EXE_vps-graph"))
            .args(["serve", "--listen", listen, "--database-url", &database, "--feed-poll-ms", "100"])
            // Slow enough for a person (and the test) to see PENDING before READY.
            .args(["--sim-action-ms", "1500"])
            .env("RUST_LOG", "warn")
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("the vps-graph binary starts");
        let stdout = BufReader::new(child.stdout.take().unwrap());
        // Read to the end, so that the server never blocks on a full pipe.
        std::thread::spawn(move || {
            for line in stdout.lines().map_while(Result::ok) {
                if let Some(rest) = line.trim().strip_prefix("tenant token:") {
                    let _ = token.send(rest.split_whitespace().next().unwrap_or_default().to_owned());
                }
            }
        });
        Server { child, listen: listen.to_owned(), data: data.to_owned() }
    }

    pub(crate) fn url(&self) -> String {
        format!("http://{}", self.listen)
    }

    /// SIGKILL, as a crash or an OOM kill would end it: nothing is flushed or said goodbye to.
    fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    pub(crate) fn restart(&mut self) {
        self.kill();
        let (unused, _) = std::sync::mpsc::channel();
        *self = Server::start(&self.listen, &self.data, unused);
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.kill();
    }
}

/// The driver (node and its Chromium), ended however the test ends.
pub(crate) struct Driver(pub(crate) Child);

impl Driver {
    /// Runs `command` (node and a script) with its stdin to write to and its stdout's lines
    /// arriving on a channel (read on a thread: reading them blocks).
    pub(crate) fn spawn(
        mut command: Command,
    ) -> (Driver, std::process::ChildStdin, tokio::sync::mpsc::UnboundedReceiver<String>) {
        let mut driver = Driver(
            command
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .expect("node runs the driver"),
        );
        let to_driver = driver.0.stdin.take().unwrap();
        let from_driver = BufReader::new(driver.0.stdout.take().unwrap());
        let (lines, received) = tokio::sync::mpsc::unbounded_channel();
        std::thread::spawn(move || {
            for line in from_driver.lines().map_while(Result::ok) {
                if lines.send(line).is_err() {
                    break;
                }
            }
        });
        (driver, to_driver, received)
    }

    /// Ends the driver; what it wrote on stderr.
    pub(crate) fn finish(mut self) -> String {
        let mut stderr_pipe = self.0.stderr.take().unwrap();
        drop(self);
        let mut stderr = String::new();
        let _ = std::io::Read::read_to_string(&mut stderr_pipe, &mut stderr);
        stderr
    }
}

impl Drop for Driver {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_dashboard_shows_a_volume_converge_a_refusal_and_resumes_after_a_restart() {
    let Some(chromium) = chromium() else {
        eprintln!("SKIPPED: Chromium is not installed (apt-get install -y chromium); the dashboard was not tested");
        return;
    };
    vps_graph::init_crypto();
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let driver = root.join("playground/tests/dashboard.mjs");
    assert!(
        root.join("playground/node_modules/playwright-core").exists(),
        "playground/node_modules is missing: the build (build.rs) installs it when Node.js is present"
    );
    let data = std::env::temp_dir().join(format!("vps-graph-dashboard-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&data);
    std::fs::create_dir_all(&data).unwrap();
    let shots = root.join("target/dashboard");
    std::fs::create_dir_all(&shots).unwrap();

    let listen = format!("127.0.0.1:{}", common::free_port());
    let (token_sent, token) = std::sync::mpsc::channel();
    let mut server = Server::start(&listen, &data, token_sent);
    let token = token.recv_timeout(Duration::from_secs(60)).expect("the first start prints the tenant token");
    let base = server.url();
    let page = reqwest::get(format!("{base}/dashboard")).await.unwrap();
    assert_eq!(page.status(), 200);
    let page = page.text().await.unwrap();
    assert!(page.contains("<script"), "the binary serves no dashboard build at /dashboard: {page}");

    let mut command = Command::new("node");
    command.arg(&driver).arg(&base).arg(&token).arg(&shots).env("CHROMIUM", chromium);
    let (node, mut to_driver, mut received) = Driver::spawn(command);

    let mut report = Value::Null;
    let mut restarted = false;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(420);
    while let Ok(Some(line)) = tokio::time::timeout_at(deadline, received.recv()).await {
        let Ok(message) = serde_json::from_str::<Value>(&line) else { continue };
        if message["await"] == "restart" {
            // Killed while the page holds its socket open, started again on the same port and
            // database; the change is made before the page may reconnect.
            server.restart();
            let change = message["query"].as_str().expect("the driver names its change");
            let made = common::gql_at(&reqwest::Client::new(), &base, &token, change, json!({})).await;
            assert!(made.get("errors").is_none(), "the change made while the page was away failed: {made}");
            writeln!(to_driver, "restarted").unwrap();
            restarted = true;
        } else if message.get("ok").is_some() {
            report = message;
            break;
        }
    }
    let stderr = node.finish();
    assert_eq!(
        report["ok"],
        true,
        "the dashboard run failed: {report}\n{stderr}\n(screenshots in {})",
        shots.display()
    );
    assert!(restarted, "the driver never asked for the restart: {report}");
    let steps = [
        "signed-in",
        "volume-price",
        "volume-pending",
        "volume-ready",
        "quota-exceeded",
        "snapshot-restored",
        "snapshot-deleted",
        "network-ready",
        "rule-ready",
        "rule-conflict",
        "rule-deleted",
        "shared-volume-mount",
        "offline",
        "resumed",
        "volume-attached",
        "volume-resized",
        "volume-detached",
        "address-assigned",
        "address-unassigned",
        "filesystem-ready",
        "instance-mounts",
        "filesystem-deleted",
        "narrow",
        "phone",
    ];
    for shot in steps {
        let file = shots.join(format!("{shot}.png"));
        assert!(file.metadata().is_ok_and(|m| m.len() > 0), "no screenshot {}", file.display());
    }
    let _ = std::fs::remove_dir_all(&data);
}

/// GraphQL at the binary with the tenant token; the data, or the errors in a panic.
async fn data(base: &str, token: &str, query: &str, variables: Value) -> Value {
    let body = common::gql_at(&reqwest::Client::new(), base, token, query, variables).await;
    assert!(body.get("errors").is_none(), "{query}: {body}");
    body["data"].clone()
}

/// Reads until `check` holds (the reconcilers work in real time here), at most 30 s.
async fn until(base: &str, token: &str, query: &str, variables: Value, check: impl Fn(&Value) -> bool) -> Value {
    for _ in 0..300 {
        let seen = data(base, token, query, variables.clone()).await;
        if check(&seen) {
            return seen;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("never: {}", data(base, token, query, variables).await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_demo_keeps_its_cloud_across_a_kill_in_the_middle_of_a_resize() {
    vps_graph::init_crypto();
    let data_dir = std::env::temp_dir().join(format!("vps-graph-restart-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&data_dir);
    std::fs::create_dir_all(&data_dir).unwrap();
    let listen = format!("127.0.0.1:{}", common::free_port());
    let (token_sent, token) = std::sync::mpsc::channel();
    let mut server = Server::start(&listen, &data_dir, token_sent);
    let token = token.recv_timeout(Duration::from_secs(60)).expect("the first start prints the tenant token");
    let base = server.url();
    let pools = data(&base, &token, "{ pools(tenantId: \"demo\") { id name } }", json!({})).await;
    let pool = pools["pools"].as_array().unwrap().iter().find(|p| p["name"] == "demo").unwrap()["id"].clone();

    let create = "mutation($i: ProviderVolumeCreateInput!) { providerVolumeCreate(input: $i) { id } }";
    let input = json!({ "tenantId": "demo", "poolId": pool, "name": "kept", "region": "nyc3", "sizeGiB": 10,
        "idempotencyKey": "kept" });
    let volume = data(&base, &token, create, json!({ "i": input })).await["providerVolumeCreate"]["id"].clone();
    let network = "mutation($i: NetworkCreateInput!) { networkCreate(input: $i) { id } }";
    let input = json!({ "tenantId": "demo", "poolId": pool, "name": "lan", "idempotencyKey": "lan",
        "subnets": [{ "region": "nyc3", "ipRange": "10.60.0.0/24" }] });
    let network = data(&base, &token, network, json!({ "i": input })).await["networkCreate"]["id"].clone();
    let read = "query($v: String!, $n: String!) { providerVolume(tenantId: \"demo\", volumeId: $v) { state sizeGiB observedSizeGiB message } network(tenantId: \"demo\", networkId: $n) { state message } }";
    let ids = json!({ "v": volume, "n": network });
    let ready = |seen: &Value| seen["providerVolume"]["state"] == "READY" && seen["network"]["state"] == "READY";
    until(&base, &token, read, ids.clone(), ready).await;

    // A resize is sent (its action takes 1.5 s at the sim) and the server is killed under it.
    let resize = "mutation($v: String!, $s: Int!) { providerVolumeResize(input: { tenantId: \"demo\", volumeId: $v, sizeGiB: $s }) { state } }";
    data(&base, &token, resize, json!({ "v": volume, "s": 20 })).await;
    tokio::time::sleep(Duration::from_millis(700)).await;
    server.restart();

    let resized = |seen: &Value| ready(seen) && seen["providerVolume"]["observedSizeGiB"] == 20;
    let after = until(&base, &token, read, ids.clone(), resized).await;
    assert!(after["providerVolume"]["message"].is_null(), "{after}");
    // And the cloud still holds the volume for the next change.
    data(&base, &token, resize, json!({ "v": volume, "s": 30 })).await;
    let again = |seen: &Value| ready(seen) && seen["providerVolume"]["observedSizeGiB"] == 30;
    until(&base, &token, read, ids, again).await;
    assert!(data_dir.join("sim-cloud.json").exists(), "the cloud is kept beside the database");
    drop(server);
    let _ = std::fs::remove_dir_all(&data_dir);
}
