//! What the inventory pass compares with an account's listings: the settled resources of one
//! provider account (ready, wanted, not lost, made at the provider, no action in flight), read
//! as the few columns a listing can confirm. A resource with work under way is not here: its own
//! runs look at it.
use sea_orm::{ConnectionTrait, QueryResult, Value};

use super::stmt;
use crate::error::Result;

/// The work kind of the inventory pass: one item per provider account, by its id.
pub const RECONCILER: &str = "vps.inventory";

/// A settled volume or share: its provider id and the size the provider last showed.
pub struct SettledVolume {
    pub id: String,
    pub shared: bool,
    pub provider_id: String,
    pub region: String,
    pub observed_size_gib: Option<i64>,
}

/// A settled snapshot: its provider id and the GiB the provider last reported.
pub struct SettledSnapshot {
    pub id: String,
    pub shared: bool,
    pub provider_id: String,
    pub region: String,
    pub size_gib: Option<f64>,
}

/// A settled address: the IP and the machine the provider should show it on (none when it is
/// on no instance).
pub struct SettledAddress {
    pub id: String,
    pub ipv6: bool,
    pub ip: String,
    pub region: String,
    /// The reservation's time, where the provider shows one (a reserved IPv6's).
    pub fingerprint: Option<String>,
    pub on_machine: Option<String>,
}

/// A settled AWS filesystem: its provider id, the security group that admits the network to
/// it, the network's block, and how many mount targets it should have (one per zone with a
/// ready subnet; none for Lustre, whose interfaces are its own).
pub struct SettledFilesystem {
    pub id: String,
    pub lustre: bool,
    pub provider_id: String,
    pub region: String,
    pub security_group_id: Option<String>,
    pub network_block: Option<String>,
    pub zones: i64,
}

/// A settled AWS network: its VPC and its subnets (one per zone).
pub struct SettledAwsNetwork {
    pub id: String,
    pub region: String,
    pub vpc_id: String,
    pub subnet_ids: Vec<String>,
}

/// A settled row known at the provider by one id: an instance's machine, a subnet's VPC (the
/// row's id is its network's: a network is one work item).
pub struct SettledOne {
    pub id: String,
    pub provider_id: String,
}

/// The condition of a settled row, its columns prefixed by `of` (a table's alias and a dot, or
/// nothing).
fn settled(of: &str) -> String {
    format!("{of}state = 'ready' AND {of}desired_state = 'present' AND NOT {of}lost AND {of}deleted_at IS NULL")
}

async fn rows(conn: &impl ConnectionTrait, sql: &str, account_id: &str) -> Result<Vec<QueryResult>> {
    let backend = conn.get_database_backend();
    let values: Vec<Value> = vec![account_id.into()];
    Ok(conn.query_all_raw(stmt(backend, sql, values)).await?)
}

pub async fn volumes(conn: &impl ConnectionTrait, account_id: &str) -> Result<Vec<SettledVolume>> {
    let sql = format!(
        "SELECT id, kind, provider_id, region, observed_size_gib FROM provider_volumes \
         WHERE provider_account_id = $1 AND {} AND provider_id IS NOT NULL AND action_id IS NULL",
        settled("")
    );
    rows(conn, &sql, account_id)
        .await?
        .iter()
        .map(|r| {
            Ok(SettledVolume {
                id: r.try_get("", "id")?,
                shared: r.try_get::<String>("", "kind")? != "block",
                provider_id: r.try_get("", "provider_id")?,
                region: r.try_get("", "region")?,
                observed_size_gib: r.try_get("", "observed_size_gib")?,
            })
        })
        .collect()
}

/// The machines each share is attached to and should stay on: (share's volume id, the
/// instance's provider id), for every ready attachment of a share of the account.
pub async fn share_machines(conn: &impl ConnectionTrait, account_id: &str) -> Result<Vec<(String, String)>> {
    let sql = "SELECT a.volume_id, i.provider_id FROM volume_attachments a \
         JOIN provider_volumes v ON v.id = a.volume_id JOIN instances i ON i.id = a.instance_id \
         WHERE v.provider_account_id = $1 AND v.kind = 'shared' AND a.state = 'ready' \
         AND a.desired_state = 'present' AND i.provider_id IS NOT NULL";
    rows(conn, sql, account_id)
        .await?
        .iter()
        .map(|r| Ok((r.try_get("", "volume_id")?, r.try_get("", "provider_id")?)))
        .collect()
}

pub async fn snapshots(conn: &impl ConnectionTrait, account_id: &str) -> Result<Vec<SettledSnapshot>> {
    let sql = format!(
        "SELECT id, volume_kind, provider_id, region, size_gib FROM provider_snapshots \
         WHERE provider_account_id = $1 AND {} AND provider_id IS NOT NULL",
        settled("")
    );
    rows(conn, &sql, account_id)
        .await?
        .iter()
        .map(|r| {
            Ok(SettledSnapshot {
                id: r.try_get("", "id")?,
                shared: r.try_get::<String>("", "volume_kind")? != "block",
                provider_id: r.try_get("", "provider_id")?,
                region: r.try_get("", "region")?,
                size_gib: r.try_get("", "size_gib")?,
            })
        })
        .collect()
}

