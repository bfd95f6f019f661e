//! What a volume looks like to its callers and in its `providerVolume.*` events: the views
//! built from its rows.
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::store::entity::{provider_volume as volume, volume_attachment as attachment};
use crate::store::outbox::{NewEvent, Payload};
use crate::store::state::{Desired, State, VolumeFilesystem, VolumeKind};

pub const KIND: &str = "provider-volume";

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AttachmentView {
    pub id: String,
    pub instance_id: String,
    pub state: State,
    pub desired_state: Desired,
    pub message: Option<String>,
    pub ready_at: Option<DateTime<Utc>>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct VolumeView {
    pub id: String,
    pub tenant_id: String,
    pub project_id: Option<String>,
    pub pool_id: String,
    pub name: String,
    pub description: Option<String>,
    pub region: String,
    pub kind: VolumeKind,
    pub network_id: Option<String>,
    pub filesystem: Option<VolumeFilesystem>,
    pub delete_with_instance: bool,
    pub source_snapshot_id: Option<String>,
    pub size_gib: i64,
    pub observed_size_gib: Option<i64>,
    pub state: State,
    pub desired_state: Desired,
    pub message: Option<String>,
    /// The path the guest sees a block volume at; a shared volume's NFS source.
    pub device: Option<String>,
    /// A shared volume's NFS source `<host>:<path>`, once the provider reports it.
    pub mount_source: Option<String>,
    pub version: i64,
    pub created_at: DateTime<Utc>,
    pub ready_at: Option<DateTime<Utc>>,
    pub deleted_at: Option<DateTime<Utc>>,
    /// The attachments that are not finished (detached ones are left out).
    pub attachments: Vec<AttachmentView>,
}

impl From<attachment::Model> for AttachmentView {
    fn from(a: attachment::Model) -> Self {
        AttachmentView {
            id: a.id,
            instance_id: a.instance_id,
            state: a.state,
            desired_state: a.desired_state,
            message: a.message,
            ready_at: a.ready_at,
        }
    }
}

pub fn attachment_view(a: &attachment::Model) -> AttachmentView {
    a.clone().into()
}

/// The view of `v` with the attachments among `attachments` that are its and not finished.
pub fn view(v: &volume::Model, attachments: &[attachment::Model]) -> VolumeView {
    let attachments =
        attachments.iter().filter(|a| a.volume_id == v.id && a.state != State::Deleted).map(attachment_view).collect();
    view_of(v.clone(), attachments)
}

/// The view of `v` with `attachments` (already its own, not finished).
pub fn view_of(v: volume::Model, attachments: Vec<AttachmentView>) -> VolumeView {
    VolumeView {
        id: v.id,
        tenant_id: v.tenant_id,
        project_id: v.project_id,
        pool_id: v.pool_id,
        name: v.name,
        description: v.description,
        region: v.region,
        kind: v.kind,
        network_id: v.network_id,
        filesystem: v.filesystem,
        delete_with_instance: v.delete_with_instance,
        source_snapshot_id: v.source_snapshot_id,
        size_gib: v.size_gib,
        observed_size_gib: v.observed_size_gib,
        state: v.state,
        desired_state: v.desired_state,
        message: v.message,
        device: v.device,
        mount_source: v.mount_source,
        version: v.version,
        created_at: v.created_at,
        ready_at: v.ready_at,
        deleted_at: v.deleted_at,
        attachments,
    }
}

/// The `providerVolume.*` event of a change to `v`.
pub fn event(event_type: &str, v: &volume::Model, attachments: &[attachment::Model]) -> NewEvent {
    NewEvent {
        event_type: format!("providerVolume.{event_type}"),
        subject_kind: KIND,
        subject: v.id.clone(),
        tenant_id: Some(v.tenant_id.clone()),
        project_id: v.project_id.clone(),
        version: v.version,
        data: Payload::of(&view(v, attachments)),
    }
}
