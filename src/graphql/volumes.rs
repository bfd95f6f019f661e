//! Provider volumes (block and shared), their attachments and mounts.
use std::borrow::Cow;

use async_graphql::parser::types::Field;
use async_graphql::{ComplexObject, Context, ID, InputObject, Lookahead, Object, Result, SimpleObject, Subscription};
use futures_util::Stream;

use super::instances::Instance;
use super::loaders::loaders;
use super::pages::Connection;
use super::plans::planned;
use super::render::{Planner, Render, Step, text, view_field};
use super::snapshots::ProviderSnapshot;
use super::{actor, reads, services};
use crate::service::mounts;
use crate::service::protection::Protection;
use crate::service::rows::Page;
use crate::service::snapshots::{SnapshotRestore, SnapshotTake};
use crate::service::volumes::{VolumeCreate, VolumePage, VolumeReads};
use crate::store::list::ListFilter;
use crate::store::state::{VolumeFilesystem, VolumeKind};
use crate::views::instances::InstanceView;
use crate::views::json::write_null;
use crate::views::snapshots::SnapshotView;
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
    /// A delete is refused while it is set (INVALID_STATE, `reason: deletionProtected`); an
    /// update call turns it off.
    #[graphql(default)]
    pub deletion_protection: bool,
    pub idempotency_key: String,
    /// Runs the whole call and records nothing: the answer it would give, with its plan (quota,
    /// provider calls, meters, monthly cost) in the response's `extensions.plan`.
    #[graphql(default)]
    pub dry_run: bool,
}

/// A volume on an instance.
// `instance` is Some when the page it is on read its instance along.
#[derive(SimpleObject)]
#[graphql(complex, serial)]
pub struct Attachment {
    #[graphql(flatten)]
    pub view: AttachmentView,
    #[graphql(skip)]
    instance: Option<Option<Instance>>,
}

impl From<AttachmentView> for Attachment {
    fn from(view: AttachmentView) -> Self {
        Attachment { view, instance: None }
    }
}

#[ComplexObject]
impl Attachment {
    pub async fn id(&self) -> ID {
        ID(self.view.id.clone())
    }
    /// The instance, when the caller may read it.
    async fn instance(&self, ctx: &Context<'_>) -> Result<Option<Instance>> {
        if let Some(read) = &self.instance {
            return Ok(read.clone());
        }
        Ok(loaders(ctx)?.instances.load_one(self.view.instance_id.clone()).await?.flatten().map(Instance::from))
    }
}

/// `Attachment` as a page renders it: its view's fields, its instance only when the page read it
/// along.
impl Render for Attachment {
    fn step(field: &Field, planner: &Planner<'_>) -> Option<Step<Self>> {
        match field.name.node.as_str() {
            "instance" => planner.object(field, |a: &Attachment| a.instance.as_ref().map(Option::as_ref)),
            _ => view_field(field, |a: &Attachment| &a.view),
        }
    }
}

