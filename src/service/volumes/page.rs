//! A page of volumes as a list shows them: the volumes, and as far as the caller asks, their
//! attachments with those attachments' instances, and their snapshots, each read in one statement
//! of only the columns asked (`store::columns`), whatever the page's size.
use std::sync::Arc;

// The page's children by volume and instance id, hashed by foldhash: SipHash over those ids was
// 7% of a page's instructions.
use foldhash::{HashMap, HashMapExt};

use super::super::instances::{self};
use super::super::rows;
use super::super::snapshots::snapshots_in;
use super::READ;
use crate::authz::{Actor, Target};
use crate::error::Result;
use crate::ids;
use crate::services::Services;
use crate::store;
use crate::store::columns::Columns;
use crate::store::entity::{
    instance, provider_snapshot as snapshot, provider_volume as volume, volume_attachment as attachment,
};
use crate::store::session::Session;
use crate::views::fields::Selected;
use crate::views::instances::InstanceView;
use crate::views::snapshots::SnapshotView;
use crate::views::volumes::{AttachmentView, KIND, VolumeView, view_of};

/// What a page of volumes shows: the fields of each volume, and of each kind of child it reads
/// along (None: not read; a child not asked for is not read).
pub struct VolumeReads {
    pub volumes: Selected,
    pub attachments: Option<Selected>,
    /// The attachments' instances (read only with the attachments).
    pub instances: Option<Selected>,
    pub snapshots: Option<Selected>,
}

/// The columns of `selected`, with those every read of them needs: the id, and what
/// authorization decides on.
fn volume_columns(selected: &Selected) -> Columns<volume::Entity> {
    use volume::Column::{Id, ProjectId, TenantId};
    Columns::named(selected.names(), &[Id, TenantId, ProjectId])
}

fn attachment_columns(selected: &Selected) -> Columns<attachment::Entity> {
    Columns::named(selected.names(), &[attachment::Column::Id, attachment::Column::VolumeId])
}

fn instance_columns(selected: &Selected) -> Columns<instance::Entity> {
    use instance::Column::{Id, ProjectId, TenantId};
    Columns::named(selected.names(), &[Id, TenantId, ProjectId])
}

fn snapshot_columns(selected: &Selected) -> Columns<snapshot::Entity> {
    use snapshot::Column::{Id, ProjectId, TenantId, VolumeId};
    Columns::named(selected.names(), &[Id, TenantId, ProjectId, VolumeId])
}

/// A page of volumes, each view with its attachments when they were read, and the children
/// read along: the instances of those attachments the caller may read, and each volume's
/// snapshots (not deleted) that the caller may read.
pub struct VolumePage {
    pub volumes: rows::Page<VolumeView>,
    pub instances: HashMap<String, Arc<InstanceView>>,
    pub snapshots: HashMap<String, Vec<SnapshotView>>,
}

impl Services {
    /// The tenant's volumes in the order they were made, a page at a time, with what `reads`
    /// asks of them.
    pub async fn volume_page(
        &self,
        actor: &Actor,
        tenant_id: &str,
        filter: crate::store::list::ListFilter,
        reads: &VolumeReads,
    ) -> Result<VolumePage> {
        actor.decide_list(READ, tenant_id)?;
        rows::check_list(tenant_id, &filter, ids::VOLUME)?;
        // One connection for the page's statements (`store::session`).
        let session = Session::open(&self.db).await?;
        let readable = actor.readable(READ, tenant_id, Some(KIND));
        let found = store::list::page_of::<volume::Entity>(
            &session,
            tenant_id,
            &filter,
            &readable,
            &volume_columns(&reads.volumes),
        )
        .await?;
        let mut volumes = rows::page(
            found,
            filter.first,
            |v| &v.id,
            |v| {
                let target = Target::resource(tenant_id, v.project_id.as_deref(), KIND, &v.id);
                actor.allows(READ, &target).then(|| view_of(v, Vec::new()))
            },
        );
        let ids: Vec<String> = volumes.items.iter().map(|v| v.id.clone()).collect();
        if ids.is_empty() {
            return Ok(VolumePage { volumes, instances: HashMap::new(), snapshots: HashMap::new() });
        }
        let attached = async {
            let Some(selected) = &reads.attachments else { return Ok(HashMap::new()) };
            let columns = &attachment_columns(selected);
            let (found, instances) = match &reads.instances {
                Some(instances) => {
                    let instances = &instance_columns(instances);
                    let (found, instances) =
                        store::volumes::live_attachments_with_instances(&session, &ids, columns, instances).await?;
                    (found, readable_instances(actor, instances))
                }
                None => (store::volumes::live_attachments_of(&session, &ids, columns).await?, HashMap::new()),
            };
            let mut attached = by_volume(found, ids.len());
            for volume in &mut volumes.items {
                volume.attachments = attached.remove(&volume.id).unwrap_or_default();
            }
            Ok(instances)
        };
        let snapshots = async {
            match &reads.snapshots {
                Some(selected) => snapshots_in(&session, actor, &ids, &snapshot_columns(selected)).await,
                None => Ok(HashMap::new()),
            }
        };
        let (instances, snapshots) = tokio::try_join!(attached, snapshots)?;
        Ok(VolumePage { volumes, instances, snapshots })
    }

    /// Instances by id, in one statement, only those `actor` may read.
    pub async fn instances_by_id(
        &self,
        actor: &Actor,
        instance_ids: &[String],
    ) -> Result<HashMap<String, Arc<InstanceView>>> {
        let session = Session::open(&self.db).await?;
        let found = store::instances::find_many(&session, instance_ids, &Columns::all()).await?;
        Ok(readable_instances(actor, found))
    }
}

/// Attachments by the id of their volume.
fn by_volume(found: Vec<attachment::Model>, volumes: usize) -> HashMap<String, Vec<AttachmentView>> {
    let mut by_volume: HashMap<String, Vec<AttachmentView>> = HashMap::with_capacity(volumes);
    for mut a in found {
        let volume_id = std::mem::take(&mut a.volume_id);
        by_volume.entry(volume_id).or_default().push(a.into());
    }
    by_volume
}

/// The instances `actor` may read, by id (an instance found more than once is kept once).
fn readable_instances(actor: &Actor, found: Vec<instance::Model>) -> HashMap<String, Arc<InstanceView>> {
    let mut readable = HashMap::with_capacity(found.len());
    for i in found {
        if readable.contains_key(&i.id) {
            continue;
        }
        let target = Target::resource(&i.tenant_id, i.project_id.as_deref(), crate::views::instances::KIND, &i.id);
        if actor.allows(instances::READ, &target) {
            readable.insert(i.id.clone(), Arc::new(InstanceView::from(i)));
        }
    }
    readable
}
