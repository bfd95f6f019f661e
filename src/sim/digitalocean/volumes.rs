//! Block storage volumes (`/v2/volumes`), their actions (attach, detach, resize: asynchronous, the
//! state changes at completion) and their snapshots (`/v2/volumes/{id}/snapshots`,
//! `/v2/volumes/snapshots/{id}`, `/v2/snapshots`). Snapshots are made at once, outlive their
//! volume, and are limited per volume: 25 in all, one per `SimConfig::snapshot_interval`.
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Json, Response};
use axum::routing::{get, post};
use serde::Deserialize;
use serde_json::{Value, json};

use super::actions::Change;
use super::{
    Model, Page, REGIONS, Refusal, bad_request, conflict, given, no_content, not_found, now_text, paged, paginate,
    parse,
};
use super::{region_json, unprocessable, uuid};
use crate::sim::Sim;

const MAX_GIB: u64 = 16_384;
const VOLUMES_PER_DROPLET: usize = 15;
const SNAPSHOTS_PER_VOLUME: usize = 25;

#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub(super) struct VolumeRecord {
    pub(super) id: String,
    pub(super) name: String,
    pub(super) description: String,
    pub(super) size: u64,
    pub(super) region: String,
    pub(super) droplet_ids: Vec<u64>,
    pub(super) filesystem_type: String,
    pub(super) filesystem_label: String,
    pub(super) tags: Vec<String>,
    pub(super) created_at: String,
    /// When its last snapshot was taken: the interval counts from there, deleted or not.
    /// When its last snapshot was taken, in ms on the sim's clock.
    pub(super) last_snapshot: Option<i64>,
}

impl VolumeRecord {
    fn json(&self) -> Value {
        json!({
            "id": self.id, "name": self.name, "description": self.description, "size_gigabytes": self.size,
            "created_at": self.created_at, "droplet_ids": self.droplet_ids, "region": region_json(&self.region),
            "filesystem_type": self.filesystem_type, "filesystem_label": self.filesystem_label, "tags": self.tags,
        })
    }
}

#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub(super) struct SnapshotRecord {
    pub(super) id: String,
    pub(super) name: String,
    pub(super) region: String,
    /// The source volume's id (`resource_id`).
    pub(super) volume: String,
    pub(super) min_disk_size: u64,
    pub(super) size_gigabytes: f64,
    pub(super) filesystem_type: String,
    pub(super) filesystem_label: String,
    pub(super) tags: Vec<String>,
    pub(super) created_at: String,
}

impl SnapshotRecord {
    fn json(&self) -> Value {
        json!({
            "id": self.id, "name": self.name, "created_at": self.created_at, "regions": [self.region],
            "resource_id": self.volume, "resource_type": "volume", "min_disk_size": self.min_disk_size,
            "size_gigabytes": self.size_gigabytes, "tags": self.tags,
        })
    }
}

impl Model {
    pub(super) fn volume(&self, id: &str) -> Option<&VolumeRecord> {
        self.volumes.iter().find(|v| v.id == id)
    }

    fn volume_mut(&mut self, id: &str) -> Option<&mut VolumeRecord> {
        self.volumes.iter_mut().find(|v| v.id == id)
    }

    pub(super) fn snapshot(&self, id: &str) -> Option<&SnapshotRecord> {
        self.snapshots.iter().find(|s| s.id == id)
    }

    /// An attach completes: unless the volume or the droplet went meanwhile.
    pub(super) fn attach(&mut self, volume: &str, droplet: u64) {
        if self.droplet(droplet).is_none() || self.volume(volume).is_none_or(|v| !v.droplet_ids.is_empty()) {
            return;
        }
        if let Some(v) = self.volume_mut(volume) {
            v.droplet_ids.push(droplet);
        }
        if let Some(d) = self.droplet_mut(droplet) {
            d.volume_ids.push(volume.to_owned());
        }
    }

    pub(super) fn detach(&mut self, volume: &str, droplet: u64) {
        if let Some(v) = self.volume_mut(volume) {
            v.droplet_ids.retain(|d| *d != droplet);
        }
        if let Some(d) = self.droplet_mut(droplet) {
            d.volume_ids.retain(|v| v != volume);
        }
    }

    pub(super) fn resize(&mut self, volume: &str, size: u64) {
        if let Some(v) = self.volume_mut(volume) {
            v.size = size;
        }
    }

    /// The size the volume will have once its resizes in flight complete.
    fn size_to_be(&self, volume: &VolumeRecord) -> u64 {
        self.pending()
            .filter_map(|c| match c {
                Change::Resize { volume: v, size } if *v == volume.id => Some(*size),
                _ => None,
            })
            .fold(volume.size, u64::max)
    }

    fn attaching(&self, volume: &str) -> bool {
        self.pending().any(|c| matches!(c, Change::Attach { volume: v, .. } if v == volume))
    }

