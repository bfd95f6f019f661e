//! Deletion protection: a volume, snapshot, address or filesystem that has it is refused a delete
//! (and an instance delete that would take such a volume with it) until an update turns it off.
use serde_json::json;

use crate::error::{Code, Error, Result};

/// An update call's change of a resource's deletion protection: `on` None leaves it as it is.
pub struct Protection {
    pub tenant_id: String,
    pub id: String,
    pub on: Option<bool>,
}

impl Protection {
    /// The value to write, when it differs from what the resource has.
    pub fn change_of(&self, current: bool) -> Option<bool> {
        self.on.filter(|on| *on != current)
    }
}

/// For serde's `skip_serializing_if`: a flag left out of a request's hash while it is off.
pub fn is_false(flag: &bool) -> bool {
    !flag
}

/// INVALID_STATE with `details.reason: deletionProtected` when `protected`; `what` names the
/// resource ("volume pvol_…") and `update` the call that turns protection off.
pub fn check_delete(protected: bool, what: &str, update: &str) -> Result<()> {
    if !protected {
        return Ok(());
    }
    Err(Error::new(
        Code::InvalidState,
        format!("{what} has deletion protection: turn it off with {update} (deletionProtection: false) first"),
    )
    .with_details(json!({ "reason": "deletionProtected" })))
}

/// An instance delete that would take `protected` volumes with deletion protection with it
/// (`deleteWithInstance`); `readable` are the ids of those the caller may read, the ones named.
pub fn check_instance_delete(instance_id: &str, protected: usize, readable: &[String]) -> Result<()> {
    if protected == 0 {
        return Ok(());
    }
    Err(Error::new(
        Code::InvalidState,
        format!(
            "instance {instance_id} would take {protected} volume(s) with deletion protection with it: turn it off with providerVolumeUpdate, or detach them, first"
        ),
    )
    .with_details(json!({ "reason": "deletionProtected", "volumeIds": readable })))
}
