//! Provider snapshots: point-in-time copies of provider volumes, made with
//! `providerVolumeSnapshot` and converged by `vps.provider-resources`. A snapshot outlives its
//! volume, books no quota, and can be restored into a new volume. Decided on
//! `provider-snapshot/{id}` (`compute:volumes:read` / `…:manage`); taking one is decided on its
//! volume.
use sea_orm::ConnectionTrait;
use serde::Serialize;
use serde_json::json;

use super::protection::{Protection, check_delete};
use super::rows;
use super::validate;
use super::volumes::{self, MANAGE, READ, VolumeCreate, invalid_state};
use crate::authz::{Actor, Target};
use crate::error::{Code, Error, Result};
use crate::ids;
use crate::services::Services;
use crate::store;
use crate::store::columns::Columns;
use crate::store::entity::provider_snapshot as snapshot;
use crate::store::idempotency::{self, Claim};
use crate::store::queue;
use crate::store::session::Session;
use crate::store::state::{Desired, State, VolumeFilesystem, VolumeKind};
use crate::views::snapshots::{KIND, SnapshotView, event, view};
use crate::views::volumes::{KIND as VOLUME_KIND, VolumeView};

/// The name a snapshot is taken under: derived from its id, so a lost answer is found by name.
/// A share snapshot's name is at most 20 characters: `bc-` and 16 hex digits of the id's SHA-256.
pub fn provider_name(snapshot_id: &str, volume_kind: VolumeKind) -> String {
    if volume_kind == VolumeKind::Shared {
        use sha2::{Digest, Sha256};
        let digest = Sha256::digest(snapshot_id.as_bytes());
        return format!("bc-{}", &crate::store::idempotency::hex(&digest)[..16]);
    }
    format!("bc-{}", snapshot_id.replace('_', "-"))
}

#[derive(Serialize)]
pub struct SnapshotTake {
    pub tenant_id: String,
    pub volume_id: String,
    pub name: String,
    /// A delete is refused while it is set. Left out of the request's hash when false, so keys
    /// recorded before it existed replay.
    #[serde(skip_serializing_if = "crate::service::protection::is_false")]
    pub deletion_protection: bool,
    #[serde(skip)]
    pub idempotency_key: String,
    /// The schedule taking it (its key names the schedule already).
    #[serde(skip)]
    pub schedule_id: Option<String>,
}

#[derive(Serialize)]
pub struct SnapshotRestore {
    pub tenant_id: String,
    pub snapshot_id: String,
    pub name: String,
    pub description: Option<String>,
    pub size_gib: Option<i64>,
    pub delete_with_instance: bool,
    /// Refused when given: formatting could wipe the restored data.
    pub filesystem: Option<VolumeFilesystem>,
    /// A delete is refused while it is set. Left out of the request's hash when false, so keys
    /// recorded before it existed replay.
    #[serde(skip_serializing_if = "crate::service::protection::is_false")]
    pub deletion_protection: bool,
    #[serde(skip)]
    pub idempotency_key: String,
}

/// A snapshot list: `list` of the tenant's, optionally of one volume.
pub struct SnapshotListFilter {
    pub volume_id: Option<String>,
    pub list: crate::store::list::ListFilter,
}

