//! Shared filesystems on a tenant network: `nfs` (EFS, a mount target in every zone of the
//! network) or `lustre` (FSx for Lustre in one zone). Like the network's other parts they are
//! decided on the network (`compute:networks:read` to read, `…:update` to change), and their
//! events are the network's (`network.filesystem.*`, subject the network, with `networkId` and
//! `filesystemId`). Calls record what the tenant wants and wake `vps.filesystems`.
use sea_orm::ConnectionTrait;
use serde::Serialize;
use serde_json::json;

use super::networks;
use super::pools::find_pool;
use super::protection::{Protection, check_delete};
use super::validate;
use crate::authz::Actor;
use crate::error::{Code, Error, Result};
use crate::ids;
use crate::provider;
use crate::services::Services;
use crate::store;
use crate::store::entity::{filesystem, network};
use crate::store::filesystems::{live_of, mounted_by, name_taken};
use crate::store::idempotency::{self, Claim};
use crate::store::queue;
use crate::store::state::{Deployment, Desired, FilesystemKind, State};
use crate::views::filesystems::{FilesystemView, KIND, event, view};
use crate::views::pools::strings;

use crate::store::filesystems::RECONCILER;
/// Filesystems a network holds that are not deleted.
pub const MAX_PER_NETWORK: u64 = 8;
use crate::provider::{LUSTRE_DEFAULT_GIB, LUSTRE_STEP_GIB};
const MAX_GIB: i64 = 1_000_000;

#[derive(Serialize)]
pub struct FilesystemCreate {
    pub tenant_id: String,
    pub network_id: String,
    pub name: String,
    /// `nfs` or `lustre`.
    pub kind: FilesystemKind,
    pub size_gib: Option<i64>,
    /// `scratch` or `persistent`.
    pub deployment: Option<Deployment>,
    pub zone: Option<String>,
    /// A delete is refused while it is set. Left out of the request's hash when false, so keys
    /// recorded before it existed replay.
    #[serde(skip_serializing_if = "crate::service::protection::is_false")]
    pub deletion_protection: bool,
    #[serde(skip)]
    pub idempotency_key: String,
}

/// The provider-side name: `bc-` and the id, lower-cased. It is the EFS creation token, the FSx
/// client request token, the security group's name and the `Name` tag.
pub fn provider_name(filesystem_id: &str) -> String {
    format!("bc-{}", filesystem_id.to_lowercase())
}

impl Services {
    pub async fn filesystem_create(&self, actor: &Actor, input: FilesystemCreate) -> Result<FilesystemView> {
        check_create(&input)?;
        let (size_gib, deployment) = lustre_shape(&input)?;
        let txn = self.begin().await?;
        // The key once the caller is decided on the network, before any state rule: a replay
        // answers what the first request made, whatever became of the network since.
        let network = self.network_decided(&txn, actor, &input.tenant_id, &input.network_id).await?;
        let id = ids::new_id(ids::FILESYSTEM);
        let key = idempotency::Key {
            tenant_id: &input.tenant_id,
            operation: "filesystemCreate",
            key: &input.idempotency_key,
        };
        if let Claim::Existing(existing) =
            idempotency::claim(&txn, &key, &idempotency::request_hash(&input), &id).await?
        {
            drop(txn);
            return load(&self.db, &input.tenant_id, &input.network_id, &existing).await.map(|f| view(&f));
        }
        if network.state == State::Deleted {
            return Err(Error::not_found(crate::views::networks::KIND, &network.id));
        }
        let pool = find_pool(&txn, &network.pool_id).await?;
        if !provider::supports_filesystems(pool.account.kind) {
            return Err(networks::unsupported("filesystems", pool.account.kind));
        }
        if network.adopted {
            return Err(Error::invalid_input(
                "networkId",
                "an adopted network takes no filesystems: mount targets need subnets vps-graph made",
            )
            .with_details(json!({ "field": "networkId", "reason": "adopted" })));
        }
        if network.desired_state == Desired::Absent {
            return Err(networks::being_deleted(&network.id));
        }
        let zone = match input.kind {
            FilesystemKind::Lustre => {
                Some(self.lustre_zone(&txn, &network, &strings(&pool.account.zones), input.zone.as_deref()).await?)
            }
            _ => None,
        };
        let live = live_of(&txn, &network.id).await?;
        if live.iter().any(|f| f.name == input.name) {
            return Err(name_taken(&input.name));
        }
        if live.len() as u64 >= MAX_PER_NETWORK {
            return Err(Error::new(
                Code::QuotaExceeded,
                format!("a network has at most {MAX_PER_NETWORK} filesystems that are not deleted"),
            )
            .with_details(json!({ "limit": MAX_PER_NETWORK, "used": live.len() })));
        }
        let now = self.clock.now();
        let new = store::filesystems::NewFilesystem {
            id: &id,
            tenant_id: &input.tenant_id,
            project_id: network.project_id.as_deref(),
            network_id: &network.id,
            pool_id: &network.pool_id,
            provider_account_id: &network.provider_account_id,
            name: &input.name,
            kind: input.kind,
            size_gib,
            deployment,
            zone,
            region: network.region.as_deref().unwrap_or_default(),
            provider_name: provider_name(&id),
            deletion_protection: input.deletion_protection,
        };
        let created = store::filesystems::insert(&txn, new, now).await?;
        let bookings = [(store::filesystems::QUOTA, 1), (store::filesystems::GIB_QUOTA, size_gib.unwrap_or(0))];
        store::quota::hold_all(&txn, &created.tenant_id, &created.pool_id, &id, &bookings).await?;
        queue::wake(&txn, RECONCILER, &id, self.clock.now_ms()).await?;
        self.commit_and_wake(txn, vec![event("created", &created)]).await?;
        Ok(view(&created))
    }

