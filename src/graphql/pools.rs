//! Provider accounts, pools and quotas.
use async_graphql::{ComplexObject, Context, ID, InputObject, Object, Result, SimpleObject};
use chrono::{DateTime, Utc};

use super::plans::planned;
use super::{actor, providers, services};
use crate::service::pools::{self as svc, QuotaLimit};
use crate::store::state::{Billing, ProviderKind};
use crate::views::pools::{AccountView, PoolView, QuotaView};

/// A provider account. Its credentials are never returned, nor where they are kept.
#[derive(SimpleObject)]
#[graphql(complex)]
pub struct ProviderAccount {
    #[graphql(flatten)]
    pub view: AccountView,
}

#[ComplexObject]
impl ProviderAccount {
    pub async fn id(&self) -> ID {
        ID(self.view.id.clone())
    }
    async fn api_url(&self) -> Option<&str> {
        Some(self.view.api_url.as_str()).filter(|u| !u.is_empty())
    }
    /// Its request budget and the calls sent in the last hour, as this replica sees them: each
    /// replica counts its own calls; `remaining` is what the provider last said of the account.
    async fn budget(&self, ctx: &Context<'_>) -> ProviderBudget {
        let view = providers(ctx).budget(&self.view.id, Utc::now().timestamp());
        let [asked, following, drift] = view.calls_last_hour.map(|n| n as i64);
        let read_at = self.view.listed_at;
        ProviderBudget {
            limit: view.limit,
            remaining: view.remaining,
            reset_at: view.reset_at.and_then(|s| DateTime::from_timestamp(s, 0)),
            calls_last_hour: ProviderCalls { asked, following, drift },
            oldest_drift_read_at: read_at,
            oldest_drift_read_seconds: read_at.map(|at| (services(ctx).clock.now() - at).num_seconds().max(0)),
        }
    }
}

/// A provider account's request budget. It is spent in the order of the calls' purposes: what
/// someone asked first, following running actions next, the hourly drift reads last (they wait
/// while a quarter of the budget is left).
#[derive(SimpleObject)]
pub struct ProviderBudget {
    /// The provider's limit of requests an hour: null until an answer said it, and for AWS,
    /// which throttles instead.
    limit: Option<i64>,
    /// Requests left in the hour, as the provider last said.
    remaining: Option<i64>,
    /// When the oldest request counted leaves the hour.
    reset_at: Option<DateTime<Utc>>,
    calls_last_hour: ProviderCalls,
    /// When the account's settled resources were last all read for drift: its last whole
    /// inventory pass, which lists each kind it holds in each of its regions (null before its
    /// first pass).
    oldest_drift_read_at: Option<DateTime<Utc>>,
    /// How long ago that was, in seconds.
    oldest_drift_read_seconds: Option<i64>,
}

/// Requests sent in the last hour, by what they were for.
#[derive(SimpleObject)]
pub struct ProviderCalls {
    /// For a change someone made (a create, an action, a delete), or a retry of one.
    asked: i64,
    /// Looking at a provider action under way.
    following: i64,
    /// The hourly drift reads of settled resources.
    drift: i64,
}

/// A pool: the machines and quotas offered on one account.
#[derive(SimpleObject)]
#[graphql(complex)]
pub struct Pool {
    #[graphql(flatten)]
    pub view: PoolView,
}

#[ComplexObject]
impl Pool {
    pub async fn id(&self) -> ID {
        ID(self.view.id.clone())
    }
    async fn provider_kind(&self) -> ProviderKind {
        self.view.account.kind
    }
    async fn regions(&self) -> Vec<String> {
        self.view.account.regions.clone()
    }
    async fn zones(&self) -> Vec<String> {
        self.view.account.zones.clone()
    }
}

/// How much of one resource a tenant may hold in one pool, and holds now.
#[derive(SimpleObject)]
pub struct Quota {
    #[graphql(flatten)]
    pub view: QuotaView,
}

#[derive(InputObject)]
pub struct ProviderAccountCreateInput {
    pub name: String,
    pub kind: ProviderKind,
    /// The API base URL; DigitalOcean defaults to its public API.
    pub api_url: Option<String>,
    /// Where the credential is: `env:VARIABLE` or `file:/path`; on an AWS account also a source
    /// AWS tooling reads on the host: `aws:environment`, `aws:profile` (or `aws:profile/NAME`),
    /// `aws:instance-metadata`, `aws:web-identity`. The secret itself is never sent here. Not
    /// needed with `sim`.
    pub credential_ref: Option<String>,
    /// An account at this process's simulated DigitalOcean (its apiUrl is the sim's).
    #[graphql(default)]
    pub sim: bool,
    pub regions: Vec<String>,
    #[graphql(default)]
    pub zones: Vec<String>,
    /// Set for a tenant's own (BYO) account.
    pub tenant_id: Option<String>,
    /// Runs the whole call and records nothing: the answer it would give, with its plan (quota,
    /// provider calls, meters, monthly cost) in the response's `extensions.plan`.
    #[graphql(default)]
    pub dry_run: bool,
}