impl Services {
    /// Records a snapshot of the volume, pending; at most 25 not deleted per volume, names unique
    /// among them.
    pub async fn volume_snapshot(&self, actor: &Actor, input: SnapshotTake) -> Result<SnapshotView> {
        validate::name("name", &input.name)?;
        validate::idempotency_key(&input.idempotency_key)?;
        let txn = self.begin().await?;
        // The key once the caller is decided on the volume, before any state rule: a replay
        // answers the snapshot it made, whatever became of the volume since.
        let current = self.volume_decided(&txn, actor, &input.tenant_id, &input.volume_id).await?;
        let id = ids::new_id(ids::SNAPSHOT);
        let key = idempotency::Key {
            tenant_id: &input.tenant_id,
            // A schedule's takes are keyed apart from the calls', so no call can claim one first.
            operation: if input.schedule_id.is_some() { "snapshotScheduleTake" } else { "providerVolumeSnapshot" },
            key: &input.idempotency_key,
        };
        if let Claim::Existing(existing) =
            idempotency::claim(&txn, &key, &idempotency::request_hash(&input), &id).await?
        {
            drop(txn);
            return Ok(view(&find_snapshot(&self.db, &input.tenant_id, &existing).await?));
        }
        if current.state == State::Deleted {
            return Err(Error::not_found(VOLUME_KIND, &current.id));
        }
        if current.desired_state == Desired::Absent {
            return Err(invalid_state(format!("volume {} is being deleted", current.id), "deleting"));
        }
        let live = store::snapshots::live_count_of_volume(&txn, &current.id).await?;
        if live >= volumes::MAX_SNAPSHOTS {
            return Err(Error::new(
                Code::QuotaExceeded,
                format!("volume {} has {} snapshots that are not deleted: delete one first", current.id, live),
            )
            .with_details(json!({ "limit": volumes::MAX_SNAPSHOTS, "resource": "snapshots" })));
        }
        let now = self.clock.now();
        let new = store::snapshots::NewSnapshot {
            id: &id,
            tenant_id: &current.tenant_id,
            project_id: current.project_id.as_deref(),
            pool_id: &current.pool_id,
            provider_account_id: &current.provider_account_id,
            volume_id: &current.id,
            volume_kind: current.kind,
            region: &current.region,
            name: &input.name,
            provider_name: provider_name(&id, current.kind),
            min_disk_size: current.size_gib,
            deletion_protection: input.deletion_protection,
            schedule_id: input.schedule_id.as_deref(),
        };
        let created = store::snapshots::insert(&txn, new, now).await?;
        queue::wake(&txn, crate::store::volumes::RECONCILER, &id, self.clock.now_ms()).await?;
        self.commit_and_wake(txn, vec![event("created", &created)]).await?;
        Ok(view(&created))
    }

    pub async fn snapshot_get(&self, actor: &Actor, tenant_id: &str, snapshot_id: &str) -> Result<SnapshotView> {
        validate::tenant_id("tenantId", tenant_id)?;
        validate::id("snapshotId", ids::SNAPSHOT, snapshot_id)?;
        let found = find_snapshot(&self.db, tenant_id, snapshot_id).await?;
        actor.decide(READ, &Target::resource(tenant_id, found.project_id.as_deref(), KIND, snapshot_id))?;
        Ok(view(&found))
    }

    /// The tenant's snapshots (optionally of one volume) in the order they were made.
    pub async fn snapshot_list(
        &self,
        actor: &Actor,
        tenant_id: &str,
        filter: SnapshotListFilter,
    ) -> Result<rows::Page<SnapshotView>> {
        actor.decide_list(READ, tenant_id)?;
        rows::check_list(tenant_id, &filter.list, ids::SNAPSHOT)?;
        if let Some(volume_id) = &filter.volume_id {
            validate::id("volumeId", ids::VOLUME, volume_id)?;
        }
        let visible = actor.readable(READ, tenant_id, Some(KIND));
        let found =
            store::snapshots::page(&self.db, tenant_id, &filter.list, &visible, filter.volume_id.as_deref()).await?;
        Ok(rows::page(found, filter.list.first, |s| &s.id, |s| readable(actor, &s).then(|| s.into())))
    }

    /// The snapshots (not deleted) of each volume that `actor` may read, in one statement.
    pub async fn snapshots_of(
        &self,
        actor: &Actor,
        volume_ids: &[String],
    ) -> Result<foldhash::HashMap<String, Vec<SnapshotView>>> {
        snapshots_in(&Session::open(&self.db).await?, actor, volume_ids, &Columns::all()).await
    }