    /// Marks the filesystem for deletion; deleting one being deleted returns it unchanged.
    pub async fn filesystem_delete(
        &self,
        actor: &Actor,
        tenant_id: &str,
        network_id: &str,
        filesystem_id: &str,
    ) -> Result<FilesystemView> {
        validate::id("filesystemId", ids::FILESYSTEM, filesystem_id)?;
        let txn = self.begin().await?;
        self.network_for_change(&txn, actor, tenant_id, network_id).await?;
        let current = load(&txn, tenant_id, network_id, filesystem_id).await?;
        if current.state == State::Deleted {
            return Err(Error::not_found(KIND, filesystem_id));
        }
        if current.desired_state == Desired::Absent {
            return Ok(view(&current));
        }
        check_delete(current.deletion_protection, &format!("filesystem {filesystem_id}"), "filesystemUpdate")?;
        let mounting = mounted_by(&txn, std::slice::from_ref(&current.id)).await?;
        if !mounting.is_empty() {
            return Err(Error::new(Code::InvalidState, "instances mount the filesystem: delete them first")
                .with_details(json!({ "reason": "inUse", "instanceIds": mounting })));
        }
        let now = self.clock.now();
        let updated = store::filesystems::mark_deleting(&txn, filesystem_id, now).await?;
        queue::wake(&txn, RECONCILER, filesystem_id, self.clock.now_ms()).await?;
        self.commit_and_wake(txn, vec![event("deleting", &updated)]).await?;
        Ok(view(&updated))
    }

    /// Changes the filesystem's deletion protection; the same value returns it unchanged.
    pub async fn filesystem_update(
        &self,
        actor: &Actor,
        network_id: &str,
        update: Protection,
    ) -> Result<FilesystemView> {
        validate::id("filesystemId", ids::FILESYSTEM, &update.id)?;
        let txn = self.begin().await?;
        self.network_for_change(&txn, actor, &update.tenant_id, network_id).await?;
        let current = load(&txn, &update.tenant_id, network_id, &update.id).await?;
        if current.state == State::Deleted {
            return Err(Error::not_found(KIND, &update.id));
        }
        if current.desired_state == Desired::Absent {
            return Err(Error::new(Code::InvalidState, format!("filesystem {} is being deleted", current.id))
                .with_details(json!({ "reason": "deleting" })));
        }
        let Some(on) = update.change_of(current.deletion_protection) else { return Ok(view(&current)) };
        let updated =
            store::change::set_deletion_protection::<filesystem::Entity>(&txn, &current.id, on, self.clock.now())
                .await?;
        self.commit(txn, vec![event("updated", &updated)]).await?;
        Ok(view(&updated))
    }

    pub async fn filesystem_get(
        &self,
        actor: &Actor,
        tenant_id: &str,
        network_id: &str,
        filesystem_id: &str,
    ) -> Result<FilesystemView> {
        validate::id("filesystemId", ids::FILESYSTEM, filesystem_id)?;
        self.network_get(actor, tenant_id, network_id).await?;
        load(&self.db, tenant_id, network_id, filesystem_id).await.map(|f| view(&f))
    }

