//! Block volumes with their actions, network file shares (NFS) with theirs, and the snapshots
//! of both.
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use super::{DigitalOcean, id_text, required, strings, unreadable};
use crate::provider::{
    BlockVolume, ProviderError, ProviderResult, Share, ShareAction, ShareStatus, Snapshot, SnapshotStatus,
    VolumeAction, VolumeActionKind, VolumeCreate,
};

fn volume_from(body: &Value) -> ProviderResult<BlockVolume> {
    let Some(id) = body["id"].as_str() else { return Err(unreadable("volume")) };
    Ok(BlockVolume {
        id: id.to_owned(),
        name: required(body, "name", "volume")?,
        region: required(&body["region"], "slug", "volume region")?,
        size_gib: body["size_gigabytes"].as_i64().ok_or_else(|| unreadable("volume size_gigabytes"))?,
        droplet_ids: strings(&body["droplet_ids"]),
        tags: strings(&body["tags"]),
        description: body["description"].as_str().unwrap_or_default().to_owned(),
    })
}

fn share_from(body: &Value) -> ProviderResult<Share> {
    let Some(id) = body["id"].as_str() else { return Err(unreadable("share")) };
    let text = |key: &str| body[key].as_str().filter(|v| !v.is_empty()).map(str::to_owned);
    Ok(Share {
        id: id.to_owned(),
        name: required(body, "name", "share")?,
        region: required(body, "region", "share")?,
        size_gib: body["size_gib"].as_i64().ok_or_else(|| unreadable("share size_gib"))?,
        status: ShareStatus::parse(&required(body, "status", "share")?)
            .ok_or_else(|| unreadable(&format!("share status {}", body["status"])))?,
        vpc_ids: strings(&body["vpc_ids"]),
        host: text("host"),
        mount_path: text("mount_path"),
    })
}

/// A volume snapshot is ready once made (its create is synchronous); a share snapshot once ACTIVE.
fn snapshot_from(body: &Value) -> ProviderResult<Snapshot> {
    let Some(id) = body.get("id").filter(|v| !v.is_null()) else { return Err(unreadable("snapshot")) };
    let status = match body["status"].as_str() {
        None => None,
        Some(word) => Some(SnapshotStatus::parse(word).ok_or_else(|| unreadable(&format!("snapshot status {word}")))?),
    };
    Ok(Snapshot {
        id: id_text(id),
        name: required(body, "name", "snapshot")?,
        size_gib: body["size_gigabytes"]
            .as_f64()
            .or_else(|| body["size_gib"].as_f64())
            .ok_or_else(|| unreadable("snapshot size"))?,
        min_disk_size: body["min_disk_size"].as_i64(),
        ready: status.is_none_or(|s| s == SnapshotStatus::Active),
        failed: status == Some(SnapshotStatus::Failed),
    })
}

impl DigitalOcean {
    async fn get_one(&self, endpoint: &'static str, path: &str, key: &str) -> ProviderResult<Option<Value>> {
        let answer = self.call(endpoint, Method::GET, path, None).await?;
        if answer.status == StatusCode::NOT_FOUND {
            return Ok(None);
        }
        Ok(Some(answer.body[key].clone()))
    }

    async fn delete_one(&self, endpoint: &'static str, path: &str) -> ProviderResult<bool> {
        let answer = self.call(endpoint, Method::DELETE, path, None).await?;
        Ok(answer.status != StatusCode::NOT_FOUND)
    }
}

/// Block volumes and network file shares.
impl DigitalOcean {
    pub async fn volume_create(&self, request: &VolumeCreate<'_>) -> ProviderResult<BlockVolume> {
        let mut body = json!({
            "name": request.name, "region": request.region, "size_gigabytes": request.size_gib,
            "description": request.description, "tags": request.tags,
        });
        if let Some(filesystem) = request.filesystem {
            body["filesystem_type"] = json!(filesystem);
        }
        if let Some(snapshot_id) = request.snapshot_id {
            body["snapshot_id"] = json!(snapshot_id);
        }
        let answer = self.call("volumes.create", Method::POST, "/v2/volumes", Some(body)).await?;
        volume_from(&answer.body["volume"])
    }

    pub async fn volume_get(&self, id: &str) -> ProviderResult<Option<BlockVolume>> {
        self.get_one("volumes.get", &format!("/v2/volumes/{id}"), "volume").await?.map(|v| volume_from(&v)).transpose()
    }

    pub async fn volume_find_by_name(&self, name: &str, region: &str) -> ProviderResult<Option<BlockVolume>> {
        let found =
            self.list_all("volumes.list", &format!("/v2/volumes?name={name}&region={region}"), "volumes").await?;
        found.iter().find(|v| v["name"] == name).map(volume_from).transpose()
    }

    /// False when it was already gone.
    pub async fn volume_delete(&self, id: &str) -> ProviderResult<bool> {
        self.delete_one("volumes.delete", &format!("/v2/volumes/{id}")).await
    }

