//! Instances, as far as volumes need them: a machine at the provider (a DigitalOcean Droplet)
//! that volumes attach to. Calls record what the tenant wants and wake `vps.instances`; the
//! instance's view (also the `instance.*` events' data) says what it last saw. Decided on the
//! instance: `compute:instances:read`, `…:create`, `…:delete`; putting a volume on one takes
//! `…:update`.
use sea_orm::ConnectionTrait;
use serde::{Deserialize, Serialize};
use serde_json::json;

use super::networks::{self};
use super::rows;
use super::validate;
use crate::authz::{Actor, Target};
use crate::error::{Code, Error, Result};
use crate::ids;
use crate::provider;
use crate::services::Services;
use crate::store::entity::{instance, network};
use crate::store::idempotency::{self, Claim};
use crate::store::instances::{self as store, NewInstance};
use crate::store::queue;
use crate::store::state::{Desired, OnDelete, ProviderKind, State};
use crate::views::instances::{InstanceView, KIND, event};

use crate::store::instances::RECONCILER;
pub const READ: &str = "compute:instances:read";
pub const CREATE: &str = "compute:instances:create";
pub const DELETE: &str = "compute:instances:delete";
/// Putting a volume or an address on an instance.
pub const UPDATE: &str = "compute:instances:update";
/// An instance whose delete leaves its machine running.

#[derive(Serialize)]
pub struct InstanceCreate {
    pub tenant_id: String,
    pub project_id: Option<String>,
    pub pool_id: String,
    pub name: String,
    pub region: String,
    pub size: String,
    pub image: String,
    pub network_id: Option<String>,
    /// `delete` or `detach`.
    pub on_delete: OnDelete,
    /// AWS: the zone of the network's subnet to run in (default: the account's first zone with
    /// a subnet of the network).
    pub zone: Option<String>,
    /// The tenant's own part of the user data.
    pub user_data: Option<String>,
    /// Ready filesystems of the instance's network, mounted at boot.
    pub filesystems: Vec<FilesystemMountInput>,
    #[serde(skip)]
    pub idempotency_key: String,
}

/// A filesystem to mount at `path` (absolute, plain segments, outside the system directories).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FilesystemMountInput {
    pub filesystem_id: String,
    pub path: String,
}

/// Filesystems one instance mounts at most.
pub const MAX_FILESYSTEMS: usize = 16;

/// The Droplet name an instance is made under: derived from its id, so a lost create is found.
pub fn provider_name(instance_id: &str) -> String {
    format!("bc-{}", instance_id.replace('_', "-"))
}

