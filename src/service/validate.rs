//! Input rules, written as the seeds' patterns and ranges. The service checks them itself (the
//! GraphQL types only carry the shape), and a refused call writes nothing.
use std::sync::LazyLock;

use regex::Regex;
use serde_json::json;

use crate::error::{Error, Result};
use crate::ids;

macro_rules! pattern {
    ($name:ident, $re:expr) => {
        static $name: LazyLock<Regex> = LazyLock::new(|| Regex::new($re).expect("valid pattern"));
    };
}

pattern!(TENANT_ID, r"^[A-Za-z0-9._:-]{1,128}$");
pattern!(NAME, r"^[a-z]([-a-z0-9]{0,40}[a-z0-9])?$");
pattern!(REGION, r"^[a-z][a-z0-9-]{0,38}[a-z0-9]$");
pattern!(ZONE, r"^[a-z][a-z0-9-]{0,38}[a-z0-9]$");
pattern!(QUOTA_RESOURCE, r"^[a-z][A-Za-z0-9]{0,63}$");
pattern!(PERMISSION, r"^(\*|[a-z][a-z-]*)(:(\*|[a-z][a-z-]*)){0,3}$");
pattern!(VPC_ID, r"^vpc-[0-9a-f]{8,17}$");
pattern!(SLUG, r"^[a-z0-9][a-z0-9._-]{0,63}$");
pattern!(CREDENTIAL_REF, r"^(env:[A-Za-z_][A-Za-z0-9_]{0,127}|file:/[^\x00]{1,1023})$");

fn matches(re: &Regex, field: &str, value: &str, rule: &str) -> Result<()> {
    if re.is_match(value) {
        Ok(())
    } else {
        Err(Error::invalid_input(field, format!("{field} {value:?} {rule}"))
            .with_details(json!({ "field": field, "pattern": re.as_str() })))
    }
}

pub fn tenant_id(field: &str, value: &str) -> Result<()> {
    matches(&TENANT_ID, field, value, "must be 1 to 128 of A-Z a-z 0-9 . _ : -")
}

pub fn idempotency_key(value: &str) -> Result<()> {
    matches(&TENANT_ID, "idempotencyKey", value, "must be 1 to 128 of A-Z a-z 0-9 . _ : -")
}

pub fn name(field: &str, value: &str) -> Result<()> {
    matches(&NAME, field, value, "must be lower-case letters, digits and dashes, start with a letter, at most 42")
}

pub fn region(field: &str, value: &str) -> Result<()> {
    matches(&REGION, field, value, "is not a region slug")
}

pub fn zone(field: &str, value: &str) -> Result<()> {
    matches(&ZONE, field, value, "is not a zone name")
}

pub fn quota_resource(field: &str, value: &str) -> Result<()> {
    matches(&QUOTA_RESOURCE, field, value, "is not a quota resource name (like diskGiB)")
}

pub fn permission(field: &str, value: &str) -> Result<()> {
    matches(&PERMISSION, field, value, "is not a permission pattern (like compute:volumes:read or compute:*)")
}

/// A provider's size or image slug, e.g. `s-1vcpu-1gb`, `ubuntu-24-04-x64`.
pub fn vpc_id(field: &str, value: &str) -> Result<()> {
    matches(&VPC_ID, field, value, "is not an AWS VPC id (vpc- and 8 or 17 hex digits)")
}

pub fn slug(field: &str, value: &str) -> Result<()> {
    matches(&SLUG, field, value, "must be 1 to 64 of a-z 0-9 . _ - starting with a letter or digit")
}

/// `env:VARIABLE` or `file:/path` on any account; on an AWS account (`aws`) also a source AWS
/// tooling reads on the host (`aws:environment`, `aws:profile[/NAME]`, `aws:instance-metadata`,
/// `aws:web-identity`).
pub fn credential_ref(field: &str, value: &str, aws: bool) -> Result<()> {
    match crate::provider::aws::ToolingSource::parse(value) {
        Some(Ok(_)) if aws => Ok(()),
        Some(Ok(_)) => Err(Error::invalid_input(
            field,
            format!("{field} {value:?} names an AWS credential source: only an AWS account takes one"),
        )
        .with_details(json!({ "field": field, "reason": "awsOnly" }))),
        Some(Err(message)) => Err(Error::invalid_input(field, message).with_details(json!({ "field": field }))),
        None => {
            matches(&CREDENTIAL_REF, field, value, "must be env:VARIABLE, file:/absolute/path, or on AWS aws:SOURCE")
        }
    }
}

pub fn id(field: &str, prefix: &str, value: &str) -> Result<()> {
    if ids::is_id(prefix, value) {
        Ok(())
    } else {
        Err(Error::invalid_input(field, format!("{field} {value:?} is not a {prefix}_ id"))
            .with_details(json!({ "field": field, "pattern": format!("^{prefix}_[0-9a-hjkmnp-tv-z]{{26,52}}$") })))
    }
}

pub fn max_len(field: &str, value: &str, max: usize) -> Result<()> {
    if value.chars().count() <= max {
        Ok(())
    } else {
        Err(Error::invalid_input(field, format!("{field} is longer than {max} characters"))
            .with_details(json!({ "field": field, "max": max })))
    }
}

pub fn range(field: &str, value: i64, min: i64, max: i64) -> Result<()> {
    if (min..=max).contains(&value) {
        Ok(())
    } else {
        Err(Error::invalid_input(field, format!("{field} must be {min} to {max}, not {value}"))
            .with_details(json!({ "field": field, "min": min, "max": max })))
    }
}

pub fn url(field: &str, value: &str) -> Result<()> {
    let ok = (value.starts_with("https://") || value.starts_with("http://"))
        && value.len() <= 512
        && !value.contains(char::is_whitespace);
    if ok { Ok(()) } else { Err(Error::invalid_input(field, format!("{field} must be an http(s) URL"))) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seed_patterns_accept_and_refuse() {
        assert!(name("name", "pg-data").is_ok());
        assert!(name("name", "Pg").is_err());
        assert!(name("name", "a-").is_err());
        assert!(name("name", &"a".repeat(43)).is_err());
        assert!(tenant_id("tenantId", "ten_01jz.x:y-z").is_ok());
        assert!(tenant_id("tenantId", "bad tenant").is_err());
        assert!(region("region", "nyc3").is_ok());
        assert!(region("region", "3nyc").is_err());
        assert!(permission("permission", "compute:volumes:read").is_ok());
        assert!(permission("permission", "compute:*").is_ok());
        assert!(permission("permission", "*").is_ok());
        assert!(permission("permission", "compute::read").is_err());
        assert!(credential_ref("credentialRef", "env:DIGITALOCEAN_TOKEN", false).is_ok());
        assert!(credential_ref("credentialRef", "dop_v1_secret", false).is_err());
        assert!(range("sizeGiB", 0, 1, 16384).is_err());
    }
}