/// The view fields each field of `Attachment` that is not its view's is built from.
pub(super) fn attachment_derived(field: &str) -> Option<&'static [&'static str]> {
    Some(match field {
        "id" => &[],
        "instance" => &["instance_id"],
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

/// A block volume or an NFS share, with its attachments and snapshots.
// Its snapshots are Some when the page it is on read them along (else the loaders read them when
// asked).
#[derive(SimpleObject)]
#[graphql(complex, serial)]
pub struct ProviderVolume {
    #[graphql(flatten)]
    pub view: VolumeView,
    #[graphql(skip)]
    attachments: Vec<Attachment>,
    #[graphql(skip)]
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

    fn mount(&self) -> Option<Mount> {
        self.view.mount_source.clone().map(|source| Mount { source })
    }

    /// A volume read on its own: its attachments are in its view.
    pub fn whole(mut view: VolumeView) -> Self {
        let attachments = std::mem::take(&mut view.attachments).into_iter().map(Attachment::from).collect();
        ProviderVolume { view, attachments, snapshots: None }
    }

    /// A volume of `page`, with the children the page read along.
    fn on_page(mut view: VolumeView, page: &mut VolumePage, reads: &VolumeReads) -> Self {
        let instance = |id: &str| reads.instances.as_ref().map(|_| page.instances.get(id).cloned().map(Instance::from));
        let attachments = std::mem::take(&mut view.attachments)
            .into_iter()
            .map(|a| Attachment { instance: instance(&a.instance_id), view: a })
            .collect();
        let snapshots = reads.snapshots.as_ref().map(|_| {
            page.snapshots.remove(&view.id).unwrap_or_default().into_iter().map(ProviderSnapshot::from).collect()
        });
        ProviderVolume { view, attachments, snapshots }
    }
}

#[ComplexObject]
impl ProviderVolume {
    pub async fn id(&self) -> ID {
        ID(self.view.id.clone())
    }
    /// How a guest mounts a shared volume, once the provider reports its source.
    #[graphql(name = "mount")]
    async fn mount_of(&self) -> Option<Mount> {
        self.mount()
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
        Ok(Cow::Owned(found.into_iter().map(ProviderSnapshot::from).collect()))
    }
}

/// `ProviderVolume` as a page renders it: its view's fields, its attachments, and its snapshots
/// only when the page read them along.
impl Render for ProviderVolume {
    fn step(field: &Field, planner: &Planner<'_>) -> Option<Step<Self>> {
        match field.name.node.as_str() {
            "mount" => {
                let plan = planner.plan::<Mount>(&field.selection_set.node)?;
                Some(Box::new(move |v: &ProviderVolume, out| match v.mount() {
                    Some(mount) => plan.write(&mount, out),
                    None => write_null(out),
                }))
            }
            "attachment" => planner.object(field, |v: &ProviderVolume| Some(v.block_attachment())),
            "attachments" => planner.list(field, |v: &ProviderVolume| Some(&v.attachments[..])),
            "snapshots" => planner.list(field, |v: &ProviderVolume| v.snapshots.as_deref()),
            _ => view_field(field, |v: &ProviderVolume| &v.view),
        }
    }
}

/// The view fields each field of `ProviderVolume` that is not its view's is built from; its
/// attachments and snapshots are read apart.
pub(super) fn volume_derived(field: &str) -> Option<&'static [&'static str]> {
    Some(match field {
        "id" | "attachments" | "snapshots" => &[],
        "attachment" => &["kind"],
        "mount" => &["mount_source"],
        _ => return None,
    })
}

/// What a page of volumes reads for `node` (the selection of its edges' node).
fn volume_reads(node: &Lookahead<'_>) -> VolumeReads {
    let attachments = [node.field("attachments"), node.field("attachment")];
    let instances = [attachments[0].field("instance"), attachments[1].field("instance")];
    let snapshots = [node.field("snapshots")];
    let asked = |fields: &[Lookahead<'_>]| fields.iter().any(Lookahead::exists);
    VolumeReads {
        volumes: reads::selected::<VolumeView>(std::slice::from_ref(node), volume_derived),
        attachments: asked(&attachments).then(|| reads::selected::<AttachmentView>(&attachments, attachment_derived)),
        instances: asked(&instances).then(|| reads::selected::<InstanceView>(&instances, super::instances::derived)),
        snapshots: asked(&snapshots).then(|| reads::selected::<SnapshotView>(&snapshots, super::snapshots::derived)),
    }
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
    /// A delete is refused while it is set (INVALID_STATE, `reason: deletionProtected`); an
    /// update call turns it off.
    #[graphql(default)]
    pub deletion_protection: bool,
    pub idempotency_key: String,
    /// Runs the whole call and records nothing: the answer it would give, with its plan (quota,
    /// provider calls, meters, monthly cost) in the response's `extensions.plan`.
    #[graphql(default)]
    pub dry_run: bool,
}

#[derive(InputObject)]
pub struct ProviderVolumeAttachInput {
    pub tenant_id: String,
    pub volume_id: String,
    pub instance_id: String,
    /// Runs the whole call and records nothing: the answer it would give, with its plan (quota,
    /// provider calls, meters, monthly cost) in the response's `extensions.plan`.
    #[graphql(default)]
    pub dry_run: bool,
}

#[derive(InputObject)]
pub struct ProviderVolumeDetachInput {
    pub tenant_id: String,
    pub volume_id: String,
    /// Required for a shared volume.
    pub instance_id: Option<String>,
    /// Runs the whole call and records nothing: the answer it would give, with its plan (quota,
    /// provider calls, meters, monthly cost) in the response's `extensions.plan`.
    #[graphql(default)]
    pub dry_run: bool,
}

#[derive(InputObject)]
pub struct ProviderVolumeResizeInput {
    pub tenant_id: String,
    pub volume_id: String,
    #[graphql(name = "sizeGiB")]
    pub size_gib: i32,
    /// Runs the whole call and records nothing: the answer it would give, with its plan (quota,
    /// provider calls, meters, monthly cost) in the response's `extensions.plan`.
    #[graphql(default)]
    pub dry_run: bool,
}

#[derive(InputObject)]
pub struct ProviderVolumeSnapshotInput {
    pub tenant_id: String,
    pub volume_id: String,
    /// Unique among the volume's snapshots not deleted.
    pub name: String,
    /// A delete is refused while it is set (INVALID_STATE, `reason: deletionProtected`); an
    /// update call turns it off.
    #[graphql(default)]
    pub deletion_protection: bool,
    pub idempotency_key: String,
    /// Runs the whole call and records nothing: the answer it would give, with its plan (quota,
    /// provider calls, meters, monthly cost) in the response's `extensions.plan`.
    #[graphql(default)]
    pub dry_run: bool,
}

#[derive(InputObject)]
pub struct ProviderVolumeDeleteInput {
    pub tenant_id: String,
    pub volume_id: String,
    /// Runs the whole call and records nothing: the answer it would give, with its plan (quota,
    /// provider calls, meters, monthly cost) in the response's `extensions.plan`.
    #[graphql(default)]
    pub dry_run: bool,
}

#[derive(InputObject)]
pub struct ProviderVolumeUpdateInput {
    pub tenant_id: String,
    pub volume_id: String,
    /// Turns deletion protection on or off (left as it is when not given).
    pub deletion_protection: Option<bool>,
    /// Runs the whole call and records nothing: the answer it would give, with its plan (quota,
    /// provider calls, meters, monthly cost) in the response's `extensions.plan`.
    #[graphql(default)]
    pub dry_run: bool,
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
    ) -> Result<Connection<ProviderVolume>> {
        let filter = ListFilter { pool_id, project_id, include_deleted, first: first.max(0) as u64, after };
        let reads = volume_reads(&ctx.look_ahead().field("edges").field("node"));
        let mut page = services(ctx).volume_page(actor(ctx)?, &tenant_id, filter, &reads).await?;
        let volumes = std::mem::replace(&mut page.volumes, Page::empty());
        Ok(Connection::of(volumes, |v| &v.id, |view| ProviderVolume::on_page(view, &mut page, &reads)))
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
        let dry_run = input.dry_run;
        planned(ctx, dry_run, async move {
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
                deletion_protection: input.deletion_protection,
                idempotency_key: input.idempotency_key,
            };
            Ok(ProviderVolume::whole(services(ctx).volume_create(actor(ctx)?, create).await?))
        })
        .await
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
        let dry_run = input.dry_run;
        planned(ctx, dry_run, async move {
            let view = services(ctx)
                .volume_attach(actor(ctx)?, &input.tenant_id, &input.volume_id, &input.instance_id)
                .await?;
            Ok(ProviderVolume::whole(view))
        })
        .await
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
        let dry_run = input.dry_run;
        planned(ctx, dry_run, async move {
            let view = services(ctx)
                .volume_detach(actor(ctx)?, &input.tenant_id, &input.volume_id, input.instance_id.as_deref())
                .await?;
            Ok(ProviderVolume::whole(view))
        })
        .await
    }

    /// Grows it, booking the difference on diskGiB; publishes `providerVolume.resized` once the
    /// provider did. A smaller size is INVALID_INPUT, the same size returns it unchanged.
    async fn provider_volume_resize(
        &self,
        ctx: &Context<'_>,
        input: ProviderVolumeResizeInput,
    ) -> Result<ProviderVolume> {
        let dry_run = input.dry_run;
        planned(ctx, dry_run, async move {
            let view = services(ctx)
                .volume_resize(actor(ctx)?, &input.tenant_id, &input.volume_id, i64::from(input.size_gib))
                .await?;
            Ok(ProviderVolume::whole(view))
        })
        .await
    }

    /// Records a snapshot of it, PENDING: at most 25 not deleted per volume (QUOTA_EXCEEDED),
    /// names unique among them (CONFLICT).
    async fn provider_volume_snapshot(
        &self,
        ctx: &Context<'_>,
        input: ProviderVolumeSnapshotInput,
    ) -> Result<ProviderSnapshot> {
        let dry_run = input.dry_run;
        planned(ctx, dry_run, async move {
            let take = SnapshotTake {
                tenant_id: input.tenant_id,
                volume_id: input.volume_id,
                name: input.name,
                deletion_protection: input.deletion_protection,
                idempotency_key: input.idempotency_key,
                schedule_id: None,
            };
            Ok(ProviderSnapshot::from(services(ctx).volume_snapshot(actor(ctx)?, take).await?))
        })
        .await
    }

    /// Changes its settings (deletion protection); publishes `providerVolume.updated`. Asking
    /// what it already has returns it unchanged; INVALID_STATE while it is being deleted.
    async fn provider_volume_update(
        &self,
        ctx: &Context<'_>,
        input: ProviderVolumeUpdateInput,
    ) -> Result<ProviderVolume> {
        let dry_run = input.dry_run;
        planned(ctx, dry_run, async move {
            let update = Protection { tenant_id: input.tenant_id, id: input.volume_id, on: input.deletion_protection };
            Ok(ProviderVolume::whole(services(ctx).volume_update(actor(ctx)?, update).await?))
        })
        .await
    }

    /// Marks it for deletion and returns it DELETING; publishes `providerVolume.deleted` once
    /// the provider deleted it and its diskGiB is refunded. INVALID_STATE while any instance has
    /// it, or while it has deletion protection (`reason: deletionProtected`); deleting one being
    /// deleted returns it.
    async fn provider_volume_delete(
        &self,
        ctx: &Context<'_>,
        input: ProviderVolumeDeleteInput,
    ) -> Result<ProviderVolume> {
        let dry_run = input.dry_run;
        planned(ctx, dry_run, async move {
            Ok(ProviderVolume::whole(
                services(ctx).volume_delete(actor(ctx)?, &input.tenant_id, &input.volume_id).await?,
            ))
        })
        .await
    }

    /// Records a new volume made from the snapshot once it is ready (a shared volume's snapshot:
    /// UNSUPPORTED, reason sharedRestore).
    async fn provider_snapshot_restore(
        &self,
        ctx: &Context<'_>,
        input: ProviderSnapshotRestoreInput,
    ) -> Result<ProviderVolume> {
        let dry_run = input.dry_run;
        planned(ctx, dry_run, async move {
            let restore = SnapshotRestore {
                tenant_id: input.tenant_id,
                snapshot_id: input.snapshot_id,
                name: input.name,
                description: input.description,
                size_gib: input.size_gib.map(i64::from),
                delete_with_instance: input.delete_with_instance,
                filesystem: input.filesystem,
                deletion_protection: input.deletion_protection,
                idempotency_key: input.idempotency_key,
            };
            Ok(ProviderVolume::whole(services(ctx).snapshot_restore(actor(ctx)?, restore).await?))
        })
        .await
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
        super::changes(ctx, &svc.feed, filter, ProviderVolume::whole).await
    }
}
