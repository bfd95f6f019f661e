//! Usage: what a tenant's resources on a pool billed, per meter, over a range of hours.
use async_graphql::{Context, Object, Result, SimpleObject};
use chrono::{DateTime, Utc};

use super::{actor, services};
use crate::service::usage::{MeterTotal, UsageView};

/// The total of one meter over the range.
#[derive(SimpleObject)]
pub struct UsageMeter {
    /// `vps.volume.gib.hours`, `vps.share.gib.hours`, `vps.snapshot.gib.hours` or
    /// `vps.address.hours`.
    pub meter: String,
    /// What bills on it: `volume`, `snapshot` or `address`.
    pub source_kind: String,
    /// The sum of its hourly windows (GiB-hours, or hours for an address).
    pub quantity: f64,
    /// How many hourly windows the sum is made of.
    pub windows: i64,
    /// The quantity at the pool's price (`Pool.rateCard`), in its currency; null while the
    /// pool has no rate card.
    pub cost: Option<f64>,
}

/// An amount of money.
#[derive(SimpleObject)]
pub struct Cost {
    pub amount: f64,
    /// An ISO 4217 code, e.g. `USD`.
    pub currency: String,
}

impl From<MeterTotal> for UsageMeter {
    fn from(total: MeterTotal) -> Self {
        UsageMeter {
            meter: total.meter,
            source_kind: total.source_kind,
            quantity: total.quantity,
            windows: total.windows,
            cost: total.cost,
        }
    }
}

/// A tenant's usage on one pool: the hourly windows that start in `[from, to)`, totalled per
/// meter. Only metered pools bill; a window is there once its hour has closed.
#[derive(SimpleObject)]
pub struct Usage {
    pub tenant_id: String,
    pub pool_id: String,
    pub from: DateTime<Utc>,
    pub to: DateTime<Utc>,
    /// The meters with a window in the range, by name.
    pub meters: Vec<UsageMeter>,
    /// What the meters cost at the pool's prices; null while the pool has no rate card.
    pub cost: Option<Cost>,
}

impl From<UsageView> for Usage {
    fn from(view: UsageView) -> Self {
        Usage {
            tenant_id: view.tenant_id,
            pool_id: view.pool_id,
            from: view.from,
            to: view.to,
            meters: view.meters.into_iter().map(UsageMeter::from).collect(),
            cost: view.cost.map(|(amount, currency)| Cost { amount, currency }),
        }
    }
}

#[derive(Default)]
pub struct UsageQuery;

#[Object]
impl UsageQuery {
    /// The tenant's usage on a pool offered to it, over at most 366 days
    /// (`compute:usage:read`), totalled over what the caller may read it of: a token of some
    /// projects reads those projects' usage.
    async fn usage(
        &self,
        ctx: &Context<'_>,
        tenant_id: String,
        pool_id: String,
        from: DateTime<Utc>,
        to: DateTime<Utc>,
    ) -> Result<Usage> {
        Ok(services(ctx).usage(actor(ctx)?, &tenant_id, &pool_id, from, to).await?.into())
    }
}
