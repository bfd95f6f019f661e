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
//! Each run reads the address, then does at most one provider action (reserve, assign,
//! unassign, release); a running action is looked at again 5 s later.
use sea_orm::{ColumnTrait, EntityTrait, QueryFilter};

use super::{ACTION_POLL_MS, ERROR_RETRY_MS, Next, RETRY_LATER_MS, Run, again_if_changed, is_failure, retry_after};
use crate::error::{Error, Result};
use crate::provider::{ActionStatus, Actions, Addresses, Family, Provider, ProviderError, ReservedAddress};
use crate::service::addresses::{self as svc};
use crate::service::rows;
use crate::store::entity::{instance, provider_address as address};
use crate::store::quota;
use crate::store::state::{Assignment, Desired, State};
use crate::store::status::StatusWrite;

/// The message of an address whose reserve's answer never came.
pub const LOST_RESERVE: &str = "the reserve's answer never came, and a reserved IP carries no name to find it by: it is \
     not reserved again. Delete this address, and check the account's reserved IPs for one that is not assigned";

/// The address fields a run writes.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Observed {
    state: State,
    address: Option<String>,
    fingerprint: Option<String>,
    reserve_attempts: i32,
    lost: bool,
    message: Option<String>,
    instance_id: Option<String>,
    assignment_state: Assignment,
    assignment_message: Option<String>,
    action_id: Option<String>,
}

impl Observed {
    fn of(a: &address::Model) -> Self {
        Observed {
            state: a.state,
            address: a.address.clone(),
            fingerprint: a.fingerprint.clone(),
            reserve_attempts: a.reserve_attempts,
            lost: a.lost,
            message: a.message.clone(),
            instance_id: a.instance_id.clone(),
            assignment_state: a.assignment_state,
            assignment_message: a.assignment_message.clone(),
            action_id: a.action_id.clone(),
        }
    }

    fn state(mut self, state: State, message: Option<String>) -> Self {
        self.state = state;
        self.message = message;
        self
    }

    fn assignment(mut self, state: Assignment, message: Option<String>) -> Self {
        self.assignment_state = state.to_owned();
        self.assignment_message = message;
        self.action_id = None;
        if state == Assignment::None {
            self.instance_id = None;
        }
        self
    }

    /// The row's write: what the provider holds and did as facts; the states, messages and the
    /// instance (the user's to change) as decided at the generation the run read.
    fn status(&self, a: &address::Model) -> StatusWrite {
        StatusWrite::of(&a.id, a.generation)
            .fact(address::Column::Address, self.address.clone())
            .fact(address::Column::Fingerprint, self.fingerprint.clone())
            .fact(address::Column::ReserveAttempts, self.reserve_attempts)
            .fact(address::Column::Lost, self.lost)
            .fact(address::Column::ActionId, self.action_id.clone())
            .decided(address::Column::Message, self.message.clone())
            .decided(address::Column::InstanceId, self.instance_id.clone())
            .decided(address::Column::AssignmentState, self.assignment_state)
            .decided(address::Column::AssignmentMessage, self.assignment_message.clone())
            .state(self.state)
    }

    /// Lost for good: the IP and its instance are forgotten, and it is never called for again.
    fn lost(self, message: String) -> Self {
        Observed {
            address: None,
            lost: true,
            ..self.assignment(Assignment::None, None).state(State::Error, Some(message))
        }
    }
}

struct Ctx<'a> {
    run: &'a Run<'a>,
    api: &'a dyn Addresses,
    actions: &'a dyn Actions,
    family: Family,
}

