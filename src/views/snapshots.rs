//! The snapshot a client reads, and its `providerVolume.snapshot.*` events.
use chrono::{DateTime, Utc};

use super::fields::view;

use crate::store::entity::provider_snapshot as snapshot;
use crate::store::outbox::{NewEvent, Payload};
use crate::store::state::{Desired, State, VolumeKind};

pub const KIND: &str = "provider-snapshot";

view! {
    /// A snapshot of a volume.
    pub struct SnapshotView from snapshot::Model {
        #[graphql(skip)]
        pub id: String,
        pub tenant_id: String,
        pub project_id: Option<String>,
        pub pool_id: String,
        /// The volume it was taken of (it outlives that volume).
        pub volume_id: String,
        pub volume_kind: VolumeKind,
        pub region: String,
        pub name: String,
        pub state: State,
        pub desired_state: Desired,
        pub message: Option<String>,
        /// The GiB the provider bills, as it reports them (a fraction, and possibly small at first);
        /// not the volume's size: see `minDiskSizeGiB`.
        pub size_gib: Option<f64> as "sizeGiB",
        /// The smallest volume a restore makes: the volume's size when it was taken.
        pub min_disk_size: i64 as "minDiskSizeGiB",
        /// A delete is refused while it is set (`details.reason: deletionProtected`).
        pub deletion_protection: bool,
        pub version: i64,
        pub created_at: DateTime<Utc>,
        pub ready_at: Option<DateTime<Utc>>,
        pub deleted_at: Option<DateTime<Utc>>,
    }
}

pub fn view(s: &snapshot::Model) -> SnapshotView {
    s.clone().into()
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
