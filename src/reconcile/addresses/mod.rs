//! Provider addresses in `vps.provider-resources`. A reserved IP has no name or tag at the
//! provider, so the row is the ownership record, and nothing is ever taken on trust:
//! - A reserve is sent once. One whose answer was lost cannot be found again, so the address
//!   goes to error for good instead of risking a second address; one refused or rate-limited
//!   reserved nothing and is sent again.
//! - An address released outside (gone at the provider, or another reservation's fingerprint
//!   or region there, or handed to a later reserve of the account) is lost for good: it forgets
//!   its IP and instance and is never called for again.
//! - The assignment is only ever made from free: an address the provider shows on a machine
//!   vps-graph did not put it on is an assignment error, and nothing is moved.
//!
//! Each run reads the address and what the provider shows of it, then does at most one provider
//! action (reserve, assign, unassign, release); a running action is looked at again 5 s later.
//! What it does, and what each answer means, is decided in `decide`; this module acts.
mod decide;
#[cfg(test)]
mod tests;

use super::{Next, Run, again_if_changed};
use crate::error::{Error, Result};
use crate::provider::digitalocean::DigitalOcean;
use crate::provider::{Family, Provider, ReservedAddress};
use crate::store::addresses::{self as store, QUOTA};
use crate::store::entity::provider_address as address;
use crate::store::state::{AddressFamily, Assignment, Desired, State};
use crate::store::{instances, lock, quota};
pub use decide::LOST_RESERVE;
use decide::{Observed, Step};

/// The provider's address family of an address row.
fn family(family: AddressFamily) -> Family {
    match family {
        AddressFamily::Ipv4 => Family::V4,
        AddressFamily::Ipv6 => Family::V6,
    }
}

struct Ctx<'a> {
    run: &'a Run<'a>,
    cloud: &'a DigitalOcean,
    family: Family,
}

/// Observe (the row, then the provider's view of its IP), decide (`decide`), act (at most one
/// call), write back.
pub async fn run(run: &Run<'_>) -> Result<Next> {
    let db = &run.services.db;
    let Some(a) = store::find(db, run.resource_id()).await? else {
        return Ok(Next::Done);
    };
    if a.state == State::Deleted {
        return Ok(Next::Done);
    }
    let provider = run.provider(&a.provider_account_id).await?;
    let cloud = match provider.as_ref() {
        Provider::DigitalOcean(cloud) => cloud.as_ref(),
        Provider::Aws(_) => return Err(super::not_offered("addresses", &a.provider_account_id)),
    };
    let ctx = Ctx { run, cloud, family: family(a.family) };
    if a.desired_state == Desired::Absent {
        return release(&ctx, &a).await;
    }
    if a.lost {
        return Ok(Next::Drift);
    }
    let Some(ip) = a.address.clone() else { return reserve(&ctx, &a).await };
    let found = match ctx.cloud.address_get(ctx.family, &ip).await {
        Ok(found) => found,
        Err(err) => return write_decided(run, &a, decide::look_failed(&a, &err)).await,
    };
    let found = match decide::still_ours(&a, &ip, found) {
        Ok(found) => found,
        Err(message) => return write(run, &a, Observed::of(&a).lost(message), Next::Drift).await,
    };
    if a.state != State::Ready {
        return write(run, &a, Observed::of(&a).state(State::Ready, None), Next::Now).await;
    }
    converge_assignment(&ctx, &a, &found).await
}

/// Reserves the address, once: the attempt is recorded before the call, so an answer that never
/// came leaves a trace, and the address goes to error rather than being reserved twice. What
/// the call ended in is recorded on the row as it is after the call (an assign or a delete asked
/// during the call must not lose an IP, nor make a refusal look like a lost answer).
async fn reserve(ctx: &Ctx<'_>, a: &address::Model) -> Result<Next> {
    let run = ctx.run;
    match decide::before_reserve(a) {
        Step::Write(observed, next) => return write(run, a, observed, next).await,
        Step::Lost(next) => return record_lost(run, &a.id, next).await,
        Step::Call => {}
    }
    let Some(marked) = mark_reserve_attempt(run, a).await? else { return Ok(Next::Now) };
    let outcome = ctx.cloud.address_reserve(ctx.family, &marked.region).await;
    record(run, &a.id, |fresh| decide::reserved(fresh, &outcome)).await
}

/// Releases the address at the provider if it still is ours there (see `decide::before_release`).
async fn release(ctx: &Ctx<'_>, a: &address::Model) -> Result<Next> {
    let run = ctx.run;
    let ip = a.address.clone().filter(|_| !a.lost);
    let ours = match &ip {
        None => None,
        Some(ip) => match ctx.cloud.address_get(ctx.family, ip).await {
            Ok(found) => Some(decide::still_ours(a, ip, found).is_ok()),
            Err(err) => return write_decided(run, a, decide::look_failed(a, &err)).await,
        },
    };
    match (decide::before_release(a, ours), ip) {
        (Step::Write(observed, next), _) => write(run, a, observed, next).await,
        (Step::Lost(next), _) => record_lost(run, &a.id, next).await,
        (Step::Call, Some(ip)) => {
            let outcome = ctx.cloud.address_release(ctx.family, &ip).await;
            write_decided(run, a, decide::released(a, &outcome)).await
        }
        (Step::Call, None) => Err(Error::internal("a release decided with no IP")),
    }
}