impl Services {
    pub async fn instance_create(&self, actor: &Actor, input: InstanceCreate) -> Result<InstanceView> {
        check_create(&input)?;
        let id = ids::new_id(ids::INSTANCE);
        actor.decide_create(CREATE, &input.tenant_id, input.project_id.as_deref(), KIND, &id)?;
        let txn = self.begin().await?;
        // The key first: a replay answers what it made, whatever the state rules say now.
        let key =
            idempotency::Key { tenant_id: &input.tenant_id, operation: "instanceCreate", key: &input.idempotency_key };
        if let Claim::Existing(existing) =
            idempotency::claim(&txn, &key, &idempotency::request_hash(&input), &id).await?
        {
            drop(txn);
            return self.instance_load(&self.db, &input.tenant_id, &existing).await.map(InstanceView::from);
        }
        let pool = rows::offered_pool(&txn, &input.tenant_id, &input.pool_id).await?;
        if !provider::supports_instances(pool.account.kind) {
            return Err(networks::unsupported("instances", pool.account.kind));
        }
        rows::check_project(&txn, &input.tenant_id, input.project_id.as_deref()).await?;
        rows::check_region(&pool, &input.region)?;
        let disk_gib = check_machine(&pool, &input)?;
        let aws = pool.account.kind == ProviderKind::Aws;
        if !input.filesystems.is_empty() && !provider::supports_filesystems(pool.account.kind) {
            return Err(networks::unsupported("filesystems", pool.account.kind));
        }
        let zone = match (&input.network_id, aws) {
            (None, true) => {
                return Err(Error::invalid_input("networkId", "an AWS instance runs in a subnet of a tenant network"));
            }
            (None, false) => None,
            (Some(network_id), _) => {
                let zones = crate::views::pools::strings(&pool.account.zones);
                let place = Placement { account_id: &pool.account.id, region: &input.region, zones: &zones, aws };
                let (network, zone) =
                    check_network(&txn, actor, &input.tenant_id, network_id, &place, input.zone.as_deref()).await?;
                if !input.filesystems.is_empty() {
                    // Filesystems are decided on their network: mounting one reads it.
                    let target =
                        Target::resource(&input.tenant_id, network.project_id.as_deref(), "network", network_id);
                    actor.decide(networks::READ, &target)?;
                }
                zone
            }
        };
        let mounts = check_filesystems(&txn, actor, &input).await?;
        let rendered = crate::boot::user_data(&mounts, input.user_data.as_deref());
        if rendered.as_ref().is_some_and(|d| d.len() > crate::boot::MAX_USER_DATA_BYTES) {
            return Err(Error::invalid_input(
                "userData",
                format!("the user data with its mounts is over {} bytes", crate::boot::MAX_USER_DATA_BYTES),
            ));
        }
        let now = self.clock.now();
        let new = NewInstance {
            id: &id,
            tenant_id: &input.tenant_id,
            project_id: input.project_id.as_deref(),
            pool_id: &input.pool_id,
            provider_account_id: &pool.account.id,
            network_id: input.network_id.as_deref(),
            name: &input.name,
            region: &input.region,
            size: &input.size,
            image: &input.image,
            on_delete: input.on_delete,
            provider_name: provider_name(&id),
            zone,
            user_data: input.user_data.as_deref(),
        };
        let created = store::insert(&txn, new, now).await?;
        let bookings = [(store::QUOTA, 1), (crate::store::volumes::QUOTA, disk_gib)];
        crate::store::quota::hold_all(&txn, &input.tenant_id, &input.pool_id, &id, &bookings).await?;
        let asked: Vec<(String, String)> =
            input.filesystems.iter().map(|m| (m.filesystem_id.clone(), m.path.clone())).collect();
        store::insert_mounts(&txn, &id, &asked).await?;
        queue::wake(&txn, RECONCILER, &id, self.clock.now_ms()).await?;
        self.commit_and_wake(txn, vec![event("created", &created)]).await?;
        Ok(created.into())
    }

    /// Marks the instance for deletion and returns it DELETING; deleting one being deleted
    /// returns it. Its volumes are detached (deleteWithInstance ones deleted) once it is gone.
    pub async fn instance_delete(&self, actor: &Actor, tenant_id: &str, instance_id: &str) -> Result<InstanceView> {
        validate::tenant_id("tenantId", tenant_id)?;
        validate::id("instanceId", ids::INSTANCE, instance_id)?;
        let txn = self.begin().await?;
        crate::store::lock(&txn, "instances", instance_id).await?;
        let current = self.instance_load(&txn, tenant_id, instance_id).await?;
        actor.decide(DELETE, &Target::resource(tenant_id, current.project_id.as_deref(), KIND, instance_id))?;
        if current.state == State::Deleted {
            return Err(Error::not_found(KIND, instance_id));
        }
        if current.desired_state == Desired::Absent {
            return Ok(current.into());
        }
        let protected = crate::store::volumes::protected_going_with(&txn, instance_id).await?;
        // Named only where the caller may read them (a volume of another project may be on it).
        let readable: Vec<String> = protected
            .iter()
            .filter(|v| {
                let target = Target::resource(tenant_id, v.project_id.as_deref(), crate::views::volumes::KIND, &v.id);
                actor.allows(super::volumes::READ, &target)
            })
            .map(|v| v.id.clone())
            .collect();
        super::protection::check_instance_delete(instance_id, protected.len(), &readable)?;
        let now = self.clock.now();
        store::mark_deleting(&txn, instance_id, now).await?;
        let updated = self.instance_load(&txn, tenant_id, instance_id).await?;
        queue::wake(&txn, RECONCILER, instance_id, self.clock.now_ms()).await?;
        self.commit_and_wake(txn, vec![event("deleting", &updated)]).await?;
        Ok(updated.into())
    }

