//! Provider accounts, the pools on them, and the quotas a pool is offered to a tenant with.
//! A pool is on one account: the platform's (billing METERED) or a tenant's own (billing BYO,
//! offered to that tenant only). Offering a pool creates the tenant's quota rows; a resource
//! kind without a row gets nothing (QUOTA_EXCEEDED, fail closed).
use std::collections::HashMap;

use chrono::Utc;
use sea_orm::ConnectionTrait;
use serde_json::json;

use super::tenants::find_tenant;
use super::validate;
use crate::authz::{Actor, Target};
use crate::error::{Code, Error, Result};
use crate::ids;
use crate::services::Services;
use crate::store::entity::{pool, provider_account};
use crate::store::pools::{self as store, NewAccount, NewPool, RateCard};
use crate::store::quota as quota_rows;
use crate::store::state::{Billing, ProviderKind};
use crate::store::taken;
use crate::store::usage::METERS;
use crate::views::pools::{
    AccountView, PoolView, QuotaView, account_event, pool_event, pool_offered_event, quota_event,
};

const MAX_REGIONS: usize = 32;
const MAX_QUOTAS_PER_OFFER: usize = 32;

pub struct ProviderAccountCreate {
    pub name: String,
    pub kind: ProviderKind,
    pub api_url: Option<String>,
    /// Required unless `sim`.
    pub credential_ref: Option<String>,
    /// An account at this process's simulated DigitalOcean.
    pub sim: bool,
    pub regions: Vec<String>,
    pub zones: Vec<String>,
    pub tenant_id: Option<String>,
}

pub struct PoolCreate {
    pub name: String,
    pub provider_account_id: String,
    pub billing: Billing,
    /// The machine sizes and images it offers (none: any the provider makes).
    pub sizes: Vec<String>,
    pub images: Vec<String>,
}

/// `poolMachinesSet`: what machines a pool offers from now on.
pub struct PoolMachines {
    pub pool_id: String,
    pub sizes: Vec<String>,
    pub images: Vec<String>,
}

/// `poolRatesSet`: the pool's rate card from now on (None: no prices, so no costs).
pub struct PoolRates {
    pub pool_id: String,
    pub card: Option<RateCardAsk>,
}

/// A rate card as asked: a currency and (meter, price per unit) pairs, each meter once.
pub struct RateCardAsk {
    pub currency: String,
    pub prices: Vec<(String, f64)>,
}

pub struct QuotaLimit {
    pub resource: String,
    pub max: i64,
}

pub struct PoolOffer {
    pub pool_id: String,
    pub tenant_id: String,
    pub quotas: Vec<QuotaLimit>,
}

pub struct QuotaSet {
    pub tenant_id: String,
    pub pool_id: String,
    pub resource: String,
    pub max: i64,
}

/// A pool's row with its account's.
#[derive(Clone, Debug)]
pub struct PoolRow {
    pub pool: pool::Model,
    pub account: provider_account::Model,
}

impl PoolRow {
    pub fn view(&self) -> PoolView {
        PoolView::of(&self.pool, &self.account)
    }
}

fn default_api_url(kind: ProviderKind) -> Option<&'static str> {
    match kind {
        ProviderKind::Digitalocean => Some("https://api.digitalocean.com"),
        _ => None,
    }
}

