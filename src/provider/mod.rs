//! Providers: the client of each cloud (`digitalocean::DigitalOcean`, `aws::Aws`), with what it
//! offers as its own methods, and `Provider`, an account's client as one of the two, which a
//! reconciler matches on. What a kind of account does not offer is known without a client
//! (`supports_*`), and the service answers UNSUPPORTED before anything is recorded. This layer
//! knows nothing of the database.
mod accounts;
pub mod aws;
pub mod budget;
pub mod digitalocean;
mod error;
pub mod fence;
mod phases;
pub mod sizes;

pub use accounts::*;
pub use error::*;
pub use phases::*;

use serde::{Deserialize, Serialize};

/// The kinds of provider account.
pub use crate::store::state::ProviderKind;

/// A VPC as DigitalOcean shows it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Vpc {
    pub id: String,
    pub name: String,
    pub region: String,
    pub ip_range: String,
    #[serde(default)]
    pub description: String,
}

pub struct VpcCreate<'a> {
    pub name: &'a str,
    pub region: &'a str,
    pub ip_range: &'a str,
    /// Marks the VPC as this deployment's.
    pub description: &'a str,
}

/// A machine as the provider shows it (a DigitalOcean Droplet). `status` is the provider's word:
/// `new` while it is being made, then `active`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Droplet {
    pub id: String,
    pub name: String,
    pub status: DropletStatus,
    pub region: String,
    pub vpc_id: Option<String>,
    pub volume_ids: Vec<String>,
    pub tags: Vec<String>,
}

pub struct DropletCreate<'a> {
    pub name: &'a str,
    pub region: &'a str,
    pub size: &'a str,
    pub image: &'a str,
    pub vpc_id: Option<&'a str>,
    pub tags: &'a [String],
    /// The tenant's user data, as text.
    pub user_data: Option<&'a str>,
}

/// One rule of a DigitalOcean cloud firewall: `protocol` `tcp`, `udp` or `icmp`; `ports` as the
/// API writes them (`22`, `8000-9000`, `0` for every port, and always `0` for ICMP); its peers
/// (the `sources` of an inbound rule, the `destinations` of an outbound one) as address ranges,
/// tags and Droplets.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CloudFirewallRule {
    pub protocol: String,
    pub ports: String,
    pub addresses: Vec<String>,
    pub tags: Vec<String>,
    pub droplet_ids: Vec<String>,
}

/// A DigitalOcean cloud firewall as the API shows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CloudFirewall {
    pub id: String,
    pub name: String,
    pub status: FirewallStatus,
    pub created_at: String,
    /// Its targets: every Droplet carrying one of these tags, and these Droplets.
    pub tags: Vec<String>,
    pub droplet_ids: Vec<String>,
    pub inbound: Vec<CloudFirewallRule>,
    pub outbound: Vec<CloudFirewallRule>,
}

/// What a firewall is made or put back to: the whole of it (a PUT resets what it leaves out).
pub struct CloudFirewallSpec<'a> {
    pub name: &'a str,
    pub tags: &'a [String],
    pub inbound: &'a [CloudFirewallRule],
    pub outbound: &'a [CloudFirewallRule],
}

/// A block volume as the provider shows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BlockVolume {
    pub id: String,
    pub name: String,
    pub region: String,
    pub size_gib: i64,
    pub droplet_ids: Vec<String>,
    pub tags: Vec<String>,
    pub description: String,
}

pub struct VolumeCreate<'a> {
    pub name: &'a str,
    pub region: &'a str,
    pub size_gib: i64,
    /// Marks the volume as this deployment's.
    pub description: &'a str,
    pub filesystem: Option<&'a str>,
    pub snapshot_id: Option<&'a str>,
    pub tags: &'a [String],
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum VolumeAction {
    Attach { droplet_id: String },
    Detach { droplet_id: String },
    Resize { size_gib: i64 },
}

/// What a volume action does, to find one still running after a call whose answer was lost.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum VolumeActionKind {
    Attach,
    Detach,
    Resize,
}

/// A network file share as the provider shows it: `status` `CREATING`, `ACTIVE`, `INACTIVE`
/// (on no VPC), `FAILED`; `host` and `mount_path` once it is active.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Share {
    pub id: String,
    pub name: String,
    pub region: String,
    pub size_gib: i64,
    pub status: ShareStatus,
    pub vpc_ids: Vec<String>,
    pub host: Option<String>,
    pub mount_path: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ShareAction {
    Attach { vpc_id: String },
    Detach { vpc_id: String },
    Resize { size_gib: i64 },
    Snapshot { name: String },
}