    pub async fn instance_get(&self, actor: &Actor, tenant_id: &str, instance_id: &str) -> Result<InstanceView> {
        validate::tenant_id("tenantId", tenant_id)?;
        validate::id("instanceId", ids::INSTANCE, instance_id)?;
        let found = self.instance_load(&self.db, tenant_id, instance_id).await?;
        actor.decide(READ, &Target::resource(tenant_id, found.project_id.as_deref(), KIND, instance_id))?;
        Ok(found.into())
    }

    /// The tenant's instances in the order they were made, a page at a time.
    pub async fn instance_list(
        &self,
        actor: &Actor,
        tenant_id: &str,
        filter: crate::store::list::ListFilter,
    ) -> Result<rows::Page<InstanceView>> {
        actor.decide_list(READ, tenant_id)?;
        rows::check_list(tenant_id, &filter, ids::INSTANCE)?;
        let readable = actor.readable(READ, tenant_id, Some(KIND));
        let found = crate::store::list::page::<instance::Entity>(&self.db, tenant_id, &filter, &readable).await?;
        Ok(rows::page(
            found,
            filter.first,
            |i| &i.id,
            |i| {
                actor.allows(READ, &Target::resource(tenant_id, i.project_id.as_deref(), KIND, &i.id)).then(|| i.into())
            },
        ))
    }

    pub async fn instance_watch(
        &self,
        actor: &Actor,
        tenant_id: &str,
        instance_id: &str,
    ) -> Result<crate::feed::Filter> {
        let found = self.instance_get(actor, tenant_id, instance_id).await?;
        Ok(crate::feed::Filter::resource(actor, found.tenant_id, "instance.*", found.id))
    }

    /// The filesystems each of `instance_ids` mounts (for the instances' readers).
    pub async fn instance_mounts(
        &self,
        instance_ids: &[String],
    ) -> Result<std::collections::HashMap<String, Vec<FilesystemMountInput>>> {
        mounts_of(&self.db, instance_ids).await
    }

    pub(crate) async fn instance_load(
        &self,
        conn: &impl ConnectionTrait,
        tenant_id: &str,
        instance_id: &str,
    ) -> Result<instance::Model> {
        crate::store::list::find_in_tenant::<instance::Entity>(conn, tenant_id, instance_id)
            .await?
            .ok_or_else(|| Error::not_found(KIND, instance_id))
    }
}

fn check_create(input: &InstanceCreate) -> Result<()> {
    validate::tenant_id("tenantId", &input.tenant_id)?;
    validate::id("poolId", ids::POOL, &input.pool_id)?;
    if let Some(project_id) = &input.project_id {
        validate::id("projectId", ids::PROJECT, project_id)?;
    }
    if let Some(network_id) = &input.network_id {
        validate::id("networkId", ids::NETWORK, network_id)?;
    }
    validate::name("name", &input.name)?;
    validate::region("region", &input.region)?;
    validate::slug("size", &input.size)?;
    validate::slug("image", &input.image)?;
    if let Some(zone) = &input.zone {
        validate::zone("zone", zone)?;
    }
    if let Some(user_data) = &input.user_data {
        validate::max_len("userData", user_data, crate::boot::MAX_USER_DATA_BYTES)?;
    }
    check_mount_list(&input.filesystems)?;
    validate::idempotency_key(&input.idempotency_key)
}

/// The machine asked is one the pool offers: a size its provider makes (its disk, in GiB, is
/// what the instance books on `diskGiB`), and a size and image of the pool's lists when it has
/// them. A machine left running when its row is deleted (`onDelete: DETACH`) is the tenant's own
/// account's only: on the platform's no row would track it any more.
fn check_machine(pool: &super::pools::PoolRow, input: &InstanceCreate) -> Result<i64> {
    let kind = pool.account.kind;
    let not_offered = |field: &str, asked: &str, offered: Vec<String>| {
        Error::invalid_input(field, format!("pool {} offers no {field} {asked}", pool.pool.id))
            .with_details(json!({ "field": field, "reason": "notOffered", "offered": offered }))
    };
    let disk_gib = crate::provider::sizes::disk_gib(kind, &input.size).ok_or_else(|| {
        Error::invalid_input("size", format!("{kind} makes no machine of size {}", input.size))
            .with_details(json!({ "field": "size", "reason": "size" }))
    })?;
    let sizes = crate::views::pools::strings(&pool.pool.sizes);
    if !sizes.is_empty() && !sizes.contains(&input.size) {
        return Err(not_offered("size", &input.size, sizes));
    }
    let images = crate::views::pools::strings(&pool.pool.images);
    if !images.is_empty() && !images.contains(&input.image) {
        return Err(not_offered("image", &input.image, images));
    }
    if input.on_delete == OnDelete::Detach && pool.account.tenant_id.is_none() {
        return Err(Error::invalid_input(
            "onDelete",
            "DETACH leaves the machine running when its row is deleted: only on a tenant's own account",
        )
        .with_details(json!({ "field": "onDelete", "reason": "platformAccount" })));
    }
    Ok(disk_gib)
}

