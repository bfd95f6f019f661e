//! Shared filesystems on a tenant network (EFS and FSx for Lustre on AWS).
use async_graphql::{Context, ID, InputObject, Object, Result, SimpleObject, Subscription};
use chrono::{DateTime, Utc};
use futures_util::Stream;

use super::plans::planned;
use super::{actor, services};
use crate::service::filesystems::FilesystemCreate;
use crate::service::protection::Protection;
use crate::store::state::{Deployment, Desired, FilesystemKind, State};
use crate::views::filesystems::FilesystemView;

/// How a machine mounts the filesystem: `mount -t <fstype> -o <options> <source> <path>`.
#[derive(SimpleObject)]
pub struct FilesystemMount {
    pub fstype: String,
    pub source: String,
    pub options: String,
}

pub struct Filesystem(pub FilesystemView);

#[Object]
impl Filesystem {
    pub async fn id(&self) -> ID {
        ID(self.0.id.clone())
    }
    async fn tenant_id(&self) -> &str {
        &self.0.tenant_id
    }
    async fn project_id(&self) -> Option<&str> {
        self.0.project_id.as_deref()
    }
    async fn network_id(&self) -> &str {
        &self.0.network_id
    }
    async fn name(&self) -> &str {
        &self.0.name
    }
    async fn kind(&self) -> FilesystemKind {
        self.0.kind
    }
    /// Lustre: its storage capacity; an NFS filesystem is elastic.
    #[graphql(name = "sizeGiB")]
    async fn size_gib(&self) -> Option<i64> {
        self.0.size_gib
    }
    async fn deployment(&self) -> Option<Deployment> {
        self.0.deployment
    }
    /// Lustre: the zone it lives in; an NFS filesystem has a mount target in every zone.
    async fn zone(&self) -> Option<&str> {
        self.0.zone.as_deref()
    }
    async fn region(&self) -> &str {
        &self.0.region
    }
    async fn state(&self) -> State {
        self.0.state
    }
    async fn desired_state(&self) -> Desired {
        self.0.desired_state
    }
    async fn message(&self) -> Option<&str> {
        self.0.message.as_deref()
    }
    /// Once READY: how a machine mounts it (DNS names and mount names, never a secret).
    async fn mount(&self) -> Option<FilesystemMount> {
        self.0.mount.clone().map(|m| FilesystemMount { fstype: m.fstype, source: m.source, options: m.options })
    }
    async fn version(&self) -> i64 {
        self.0.version
    }
    /// A delete is refused while it is set (`details.reason: deletionProtected`).
    async fn deletion_protection(&self) -> bool {
        self.0.deletion_protection
    }
    async fn created_at(&self) -> DateTime<Utc> {
        self.0.created_at
    }
    async fn ready_at(&self) -> Option<DateTime<Utc>> {
        self.0.ready_at
    }
    async fn deleted_at(&self) -> Option<DateTime<Utc>> {
        self.0.deleted_at
    }
}

#[derive(InputObject)]
pub struct FilesystemCreateInput {
    pub tenant_id: String,
    pub network_id: String,
    /// Unique in the network among filesystems not deleted.
    pub name: String,
    pub kind: FilesystemKind,
    /// Lustre: 1200, or a multiple of 2400 (default 1200). NFS takes none.
    #[graphql(name = "sizeGiB")]
    pub size_gib: Option<i64>,
    /// Lustre: SCRATCH (the default) or PERSISTENT. NFS takes none.
    pub deployment: Option<Deployment>,
    /// Lustre: one of the account's zones with a subnet of the network (default the account's
    /// first). NFS takes none.
    pub zone: Option<String>,
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
pub struct FilesystemDeleteInput {
    pub tenant_id: String,
    pub network_id: String,
    pub filesystem_id: String,
    /// Runs the whole call and records nothing: the answer it would give, with its plan (quota,
    /// provider calls, meters, monthly cost) in the response's `extensions.plan`.
    #[graphql(default)]
    pub dry_run: bool,
}

#[derive(InputObject)]
pub struct FilesystemUpdateInput {
    pub tenant_id: String,
    pub network_id: String,
    pub filesystem_id: String,
    /// Turns deletion protection on or off (left as it is when not given).
    pub deletion_protection: Option<bool>,
    /// Runs the whole call and records nothing: the answer it would give, with its plan (quota,
    /// provider calls, meters, monthly cost) in the response's `extensions.plan`.
    #[graphql(default)]
    pub dry_run: bool,
}

#[derive(Default)]
pub struct FilesystemQuery;

#[Object]
impl FilesystemQuery {
    /// One filesystem of the network (`compute:networks:read` on the network).
    async fn filesystem(
        &self,
        ctx: &Context<'_>,
        tenant_id: String,
        network_id: String,
        filesystem_id: String,
    ) -> Result<Filesystem> {
        let view = services(ctx).filesystem_get(actor(ctx)?, &tenant_id, &network_id, &filesystem_id).await?;
        Ok(Filesystem(view))
    }