    /// The network's filesystems that are not deleted, sorted by name.
    pub async fn filesystem_list(
        &self,
        actor: &Actor,
        tenant_id: &str,
        network_id: &str,
    ) -> Result<Vec<FilesystemView>> {
        self.network_get(actor, tenant_id, network_id).await?;
        Ok(live_of(&self.db, network_id).await?.iter().map(view).collect())
    }

    /// Checks the caller may watch the filesystem; the subscription follows its network's
    /// `network.filesystem.*` events about it.
    pub async fn filesystem_watch(
        &self,
        actor: &Actor,
        tenant_id: &str,
        network_id: &str,
        filesystem_id: &str,
    ) -> Result<crate::feed::Filter> {
        let found = self.filesystem_get(actor, tenant_id, network_id, filesystem_id).await?;
        let filter = crate::feed::Filter::resource(actor, found.tenant_id, "network.filesystem.*", found.network_id);
        Ok(filter.part("filesystemId", found.id))
    }

    /// The zone a Lustre filesystem goes in: one of the account's zones where the network has a
    /// subnet; the one asked, or the first such.
    async fn lustre_zone(
        &self,
        conn: &impl ConnectionTrait,
        network: &network::Model,
        zones: &[String],
        asked: Option<&str>,
    ) -> Result<String> {
        let subnets = crate::store::networks::subnets_of(conn, &network.id).await?;
        let has =
            |zone: &str| subnets.iter().any(|s| s.desired_state == Desired::Present && s.zone.as_deref() == Some(zone));
        let Some(zone) = asked else {
            return zones.iter().find(|z| has(z)).cloned().ok_or_else(|| {
                Error::invalid_input("zone", "the network has no subnet in any of the account's zones")
            });
        };
        if !zones.iter().any(|z| z == zone) {
            return Err(Error::invalid_input("zone", format!("the pool's account does not use zone {zone}"))
                .with_details(json!({ "field": "zone", "zones": zones })));
        }
        if !has(zone) {
            return Err(Error::invalid_input("zone", format!("the network has no subnet in zone {zone}"))
                .with_details(json!({ "field": "zone" })));
        }
        Ok(zone.to_owned())
    }
}

/// The input rules that need no database.
fn check_create(input: &FilesystemCreate) -> Result<()> {
    validate::tenant_id("tenantId", &input.tenant_id)?;
    validate::id("networkId", ids::NETWORK, &input.network_id)?;
    validate::name("name", &input.name)?;
    validate::idempotency_key(&input.idempotency_key)?;
    if let Some(zone) = &input.zone {
        validate::max_len("zone", zone, 64)?;
        validate::zone("zone", zone)?;
    }
    if let Some(size) = input.size_gib {
        validate::range("sizeGiB", size, 1, MAX_GIB)?;
    }
    Ok(())
}

/// The size and deployment of a Lustre filesystem (with their defaults); an NFS one takes none.
fn lustre_shape(input: &FilesystemCreate) -> Result<(Option<i64>, Option<Deployment>)> {
    if input.kind == FilesystemKind::Nfs {
        for (field, given) in [
            ("sizeGiB", input.size_gib.is_some()),
            ("deployment", input.deployment.is_some()),
            ("zone", input.zone.is_some()),
        ] {
            if given {
                return Err(Error::invalid_input(
                    field,
                    format!("an nfs filesystem is elastic and spans every zone of the network: it takes no {field}"),
                ));
            }
        }
        return Ok((None, None));
    }
    let size = input.size_gib.unwrap_or(LUSTRE_DEFAULT_GIB);
    if size != LUSTRE_DEFAULT_GIB && size % LUSTRE_STEP_GIB != 0 {
        return Err(Error::invalid_input(
            "sizeGiB",
            format!(
                "a lustre filesystem is {LUSTRE_DEFAULT_GIB} GiB or a multiple of {LUSTRE_STEP_GIB} GiB, not {size}"
            ),
        )
        .with_details(json!({ "field": "sizeGiB", "reason": "size" })));
    }
    let deployment = input.deployment.unwrap_or(Deployment::Scratch);
    Ok((Some(size), Some(deployment)))
}

pub(crate) async fn load(
    conn: &impl ConnectionTrait,
    tenant_id: &str,
    network_id: &str,
    filesystem_id: &str,
) -> Result<filesystem::Model> {
    store::filesystems::find_on_network(conn, tenant_id, network_id, filesystem_id)
        .await?
        .ok_or_else(|| Error::not_found(KIND, filesystem_id))
}
