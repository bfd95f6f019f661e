//! The clients of provider accounts: what each kind of account offers, and the registry that
//! makes (and keeps) one client per account, with its credential read when it is made.
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::aws::Aws;
use super::digitalocean::DigitalOcean;
use super::*;
use crate::metrics::Metrics;
use crate::secret::Secret;
use crate::store::state::ProviderKind;

/// A provider account's client: the cloud it is on, with all that cloud offers. A reconciler
/// matches on it; what a cloud does not offer is refused by the service before anything is
/// recorded (`supports_*`).
pub enum Provider {
    DigitalOcean(Arc<DigitalOcean>),
    Aws(Arc<Aws>),
}

impl Provider {
    /// The DigitalOcean client, None on AWS.
    pub fn digitalocean(&self) -> Option<&Arc<DigitalOcean>> {
        match self {
            Provider::DigitalOcean(client) => Some(client),
            Provider::Aws(_) => None,
        }
    }

    /// The AWS client, None on DigitalOcean.
    pub fn aws(&self) -> Option<&Arc<Aws>> {
        match self {
            Provider::Aws(client) => Some(client),
            Provider::DigitalOcean(_) => None,
        }
    }

    fn budget(&self) -> Arc<super::budget::AccountBudget> {
        match self {
            Provider::DigitalOcean(client) => client.budget(),
            Provider::Aws(client) => client.budget(),
        }
    }
}

/// Which capabilities a kind of account has, known without a client (to refuse before recording).
pub fn supports_networks(kind: ProviderKind) -> bool {
    kind == ProviderKind::Digitalocean || kind == ProviderKind::Aws
}

pub fn supports_instances(kind: ProviderKind) -> bool {
    kind == ProviderKind::Digitalocean || kind == ProviderKind::Aws
}

pub fn supports_volumes(kind: ProviderKind) -> bool {
    kind == ProviderKind::Digitalocean
}

pub fn supports_addresses(kind: ProviderKind) -> bool {
    kind == ProviderKind::Digitalocean
}

pub fn supports_shared_volumes(kind: ProviderKind) -> bool {
    kind == ProviderKind::Digitalocean
}

/// Shared filesystems (EFS, FSx for Lustre) are AWS only.
pub fn supports_filesystems(kind: ProviderKind) -> bool {
    kind == ProviderKind::Aws
}

/// What the provider would refuse of a shared volume's size before any request: DigitalOcean
/// shares are 50 GiB at least.
pub fn min_share_gib(kind: ProviderKind) -> i64 {
    if kind == ProviderKind::Digitalocean { 50 } else { 1 }
}

/// The Lustre size FSx makes when none is asked, and the step of the sizes above it.
pub const LUSTRE_DEFAULT_GIB: i64 = 1200;
pub const LUSTRE_STEP_GIB: i64 = 2400;

/// What the registry needs to know of an account.
pub struct AccountRef<'a> {
    pub id: &'a str,
    pub kind: ProviderKind,
    pub api_url: &'a str,
    pub credential_ref: &'a str,
    pub sim: bool,
}

/// One client per account, kept for the process (the rate-limit budget lives in it), except
/// one whose credential could not be read: that one is made again, credential read again, the
/// next time it is asked for, so a secret put in place later is taken without a restart.
pub struct Providers {
    clients: Mutex<HashMap<String, Client>>,
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
        if let Some(client) = clients.get(account.id).filter(|c| c.credential_read) {
            return client.provider.clone();
        }
        let client = self.build(account);
        let provider = client.provider.clone();
        clients.insert(account.id.to_owned(), client);
        provider
    }

    fn build(&self, account: &AccountRef<'_>) -> Client {
        let (provider, credential_read) = match account.kind {
            ProviderKind::Aws => self.aws(account),
            ProviderKind::Digitalocean => self.digitalocean(account),
        };
        Client { budget: provider.budget(), provider: Arc::new(provider), credential_read }
    }

    fn aws(&self, account: &AccountRef<'_>) -> (Provider, bool) {
        let settings = aws::Settings { timeout: self.timeout, ..aws::Settings::default() };
        let metrics = self.metrics.clone();
        let mut credential_read = true;
        let client = if account.sim {
            aws::Aws::new(self.sim_url.clone(), Ok(aws::Credentials::sim(account.id)), settings, metrics)
        } else {
            let endpoint = Some(account.api_url.to_owned()).filter(|url| !url.is_empty());
            match aws::ToolingSource::parse(account.credential_ref) {
                Some(Ok(source)) => aws::Aws::from_tooling(endpoint, source, settings, metrics),
                Some(Err(message)) => aws::Aws::new(endpoint, Err(message), settings, metrics),
                None => {
                    let pair = read_credential(account.credential_ref).and_then(|s| aws::Credentials::parse(&s));
                    credential_read = pair.is_ok();
                    aws::Aws::new(endpoint, pair, settings, metrics)
                }
            }
        };
        (Provider::Aws(Arc::new(client)), credential_read)
    }

    fn digitalocean(&self, account: &AccountRef<'_>) -> (Provider, bool) {
        let (base, token) = if account.sim {
            (self.sim_url.clone().unwrap_or_default(), Ok(Secret::new(format!("sim-{}", account.id))))
        } else {
            (account.api_url.to_owned(), read_credential(account.credential_ref).map(Secret::new))
        };
        let credential_read = token.is_ok();
        let client = DigitalOcean::new(account.id, &base, token, self.timeout, self.metrics.clone());
        (Provider::DigitalOcean(Arc::new(client)), credential_read)
    }

    /// The account's budget as this replica's client of it sees it; nothing sent yet (no client
    /// made) reads as an empty one.
    pub fn budget(&self, account_id: &str, now_s: i64) -> super::budget::BudgetView {
        let clients = self.clients.lock().unwrap_or_else(|e| e.into_inner());
        clients.get(account_id).map(|c| c.budget.view(now_s)).unwrap_or_default()
    }
}

/// A made client, whether its credential could be read, and its account's budget.
struct Client {
    provider: Arc<Provider>,
    credential_read: bool,
    budget: Arc<super::budget::AccountBudget>,
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_client_whose_credential_could_not_be_read_is_made_again_until_it_can_be() {
        crate::init_crypto();
        let providers = Providers::new(None, Duration::from_secs(1), Arc::new(Metrics::default()));
        let file = std::env::temp_dir().join(format!("vps-graph-credential-{}", std::process::id()));
        let _ = std::fs::remove_file(&file);
        let reference = format!("file:{}", file.display());
        let account = AccountRef {
            id: "acct_1",
            kind: ProviderKind::Digitalocean,
            api_url: "http://127.0.0.1:9",
            credential_ref: &reference,
            sim: false,
        };
        let missing = providers.for_account(&account);
        assert!(!Arc::ptr_eq(&missing, &providers.for_account(&account)), "no secret yet: made again on each ask");
        std::fs::write(&file, "dop_v1_secret\n").unwrap();
        let read = providers.for_account(&account);
        assert!(Arc::ptr_eq(&read, &providers.for_account(&account)), "once read, the client (and its budget) is kept");
        let _ = std::fs::remove_file(&file);
    }
}
