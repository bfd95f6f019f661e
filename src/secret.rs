//! A value that must never be printed: the static operator token, a provider's API token or
//! key. `Debug` and `Display` show `[redacted]`, so a config or a client logged whole, or a
//! `?field` in a trace, never carries it; `expose` is the one way to the text, where it is sent.
use std::fmt;

#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    pub fn new(value: impl Into<String>) -> Secret {
        Secret(value.into())
    }

    pub fn expose(&self) -> &str {
        &self.0
    }

    /// Whether `sent` is this secret, in time that does not depend on where they first differ
    /// (only on the length), so a client cannot find it a byte at a time.
    pub fn matches(&self, sent: &str) -> bool {
        let (ours, theirs) = (self.0.as_bytes(), sent.as_bytes());
        ours.len() == theirs.len() && ours.iter().zip(theirs).fold(0u8, |diff, (a, b)| diff | (a ^ b)) == 0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret([redacted])")
    }
}

impl fmt::Display for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("[redacted]")
    }
}

impl std::str::FromStr for Secret {
    type Err = std::convert::Infallible;

    fn from_str(s: &str) -> Result<Secret, Self::Err> {
        Ok(Secret::new(s))
    }
}

impl From<&str> for Secret {
    fn from(value: &str) -> Secret {
        Secret::new(value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_secret_is_redacted_in_debug_and_display() {
        let secret = Secret::new("vpsg_do-not-print-me");
        let printed = format!("{secret:?} {secret} {:?}", Some(&secret));
        assert!(!printed.contains("do-not-print-me"), "{printed}");
        assert_eq!(secret.expose(), "vpsg_do-not-print-me");
    }

    #[test]
    fn a_secret_matches_itself_only() {
        let secret = Secret::new("metrics-token-1");
        assert!(secret.matches("metrics-token-1"));
        for other in ["metrics-token-2", "metrics-token-", "metrics-token-11", "", "Metrics-token-1"] {
            assert!(!secret.matches(other), "{other}");
        }
    }
}