/// One step toward the assignment the tenant wants: follow a running action, assign it to the
/// instance's machine from free, or unassign it from the machine vps-graph put it on.
async fn converge_assignment(ctx: &Ctx<'_>, a: &address::Model, found: &ReservedAddress) -> Result<Next> {
    let run = ctx.run;
    if let Some(action) = &a.action_id {
        let status = ctx.cloud.action_get(action.parse().unwrap_or_default()).await;
        return write_decided(run, a, decide::followed(a, &status)).await;
    }
    let Some(instance_id) = &a.instance_id else { return Ok(Next::Drift) };
    let on = instances::find(&run.services.db, instance_id).await?;
    let machine = on.as_ref().and_then(|i| i.provider_id.clone());
    let decided = match a.assignment_state {
        Assignment::Deleting => match decide::before_unassign(a, found, machine.as_deref()) {
            Step::Call => decide::unassigned(a, &ctx.cloud.address_unassign(ctx.family, &found.ip).await),
            step => return write_step(run, a, step).await,
        },
        _ => match on.filter(|i| i.state == State::Ready && i.desired_state == Desired::Present).and(machine) {
            Some(machine) => match decide::before_assign(a, found, &machine) {
                Step::Call => decide::assigned(a, &ctx.cloud.address_assign(ctx.family, &found.ip, &machine).await),
                step => return write_step(run, a, step).await,
            },
            None => decide::instance_not_ready(a),
        },
    };
    write_decided(run, a, decided).await
}

async fn write_step(run: &Run<'_>, a: &address::Model, step: Step) -> Result<Next> {
    match step {
        Step::Write(observed, next) => write(run, a, observed, next).await,
        Step::Lost(next) => record_lost(run, &a.id, next).await,
        Step::Call => Err(Error::internal("a provider call decided where none is made")),
    }
}

async fn write_decided(run: &Run<'_>, a: &address::Model, (observed, next): (Observed, Next)) -> Result<Next> {
    write(run, a, observed, next).await
}

/// Lost for good as `LOST_RESERVE` says, on the row as it is now.
async fn record_lost(run: &Run<'_>, id: &str, next: Next) -> Result<Next> {
    record(run, id, |fresh| (Observed::of(fresh).lost(LOST_RESERVE.into()), next)).await
}

/// Records a reserve attempt before the call (see `Run::mark_attempt`).
async fn mark_reserve_attempt(run: &Run<'_>, a: &address::Model) -> Result<Option<address::Model>> {
    run.mark_attempt::<address::Entity>(
        &[("provider_addresses", &a.id)],
        &a.id,
        a.generation,
        address::Column::ReserveAttempts,
    )
    .await
}

/// Applies what `decide` makes of the row as it is now (locked), if this run still holds its lease: for
/// what a provider call did that must not be lost to a change made during the call. An IP newly
/// recorded that another live row of the account still records tells that row its IP was
/// released outside (the provider handed it out again): that row is lost, in the same
/// transaction.
async fn record(run: &Run<'_>, id: &str, decide: impl FnOnce(&address::Model) -> (Observed, Next)) -> Result<Next> {
    let services = run.services;
    let txn = services.begin().await?;
    lock(&txn, "provider_addresses", id).await?;
    let Some(fresh) = store::find(&txn, id).await? else { return Ok(Next::Done) };
    let (observed, next) = decide(&fresh);
    if observed == Observed::of(&fresh) {
        return Ok(next);
    }
    let now = services.clock.now();
    let mut events = Vec::new();
    if let (None, Some(ip)) = (&fresh.address, &observed.address) {
        for other in store::recorded_elsewhere(&txn, &fresh, ip).await? {
            let message = format!(
                "reserved IP {ip} was released at the provider outside vps-graph (the provider handed it to another reserve); it is lost for good: delete this address"
            );
            let lost = Observed::of(&other).lost(message);
            if let Some(written) = lost.status(&other).write::<address::Entity>(&txn, run.claimed, now).await? {
                events.push(crate::views::addresses::event("error", &written));
            }
        }
    }
    // Decided on the row as it is now, locked: its generation is the one read.
    let Some(written) = observed.status(&fresh).write::<address::Entity>(&txn, run.claimed, now).await? else {
        return Ok(Next::Now);
    };
    events.push(crate::views::addresses::event(decide::event_type(&fresh, &observed), &written));
    services.commit(txn, events).await?;
    Ok(next)
}

/// Writes what was observed with its event, if this run still holds its lease
/// (`store::status`). A released address's `addresses` is refunded.
async fn write(run: &Run<'_>, a: &address::Model, observed: Observed, next: Next) -> Result<Next> {
    if observed == Observed::of(a) {
        return Ok(next);
    }
    let services = run.services;
    let txn = services.begin().await?;
    lock(&txn, "provider_addresses", &a.id).await?;
    let Some(written) = observed.status(a).write::<address::Entity>(&txn, run.claimed, services.clock.now()).await?
    else {
        return Ok(Next::Now);
    };
    if written.state == State::Deleted {
        let holding = quota::Holding { tenant_id: &a.tenant_id, pool_id: &a.pool_id, quota: QUOTA, resource_id: &a.id };
        quota::hold(&txn, &holding, 0).await?;
    }
    services
        .commit(txn, vec![crate::views::addresses::event(decide::event_type(a, &Observed::of(&written)), &written)])
        .await?;
    Ok(again_if_changed(next, a.generation, written.generation))
}