/// A volume or share snapshot as the provider shows it.
#[derive(Clone, Debug, PartialEq)]
pub struct Snapshot {
    pub id: String,
    pub name: String,
    /// The billable GiB.
    pub size_gib: f64,
    /// The smallest volume a restore makes; None where the provider says none (a share's).
    pub min_disk_size: Option<i64>,
    pub ready: bool,
    pub failed: bool,
}

impl Snapshot {
    /// A share snapshot just asked for: the provider answers its id alone, and it is being made.
    pub fn started(id: String, name: &str) -> Snapshot {
        Snapshot { id, name: name.to_owned(), size_gib: 0.0, min_disk_size: None, ready: false, failed: false }
    }
}

/// The two families of reserved address.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Family {
    V4,
    V6,
}

/// A reserved public address as the provider shows it (a DigitalOcean reserved IPv4 or IPv6).
/// It has no name and no tags; `reserved_at` (a reserved IPv6's reservation time) is the
/// fingerprint that tells two reservations of one IP apart, where the provider has one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReservedAddress {
    pub ip: String,
    pub region: String,
    /// The Droplet it is assigned to.
    pub droplet_id: Option<String>,
    /// Reserved IPv4: an action is running on it.
    pub locked: bool,
    pub reserved_at: Option<String>,
}

/// Where an asynchronous provider action is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ActionStatus {
    InProgress,
    Completed,
    Errored,
}

/// A tag on an AWS resource.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Tag {
    pub key: String,
    pub value: String,
}

impl Tag {
    pub fn new(key: &str, value: &str) -> Self {
        Tag { key: key.to_owned(), value: value.to_owned() }
    }
}

/// The value of the tag `key`, if any.
pub fn tag_value<'a>(tags: &'a [Tag], key: &str) -> Option<&'a str> {
    tags.iter().find(|t| t.key == key).map(|t| t.value.as_str())
}

/// An EC2 VPC. `state` is EC2's word: `pending`, then `available`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AwsVpc {
    pub id: String,
    pub cidr_block: String,
    pub state: String,
    pub tags: Vec<Tag>,
}

/// An EC2 subnet, in one availability zone of its VPC.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AwsSubnet {
    pub id: String,
    pub vpc_id: String,
    pub availability_zone: String,
    pub cidr_block: String,
    pub state: String,
    pub tags: Vec<Tag>,
}

/// Where a security group rule admits traffic from (inbound) or lets it go to (outbound).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum RuleSource {
    /// An IPv4 CIDR.
    Cidr(String),
    /// An IPv6 CIDR.
    Cidr6(String),
    Group(String),
}

/// One rule of a security group: `protocol` `tcp`, `udp`, `icmp` or `-1` (every protocol, and
/// then every port); TCP and UDP ports `from_port` to `to_port`, ICMP a type and code (-1: all).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GroupRule {
    pub protocol: String,
    pub from_port: i32,
    pub to_port: i32,
    pub source: RuleSource,
    pub description: Option<String>,
}

impl GroupRule {
    pub fn tcp(from_port: i32, to_port: i32, source: RuleSource) -> Self {
        GroupRule { protocol: "tcp".into(), from_port, to_port, source, description: None }
    }

    /// Every protocol on every port: what a new group lets out.
    pub fn everything(source: RuleSource) -> Self {
        GroupRule { protocol: "-1".into(), from_port: -1, to_port: -1, source, description: None }
    }

    /// What an EFS mount target needs from `source`: NFS, TCP 2049.
    pub fn nfs(source: RuleSource) -> Vec<GroupRule> {
        vec![GroupRule::tcp(2049, 2049, source)]
    }

    /// What an FSx for Lustre file system needs from `source` (its clients, and its own group):
    /// LNET on TCP 988 and 1018–1023.
    pub fn lustre(source: RuleSource) -> Vec<GroupRule> {
        vec![GroupRule::tcp(988, 988, source.clone()), GroupRule::tcp(1018, 1023, source)]
    }

    /// Whether the two say the same (descriptions aside): EC2 refuses one that exists.
    pub fn same(&self, other: &GroupRule) -> bool {
        (&self.protocol, self.from_port, self.to_port, &self.source)
            == (&other.protocol, other.from_port, other.to_port, &other.source)
    }
}