pub async fn run(run: &Run<'_>) -> Result<Next> {
    let db = &run.services.db;
    let Some(a) = address::Entity::find_by_id(run.resource_id().to_owned()).one(db).await? else {
        return Ok(Next::Done);
    };
    if a.state == State::Deleted {
        return Ok(Next::Done);
    }
    let provider = run.provider(&a.provider_account_id).await?;
    let Provider { addresses: Some(api), actions: Some(actions), .. } = provider.as_ref() else {
        return Err(Error::internal(format!("account {} offers no addresses", a.provider_account_id)));
    };
    let ctx = Ctx { run, api: api.as_ref(), actions: actions.as_ref(), family: svc::family(a.family) };
    if a.desired_state == Desired::Absent {
        return release(&ctx, &a).await;
    }
    if a.lost {
        return Ok(Next::Drift);
    }
    let Some(ip) = a.address.clone() else { return reserve(&ctx, &a).await };
    let found = match ctx.api.address_get(ctx.family, &ip).await {
        Ok(found) => found,
        Err(err) => return write(run, &a, waiting(Observed::of(&a), &err), retry_after(&err)).await,
    };
    let found = match still_ours(&a, &ip, found) {
        Ok(found) => found,
        Err(message) => return write(run, &a, Observed::of(&a).lost(message), Next::Drift).await,
    };
    if a.state != State::Ready {
        return write(run, &a, Observed::of(&a).state(State::Ready, None), Next::Now).await;
    }
    converge_assignment(&ctx, &a, &found).await
}

/// The provider's view of our IP, if it is still our reservation; else why it is lost.
fn still_ours(
    a: &address::Model,
    ip: &str,
    found: Option<ReservedAddress>,
) -> std::result::Result<ReservedAddress, String> {
    let released = |why: &str| {
        format!(
            "reserved IP {ip} was released at the provider outside vps-graph ({why}); it is lost for good: delete this address"
        )
    };
    let Some(found) = found else { return Err(released("it is gone")) };
    if found.region != a.region {
        return Err(released(&format!("it is reserved in {} now", found.region)));
    }
    if a.fingerprint.is_some() && found.reserved_at != a.fingerprint {
        return Err(released("another reservation holds it now"));
    }
    Ok(found)
}

/// A provider error while looking or acting: say why and wait.
fn waiting(now: Observed, err: &ProviderError) -> Observed {
    Observed { message: Some(err.message().to_owned()), ..now }
}

/// Reserves the address, once: the attempt is recorded before the call, so an answer that never
/// came leaves a trace, and the address goes to error rather than being reserved twice. What
/// the call ended in is recorded whatever else changed on the row meanwhile (an assign or a
/// delete asked during the call must not lose an IP, nor make a refusal look like a lost answer).
async fn reserve(ctx: &Ctx<'_>, a: &address::Model) -> Result<Next> {
    let run = ctx.run;
    if a.reserve_attempts > 0 {
        return record(run, &a.id, |now, _| now.lost(LOST_RESERVE.into()), Next::Drift).await;
    }
    let Some(marked) = mark_reserve_attempt(run, a).await? else { return Ok(Next::Now) };
    match ctx.api.address_reserve(ctx.family, &marked.region).await {
        Ok(made) => {
            let reserved = move |now: Observed, fresh: &address::Model| {
                let reserved = Observed { address: Some(made.ip), fingerprint: made.reserved_at, ..now };
                match fresh.desired_state == Desired::Present {
                    true => reserved.state(State::Ready, None),
                    false => reserved,
                }
            };
            record(run, &a.id, reserved, Next::Now).await
        }
        // Nothing was reserved: it is sent again.
        Err(err @ ProviderError::RetryLater { .. }) => {
            let next = retry_after(&err);
            let again = |now: Observed, _: &address::Model| Observed {
                reserve_attempts: now.reserve_attempts - 1,
                ..waiting(now, &err)
            };
            record(run, &a.id, again, next).await
        }
        Err(err) if is_failure(&err) => {
            let refused = |now: Observed, _: &address::Model| Observed {
                reserve_attempts: now.reserve_attempts - 1,
                ..now.state(State::Error, Some(err.message().to_owned()))
            };
            record(run, &a.id, refused, Next::After(ERROR_RETRY_MS)).await
        }
        Err(err) => {
            let message = format!("{LOST_RESERVE} ({})", err.message());
            record(run, &a.id, |now, _| now.lost(message), Next::Drift).await
        }
    }
}

