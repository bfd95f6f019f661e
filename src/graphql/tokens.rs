//! API tokens and the caller's own identity.
use async_graphql::{Context, ID, InputObject, Object, Result, SimpleObject};
use chrono::{DateTime, Utc};

use super::plans::planned;
use super::{actor, services};
use crate::authz::Grant as ServiceGrant;
use crate::service::tokens::{Token as ServiceToken, TokenIssue};

#[derive(SimpleObject, InputObject, Clone)]
#[graphql(input_name = "GrantInput")]
pub struct Grant {
    /// A permission pattern: `compute:volumes:read`, `compute:*`, `*`.
    pub permission: String,
    /// `tenant/<id>`, `project/<id>`, one resource such as `provider-volume/<id>`, or `operator`.
    pub scope: String,
}

fn grants(grants: &[ServiceGrant]) -> Vec<Grant> {
    grants.iter().map(|g| Grant { permission: g.permission.clone(), scope: g.scope.clone() }).collect()
}

/// A token as the API shows it: never its secret.
pub struct Token(pub ServiceToken);

#[Object]
impl Token {
    pub async fn id(&self) -> ID {
        ID(self.0.token.id.clone())
    }
    async fn tenant_id(&self) -> Option<&str> {
        self.0.token.tenant_id.as_deref()
    }
    async fn name(&self) -> &str {
        &self.0.token.name
    }
    #[graphql(complexity = "super::limits::unbounded(child_complexity)")]
    async fn grants(&self) -> Vec<Grant> {
        grants(&self.0.grants)
    }
    async fn created_at(&self) -> DateTime<Utc> {
        self.0.token.created_at
    }
    async fn revoked_at(&self) -> Option<DateTime<Utc>> {
        self.0.token.revoked_at
    }
}

#[derive(SimpleObject)]
pub struct TokenIssuePayload {
    pub token: Token,
    /// The bearer secret. Shown here once; only its hash is kept.
    pub secret: String,
}

/// The caller.
#[derive(SimpleObject)]
pub struct Me {
    /// None for the static admin token.
    pub token_id: Option<String>,
    /// None for an operator token.
    pub tenant_id: Option<String>,
    pub operator: bool,
    pub grants: Vec<Grant>,
}

#[derive(InputObject)]
pub struct TokenIssueInput {
    /// The tenant the token acts for; omit it for an operator token (scope `operator`).
    pub tenant_id: Option<String>,
    pub name: Option<String>,
    pub grants: Vec<Grant>,
    /// Runs the whole call and records nothing: the answer it would give, with its plan (quota,
    /// provider calls, meters, monthly cost) in the response's `extensions.plan`.
    #[graphql(default)]
    pub dry_run: bool,
}

#[derive(InputObject)]
pub struct TokenRevokeInput {
    pub token_id: String,
    /// Runs the whole call and records nothing: the answer it would give, with its plan (quota,
    /// provider calls, meters, monthly cost) in the response's `extensions.plan`.
    #[graphql(default)]
    pub dry_run: bool,
}

#[derive(Default)]
pub struct TokenQuery;

#[Object]
impl TokenQuery {
    /// Who the bearer token is and what it is granted.
    async fn me(&self, ctx: &Context<'_>) -> Result<Me> {
        let actor = actor(ctx)?;
        Ok(Me {
            token_id: actor.token_id.clone(),
            tenant_id: actor.tenant_id.clone(),
            operator: actor.is_operator(),
            grants: grants(&actor.grants),
        })
    }

    /// A tenant's tokens, or with no tenantId the operator tokens (operator).
    #[graphql(complexity = "super::limits::unbounded(child_complexity)")]
    async fn tokens(&self, ctx: &Context<'_>, tenant_id: Option<String>) -> Result<Vec<Token>> {
        Ok(services(ctx).token_list(actor(ctx)?, tenant_id.as_deref()).await?.into_iter().map(Token).collect())
    }
}

#[derive(Default)]
pub struct TokenMutation;

#[Object]
impl TokenMutation {
    /// Issues a token (operator); its secret is returned once. Publishes `token.issued`.
    async fn token_issue(&self, ctx: &Context<'_>, input: TokenIssueInput) -> Result<TokenIssuePayload> {
        let dry_run = input.dry_run;
        planned(ctx, dry_run, async move {
            let grants =
                input.grants.into_iter().map(|g| ServiceGrant { permission: g.permission, scope: g.scope }).collect();
            let issue = TokenIssue { tenant_id: input.tenant_id, name: input.name, grants };
            let (token, secret) = services(ctx).token_issue(actor(ctx)?, issue).await?;
            Ok(TokenIssuePayload { token: Token(token), secret })
        })
        .await
    }

    /// Revokes a token (operator); revoking a revoked token returns it. Publishes `token.revoked`.
    async fn token_revoke(&self, ctx: &Context<'_>, input: TokenRevokeInput) -> Result<Token> {
        let dry_run = input.dry_run;
        planned(ctx, dry_run, async move { Ok(Token(services(ctx).token_revoke(actor(ctx)?, &input.token_id).await?)) })
            .await
    }
}