/// An EC2 security group as DescribeSecurityGroups shows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SecurityGroup {
    pub id: String,
    pub name: String,
    pub vpc_id: String,
    pub tags: Vec<Tag>,
    pub ingress: Vec<GroupRule>,
    pub egress: Vec<GroupRule>,
}

/// Which of a group's rule lists a call changes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flow {
    Ingress,
    Egress,
}

/// An EC2 machine.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AwsInstance {
    pub id: String,
    pub state: MachineState,
    pub image_id: String,
    pub instance_type: String,
    pub subnet_id: Option<String>,
    pub vpc_id: Option<String>,
    pub availability_zone: Option<String>,
    pub private_ip: Option<String>,
    pub public_ip: Option<String>,
    pub tags: Vec<Tag>,
    /// The security groups of its (primary) interface.
    pub security_group_ids: Vec<String>,
}

pub struct InstanceRun<'a> {
    pub image_id: &'a str,
    pub instance_type: &'a str,
    pub subnet_id: &'a str,
    pub security_group_ids: &'a [String],
    /// The script as text; the client encodes it in base64.
    pub user_data: Option<&'a str>,
    /// Idempotency: the same token within a day answers the same machine (use the provider name).
    pub client_token: &'a str,
    pub tags: &'a [Tag],
}

/// An EFS file system. `dns_name` is built from the id and region (the API does not return it).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EfsFileSystem {
    pub id: String,
    pub creation_token: String,
    pub life_cycle_state: Lifecycle,
    pub number_of_mount_targets: i32,
    pub encrypted: bool,
    pub dns_name: String,
    pub tags: Vec<Tag>,
}

/// An EFS mount target (one per zone).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MountTarget {
    pub id: String,
    pub file_system_id: String,
    pub subnet_id: String,
    pub life_cycle_state: Lifecycle,
    pub ip_address: Option<String>,
    pub availability_zone: Option<String>,
    pub vpc_id: Option<String>,
}

/// The deployment of a Lustre file system.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LustreDeployment {
    Scratch2,
    /// With its throughput per TiB of storage (125, 250, 500 or 1000 MB/s/TiB).
    Persistent2 {
        per_unit_storage_throughput: i32,
    },
}

pub struct LustreCreate<'a> {
    /// Idempotency (≤ 63 chars `[A-Za-z0-9_.-]`): use the provider name.
    pub client_request_token: &'a str,
    /// GiB: 1200, or a multiple of 2400.
    pub storage_capacity_gib: i32,
    pub deployment: LustreDeployment,
    pub subnet_id: &'a str,
    pub security_group_ids: &'a [String],
    pub tags: &'a [Tag],
}

/// An FSx for Lustre file system. `lifecycle`: `CREATING`, `AVAILABLE`, `FAILED`, `DELETING`,
/// `MISCONFIGURED`, `UPDATING`; `mount_name` may be absent until `AVAILABLE`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LustreFileSystem {
    pub id: String,
    pub lifecycle: Lifecycle,
    pub dns_name: Option<String>,
    pub mount_name: Option<String>,
    pub storage_capacity_gib: i32,
    pub deployment_type: Option<String>,
    pub subnet_ids: Vec<String>,
    pub vpc_id: Option<String>,
    pub failure_message: Option<String>,
    pub tags: Vec<Tag>,
}

/// The tag that marks what this deployment made at DigitalOcean (Droplets, volumes, snapshots).
pub fn ownership_tag(deployment: &str) -> String {
    format!("vps-graph:{deployment}")
}

/// The tag key that marks what this deployment made at AWS; its value is the deployment.
pub const AWS_OWNER_TAG: &str = "vps-graph:deployment";

/// The tags every AWS create of this deployment writes in the create call itself: the `Name`
/// (the provider name, derived from the resource id) and the ownership tag, since at AWS a
/// name proves nothing (EFS tokens, FSx names and group names can all be held by others).
pub fn aws_tags(name: &str, deployment: &str) -> Vec<Tag> {
    vec![Tag::new("Name", name), Tag::new(AWS_OWNER_TAG, deployment)]
}

/// Whether something found at AWS carries this deployment's ownership tag.
pub fn aws_owned(tags: &[Tag], deployment: &str) -> bool {
    tag_value(tags, AWS_OWNER_TAG) == Some(deployment)
}
