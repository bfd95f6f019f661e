//! Who sent a request: the bearer secret from `Authorization` (or a WebSocket's
//! `connection_init`), authenticated once into the `Caller` the resolvers see.
use axum::http::{HeaderMap, header};

use super::HttpState;
use crate::graphql::Caller;

pub fn header_token(headers: &HeaderMap) -> Option<String> {
    headers.get(header::AUTHORIZATION).and_then(|v| v.to_str().ok()).map(bearer)
}
/// `Bearer <secret>` → `<secret>`; anything else is taken as the secret itself (and fails).
pub fn bearer(value: &str) -> String {
    let value = value.trim();
    match value.split_once(' ') {
        Some((scheme, secret)) if scheme.eq_ignore_ascii_case("bearer") => secret.trim().to_owned(),
        _ => value.to_owned(),
    }
}

pub async fn caller(state: &HttpState, token: Option<String>) -> Caller {
    match token {
        None => Caller::Anonymous,
        Some(secret) => match state.services.authenticate(&secret).await {
            Ok(actor) => Caller::Authenticated(actor),
            Err(err) => Caller::Rejected(err),
        },
    }
}
