//! Providers: one trait per capability (networks now; volumes, snapshots, shares, addresses,
//! instances and filesystems next), implemented per cloud. A provider that lacks a capability
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
}

/// Which capabilities a kind of account has, known without a client (to refuse before recording).
pub fn supports_networks(kind: &str) -> bool {
    kind == KIND_DIGITALOCEAN
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
            return Provider { networks: None, actions: None };
        }
        let (base, token) = if account.sim {
            (self.sim_url.clone().unwrap_or_default(), Ok(format!("sim-{}", account.id)))
        } else {
            (account.api_url.to_owned(), read_credential(account.credential_ref))
        };
        let client =
            Arc::new(digitalocean::DigitalOcean::new(account.id, &base, token, self.timeout, self.metrics.clone()));
        Provider { networks: Some(client.clone()), actions: Some(client) }
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