/// Releases the address at the provider, if it still is ours there; a lost one, one never
/// reserved, or one whose reserve was lost finishes without a provider call. A reserve whose
/// outcome nobody saw (the process died before writing its answer back) is first recorded as
/// lost, saying so, so that the tenant checks the account whatever order the delete came in.
async fn release(ctx: &Ctx<'_>, a: &address::Model) -> Result<Next> {
    let run = ctx.run;
    if a.address.is_none() && a.reserve_attempts > 0 && !a.lost {
        return record(run, &a.id, |now, _| now.lost(LOST_RESERVE.into()), Next::Now).await;
    }
    let deleted = Observed { action_id: None, ..Observed::of(a).state(State::Deleted, None) };
    let Some(ip) = a.address.clone().filter(|_| !a.lost) else { return write(run, a, deleted, Next::Done).await };
    let found = match ctx.api.address_get(ctx.family, &ip).await {
        Ok(found) => found,
        Err(err) => return write(run, a, waiting(Observed::of(a), &err), retry_after(&err)).await,
    };
    if still_ours(a, &ip, found).is_err() {
        // Someone else's reservation now, or gone: never released by us.
        return write(run, a, deleted, Next::Done).await;
    }
    match ctx.api.address_release(ctx.family, &ip).await {
        Ok(_) => write(run, a, deleted, Next::Done).await,
        Err(err) => {
            let next = if is_failure(&err) { Next::After(RETRY_LATER_MS) } else { retry_after(&err) };
            write(run, a, waiting(Observed::of(a), &err), next).await
        }
    }
}

/// One step toward the assignment the tenant wants: follow a running action, assign it to the
/// instance's machine from free, or unassign it from the machine vps-graph put it on.
async fn converge_assignment(ctx: &Ctx<'_>, a: &address::Model, found: &ReservedAddress) -> Result<Next> {
    let run = ctx.run;
    let now = Observed::of(a);
    if let Some(action) = &a.action_id {
        let (observed, next) = match ctx.actions.action_get(action.parse().unwrap_or_default()).await {
            Ok(Some(ActionStatus::InProgress)) => (now, Next::After(ACTION_POLL_MS)),
            // Failed: an assign is the assignment's error, asked again by the periodic pass; an
            // unassign stays wanted (deleting), and is asked again as well.
            Ok(Some(ActionStatus::Errored)) if a.assignment_state == Assignment::Deleting => {
                let message = Some("the provider's unassign failed; it is asked again".to_owned());
                (Observed { action_id: None, assignment_message: message, ..now }, Next::After(ERROR_RETRY_MS))
            }
            Ok(Some(ActionStatus::Errored)) => (
                now.assignment(Assignment::Error, Some("the provider's assign failed".into())),
                Next::After(ERROR_RETRY_MS),
            ),
            // Done or forgotten: what the address shows decides.
            Ok(_) => (Observed { action_id: None, ..now }, Next::Now),
            Err(err) => (waiting(now, &err), retry_after(&err)),
        };
        return write(run, a, observed, next).await;
    }
    let Some(instance_id) = &a.instance_id else { return Ok(Next::Drift) };
    let on = instance::Entity::find_by_id(instance_id.clone()).one(&run.services.db).await?;
    let machine = on.as_ref().and_then(|i| i.provider_id.clone());
    let (observed, next) = match a.assignment_state {
        Assignment::Deleting => unassign(ctx, a, found, machine.as_deref()).await,
        _ => match on.filter(|i| i.state == State::Ready && i.desired_state == Desired::Present).and(machine) {
            Some(machine) => assign(ctx, a, found, &machine).await,
            None => {
                let message = Some("waiting for the instance to be ready".to_owned());
                (Observed { assignment_message: message, ..now }, Next::After(RETRY_LATER_MS))
            }
        },
    };
    write(run, a, observed, next).await
}

async fn assign(ctx: &Ctx<'_>, a: &address::Model, found: &ReservedAddress, machine: &str) -> (Observed, Next) {
    let now = Observed::of(a);
    match found.droplet_id.as_deref() {
        Some(on) if on == machine => (now.assignment(Assignment::Ready, None), Next::Drift),
        Some(other) => {
            let message = format!(
                "the provider reports the address on Droplet {other}, which vps-graph did not put it on; nothing was moved"
            );
            (now.assignment(Assignment::Error, Some(message)), Next::After(ERROR_RETRY_MS))
        }
        None if found.locked => (now, Next::After(ACTION_POLL_MS)),
        None => match ctx.api.address_assign(ctx.family, &found.ip, machine).await {
            Ok(action) => (
                Observed { action_id: Some(action.to_string()), ..now.assignment(Assignment::Pending, None) },
                Next::After(ACTION_POLL_MS),
            ),
            Err(err) => assignment_waits(now, &err),
        },
    }
}

