//! API tokens: issued by operators with grants, returned once, stored as a SHA-256 hash, and
//! revoked by id. `authenticate` turns a bearer secret into the request's `Actor`.
use chrono::Utc;
use sea_orm::ConnectionTrait;
use serde_json::json;
use sha2::{Digest, Sha256};

use super::tenants::find_tenant;
use super::validate;
use crate::authz::{Actor, Grant, OPERATOR_SCOPE};
use crate::error::{Code, Error, Result};
use crate::ids;
use crate::services::Services;
use crate::store::entity::api_token;
use crate::store::idempotency::hex;
use crate::store::outbox::NewEvent;
use crate::store::tokens::{self as store, NewToken};

const SECRET_PREFIX: &str = "vpsg_";
const MAX_GRANTS: usize = 64;
/// The kinds a single-resource scope may name.
const RESOURCE_KINDS: &[&str] =
    &["provider-volume", "provider-snapshot", "provider-address", "network", "filesystem", "instance", "pool"];

pub struct TokenIssue {
    pub tenant_id: Option<String>,
    pub name: Option<String>,
    pub grants: Vec<Grant>,
}

#[derive(Clone, Debug)]
pub struct Token {
    pub token: api_token::Model,
    pub grants: Vec<Grant>,
}

pub fn hash_secret(secret: &str) -> String {
    hex(&Sha256::digest(secret.as_bytes()))
}

fn new_secret() -> Result<String> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).map_err(|e| Error::internal(format!("no randomness: {e}")))?;
    Ok(format!("{SECRET_PREFIX}{}", hex(&bytes)))
}

fn token_view(t: &Token) -> serde_json::Value {
    let grants: Vec<_> = t.grants.iter().map(|g| json!({ "permission": g.permission, "scope": g.scope })).collect();
    json!({ "id": t.token.id, "tenantId": t.token.tenant_id, "name": t.token.name, "grants": grants, "createdAt": t.token.created_at, "revokedAt": t.token.revoked_at })
}

impl Services {
    /// Issues a token and returns it with its secret, which is never shown again.
    pub async fn token_issue(&self, actor: &Actor, input: TokenIssue) -> Result<(Token, String)> {
        actor.require_operator()?;
        if input.grants.is_empty() || input.grants.len() > MAX_GRANTS {
            return Err(Error::invalid_input("grants", format!("a token has 1 to {MAX_GRANTS} grants")));
        }
        let name = input.name.unwrap_or_default();
        validate::max_len("name", &name, 128)?;
        let txn = self.begin().await?;
        if let Some(tenant_id) = &input.tenant_id {
            validate::tenant_id("tenantId", tenant_id)?;
            find_tenant(&txn, tenant_id).await?;
        }
        for grant in &input.grants {
            check_grant(&txn, input.tenant_id.as_deref(), grant).await?;
        }
        let secret = new_secret()?;
        let new = NewToken {
            id: ids::new_id(ids::TOKEN),
            tenant_id: input.tenant_id.as_deref(),
            name,
            secret_hash: hash_secret(&secret),
        };
        let token = store::insert(&txn, new, Utc::now()).await?;
        let mut grants: Vec<Grant> = Vec::new();
        for grant in input.grants {
            if grants.contains(&grant) {
                continue;
            }
            store::insert_grant(&txn, &token.id, &grant.permission, &grant.scope).await?;
            grants.push(grant);
        }
        let issued = Token { token, grants };
        tracing::info!(token = %issued.token.id, tenant = ?issued.token.tenant_id, grants = issued.grants.len(), "token issued");
        self.commit(txn, vec![token_event("token.issued", &issued)]).await?;
        Ok((issued, secret))
    }

    pub async fn token_revoke(&self, actor: &Actor, token_id: &str) -> Result<Token> {
        actor.require_operator()?;
        validate::id("tokenId", ids::TOKEN, token_id)?;
        let txn = self.begin().await?;
        // Conditional, so two revokes racing publish one event.
        let changed = store::revoke(&txn, token_id, Utc::now()).await?;
        let token = store::find(&txn, token_id).await?.ok_or_else(|| Error::not_found("token", token_id))?;
        let revoked = load_grants(&txn, token).await?;
        if changed == 0 {
            drop(txn);
            return Ok(revoked);
        }
        tracing::info!(token = token_id, tenant = ?revoked.token.tenant_id, "token revoked");
        self.commit(txn, vec![token_event("token.revoked", &revoked)]).await?;
        Ok(revoked)
    }

