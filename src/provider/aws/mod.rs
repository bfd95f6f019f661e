//! The AWS clients of one account: EC2 by hand (`ec2`: VPCs, subnets, security groups,
//! machines), EFS (`efs`) and FSx for Lustre (`fsx`) through the AWS SDK, whose configs are
//! built here with explicit region, credentials and endpoint (no credential chain: an account
//! names its one source, see `credentials`) over a ring-only HTTPS client. Every call names its region; one
//! SDK client per region is kept. When the account has an API URL (the sim in tests) all three
//! services go to it. Errors follow one table (`classify`), and every message starts with
//! `AWS <Code>:` so callers can tell refusals apart (`ProviderError::aws_code`).
mod credentials;
mod ec2;
mod efs;
mod fsx;

pub use credentials::{Credentials, ToolingSource};

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use aws_credential_types::provider::SharedCredentialsProvider;
use aws_smithy_http_client::tls;

use super::{
    AWS_CODE_PREFIX, EfsFileSystem, LustreCreate, LustreFileSystem, MountTarget, ProviderError, ProviderResult, Tag,
};
use crate::metrics::Metrics;

/// How long a throttled or unavailable service is left alone, once the retries are spent.
const RETRY_AFTER: Duration = Duration::from_secs(30);

/// The throttling codes the AWS SDKs retry (`RequestLimitExceeded` is EC2's).
pub(super) const THROTTLING_CODES: &[&str] = &[
    "Throttling",
    "ThrottlingException",
    "ThrottledException",
    "RequestThrottledException",
    "TooManyRequestsException",
    "ProvisionedThroughputExceededException",
    "TransactionInProgressException",
    "RequestLimitExceeded",
    "BandwidthLimitExceeded",
    "LimitExceededException",
    "RequestThrottled",
    "SlowDown",
    "PriorRequestNotComplete",
    "EC2ThrottledException",
];

/// Codes that mean the request timed out at AWS: nothing to learn, like a 5xx.
const TRANSIENT_CODES: &[&str] = &["RequestTimeout", "RequestTimeoutException"];

/// The DNS suffix of a region's partition (China has its own).
pub(super) fn dns_suffix(region: &str) -> &'static str {
    if region.starts_with("cn-") { "amazonaws.com.cn" } else { "amazonaws.com" }
}

/// What an account's credentials are made from.
enum Source {
    Pair(aws_credential_types::Credentials),
    Tooling(ToolingSource),
}

/// A source that gave no credentials: none configured there is the account's misconfiguration;
/// a source that did not answer (IMDS or STS unreachable) is asked again later.
fn credentials_error(err: aws_credential_types::provider::error::CredentialsError) -> ProviderError {
    use aws_credential_types::provider::error::CredentialsError;
    let message = format!("AWS credentials: {}", aws_sdk_efs::error::DisplayErrorContext(&err));
    match err {
        CredentialsError::CredentialsNotLoaded(_) | CredentialsError::InvalidConfiguration(_) => {
            ProviderError::misconfigured(message)
        }
        _ => ProviderError::RetryLater { message, after: RETRY_AFTER },
    }
}

/// How the clients wait and retry.
#[derive(Clone, Copy, Debug)]
pub struct Settings {
    /// The whole of one call, retries included.
    pub timeout: Duration,
    /// Attempts per call, the first included (the SDK's standard mode: 3).
    pub max_attempts: u32,
    /// The first retry waits a random share of this, doubling each time up to 20 s.
    pub initial_backoff: Duration,
}

impl Default for Settings {
    fn default() -> Self {
        Settings { timeout: Duration::from_secs(30), max_attempts: 3, initial_backoff: Duration::from_secs(1) }
    }
}

/// The SDK clients of one region.
#[derive(Clone)]
struct Regional {
    efs: aws_sdk_efs::Client,
    fsx: aws_sdk_fsx::Client,
}

