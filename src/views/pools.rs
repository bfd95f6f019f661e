//! What provider accounts, pools and quotas look like to operators and in their events. An
//! account's view never holds its credential, nor where it is kept.
use async_graphql::SimpleObject;
use chrono::{DateTime, Utc};
use serde::Serialize;

use super::fields::view;
use crate::store::entity::{pool, provider_account, quota};
use crate::store::outbox::{NewEvent, Payload};
use crate::store::pools::RateCard;
use crate::store::state::{Billing, ProviderKind};

/// The text items of a JSON array column (regions, zones, sizes, images).
pub fn strings(json: &serde_json::Value) -> Vec<String> {
    json.as_array().map(|a| a.iter().filter_map(|v| v.as_str().map(str::to_owned)).collect()).unwrap_or_default()
}

/// A provider account, without its credential reference.
#[derive(Clone, Debug, Serialize, SimpleObject)]
#[serde(rename_all = "camelCase")]
pub struct AccountView {
    #[graphql(skip)]
    pub id: String,
    pub name: String,
    pub kind: ProviderKind,
    #[graphql(skip)]
    pub api_url: String,
    pub regions: Vec<String>,
    pub zones: Vec<String>,
    /// Set for a tenant's own (BYO) account.
    pub tenant_id: Option<String>,
    /// Whether it is an account at the simulated cloud.
    pub sim: bool,
    #[graphql(skip)]
    pub version: i64,
    pub created_at: DateTime<Utc>,
    /// When its inventory pass last read all it holds.
    #[serde(skip)]
    #[graphql(skip)]
    pub listed_at: Option<DateTime<Utc>>,
}

impl From<&provider_account::Model> for AccountView {
    fn from(a: &provider_account::Model) -> Self {
        AccountView {
            id: a.id.clone(),
            name: a.name.clone(),
            kind: a.kind,
            api_url: a.api_url.clone(),
            regions: strings(&a.regions),
            zones: strings(&a.zones),
            tenant_id: a.tenant_id.clone(),
            sim: a.sim,
            version: a.version,
            created_at: a.created_at,
            listed_at: a.listed_at,
        }
    }
}

/// A pool: the machines and quotas offered on one account.
#[derive(Clone, Debug, Serialize, SimpleObject)]
#[serde(rename_all = "camelCase")]
pub struct PoolView {
    #[graphql(skip)]
    pub id: String,
    pub name: String,
    pub provider_account_id: String,
    pub billing: Billing,
    /// The machine sizes an instance of this pool may ask (empty: any the provider makes).
    pub sizes: Vec<String>,
    /// The images an instance of this pool may ask (empty: any).
    pub images: Vec<String>,
    #[graphql(skip)]
    pub version: i64,
    pub created_at: DateTime<Utc>,
    /// What it charges per unit of each usage meter, once an operator set it
    /// (`poolRatesSet`); a meter the card does not list is free.
    pub rate_card: Option<RateCardView>,
    /// Its account's kind, regions and zones.
    #[serde(skip)]
    #[graphql(skip)]
    pub account: AccountView,
}

impl PoolView {
    pub fn of(p: &pool::Model, account: &provider_account::Model) -> Self {
        PoolView {
            id: p.id.clone(),
            name: p.name.clone(),
            provider_account_id: p.provider_account_id.clone(),
            billing: p.billing,
            sizes: strings(&p.sizes),
            images: strings(&p.images),
            rate_card: RateCard::of(&p.rates).map(RateCardView::from),
            version: p.version,
            created_at: p.created_at,
            account: account.into(),
        }
    }
}

/// A pool's prices: per unit of each usage meter, in one currency.
#[derive(Clone, Debug, Serialize, SimpleObject)]
#[serde(rename_all = "camelCase")]
pub struct RateCardView {
    /// An ISO 4217 code, e.g. `USD`.
    pub currency: String,
    /// By meter name.
    pub prices: Vec<MeterPrice>,
}

/// The price of one unit of a meter (a GiB-hour, an hour).
#[derive(Clone, Debug, Serialize, SimpleObject)]
pub struct MeterPrice {
    pub meter: String,
    pub price: f64,
}

impl From<RateCard> for RateCardView {
    fn from(card: RateCard) -> Self {
        let prices = card.prices.into_iter().map(|(meter, price)| MeterPrice { meter, price }).collect();
        RateCardView { currency: card.currency, prices }
    }
}

view! {
    /// How much of one resource a tenant may hold in one pool, and holds now.
    pub struct QuotaView from quota::Model {
        pub tenant_id: String,
        pub pool_id: String,
        /// e.g. `diskGiB`, `addresses`.
        pub resource: String,
        pub max: i64,
        pub used: i64,
        pub version: i64,
    }
}

pub fn account_event(event_type: &str, a: &provider_account::Model) -> NewEvent {
    NewEvent {
        event_type: event_type.into(),
        subject_kind: "provider-account",
        subject: a.id.clone(),
        tenant_id: a.tenant_id.clone(),
        project_id: None,
        version: a.version,
        data: Payload::of(&AccountView::from(a)),
    }
}

pub fn pool_event(event_type: &str, pool: &PoolView) -> NewEvent {
    NewEvent {
        event_type: event_type.into(),
        subject_kind: "pool",
        subject: pool.id.clone(),
        tenant_id: pool.account.tenant_id.clone(),
        project_id: None,
        version: pool.version,
        data: Payload::of(pool),
    }
}

/// `pool.offered`: the pool, and the tenant it is offered to.
pub fn pool_offered_event(pool: &PoolView, tenant_id: &str) -> NewEvent {
    #[derive(Serialize)]
    #[serde(rename_all = "camelCase")]
    struct Offered<'a> {
        pool: &'a PoolView,
        tenant_id: &'a str,
    }
    NewEvent {
        tenant_id: Some(tenant_id.to_owned()),
        data: Payload::of(&Offered { pool, tenant_id }),
        ..pool_event("pool.offered", pool)
    }
}

pub fn quota_event(q: &quota::Model) -> NewEvent {
    NewEvent {
        event_type: "quota.updated".into(),
        subject_kind: "quota",
        subject: format!("{}/{}", q.pool_id, q.resource),
        tenant_id: Some(q.tenant_id.clone()),
        project_id: None,
        version: q.version,
        data: Payload::of(&QuotaView::from(q.clone())),
    }
}
