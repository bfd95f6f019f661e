//! The embedded default's first start: a demo tenant with a project, a provider account and a
//! pool offered with quotas, and two tokens (an operator's and the demo tenant's) whose secrets
//! are returned here once and never again. Later starts find the tenant and make nothing.
use super::pools::{PoolCreate, PoolOffer, PoolRates, ProviderAccountCreate, QuotaLimit, RateCardAsk};
use super::tenants::{ProjectCreate, TenantCreate};
use super::tokens::TokenIssue;
use crate::authz::{Actor, Grant, OPERATOR_SCOPE};
use crate::error::{Code, Result};
use crate::services::Services;
use crate::store::meta;
use crate::store::state::{Billing, ProviderKind};

pub const DEMO_TENANT: &str = "demo";
const DONE_KEY: &str = "demo_first_start";

pub struct FirstStart {
    pub operator_token: String,
    pub tenant_token: String,
}

/// Makes the demo data unless the demo tenant exists.
pub async fn demo(services: &Services) -> Result<Option<FirstStart>> {
    let system = Actor::system();
    if services.tenant_get(&system, DEMO_TENANT).await.is_ok() {
        if meta::get(&services.db, DONE_KEY).await?.is_none() {
            tracing::warn!("the demo's first start did not finish; issue tokens with --admin-token and tokenIssue");
        }
        return Ok(None);
    }
    match services.tenant_create(&system, TenantCreate { id: DEMO_TENANT.into(), name: "Demo tenant".into() }).await {
        // Another replica is making it at this moment: it prints the tokens.
        Err(err) if err.code == Code::Conflict => return Ok(None),
        other => other?,
    };
    services
        .project_create(
            &system,
            ProjectCreate {
                tenant_id: DEMO_TENANT.into(),
                name: "default".into(),
                description: None,
                idempotency_key: None,
            },
        )
        .await?;
    let account = services
        .provider_account_create(
            &system,
            ProviderAccountCreate {
                name: "demo-digitalocean".into(),
                kind: ProviderKind::Digitalocean,
                api_url: None,
                credential_ref: None,
                sim: services.sim_url.is_some(),
                regions: vec!["nyc3".into(), "sfo3".into(), "ams3".into()],
                zones: vec![],
                tenant_id: None,
            },
        )
        .await?;
    let pool = PoolCreate {
        name: "demo".into(),
        provider_account_id: account.id,
        billing: Billing::Metered,
        sizes: strings(&["s-1vcpu-1gb", "s-1vcpu-2gb", "s-2vcpu-4gb"]),
        images: strings(&["ubuntu-24-04-x64", "debian-12-x64"]),
    };
    let pool = services.pool_create(&system, pool).await?;
    services.pool_rates_set(&system, PoolRates { pool_id: pool.id.clone(), card: Some(demo_rates()) }).await?;
    let quotas = limits(&[("diskGiB", 2000), ("addresses", 5), ("instances", 10), ("networks", 5)]);
    services.pool_offer(&system, PoolOffer { pool_id: pool.id, tenant_id: DEMO_TENANT.into(), quotas }).await?;
    if services.sim_url.is_some() {
        demo_aws(services, &system).await?;
    }
    let (_, operator_token) = services
        .token_issue(
            &system,
            TokenIssue {
                tenant_id: None,
                name: Some("operator".into()),
                grants: vec![Grant::new("*", OPERATOR_SCOPE)],
            },
        )
        .await?;
    let (_, tenant_token) = services
        .token_issue(
            &system,
            TokenIssue {
                tenant_id: Some(DEMO_TENANT.into()),
                name: Some("demo".into()),
                grants: vec![Grant::new("compute:*", &format!("tenant/{DEMO_TENANT}"))],
            },
        )
        .await?;
    meta::set_once(&services.db, DONE_KEY, "done").await?;
    Ok(Some(FirstStart { operator_token, tenant_token }))
}

/// The demo pool's prices, per GiB-hour or hour: a month (730 h) of a block volume's GiB costs
/// 0.10 USD, of a share's 0.15, of a snapshot's 0.06; an address 5 USD, an instance 6.
fn demo_rates() -> RateCardAsk {
    let month = |price: f64| price / crate::service::plan::HOURS_PER_MONTH;
    let prices = [
        ("vps.volume.gib.hours", month(0.10)),
        ("vps.share.gib.hours", month(0.15)),
        ("vps.snapshot.gib.hours", month(0.06)),
        ("vps.address.hours", month(5.0)),
        ("vps.instance.hours", month(6.0)),
    ];
    RateCardAsk { currency: "USD".into(), prices: prices.map(|(meter, price)| (meter.to_owned(), price)).to_vec() }
}

fn strings(values: &[&str]) -> Vec<String> {
    values.iter().map(|v| v.to_string()).collect()
}

fn limits(quotas: &[(&str, i64)]) -> Vec<QuotaLimit> {
    quotas.iter().map(|(resource, max)| QuotaLimit { resource: resource.to_string(), max: *max }).collect()
}

/// An AWS account at the simulated cloud's AWS face and a pool on it, for networks, instances
/// and filesystems (EFS, FSx for Lustre) with no credentials.
async fn demo_aws(services: &Services, system: &Actor) -> Result<()> {
    let account = services
        .provider_account_create(
            system,
            ProviderAccountCreate {
                name: "demo-aws".into(),
                kind: ProviderKind::Aws,
                api_url: None,
                credential_ref: None,
                sim: true,
                regions: vec!["us-east-1".into()],
                zones: vec!["us-east-1a".into(), "us-east-1b".into()],
                tenant_id: None,
            },
        )
        .await?;
    let pool = PoolCreate {
        name: "demo-aws".into(),
        provider_account_id: account.id,
        billing: Billing::Metered,
        sizes: strings(&["t3.micro", "t3.small", "m5d.large"]),
        images: strings(&["ami-0abcdef1234567890"]),
    };
    let pool = services.pool_create(system, pool).await?;
    let quotas =
        limits(&[("diskGiB", 500), ("instances", 10), ("networks", 5), ("filesystems", 4), ("filesystemGiB", 10_000)]);
    services.pool_offer(system, PoolOffer { pool_id: pool.id, tenant_id: DEMO_TENANT.into(), quotas }).await?;
    Ok(())
}
