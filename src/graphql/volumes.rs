//! Provider volumes (block and shared), their attachments and mounts.
use std::borrow::Cow;

use async_graphql::parser::types::Field;
use async_graphql::{Context, ID, InputObject, Lookahead, Object, Result, SimpleObject, Subscription};
use chrono::{DateTime, Utc};
use futures_util::Stream;

use super::instances::Instance;
use super::loaders::loaders;
use super::networks::PageInfo;
use super::render::{
    Edge, Planner, Render, Rendered, Step, enumerated, null, optional, optional_enum, optional_text, scalar, text,
};
use super::snapshots::ProviderSnapshot;
use super::{actor, reads, services};
use crate::service::mounts;
use crate::service::snapshots::{SnapshotRestore, SnapshotTake};
use crate::service::volumes::{VolumeCreate, VolumePage, VolumeReads};
use crate::store::columns::Columns;
use crate::store::entity::{provider_volume as volume, volume_attachment as attachment};
use crate::store::list::ListFilter;
use crate::store::state::{Desired, State, VolumeFilesystem, VolumeKind};
use crate::views::volumes::{AttachmentView, VolumeView};

#[derive(InputObject)]
pub struct ProviderSnapshotRestoreInput {
    pub tenant_id: String,
    pub snapshot_id: String,
    /// The new volume's name.
    pub name: String,
    pub description: Option<String>,
    /// Not below the snapshot's size (the default).
    #[graphql(name = "sizeGiB")]
    pub size_gib: Option<i32>,
    #[graphql(default)]
    pub delete_with_instance: bool,
    /// Refused: the restored volume keeps the filesystem of the snapshot's volume.
    pub filesystem: Option<VolumeFilesystem>,
    pub idempotency_key: String,
}

/// A volume on an instance; `instance` is Some when the page it is on read its instance along.
pub struct Attachment {
    pub view: AttachmentView,
    instance: Option<Option<Instance>>,
}

impl From<AttachmentView> for Attachment {
    fn from(view: AttachmentView) -> Self {
        Attachment { view, instance: None }
    }
}

/// A volume on an instance.
// Its fields are read from memory: resolved one after another (`serial`), a page of them costs no
// task node and waker per field.
#[Object(serial)]
impl Attachment {
    pub async fn id(&self) -> ID {
        ID(self.view.id.clone())
    }
    async fn instance_id(&self) -> &str {
        &self.view.instance_id
    }
    /// The instance, when the caller may read it.
    async fn instance(&self, ctx: &Context<'_>) -> Result<Option<Instance>> {
        if let Some(read) = &self.instance {
            return Ok(read.clone());
        }
        Ok(loaders(ctx)?.instances.load_one(self.view.instance_id.clone()).await?.flatten().map(Instance))
    }
    /// PENDING (attaching), READY (attached), DELETING (detaching) or ERROR.
    async fn state(&self) -> State {
        self.view.state
    }
    async fn desired_state(&self) -> Desired {
        self.view.desired_state
    }
    async fn message(&self) -> Option<&str> {
        self.view.message.as_deref()
    }
    async fn ready_at(&self) -> Option<DateTime<Utc>> {
        self.view.ready_at
    }
}

/// Each field of `Attachment` as a page renders it (`render`), as its resolver gives it; its
/// instance only when the page read it along.
impl Render for Attachment {
    fn step(field: &Field, planner: &Planner<'_>) -> Option<Step<Self>> {
        match field.name.node.as_str() {
            "id" => text(|a| &a.view.id),
            "instanceId" => text(|a| &a.view.instance_id),
            "instance" => planner.object(field, |a: &Attachment| a.instance.as_ref().map(Option::as_ref)),
            "state" => enumerated(|a| a.view.state),
            "desiredState" => enumerated(|a| a.view.desired_state),
            "message" => optional_text(|a| a.view.message.as_deref()),
            "readyAt" => optional(|a| a.view.ready_at),
            _ => None,
        }
    }
}