/// At most 16 filesystems, each once, each at its own absolute path of plain segments outside
/// the system directories.
fn check_mount_list(asked: &[FilesystemMountInput]) -> Result<()> {
    if asked.len() > MAX_FILESYSTEMS {
        return Err(Error::invalid_input(
            "filesystems",
            format!("an instance mounts at most {MAX_FILESYSTEMS} filesystems"),
        )
        .with_details(json!({ "field": "filesystems", "limit": MAX_FILESYSTEMS })));
    }
    for (n, m) in asked.iter().enumerate() {
        validate::id("filesystems.filesystem", ids::FILESYSTEM, &m.filesystem_id)?;
        check_path(&m.path)?;
        if asked[..n].iter().any(|other| other.filesystem_id == m.filesystem_id) {
            return Err(Error::invalid_input("filesystems.filesystem", format!("{} is asked twice", m.filesystem_id)));
        }
        if asked[..n].iter().any(|other| other.path == m.path) {
            return Err(Error::invalid_input("filesystems.path", format!("two filesystems at {}", m.path)));
        }
    }
    Ok(())
}

/// A mount path: absolute, outside the system, and of plain segments (letters, digits, `.`, `_`,
/// `-`), since it is written into the boot script and `/etc/fstab` as it is.
fn check_path(path: &str) -> Result<()> {
    let plain = path.len() <= 255
        && path.split('/').skip(1).all(|s| s.chars().all(|c| c.is_ascii_alphanumeric() || "._-".contains(c)));
    if !plain {
        return Err(Error::invalid_input(
            "filesystems.path",
            format!("mount path {path:?} must be segments of letters, digits, . _ and -, at most 255 characters"),
        )
        .with_details(json!({ "field": "filesystems.path" })));
    }
    super::mounts::check_mount_path(path).map_err(|err| err.with_details(json!({ "field": "filesystems.path" })))
}

/// The filesystems an instance asks to mount: each the tenant's, on the instance's network,
/// ready and not being deleted. The network's row is locked already (see `check_network`), as a
/// filesystem's delete locks it, so none can start deleting before this instance is recorded.
async fn check_filesystems(
    conn: &impl ConnectionTrait,
    actor: &Actor,
    input: &InstanceCreate,
) -> Result<Vec<crate::boot::BootMount>> {
    let Some(network_id) = input.network_id.as_deref().filter(|_| !input.filesystems.is_empty()) else {
        if input.filesystems.is_empty() {
            return Ok(Vec::new());
        }
        return Err(Error::invalid_input(
            "filesystems",
            "filesystems are mounted from the instance's network: name it",
        ));
    };
    let ids: Vec<String> = input.filesystems.iter().map(|m| m.filesystem_id.clone()).collect();
    let rows = crate::store::filesystems::live_in_tenant(conn, &input.tenant_id, ids).await?;
    let mut mounts = Vec::new();
    for asked in &input.filesystems {
        let found = rows
            .iter()
            .find(|f| f.id == asked.filesystem_id)
            .ok_or_else(|| Error::not_found(crate::views::filesystems::KIND, &asked.filesystem_id))?;
        if found.network_id != network_id {
            // Decided on its own network: one the caller may not read is not found.
            let other = crate::store::networks::find_live_in_tenant(conn, &input.tenant_id, &found.network_id).await?;
            let project_id = other.as_ref().and_then(|n| n.project_id.as_deref());
            let target =
                Target::resource(&input.tenant_id, project_id, crate::views::networks::KIND, &found.network_id);
            if other.is_none() || !actor.allows(networks::READ, &target) {
                return Err(Error::not_found(crate::views::filesystems::KIND, &found.id));
            }
            return Err(Error::invalid_input(
                "filesystems.filesystem",
                format!("{} is on another network than the instance", found.id),
            ));
        }
        if found.desired_state == Desired::Absent {
            return Err(Error::new(Code::InvalidState, format!("filesystem {} is being deleted", found.id))
                .with_details(json!({ "reason": "deleting", "filesystemId": found.id })));
        }
        let Some(mount) = crate::boot::mount(found) else {
            return Err(Error::new(Code::InvalidState, format!("filesystem {} is not ready", found.id))
                .with_details(json!({ "reason": "notReady", "filesystemId": found.id })));
        };
        mounts.push(crate::boot::BootMount { mount, path: asked.path.clone() });
    }
    Ok(mounts)
}

