//! Providers: one trait per capability (networks, instances, volumes and shares, snapshots,
//! addresses; filesystems next), implemented per cloud. A provider that lacks a capability
//! says so, and the service answers UNSUPPORTED before anything is recorded. This layer knows
//! nothing of the database.
pub mod digitalocean;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::metrics::Metrics;

/// The kinds of provider account.
pub const KIND_DIGITALOCEAN: &str = "digitalocean";
pub const KIND_AWS: &str = "aws";

/// What a provider call can end in, besides success.
#[derive(Clone, Debug, PartialEq)]
pub enum ProviderError {
    /// Nothing was done: rate-limited, unavailable, or our own budget says wait. Ask again later.
    RetryLater { message: String, after: Duration },
    /// The request may have acted but its answer never came (timeout, dropped connection, a 5xx
    /// on a create): look before acting again.
    Unknown { message: String },
    /// The provider refused the request (4xx); `message` is its own words.
    Refused { status: u16, message: String },
    /// The account cannot be used (no credential): nothing was sent.
    Misconfigured { message: String },
}

impl ProviderError {
    pub fn message(&self) -> &str {
        match self {
            ProviderError::RetryLater { message, .. }
            | ProviderError::Unknown { message }
            | ProviderError::Refused { message, .. }
            | ProviderError::Misconfigured { message } => message,
        }
    }
}

pub type ProviderResult<T> = Result<T, ProviderError>;

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
}

/// A machine as the provider shows it (a DigitalOcean Droplet). `status` is the provider's word:
/// `new` while it is being made, then `active`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Droplet {
    pub id: String,
    pub name: String,
    pub status: String,
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
    /// Tags (`on`) or untags one Droplet; tagging makes the tag first.
    async fn tag_droplet(&self, tag: &str, droplet_id: &str, on: bool) -> ProviderResult<()>;
    async fn tag_delete(&self, tag: &str) -> ProviderResult<()>;
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

/// A network file share as the provider shows it: `status` `CREATING`, `ACTIVE`, `INACTIVE`
/// (on no VPC), `FAILED`; `host` and `mount_path` once it is active.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Share {
    pub id: String,
    pub name: String,
    pub region: String,
    pub size_gib: i64,
    pub status: String,
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
    async fn share_create(&self, name: &str, region: &str, size_gib: i64, vpc_id: &str) -> ProviderResult<Share>;
    async fn share_get(&self, id: &str) -> ProviderResult<Option<Share>>;
    async fn share_find_by_name(&self, name: &str, region: &str) -> ProviderResult<Option<Share>>;
    async fn share_delete(&self, id: &str) -> ProviderResult<bool>;
    /// Starts a share action; its effect shows on the share (there is no action to poll). A
    /// snapshot answers the new snapshot's id.
    async fn share_action(&self, share_id: &str, action: &ShareAction) -> ProviderResult<Option<String>>;
}

/// A volume or share snapshot as the provider shows it.
#[derive(Clone, Debug, PartialEq)]
pub struct Snapshot {
    pub id: String,
    pub name: String,
    /// The billable GiB.
    pub size_gib: f64,
    pub min_disk_size: i64,
    pub ready: bool,
    pub failed: bool,
}

#[async_trait::async_trait]
pub trait Snapshots: Send + Sync {
    async fn volume_snapshot_create(&self, volume_id: &str, name: &str, tags: &[String]) -> ProviderResult<Snapshot>;
    async fn volume_snapshot_get(&self, id: &str) -> ProviderResult<Option<Snapshot>>;
    async fn volume_snapshot_find(&self, volume_id: &str, name: &str) -> ProviderResult<Option<Snapshot>>;
    async fn volume_snapshot_delete(&self, id: &str) -> ProviderResult<bool>;
    async fn share_snapshot_get(&self, id: &str) -> ProviderResult<Option<Snapshot>>;
    async fn share_snapshot_find(&self, share_id: &str, name: &str) -> ProviderResult<Option<Snapshot>>;
    async fn share_snapshot_delete(&self, id: &str) -> ProviderResult<bool>;
}

/// The two families of reserved address.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
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

