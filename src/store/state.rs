//! The states and desired states every resource row is stored with.
pub const PENDING: &str = "pending";
pub const READY: &str = "ready";
pub const DELETING: &str = "deleting";
pub const DELETED: &str = "deleted";
pub const ERROR: &str = "error";
pub const PRESENT: &str = "present";
pub const ABSENT: &str = "absent";