    fn volume_create(&mut self, body: VolumeCreate) -> Result<Value, Refusal> {
        body.check()?;
        let region = body.region.unwrap_or_default();
        let name = body.name.unwrap_or_default();
        let (size, filesystem_type, filesystem_label) = match given(body.snapshot_id) {
            Some(id) => {
                let source = self.snapshot(&id).ok_or_else(not_found)?;
                if source.region != region {
                    return Err(unprocessable("the snapshot is not in the volume's region"));
                }
                let label = given(body.filesystem_label).unwrap_or_else(|| source.filesystem_label.clone());
                // A restore is made at the size asked, never below what the snapshot holds.
                let size = match body.size_gigabytes {
                    None => source.min_disk_size,
                    Some(size) if size < source.min_disk_size => {
                        return Err(unprocessable(&format!(
                            "size_gigabytes must be at least the snapshot's min_disk_size ({})",
                            source.min_disk_size
                        )));
                    }
                    Some(size) if size > MAX_GIB => {
                        return Err(unprocessable("size_gigabytes must be from 1 to 16384"));
                    }
                    Some(size) => size,
                };
                (size, source.filesystem_type.clone(), label)
            }
            None => match body.size_gigabytes {
                Some(size) if (1..=MAX_GIB).contains(&size) => (
                    size,
                    given(body.filesystem_type).unwrap_or_default(),
                    given(body.filesystem_label).unwrap_or_default(),
                ),
                _ => return Err(unprocessable("size_gigabytes must be from 1 to 16384")),
            },
        };
        if self.volumes.iter().any(|v| v.name == name && v.region == region) {
            return Err(conflict("failed to create volume"));
        }
        let record = VolumeRecord {
            id: uuid(),
            name,
            description: body.description.unwrap_or_default(),
            size,
            region,
            droplet_ids: Vec::new(),
            filesystem_type,
            filesystem_label,
            tags: self.tag_all(body.tags)?,
            created_at: now_text(),
            last_snapshot: None,
        };
        let json = record.json();
        self.volumes.push(record);
        Ok(json)
    }

    fn volume_delete(&mut self, id: &str) -> Result<(), Refusal> {
        let volume = self.volume(id).ok_or_else(not_found)?;
        if !volume.droplet_ids.is_empty() {
            return Err(conflict("attached volume cannot be deleted"));
        }
        self.volumes.retain(|v| v.id != id);
        Ok(())
    }

    /// Starts an attach, detach or resize after the checks the API makes at once.
    fn volume_action(&mut self, id: &str, body: VolumeAction) -> Result<Value, Refusal> {
        let volume = self.volume(id).ok_or_else(not_found)?.clone();
        if given(body.region).is_some_and(|r| r != volume.region) {
            return Err(unprocessable("region does not match the volume's region"));
        }
        let (kind, droplet, change) = match body.kind.as_deref().unwrap_or_default() {
            "attach" => {
                let droplet = self.check_attach(&volume, body.droplet_id)?;
                ("attach_volume", Some(droplet), Change::Attach { volume: volume.id.clone(), droplet })
            }
            "detach" => {
                let droplet = self.check_detach(&volume, body.droplet_id)?;
                ("detach_volume", Some(droplet), Change::Detach { volume: volume.id.clone(), droplet })
            }
            "resize" => {
                let size = self.check_resize(&volume, body.size_gigabytes)?;
                ("resize_volume", None, Change::Resize { volume: volume.id.clone(), size })
            }
            _ => return Err(unprocessable("type must be attach, detach or resize")),
        };
        let action = self.begin(kind, "volume", &volume.region, change);
        action.droplet = droplet;
        action.volume = Some(volume.id);
        Ok(action.json())
    }

    fn check_attach(&self, volume: &VolumeRecord, droplet_id: Option<u64>) -> Result<u64, Refusal> {
        let id = droplet_id.ok_or_else(|| unprocessable("droplet_id is required"))?;
        let droplet = self.droplet(id).ok_or_else(not_found)?;
        if droplet.region != volume.region {
            return Err(unprocessable("the volume and the Droplet must be in the same region"));
        }
        if !volume.droplet_ids.is_empty() || self.attaching(&volume.id) {
            return Err(unprocessable("This volume is already attached"));
        }
        if droplet.volume_ids.len() >= VOLUMES_PER_DROPLET {
            return Err(unprocessable("cannot attach more volumes to the Droplet"));
        }
        if self.droplet_busy(id) {
            return Err(unprocessable("Droplet already has a pending event."));
        }
        Ok(id)
    }

    fn check_detach(&self, volume: &VolumeRecord, droplet_id: Option<u64>) -> Result<u64, Refusal> {
        let id = droplet_id.filter(|id| volume.droplet_ids.contains(id));
        let id = id.ok_or_else(|| unprocessable("Attachment not found"))?;
        if self.droplet_busy(id) {
            return Err(unprocessable("Droplet already has a pending event."));
        }
        Ok(id)
    }