pub struct Aws {
    endpoint: Option<String>,
    credentials: Result<SharedCredentialsProvider, String>,
    /// The credentials EC2 calls were last signed with, kept until five minutes before they
    /// expire (the SDK clients keep their own).
    signing: Mutex<Option<aws_credential_types::Credentials>>,
    settings: Settings,
    http: reqwest::Client,
    sdk_http: aws_sdk_efs::config::SharedHttpClient,
    regions: Mutex<HashMap<String, Regional>>,
    metrics: Arc<Metrics>,
    /// The calls sent, by purpose (AWS throttles rather than keep an hourly budget).
    budget: Arc<crate::provider::budget::AccountBudget>,
}

/// An SDK client with what every one of ours gets: the region, the credentials, our HTTP client,
/// the retries, the timeout and the endpoint override. A macro, as each SDK crate has builder
/// types of its own of the same shape.
macro_rules! sdk_client {
    ($sdk:ident, $aws:expr, $region:expr, $credentials:expr) => {{
        use $sdk::config::{BehaviorVersion, Region, retry::RetryConfig, timeout::TimeoutConfig};
        let settings = &$aws.settings;
        let mut config = $sdk::Config::builder()
            .behavior_version(BehaviorVersion::latest())
            .region(Region::new($region.to_owned()))
            .credentials_provider($credentials.clone())
            .http_client($aws.sdk_http.clone())
            .retry_config(
                RetryConfig::standard()
                    .with_max_attempts(settings.max_attempts)
                    .with_initial_backoff(settings.initial_backoff),
            )
            .timeout_config(TimeoutConfig::builder().operation_timeout(settings.timeout).build());
        if let Some(url) = &$aws.endpoint {
            config = config.endpoint_url(url);
        }
        $sdk::Client::from_conf(config.build())
    }};
}

impl Aws {
    /// `endpoint`: one base URL for EC2, EFS and FSx (the sim), or None for AWS's own.
    pub fn new(
        endpoint: Option<String>,
        credentials: Result<Credentials, String>,
        settings: Settings,
        metrics: Arc<Metrics>,
    ) -> Self {
        let source = credentials.map(|pair| Source::Pair(pair.sdk()));
        Aws::with_source(endpoint, source, settings, metrics)
    }

    /// `new` with the credentials of a source AWS tooling reads on the host.
    pub fn from_tooling(
        endpoint: Option<String>,
        source: ToolingSource,
        settings: Settings,
        metrics: Arc<Metrics>,
    ) -> Self {
        Aws::with_source(endpoint, Ok(Source::Tooling(source)), settings, metrics)
    }

    fn with_source(
        endpoint: Option<String>,
        source: Result<Source, String>,
        settings: Settings,
        metrics: Arc<Metrics>,
    ) -> Self {
        let http = reqwest::Client::builder()
            .timeout(settings.timeout)
            .connect_timeout(settings.timeout.min(Duration::from_secs(5)))
            .build()
            .unwrap_or_default();
        let sdk_http = aws_smithy_http_client::Builder::new()
            .tls_provider(tls::Provider::Rustls(tls::rustls_provider::CryptoMode::Ring))
            .build_https();
        Aws {
            endpoint: endpoint.map(|url| url.trim_end_matches('/').to_owned()).filter(|url| !url.is_empty()),
            credentials: source.map(|source| match source {
                Source::Pair(pair) => SharedCredentialsProvider::new(pair),
                Source::Tooling(tooling) => tooling.provider(sdk_http.clone()),
            }),
            signing: Mutex::new(None),
            settings,
            http,
            sdk_http,
            regions: Mutex::new(HashMap::new()),
            metrics,
            budget: Arc::default(),
        }
    }

    fn credentials(&self) -> ProviderResult<SharedCredentialsProvider> {
        self.credentials.clone().map_err(ProviderError::misconfigured)
    }