    /// Starts an action; returns its id, to be looked at through `Actions`.
    pub async fn volume_action(&self, volume_id: &str, region: &str, action: &VolumeAction) -> ProviderResult<u64> {
        let body = match action {
            VolumeAction::Attach { droplet_id } => {
                json!({ "type": "attach", "droplet_id": droplet_id.parse::<u64>().unwrap_or_default(), "region": region })
            }
            VolumeAction::Detach { droplet_id } => {
                json!({ "type": "detach", "droplet_id": droplet_id.parse::<u64>().unwrap_or_default(), "region": region })
            }
            VolumeAction::Resize { size_gib } => {
                json!({ "type": "resize", "size_gigabytes": size_gib, "region": region })
            }
        };
        let path = format!("/v2/volumes/{volume_id}/actions");
        let answer = self.call("volumes.actions.create", Method::POST, &path, Some(body)).await?;
        if answer.status == StatusCode::NOT_FOUND {
            return Err(ProviderError::refused(404, format!("volume {volume_id} is gone")));
        }
        answer.body["action"]["id"].as_u64().ok_or_else(|| unreadable("action"))
    }

    /// The id of an action of `kind` the provider is still running on the volume: what a call
    /// whose answer was lost may have started.
    pub async fn volume_action_running(&self, volume_id: &str, kind: VolumeActionKind) -> ProviderResult<Option<u64>> {
        // The spec's examples show `attach_volume` and `detach_volume` only: the request's own
        // word is taken as well, so that a resize is recognised whichever the API writes.
        let action_types: &[&str] = match kind {
            VolumeActionKind::Attach => &["attach_volume", "attach"],
            VolumeActionKind::Detach => &["detach_volume", "detach"],
            VolumeActionKind::Resize => &["resize_volume", "resize"],
        };
        let path = format!("/v2/volumes/{volume_id}/actions");
        let actions = self.list_all("volumes.actions.list", &path, "actions").await?;
        let of_kind = |a: &&Value| a["type"].as_str().is_some_and(|t| action_types.contains(&t));
        let running = actions.iter().filter(of_kind).find(|a| a["status"] == "in-progress");
        running.map(|a| a["id"].as_u64().ok_or_else(|| unreadable("action"))).transpose()
    }

    pub async fn share_create(&self, name: &str, region: &str, size_gib: i64, vpc_id: &str) -> ProviderResult<Share> {
        let body = json!({ "name": name, "region": region, "size_gib": size_gib, "vpc_ids": [vpc_id] });
        let answer = self.call("nfs.create", Method::POST, "/v2/nfs", Some(body)).await?;
        share_from(&answer.body["share"])
    }

    pub async fn share_get(&self, id: &str, region: &str) -> ProviderResult<Option<Share>> {
        self.get_one("nfs.get", &format!("/v2/nfs/{id}?region={region}"), "share")
            .await?
            .map(|s| share_from(&s))
            .transpose()
    }

    pub async fn share_find_by_name(&self, name: &str, region: &str) -> ProviderResult<Option<Share>> {
        let shares = self.list_all("nfs.list", &format!("/v2/nfs?region={region}"), "shares").await?;
        // A deleted share may still be listed for a while: it is not the one asked for.
        for share in shares.iter().filter(|s| s["name"] == name) {
            let share = share_from(share)?;
            if share.status != ShareStatus::Deleted {
                return Ok(Some(share));
            }
        }
        Ok(None)
    }

    pub async fn share_delete(&self, id: &str, region: &str) -> ProviderResult<bool> {
        self.delete_one("nfs.delete", &format!("/v2/nfs/{id}?region={region}")).await
    }

    /// Starts a share action; its effect shows on the share (there is no action to poll). A
    /// snapshot answers the new snapshot's id.
    pub async fn share_action(&self, share_id: &str, action: &ShareAction) -> ProviderResult<Option<String>> {
        let (kind, params) = match action {
            ShareAction::Attach { vpc_id } => ("attach", json!({ "vpc_id": vpc_id })),
            ShareAction::Detach { vpc_id } => ("detach", json!({ "vpc_id": vpc_id })),
            ShareAction::Resize { size_gib } => ("resize", json!({ "size_gib": size_gib })),
            ShareAction::Snapshot { name } => ("snapshot", json!({ "name": name })),
        };
        let body = json!({ "type": kind, "region": "", "params": params });
        let path = format!("/v2/nfs/{share_id}/actions");
        let answer = self.call("nfs.actions.create", Method::POST, &path, Some(body)).await?;
        if answer.status == StatusCode::NOT_FOUND {
            return Err(ProviderError::refused(404, format!("share {share_id} is gone")));
        }
        let snapshot = matches!(action, ShareAction::Snapshot { .. });
        Ok(snapshot.then(|| id_text(&answer.body["action"]["resource_id"])))
    }

    /// Every block volume of the account, in pages of the API's largest size.
    pub async fn volumes_list(&self) -> ProviderResult<Vec<BlockVolume>> {
        self.list_all("volumes.list", "/v2/volumes", "volumes").await?.iter().map(volume_from).collect()
    }