    /// Changes the snapshot's deletion protection; the same value returns it unchanged.
    pub async fn snapshot_update(&self, actor: &Actor, update: Protection) -> Result<SnapshotView> {
        validate::tenant_id("tenantId", &update.tenant_id)?;
        validate::id("snapshotId", ids::SNAPSHOT, &update.id)?;
        let txn = self.begin().await?;
        crate::store::lock(&txn, "provider_snapshots", &update.id).await?;
        let current = find_snapshot(&txn, &update.tenant_id, &update.id).await?;
        actor.decide(MANAGE, &Target::resource(&update.tenant_id, current.project_id.as_deref(), KIND, &current.id))?;
        if current.state == State::Deleted {
            return Err(Error::not_found(KIND, &current.id));
        }
        if current.desired_state == Desired::Absent {
            return Err(invalid_state(format!("snapshot {} is being deleted", current.id), "deleting"));
        }
        let Some(on) = update.change_of(current.deletion_protection) else { return Ok(view(&current)) };
        let updated =
            store::change::set_deletion_protection::<snapshot::Entity>(&txn, &current.id, on, self.clock.now()).await?;
        self.commit(txn, vec![event("updated", &updated)]).await?;
        Ok(view(&updated))
    }

    /// Marks the snapshot for deletion and returns it deleting; one being deleted is returned.
    pub async fn snapshot_delete(&self, actor: &Actor, tenant_id: &str, snapshot_id: &str) -> Result<SnapshotView> {
        validate::tenant_id("tenantId", tenant_id)?;
        validate::id("snapshotId", ids::SNAPSHOT, snapshot_id)?;
        let txn = self.begin().await?;
        crate::store::lock(&txn, "provider_snapshots", snapshot_id).await?;
        let current = find_snapshot(&txn, tenant_id, snapshot_id).await?;
        actor.decide(MANAGE, &Target::resource(tenant_id, current.project_id.as_deref(), KIND, snapshot_id))?;
        if current.state == State::Deleted {
            return Err(Error::not_found(KIND, snapshot_id));
        }
        if current.desired_state == Desired::Absent {
            return Ok(view(&current));
        }
        check_delete(current.deletion_protection, &format!("snapshot {snapshot_id}"), "providerSnapshotUpdate")?;
        let updated = store::snapshots::mark_deleting(&txn, snapshot_id, self.clock.now()).await?;
        queue::wake(&txn, crate::store::volumes::RECONCILER, snapshot_id, self.clock.now_ms()).await?;
        self.commit_and_wake(txn, vec![event("deleting", &updated)]).await?;
        Ok(view(&updated))
    }

