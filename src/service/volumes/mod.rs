//! Provider volumes: block volumes (one instance at a time) and shared volumes (NFS shares that
//! the instances of one tenant network mount at once). Calls record what the tenant wants, book
//! diskGiB, and wake `vps.provider-resources`; the volume's view (also the `providerVolume.*`
//! events' data) says what the reconciler last saw. Decided on the volume:
//! `compute:volumes:read` to read, `compute:volumes:manage` for everything else; putting one on an
//! instance is also decided as `compute:instances:update` on that instance.
mod checks;
mod page;

use chrono::{DateTime, Utc};
use sea_orm::ConnectionTrait;
use serde::Serialize;
use serde_json::json;

use super::networks::{self};
use super::protection::{Protection, check_delete};
use super::rows;
use super::{instances, validate};
use crate::authz::{Actor, Target};
use crate::error::{Code, Error, Result};
use crate::ids;
use crate::provider;
use crate::services::Services;
use crate::store;
use crate::store::attachments::mark_detach;
use crate::store::entity::{instance, provider_volume as volume, volume_attachment as attachment};
use crate::store::idempotency::{self, Claim};
use crate::store::queue;
use crate::store::state::{Desired, State, VolumeFilesystem, VolumeKind};
use crate::views::volumes::{KIND, VolumeView, event, view};
pub(crate) use checks::attachable_instance;
use checks::*;
pub use page::{VolumePage, VolumeReads};

use crate::store::volumes::{RECONCILER, live_attachments};
pub const READ: &str = "compute:volumes:read";
pub const MANAGE: &str = "compute:volumes:manage";
pub const MAX_SIZE_GIB: i64 = 16_384;
/// Snapshots a volume keeps that are not deleted.
pub const MAX_SNAPSHOTS: u64 = 25;
/// The state of a snapshot's volume the reconciler also reads: `updating` while a resize runs.

#[derive(Serialize)]
pub struct VolumeCreate {
    pub tenant_id: String,
    pub project_id: Option<String>,
    pub pool_id: String,
    pub name: String,
    pub description: Option<String>,
    pub region: String,
    pub size_gib: i64,
    pub kind: VolumeKind,
    pub network_id: Option<String>,
    pub filesystem: Option<VolumeFilesystem>,
    pub delete_with_instance: bool,
    pub instance_id: Option<String>,
    /// A delete is refused while it is set. Left out of the request's hash when false, so keys
    /// recorded before it existed replay.
    #[serde(skip_serializing_if = "crate::service::protection::is_false")]
    pub deletion_protection: bool,
    #[serde(skip)]
    pub idempotency_key: String,
}

/// The name a volume is made under at the provider: derived from its id, so a create whose
/// answer was lost is found by name.
pub fn provider_name(volume_id: &str) -> String {
    format!("bc-{}", volume_id.replace('_', "-"))
}

impl Services {
    pub async fn volume_create(&self, actor: &Actor, input: VolumeCreate) -> Result<VolumeView> {
        check_create(&input)?;
        let id = ids::new_id(ids::VOLUME);
        actor.decide_create(MANAGE, &input.tenant_id, input.project_id.as_deref(), KIND, &id)?;
        let txn = self.begin().await?;
        // The key first: a replay returns what it made, whatever the state rules say now.
        let key = idempotency::Key {
            tenant_id: &input.tenant_id,
            operation: "providerVolumeCreate",
            key: &input.idempotency_key,
        };
        if let Claim::Existing(existing) =
            idempotency::claim(&txn, &key, &idempotency::request_hash(&input), &id).await?
        {
            drop(txn);
            return self.volume_load(&self.db, &input.tenant_id, &existing).await;
        }
        let pool = rows::offered_pool(&txn, &input.tenant_id, &input.pool_id).await?;
        let account_kind = pool.account.kind;
        if !provider::supports_volumes(account_kind) {
            return Err(networks::unsupported("volumes", account_kind));
        }
        rows::check_project(&txn, &input.tenant_id, input.project_id.as_deref()).await?;
        rows::check_region(&pool, &input.region)?;
        if input.kind == VolumeKind::Shared {
            check_shared(&txn, actor, &input, &pool.account.id, account_kind).await?;
        }
        let target = match &input.instance_id {
            Some(instance_id) => {
                let found = attachable_instance(&txn, actor, &input.tenant_id, instance_id).await?;
                check_instance_fits(&found, &pool.account.id, &input.region, input.kind, input.network_id.as_deref())?;
                Some(found)
            }
            None => None,
        };
        let now = self.clock.now();
        let created = insert_volume(&txn, &id, &input, &pool.account.id, None, now).await?;
        store::volumes::book(&txn, &created, created.size_gib).await?;
        let mut attached = Vec::new();
        if let Some(found) = target {
            attached.push(insert_attachment(&txn, &id, &found.id, now).await?);
        }
        queue::wake(&txn, RECONCILER, &id, self.clock.now_ms()).await?;
        self.commit_and_wake(txn, vec![event("created", &created, &attached)]).await?;
        Ok(view(&created, &attached))
    }