/// The columns each field of `Attachment` is built from (`Columns::for_fields`).
pub(super) fn attachment_columns(field: &str) -> Option<&'static [attachment::Column]> {
    use attachment::Column::*;
    Some(match field {
        "id" | "__typename" => &[],
        "instanceId" | "instance" => &[InstanceId],
        "state" => &[State],
        "desiredState" => &[DesiredState],
        "message" => &[Message],
        "readyAt" => &[ReadyAt],
        _ => return None,
    })
}

#[derive(SimpleObject)]
pub struct MountLines {
    /// One entry of cloud-config's `mounts:` list.
    pub cloud_config: Vec<String>,
    /// The `/etc/fstab` line.
    pub fstab: String,
}

/// How a guest mounts a shared volume.
pub struct Mount {
    source: String,
}

#[Object]
impl Mount {
    /// The NFS source, `<host>:<path>`.
    async fn source(&self) -> &str {
        &self.source
    }
    /// The filesystem type to mount it as: `nfs4`.
    #[graphql(name = "type")]
    async fn mount_type(&self) -> &str {
        mounts::SHARED_VOLUME_TYPE
    }
    /// The lines that mount it at `path` (absolute, plain segments, outside the system's
    /// directories), for cloud-config user data or /etc/fstab, with `_netdev,nofail`.
    async fn mount_lines(&self, path: String, #[graphql(default)] read_only: bool) -> Result<MountLines> {
        let lines = mounts::shared_volume_mount(&self.source, &path, read_only)?;
        Ok(MountLines { cloud_config: lines.cloud_config, fstab: lines.fstab })
    }
}

/// `Mount` as a page renders it: `mountLines` takes arguments, and goes to the executor.
impl Render for Mount {
    fn step(field: &Field, _: &Planner<'_>) -> Option<Step<Self>> {
        match field.name.node.as_str() {
            "source" => text(|m| &m.source),
            "type" => text(|_| mounts::SHARED_VOLUME_TYPE),
            _ => None,
        }
    }
}

/// A volume with its attachments; its snapshots are Some when the page it is on read them along
/// (else the loaders read them when asked).
pub struct ProviderVolume {
    pub view: VolumeView,
    attachments: Vec<Attachment>,
    snapshots: Option<Vec<ProviderSnapshot>>,
}

impl ProviderVolume {
    /// A block volume's one attachment (a shared volume's are many).
    fn block_attachment(&self) -> Option<&Attachment> {
        if self.view.kind == VolumeKind::Shared {
            return None;
        }
        self.attachments.first()
    }

    /// A volume read on its own: its attachments are in its view.
    pub fn whole(mut view: VolumeView) -> Self {
        let attachments = std::mem::take(&mut view.attachments).into_iter().map(Attachment::from).collect();
        ProviderVolume { view, attachments, snapshots: None }
    }

    /// A volume of `page`, with the children the page read along.
    fn on_page(mut view: VolumeView, page: &mut VolumePage, reads: &VolumeReads) -> Self {
        let instance = |id: &str| reads.instances.as_ref().map(|_| page.instances.get(id).cloned().map(Instance));
        let attachments = std::mem::take(&mut view.attachments)
            .into_iter()
            .map(|a| Attachment { instance: instance(&a.instance_id), view: a })
            .collect();
        let snapshots = reads
            .snapshots
            .as_ref()
            .map(|_| page.snapshots.remove(&view.id).unwrap_or_default().into_iter().map(ProviderSnapshot).collect());
        ProviderVolume { view, attachments, snapshots }
    }
}