/// A provider account's client, with the capabilities it has.
pub struct Provider {
    pub networks: Option<Arc<dyn Networks>>,
    pub actions: Option<Arc<dyn Actions>>,
    pub instances: Option<Arc<dyn Instances>>,
    pub volumes: Option<Arc<dyn Volumes>>,
    pub snapshots: Option<Arc<dyn Snapshots>>,
    pub addresses: Option<Arc<dyn Addresses>>,
}

/// Which capabilities a kind of account has, known without a client (to refuse before recording).
pub fn supports_networks(kind: &str) -> bool {
    kind == KIND_DIGITALOCEAN
}

pub fn supports_instances(kind: &str) -> bool {
    kind == KIND_DIGITALOCEAN
}

pub fn supports_volumes(kind: &str) -> bool {
    kind == KIND_DIGITALOCEAN
}

pub fn supports_addresses(kind: &str) -> bool {
    kind == KIND_DIGITALOCEAN
}

pub fn supports_shared_volumes(kind: &str) -> bool {
    kind == KIND_DIGITALOCEAN
}

/// What the provider would refuse of a shared volume's size before any request: DigitalOcean
/// shares are 50 GiB at least.
pub fn min_share_gib(kind: &str) -> i64 {
    if kind == KIND_DIGITALOCEAN { 50 } else { 1 }
}

/// The tag that marks what this deployment made at DigitalOcean (Droplets, volumes, snapshots).
pub fn ownership_tag(deployment: &str) -> String {
    format!("vps-graph:{deployment}")
}

/// What the registry needs to know of an account.
pub struct AccountRef<'a> {
    pub id: &'a str,
    pub kind: &'a str,
    pub api_url: &'a str,
    pub credential_ref: &'a str,
    pub sim: bool,
}

/// One client per account, kept for the process (the rate-limit budget lives in it).
pub struct Providers {
    clients: Mutex<HashMap<String, Arc<Provider>>>,
    /// The in-process simulated DigitalOcean's base URL, for `sim` accounts.
    pub sim_url: Option<String>,
    pub timeout: Duration,
    metrics: Arc<Metrics>,
}

impl Providers {
    pub fn new(sim_url: Option<String>, timeout: Duration, metrics: Arc<Metrics>) -> Self {
        Providers { clients: Mutex::new(HashMap::new()), sim_url, timeout, metrics }
    }

    pub fn for_account(&self, account: &AccountRef<'_>) -> Arc<Provider> {
        let mut clients = self.clients.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(provider) = clients.get(account.id) {
            return provider.clone();
        }
        let provider = Arc::new(self.build(account));
        clients.insert(account.id.to_owned(), provider.clone());
        provider
    }

    fn build(&self, account: &AccountRef<'_>) -> Provider {
        if account.kind != KIND_DIGITALOCEAN {
            return Provider {
                networks: None,
                actions: None,
                instances: None,
                volumes: None,
                snapshots: None,
                addresses: None,
            };
        }
        let (base, token) = if account.sim {
            (self.sim_url.clone().unwrap_or_default(), Ok(format!("sim-{}", account.id)))
        } else {
            (account.api_url.to_owned(), read_credential(account.credential_ref))
        };
        let client =
            Arc::new(digitalocean::DigitalOcean::new(account.id, &base, token, self.timeout, self.metrics.clone()));
        Provider {
            networks: Some(client.clone()),
            actions: Some(client.clone()),
            instances: Some(client.clone()),
            volumes: Some(client.clone()),
            snapshots: Some(client.clone()),
            addresses: Some(client),
        }
    }
}

/// The secret behind `env:NAME` or `file:/path`, read when the client is made.
fn read_credential(reference: &str) -> Result<String, String> {
    if let Some(name) = reference.strip_prefix("env:") {
        return std::env::var(name).map_err(|_| format!("the credential variable {name} is not set"));
    }
    if let Some(path) = reference.strip_prefix("file:") {
        return std::fs::read_to_string(path)
            .map(|s| s.trim().to_owned())
            .map_err(|e| format!("the credential file {path}: {e}"));
    }
    Err(format!("unknown credential reference {reference:?}"))
}
