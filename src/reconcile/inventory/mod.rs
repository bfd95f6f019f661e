//! `vps.inventory`: drift is read by listing, not one resource at a time. One work item per
//! provider account lists, once an hour, each kind the account has settled resources of, in
//! pages of the API's largest size: on DigitalOcean volumes, shares and their snapshots, reserved
//! IPv4 and IPv6, this deployment's Droplets and VPCs (pages of 200); on AWS, by region, the VPCs
//! and subnets (adopted ones carry no tag of ours), the security groups and instances carrying
//! this deployment's ownership tag (pages of 1,000), and the EFS (pages of 100) and FSx file
//! systems. It sorts every settled resource by
//! what the listings show:
//!
//! - as recorded: its own drift read is put off past the next pass, so a settled resource costs
//!   no call of its own while the passes run;
//! - absent or changed: its own drift read is due now, and that read decides, as it always did
//!   (a resource gone outside goes to ERROR and is never made again; a share's missing VPC or a
//!   filesystem group's missing rule is put back). A listing is never taken as proof of absence
//!   on its own.
//!
//! EFS has no account-wide listing of mount targets: a file system's description counts them,
//! and a count other than one per zone sends the filesystem to its own read, which lists them.
//! A pass that meets a provider in trouble concludes nothing from the listings it could not take:
//! those resources keep their own hourly reads. So does a network with firewall rules (its run
//! reads its cloud firewalls or security groups, which the listings here do not compare). The
//! pass spends the account's budget as drift, after what users asked and what is being followed.
mod compare;

use compare::{Expect, Expected, Listing, Need, Sorted};

use super::{DRIFT_MS, Next, Reconciler, Run, drift_due, retry_after};
use crate::error::Result;
use crate::provider::aws::Aws;
use crate::provider::digitalocean::DigitalOcean;
use crate::provider::{Family, Provider, ProviderError, ProviderKind, ownership_tag};
use crate::reconcile::filesystems::wanted_rules;
use crate::store::state::FilesystemKind;
use crate::store::{filesystems, instances, inventory as settled, networks, pools, queue, volumes};

pub use crate::store::inventory::RECONCILER as KIND;
/// How long after the next pass was due a resource found as recorded waits before it is read on
/// its own: the passes have this long to be late before any own read is spent.
const GRACE_MS: i64 = 15 * 60_000;

pub struct InventoryReconciler;

#[async_trait::async_trait]
impl Reconciler for InventoryReconciler {
    fn kind(&self) -> &'static str {
        KIND
    }

    async fn run(&self, run: &Run<'_>) -> Result<Next> {
        let db = &run.services.db;
        let Some(account) = pools::find_account(db, run.resource_id()).await? else { return Ok(Next::Done) };
        let listed_at = run.services.clock.now_ms();
        let expected = match account.kind {
            ProviderKind::Digitalocean => expected_on_digitalocean(db, &account.id).await?,
            ProviderKind::Aws => expected_on_aws(db, &account.id).await?,
        };
        if expected.is_empty() {
            // Nothing settled, nothing to list: no drift read is behind.
            mark_listed(db, &account.id, listed_at).await?;
            return Ok(Next::Drift);
        }
        let provider = run.provider(&account.id).await?;
        let (listing, trouble) = take(&provider, &run.services.deployment, &expected).await;
        let sorted = compare::sort(&expected, &listing);
        apply(db, &sorted, listed_at, run.services.clock.now_ms()).await?;
        if trouble.is_none() {
            mark_listed(db, &account.id, listed_at).await?;
        }
        let figures = crate::metrics::Inventory { listed: listing.len(), bytes: listing.bytes(), listed_at };
        run.services.metrics.inventory(&account.id, &figures, trouble.is_none());
        tracing::info!(
            account = account.id,
            listed = listing.len(),
            as_recorded = sorted.as_recorded.len(),
            to_confirm = sorted.to_confirm.len(),
            trouble = trouble.as_ref().map(ProviderError::message),
            "inventory pass"
        );
        Ok(trouble.map_or(Next::Drift, |err| retry_after(&err)))
    }
}