/// The columns each field of `ProviderVolume` is built from (`Columns::for_fields`); its
/// attachments and snapshots are read apart.
pub(super) fn volume_columns(field: &str) -> Option<&'static [volume::Column]> {
    use volume::Column::*;
    Some(match field {
        "id" | "attachments" | "snapshots" | "__typename" => &[],
        "tenantId" => &[TenantId],
        "projectId" => &[ProjectId],
        "poolId" => &[PoolId],
        "name" => &[Name],
        "description" => &[Description],
        "region" => &[Region],
        "kind" | "attachment" => &[Kind],
        "networkId" => &[NetworkId],
        "filesystem" => &[Filesystem],
        "deleteWithInstance" => &[DeleteWithInstance],
        "sourceSnapshotId" => &[SourceSnapshotId],
        "sizeGiB" => &[SizeGib],
        "observedSizeGiB" => &[ObservedSizeGib],
        "state" => &[State],
        "desiredState" => &[DesiredState],
        "message" => &[Message],
        "device" => &[Device],
        "mount" => &[MountSource],
        "version" => &[Version],
        "createdAt" => &[CreatedAt],
        "readyAt" => &[ReadyAt],
        "deletedAt" => &[DeletedAt],
        _ => return None,
    })
}

/// Each field of `ProviderVolume` as a page renders it (`render`), as its resolver gives it; its
/// snapshots only when the page read them along.
impl Render for ProviderVolume {
    fn step(field: &Field, planner: &Planner<'_>) -> Option<Step<Self>> {
        match field.name.node.as_str() {
            "id" => text(|v| &v.view.id),
            "tenantId" => text(|v| &v.view.tenant_id),
            "projectId" => optional_text(|v| v.view.project_id.as_deref()),
            "poolId" => text(|v| &v.view.pool_id),
            "name" => text(|v| &v.view.name),
            "description" => optional_text(|v| v.view.description.as_deref()),
            "region" => text(|v| &v.view.region),
            "kind" => enumerated(|v| v.view.kind),
            "networkId" => optional_text(|v| v.view.network_id.as_deref()),
            "filesystem" => optional_enum(|v| v.view.filesystem),
            "deleteWithInstance" => scalar(|v| v.view.delete_with_instance),
            "sourceSnapshotId" => optional_text(|v| v.view.source_snapshot_id.as_deref()),
            "sizeGiB" => scalar(|v| v.view.size_gib),
            "observedSizeGiB" => optional(|v| v.view.observed_size_gib),
            "state" => enumerated(|v| v.view.state),
            "desiredState" => enumerated(|v| v.view.desired_state),
            "message" => optional_text(|v| v.view.message.as_deref()),
            "device" => optional_text(|v| v.view.device.as_deref()),
            "mount" => {
                let plan = planner.plan::<Mount>(&field.selection_set.node)?;
                Some(Box::new(move |v: &ProviderVolume, out| match &v.view.mount_source {
                    Some(source) => plan.write(&Mount { source: source.clone() }, out),
                    None => null(out),
                }))
            }
            "attachment" => planner.object(field, |v: &ProviderVolume| Some(v.block_attachment())),
            "attachments" => planner.list(field, |v: &ProviderVolume| Some(&v.attachments[..])),
            "snapshots" => planner.list(field, |v: &ProviderVolume| v.snapshots.as_deref()),
            "version" => scalar(|v| v.view.version),
            "createdAt" => scalar(|v| v.view.created_at),
            "readyAt" => optional(|v| v.view.ready_at),
            "deletedAt" => optional(|v| v.view.deleted_at),
            _ => None,
        }
    }
}

impl Edge for ProviderVolumeEdge {
    type Node = ProviderVolume;
    fn cursor(&self) -> &str {
        &self.cursor
    }
    fn node(&self) -> &ProviderVolume {
        &self.node
    }
}