/// Where an instance may run: its account, region and (AWS) the account's zones.
struct Placement<'a> {
    account_id: &'a str,
    region: &'a str,
    zones: &'a [String],
    aws: bool,
}

/// An instance's network: the tenant's, on the pool's account, not being deleted, with a subnet
/// in the instance's region (the Droplet goes in that subnet's VPC) and, on AWS, in its zone:
/// the one asked, or the account's first zone where the network has a subnet. Returns the
/// network and the zone.
async fn check_network(
    conn: &impl ConnectionTrait,
    actor: &Actor,
    tenant_id: &str,
    network_id: &str,
    place: &Placement<'_>,
    zone: Option<&str>,
) -> Result<(network::Model, Option<String>)> {
    // Decided before anything else is read of it or locked: a network the caller may not join
    // tells nothing of itself.
    let missing = || Error::not_found("network", network_id);
    let seen = crate::store::networks::find_live_in_tenant(conn, tenant_id, network_id).await?.ok_or_else(missing)?;
    networks::decide_join(actor, &seen)?;
    // The network's row lock (PostgreSQL), as its delete and its filesystems' deletes take it:
    // neither can start while this instance is being recorded on it. Read again under it.
    crate::store::lock(conn, "networks", network_id).await?;
    let found = crate::store::networks::find_live_in_tenant(conn, tenant_id, network_id).await?.ok_or_else(missing)?;
    if found.provider_account_id != place.account_id {
        return Err(Error::invalid_input("networkId", "the network is on another provider account than the pool"));
    }
    if found.desired_state == Desired::Absent {
        return Err(Error::new(Code::InvalidState, format!("network {network_id} is being deleted"))
            .with_details(json!({ "reason": "deleting" })));
    }
    let subnets = crate::store::networks::wanted_subnets_in(conn, network_id, place.region).await?;
    if subnets.is_empty() {
        return Err(Error::invalid_input("networkId", format!("the network has no subnet in {}", place.region)));
    }
    if !place.aws {
        return match zone {
            Some(_) => Err(Error::invalid_input("zone", "a DigitalOcean instance is placed by its region alone")),
            None => Ok((found, None)),
        };
    }
    let has = |z: &str| subnets.iter().any(|s| s.zone.as_deref() == Some(z));
    let zone = match zone {
        Some(z) if has(z) => z.to_owned(),
        Some(z) => return Err(Error::invalid_input("zone", format!("the network has no subnet in zone {z}"))),
        None => {
            let first =
                place.zones.iter().find(|z| has(z)).cloned().or_else(|| subnets.iter().find_map(|s| s.zone.clone()));
            first.ok_or_else(|| Error::invalid_input("zone", "the network has no subnet in a zone"))?
        }
    };
    Ok((found, Some(zone)))
}

/// The filesystems each of `instance_ids` mounts, in the order asked.
pub(crate) async fn mounts_of(
    conn: &impl ConnectionTrait,
    instance_ids: &[String],
) -> Result<std::collections::HashMap<String, Vec<FilesystemMountInput>>> {
    let rows = store::mounts_asked_of(conn, instance_ids).await?;
    let mut by_instance: std::collections::HashMap<String, Vec<FilesystemMountInput>> = Default::default();
    for m in rows {
        by_instance
            .entry(m.instance_id)
            .or_default()
            .push(FilesystemMountInput { filesystem_id: m.filesystem_id, path: m.path });
    }
    Ok(by_instance)
}