impl Services {
    pub async fn provider_account_create(&self, actor: &Actor, input: ProviderAccountCreate) -> Result<AccountView> {
        actor.require_operator()?;
        validate::name("name", &input.name)?;
        if let Some(tenant_id) = &input.tenant_id {
            validate::tenant_id("tenantId", tenant_id)?;
        }
        let credential_ref = match (&input.credential_ref, input.sim) {
            (Some(reference), _) => {
                validate::credential_ref("credentialRef", reference, input.kind == ProviderKind::Aws)?;
                reference.clone()
            }
            (None, true) => "none:sim".to_owned(),
            (None, false) => {
                return Err(Error::invalid_input(
                    "credentialRef",
                    "an account needs credentialRef (env:NAME or file:/path; on AWS also aws:SOURCE)",
                ));
            }
        };
        let api_url = match (&input.api_url, default_api_url(input.kind)) {
            _ if input.sim => self.sim_account_url()?,
            (Some(url), _) => url.clone(),
            (None, Some(url)) => url.to_owned(),
            (None, None) => String::new(),
        };
        if !api_url.is_empty() {
            validate::url("apiUrl", &api_url)?;
        }
        check_places("regions", &input.regions, validate::region, true, MAX_REGIONS)?;
        check_places("zones", &input.zones, validate::zone, false, MAX_REGIONS)?;
        if input.kind == ProviderKind::Aws && input.zones.is_empty() {
            return Err(Error::invalid_input("zones", "an AWS account names the zones it uses"));
        }
        let txn = self.begin().await?;
        if let Some(tenant_id) = &input.tenant_id {
            find_tenant(&txn, tenant_id).await?;
        }
        let now = Utc::now();
        let new = NewAccount {
            id: ids::new_id(ids::PROVIDER_ACCOUNT),
            tenant_id: input.tenant_id.as_deref(),
            name: &input.name,
            kind: input.kind,
            api_url,
            credential_ref,
            regions: &input.regions,
            zones: &input.zones,
            sim: input.sim,
        };
        let created = store::insert_account(&txn, new, now)
            .await
            .map_err(taken("name", || format!("a provider account named {} exists", input.name)))?;
        // Its inventory pass: nothing settled yet, so its first pass lists nothing.
        let due = now.timestamp_millis();
        crate::store::queue::ensure(&txn, crate::store::inventory::RECONCILER, &created.id, due).await?;
        self.commit(txn, vec![account_event("providerAccount.created", &created)]).await?;
        Ok(AccountView::from(&created))
    }

    /// The simulated cloud's URL for a `sim` account, in a process running it (it speaks both
    /// DigitalOcean's and AWS's APIs on one URL).
    fn sim_account_url(&self) -> Result<String> {
        self.sim_url
            .clone()
            .ok_or_else(|| Error::invalid_input("sim", "this process runs no simulated cloud (--no-sim)"))
    }

    pub async fn provider_account_list(&self, actor: &Actor) -> Result<Vec<AccountView>> {
        actor.require_operator()?;
        Ok(store::all_accounts(&self.db).await?.iter().map(AccountView::from).collect())
    }

    pub async fn pool_create(&self, actor: &Actor, input: PoolCreate) -> Result<PoolView> {
        actor.require_operator()?;
        validate::name("name", &input.name)?;
        validate::id("providerAccountId", ids::PROVIDER_ACCOUNT, &input.provider_account_id)?;
        check_machines(&input.sizes, &input.images)?;
        let txn = self.begin().await?;
        let account = store::find_account(&txn, &input.provider_account_id)
            .await?
            .ok_or_else(|| Error::not_found("provider-account", &input.provider_account_id))?;
        let expected = if account.tenant_id.is_some() { Billing::Byo } else { Billing::Metered };
        if input.billing != expected {
            return Err(Error::invalid_input(
                "billing",
                format!(
                    "a pool on {} account is billed {}",
                    if expected == Billing::Byo { "a tenant's own" } else { "the platform's" },
                    expected.as_str().to_uppercase()
                ),
            ));
        }
        let now = Utc::now();
        let new = NewPool {
            id: ids::new_id(ids::POOL),
            name: &input.name,
            provider_account_id: &account.id,
            billing: input.billing,
            sizes: &input.sizes,
            images: &input.images,
        };
        check_sizes_offered(account.kind, &input.sizes)?;
        let created = store::insert(&txn, new, now)
            .await
            .map_err(taken("name", || format!("a pool named {} exists", input.name)))?;
        let view = PoolView::of(&created, &account);
        self.commit(txn, vec![pool_event("pool.created", &view)]).await?;
        Ok(view)
    }

    /// Sets the machine sizes and images a pool offers (operator); an instance asks one of each
    /// once a list is set. Instances already made are not changed.
    pub async fn pool_machines_set(&self, actor: &Actor, input: PoolMachines) -> Result<PoolView> {
        actor.require_operator()?;
        validate::id("poolId", ids::POOL, &input.pool_id)?;
        check_machines(&input.sizes, &input.images)?;
        let txn = self.begin().await?;
        let view = find_pool(&txn, &input.pool_id).await?;
        check_sizes_offered(view.account.kind, &input.sizes)?;
        let now = Utc::now();
        store::set_machines(&txn, &input.pool_id, &input.sizes, &input.images, now).await?;
        let updated = find_pool(&txn, &input.pool_id).await?.view();
        self.commit(txn, vec![pool_event("pool.updated", &updated)]).await?;
        Ok(updated)
    }