    fn check_resize(&self, volume: &VolumeRecord, size: Option<u64>) -> Result<u64, Refusal> {
        let size = size.ok_or_else(|| unprocessable("size_gigabytes is required"))?;
        if size <= self.size_to_be(volume) {
            return Err(unprocessable("a volume can only be resized to a larger size"));
        }
        if size > MAX_GIB {
            return Err(unprocessable("size_gigabytes must be at most 16384"));
        }
        Ok(size)
    }

    fn snapshot_create(&mut self, volume_id: &str, body: SnapshotCreate) -> Result<Value, Refusal> {
        let volume = self.volume(volume_id).ok_or_else(not_found)?;
        let name = given(body.name).ok_or_else(|| unprocessable("name is required"))?;
        let taken: Vec<&SnapshotRecord> = self.snapshots.iter().filter(|s| s.volume == volume.id).collect();
        if taken.iter().any(|s| s.name == name) {
            return Err(conflict("a snapshot with this name already exists for the volume"));
        }
        if taken.len() >= SNAPSHOTS_PER_VOLUME {
            return Err(unprocessable("a volume can have at most 25 snapshots"));
        }
        let interval = self.snapshot_interval;
        let now = self.clock.now_ms();
        if volume.last_snapshot.is_some_and(|at| now - at < interval.as_millis() as i64) {
            return Err(unprocessable(&format!("a volume can be snapshotted at most once every {}", span(interval))));
        }
        let record = SnapshotRecord {
            id: uuid(),
            name,
            region: volume.region.clone(),
            volume: volume.id.clone(),
            min_disk_size: volume.size,
            // Billable size: what a young volume holds, a twentieth of its size.
            size_gigabytes: volume.size as f64 / 20.0,
            filesystem_type: volume.filesystem_type.clone(),
            filesystem_label: volume.filesystem_label.clone(),
            tags: Vec::new(),
            created_at: now_text(),
        };
        let record = SnapshotRecord { tags: self.tag_all(body.tags)?, ..record };
        if let Some(volume) = self.volume_mut(volume_id) {
            volume.last_snapshot = Some(now);
        }
        let json = record.json();
        self.snapshots.push(record);
        Ok(json)
    }

    /// Whether `id` names something of the account that is not a snapshot.
    fn other_resource(&self, id: &str) -> bool {
        self.volume(id).is_some()
            || self.vpc(id).is_some()
            || self.droplets.iter().any(|d| d.id.to_string() == id)
            || self.shares.iter().any(|s| s.id == id)
            || self.share_snapshots.iter().any(|s| s.id == id)
    }

    /// A volume snapshot through `/v2/snapshots/{id}`: 400 for another kind of resource.
    fn any_snapshot(&self, id: &str) -> Result<&SnapshotRecord, Refusal> {
        match self.snapshot(id) {
            Some(snapshot) => Ok(snapshot),
            None if self.other_resource(id) => Err(bad_request("the resource is not a snapshot")),
            None => Err(not_found()),
        }
    }

    fn snapshot_delete(&mut self, id: &str) {
        self.snapshots.retain(|s| s.id != id);
    }
}

/// `10 minutes`, `90 seconds`.
fn span(interval: Duration) -> String {
    let seconds = interval.as_secs();
    if seconds.is_multiple_of(60) { format!("{} minutes", seconds / 60) } else { format!("{seconds} seconds") }
}

pub(super) fn routes(router: Router<Sim>) -> Router<Sim> {
    router
        .route("/v2/volumes", get(list).post(create).delete(delete_by_name))
        .route("/v2/volumes/actions", post(action_by_name))
        .route("/v2/volumes/snapshots/{id}", get(snapshot_one).delete(snapshot_remove))
        .route("/v2/volumes/{id}", get(one).delete(remove))
        .route("/v2/volumes/{id}/actions", get(action_list).post(action_create))
        .route("/v2/volumes/{id}/actions/{action_id}", get(action_one))
        .route("/v2/volumes/{id}/snapshots", get(snapshot_list).post(snapshot_create))
        .route("/v2/snapshots", get(snapshots_all))
        .route("/v2/snapshots/{id}", get(any_snapshot_one).delete(any_snapshot_remove))
}

#[derive(Deserialize)]
struct VolumeCreate {
    name: Option<String>,
    size_gigabytes: Option<u64>,
    region: Option<String>,
    description: Option<String>,
    filesystem_type: Option<String>,
    filesystem_label: Option<String>,
    snapshot_id: Option<String>,
    tags: Option<Vec<String>>,
}