pub async fn addresses(conn: &impl ConnectionTrait, account_id: &str) -> Result<Vec<SettledAddress>> {
    let sql = format!(
        "SELECT a.id, a.family, a.address, a.region, a.fingerprint, a.assignment_state, i.provider_id \
         FROM provider_addresses a \
         LEFT JOIN instances i ON i.id = a.instance_id \
         WHERE a.provider_account_id = $1 AND {} AND a.address IS NOT NULL AND a.action_id IS NULL \
         AND a.assignment_state IN ('none', 'ready')",
        settled("a.")
    );
    rows(conn, &sql, account_id)
        .await?
        .iter()
        .map(|r| {
            let assigned = r.try_get::<String>("", "assignment_state")? == "ready";
            Ok(SettledAddress {
                id: r.try_get("", "id")?,
                ipv6: r.try_get::<String>("", "family")? == "ipv6",
                ip: r.try_get("", "address")?,
                region: r.try_get("", "region")?,
                fingerprint: r.try_get("", "fingerprint")?,
                on_machine: if assigned { r.try_get("", "provider_id")? } else { None },
            })
        })
        .collect()
}

/// The account's settled instances, each with its region (AWS lists machines by region).
pub async fn instances(conn: &impl ConnectionTrait, account_id: &str) -> Result<Vec<(SettledOne, String)>> {
    let sql = format!(
        "SELECT id, provider_id, region FROM instances WHERE provider_account_id = $1 AND {} \
         AND provider_id IS NOT NULL",
        settled("")
    );
    rows(conn, &sql, account_id)
        .await?
        .iter()
        .map(|r| {
            let one = SettledOne { id: r.try_get("", "id")?, provider_id: r.try_get("", "provider_id")? };
            Ok((one, r.try_get("", "region")?))
        })
        .collect()
}

/// An AWS account's settled filesystems.
pub async fn filesystems(conn: &impl ConnectionTrait, account_id: &str) -> Result<Vec<SettledFilesystem>> {
    let sql = format!(
        "SELECT f.id, f.kind, f.provider_id, f.region, f.security_group_id, n.ip_range, \
         (SELECT COUNT(DISTINCT s.zone) FROM network_subnets s WHERE s.network_id = f.network_id \
          AND {} AND s.provider_id IS NOT NULL AND s.zone IS NOT NULL) AS zones \
         FROM filesystems f JOIN networks n ON n.id = f.network_id \
         WHERE f.provider_account_id = $1 AND {} AND f.provider_id IS NOT NULL",
        settled("s."),
        settled("f.")
    );
    rows(conn, &sql, account_id)
        .await?
        .iter()
        .map(|r| {
            Ok(SettledFilesystem {
                id: r.try_get("", "id")?,
                lustre: r.try_get::<String>("", "kind")? == "lustre",
                provider_id: r.try_get("", "provider_id")?,
                region: r.try_get("", "region")?,
                security_group_id: r.try_get("", "security_group_id")?,
                network_block: r.try_get("", "ip_range")?,
                zones: r.try_get("", "zones")?,
            })
        })
        .collect()
}

/// An AWS account's settled networks with no firewall (as for `subnets`), each with the
/// subnets it should have.
pub async fn aws_networks(conn: &impl ConnectionTrait, account_id: &str) -> Result<Vec<SettledAwsNetwork>> {
    let sql = format!(
        "SELECT n.id, n.region, n.provider_id, s.provider_id AS subnet_id FROM networks n \
         LEFT JOIN network_subnets s ON s.network_id = n.id AND s.desired_state = 'present' \
         WHERE n.provider_account_id = $1 AND {} AND n.provider_id IS NOT NULL AND n.region IS NOT NULL \
         AND n.egress_provider_id IS NULL \
         AND NOT EXISTS (SELECT 1 FROM firewall_rules r WHERE r.network_id = n.id AND r.state <> 'deleted') \
         AND NOT EXISTS (SELECT 1 FROM network_subnets u WHERE u.network_id = n.id \
          AND u.desired_state = 'present' AND NOT ({})) \
         ORDER BY n.id",
        settled("n."),
        settled("u.")
    );
    let mut networks: Vec<SettledAwsNetwork> = Vec::new();
    for r in rows(conn, &sql, account_id).await? {
        let id: String = r.try_get("", "id")?;
        let subnet: Option<String> = r.try_get("", "subnet_id")?;
        if networks.last().is_none_or(|n| n.id != id) {
            networks.push(SettledAwsNetwork {
                id,
                region: r.try_get("", "region")?,
                vpc_id: r.try_get("", "provider_id")?,
                subnet_ids: Vec::new(),
            });
        }
        if let Some(last) = networks.last_mut() {
            last.subnet_ids.extend(subnet);
        }
    }
    Ok(networks)
}

/// Every ready subnet's VPC, by the network it belongs to: of networks with no firewall (a
/// network's firewall rules are read in its own run, which a VPC listing cannot stand in for).
pub async fn subnets(conn: &impl ConnectionTrait, account_id: &str) -> Result<Vec<SettledOne>> {
    let sql = format!(
        "SELECT s.network_id AS id, s.provider_id FROM network_subnets s JOIN networks n ON n.id = s.network_id \
         WHERE n.provider_account_id = $1 AND {} AND s.provider_id IS NOT NULL AND n.desired_state = 'present' \
         AND n.egress_provider_id IS NULL \
         AND NOT EXISTS (SELECT 1 FROM firewall_rules r WHERE r.network_id = n.id AND r.state <> 'deleted')",
        settled("s.")
    );
    ones(conn, &sql, account_id).await
}

async fn ones(conn: &impl ConnectionTrait, sql: &str, account_id: &str) -> Result<Vec<SettledOne>> {
    rows(conn, sql, account_id)
        .await?
        .iter()
        .map(|r| Ok(SettledOne { id: r.try_get("", "id")?, provider_id: r.try_get("", "provider_id")? }))
        .collect()
}