    /// The credentials to sign an EC2 call with: the ones kept while fresh, else the source's.
    async fn signing_credentials(&self) -> ProviderResult<aws_credential_types::Credentials> {
        use aws_credential_types::provider::ProvideCredentials;
        let fresh = |c: &aws_credential_types::Credentials| {
            c.expiry().is_none_or(|at| at > std::time::SystemTime::now() + Duration::from_secs(300))
        };
        let kept = self.signing.lock().unwrap_or_else(|e| e.into_inner()).clone();
        if let Some(kept) = kept.filter(fresh) {
            return Ok(kept);
        }
        let loaded = self.credentials()?.provide_credentials().await.map_err(credentials_error)?;
        *self.signing.lock().unwrap_or_else(|e| e.into_inner()) = Some(loaded.clone());
        Ok(loaded)
    }

    /// The EFS and FSx clients of `region`, made on first use.
    fn regional(&self, region: &str) -> ProviderResult<Regional> {
        let credentials = self.credentials()?;
        let mut regions = self.regions.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(regional) = regions.get(region) {
            return Ok(regional.clone());
        }
        let regional =
            Regional { efs: self.efs_client(region, &credentials), fsx: self.fsx_client(region, &credentials) };
        regions.insert(region.to_owned(), regional.clone());
        Ok(regional)
    }

    fn efs_client(&self, region: &str, credentials: &SharedCredentialsProvider) -> aws_sdk_efs::Client {
        sdk_client!(aws_sdk_efs, self, region, credentials)
    }

    fn fsx_client(&self, region: &str, credentials: &SharedCredentialsProvider) -> aws_sdk_fsx::Client {
        sdk_client!(aws_sdk_fsx, self, region, credentials)
    }

    fn count(&self, service: &str, operation: &str, status: &str, started: std::time::Instant) {
        self.metrics.provider_call("aws", &format!("{service}.{operation}"), status, started.elapsed());
        self.budget.count(chrono::Utc::now().timestamp(), crate::provider::fence::purpose());
    }

    /// The account's calls by purpose, shared with the registry that shows them to operators.
    pub fn budget(&self) -> Arc<crate::provider::budget::AccountBudget> {
        self.budget.clone()
    }
}

/// The one error table of the AWS clients. `status` None: no answer came.
/// - a throttling code (or 429): nothing was done, retry later;
/// - a 5xx or a request timeout, or no answer: retry later, unless the call acts (a create, an
///   authorize) — then it may have acted, and the outcome is unknown;
/// - any other answer: refused, `AWS <Code>: <message>`.
pub(super) fn classify(status: Option<u16>, code: Option<&str>, message: &str, acts: bool) -> ProviderError {
    let text = match code {
        Some(code) => format!("{AWS_CODE_PREFIX}{code}: {message}"),
        None => format!("AWS: {message}"),
    };
    if code.is_some_and(|c| THROTTLING_CODES.contains(&c)) || status == Some(429) {
        return ProviderError::RetryLater { message: text, after: RETRY_AFTER };
    }
    let transient = code.is_some_and(|c| TRANSIENT_CODES.contains(&c));
    match status {
        Some(s) if s < 500 && !transient => match code {
            Some(code) => ProviderError::aws_refused(s, code, message),
            None => ProviderError::refused(s, text),
        },
        _ if acts => ProviderError::Unknown { message: text },
        _ => ProviderError::RetryLater { message: text, after: RETRY_AFTER },
    }
}

/// An answer that never came (or could not be read).
pub(super) fn lost(acts: bool, message: &str) -> ProviderError {
    classify(None, None, message, acts)
}

/// An SDK error in the table above; the service error's code and message when there is one.
pub(super) fn sdk_error<E>(
    err: &aws_sdk_efs::error::SdkError<E, aws_sdk_efs::config::http::HttpResponse>,
    acts: bool,
) -> ProviderError
where
    E: aws_sdk_efs::error::ProvideErrorMetadata + std::error::Error + 'static,
{
    use aws_sdk_efs::error::{DisplayErrorContext, SdkError};
    match err {
        SdkError::ServiceError(context) => {
            let status = context.raw().status().as_u16();
            let meta = context.err();
            classify(Some(status), meta.code(), meta.message().unwrap_or_default(), acts)
        }
        SdkError::ConstructionFailure(_) => {
            ProviderError::misconfigured(format!("cannot build the AWS request: {}", DisplayErrorContext(err)))
        }
        _ => lost(acts, &format!("AWS did not answer: {}", DisplayErrorContext(err))),
    }
}