    /// Sets a pool's rate card (operator): what usage costs from then on. Usage already
    /// written is priced by the card read at the time, not fixed when it was metered.
    pub async fn pool_rates_set(&self, actor: &Actor, input: PoolRates) -> Result<PoolView> {
        actor.require_operator()?;
        validate::id("poolId", ids::POOL, &input.pool_id)?;
        let card = input.card.map(rate_card).transpose()?;
        let txn = self.begin().await?;
        find_pool(&txn, &input.pool_id).await?;
        store::set_rates(&txn, &input.pool_id, card.as_ref(), self.clock.now()).await?;
        let updated = find_pool(&txn, &input.pool_id).await?.view();
        self.commit(txn, vec![pool_event("pool.updated", &updated)]).await?;
        Ok(updated)
    }

    /// Offers a pool to a tenant: records the offer and creates (or resets the max of) the
    /// tenant's quota rows on it.
    pub async fn pool_offer(&self, actor: &Actor, input: PoolOffer) -> Result<Vec<QuotaView>> {
        actor.require_operator()?;
        validate::id("poolId", ids::POOL, &input.pool_id)?;
        validate::tenant_id("tenantId", &input.tenant_id)?;
        if input.quotas.len() > MAX_QUOTAS_PER_OFFER {
            return Err(Error::invalid_input("quotas", format!("at most {MAX_QUOTAS_PER_OFFER} quotas")));
        }
        for limit in &input.quotas {
            validate::quota_resource("quotas.resource", &limit.resource)?;
            validate::range("quotas.max", limit.max, 0, i64::from(i32::MAX))?;
        }
        let txn = self.begin().await?;
        find_tenant(&txn, &input.tenant_id).await?;
        let view = find_pool(&txn, &input.pool_id).await?;
        if let Some(owner) = &view.account.tenant_id
            && *owner != input.tenant_id
        {
            return Err(Error::invalid_input(
                "tenantId",
                "a pool on a tenant's own account is offered to that tenant only",
            ));
        }
        let now = Utc::now();
        store::offer(&txn, &input.tenant_id, &input.pool_id, now).await?;
        // Its offers are part of the pool: the event carries a new version.
        store::bump(&txn, &input.pool_id, now).await?;
        let offered_pool = find_pool(&txn, &input.pool_id).await?.view();
        let mut quotas = Vec::new();
        let mut events = vec![pool_offered_event(&offered_pool, &input.tenant_id)];
        for limit in input.quotas {
            let row =
                quota_rows::set_max(&txn, &input.tenant_id, &input.pool_id, &limit.resource, limit.max, Utc::now())
                    .await?;
            events.push(quota_event(&row));
            quotas.push(QuotaView::from(row));
        }
        self.commit(txn, events).await?;
        Ok(quotas)
    }

    pub async fn quota_set(&self, actor: &Actor, input: QuotaSet) -> Result<QuotaView> {
        actor.require_operator()?;
        validate::tenant_id("tenantId", &input.tenant_id)?;
        validate::id("poolId", ids::POOL, &input.pool_id)?;
        validate::quota_resource("resource", &input.resource)?;
        validate::range("max", input.max, 0, i64::from(i32::MAX))?;
        let txn = self.begin().await?;
        find_tenant(&txn, &input.tenant_id).await?;
        find_pool(&txn, &input.pool_id).await?;
        let offered = store::find_offer(&txn, &input.tenant_id, &input.pool_id).await?;
        if offered.is_none() {
            return Err(Error::new(
                Code::InvalidState,
                format!("pool {} is not offered to tenant {}", input.pool_id, input.tenant_id),
            )
            .with_details(json!({ "reason": "notOffered" })));
        }
        let row =
            quota_rows::set_max(&txn, &input.tenant_id, &input.pool_id, &input.resource, input.max, Utc::now()).await?;
        self.commit(txn, vec![quota_event(&row)]).await?;
        Ok(QuotaView::from(row))
    }

    /// The pools offered to the tenant.
    pub async fn pool_list(&self, actor: &Actor, tenant_id: &str) -> Result<Vec<PoolView>> {
        actor.decide("compute:pools:read", &Target::tenant(tenant_id))?;
        let offers = store::offers_to(&self.db, tenant_id).await?;
        let pool_ids: Vec<String> = offers.into_iter().map(|o| o.pool_id).collect();
        let pools = store::find_many(&self.db, pool_ids).await?;
        let account_ids: Vec<String> = pools.iter().map(|p| p.provider_account_id.clone()).collect();
        let accounts: HashMap<String, provider_account::Model> =
            store::find_accounts(&self.db, account_ids).await?.into_iter().map(|a| (a.id.clone(), a)).collect();
        Ok(pools
            .into_iter()
            .filter_map(|pool| accounts.get(&pool.provider_account_id).map(|account| PoolView::of(&pool, account)))
            .collect())
    }