    /// Every share of the account in `region`, in pages of the API's largest size.
    pub async fn shares_list(&self, region: &str) -> ProviderResult<Vec<Share>> {
        let shares = self.list_all("nfs.list", &format!("/v2/nfs?region={region}"), "shares").await?;
        shares.iter().map(share_from).collect()
    }
}

impl DigitalOcean {
    pub async fn volume_snapshot_create(
        &self,
        volume_id: &str,
        name: &str,
        tags: &[String],
    ) -> ProviderResult<Snapshot> {
        let path = format!("/v2/volumes/{volume_id}/snapshots");
        let answer = self
            .call("volumes.snapshots.create", Method::POST, &path, Some(json!({ "name": name, "tags": tags })))
            .await?;
        if answer.status == StatusCode::NOT_FOUND {
            return Err(ProviderError::refused(404, format!("volume {volume_id} is gone")));
        }
        snapshot_from(&answer.body["snapshot"])
    }

    pub async fn volume_snapshot_get(&self, id: &str) -> ProviderResult<Option<Snapshot>> {
        self.get_one("snapshots.get", &format!("/v2/snapshots/{id}"), "snapshot")
            .await?
            .map(|s| snapshot_from(&s))
            .transpose()
    }

    pub async fn volume_snapshot_find(&self, volume_id: &str, name: &str) -> ProviderResult<Option<Snapshot>> {
        let path = format!("/v2/volumes/{volume_id}/snapshots");
        let Some(found) = self.list_found("volumes.snapshots.list", &path, "snapshots").await? else { return Ok(None) };
        found.iter().find(|s| s["name"] == name).map(snapshot_from).transpose()
    }

    pub async fn volume_snapshot_delete(&self, id: &str) -> ProviderResult<bool> {
        self.delete_one("snapshots.delete", &format!("/v2/snapshots/{id}")).await
    }

    pub async fn share_snapshot_get(&self, id: &str, region: &str) -> ProviderResult<Option<Snapshot>> {
        let path = format!("/v2/nfs/snapshots/{id}?region={region}");
        let found = self.get_one("nfs.snapshots.get", &path, "snapshot").await?;
        found.map(|s| snapshot_from(&s)).transpose()
    }

    pub async fn share_snapshot_find(
        &self,
        share_id: &str,
        name: &str,
        region: &str,
    ) -> ProviderResult<Option<Snapshot>> {
        let path = format!("/v2/nfs/snapshots?region={region}&share_id={share_id}");
        let found = self.list_all("nfs.snapshots.list", &path, "snapshots").await?;
        found.iter().find(|s| s["name"] == name).map(snapshot_from).transpose()
    }

    pub async fn share_snapshot_delete(&self, id: &str, region: &str) -> ProviderResult<bool> {
        self.delete_one("nfs.snapshots.delete", &format!("/v2/nfs/snapshots/{id}?region={region}")).await
    }

    /// Every volume snapshot of the account, in pages of the API's largest size.
    pub async fn volume_snapshots_list(&self) -> ProviderResult<Vec<Snapshot>> {
        let found = self.list_all("snapshots.list", "/v2/snapshots?resource_type=volume", "snapshots").await?;
        found.iter().map(snapshot_from).collect()
    }

    /// Every share snapshot of the account in `region`, in pages of the API's largest size.
    pub async fn share_snapshots_list(&self, region: &str) -> ProviderResult<Vec<Snapshot>> {
        let path = format!("/v2/nfs/snapshots?region={region}");
        self.list_all("nfs.snapshots.list", &path, "snapshots").await?.iter().map(snapshot_from).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::digitalocean::listed;

    #[test]
    fn a_missing_field_in_an_answer_is_unreadable_never_a_silent_zero() {
        let volume = json!({ "id": "v1", "name": "bc-pvol-1", "region": { "slug": "nyc3" }, "size_gigabytes": 10,
            "droplet_ids": [], "tags": [], "description": "" });
        assert_eq!(volume_from(&volume).unwrap().size_gib, 10);
        for key in ["size_gigabytes", "name", "region"] {
            let mut partial = volume.clone();
            partial.as_object_mut().unwrap().remove(key);
            assert!(matches!(volume_from(&partial), Err(ProviderError::Unknown { .. })), "without {key}");
        }
        let share = json!({ "id": "s1", "name": "bc-pvol-2", "region": "nyc3", "status": "ACTIVE" });
        assert!(matches!(share_from(&share), Err(ProviderError::Unknown { .. })), "a share without size_gib");
        let snapshot = json!({ "id": "p1", "name": "bc-psnap-1", "min_disk_size": 10 });
        assert!(matches!(snapshot_from(&snapshot), Err(ProviderError::Unknown { .. })), "a snapshot without a size");
        assert!(matches!(listed(&json!({ "meta": {} }), "volumes"), Err(ProviderError::Unknown { .. })));
        assert!(listed(&json!({ "volumes": [] }), "volumes").unwrap().is_empty());
    }
}
