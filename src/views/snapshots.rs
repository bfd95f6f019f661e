//! The snapshot a client reads, and its `providerVolume.snapshot.*` events.
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::store::entity::provider_snapshot as snapshot;
use crate::store::outbox::{NewEvent, Payload};
use crate::store::state::{Desired, State, VolumeKind};

pub const KIND: &str = "provider-snapshot";

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SnapshotView {
    pub id: String,
    pub tenant_id: String,
    pub project_id: Option<String>,
    pub pool_id: String,
    pub volume_id: String,
    pub volume_kind: VolumeKind,
    pub region: String,
    pub name: String,
    pub state: State,
    pub desired_state: Desired,
    pub message: Option<String>,
    /// The GiB the provider bills, as it reports them.
    pub size_gib: Option<f64>,
    /// The smallest volume a restore makes: the volume's size when it was taken.
    pub min_disk_size: i64,
    pub version: i64,
    pub created_at: DateTime<Utc>,
    pub ready_at: Option<DateTime<Utc>>,
    pub deleted_at: Option<DateTime<Utc>>,
}

pub fn view(s: &snapshot::Model) -> SnapshotView {
    s.clone().into()
}

impl From<snapshot::Model> for SnapshotView {
    fn from(s: snapshot::Model) -> Self {
        SnapshotView {
            id: s.id,
            tenant_id: s.tenant_id,
            project_id: s.project_id,
            pool_id: s.pool_id,
            volume_id: s.volume_id,
            volume_kind: s.volume_kind,
            region: s.region,
            name: s.name,
            state: s.state,
            desired_state: s.desired_state,
            message: s.message,
            size_gib: s.size_gib,
            min_disk_size: s.min_disk_size,
            version: s.version,
            created_at: s.created_at,
            ready_at: s.ready_at,
            deleted_at: s.deleted_at,
        }
    }
}

/// The `providerVolume.snapshot.*` event of a change to `s`.
pub fn event(event_type: &str, s: &snapshot::Model) -> NewEvent {
    NewEvent {
        event_type: format!("providerVolume.snapshot.{event_type}"),
        subject_kind: KIND,
        subject: s.id.clone(),
        tenant_id: Some(s.tenant_id.clone()),
        project_id: s.project_id.clone(),
        version: s.version,
        data: Payload::of(&view(s)),
    }
}
