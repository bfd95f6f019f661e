//! What a provider call can end in besides success, and the refusals callers tell apart.
use std::time::Duration;

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
    /// The account cannot be used (no credential): nothing was sent. `message` says why, for
    /// the operator alone (it names credential variables and paths).
    Misconfigured { message: String },
}

/// What a tenant reads of a misconfigured account; the operator reads why in the log.
pub const MISCONFIGURED: &str = "the provider account cannot be used as it is configured: the operator is told why";

impl ProviderError {
    /// What the resource's `message` says: the provider's words, and nothing of the account's
    /// configuration.
    pub fn message(&self) -> &str {
        match self {
            ProviderError::RetryLater { message, .. }
            | ProviderError::Unknown { message }
            | ProviderError::Refused { message, .. } => message,
            ProviderError::Misconfigured { .. } => MISCONFIGURED,
        }
    }

    /// An account that cannot be used as configured: why is logged for the operator here, and
    /// kept out of every tenant-visible message.
    pub fn misconfigured(message: String) -> ProviderError {
        tracing::warn!(target: "vps_graph::provider", why = %message, "a provider account cannot be used as configured");
        ProviderError::Misconfigured { message }
    }

    /// What an operator is told: a misconfiguration's own words, else the message.
    pub fn detail(&self) -> &str {
        match self {
            ProviderError::Misconfigured { message } => message,
            other => other.message(),
        }
    }

    /// The AWS error code of a refusal (`FileSystemAlreadyExists`, `InvalidGroup.Duplicate`,
    /// `DependencyViolation`, `FileSystemInUse`, `FileSystemNotFound` …). The AWS clients write
    /// every error message as `AWS <Code>: <the service's words>`, so the code survives in the
    /// message without a new field.
    pub fn aws_code(&self) -> Option<&str> {
        let rest = self.message().strip_prefix(AWS_CODE_PREFIX)?;
        let (code, _) = rest.split_once(':')?;
        (!code.is_empty() && code.chars().all(|c| c.is_ascii_alphanumeric() || c == '.')).then_some(code)
    }
}

/// The refusals of DigitalOcean's actions a reconciler decides on, told apart in one place by
/// the API's documented words, so that no decision reads a message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// `Droplet already has a pending event.`: one action at a time per Droplet; ask again soon.
    PendingEvent,
    /// `This volume is already attached`.
    AlreadyAttached,
    /// `Attachment not found`: a detach of a volume that is not attached there.
    AttachmentNotFound,
}

impl ProviderError {
    /// The refusal this is, when it is one a decision tells apart.
    pub fn refusal(&self) -> Option<Refusal> {
        let ProviderError::Refused { message, .. } = self else { return None };
        let words = message.to_ascii_lowercase();
        [
            ("pending event", Refusal::PendingEvent),
            ("already attached", Refusal::AlreadyAttached),
            ("attachment not found", Refusal::AttachmentNotFound),
        ]
        .into_iter()
        .find_map(|(said, refusal)| words.contains(said).then_some(refusal))
    }
}

/// How an AWS client's error messages start, before the code (see `ProviderError::aws_code`).
pub const AWS_CODE_PREFIX: &str = "AWS ";

pub type ProviderResult<T> = Result<T, ProviderError>;

#[cfg(test)]
mod refusal_tests {
    use super::*;

    #[test]
    fn digitaloceans_action_refusals_are_told_apart_by_their_documented_words() {
        let refused = |message: &str| ProviderError::Refused { status: 422, message: message.into() };
        assert_eq!(refused("Droplet already has a pending event.").refusal(), Some(Refusal::PendingEvent));
        assert_eq!(refused("This volume is already attached").refusal(), Some(Refusal::AlreadyAttached));
        assert_eq!(refused("Attachment not found").refusal(), Some(Refusal::AttachmentNotFound));
        assert_eq!(refused("a volume can only be resized to a larger size").refusal(), None);
        let lost = ProviderError::Unknown { message: "pending event".into() };
        assert_eq!(lost.refusal(), None, "only a refusal is one");
    }
}
