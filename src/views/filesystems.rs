//! The filesystem a client reads, and its `network.filesystem.*` events.
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::boot::{Mount, mount};
use crate::store::entity::filesystem;
use crate::store::outbox::{NewEvent, Payload};
use crate::store::state::{Deployment, Desired, FilesystemKind, State};

pub const KIND: &str = "filesystem";

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FilesystemView {
    pub id: String,
    pub tenant_id: String,
    pub project_id: Option<String>,
    pub network_id: String,
    pub name: String,
    pub kind: FilesystemKind,
    pub size_gib: Option<i64>,
    pub deployment: Option<Deployment>,
    pub zone: Option<String>,
    pub region: String,
    pub state: State,
    pub desired_state: Desired,
    pub message: Option<String>,
    pub mount: Option<Mount>,
    /// A delete is refused while it is set.
    pub deletion_protection: bool,
    pub version: i64,
    pub created_at: DateTime<Utc>,
    pub ready_at: Option<DateTime<Utc>>,
    pub deleted_at: Option<DateTime<Utc>>,
}

pub fn view(f: &filesystem::Model) -> FilesystemView {
    FilesystemView {
        id: f.id.clone(),
        tenant_id: f.tenant_id.clone(),
        project_id: f.project_id.clone(),
        network_id: f.network_id.clone(),
        name: f.name.clone(),
        kind: f.kind,
        size_gib: f.size_gib,
        deployment: f.deployment,
        zone: f.zone.clone(),
        region: f.region.clone(),
        state: f.state,
        desired_state: f.desired_state,
        message: f.message.clone(),
        mount: mount(f),
        deletion_protection: f.deletion_protection,
        version: f.version,
        created_at: f.created_at,
        ready_at: f.ready_at,
        deleted_at: f.deleted_at,
    }
}

/// The `network.filesystem.*` event of a change to `f`: published on its network, its data the
/// filesystem's view, which names it again as `filesystemId` beside its `networkId`.
pub fn event(event_type: &str, f: &filesystem::Model) -> NewEvent {
    let data = Payload::of(&view(f)).with("filesystemId", json!(f.id));
    NewEvent {
        event_type: format!("network.filesystem.{event_type}"),
        subject_kind: super::networks::KIND,
        subject: f.network_id.clone(),
        tenant_id: Some(f.tenant_id.clone()),
        project_id: f.project_id.clone(),
        version: f.version,
        data,
    }
}