/// Records that every settled resource of the account was read for drift at `listed_at`.
async fn mark_listed(db: &sea_orm::DatabaseConnection, account_id: &str, listed_at: i64) -> Result<()> {
    match chrono::DateTime::from_timestamp_millis(listed_at) {
        Some(at) => pools::mark_listed(db, account_id, at).await,
        None => Ok(()),
    }
}

/// Every settled resource of a DigitalOcean account, as the listings should show it.
async fn expected_on_digitalocean(db: &sea_orm::DatabaseConnection, account_id: &str) -> Result<Vec<Expected>> {
    let resources = volumes::RECONCILER;
    let mut expected = Vec::new();
    let mut machines: std::collections::HashMap<String, Vec<String>> = std::collections::HashMap::new();
    for (volume_id, machine) in settled::share_machines(db, account_id).await? {
        machines.entry(volume_id).or_default().push(machine);
    }
    for v in settled::volumes(db, account_id).await? {
        let expect = match v.shared {
            false => Expect::Volume { id: v.provider_id, size_gib: v.observed_size_gib },
            true => Expect::Share {
                id: v.provider_id,
                region: v.region,
                size_gib: v.observed_size_gib,
                machines: machines.remove(&v.id).unwrap_or_default(),
            },
        };
        expected.push(Expected { work_kind: resources, resource_id: v.id, expect });
    }
    for s in settled::snapshots(db, account_id).await? {
        let expect = match s.shared {
            false => Expect::VolumeSnapshot { id: s.provider_id, size_gib: s.size_gib },
            true => Expect::ShareSnapshot { id: s.provider_id, region: s.region, size_gib: s.size_gib },
        };
        expected.push(Expected { work_kind: resources, resource_id: s.id, expect });
    }
    for a in settled::addresses(db, account_id).await? {
        let family = if a.ipv6 { Family::V6 } else { Family::V4 };
        let expect = Expect::Address {
            family,
            ip: a.ip,
            region: a.region,
            fingerprint: a.fingerprint,
            on_machine: a.on_machine,
        };
        expected.push(Expected { work_kind: resources, resource_id: a.id, expect });
    }
    for (i, _) in settled::instances(db, account_id).await? {
        let expect = Expect::Machine { id: i.provider_id };
        expected.push(Expected { work_kind: instances::RECONCILER, resource_id: i.id, expect });
    }
    for s in settled::subnets(db, account_id).await? {
        let expect = Expect::Vpc { id: s.provider_id };
        expected.push(Expected { work_kind: networks::RECONCILER, resource_id: s.id, expect });
    }
    Ok(expected)
}

/// Every settled resource of an AWS account, as the listings should show it.
async fn expected_on_aws(db: &sea_orm::DatabaseConnection, account_id: &str) -> Result<Vec<Expected>> {
    let mut expected = Vec::new();
    for n in settled::aws_networks(db, account_id).await? {
        let expect = Expect::AwsNetwork { region: n.region, vpc: n.vpc_id, subnets: n.subnet_ids };
        expected.push(Expected { work_kind: networks::RECONCILER, resource_id: n.id, expect });
    }
    for (i, region) in settled::instances(db, account_id).await? {
        let expect = Expect::AwsMachine { region, id: i.provider_id };
        expected.push(Expected { work_kind: instances::RECONCILER, resource_id: i.id, expect });
    }
    for f in settled::filesystems(db, account_id).await? {
        let kind = if f.lustre { FilesystemKind::Lustre } else { FilesystemKind::Nfs };
        let group = match (f.security_group_id, &f.network_block) {
            (Some(group), Some(block)) => Some((group.clone(), wanted_rules(kind, block, &group))),
            _ => None,
        };
        let expect =
            Expect::Filesystem { region: f.region, id: f.provider_id, lustre: f.lustre, mount_targets: f.zones, group };
        expected.push(Expected { work_kind: filesystems::RECONCILER, resource_id: f.id, expect });
    }
    Ok(expected)
}

/// Takes each listing the expectations need, once. The first provider error ends the pass's
/// listing (a provider in trouble is not asked for more): what it took is compared.
async fn take(provider: &Provider, deployment: &str, expected: &[Expected]) -> (Listing, Option<ProviderError>) {
    let mut needs: Vec<Need> = Vec::new();
    for need in expected.iter().flat_map(|e| e.expect.needs()) {
        if !needs.contains(&need) {
            needs.push(need);
        }
    }
    let mut listing = Listing::default();
    for need in needs {
        if let Err(err) = list(provider, deployment, &need, &mut listing).await {
            return (listing, Some(err));
        }
    }
    (listing, None)
}