/// The service error's code, if the SDK error is one.
pub(super) fn sdk_code<E>(
    err: &aws_sdk_efs::error::SdkError<E, aws_sdk_efs::config::http::HttpResponse>,
) -> Option<&str>
where
    E: aws_sdk_efs::error::ProvideErrorMetadata,
{
    err.as_service_error().and_then(|e| e.code())
}

/// Shared filesystems: EFS (NFS, with one mount target per zone) and FSx for Lustre.
impl Aws {
    /// Encrypted, with `creation_token` (the provider name) as its idempotency key. A token held
    /// already (ours after a lost answer, or anyone's) is `FileSystemAlreadyExists`, with that
    /// file system's id in the message: look it up and check its tags.
    pub async fn efs_create(&self, region: &str, creation_token: &str, tags: &[Tag]) -> ProviderResult<EfsFileSystem> {
        self.sdk_efs_create(region, creation_token, tags).await
    }

    /// None when EFS has no such file system.
    pub async fn efs_get(&self, region: &str, file_system_id: &str) -> ProviderResult<Option<EfsFileSystem>> {
        self.sdk_efs_get(region, file_system_id).await
    }

    pub async fn efs_find_by_token(&self, region: &str, creation_token: &str) -> ProviderResult<Option<EfsFileSystem>> {
        self.sdk_efs_find_by_token(region, creation_token).await
    }

    /// False when it was already gone; `FileSystemInUse` while a mount target remains.
    pub async fn efs_delete(&self, region: &str, file_system_id: &str) -> ProviderResult<bool> {
        self.sdk_efs_delete(region, file_system_id).await
    }

    pub async fn mount_target_create(
        &self,
        region: &str,
        file_system_id: &str,
        subnet_id: &str,
        security_group_ids: &[String],
    ) -> ProviderResult<MountTarget> {
        self.sdk_mount_target_create(region, file_system_id, subnet_id, security_group_ids).await
    }

    /// Empty when the file system has none, or is gone.
    pub async fn mount_targets_of(&self, region: &str, file_system_id: &str) -> ProviderResult<Vec<MountTarget>> {
        self.sdk_mount_targets_of(region, file_system_id).await
    }

    /// False when it was already gone.
    pub async fn mount_target_delete(&self, region: &str, mount_target_id: &str) -> ProviderResult<bool> {
        self.sdk_mount_target_delete(region, mount_target_id).await
    }

    /// A token reused with the same parameters answers the earlier file system (a success that
    /// does not prove we made it: check the tags).
    pub async fn lustre_create(&self, region: &str, request: &LustreCreate<'_>) -> ProviderResult<LustreFileSystem> {
        self.sdk_lustre_create(region, request).await
    }

    /// None when FSx has no such file system.
    pub async fn lustre_get(&self, region: &str, file_system_id: &str) -> ProviderResult<Option<LustreFileSystem>> {
        self.sdk_lustre_get(region, file_system_id).await
    }

    /// Every Lustre file system tagged `Name=name` (FSx has no filter: this lists them all).
    pub async fn lustre_find_by_name(&self, region: &str, name: &str) -> ProviderResult<Vec<LustreFileSystem>> {
        self.sdk_lustre_find_by_name(region, name).await
    }

    /// Without a final backup; false when it was already gone.
    pub async fn lustre_delete(&self, region: &str, file_system_id: &str) -> ProviderResult<bool> {
        self.sdk_lustre_delete(region, file_system_id).await
    }

    /// Every EFS file system of the region (not yet deleted), in pages of 100, EFS's largest.
    pub async fn efs_list(&self, region: &str) -> ProviderResult<Vec<EfsFileSystem>> {
        self.sdk_efs_list(region).await
    }

    /// Every Lustre file system of the region, in the pages FSx gives.
    pub async fn lustre_list(&self, region: &str) -> ProviderResult<Vec<LustreFileSystem>> {
        self.sdk_lustre_list(region).await
    }
}

#[cfg(test)]
mod tests;