impl VolumeCreate {
    /// The checks that need no state: name, region, filesystem.
    fn check(&self) -> Result<(), Refusal> {
        let name = self.name.as_deref().unwrap_or_default();
        let mut chars = name.chars();
        let well_formed = chars.next().is_some_and(|c| c.is_ascii_lowercase())
            && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
        if !well_formed || name.len() > 64 {
            return Err(unprocessable(
                "name must be lowercase letters, numbers and dashes, start with a letter, and be at most 64 characters",
            ));
        }
        if !REGIONS.contains(&self.region.as_deref().unwrap_or_default()) {
            return Err(unprocessable("region is not a valid region"));
        }
        let label = given(self.filesystem_label.clone()).map_or(0, |l| l.len());
        match given(self.filesystem_type.clone()).as_deref() {
            None if label > 0 && given(self.snapshot_id.clone()).is_none() => {
                Err(unprocessable("filesystem_label requires filesystem_type"))
            }
            None => Ok(()),
            Some("ext4") if label <= 16 => Ok(()),
            Some("xfs") if label <= 12 => Ok(()),
            Some("ext4" | "xfs") => {
                Err(unprocessable("filesystem_label is too long: 16 characters for ext4, 12 for xfs"))
            }
            Some(_) => Err(unprocessable("filesystem_type must be ext4 or xfs")),
        }
    }
}

async fn create(State(sim): State<Sim>, body: Bytes) -> Result<Response, Refusal> {
    let body: VolumeCreate = parse(&body)?;
    let name = body.name.clone().unwrap_or_default();
    sim.count_name("volumes.create", &name);
    let volume = sim.with_digitalocean(|model| model.volume_create(body))?;
    sim.count_name("volumes.made", &name);
    Ok((StatusCode::CREATED, Json(json!({ "volume": volume }))).into_response())
}

#[derive(Deserialize)]
struct VolumeFilter {
    name: Option<String>,
    region: Option<String>,
}

async fn list(State(sim): State<Sim>, page: Page, Query(filter): Query<VolumeFilter>) -> Response {
    let (name, region) = (given(filter.name), given(filter.region));
    sim.with_digitalocean(|model| {
        let matching: Vec<&VolumeRecord> = model
            .volumes
            .iter()
            .filter(|v| name.as_ref().is_none_or(|n| &v.name == n))
            .filter(|v| region.as_ref().is_none_or(|r| &v.region == r))
            .collect();
        paged("volumes", "/v2/volumes", matching.into_iter(), &page, VolumeRecord::json)
    })
}

async fn one(State(sim): State<Sim>, Path(id): Path<String>) -> Result<Response, Refusal> {
    let volume = sim.with_digitalocean(|model| model.volume(&id).map(VolumeRecord::json)).ok_or_else(not_found)?;
    Ok(Json(json!({ "volume": volume })).into_response())
}

async fn remove(State(sim): State<Sim>, Path(id): Path<String>) -> Result<Response, Refusal> {
    sim.with_digitalocean(|model| model.volume_delete(&id))?;
    Ok(no_content())
}

async fn delete_by_name(State(sim): State<Sim>, Query(filter): Query<VolumeFilter>) -> Result<Response, Refusal> {
    let (Some(name), Some(region)) = (given(filter.name), given(filter.region)) else {
        return Err(bad_request("name and region are required"));
    };
    sim.with_digitalocean(|model| {
        let id = model.volumes.iter().find(|v| v.name == name && v.region == region).map(|v| v.id.clone());
        model.volume_delete(&id.ok_or_else(not_found)?)
    })?;
    Ok(no_content())
}

#[derive(Deserialize)]
struct VolumeAction {
    #[serde(rename = "type")]
    kind: Option<String>,
    droplet_id: Option<u64>,
    size_gigabytes: Option<u64>,
    region: Option<String>,
    /// Only for the by-name form, `POST /v2/volumes/actions`.
    volume_name: Option<String>,
}

async fn action_create(State(sim): State<Sim>, Path(id): Path<String>, body: Bytes) -> Result<Response, Refusal> {
    let body: VolumeAction = parse(&body)?;
    let action = sim.with_digitalocean(|model| model.volume_action(&id, body))?;
    Ok((StatusCode::ACCEPTED, Json(json!({ "action": action }))).into_response())
}

async fn action_by_name(State(sim): State<Sim>, body: Bytes) -> Result<Response, Refusal> {
    let body: VolumeAction = parse(&body)?;
    let (name, region) = (given(body.volume_name.clone()), given(body.region.clone()));
    let action = sim.with_digitalocean(|model| {
        let volume =
            model.volumes.iter().find(|v| Some(&v.name) == name.as_ref() && Some(&v.region) == region.as_ref());
        let id = volume.map(|v| v.id.clone()).ok_or_else(not_found)?;
        model.volume_action(&id, body)
    })?;
    Ok((StatusCode::ACCEPTED, Json(json!({ "action": action }))).into_response())
}

async fn action_list(State(sim): State<Sim>, Path(id): Path<String>, page: Page) -> Result<Response, Refusal> {
    let items = sim.with_digitalocean(|model| {
        model.volume(&id).ok_or_else(not_found)?;
        let of_volume = model.actions.iter().filter(|a| a.volume.as_deref() == Some(id.as_str()));
        Ok::<_, Refusal>(of_volume.map(|a| a.json()).collect())
    })?;
    Ok(paginate("actions", &format!("/v2/volumes/{id}/actions"), items, &page))
}