/// Unassigns it from the machine vps-graph put it on; on no machine, or on one that is not
/// ours, it lets go without a call.
async fn unassign(
    ctx: &Ctx<'_>,
    a: &address::Model,
    found: &ReservedAddress,
    machine: Option<&str>,
) -> (Observed, Next) {
    let now = Observed::of(a);
    match found.droplet_id.as_deref() {
        Some(on) if Some(on) == machine => match ctx.api.address_unassign(ctx.family, &found.ip).await {
            Ok(action) => (Observed { action_id: Some(action.to_string()), ..now }, Next::After(ACTION_POLL_MS)),
            Err(err) => assignment_waits(now, &err),
        },
        _ => (now.assignment(Assignment::None, None), Next::Drift),
    }
}

/// A refused assign or unassign shows as the assignment's error (retried every 5 minutes); a
/// machine busy with another action ("pending event") is asked again 5 s later.
fn assignment_waits(now: Observed, err: &ProviderError) -> (Observed, Next) {
    let message = Some(err.message().to_owned());
    if err.refusal() == Some(crate::provider::Refusal::PendingEvent) {
        return (Observed { assignment_message: message, ..now }, Next::After(ACTION_POLL_MS));
    }
    if is_failure(err) {
        let failed = Observed { assignment_state: Assignment::Error, assignment_message: message, ..now };
        return (failed, Next::After(ERROR_RETRY_MS));
    }
    (Observed { assignment_message: message, ..now }, retry_after(err))
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

/// The event a change of the address publishes.
fn event_type(before: &address::Model, after: &Observed) -> &'static str {
    let became = |s: State| after.state == s && before.state != s;
    let assignment_became = |s: Assignment| after.assignment_state == s && before.assignment_state != s;
    match () {
        _ if became(State::Deleted) => "deleted",
        _ if became(State::Ready) => "ready",
        _ if became(State::Error) => "error",
        _ if assignment_became(Assignment::Ready) => "assigned",
        _ if assignment_became(Assignment::None) => "unassigned",
        _ if assignment_became(Assignment::Error) => "error",
        _ => "updated",
    }
}

/// Applies `change` to the row as it is now (locked), if this run still holds its lease: for
/// what a provider call did that must not be lost to a change made during the call. An IP newly
/// recorded that another live row of the account still records tells that row its IP was
/// released outside (the provider handed it out again): that row is lost, in the same
/// transaction.
async fn record(
    run: &Run<'_>,
    id: &str,
    change: impl FnOnce(Observed, &address::Model) -> Observed,
    next: Next,
) -> Result<Next> {
    let services = run.services;
    let txn = services.begin().await?;
    rows::lock(&txn, "provider_addresses", id).await?;
    let Some(fresh) = address::Entity::find_by_id(id.to_owned()).one(&txn).await? else { return Ok(Next::Done) };
    let observed = change(Observed::of(&fresh), &fresh);
    if observed == Observed::of(&fresh) {
        return Ok(next);
    }
    let now = services.clock.now();
    let mut events = Vec::new();
    if let (None, Some(ip)) = (&fresh.address, &observed.address) {
        for other in recorded_elsewhere(&txn, &fresh, ip).await? {
            let message = format!(
                "reserved IP {ip} was released at the provider outside vps-graph (the provider handed it to another reserve); it is lost for good: delete this address"
            );
            let lost = Observed::of(&other).lost(message);
            if let Some(written) = lost.status(&other).write::<address::Entity>(&txn, run.claimed, now).await? {
                events.push(svc::event("error", &written));
            }
        }
    }
    // Decided on the row as it is now, locked: its generation is the one read.
    let Some(written) = observed.status(&fresh).write::<address::Entity>(&txn, run.claimed, now).await? else {
        return Ok(Next::Now);
    };
    events.push(svc::event(event_type(&fresh, &observed), &written));
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
    rows::lock(&txn, "provider_addresses", &a.id).await?;
    let Some(written) = observed.status(a).write::<address::Entity>(&txn, run.claimed, services.clock.now()).await?
    else {
        return Ok(Next::Now);
    };
    if written.state == State::Deleted {
        let holding =
            quota::Holding { tenant_id: &a.tenant_id, pool_id: &a.pool_id, quota: svc::QUOTA, resource_id: &a.id };
        quota::hold(&txn, &holding, 0).await?;
    }
    services.commit(txn, vec![svc::event(event_type(a, &Observed::of(&written)), &written)]).await?;
    Ok(again_if_changed(next, a.generation, written.generation))
}

