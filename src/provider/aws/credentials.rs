//! Where an AWS account's credentials come from: a key pair behind `env:NAME` or `file:/path`,
//! or one of the sources AWS tooling itself reads on a host (`aws:environment`,
//! `aws:profile[/NAME]`, `aws:instance-metadata`, `aws:web-identity`), through the SDK's own
//! providers (aws-config, without its default HTTPS client or SSO: they use our client).
use aws_config::provider_config::ProviderConfig;
use aws_credential_types::provider::SharedCredentialsProvider;

/// An access key pair. The account's secret (behind `env:NAME` or `file:/path`) is either
/// `ACCESS_KEY_ID:SECRET_ACCESS_KEY` (optionally `:SESSION_TOKEN` after it), or the JSON that
/// `aws sts` and `credential_process` use: `{"AccessKeyId": …, "SecretAccessKey": …,
/// "SessionToken": …}` (the token optional).
#[derive(Clone, PartialEq, Eq)]
pub struct Credentials {
    pub access_key_id: String,
    pub secret_access_key: String,
    pub session_token: Option<String>,
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Credentials").field("access_key_id", &self.access_key_id).finish_non_exhaustive()
    }
}

impl Credentials {
    pub fn parse(secret: &str) -> Result<Credentials, String> {
        let secret = secret.trim();
        if secret.starts_with('{') {
            #[derive(serde::Deserialize)]
            #[serde(rename_all = "PascalCase")]
            struct Pair {
                access_key_id: String,
                secret_access_key: String,
                session_token: Option<String>,
            }
            let pair: Pair = serde_json::from_str(secret)
                .map_err(|e| format!("the AWS credential is not the expected JSON: {e}"))?;
            return Credentials::checked(pair.access_key_id, pair.secret_access_key, pair.session_token);
        }
        let mut parts = secret.splitn(3, ':');
        let (Some(id), Some(key)) = (parts.next(), parts.next()) else {
            return Err("the AWS credential is not ACCESS_KEY_ID:SECRET_ACCESS_KEY".into());
        };
        Credentials::checked(id.to_owned(), key.to_owned(), parts.next().map(str::to_owned))
    }

    fn checked(id: String, key: String, token: Option<String>) -> Result<Credentials, String> {
        if id.trim().is_empty() || key.trim().is_empty() {
            return Err("the AWS credential has an empty access key id or secret".into());
        }
        let token = token.map(|t| t.trim().to_owned()).filter(|t| !t.is_empty());
        Ok(Credentials {
            access_key_id: id.trim().to_owned(),
            secret_access_key: key.trim().to_owned(),
            session_token: token,
        })
    }

    /// What a `sim` account signs with (the sim checks the form, not the signature).
    pub fn sim(account_id: &str) -> Credentials {
        Credentials { access_key_id: format!("SIM{account_id}"), secret_access_key: "sim".into(), session_token: None }
    }

    pub(super) fn sdk(&self) -> aws_credential_types::Credentials {
        aws_credential_types::Credentials::new(
            &self.access_key_id,
            &self.secret_access_key,
            self.session_token.clone(),
            None,
            "vps-graph",
        )
    }
}

/// A source of credentials AWS tooling reads on a host, named by an `aws:` credential reference.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ToolingSource {
    /// `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY` and `AWS_SESSION_TOKEN` of the process.
    Environment,
    /// A profile of the shared credentials and config files (`~/.aws/credentials`,
    /// `~/.aws/config`, or where `AWS_SHARED_CREDENTIALS_FILE` and `AWS_CONFIG_FILE` say): the
    /// one named, or `AWS_PROFILE`'s, or `default`.
    Profile(Option<String>),
    /// The instance metadata service (IMDSv2) of the EC2 machine the service runs on.
    InstanceMetadata,
    /// A web identity token exchanged at STS (`AWS_WEB_IDENTITY_TOKEN_FILE`, `AWS_ROLE_ARN`, as
    /// on EKS with IAM roles for service accounts).
    WebIdentity,
}

impl ToolingSource {
    /// The source an `aws:` reference names; None for any other reference.
    pub fn parse(reference: &str) -> Option<Result<ToolingSource, String>> {
        let named = reference.strip_prefix("aws:")?;
        Some(match named.split_once('/') {
            None if named == "environment" => Ok(ToolingSource::Environment),
            None if named == "profile" => Ok(ToolingSource::Profile(None)),
            Some(("profile", name)) if !name.is_empty() => Ok(ToolingSource::Profile(Some(name.to_owned()))),
            None if named == "instance-metadata" => Ok(ToolingSource::InstanceMetadata),
            None if named == "web-identity" => Ok(ToolingSource::WebIdentity),
            _ => Err(format!(
                "unknown AWS credential source {reference:?}: aws:environment, aws:profile, aws:profile/NAME, aws:instance-metadata or aws:web-identity"
            )),
        })
    }

    /// The SDK's provider of this source, calling out (IMDS, STS) over `http`.
    pub(super) fn provider(&self, http: aws_sdk_efs::config::SharedHttpClient) -> SharedCredentialsProvider {
        use aws_config::{environment, imds, profile, web_identity_token};
        // STS is asked in the region the host says, else in us-east-1 (its global endpoint's).
        let region = std::env::var("AWS_REGION").or_else(|_| std::env::var("AWS_DEFAULT_REGION")).ok();
        let region = aws_config::Region::new(region.unwrap_or_else(|| "us-east-1".to_owned()));
        let config = ProviderConfig::without_region().with_http_client(http).with_region(Some(region));
        match self {
            ToolingSource::Environment => {
                SharedCredentialsProvider::new(environment::EnvironmentVariableCredentialsProvider::new())
            }
            ToolingSource::Profile(name) => {
                let mut builder = profile::ProfileFileCredentialsProvider::builder().configure(&config);
                if let Some(name) = name {
                    builder = builder.profile_name(name);
                }
                SharedCredentialsProvider::new(builder.build())
            }
            ToolingSource::InstanceMetadata => SharedCredentialsProvider::new(
                imds::credentials::ImdsCredentialsProvider::builder().configure(&config).build(),
            ),
            ToolingSource::WebIdentity => SharedCredentialsProvider::new(
                web_identity_token::WebIdentityTokenCredentialsProvider::builder().configure(&config).build(),
            ),
        }
    }
}