    /// Tokens (never their secrets), of one tenant or, with None, the operator tokens.
    pub async fn token_list(&self, actor: &Actor, tenant_id: Option<&str>) -> Result<Vec<Token>> {
        actor.require_operator()?;
        let tokens = store::list(&self.db, tenant_id).await?;
        let ids: Vec<String> = tokens.iter().map(|t| t.id.clone()).collect();
        let grants = store::grants_of_many(&self.db, ids).await?;
        Ok(tokens
            .into_iter()
            .map(|token| {
                let grants = grants
                    .iter()
                    .filter(|g| g.token_id == token.id)
                    .map(|g| Grant::new(&g.permission, &g.scope))
                    .collect();
                Token { token, grants }
            })
            .collect())
    }

    /// UNAUTHENTICATED when the actor's token has been revoked since it authenticated (long-lived
    /// WebSocket connections check this for every new subscription).
    pub async fn ensure_active(&self, actor: &Actor) -> Result<()> {
        let Some(token_id) = &actor.token_id else { return Ok(()) };
        let active = store::find_active(&self.db, token_id).await?;
        active.map(|_| ()).ok_or_else(|| Error::new(Code::Unauthenticated, "the bearer token was revoked"))
    }

    /// The actor behind a bearer secret: UNAUTHENTICATED when it is unknown or revoked.
    pub async fn authenticate(&self, secret: &str) -> Result<Actor> {
        let hash = hash_secret(secret);
        if self.admin_token_hash.as_deref() == Some(hash.as_str()) {
            return Ok(Actor::system());
        }
        let token = store::find_active_by_hash(&self.db, &hash)
            .await?
            .ok_or_else(|| Error::new(Code::Unauthenticated, "the bearer token is unknown or revoked"))?;
        let token = load_grants(&self.db, token).await?;
        Ok(Actor { token_id: Some(token.token.id), tenant_id: token.token.tenant_id, grants: token.grants })
    }
}

/// A tenant token's grants stay inside its tenant; only a token of no tenant is an operator.
async fn check_grant(conn: &impl ConnectionTrait, tenant_id: Option<&str>, grant: &Grant) -> Result<()> {
    validate::permission("grants.permission", &grant.permission)?;
    let invalid = |why: &str| Error::invalid_input("grants.scope", format!("scope {:?} {why}", grant.scope));
    if grant.scope == OPERATOR_SCOPE {
        return match (tenant_id, grant.permission.as_str()) {
            (None, "*") => Ok(()),
            (None, _) => Err(invalid("takes only the permission *")),
            (Some(_), _) => Err(invalid("is for operator tokens, which belong to no tenant")),
        };
    }
    let Some(tenant_id) = tenant_id else {
        return Err(invalid("needs the token's tenantId; an operator token takes the scope operator"));
    };
    let Some((kind, id)) = grant.scope.split_once('/') else {
        return Err(invalid("must be operator, tenant/<id>, project/<id> or <kind>/<id>"));
    };
    match kind {
        "tenant" if id == tenant_id => Ok(()),
        "tenant" => Err(invalid("names another tenant")),
        "project" => {
            let found = crate::store::tenants::find_project(conn, tenant_id, id).await?;
            found.map(|_| ()).ok_or_else(|| invalid("names no project of the tenant"))
        }
        _ if RESOURCE_KINDS.contains(&kind) && !id.is_empty() && id.len() <= 64 => Ok(()),
        _ => Err(invalid("names an unknown kind")),
    }
}

async fn load_grants(conn: &impl ConnectionTrait, token: api_token::Model) -> Result<Token> {
    let grants =
        store::grants_of(conn, &token.id).await?.into_iter().map(|g| Grant::new(&g.permission, &g.scope)).collect();
    Ok(Token { token, grants })
}

fn token_event(event_type: &str, t: &Token) -> NewEvent {
    NewEvent {
        event_type: event_type.into(),
        subject_kind: "token",
        subject: t.token.id.clone(),
        tenant_id: t.token.tenant_id.clone(),
        project_id: None,
        version: if t.token.revoked_at.is_some() { 2 } else { 1 },
        data: token_view(t).into(),
    }
}