    /// The network's filesystems that are not deleted, sorted by name (at most 8).
    #[graphql(complexity = "super::limits::list(8, child_complexity)")]
    async fn filesystems(&self, ctx: &Context<'_>, tenant_id: String, network_id: String) -> Result<Vec<Filesystem>> {
        let views = services(ctx).filesystem_list(actor(ctx)?, &tenant_id, &network_id).await?;
        Ok(views.into_iter().map(Filesystem).collect())
    }
}

#[derive(Default)]
pub struct FilesystemMutation;

#[Object]
impl FilesystemMutation {
    /// Records a filesystem PENDING on the network and returns it; the reconciler makes it at
    /// the provider once the network has been ready. Publishes `network.filesystem.created`,
    /// then `…ready` or `…error`. UNSUPPORTED on a provider without filesystems.
    async fn filesystem_create(&self, ctx: &Context<'_>, input: FilesystemCreateInput) -> Result<Filesystem> {
        let dry_run = input.dry_run;
        planned(ctx, dry_run, async move {
            let create = FilesystemCreate {
                tenant_id: input.tenant_id,
                network_id: input.network_id,
                name: input.name,
                kind: input.kind,
                size_gib: input.size_gib,
                deployment: input.deployment,
                zone: input.zone,
                deletion_protection: input.deletion_protection,
                idempotency_key: input.idempotency_key,
            };
            Ok(Filesystem(services(ctx).filesystem_create(actor(ctx)?, create).await?))
        })
        .await
    }

    /// Changes its settings (deletion protection); publishes `network.filesystem.updated`.
    /// Asking what it already has returns it unchanged; INVALID_STATE while it is being deleted.
    async fn filesystem_update(&self, ctx: &Context<'_>, input: FilesystemUpdateInput) -> Result<Filesystem> {
        let dry_run = input.dry_run;
        planned(ctx, dry_run, async move {
            let update =
                Protection { tenant_id: input.tenant_id, id: input.filesystem_id, on: input.deletion_protection };
            Ok(Filesystem(services(ctx).filesystem_update(actor(ctx)?, &input.network_id, update).await?))
        })
        .await
    }

    /// Marks the filesystem for deletion and returns it DELETING; the reconciler removes its
    /// mount targets, the filesystem (no final backup) and its security group, then publishes
    /// `network.filesystem.deleted`. INVALID_STATE while an instance mounts it, or while it has
    /// deletion protection (`reason: deletionProtected`).
    async fn filesystem_delete(&self, ctx: &Context<'_>, input: FilesystemDeleteInput) -> Result<Filesystem> {
        let dry_run = input.dry_run;
        planned(ctx, dry_run, async move {
            let view = services(ctx)
                .filesystem_delete(actor(ctx)?, &input.tenant_id, &input.network_id, &input.filesystem_id)
                .await?;
            Ok(Filesystem(view))
        })
        .await
    }
}

#[derive(Default)]
pub struct FilesystemSubscription;

#[Subscription]
impl FilesystemSubscription {
    /// The filesystem's new view at each of its events: created, ready, error, deleting and
    /// deleted (`network.filesystem.*`). A retry out of ERROR shows at the next of those.
    async fn filesystem_changed(
        &self,
        ctx: &Context<'_>,
        tenant_id: String,
        network_id: String,
        filesystem_id: String,
    ) -> Result<impl Stream<Item = Result<Filesystem>> + use<>> {
        let svc = services(ctx).clone();
        let filter = svc.filesystem_watch(actor(ctx)?, &tenant_id, &network_id, &filesystem_id).await?;
        super::changes(ctx, &svc.feed, filter, Filesystem).await
    }
}
