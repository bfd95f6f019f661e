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
    /// The provider refused the request (4xx): what it was, read where its answer was (`code`),
    /// and its own words (`message`, for people).
    Refused { status: u16, code: Refusal, message: String },
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

    /// The AWS error code of a refusal, for the clients' own use (`InvalidVpcID.NotFound` …):
    /// every AWS client's message reads `AWS <Code>: <the service's words>`. Callers above the
    /// clients decide on `Refused::code` (`tests/it/layers.rs` holds them to it).
    pub fn aws_code(&self) -> Option<&str> {
        let rest = self.message().strip_prefix(AWS_CODE_PREFIX)?;
        let (code, _) = rest.split_once(':')?;
        (!code.is_empty() && code.chars().all(|c| c.is_ascii_alphanumeric() || c == '.')).then_some(code)
    }

    /// An AWS refusal with its code, as the AWS clients write one (`AWS <Code>: <words>`).
    pub fn aws_refused(status: u16, code: &str, words: &str) -> ProviderError {
        let message = format!("{AWS_CODE_PREFIX}{code}: {words}");
        ProviderError::Refused { status, code: Refusal::of_aws(code), message }
    }

    /// A refusal in the provider's words, none a decision tells apart.
    pub fn refused(status: u16, message: impl Into<String>) -> ProviderError {
        ProviderError::Refused { status, code: Refusal::Other, message: message.into() }
    }

    /// The refusal this is; None when it is not one.
    pub fn refusal(&self) -> Option<Refusal> {
        match self {
            ProviderError::Refused { code, .. } => Some(*code),
            _ => None,
        }
    }
}

/// What a refusal was, told apart where the provider's answer is read (its code at AWS, its
/// documented words at DigitalOcean), so that no decision reads a message or compares a code.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// None a decision tells apart: the provider said no.
    Other,
    /// DigitalOcean's `Droplet already has a pending event.`: one action at a time per
    /// Droplet; ask again soon.
    PendingEvent,
    /// DigitalOcean's `This volume is already attached`.
    AlreadyAttached,
    /// DigitalOcean's `Attachment not found`: a detach of a volume that is not attached there.
    AttachmentNotFound,
    /// AWS `InvalidPermission.Duplicate`: the group has the rule already.
    RuleExists,
    /// AWS `InvalidPermission.NotFound`: the group does not have the rule.
    RuleMissing,
    /// Held already: a creation token, a name or a zone's mount target (AWS
    /// `FileSystemAlreadyExists`, `InvalidGroup.Duplicate`, `MountTargetConflict`); look it up.
    Taken,
    /// Still used by something that goes away in time (AWS `DependencyViolation`,
    /// `FileSystemInUse`: a machine, a mount target, a lingering interface).
    InUse,
    /// Not in a state for this yet (AWS `IncorrectFileSystemLifeCycleState`).
    NotYet,
}

impl Refusal {
    /// A DigitalOcean refusal, by the API's documented words.
    pub(in crate::provider) fn of_digitalocean(message: &str) -> Refusal {
        let words = message.to_ascii_lowercase();
        [
            ("pending event", Refusal::PendingEvent),
            ("already attached", Refusal::AlreadyAttached),
            ("attachment not found", Refusal::AttachmentNotFound),
        ]
        .into_iter()
        .find_map(|(said, refusal)| words.contains(said).then_some(refusal))
        .unwrap_or(Refusal::Other)
    }

    /// An AWS refusal, by its error code.
    pub fn of_aws(code: &str) -> Refusal {
        match code {
            "InvalidPermission.Duplicate" => Refusal::RuleExists,
            "InvalidPermission.NotFound" => Refusal::RuleMissing,
            "FileSystemAlreadyExists" | "InvalidGroup.Duplicate" | "MountTargetConflict" => Refusal::Taken,
            "DependencyViolation" | "FileSystemInUse" => Refusal::InUse,
            "IncorrectFileSystemLifeCycleState" => Refusal::NotYet,
            _ => Refusal::Other,
        }
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
        let refused = Refusal::of_digitalocean;
        assert_eq!(refused("Droplet already has a pending event."), Refusal::PendingEvent);
        assert_eq!(refused("This volume is already attached"), Refusal::AlreadyAttached);
        assert_eq!(refused("Attachment not found"), Refusal::AttachmentNotFound);
        assert_eq!(refused("a volume can only be resized to a larger size"), Refusal::Other);
        let lost = ProviderError::Unknown { message: "pending event".into() };
        assert_eq!(lost.refusal(), None, "only a refusal is one");
    }
}