    /// Puts the volume on an instance: the attachment is recorded pending and the reconciler
    /// attaches it at the provider.
    pub async fn volume_attach(
        &self,
        actor: &Actor,
        tenant_id: &str,
        volume_id: &str,
        instance_id: &str,
    ) -> Result<VolumeView> {
        validate::id("instanceId", ids::INSTANCE, instance_id)?;
        let txn = self.begin().await?;
        let (current, attached) = self.volume_for_change(&txn, actor, tenant_id, volume_id).await?;
        // The volume's lock, then the instance's: an instance's delete cannot slip in between.
        crate::store::lock(&txn, "instances", instance_id).await?;
        let found = attachable_instance(&txn, actor, tenant_id, instance_id).await?;
        check_instance_fits(
            &found,
            &current.provider_account_id,
            &current.region,
            current.kind,
            current.network_id.as_deref(),
        )?;
        if let Some(same) = attached.iter().find(|a| a.instance_id == instance_id) {
            if same.desired_state == Desired::Absent {
                return Err(invalid_state(format!("the volume is being detached from {instance_id}"), "detaching"));
            }
            return Ok(view(&current, &attached));
        }
        if current.kind == VolumeKind::Block
            && let Some(other) = attached.first()
        {
            if other.desired_state == Desired::Absent {
                return Err(invalid_state(
                    format!("the volume is being detached from {}", other.instance_id),
                    "detaching",
                ));
            }
            return Err(Error::conflict(format!(
                "the volume is attached to {}: detach it first (a block volume is on one instance at a time)",
                other.instance_id
            ))
            .with_details(json!({ "instanceId": other.instance_id })));
        }
        let now = self.clock.now();
        let mut attached = attached;
        attached.push(insert_attachment(&txn, volume_id, instance_id, now).await?);
        let updated = store::volumes::mark_attachments_changed(&txn, &current, now).await?;
        queue::wake(&txn, RECONCILER, volume_id, self.clock.now_ms()).await?;
        self.commit_and_wake(txn, vec![event("updated", &updated, &attached)]).await?;
        Ok(view(&updated, &attached))
    }

    /// Takes the volume off an instance (required for a shared volume; a block volume's own one
    /// otherwise). A volume not on that instance is returned as it is.
    pub async fn volume_detach(
        &self,
        actor: &Actor,
        tenant_id: &str,
        volume_id: &str,
        instance_id: Option<&str>,
    ) -> Result<VolumeView> {
        if let Some(instance_id) = instance_id {
            validate::id("instanceId", ids::INSTANCE, instance_id)?;
        }
        let txn = self.begin().await?;
        let (current, mut attached) = self.volume_for_change(&txn, actor, tenant_id, volume_id).await?;
        if current.kind == VolumeKind::Shared && instance_id.is_none() {
            return Err(Error::invalid_input("instanceId", "a shared volume's detach names the instance"));
        }
        let Some(position) = attached
            .iter()
            .position(|a| instance_id.is_none_or(|id| a.instance_id == id) && a.desired_state == Desired::Present)
        else {
            drop(txn);
            return self.volume_load(&self.db, tenant_id, volume_id).await;
        };
        if current.delete_with_instance {
            crate::store::lock(&txn, "instances", &attached[position].instance_id).await?;
            let on = self.instance_load(&txn, tenant_id, &attached[position].instance_id).await?;
            if on.desired_state == Desired::Absent {
                return Err(invalid_state(
                    format!("instance {} is being deleted: a deleteWithInstance volume goes with the machine", on.id),
                    "instanceDeleting",
                ));
            }
        }
        let now = self.clock.now();
        attached[position] = mark_detach(&txn, &attached[position], now).await?;
        let updated = store::volumes::mark_attachments_changed(&txn, &current, now).await?;
        queue::wake(&txn, RECONCILER, volume_id, self.clock.now_ms()).await?;
        self.commit_and_wake(txn, vec![event("updated", &updated, &attached)]).await?;
        Ok(view(&updated, &attached))
    }