/// Other live rows of the account that record `ip`, locked.
async fn recorded_elsewhere(
    txn: &sea_orm::DatabaseTransaction,
    a: &address::Model,
    ip: &str,
) -> Result<Vec<address::Model>> {
    let found = address::Entity::find()
        .filter(address::Column::ProviderAccountId.eq(a.provider_account_id.clone()))
        .filter(address::Column::Address.eq(ip))
        .filter(address::Column::Id.ne(a.id.clone()))
        .filter(address::Column::State.ne(State::Deleted))
        .all(txn)
        .await?;
    for other in &found {
        rows::lock(txn, "provider_addresses", &other.id).await?;
    }
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::state::AddressFamily;

    fn row(fingerprint: Option<&str>) -> address::Model {
        let t = chrono::Utc::now();
        address::Model {
            id: "paddr_1".into(),
            tenant_id: "acme".into(),
            project_id: None,
            pool_id: "pool_1".into(),
            provider_account_id: "pacct_1".into(),
            name: "ingress".into(),
            region: "nyc3".into(),
            family: AddressFamily::Ipv6,
            state: State::Ready,
            desired_state: Desired::Present,
            address: Some("2604::1".into()),
            fingerprint: fingerprint.map(str::to_owned),
            reserve_attempts: 1,
            lost: false,
            message: None,
            instance_id: Some("inst_1".into()),
            assignment_state: Assignment::Ready,
            assignment_message: None,
            action_id: None,
            version: 3,
            generation: 1,
            created_at: t,
            updated_at: t,
            ready_at: Some(t),
            deleted_at: None,
        }
    }

    fn seen(region: &str, reserved_at: Option<&str>) -> Option<ReservedAddress> {
        Some(ReservedAddress {
            ip: "2604::1".into(),
            region: region.into(),
            droplet_id: None,
            locked: false,
            reserved_at: reserved_at.map(str::to_owned),
        })
    }

    #[test]
    fn an_address_is_ours_only_while_the_provider_shows_our_reservation() {
        let ours = row(Some("2026-12-01T10:00:00.123Z"));
        assert!(still_ours(&ours, "2604::1", seen("nyc3", Some("2026-12-01T10:00:00.123Z"))).is_ok());
        assert!(still_ours(&ours, "2604::1", None).unwrap_err().contains("gone"));
        assert!(still_ours(&ours, "2604::1", seen("sfo3", Some("2026-12-01T10:00:00.123Z"))).is_err());
        let other = still_ours(&ours, "2604::1", seen("nyc3", Some("2026-12-01T11:00:00.000Z")));
        assert!(other.unwrap_err().contains("another reservation"));
        // A reserved IPv4 has no fingerprint: its region alone can tell.
        let ipv4 = row(None);
        assert!(still_ours(&ipv4, "2604::1", seen("nyc3", None)).is_ok());
    }

    #[test]
    fn a_lost_address_forgets_its_ip_and_instance() {
        let lost = Observed::of(&row(None)).lost("released".into());
        assert_eq!((lost.address, lost.instance_id, lost.lost), (None, None, true));
        assert_eq!((lost.state, lost.assignment_state), (State::Error, Assignment::None));
    }

    #[test]
    fn address_events_name_what_changed() {
        let before = row(None);
        let now = Observed::of(&before);
        assert_eq!(event_type(&before, &now.clone().assignment(Assignment::None, None)), "unassigned");
        assert_eq!(event_type(&before, &now.clone().assignment(Assignment::Error, Some("x".into()))), "error");
        assert_eq!(event_type(&before, &now.clone().state(State::Deleted, None)), "deleted");
        let pending = address::Model { assignment_state: Assignment::Pending, ..row(None) };
        assert_eq!(event_type(&pending, &Observed::of(&pending).assignment(Assignment::Ready, None)), "assigned");
        assert_eq!(event_type(&before, &Observed { message: Some("busy".into()), ..now }), "updated");
    }
}
