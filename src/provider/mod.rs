//! Providers: one trait per capability (networks, instances, volumes and shares, snapshots,
//! addresses, and on AWS networks, security groups, machines and shared filesystems),
//! implemented per cloud. A provider that lacks a capability
//! says so, and the service answers UNSUPPORTED before anything is recorded. This layer knows
//! nothing of the database.
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

/// Tenant networks: one VPC per subnet.
#[async_trait::async_trait]
pub trait Networks: Send + Sync {
    async fn vpc_create(&self, request: &VpcCreate<'_>) -> ProviderResult<Vpc>;
    /// None when the provider has no such VPC.
    async fn vpc_get(&self, id: &str) -> ProviderResult<Option<Vpc>>;
    async fn vpc_find_by_name(&self, name: &str) -> ProviderResult<Option<Vpc>>;
    /// False when it was already gone.
    async fn vpc_delete(&self, id: &str) -> ProviderResult<bool>;
    /// Every VPC of the account, in pages of the API's largest size.
    async fn vpcs_list(&self) -> ProviderResult<Vec<Vpc>>;
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

/// Machines, and the tags that mark them.
#[async_trait::async_trait]
pub trait Instances: Send + Sync {
    async fn droplet_create(&self, request: &DropletCreate<'_>) -> ProviderResult<Droplet>;
    async fn droplet_get(&self, id: &str) -> ProviderResult<Option<Droplet>>;
    async fn droplet_find_by_name(&self, name: &str) -> ProviderResult<Option<Droplet>>;
    /// False when it was already gone.
    async fn droplet_delete(&self, id: &str) -> ProviderResult<bool>;
    /// Deletes the Droplet with exactly the volumes named (a selective destroy: what is not
    /// named is kept); false when the Droplet was already gone.
    async fn droplet_destroy_with_volumes(&self, id: &str, volume_ids: &[String]) -> ProviderResult<bool>;
    async fn droplets_tagged(&self, tag: &str) -> ProviderResult<Vec<Droplet>>;
    /// Tags (`on`) or untags Droplets, all in one call; tagging makes the tag first.
    async fn tag_droplets(&self, tag: &str, droplet_ids: &[String], on: bool) -> ProviderResult<()>;
    async fn tag_delete(&self, tag: &str) -> ProviderResult<()>;
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

/// DigitalOcean's cloud firewalls. A create has no idempotency key: a create whose answer was
/// lost is found by its name in the list.
#[async_trait::async_trait]
pub trait Firewalls: Send + Sync {
    /// Needs at least one rule, and every tag it names to exist (`tag_create`).
    async fn firewall_create(&self, spec: &CloudFirewallSpec<'_>) -> ProviderResult<CloudFirewall>;
    /// Every firewall of the account.
    async fn firewalls(&self) -> ProviderResult<Vec<CloudFirewall>>;
    /// Replaces the firewall with `spec`; None when it is gone.
    async fn firewall_update(&self, id: &str, spec: &CloudFirewallSpec<'_>) -> ProviderResult<Option<CloudFirewall>>;
    /// False when it was already gone.
    async fn firewall_delete(&self, id: &str) -> ProviderResult<bool>;
    /// Makes the tag (making one that exists succeeds).
    async fn tag_create(&self, name: &str) -> ProviderResult<()>;
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

/// Block volumes and network file shares.
#[async_trait::async_trait]
pub trait Volumes: Send + Sync {
    async fn volume_create(&self, request: &VolumeCreate<'_>) -> ProviderResult<BlockVolume>;
    async fn volume_get(&self, id: &str) -> ProviderResult<Option<BlockVolume>>;
    async fn volume_find_by_name(&self, name: &str, region: &str) -> ProviderResult<Option<BlockVolume>>;
    /// False when it was already gone.
    async fn volume_delete(&self, id: &str) -> ProviderResult<bool>;
    /// Starts an action; returns its id, to be looked at through `Actions`.
    async fn volume_action(&self, volume_id: &str, region: &str, action: &VolumeAction) -> ProviderResult<u64>;
    /// The id of an action of `kind` the provider is still running on the volume: what a call
    /// whose answer was lost may have started.
    async fn volume_action_running(&self, volume_id: &str, kind: VolumeActionKind) -> ProviderResult<Option<u64>>;
    async fn share_create(&self, name: &str, region: &str, size_gib: i64, vpc_id: &str) -> ProviderResult<Share>;
    async fn share_get(&self, id: &str, region: &str) -> ProviderResult<Option<Share>>;
    async fn share_find_by_name(&self, name: &str, region: &str) -> ProviderResult<Option<Share>>;
    async fn share_delete(&self, id: &str, region: &str) -> ProviderResult<bool>;
    /// Starts a share action; its effect shows on the share (there is no action to poll). A
    /// snapshot answers the new snapshot's id.
    async fn share_action(&self, share_id: &str, action: &ShareAction) -> ProviderResult<Option<String>>;
    /// Every block volume of the account, in pages of the API's largest size.
    async fn volumes_list(&self) -> ProviderResult<Vec<BlockVolume>>;
    /// Every share of the account in `region`, in pages of the API's largest size.
    async fn shares_list(&self, region: &str) -> ProviderResult<Vec<Share>>;
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

#[async_trait::async_trait]
pub trait Snapshots: Send + Sync {
    async fn volume_snapshot_create(&self, volume_id: &str, name: &str, tags: &[String]) -> ProviderResult<Snapshot>;
    async fn volume_snapshot_get(&self, id: &str) -> ProviderResult<Option<Snapshot>>;
    async fn volume_snapshot_find(&self, volume_id: &str, name: &str) -> ProviderResult<Option<Snapshot>>;
    async fn volume_snapshot_delete(&self, id: &str) -> ProviderResult<bool>;
    async fn share_snapshot_get(&self, id: &str, region: &str) -> ProviderResult<Option<Snapshot>>;
    async fn share_snapshot_find(&self, share_id: &str, name: &str, region: &str) -> ProviderResult<Option<Snapshot>>;
    async fn share_snapshot_delete(&self, id: &str, region: &str) -> ProviderResult<bool>;
    /// Every volume snapshot of the account, in pages of the API's largest size.
    async fn volume_snapshots_list(&self) -> ProviderResult<Vec<Snapshot>>;
    /// Every share snapshot of the account in `region`, in pages of the API's largest size.
    async fn share_snapshots_list(&self, region: &str) -> ProviderResult<Vec<Snapshot>>;
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

/// Reserved addresses and their assignment to machines. Assign and unassign are actions,
/// looked at through `Actions` until done.
#[async_trait::async_trait]
pub trait Addresses: Send + Sync {
    async fn address_reserve(&self, family: Family, region: &str) -> ProviderResult<ReservedAddress>;
    /// None when the provider has no such address.
    async fn address_get(&self, family: Family, ip: &str) -> ProviderResult<Option<ReservedAddress>>;
    /// Releases it; false when it was already gone.
    async fn address_release(&self, family: Family, ip: &str) -> ProviderResult<bool>;
    /// Starts assigning it to a Droplet; returns the action's id.
    async fn address_assign(&self, family: Family, ip: &str, droplet_id: &str) -> ProviderResult<u64>;
    /// Starts unassigning it; returns the action's id.
    async fn address_unassign(&self, family: Family, ip: &str) -> ProviderResult<u64>;
    /// Every reserved address of `family` of the account, in pages of the API's largest size.
    async fn addresses_list(&self, family: Family) -> ProviderResult<Vec<ReservedAddress>>;
}

/// Where an asynchronous provider action is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ActionStatus {
    InProgress,
    Completed,
    Errored,
}

/// Provider actions (attach, detach, resize, snapshot) are started, then looked at through the
/// action endpoints until done; a run never waits on one (it looks again 5 s later).
#[async_trait::async_trait]
pub trait Actions: Send + Sync {
    /// None when the provider knows no such action.
    async fn action_get(&self, id: u64) -> ProviderResult<Option<ActionStatus>>;
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

/// AWS networks: a VPC (with DNS support and DNS hostnames, which EFS names need) and one subnet
/// per zone. Tags (a `Name` and the caller's ownership tag) are written in the create call
/// itself. Names are not unique at EC2: a find answers every match, for the caller to check
/// ownership. Every call names its region.
#[async_trait::async_trait]
pub trait AwsNetworks: Send + Sync {
    /// CreateVpc, then `vpc_enable_dns`. A failure after the create is `Unknown` (the VPC
    /// exists): find it by name and call `vpc_enable_dns` again.
    async fn vpc_create(&self, region: &str, cidr_block: &str, tags: &[Tag]) -> ProviderResult<AwsVpc>;
    /// Sets EnableDnsSupport and EnableDnsHostnames (idempotent).
    async fn vpc_enable_dns(&self, region: &str, vpc_id: &str) -> ProviderResult<()>;
    /// None when EC2 has no such VPC.
    async fn vpc_get(&self, region: &str, vpc_id: &str) -> ProviderResult<Option<AwsVpc>>;
    async fn vpcs_find_by_name(&self, region: &str, name: &str) -> ProviderResult<Vec<AwsVpc>>;
    /// False when it was already gone; `DependencyViolation` while subnets or interfaces remain.
    async fn vpc_delete(&self, region: &str, vpc_id: &str) -> ProviderResult<bool>;
    async fn subnet_create(
        &self,
        region: &str,
        vpc_id: &str,
        availability_zone: &str,
        cidr_block: &str,
        tags: &[Tag],
    ) -> ProviderResult<AwsSubnet>;
    async fn subnets_of_vpc(&self, region: &str, vpc_id: &str) -> ProviderResult<Vec<AwsSubnet>>;
    /// False when it was already gone.
    async fn subnet_delete(&self, region: &str, subnet_id: &str) -> ProviderResult<bool>;
    /// Every VPC of the region (an adopted one carries no tag of ours), in pages of 1,000.
    async fn vpcs_in(&self, region: &str) -> ProviderResult<Vec<AwsVpc>>;
    /// Every subnet of the region, in pages of 1,000.
    async fn subnets_in(&self, region: &str) -> ProviderResult<Vec<AwsSubnet>>;
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

/// EC2 security groups. A create has no idempotency token: a create whose answer was lost ends
/// in `InvalidGroup.Duplicate` next time, resolved by `security_group_find` and the tags.
#[async_trait::async_trait]
pub trait SecurityGroups: Send + Sync {
    /// Answers the new group's id.
    async fn security_group_create(
        &self,
        region: &str,
        vpc_id: &str,
        name: &str,
        description: &str,
        tags: &[Tag],
    ) -> ProviderResult<String>;
    /// All rules in one call: one that exists already fails the whole call with
    /// `InvalidPermission.Duplicate` (compare with the group's rules first).
    async fn security_group_authorize(
        &self,
        region: &str,
        group_id: &str,
        flow: Flow,
        rules: &[GroupRule],
    ) -> ProviderResult<()>;
    /// All rules in one call; one the group lacks fails the whole call with
    /// `InvalidPermission.NotFound`.
    async fn security_group_revoke(
        &self,
        region: &str,
        group_id: &str,
        flow: Flow,
        rules: &[GroupRule],
    ) -> ProviderResult<()>;
    /// Every group of the VPC, its `default` one too.
    async fn security_groups_of_vpc(&self, region: &str, vpc_id: &str) -> ProviderResult<Vec<SecurityGroup>>;
    /// The group of that name in the VPC, with its tags for the ownership check.
    async fn security_group_find(
        &self,
        region: &str,
        vpc_id: &str,
        name: &str,
    ) -> ProviderResult<Option<SecurityGroup>>;
    /// False when it was already gone; `DependencyViolation` while an interface uses it.
    async fn security_group_delete(&self, region: &str, group_id: &str) -> ProviderResult<bool>;
    /// Every group of the region carrying `deployment`'s ownership tag, in pages of 1,000.
    async fn security_groups_owned(&self, region: &str, deployment: &str) -> ProviderResult<Vec<SecurityGroup>>;
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

/// EC2 machines, one per RunInstances.
#[async_trait::async_trait]
pub trait AwsInstances: Send + Sync {
    async fn instance_run(&self, region: &str, request: &InstanceRun<'_>) -> ProviderResult<AwsInstance>;
    /// None when EC2 has no such machine (a terminated one stays visible for a while).
    async fn instance_get(&self, region: &str, instance_id: &str) -> ProviderResult<Option<AwsInstance>>;
    async fn instances_find_by_name(&self, region: &str, name: &str) -> ProviderResult<Vec<AwsInstance>>;
    /// False when it was already gone.
    async fn instance_terminate(&self, region: &str, instance_id: &str) -> ProviderResult<bool>;
    /// Every machine in the VPC (terminated ones too, while EC2 still shows them).
    async fn instances_in_vpc(&self, region: &str, vpc_id: &str) -> ProviderResult<Vec<AwsInstance>>;
    /// Replaces the machine's security groups with `group_ids` (at least one).
    async fn instance_set_groups(&self, region: &str, instance_id: &str, group_ids: &[String]) -> ProviderResult<()>;
    /// Every machine of the region carrying `deployment`'s ownership tag (terminated ones too,
    /// while EC2 still shows them), in pages of 1,000.
    async fn instances_owned(&self, region: &str, deployment: &str) -> ProviderResult<Vec<AwsInstance>>;
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

/// Shared filesystems: EFS (NFS, with one mount target per zone) and FSx for Lustre.
#[async_trait::async_trait]
pub trait Filesystems: Send + Sync {
    /// Encrypted, with `creation_token` (the provider name) as its idempotency key. A token held
    /// already (ours after a lost answer, or anyone's) is `FileSystemAlreadyExists`, with that
    /// file system's id in the message: look it up and check its tags.
    async fn efs_create(&self, region: &str, creation_token: &str, tags: &[Tag]) -> ProviderResult<EfsFileSystem>;
    /// None when EFS has no such file system.
    async fn efs_get(&self, region: &str, file_system_id: &str) -> ProviderResult<Option<EfsFileSystem>>;
    async fn efs_find_by_token(&self, region: &str, creation_token: &str) -> ProviderResult<Option<EfsFileSystem>>;
    /// False when it was already gone; `FileSystemInUse` while a mount target remains.
    async fn efs_delete(&self, region: &str, file_system_id: &str) -> ProviderResult<bool>;
    async fn mount_target_create(
        &self,
        region: &str,
        file_system_id: &str,
        subnet_id: &str,
        security_group_ids: &[String],
    ) -> ProviderResult<MountTarget>;
    /// Empty when the file system has none, or is gone.
    async fn mount_targets_of(&self, region: &str, file_system_id: &str) -> ProviderResult<Vec<MountTarget>>;
    /// False when it was already gone.
    async fn mount_target_delete(&self, region: &str, mount_target_id: &str) -> ProviderResult<bool>;
    /// A token reused with the same parameters answers the earlier file system (a success that
    /// does not prove we made it: check the tags).
    async fn lustre_create(&self, region: &str, request: &LustreCreate<'_>) -> ProviderResult<LustreFileSystem>;
    /// None when FSx has no such file system.
    async fn lustre_get(&self, region: &str, file_system_id: &str) -> ProviderResult<Option<LustreFileSystem>>;
    /// Every Lustre file system tagged `Name=name` (FSx has no filter: this lists them all).
    async fn lustre_find_by_name(&self, region: &str, name: &str) -> ProviderResult<Vec<LustreFileSystem>>;
    /// Without a final backup; false when it was already gone.
    async fn lustre_delete(&self, region: &str, file_system_id: &str) -> ProviderResult<bool>;
    /// Every EFS file system of the region (not yet deleted), in pages of 100, EFS's largest.
    async fn efs_list(&self, region: &str) -> ProviderResult<Vec<EfsFileSystem>>;
    /// Every Lustre file system of the region, in the pages FSx gives.
    async fn lustre_list(&self, region: &str) -> ProviderResult<Vec<LustreFileSystem>>;
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
