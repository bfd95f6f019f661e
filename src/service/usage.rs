//! Usage: the meters resources bill on a metered pool and the totals a tenant reads of them. The
//! windows themselves are written by the `vps.ancillary-usage` pass (`reconcile::usage`); this
//! module only reads them. Decided on the tenant with `compute:usage:read`, and totalled over
//! the resources the caller may read it of (a project's token: its projects').
use chrono::{DateTime, Duration, Utc};

use super::plan::round_cents;
use super::{rows, validate};
use crate::authz::Actor;
use crate::error::{Error, Result};
use crate::services::Services;

pub const READ: &str = "compute:usage:read";
/// The longest range one `usage` call totals.
pub const MAX_RANGE_DAYS: i64 = 366;

/// The total of one meter over a range.
#[derive(Clone, Debug, PartialEq)]
pub struct MeterTotal {
    pub meter: String,
    pub source_kind: String,
    pub quantity: f64,
    /// How many hourly windows the total is made of.
    pub windows: i64,
    /// The quantity at the pool's price, when the pool has a rate card.
    pub cost: Option<f64>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct UsageView {
    pub tenant_id: String,
    pub pool_id: String,
    pub from: DateTime<Utc>,
    pub to: DateTime<Utc>,
    /// Only the meters with a window in the range, by meter name.
    pub meters: Vec<MeterTotal>,
    /// The meters' costs summed, in the rate card's currency: (amount, currency).
    pub cost: Option<(f64, String)>,
}

impl Services {
    /// What the tenant's resources on `pool_id` billed in the windows that start in `[from, to)`.
    pub async fn usage(
        &self,
        actor: &Actor,
        tenant_id: &str,
        pool_id: &str,
        from: DateTime<Utc>,
        to: DateTime<Utc>,
    ) -> Result<UsageView> {
        validate::tenant_id("tenantId", tenant_id)?;
        check_range(from, to)?;
        actor.decide_list(READ, tenant_id)?;
        let card =
            crate::store::pools::RateCard::of(&rows::offered_pool(&self.db, tenant_id, pool_id).await?.pool.rates);
        // Totalled over what the caller may read: a project's token reads its projects' usage.
        let readable = actor.readable(READ, tenant_id, None);
        let totals = crate::store::usage::totals(&self.db, tenant_id, pool_id, &readable, from, to).await?;
        let meters = totals
            .into_iter()
            .map(|(meter, source_kind, quantity, windows)| {
                let cost = card.as_ref().map(|card| round_cents(card.price(&meter) * quantity));
                MeterTotal { meter, source_kind, quantity, windows, cost }
            })
            .collect::<Vec<_>>();
        let cost = card.map(|card| {
            let amount = round_cents(meters.iter().filter_map(|m| m.cost).sum());
            (amount, card.currency)
        });
        Ok(UsageView { tenant_id: tenant_id.to_owned(), pool_id: pool_id.to_owned(), from, to, meters, cost })
    }
}

fn check_range(from: DateTime<Utc>, to: DateTime<Utc>) -> Result<()> {
    if from >= to {
        return Err(Error::invalid_input("to", "to must be after from"));
    }
    if to - from > Duration::days(MAX_RANGE_DAYS) {
        return Err(Error::invalid_input("to", format!("a range spans at most {MAX_RANGE_DAYS} days")));
    }
    Ok(())
}