async fn list(
    provider: &Provider,
    deployment: &str,
    need: &Need,
    listing: &mut Listing,
) -> crate::provider::ProviderResult<()> {
    match provider {
        Provider::DigitalOcean(cloud) => list_digitalocean(cloud, &ownership_tag(deployment), need, listing).await,
        Provider::Aws(cloud) => list_aws(cloud, deployment, need, listing).await,
    }
}

/// A listing the other cloud's accounts have: the needs come from the account's own rows, so
/// only a row written around the service asks for one.
fn not_offered(need: &Need) -> ProviderError {
    ProviderError::Misconfigured { message: format!("the account's cloud has no listing of {need:?}") }
}

async fn list_digitalocean(
    cloud: &DigitalOcean,
    tag: &str,
    need: &Need,
    listing: &mut Listing,
) -> crate::provider::ProviderResult<()> {
    match need {
        Need::Volumes => listing.volumes(cloud.volumes_list().await?),
        Need::Shares(region) => listing.shares(region, cloud.shares_list(region).await?),
        Need::VolumeSnapshots => listing.snapshots(None, cloud.volume_snapshots_list().await?),
        Need::ShareSnapshots(region) => listing.snapshots(Some(region), cloud.share_snapshots_list(region).await?),
        Need::Addresses(family) => listing.addresses(*family, cloud.addresses_list(*family).await?),
        Need::Machines => listing.machines(cloud.droplets_tagged(tag).await?),
        Need::Vpcs => listing.vpcs(cloud.vpcs_list().await?),
        other => return Err(not_offered(other)),
    }
    Ok(())
}

async fn list_aws(
    cloud: &Aws,
    deployment: &str,
    need: &Need,
    listing: &mut Listing,
) -> crate::provider::ProviderResult<()> {
    match need {
        Need::AwsVpcs(region) => listing.aws_vpcs(region, cloud.vpcs_in(region).await?),
        Need::AwsSubnets(region) => listing.aws_subnets(region, cloud.subnets_in(region).await?),
        Need::AwsMachines(region) => listing.aws_machines(region, cloud.instances_owned(region, deployment).await?),
        Need::SecurityGroups(region) => {
            listing.security_groups(region, cloud.security_groups_owned(region, deployment).await?)
        }
        Need::EfsFileSystems(region) => listing.efs(region, cloud.efs_list(region).await?),
        Need::LustreFileSystems(region) => listing.lustre(region, cloud.lustre_list(region).await?),
        other => return Err(not_offered(other)),
    }
    Ok(())
}

/// Puts off the own drift read of what the listings showed as recorded, past the next pass
/// (spread by id over an hour, should the passes stop); brings forward that of the rest.
async fn apply(db: &sea_orm::DatabaseConnection, sorted: &Sorted, listed_at: i64, now: i64) -> Result<()> {
    for kind in [volumes::RECONCILER, instances::RECONCILER, networks::RECONCILER, filesystems::RECONCILER] {
        let of_kind = |items: &[(&'static str, String)]| -> Vec<String> {
            items.iter().filter(|(k, _)| *k == kind).map(|(_, id)| id.clone()).collect()
        };
        let later: Vec<(String, i64)> = of_kind(&sorted.as_recorded)
            .into_iter()
            .map(|id| {
                let due = put_off_until(listed_at, &id);
                (id, due)
            })
            .collect();
        queue::put_off_drift(db, kind, &later, now).await?;
        queue::bring_drift_forward(db, kind, &of_kind(&sorted.to_confirm), now).await?;
    }
    Ok(())
}

/// When a resource a listing at `listed_at` showed as recorded is read on its own if no pass
/// comes meanwhile: after the next pass's hour and its grace, at the resource's minute of the
/// hour after (rounded up to the minute, so that a pass moves items in a few statements).
pub fn put_off_until(listed_at: i64, resource_id: &str) -> i64 {
    let due = drift_due(listed_at + DRIFT_MS + GRACE_MS, resource_id);
    due + (60_000 - due.rem_euclid(60_000)) % 60_000
}