/// What a page of volumes reads for `node` (the selection of its edges' node).
fn volume_reads(node: &Lookahead<'_>) -> VolumeReads {
    use crate::store::entity::{instance, provider_snapshot as snapshot};
    let attachments = [node.field("attachments"), node.field("attachment")];
    let instances = [attachments[0].field("instance"), attachments[1].field("instance")];
    let snapshots = [node.field("snapshots")];
    let asked = |fields: &[Lookahead<'_>]| fields.iter().any(Lookahead::exists);
    VolumeReads {
        volumes: Columns::for_fields(
            reads::fields(std::slice::from_ref(node)),
            &[volume::Column::Id, volume::Column::TenantId, volume::Column::ProjectId],
            volume_columns,
        ),
        attachments: asked(&attachments).then(|| {
            let needed = [attachment::Column::Id, attachment::Column::VolumeId];
            Columns::for_fields(reads::fields(&attachments), &needed, attachment_columns)
        }),
        instances: asked(&instances).then(|| {
            let needed = [instance::Column::Id, instance::Column::TenantId, instance::Column::ProjectId];
            Columns::for_fields(reads::fields(&instances), &needed, super::instances::instance_columns)
        }),
        snapshots: asked(&snapshots).then(|| {
            use snapshot::Column::{Id, ProjectId, TenantId, VolumeId};
            let needed = [Id, TenantId, ProjectId, VolumeId];
            Columns::for_fields(reads::fields(&snapshots), &needed, super::snapshots::snapshot_columns)
        }),
    }
}

// Its fields are read from memory: resolved one after another (`serial`), a page of them costs no
// task node and waker per field.
#[Object(serial)]
impl ProviderVolume {
    pub async fn id(&self) -> ID {
        ID(self.view.id.clone())
    }
    async fn tenant_id(&self) -> &str {
        &self.view.tenant_id
    }
    async fn project_id(&self) -> Option<&str> {
        self.view.project_id.as_deref()
    }
    async fn pool_id(&self) -> &str {
        &self.view.pool_id
    }
    async fn name(&self) -> &str {
        &self.view.name
    }
    async fn description(&self) -> Option<&str> {
        self.view.description.as_deref()
    }
    async fn region(&self) -> &str {
        &self.view.region
    }
    /// BLOCK (one instance at a time) or SHARED (an NFS share on a network).
    async fn kind(&self) -> VolumeKind {
        self.view.kind
    }
    /// A shared volume's network.
    async fn network_id(&self) -> Option<&str> {
        self.view.network_id.as_deref()
    }
    /// The filesystem it was formatted with at create (never changed later); none for a shared
    /// volume.
    async fn filesystem(&self) -> Option<VolumeFilesystem> {
        self.view.filesystem
    }
    /// Deleted with the instance it is attached to (else deleting the instance detaches it).
    async fn delete_with_instance(&self) -> bool {
        self.view.delete_with_instance
    }
    /// The snapshot it was restored from.
    async fn source_snapshot_id(&self) -> Option<&str> {
        self.view.source_snapshot_id.as_deref()
    }
    /// The size asked for (and booked on diskGiB).
    #[graphql(name = "sizeGiB")]
    async fn size_gib(&self) -> i64 {
        self.view.size_gib
    }
    /// The size the provider last reported.
    #[graphql(name = "observedSizeGiB")]
    async fn observed_size_gib(&self) -> Option<i64> {
        self.view.observed_size_gib
    }
    async fn state(&self) -> State {
        self.view.state
    }
    async fn desired_state(&self) -> Desired {
        self.view.desired_state
    }
    /// Why it is not ready: the provider's words, or ours.
    async fn message(&self) -> Option<&str> {
        self.view.message.as_deref()
    }
    /// The path the guest sees a block volume at (`/dev/disk/by-id/scsi-0DO_Volume_…`), or a
    /// shared volume's NFS source.
    async fn device(&self) -> Option<&str> {
        self.view.device.as_deref()
    }
    /// How a guest mounts a shared volume, once the provider reports its source.
    async fn mount(&self) -> Option<Mount> {
        self.view.mount_source.clone().map(|source| Mount { source })
    }
    /// A block volume's attachment, when it has one (a shared volume's are in `attachments`).
    async fn attachment(&self) -> Option<&Attachment> {
        self.block_attachment()
    }
    /// Every attachment that is not finished (a shared volume's many).
    #[graphql(complexity = "super::limits::unbounded(child_complexity)")]
    async fn attachments(&self) -> &[Attachment] {
        &self.attachments
    }
    /// Its snapshots that are not deleted, oldest first.
    #[graphql(complexity = "super::limits::list(25, child_complexity)")]
    async fn snapshots(&self, ctx: &Context<'_>) -> Result<Cow<'_, Vec<ProviderSnapshot>>> {
        if let Some(read) = &self.snapshots {
            return Ok(Cow::Borrowed(read));
        }
        let found = loaders(ctx)?.snapshots.load_one(self.view.id.clone()).await?.unwrap_or_default();
        Ok(Cow::Owned(found.into_iter().map(ProviderSnapshot).collect()))
    }
    /// Bumped by every change: keep the view with the highest.
    async fn version(&self) -> i64 {
        self.view.version
    }
    async fn created_at(&self) -> DateTime<Utc> {
        self.view.created_at
    }
    /// Billing starts here.
    async fn ready_at(&self) -> Option<DateTime<Utc>> {
        self.view.ready_at
    }
    /// Billing ends here.
    async fn deleted_at(&self) -> Option<DateTime<Utc>> {
        self.view.deleted_at
    }
}

#[derive(SimpleObject)]
#[graphql(serial)]
pub struct ProviderVolumeEdge {
    pub cursor: String,
    pub node: ProviderVolume,
}

#[derive(SimpleObject)]
pub struct ProviderVolumeConnection {
    pub edges: Rendered<ProviderVolumeEdge>,
    pub page_info: PageInfo,
}

#[derive(InputObject)]
pub struct ProviderVolumeCreateInput {
    pub tenant_id: String,
    pub project_id: Option<String>,
    pub pool_id: String,
    /// Unique in the tenant among volumes not deleted.
    pub name: String,
    pub description: Option<String>,
    pub region: String,
    /// 1 to 16384 (a DigitalOcean share: 50 at least).
    #[graphql(name = "sizeGiB")]
    pub size_gib: i32,
    #[graphql(default_with = "VolumeKind::Block")]
    pub kind: VolumeKind,
    /// Required for a shared volume, refused for a block one.
    pub network_id: Option<String>,
    /// Formats a block volume at create.
    pub filesystem: Option<VolumeFilesystem>,
    #[graphql(default)]
    pub delete_with_instance: bool,
    /// Attaches it once both exist.
    pub instance_id: Option<String>,
    pub idempotency_key: String,
}

#[derive(InputObject)]
pub struct ProviderVolumeAttachInput {
    pub tenant_id: String,
    pub volume_id: String,
    pub instance_id: String,
}

#[derive(InputObject)]
pub struct ProviderVolumeDetachInput {
    pub tenant_id: String,
    pub volume_id: String,
    /// Required for a shared volume.
    pub instance_id: Option<String>,
}

#[derive(InputObject)]
pub struct ProviderVolumeResizeInput {
    pub tenant_id: String,
    pub volume_id: String,
    #[graphql(name = "sizeGiB")]
    pub size_gib: i32,
}

#[derive(InputObject)]
pub struct ProviderVolumeSnapshotInput {
    pub tenant_id: String,
    pub volume_id: String,
    /// Unique among the volume's snapshots not deleted.
    pub name: String,
    pub idempotency_key: String,
}

#[derive(InputObject)]
pub struct ProviderVolumeDeleteInput {
    pub tenant_id: String,
    pub volume_id: String,
}

#[derive(Default)]
pub struct VolumeQuery;

#[Object]
impl VolumeQuery {
    /// One volume (`compute:volumes:read` on `provider-volume/{id}`): its kind, state, observed
    /// size, device, attachments, a shared volume's mount, and its snapshots.
    async fn provider_volume(&self, ctx: &Context<'_>, tenant_id: String, volume_id: String) -> Result<ProviderVolume> {
        Ok(ProviderVolume::whole(services(ctx).volume_get(actor(ctx)?, &tenant_id, &volume_id).await?))
    }

    /// The tenant's volumes in the order they were made (at most 1000 a page), optionally of one
    /// pool or project; deleted ones only with `includeDeleted`. Pass `pageInfo.endCursor` as
    /// `after` for the next page.
    #[allow(clippy::too_many_arguments)]
    #[graphql(complexity = "super::limits::page(first, child_complexity)")]
    async fn provider_volumes(
        &self,
        ctx: &Context<'_>,
        tenant_id: String,
        pool_id: Option<String>,
        project_id: Option<String>,
        #[graphql(default)] include_deleted: bool,
        #[graphql(default = 100)] first: i32,
        after: Option<String>,
    ) -> Result<ProviderVolumeConnection> {
        let filter = ListFilter { pool_id, project_id, include_deleted, first: first.max(0) as u64, after };
        let reads = volume_reads(&ctx.look_ahead().field("edges").field("node"));
        let mut page = services(ctx).volume_page(actor(ctx)?, &tenant_id, filter, &reads).await?;
        let volumes = std::mem::take(&mut page.volumes.items);
        let edges = volumes
            .into_iter()
            .map(|view| ProviderVolumeEdge {
                cursor: view.id.clone(),
                node: ProviderVolume::on_page(view, &mut page, &reads),
            })
            .collect();
        let page = page.volumes;
        Ok(ProviderVolumeConnection {
            edges: Rendered(edges),
            page_info: PageInfo { end_cursor: page.end_cursor, has_next_page: page.has_next_page },
        })
    }
}

#[derive(Default)]
pub struct VolumeMutation;

#[Object]
impl VolumeMutation {
    /// Records a volume and returns it PENDING, booking sizeGiB on diskGiB. Publishes
    /// `providerVolume.created`, then `providerVolume.ready` or `providerVolume.error`.
    /// INVALID_INPUT for a bad field (a DigitalOcean share under 50 GiB: `reason: size`),
    /// UNSUPPORTED where the pool's provider has no volumes (or shares), INVALID_STATE for a
    /// network or instance not ready or being deleted, ACCESS_DENIED for an instance that is not
    /// the tenant's or not the caller's to update, CONFLICT for a name taken, QUOTA_EXCEEDED.
    async fn provider_volume_create(
        &self,
        ctx: &Context<'_>,
        input: ProviderVolumeCreateInput,
    ) -> Result<ProviderVolume> {
        let create = VolumeCreate {
            tenant_id: input.tenant_id,
            project_id: input.project_id,
            pool_id: input.pool_id,
            name: input.name,
            description: input.description,
            region: input.region,
            size_gib: i64::from(input.size_gib),
            kind: input.kind,
            network_id: input.network_id,
            filesystem: input.filesystem,
            delete_with_instance: input.delete_with_instance,
            instance_id: input.instance_id,
            idempotency_key: input.idempotency_key,
        };
        Ok(ProviderVolume::whole(services(ctx).volume_create(actor(ctx)?, create).await?))
    }

    /// Attaches it to an instance; publishes `providerVolume.attached` once the provider did.
    /// Attaching it again to the same instance returns it unchanged. CONFLICT for a block volume
    /// on another instance, INVALID_STATE while it is being detached from that instance or being
    /// deleted, INVALID_INPUT for an instance on another account, region or network.
    async fn provider_volume_attach(
        &self,
        ctx: &Context<'_>,
        input: ProviderVolumeAttachInput,
    ) -> Result<ProviderVolume> {
        let view =
            services(ctx).volume_attach(actor(ctx)?, &input.tenant_id, &input.volume_id, &input.instance_id).await?;
        Ok(ProviderVolume::whole(view))
    }

    /// Detaches it; publishes `providerVolume.detached` once the provider let it go. A shared
    /// volume's detach names the instance (INVALID_INPUT without it); a volume not on that
    /// instance is returned as it is. INVALID_STATE for a deleteWithInstance volume whose instance
    /// is being deleted.
    async fn provider_volume_detach(
        &self,
        ctx: &Context<'_>,
        input: ProviderVolumeDetachInput,
    ) -> Result<ProviderVolume> {
        let view = services(ctx)
            .volume_detach(actor(ctx)?, &input.tenant_id, &input.volume_id, input.instance_id.as_deref())
            .await?;
        Ok(ProviderVolume::whole(view))
    }

    /// Grows it, booking the difference on diskGiB; publishes `providerVolume.resized` once the
    /// provider did. A smaller size is INVALID_INPUT, the same size returns it unchanged.
    async fn provider_volume_resize(
        &self,
        ctx: &Context<'_>,
        input: ProviderVolumeResizeInput,
    ) -> Result<ProviderVolume> {
        let view = services(ctx)
            .volume_resize(actor(ctx)?, &input.tenant_id, &input.volume_id, i64::from(input.size_gib))
            .await?;
        Ok(ProviderVolume::whole(view))
    }

    /// Records a snapshot of it, PENDING: at most 25 not deleted per volume (QUOTA_EXCEEDED),
    /// names unique among them (CONFLICT).
    async fn provider_volume_snapshot(
        &self,
        ctx: &Context<'_>,
        input: ProviderVolumeSnapshotInput,
    ) -> Result<ProviderSnapshot> {
        let take = SnapshotTake {
            tenant_id: input.tenant_id,
            volume_id: input.volume_id,
            name: input.name,
            idempotency_key: input.idempotency_key,
        };
        Ok(ProviderSnapshot(services(ctx).volume_snapshot(actor(ctx)?, take).await?))
    }

    /// Marks it for deletion and returns it DELETING; publishes `providerVolume.deleted` once
    /// the provider deleted it and its diskGiB is refunded. INVALID_STATE while any instance has
    /// it; deleting one being deleted returns it.
    async fn provider_volume_delete(
        &self,
        ctx: &Context<'_>,
        input: ProviderVolumeDeleteInput,
    ) -> Result<ProviderVolume> {
        Ok(ProviderVolume::whole(services(ctx).volume_delete(actor(ctx)?, &input.tenant_id, &input.volume_id).await?))
    }

    /// Records a new volume made from the snapshot once it is ready (a shared volume's snapshot:
    /// UNSUPPORTED, reason sharedRestore).
    async fn provider_snapshot_restore(
        &self,
        ctx: &Context<'_>,
        input: ProviderSnapshotRestoreInput,
    ) -> Result<ProviderVolume> {
        let restore = SnapshotRestore {
            tenant_id: input.tenant_id,
            snapshot_id: input.snapshot_id,
            name: input.name,
            description: input.description,
            size_gib: input.size_gib.map(i64::from),
            delete_with_instance: input.delete_with_instance,
            filesystem: input.filesystem,
            idempotency_key: input.idempotency_key,
        };
        Ok(ProviderVolume::whole(services(ctx).snapshot_restore(actor(ctx)?, restore).await?))
    }
}

#[derive(Default)]
pub struct VolumeSubscription;

#[Subscription]
impl VolumeSubscription {
    /// The volume's new view on every change.
    async fn provider_volume_changed(
        &self,
        ctx: &Context<'_>,
        tenant_id: String,
        volume_id: String,
    ) -> Result<impl Stream<Item = Result<ProviderVolume>> + use<>> {
        let svc = services(ctx).clone();
        let filter = svc.volume_watch(actor(ctx)?, &tenant_id, &volume_id).await?;
        Ok(super::changes(&svc.feed, filter, ProviderVolume::whole))
    }
}
