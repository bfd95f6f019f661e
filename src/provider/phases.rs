//! Where a provider's resource is in its life, in the provider's own words, read into types: a
//! word no version of the provider's API says is unreadable (or, where AWS may add words, one
//! variant that says so), and no reconciler compares a provider's word as a string.

/// Where a share is in its life, as DigitalOcean says it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ShareStatus {
    Creating,
    Active,
    /// Made, but on no VPC.
    Inactive,
    Failed,
    Deleted,
}

impl ShareStatus {
    pub fn parse(word: &str) -> Option<ShareStatus> {
        Some(match word {
            "CREATING" => ShareStatus::Creating,
            "ACTIVE" => ShareStatus::Active,
            "INACTIVE" => ShareStatus::Inactive,
            "FAILED" => ShareStatus::Failed,
            "DELETED" => ShareStatus::Deleted,
            _ => return None,
        })
    }
}

/// Where a share's snapshot is in its life, as DigitalOcean says it (a block volume's snapshot
/// says nothing: it is made by the time its create answers).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SnapshotStatus {
    Unknown,
    Creating,
    Active,
    Failed,
    Deleted,
}

impl SnapshotStatus {
    pub fn parse(word: &str) -> Option<SnapshotStatus> {
        Some(match word {
            "UNKNOWN" => SnapshotStatus::Unknown,
            "CREATING" => SnapshotStatus::Creating,
            "ACTIVE" => SnapshotStatus::Active,
            "FAILED" => SnapshotStatus::Failed,
            "DELETED" => SnapshotStatus::Deleted,
            _ => return None,
        })
    }
}

/// A Droplet's status: `new` while it is made, then `active`; `off`; `archive`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DropletStatus {
    New,
    Active,
    Off,
    Archive,
}

impl DropletStatus {
    pub fn parse(word: &str) -> Option<DropletStatus> {
        Some(match word {
            "new" => DropletStatus::New,
            "active" => DropletStatus::Active,
            "off" => DropletStatus::Off,
            "archive" => DropletStatus::Archive,
            _ => return None,
        })
    }
}

/// Where an EFS file system or mount target, or an FSx file system, is in its life: EFS says
/// `creating`, `available`, `updating`, `deleting`, `deleted`, `error`; FSx `CREATING`,
/// `AVAILABLE`, `UPDATING`, `DELETING`, `FAILED`, `MISCONFIGURED`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lifecycle {
    Creating,
    Available,
    Updating,
    Deleting,
    Deleted,
    /// EFS's `error`, FSx's `FAILED`.
    Failed,
    Misconfigured,
    /// A word this code does not know: taken as still being made.
    Unknown,
}

impl Lifecycle {
    pub fn parse(word: &str) -> Lifecycle {
        match word.to_ascii_lowercase().as_str() {
            "creating" => Lifecycle::Creating,
            "available" => Lifecycle::Available,
            "updating" => Lifecycle::Updating,
            "deleting" => Lifecycle::Deleting,
            "deleted" => Lifecycle::Deleted,
            "error" | "failed" => Lifecycle::Failed,
            "misconfigured" => Lifecycle::Misconfigured,
            _ => Lifecycle::Unknown,
        }
    }

    pub fn gone_or_going(self) -> bool {
        matches!(self, Lifecycle::Deleting | Lifecycle::Deleted)
    }
}

/// An EC2 machine's state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MachineState {
    Pending,
    Running,
    ShuttingDown,
    Terminated,
    Stopping,
    Stopped,
    /// A word this code does not know (or none).
    Unknown,
}

impl MachineState {
    pub fn parse(word: &str) -> MachineState {
        match word {
            "pending" => MachineState::Pending,
            "running" => MachineState::Running,
            "shutting-down" => MachineState::ShuttingDown,
            "terminated" => MachineState::Terminated,
            "stopping" => MachineState::Stopping,
            "stopped" => MachineState::Stopped,
            _ => MachineState::Unknown,
        }
    }

    /// EC2's word for it.
    pub fn word(self) -> &'static str {
        match self {
            MachineState::Pending => "pending",
            MachineState::Running => "running",
            MachineState::ShuttingDown => "shutting-down",
            MachineState::Terminated => "terminated",
            MachineState::Stopping => "stopping",
            MachineState::Stopped => "stopped",
            MachineState::Unknown => "unknown",
        }
    }

    /// Terminated, or on its way there.
    pub fn ending(self) -> bool {
        matches!(self, MachineState::ShuttingDown | MachineState::Terminated)
    }
}

/// Where a DigitalOcean firewall's application to its Droplets stands: `waiting` while it is
/// applied, `succeeded`, or `failed`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FirewallStatus {
    Waiting,
    Succeeded,
    Failed,
}

impl FirewallStatus {
    pub fn parse(word: &str) -> Option<FirewallStatus> {
        Some(match word {
            "waiting" => FirewallStatus::Waiting,
            "succeeded" => FirewallStatus::Succeeded,
            "failed" => FirewallStatus::Failed,
            _ => return None,
        })
    }
}
