//! What the inventory pass compares with an account's listings: the settled resources of one
//! provider account (ready, wanted, not lost, made at the provider, no action in flight), read
//! as the few columns a listing can confirm. A resource with work under way is not here: its own
//! runs look at it.
use sea_orm::{ConnectionTrait, QueryResult, Value};

use super::stmt;
use crate::error::Result;

/// The work kind of the inventory pass: one item per DigitalOcean account, by its id.
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

pub async fn instances(conn: &impl ConnectionTrait, account_id: &str) -> Result<Vec<SettledOne>> {
    let sql = format!(
        "SELECT id, provider_id FROM instances WHERE provider_account_id = $1 AND {} AND provider_id IS NOT NULL",
        settled("")
    );
    ones(conn, &sql, account_id).await
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