#[derive(InputObject)]
pub struct PoolCreateInput {
    pub name: String,
    pub provider_account_id: String,
    pub billing: Billing,
    /// The machine sizes its instances may ask, each one its provider makes (none: any).
    #[graphql(default)]
    pub sizes: Vec<String>,
    /// The images its instances may ask (none: any).
    #[graphql(default)]
    pub images: Vec<String>,
    /// Runs the whole call and records nothing: the answer it would give, with its plan (quota,
    /// provider calls, meters, monthly cost) in the response's `extensions.plan`.
    #[graphql(default)]
    pub dry_run: bool,
}

#[derive(InputObject)]
pub struct PoolMachinesSetInput {
    pub pool_id: String,
    /// The machine sizes its instances may ask from now on (empty: any its provider makes).
    pub sizes: Vec<String>,
    /// The images its instances may ask from now on (empty: any).
    pub images: Vec<String>,
    /// Runs the whole call and records nothing: the answer it would give, with its plan (quota,
    /// provider calls, meters, monthly cost) in the response's `extensions.plan`.
    #[graphql(default)]
    pub dry_run: bool,
}

#[derive(InputObject)]
pub struct PoolRatesSetInput {
    pub pool_id: String,
    /// Its prices from now on; null removes them (usage then answers no cost).
    pub rate_card: Option<RateCardInput>,
    /// Runs the whole call and records nothing: the answer it would give, with its plan (quota,
    /// provider calls, meters, monthly cost) in the response's `extensions.plan`.
    #[graphql(default)]
    pub dry_run: bool,
}

#[derive(InputObject)]
pub struct RateCardInput {
    /// An ISO 4217 code, e.g. `USD`.
    pub currency: String,
    /// A price per unit of each meter that costs; a meter not listed is free.
    pub prices: Vec<MeterPriceInput>,
}

#[derive(InputObject)]
pub struct MeterPriceInput {
    /// A usage meter, e.g. `vps.volume.gib.hours`.
    pub meter: String,
    /// Per unit: a GiB-hour, or an hour.
    pub price: f64,
}

#[derive(InputObject)]
pub struct QuotaLimitInput {
    pub resource: String,
    pub max: i64,
}

#[derive(InputObject)]
pub struct PoolOfferInput {
    pub pool_id: String,
    pub tenant_id: String,
    #[graphql(default)]
    pub quotas: Vec<QuotaLimitInput>,
    /// Runs the whole call and records nothing: the answer it would give, with its plan (quota,
    /// provider calls, meters, monthly cost) in the response's `extensions.plan`.
    #[graphql(default)]
    pub dry_run: bool,
}

#[derive(InputObject)]
pub struct QuotaSetInput {
    pub tenant_id: String,
    pub pool_id: String,
    pub resource: String,
    pub max: i64,
    /// Runs the whole call and records nothing: the answer it would give, with its plan (quota,
    /// provider calls, meters, monthly cost) in the response's `extensions.plan`.
    #[graphql(default)]
    pub dry_run: bool,
}

#[derive(SimpleObject)]
pub struct PoolOfferPayload {
    pub pool_id: String,
    pub tenant_id: String,
    pub quotas: Vec<Quota>,
}

#[derive(Default)]
pub struct PoolQuery;

#[Object]
impl PoolQuery {
    /// Every provider account (operator).
    #[graphql(complexity = "super::limits::unbounded(child_complexity)")]
    async fn provider_accounts(&self, ctx: &Context<'_>) -> Result<Vec<ProviderAccount>> {
        Ok(services(ctx)
            .provider_account_list(actor(ctx)?)
            .await?
            .into_iter()
            .map(|view| ProviderAccount { view })
            .collect())
    }

    /// The pools offered to the tenant (`compute:pools:read`).
    #[graphql(complexity = "super::limits::unbounded(child_complexity)")]
    async fn pools(&self, ctx: &Context<'_>, tenant_id: String) -> Result<Vec<Pool>> {
        Ok(services(ctx).pool_list(actor(ctx)?, &tenant_id).await?.into_iter().map(|view| Pool { view }).collect())
    }

    /// The tenant's quotas with max and used, on one pool or all (`compute:quotas:read`).
    #[graphql(complexity = "super::limits::unbounded(child_complexity)")]
    async fn quotas(&self, ctx: &Context<'_>, tenant_id: String, pool_id: Option<String>) -> Result<Vec<Quota>> {
        let quotas = services(ctx).quota_list(actor(ctx)?, &tenant_id, pool_id.as_deref()).await?;
        Ok(quotas.into_iter().map(|view| Quota { view }).collect())
    }
}