    /// Records a new volume made from the snapshot, in the snapshot's volume's pool, region and
    /// filesystem; the reconciler makes it once the snapshot is ready.
    pub async fn snapshot_restore(&self, actor: &Actor, input: SnapshotRestore) -> Result<VolumeView> {
        validate::tenant_id("tenantId", &input.tenant_id)?;
        validate::id("snapshotId", ids::SNAPSHOT, &input.snapshot_id)?;
        validate::name("name", &input.name)?;
        validate::idempotency_key(&input.idempotency_key)?;
        if let Some(description) = &input.description {
            validate::max_len("description", description, 256)?;
        }
        if input.filesystem.is_some() {
            return Err(Error::invalid_input(
                "filesystem",
                "a restore keeps the filesystem of the snapshot's volume: formatting could wipe the restored data",
            ));
        }
        let txn = self.begin().await?;
        crate::store::lock(&txn, "provider_snapshots", &input.snapshot_id).await?;
        let source = find_snapshot(&txn, &input.tenant_id, &input.snapshot_id).await?;
        // Decided on the snapshot alone (the seeds: a restore on the snapshot), and the key before
        // any state rule: a replay returns the volume it made, whatever the snapshot's state now.
        actor.decide(MANAGE, &Target::resource(&input.tenant_id, source.project_id.as_deref(), KIND, &source.id))?;
        let id = ids::new_id(ids::VOLUME);
        let key = idempotency::Key {
            tenant_id: &input.tenant_id,
            operation: "providerSnapshotRestore",
            key: &input.idempotency_key,
        };
        if let Claim::Existing(existing) =
            idempotency::claim(&txn, &key, &idempotency::request_hash(&input), &id).await?
        {
            drop(txn);
            return self.volume_load(&self.db, &input.tenant_id, &existing).await;
        }
        if source.volume_kind == VolumeKind::Shared {
            return Err(Error::new(Code::Unsupported, "a shared volume's snapshot cannot be restored yet")
                .with_details(json!({ "reason": "sharedRestore" })));
        }
        if source.desired_state == Desired::Absent {
            return Err(invalid_state(format!("snapshot {} is deleted or being deleted", source.id), "deleting"));
        }
        let size_gib = input.size_gib.unwrap_or(source.min_disk_size);
        validate::range("sizeGiB", size_gib, 1, volumes::MAX_SIZE_GIB)?;
        if size_gib < source.min_disk_size {
            return Err(Error::invalid_input(
                "sizeGiB",
                format!("a volume from this snapshot is {} GiB at least", source.min_disk_size),
            )
            .with_details(json!({ "field": "sizeGiB", "min": source.min_disk_size })));
        }
        let filesystem = volumes::find_volume(&txn, &input.tenant_id, &source.volume_id).await?.filesystem;
        let create = VolumeCreate {
            tenant_id: input.tenant_id.clone(),
            project_id: source.project_id.clone(),
            pool_id: source.pool_id.clone(),
            name: input.name.clone(),
            description: input.description.clone(),
            region: source.region.clone(),
            size_gib,
            kind: VolumeKind::Block,
            network_id: None,
            filesystem,
            delete_with_instance: input.delete_with_instance,
            instance_id: None,
            deletion_protection: input.deletion_protection,
            idempotency_key: input.idempotency_key.clone(),
        };
        let now = self.clock.now();
        let restore = volumes::Restore { snapshot_id: &source.id, size_from_snapshot: input.size_gib.is_none() };
        let created =
            volumes::insert_volume(&txn, &id, &create, &source.provider_account_id, Some(restore), now).await?;
        store::volumes::book(&txn, &created, size_gib).await?;
        queue::wake(&txn, crate::store::volumes::RECONCILER, &id, self.clock.now_ms()).await?;
        self.commit_and_wake(txn, vec![crate::views::volumes::event("created", &created, &[])]).await?;
        Ok(crate::views::volumes::view(&created, &[]))
    }

    pub async fn snapshot_watch(
        &self,
        actor: &Actor,
        tenant_id: &str,
        snapshot_id: &str,
    ) -> Result<crate::feed::Filter> {
        let found = self.snapshot_get(actor, tenant_id, snapshot_id).await?;
        Ok(crate::feed::Filter::resource(actor, found.tenant_id, "providerVolume.snapshot.*", found.id))
    }
}

fn readable(actor: &Actor, s: &snapshot::Model) -> bool {
    actor.allows(READ, &Target::resource(&s.tenant_id, s.project_id.as_deref(), KIND, &s.id))
}

pub(crate) async fn find_snapshot(
    conn: &impl ConnectionTrait,
    tenant_id: &str,
    snapshot_id: &str,
) -> Result<snapshot::Model> {
    store::list::find_in_tenant::<snapshot::Entity>(conn, tenant_id, snapshot_id)
        .await?
        .ok_or_else(|| Error::not_found(KIND, snapshot_id))
}

/// `Services::snapshots_of` within a session.
pub async fn snapshots_in(
    session: &Session<'_>,
    actor: &Actor,
    volume_ids: &[String],
    columns: &Columns<snapshot::Entity>,
) -> Result<foldhash::HashMap<String, Vec<SnapshotView>>> {
    let found = store::snapshots::live_of_volumes(session, volume_ids, columns).await?;
    let mut by_volume: foldhash::HashMap<String, Vec<SnapshotView>> =
        foldhash::HashMapExt::with_capacity(volume_ids.len());
    for s in found.into_iter().filter(|s| readable(actor, s)) {
        by_volume.entry(s.volume_id.clone()).or_default().push(s.into());
    }
    Ok(by_volume)
}
