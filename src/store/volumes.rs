//! Provider volume rows: the reads and changes of the volume calls and of the volume reconciler.

/// The work item kind of `vps.provider-resources`, the one reconciler of provider volumes (with
/// their attachments), snapshots and addresses.
pub const RECONCILER: &str = "vps.provider-resources";