#[derive(Default)]
pub struct PoolMutation;

#[Object]
impl PoolMutation {
    /// Records a provider account (operator). Publishes `providerAccount.created`.
    async fn provider_account_create(
        &self,
        ctx: &Context<'_>,
        input: ProviderAccountCreateInput,
    ) -> Result<ProviderAccount> {
        let dry_run = input.dry_run;
        planned(ctx, dry_run, async move {
            let input = svc::ProviderAccountCreate {
                name: input.name,
                kind: input.kind,
                api_url: input.api_url,
                credential_ref: input.credential_ref,
                sim: input.sim,
                regions: input.regions,
                zones: input.zones,
                tenant_id: input.tenant_id,
            };
            Ok(ProviderAccount { view: services(ctx).provider_account_create(actor(ctx)?, input).await? })
        })
        .await
    }

    /// Creates a pool on an account (operator): METERED on the platform's, BYO on a tenant's own.
    /// Publishes `pool.created`.
    async fn pool_create(&self, ctx: &Context<'_>, input: PoolCreateInput) -> Result<Pool> {
        let dry_run = input.dry_run;
        planned(ctx, dry_run, async move {
            let input = svc::PoolCreate {
                name: input.name,
                provider_account_id: input.provider_account_id,
                billing: input.billing,
                sizes: input.sizes,
                images: input.images,
            };
            Ok(Pool { view: services(ctx).pool_create(actor(ctx)?, input).await? })
        })
        .await
    }

    /// Sets the machine sizes and images a pool offers (operator); an instance asking any other
    /// is INVALID_INPUT. Publishes `pool.updated`.
    async fn pool_machines_set(&self, ctx: &Context<'_>, input: PoolMachinesSetInput) -> Result<Pool> {
        let dry_run = input.dry_run;
        planned(ctx, dry_run, async move {
            let input = svc::PoolMachines { pool_id: input.pool_id, sizes: input.sizes, images: input.images };
            Ok(Pool { view: services(ctx).pool_machines_set(actor(ctx)?, input).await? })
        })
        .await
    }

    /// Sets a pool's rate card (operator): the price per unit of each usage meter, from which
    /// `usage` answers its cost and a dry run its monthly price. INVALID_INPUT for a meter
    /// usage does not have, one named twice, a price below 0 or a currency not written as an
    /// ISO 4217 code. Publishes `pool.updated`.
    async fn pool_rates_set(&self, ctx: &Context<'_>, input: PoolRatesSetInput) -> Result<Pool> {
        let dry_run = input.dry_run;
        planned(ctx, dry_run, async move {
            let card = input.rate_card.map(|card| svc::RateCardAsk {
                currency: card.currency,
                prices: card.prices.into_iter().map(|p| (p.meter, p.price)).collect(),
            });
            let rates = svc::PoolRates { pool_id: input.pool_id, card };
            Ok(Pool { view: services(ctx).pool_rates_set(actor(ctx)?, rates).await? })
        })
        .await
    }

    /// Offers a pool to a tenant with its quota rows (operator). Publishes `pool.offered` and
    /// `quota.updated` per row.
    async fn pool_offer(&self, ctx: &Context<'_>, input: PoolOfferInput) -> Result<PoolOfferPayload> {
        let dry_run = input.dry_run;
        planned(ctx, dry_run, async move {
            let quotas = input.quotas.into_iter().map(|q| QuotaLimit { resource: q.resource, max: q.max }).collect();
            let offer = svc::PoolOffer { pool_id: input.pool_id.clone(), tenant_id: input.tenant_id.clone(), quotas };
            let quotas = services(ctx).pool_offer(actor(ctx)?, offer).await?;
            Ok(PoolOfferPayload {
                pool_id: input.pool_id,
                tenant_id: input.tenant_id,
                quotas: quotas.into_iter().map(|view| Quota { view }).collect(),
            })
        })
        .await
    }

    /// Sets the max of a tenant's quota on an offered pool (operator). Publishes `quota.updated`.
    async fn quota_set(&self, ctx: &Context<'_>, input: QuotaSetInput) -> Result<Quota> {
        let dry_run = input.dry_run;
        planned(ctx, dry_run, async move {
            let input = svc::QuotaSet {
                tenant_id: input.tenant_id,
                pool_id: input.pool_id,
                resource: input.resource,
                max: input.max,
            };
            Ok(Quota { view: services(ctx).quota_set(actor(ctx)?, input).await? })
        })
        .await
    }
}
