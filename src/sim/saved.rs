//! The simulated cloud kept in a file (`SimConfig::state_file`), so that the demo's cloud is
//! still there after a restart, as a real account's would be: read once at start, and written
//! whole a few times a second while it changes, through a temporary file renamed over the last
//! one. A crash loses at most the last moment, which the reconcilers then meet as any change
//! made outside. Actions keep their start times on the clock, so those running at the restart
//! finish after it. Faults, call counts and rate budgets are not kept.
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::{Sim, SimConfig, aws, digitalocean};

/// How often the cloud is looked at for changes to write.
const EVERY: Duration = Duration::from_millis(200);

#[derive(Serialize, Deserialize)]
struct Saved<D, A> {
    digitalocean: D,
    aws: A,
}

/// What `path` holds, set to `config`'s timing; None when there is no file yet. A file that
/// cannot be read is moved aside (`.unreadable`) and the cloud starts empty.
pub(super) fn load(path: &Path, config: &SimConfig) -> Option<(digitalocean::Model, aws::Model)> {
    let bytes = match std::fs::read(path) {
        Ok(bytes) => bytes,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return None,
        Err(err) => {
            tracing::error!(path = %path.display(), error = %err, "the simulated cloud's file cannot be read; starting empty");
            return None;
        }
    };
    match serde_json::from_slice::<Saved<digitalocean::Model, aws::Model>>(&bytes) {
        Ok(saved) => {
            tracing::info!(path = %path.display(), "the simulated cloud is as it was left");
            Some((saved.digitalocean.configured(config), saved.aws.configured(config)))
        }
        Err(err) => {
            let aside = path.with_extension("unreadable");
            let _ = std::fs::rename(path, &aside);
            tracing::error!(path = %path.display(), aside = %aside.display(), error = %err,
                "the simulated cloud's file is not one this version reads; moved aside, starting empty");
            None
        }
    }
}

/// Keeps `path` up to date with `sim` while the sim lives.
pub(super) fn keep(sim: &Sim, path: PathBuf) {
    let Ok(runtime) = tokio::runtime::Handle::try_current() else { return };
    let weak = Arc::downgrade(&sim.inner);
    runtime.spawn(async move {
        let mut written = Vec::new();
        loop {
            tokio::time::sleep(EVERY).await;
            let Some(inner) = weak.upgrade() else { return };
            let bytes = Sim { inner }.to_bytes();
            if bytes.is_empty() || bytes == written {
                continue;
            }
            match write(&path, &bytes).await {
                Ok(()) => written = bytes,
                Err(err) => tracing::warn!(path = %path.display(), error = %err, "the simulated cloud was not written"),
            }
        }
    });
}

/// Written next to it, then renamed over it: the file is always one whole cloud.
async fn write(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        tokio::fs::create_dir_all(dir).await?;
    }
    let temporary = path.with_extension("writing");
    tokio::fs::write(&temporary, bytes).await?;
    tokio::fs::rename(&temporary, path).await
}

impl Sim {
    /// The whole cloud as the file holds it.
    fn to_bytes(&self) -> Vec<u8> {
        let digitalocean = self.with_digitalocean(|model| serde_json::to_value(&*model));
        let aws = self.with_aws(|model| serde_json::to_value(&*model));
        match (digitalocean, aws) {
            (Ok(digitalocean), Ok(aws)) => serde_json::to_vec(&Saved { digitalocean, aws }).unwrap_or_default(),
            _ => Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;

    async fn call(http: &reqwest::Client, method: reqwest::Method, url: String, body: Option<Value>) -> Value {
        let mut request = http.request(method, url).bearer_auth("t");
        if let Some(body) = body {
            request = request.json(&body);
        }
        request.send().await.unwrap().json().await.unwrap_or(Value::Null)
    }

    #[tokio::test]
    async fn a_restarted_sim_holds_what_it_held_and_an_action_running_across_it_finishes() {
        let dir = std::env::temp_dir().join(format!("vps-graph-sim-{}", ulid::Ulid::generate()));
        let path = dir.join("cloud.json");
        let config =
            SimConfig { action_time: Duration::from_millis(400), state_file: Some(path.clone()), ..Default::default() };
        let (_first, url) = Sim::spawn_local(config.clone()).await.unwrap();
        let http = reqwest::Client::new();
        let vpc = json!({ "name": "kept", "region": "nyc3", "ip_range": "10.9.0.0/24" });
        call(&http, reqwest::Method::POST, format!("{url}/v2/vpcs"), Some(vpc)).await;
        let volume = json!({ "name": "data", "region": "nyc3", "size_gigabytes": 10 });
        let made = call(&http, reqwest::Method::POST, format!("{url}/v2/volumes"), Some(volume)).await;
        let id = made["volume"]["id"].as_str().unwrap().to_owned();
        let resize = json!({ "type": "resize", "size_gigabytes": 20, "region": "nyc3" });
        let action = call(&http, reqwest::Method::POST, format!("{url}/v2/volumes/{id}/actions"), Some(resize)).await;
        assert_eq!(action["action"]["status"], "in-progress", "{action}");
        let action_id = action["action"]["id"].as_u64().unwrap();
        // Written within a moment; the second sim starts from a copy of it, as a restart would.
        let mut kept = String::new();
        for _ in 0..50 {
            kept = std::fs::read_to_string(&path).unwrap_or_default();
            if kept.contains(&id) && kept.contains("\"resize\"") {
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        assert!(kept.contains(&id), "the volume was never written: {kept}");
        let again = dir.join("again.json");
        std::fs::write(&again, &kept).unwrap();
        let (_second, url) = Sim::spawn_local(SimConfig { state_file: Some(again), ..config }).await.unwrap();
        let vpcs = call(&http, reqwest::Method::GET, format!("{url}/v2/vpcs"), None).await;
        assert!(vpcs["vpcs"].as_array().unwrap().iter().any(|v| v["name"] == "kept"), "{vpcs}");
        tokio::time::sleep(Duration::from_millis(500)).await;
        let done = call(&http, reqwest::Method::GET, format!("{url}/v2/actions/{action_id}"), None).await;
        assert_eq!(done["action"]["status"], "completed", "{done}");
        let volume = call(&http, reqwest::Method::GET, format!("{url}/v2/volumes/{id}"), None).await;
        assert_eq!(volume["volume"]["size_gigabytes"], 20, "{volume}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_file_this_version_cannot_read_is_moved_aside() {
        let dir = std::env::temp_dir().join(format!("vps-graph-sim-{}", ulid::Ulid::generate()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("cloud.json");
        std::fs::write(&path, b"{ not json").unwrap();
        assert!(load(&path, &SimConfig::default()).is_none());
        assert!(!path.exists() && dir.join("cloud.unreadable").exists());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
