//! What a volume looks like to its callers and in its `providerVolume.*` events: the views
//! built from its rows.
use chrono::{DateTime, Utc};

use super::fields::view;
use crate::store::entity::{provider_volume as volume, volume_attachment as attachment};
use crate::store::outbox::{NewEvent, Payload};
use crate::store::state::{Desired, State, VolumeFilesystem, VolumeKind};

pub const KIND: &str = "provider-volume";

view! {
    /// A volume on an instance.
    pub struct AttachmentView from attachment::Model {
        #[graphql(skip)]
        pub id: String,
        pub instance_id: String,
        /// PENDING (attaching), READY (attached), DELETING (detaching) or ERROR.
        pub state: State,
        pub desired_state: Desired,
        pub message: Option<String>,
        pub ready_at: Option<DateTime<Utc>>,
    }
}

view! {
    /// A volume with its attachments.
    pub struct VolumeView from volume::Model {
        #[graphql(skip)]
        pub id: String,
        pub tenant_id: String,
        pub project_id: Option<String>,
        pub pool_id: String,
        pub name: String,
        pub description: Option<String>,
        pub region: String,
        /// BLOCK (one instance at a time) or SHARED (an NFS share on a network).
        pub kind: VolumeKind,
        /// A shared volume's network.
        pub network_id: Option<String>,
        /// The filesystem it was formatted with at create (never changed later); none for a shared
        /// volume.
        pub filesystem: Option<VolumeFilesystem>,
        /// Deleted with the instance it is attached to (else deleting the instance detaches it).
        pub delete_with_instance: bool,
        /// The snapshot it was restored from.
        pub source_snapshot_id: Option<String>,
        /// The size asked for (and booked on diskGiB).
        pub size_gib: i64 as "sizeGiB",
        /// The size the provider last reported.
        pub observed_size_gib: Option<i64> as "observedSizeGiB",
        pub state: State,
        pub desired_state: Desired,
        /// Why it is not ready: the provider's words, or ours.
        pub message: Option<String>,
        /// The path the guest sees a block volume at (`/dev/disk/by-id/scsi-0DO_Volume_…`), or a
        /// shared volume's NFS source.
        pub device: Option<String>,
        /// A shared volume's NFS source `<host>:<path>`, once the provider reports it (GraphQL
        /// shows it as `mount`).
        #[graphql(skip)]
        pub mount_source: Option<String>,
        /// Bumped by every change: keep the view with the highest.
        /// A delete is refused while it is set (`details.reason: deletionProtected`).
        pub deletion_protection: bool,
        pub version: i64,
        pub created_at: DateTime<Utc>,
        /// Billing starts here.
        pub ready_at: Option<DateTime<Utc>>,
        /// Billing ends here.
        pub deleted_at: Option<DateTime<Utc>>,
    }
    also {
        /// The attachments that are not finished (detached ones are left out).
        pub attachments: Vec<AttachmentView>,
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
    VolumeView { attachments, ..v.into() }
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