async fn action_one(
    State(sim): State<Sim>,
    Path((id, action_id)): Path<(String, String)>,
) -> Result<Response, Refusal> {
    let action = sim.with_digitalocean(|model| {
        model.action(&action_id).filter(|a| a.volume.as_deref() == Some(id.as_str())).map(|a| a.json())
    });
    Ok(Json(json!({ "action": action.ok_or_else(not_found)? })).into_response())
}

#[derive(Deserialize)]
struct SnapshotCreate {
    name: Option<String>,
    tags: Option<Vec<String>>,
}

async fn snapshot_create(State(sim): State<Sim>, Path(id): Path<String>, body: Bytes) -> Result<Response, Refusal> {
    let body: SnapshotCreate = parse(&body)?;
    let name = body.name.clone().unwrap_or_default();
    sim.count_name("volumes.snapshots.create", &name);
    let snapshot = sim.with_digitalocean(|model| model.snapshot_create(&id, body))?;
    sim.count_name("snapshots.made", &name);
    Ok((StatusCode::CREATED, Json(json!({ "snapshot": snapshot }))).into_response())
}

async fn snapshot_list(State(sim): State<Sim>, Path(id): Path<String>, page: Page) -> Result<Response, Refusal> {
    let items = sim.with_digitalocean(|model| {
        model.volume(&id).ok_or_else(not_found)?;
        Ok::<_, Refusal>(model.snapshots.iter().filter(|s| s.volume == id).map(SnapshotRecord::json).collect())
    })?;
    Ok(paginate("snapshots", &format!("/v2/volumes/{id}/snapshots"), items, &page))
}

async fn snapshot_one(State(sim): State<Sim>, Path(id): Path<String>) -> Result<Response, Refusal> {
    let snapshot = sim.with_digitalocean(|model| model.snapshot(&id).map(SnapshotRecord::json));
    Ok(Json(json!({ "snapshot": snapshot.ok_or_else(not_found)? })).into_response())
}

async fn snapshot_remove(State(sim): State<Sim>, Path(id): Path<String>) -> Result<Response, Refusal> {
    sim.with_digitalocean(|model| {
        model.snapshot(&id).ok_or_else(not_found)?;
        model.snapshot_delete(&id);
        Ok::<_, Refusal>(())
    })?;
    Ok(no_content())
}

#[derive(Deserialize)]
struct SnapshotFilter {
    resource_type: Option<String>,
}

/// `GET /v2/snapshots`: the volume snapshots (the sim has no droplet snapshots).
async fn snapshots_all(State(sim): State<Sim>, page: Page, Query(filter): Query<SnapshotFilter>) -> Response {
    match given(filter.resource_type).as_deref() {
        None | Some("volume") => sim.with_digitalocean(|model| {
            paged("snapshots", "/v2/snapshots", model.snapshots.iter(), &page, SnapshotRecord::json)
        }),
        Some(_) => paginate("snapshots", "/v2/snapshots", Vec::new(), &page),
    }
}

async fn any_snapshot_one(State(sim): State<Sim>, Path(id): Path<String>) -> Result<Response, Refusal> {
    let snapshot = sim.with_digitalocean(|model| model.any_snapshot(&id).map(SnapshotRecord::json))?;
    Ok(Json(json!({ "snapshot": snapshot })).into_response())
}

