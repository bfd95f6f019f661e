//! What the decision table tests share: the four ways a provider call can end.
use std::time::Duration;

use super::Next;
use crate::provider::{ProviderError, ProviderResult};

/// Answered (with `made`), refused, rate-limited, and unknown (the answer lost: a timeout, a 5xx,
/// a dropped connection).
pub fn outcomes<T: Clone>(made: T) -> [(&'static str, ProviderResult<T>); 4] {
    [
        ("answered", Ok(made)),
        ("refused", Err(ProviderError::refused(422, "the provider said no"))),
        (
            "rate-limited",
            Err(ProviderError::RetryLater { message: "slow down".into(), after: Duration::from_secs(30) }),
        ),
        ("unknown", Err(ProviderError::Unknown { message: "no answer within 30 s".into() })),
    ]
}

/// Looked at again after a backoff that grows with a provider in trouble.
pub fn backed_off(next: Next) -> bool {
    matches!(next, Next::Backoff(_))
}