    /// Grows the volume, booking the difference on diskGiB. The filesystem is the guest's to grow.
    pub async fn volume_resize(
        &self,
        actor: &Actor,
        tenant_id: &str,
        volume_id: &str,
        size_gib: i64,
    ) -> Result<VolumeView> {
        validate::range("sizeGiB", size_gib, 1, MAX_SIZE_GIB)?;
        let txn = self.begin().await?;
        let (current, attached) = self.volume_for_change(&txn, actor, tenant_id, volume_id).await?;
        if size_gib < current.size_gib {
            return Err(Error::invalid_input("sizeGiB", format!("volumes only grow: it is {} GiB", current.size_gib))
                .with_details(json!({ "field": "sizeGiB", "sizeGiB": current.size_gib })));
        }
        if size_gib == current.size_gib {
            return Ok(view(&current, &attached));
        }
        store::volumes::book(&txn, &current, size_gib).await?;
        let now = self.clock.now();
        let updated = store::volumes::mark_resized(&txn, &current, size_gib, now).await?;
        queue::wake(&txn, RECONCILER, volume_id, self.clock.now_ms()).await?;
        self.commit_and_wake(txn, vec![event("updated", &updated, &attached)]).await?;
        Ok(view(&updated, &attached))
    }

    /// Marks the volume for deletion and returns it deleting; INVALID_STATE while any instance
    /// still has it.
    pub async fn volume_delete(&self, actor: &Actor, tenant_id: &str, volume_id: &str) -> Result<VolumeView> {
        let txn = self.begin().await?;
        let (current, attached) = self.volume_for_update(&txn, actor, tenant_id, volume_id).await?;
        if current.desired_state == Desired::Absent {
            return Ok(view(&current, &attached));
        }
        check_delete(current.deletion_protection, &format!("volume {volume_id}"), "providerVolumeUpdate")?;
        if !attached.is_empty() {
            let instance_ids: Vec<&str> = attached.iter().map(|a| a.instance_id.as_str()).collect();
            return Err(Error::new(Code::InvalidState, "the volume is attached: detach it from every instance first")
                .with_details(json!({ "reason": "attached", "instanceIds": instance_ids })));
        }
        let now = self.clock.now();
        let updated = store::volumes::mark_deleting(&txn, &current, now).await?;
        queue::wake(&txn, RECONCILER, volume_id, self.clock.now_ms()).await?;
        self.commit_and_wake(txn, vec![event("deleting", &updated, &attached)]).await?;
        Ok(view(&updated, &attached))
    }

    /// Changes the volume's deletion protection; the same value returns it unchanged.
    pub async fn volume_update(&self, actor: &Actor, update: Protection) -> Result<VolumeView> {
        let txn = self.begin().await?;
        let (current, attached) = self.volume_for_change(&txn, actor, &update.tenant_id, &update.id).await?;
        let Some(on) = update.change_of(current.deletion_protection) else {
            return Ok(view(&current, &attached));
        };
        let updated =
            store::change::set_deletion_protection::<volume::Entity>(&txn, &current.id, on, self.clock.now()).await?;
        self.commit(txn, vec![event("updated", &updated, &attached)]).await?;
        Ok(view(&updated, &attached))
    }

    pub async fn volume_get(&self, actor: &Actor, tenant_id: &str, volume_id: &str) -> Result<VolumeView> {
        validate::tenant_id("tenantId", tenant_id)?;
        validate::id("volumeId", ids::VOLUME, volume_id)?;
        let found = self.volume_load(&self.db, tenant_id, volume_id).await?;
        actor.decide(READ, &Target::resource(tenant_id, found.project_id.as_deref(), KIND, volume_id))?;
        Ok(found)
    }

    pub async fn volume_watch(&self, actor: &Actor, tenant_id: &str, volume_id: &str) -> Result<crate::feed::Filter> {
        let found = self.volume_get(actor, tenant_id, volume_id).await?;
        Ok(crate::feed::Filter::resource(actor, found.tenant_id, "providerVolume.*", found.id))
    }

    pub(crate) async fn volume_load(
        &self,
        conn: &impl ConnectionTrait,
        tenant_id: &str,
        volume_id: &str,
    ) -> Result<VolumeView> {
        let found = find_volume(conn, tenant_id, volume_id).await?;
        let attached = live_attachments(conn, volume_id).await?;
        Ok(view(&found, &attached))
    }