async fn any_snapshot_remove(State(sim): State<Sim>, Path(id): Path<String>) -> Result<Response, Refusal> {
    sim.with_digitalocean(|model| {
        model.any_snapshot(&id)?;
        model.snapshot_delete(&id);
        Ok::<_, Refusal>(())
    })?;
    Ok(no_content())
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use serde_json::{Value, json};

    use super::super::testing::Api;
    use crate::sim::SimConfig;

    #[tokio::test]
    async fn volumes_are_made_with_the_apis_shape_unique_per_region_and_deleted() {
        let api = Api::start().await;
        let body = json!({ "name": "pg-data", "size_gigabytes": 100, "region": "nyc3", "description": "",
            "filesystem_type": "ext4", "filesystem_label": "pgdata", "snapshot_id": "", "tags": ["env:prod"] });
        let (status, made) = api.post("/v2/volumes", body).await;
        assert_eq!(status, 201, "{made}");
        let volume = &made["volume"];
        assert!(volume.get("status").is_none());
        assert_eq!(volume["region"]["slug"], "nyc3");
        assert_eq!((volume["size_gigabytes"].as_u64(), volume["filesystem_type"].as_str()), (Some(100), Some("ext4")));
        assert_eq!((volume["droplet_ids"].clone(), volume["tags"].clone()), (json!([]), json!(["env:prod"])));
        let refused = [
            json!({ "name": "Upper", "size_gigabytes": 1, "region": "nyc3" }),
            json!({ "name": "1st", "size_gigabytes": 1, "region": "nyc3" }),
            json!({ "name": "under_score", "size_gigabytes": 1, "region": "nyc3" }),
            json!({ "name": "a".repeat(65), "size_gigabytes": 1, "region": "nyc3" }),
            json!({ "name": "zero", "size_gigabytes": 0, "region": "nyc3" }),
            json!({ "name": "huge", "size_gigabytes": 16385, "region": "nyc3" }),
            json!({ "name": "nowhere", "size_gigabytes": 1, "region": "mars1" }),
            json!({ "name": "fs", "size_gigabytes": 1, "region": "nyc3", "filesystem_type": "zfs" }),
        ];
        for body in refused {
            assert_eq!(api.post("/v2/volumes", body.clone()).await.0, 422, "{body}");
        }
        let again = json!({ "name": "pg-data", "size_gigabytes": 5, "region": "nyc3", "tags": null });
        assert_eq!(api.post("/v2/volumes", again).await.0, 409, "one name per region");
        let elsewhere = json!({ "name": "pg-data", "size_gigabytes": 5, "region": "sfo3", "tags": null });
        assert_eq!(api.post("/v2/volumes", elsewhere).await.0, 201);
        assert_eq!(api.sim.name_calls("volumes.create", "pg-data"), 3);
        assert_eq!(api.sim.name_calls("volumes.made", "pg-data"), 2);
        assert_eq!(api.get("/v2/volumes?name=pg-data").await.1["meta"]["total"], 2, "a name spans regions");
        assert_eq!(api.get("/v2/volumes?name=pg-data&region=sfo3").await.1["volumes"][0]["region"]["slug"], "sfo3");
        assert_eq!(api.get("/v2/volumes?region=nyc3").await.1["meta"]["total"], 1);
        assert_eq!(api.get("/v2/tags/env:prod").await.1["tag"]["resources"]["volumes"]["count"], 1);

        assert_eq!(api.delete("/v2/volumes?name=pg-data&region=sfo3").await.0, 204);
        assert_eq!(api.delete("/v2/volumes?name=pg-data&region=sfo3").await.0, 404);
        let id = volume["id"].as_str().unwrap();
        assert_eq!(api.delete(&format!("/v2/volumes/{id}")).await.0, 204);
        assert_eq!(api.get(&format!("/v2/volumes/{id}")).await.0, 404);
        assert_eq!(api.delete(&format!("/v2/volumes/{id}")).await.0, 404);
        assert_eq!(api.sim.calls("volumes.delete"), 4);
    }

    async fn act(api: &Api, volume: &str, body: Value) -> (u16, Value) {
        api.post(&format!("/v2/volumes/{volume}/actions"), body).await
    }

    #[tokio::test]
    async fn volume_actions_change_state_only_when_they_complete() {
        let api = Api::start().await;
        let droplet = api.droplet("host", "nyc3").await;
        let (volume, other) = (api.volume("data", "nyc3", 10).await, api.volume("more", "nyc3", 10).await);
        let (status, started) = act(&api, &volume, json!({ "type": "attach", "droplet_id": droplet })).await;
        assert_eq!(status, 202);
        let action = &started["action"];
        assert_eq!((action["status"].as_str(), action["type"].as_str()), (Some("in-progress"), Some("attach_volume")));
        assert!(action["resource_id"].is_null());
        assert_eq!(action["resource_type"], "volume");
        assert_eq!(api.get(&format!("/v2/volumes/{volume}")).await.1["volume"]["droplet_ids"], json!([]));
        assert_eq!(api.get(&format!("/v2/droplets/{droplet}")).await.1["droplet"]["volume_ids"], json!([]));
        let (status, busy) = act(&api, &other, json!({ "type": "attach", "droplet_id": droplet })).await;
        assert_eq!((status, busy["message"].as_str()), (422, Some("Droplet already has a pending event.")));
        let (_, twice) = act(&api, &volume, json!({ "type": "attach", "droplet_id": droplet })).await;
        assert_eq!(twice["message"], "This volume is already attached", "an attach is in flight");
        let id = action["id"].as_u64().unwrap();
        assert_eq!(api.get(&format!("/v2/volumes/{volume}/actions/{id}")).await.1["action"]["status"], "in-progress");

        api.later().await;
        assert_eq!(api.get(&format!("/v2/volumes/{volume}")).await.1["volume"]["droplet_ids"], json!([droplet]));
        assert_eq!(api.get(&format!("/v2/droplets/{droplet}")).await.1["droplet"]["volume_ids"], json!([volume]));
        let (_, done) = api.get(&format!("/v2/actions/{id}")).await;
        assert!(done["action"]["status"] == "completed" && done["action"]["completed_at"].is_string());
        assert_eq!(api.get(&format!("/v2/volumes/{other}/actions/{id}")).await.0, 404, "not that volume's");
        assert_eq!(api.sim.calls("volumes.actions.get"), 2);
        let (status, attached) = api.delete(&format!("/v2/volumes/{volume}")).await;
        assert_eq!((status, attached["message"].as_str()), (409, Some("attached volume cannot be deleted")));

        let refusals = [
            (&volume, json!({ "type": "attach", "droplet_id": droplet }), 422, "This volume is already attached"),
            (&volume, json!({ "type": "detach" }), 422, "Attachment not found"),
            (&other, json!({ "type": "detach", "droplet_id": droplet }), 422, "Attachment not found"),
            (&other, json!({ "type": "attach", "droplet_id": 1 }), 404, ""),
            (&volume, json!({ "type": "resize", "size_gigabytes": 10 }), 422, ""),
            (&volume, json!({ "type": "resize", "size_gigabytes": 16385 }), 422, ""),
            (&volume, json!({ "type": "shrink" }), 422, ""),
        ];
        for (target, body, status, message) in refusals {
            let (got, answer) = act(&api, target, body.clone()).await;
            assert_eq!(got, status, "{body}: {answer}");
            assert!(answer["message"].as_str().unwrap().contains(message), "{body}: {answer}");
        }
        assert_eq!(act(&api, "nope", json!({ "type": "detach", "droplet_id": droplet })).await.0, 404);
        let far = api.droplet("far", "sfo3").await;
        assert_eq!(act(&api, &other, json!({ "type": "attach", "droplet_id": far })).await.0, 422, "another region");

        let resize = json!({ "type": "resize", "size_gigabytes": 20, "region": "nyc3" });
        assert_eq!(act(&api, &volume, resize).await.0, 202);
        assert_eq!(act(&api, &volume, json!({ "type": "detach", "droplet_id": droplet })).await.0, 202);
        assert_eq!(api.get(&format!("/v2/volumes/{volume}")).await.1["volume"]["size_gigabytes"], 10);
        assert_eq!(api.get(&format!("/v2/volumes/{volume}")).await.1["volume"]["droplet_ids"], json!([droplet]));
        api.later().await;
        let (_, after) = api.get(&format!("/v2/volumes/{volume}")).await;
        assert_eq!(
            (after["volume"]["size_gigabytes"].clone(), after["volume"]["droplet_ids"].clone()),
            (json!(20), json!([]))
        );
        assert_eq!(api.get(&format!("/v2/droplets/{droplet}")).await.1["droplet"]["volume_ids"], json!([]));
        assert_eq!(api.get(&format!("/v2/volumes/{volume}/actions")).await.1["meta"]["total"], 3);
        assert_eq!(api.delete(&format!("/v2/volumes/{volume}")).await.0, 204);
    }

    #[tokio::test]
    async fn a_droplet_being_created_has_a_pending_event() {
        let api = Api::start().await;
        let body = json!({ "name": "young", "region": "nyc3", "size": "s-1vcpu-1gb", "image": "ubuntu-24-04-x64" });
        let droplet = api.post("/v2/droplets", body).await.1["droplet"]["id"].as_u64().unwrap();
        let volume = api.volume("early", "nyc3", 1).await;
        let (status, busy) = act(&api, &volume, json!({ "type": "attach", "droplet_id": droplet })).await;
        assert_eq!((status, busy["message"].as_str()), (422, Some("Droplet already has a pending event.")));
        api.later().await;
        assert_eq!(act(&api, &volume, json!({ "type": "attach", "droplet_id": droplet })).await.0, 202);
    }

    #[tokio::test]
    async fn a_droplet_takes_fifteen_volumes() {
        let api = Api::start().await;
        let droplet = api.droplet("full", "nyc3").await;
        for i in 0..15 {
            let volume = api.volume(&format!("v{i}"), "nyc3", 1).await;
            assert_eq!(act(&api, &volume, json!({ "type": "attach", "droplet_id": droplet })).await.0, 202);
            api.later().await;
        }
        let extra = api.volume("extra", "nyc3", 1).await;
        let (status, full) = act(&api, &extra, json!({ "type": "attach", "droplet_id": droplet })).await;
        assert_eq!((status, full["message"].as_str()), (422, Some("cannot attach more volumes to the Droplet")));
    }

    #[tokio::test]
    async fn a_deleted_droplets_volumes_stay_attached_until_it_is_gone() {
        let api = Api::start().await;
        let droplet = api.droplet("brief", "nyc3").await;
        let volume = api.volume("kept", "nyc3", 1).await;
        act(&api, &volume, json!({ "type": "attach", "droplet_id": droplet })).await;
        api.later().await;
        assert_eq!(api.delete(&format!("/v2/droplets/{droplet}")).await.0, 204);
        assert_eq!(api.delete(&format!("/v2/volumes/{volume}")).await.0, 409, "still attached");
        api.later().await;
        assert_eq!(api.get(&format!("/v2/volumes/{volume}")).await.1["volume"]["droplet_ids"], json!([]));
        assert_eq!(api.delete(&format!("/v2/volumes/{volume}")).await.0, 204);
    }

    #[tokio::test]
    async fn snapshots_are_made_at_once_found_by_both_paths_and_outlive_their_volume() {
        let api = Api::start().await;
        let body = json!({ "name": "src", "size_gigabytes": 40, "region": "nyc3", "filesystem_type": "xfs" });
        let volume = api.post("/v2/volumes", body).await.1["volume"]["id"].as_str().unwrap().to_owned();
        let path = format!("/v2/volumes/{volume}/snapshots");
        let (status, made) = api.post(&path, json!({ "name": "first", "tags": ["daily"] })).await;
        assert_eq!(status, 201, "{made}");
        let snapshot = &made["snapshot"];
        let id = snapshot["id"].as_str().unwrap().to_owned();
        assert_eq!(id.len(), 36, "a UUID");
        assert_eq!(
            (snapshot["resource_id"].as_str(), snapshot["resource_type"].as_str()),
            (Some(volume.as_str()), Some("volume"))
        );
        assert_eq!((snapshot["regions"].clone(), snapshot["min_disk_size"].clone()), (json!(["nyc3"]), json!(40)));
        assert!(snapshot["size_gigabytes"].is_f64());
        assert_eq!(snapshot["tags"], json!(["daily"]));
        assert_eq!(api.post(&path, json!({ "name": "first" })).await.0, 409, "same name on the volume");
        assert_eq!(api.sim.name_calls("snapshots.made", "first"), 1);

        // Static segments win: /v2/volumes/snapshots/{id} is not /v2/volumes/{id}.
        assert_eq!(api.get(&format!("/v2/volumes/snapshots/{id}")).await.1["snapshot"]["name"], "first");
        assert_eq!(api.sim.calls("volumes.snapshots.get"), 1);
        assert_eq!(api.sim.calls("volumes.get"), 0);
        assert_eq!(api.get(&format!("/v2/snapshots/{id}")).await.1["snapshot"]["id"], id.as_str());
        let (status, not_one) = api.get(&format!("/v2/snapshots/{volume}")).await;
        assert_eq!((status, not_one["message"].as_str()), (400, Some("the resource is not a snapshot")));
        assert_eq!(api.get("/v2/snapshots/8fa70202-873f-11e6-8b68-000f533176b1").await.0, 404);
        assert_eq!(api.get(&path).await.1["meta"]["total"], 1);

        let below = json!({ "name": "copy", "size_gigabytes": 39, "region": "nyc3", "snapshot_id": id });
        assert_eq!(api.post("/v2/volumes", below).await.0, 422, "a restore below the snapshot's min_disk_size");
        let from = json!({ "name": "copy", "region": "nyc3", "snapshot_id": id });
        let (status, copy) = api.post("/v2/volumes", from).await;
        assert_eq!(status, 201);
        assert_eq!(
            (copy["volume"]["size_gigabytes"].clone(), copy["volume"]["filesystem_type"].clone()),
            (json!(40), json!("xfs")),
            "the snapshot's size when none is asked"
        );
        let larger = json!({ "name": "bigger", "size_gigabytes": 60, "region": "nyc3", "snapshot_id": id });
        assert_eq!(api.post("/v2/volumes", larger).await.1["volume"]["size_gigabytes"], 60);
        let unknown = json!({ "name": "nocopy", "region": "nyc3", "snapshot_id": volume });
        assert_eq!(api.post("/v2/volumes", unknown).await.0, 404, "not a volume snapshot");

        assert_eq!(api.delete(&format!("/v2/volumes/{volume}")).await.0, 204);
        assert_eq!(api.get(&format!("/v2/snapshots/{id}")).await.0, 200, "outlives the volume");
        assert_eq!(api.delete(&format!("/v2/snapshots/{id}")).await.0, 204);
        assert_eq!(api.delete(&format!("/v2/volumes/snapshots/{id}")).await.0, 404);
        assert_eq!(api.sim.calls("snapshots.delete"), 1);
    }

    #[tokio::test]
    async fn a_volume_keeps_at_most_25_snapshots_and_one_per_interval() {
        let api = Api::start().await;
        let volume = api.volume("many", "nyc3", 1).await;
        let path = format!("/v2/volumes/{volume}/snapshots");
        for i in 0..25 {
            assert_eq!(api.post(&path, json!({ "name": format!("s{i}") })).await.0, 201);
        }
        let (status, full) = api.post(&path, json!({ "name": "s25" })).await;
        assert_eq!((status, full["message"].as_str()), (422, Some("a volume can have at most 25 snapshots")));

        let config = SimConfig { snapshot_interval: Duration::from_secs(600), ..Default::default() };
        let api = Api::start_with(config).await;
        let volume = api.volume("slow", "nyc3", 1).await;
        let path = format!("/v2/volumes/{volume}/snapshots");
        assert_eq!(api.post(&path, json!({ "name": "one" })).await.0, 201);
        let (status, soon) = api.post(&path, json!({ "name": "two" })).await;
        assert_eq!(status, 422);
        assert!(soon["message"].as_str().unwrap().contains("once every 10 minutes"), "{soon}");
    }
}