    /// The tenant's quotas, on one pool or on all.
    pub async fn quota_list(&self, actor: &Actor, tenant_id: &str, pool_id: Option<&str>) -> Result<Vec<QuotaView>> {
        if let Some(pool_id) = pool_id {
            validate::id("poolId", ids::POOL, pool_id)?;
        }
        actor.decide("compute:quotas:read", &Target::tenant(tenant_id))?;
        Ok(quota_rows::list(&self.db, tenant_id, pool_id).await?.into_iter().map(QuotaView::from).collect())
    }
}

/// The highest price of one unit of a meter a card takes.
pub const MAX_PRICE: f64 = 1_000_000.0;

/// A card prices only the meters usage has, each once, at a price from 0 to `MAX_PRICE`, in
/// a currency written as ISO 4217 codes are (three capitals).
fn rate_card(ask: RateCardAsk) -> Result<RateCard> {
    if ask.currency.len() != 3 || !ask.currency.bytes().all(|b| b.is_ascii_uppercase()) {
        return Err(Error::invalid_input("currency", "a currency is an ISO 4217 code, e.g. USD"));
    }
    let mut card = RateCard { currency: ask.currency, prices: Default::default() };
    for (meter, price) in ask.prices {
        if !METERS.contains(&meter.as_str()) {
            return Err(Error::invalid_input(
                "meter",
                format!("no meter is named {meter}; meters: {}", METERS.join(", ")),
            )
            .with_details(json!({ "field": "meter", "meter": meter })));
        }
        if !price.is_finite() || !(0.0..=MAX_PRICE).contains(&price) {
            return Err(Error::invalid_input("price", format!("a price is from 0 to {MAX_PRICE}, not {price}"))
                .with_details(json!({ "field": "price", "meter": meter })));
        }
        if card.prices.insert(meter.clone(), price).is_some() {
            return Err(Error::invalid_input("prices", format!("{meter} is priced twice"))
                .with_details(json!({ "field": "prices", "meter": meter })));
        }
    }
    Ok(card)
}

/// Most sizes and images a pool lists.
const MAX_MACHINES: usize = 64;

fn check_machines(sizes: &[String], images: &[String]) -> Result<()> {
    check_places("sizes", sizes, validate::slug, false, MAX_MACHINES)?;
    check_places("images", images, validate::slug, false, MAX_MACHINES)
}

/// Every size a pool lists is one its provider makes (`provider::sizes`).
fn check_sizes_offered(kind: ProviderKind, sizes: &[String]) -> Result<()> {
    match sizes.iter().find(|size| crate::provider::sizes::disk_gib(kind, size).is_none()) {
        Some(size) => Err(Error::invalid_input("sizes", format!("{kind} makes no machine of size {size}"))
            .with_details(json!({ "field": "sizes", "reason": "size", "size": size }))),
        None => Ok(()),
    }
}

/// A list of distinct values, each passing `rule`, at most `max` (and one at least if `required`).
fn check_places(
    field: &str,
    values: &[String],
    rule: fn(&str, &str) -> Result<()>,
    required: bool,
    max: usize,
) -> Result<()> {
    if required && values.is_empty() {
        return Err(Error::invalid_input(field, format!("{field} must name at least one")));
    }
    if values.len() > max {
        return Err(Error::invalid_input(field, format!("at most {max} {field}")));
    }
    for (i, value) in values.iter().enumerate() {
        rule(field, value)?;
        if values[..i].contains(value) {
            return Err(Error::invalid_input(field, format!("{value} is named twice")));
        }
    }
    Ok(())
}

pub(crate) async fn find_pool(conn: &impl ConnectionTrait, pool_id: &str) -> Result<PoolRow> {
    let pool = store::find(conn, pool_id).await?.ok_or_else(|| Error::not_found("pool", pool_id))?;
    let account = store::find_account(conn, &pool.provider_account_id)
        .await?
        .ok_or_else(|| Error::internal(format!("pool {pool_id} has no account")))?;
    Ok(PoolRow { pool, account })
}