    /// The volume (row-locked) and its live attachments for a change, after deciding
    /// `compute:volumes:manage`; NOT_FOUND once deleted.
    pub(crate) async fn volume_for_update(
        &self,
        conn: &impl ConnectionTrait,
        actor: &Actor,
        tenant_id: &str,
        volume_id: &str,
    ) -> Result<(volume::Model, Vec<attachment::Model>)> {
        let found = self.volume_decided(conn, actor, tenant_id, volume_id).await?;
        if found.state == State::Deleted {
            return Err(Error::not_found(KIND, volume_id));
        }
        let attached = live_attachments(conn, volume_id).await?;
        Ok((found, attached))
    }

    /// The volume locked for a change once `actor` may manage it, whatever its state: a replay
    /// answers before the state rules of a first call (the row outlives the volume).
    pub(crate) async fn volume_decided(
        &self,
        conn: &impl ConnectionTrait,
        actor: &Actor,
        tenant_id: &str,
        volume_id: &str,
    ) -> Result<volume::Model> {
        validate::tenant_id("tenantId", tenant_id)?;
        validate::id("volumeId", ids::VOLUME, volume_id)?;
        crate::store::lock(conn, "provider_volumes", volume_id).await?;
        let found = find_volume(conn, tenant_id, volume_id).await?;
        actor.decide(MANAGE, &Target::resource(tenant_id, found.project_id.as_deref(), KIND, volume_id))?;
        Ok(found)
    }

    /// `volume_for_update`, and INVALID_STATE when the volume is being deleted.
    async fn volume_for_change(
        &self,
        conn: &impl ConnectionTrait,
        actor: &Actor,
        tenant_id: &str,
        volume_id: &str,
    ) -> Result<(volume::Model, Vec<attachment::Model>)> {
        let (found, attached) = self.volume_for_update(conn, actor, tenant_id, volume_id).await?;
        if found.desired_state == Desired::Absent {
            return Err(invalid_state(format!("volume {volume_id} is being deleted"), "deleting"));
        }
        Ok((found, attached))
    }
}

pub(crate) async fn find_volume(
    conn: &impl ConnectionTrait,
    tenant_id: &str,
    volume_id: &str,
) -> Result<volume::Model> {
    store::list::find_in_tenant::<volume::Entity>(conn, tenant_id, volume_id)
        .await?
        .ok_or_else(|| Error::not_found(KIND, volume_id))
}

pub(crate) fn invalid_state(message: String, reason: &str) -> Error {
    Error::new(Code::InvalidState, message).with_details(json!({ "reason": reason }))
}

/// The snapshot a volume is restored from, and whether the restore named no size (the volume then
/// takes the snapshot's size as the provider reports it).
pub(crate) struct Restore<'a> {
    pub snapshot_id: &'a str,
    pub size_from_snapshot: bool,
}

pub(crate) async fn insert_volume(
    conn: &impl ConnectionTrait,
    id: &str,
    input: &VolumeCreate,
    account_id: &str,
    restore: Option<Restore<'_>>,
    now: DateTime<Utc>,
) -> Result<volume::Model> {
    let filesystem = match input.kind {
        VolumeKind::Shared => None,
        _ => input.filesystem.filter(|f| *f != VolumeFilesystem::None),
    };
    let new = store::volumes::NewVolume {
        id,
        tenant_id: &input.tenant_id,
        project_id: input.project_id.as_deref(),
        pool_id: &input.pool_id,
        provider_account_id: account_id,
        name: &input.name,
        description: input.description.as_deref(),
        region: &input.region,
        kind: input.kind,
        network_id: input.network_id.as_deref(),
        filesystem,
        delete_with_instance: input.delete_with_instance,
        source_snapshot_id: restore.as_ref().map(|r| r.snapshot_id),
        size_from_snapshot: restore.is_some_and(|r| r.size_from_snapshot),
        size_gib: input.size_gib,
        provider_name: provider_name(id),
        deletion_protection: input.deletion_protection,
    };
    store::volumes::insert(conn, new, now).await
}

async fn insert_attachment(
    conn: &impl ConnectionTrait,
    volume_id: &str,
    instance_id: &str,
    now: DateTime<Utc>,
) -> Result<attachment::Model> {
    store::volumes::insert_attachment(conn, &ids::new_id(ids::ATTACHMENT), volume_id, instance_id, now).await
}
