//! `vps.networks`: a network's subnets, converged by its account's provider's strategy:
//! `digitalocean` (one VPC per subnet) or `aws` (one VPC, a subnet per zone). Both decide as plain
//! functions of the rows and what the provider showed, tested without a network, and share the
//! network's state rule, its lock and the create-attempt marker below. The network's firewall
//! rules (`firewalls`) are applied in the same run, and deleted before its subnets.
mod aws;
mod digitalocean;
mod firewalls;

use super::{Next, Reconciler, Run};
use crate::error::{Error, Result};
use crate::provider::{AccountRef, Provider};
use crate::store::entity::network_subnet as subnet;
use crate::store::networks::{self as store, RECONCILER, subnets_of};
use crate::store::state::{Desired, State};

pub struct NetworkReconciler;

#[async_trait::async_trait]
impl Reconciler for NetworkReconciler {
    fn kind(&self) -> &'static str {
        RECONCILER
    }

    async fn run(&self, run: &Run<'_>) -> Result<Next> {
        let services = run.services;
        let Some(network) = store::find(&services.db, run.resource_id()).await? else {
            return Ok(Next::Done);
        };
        if network.state == State::Deleted {
            return Ok(Next::Done);
        }
        let subnets = subnets_of(&services.db, &network.id).await?;
        let account = crate::store::pools::find_account(&services.db, &network.provider_account_id)
            .await?
            .ok_or_else(|| Error::internal("network without its account"))?;
        let provider = run.providers.for_account(&AccountRef {
            id: &account.id,
            kind: account.kind,
            api_url: &account.api_url,
            credential_ref: &account.credential_ref,
            sim: account.sim,
        });
        // Rules (and the open egress) go before the subnets and the VPC that hold them.
        let rules = firewalls::run(run, &network, &provider).await?;
        match rules {
            Some(Next::Now) => return Ok(Next::Now),
            Some(next) if network.desired_state == Desired::Absent => return Ok(next),
            _ => {}
        }
        let next = match provider.as_ref() {
            Provider::Aws(cloud) => aws::run(run, network, subnets, cloud).await?,
            Provider::DigitalOcean(cloud) => digitalocean::run(run, &subnets, cloud).await?,
        };
        Ok(match (rules, next) {
            (_, Next::Done) | (None, _) => next,
            (Some(rules), next) => firewalls::sooner(rules, next),
        })
    }
}

/// The network's state and message from its subnets'.
pub fn aggregate(desired: Desired, subnets: &[subnet::Model]) -> (State, Option<String>) {
    if desired == Desired::Absent {
        let done = subnets.iter().all(|s| s.state == State::Deleted);
        let message = subnets.iter().find_map(|s| s.message.clone());
        return (if done { State::Deleted } else { State::Deleting }, if done { None } else { message });
    }
    let live: Vec<&subnet::Model> = subnets.iter().filter(|s| s.desired_state == Desired::Present).collect();
    if let Some(failed) = live.iter().find(|s| s.state == State::Error) {
        return (State::Error, failed.message.clone());
    }
    if !live.is_empty() && live.iter().all(|s| s.state == State::Ready) {
        return (State::Ready, None);
    }
    (State::Pending, live.iter().find_map(|s| s.message.clone()))
}

/// Refunds a network's `networks` once the write made it deleted, in the write's transaction.
async fn refund_if_deleted(
    txn: &sea_orm::DatabaseTransaction,
    written: &crate::store::entity::network::Model,
) -> Result<()> {
    if written.state != State::Deleted {
        return Ok(());
    }
    crate::store::quota::hold_all(txn, &written.tenant_id, &written.pool_id, &written.id, &[(store::QUOTA, 0)]).await
}

/// Records a create attempt on the subnet before the call is made (see `Run::mark_attempt`),
/// under the network's lock; returns the subnet as written, or None when the run must look again.
async fn mark_create_attempt(run: &Run<'_>, current: &subnet::Model) -> Result<Option<subnet::Model>> {
    let locks = [("networks", current.network_id.as_str())];
    run.mark_attempt::<subnet::Entity>(&locks, &current.id, current.generation, subnet::Column::CreateAttempts).await
}
