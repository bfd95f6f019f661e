//! Provider snapshots.
use async_graphql::parser::types::Field;
use async_graphql::{Context, ID, InputObject, Object, Result, SimpleObject, Subscription};
use chrono::{DateTime, Utc};
use futures_util::Stream;

use super::networks::PageInfo;
use super::render::{Edge, Planner, Render, Rendered, Step, enumerated, optional, optional_text, scalar, text};
use super::{actor, services};
use crate::service::snapshots::SnapshotListFilter;
use crate::store::entity::provider_snapshot as snapshot;
use crate::store::list::ListFilter;
use crate::store::state::{Desired, State, VolumeKind};
use crate::views::snapshots::SnapshotView;

#[derive(Clone)]
pub struct ProviderSnapshot(pub SnapshotView);

// Its fields are read from memory: resolved one after another (`serial`), a page of them costs no
// task node and waker per field.
#[Object(serial)]
impl ProviderSnapshot {
    pub async fn id(&self) -> ID {
        ID(self.0.id.clone())
    }
    async fn tenant_id(&self) -> &str {
        &self.0.tenant_id
    }
    async fn project_id(&self) -> Option<&str> {
        self.0.project_id.as_deref()
    }
    async fn pool_id(&self) -> &str {
        &self.0.pool_id
    }
    /// The volume it was taken of (it outlives that volume).
    async fn volume_id(&self) -> &str {
        &self.0.volume_id
    }
    async fn volume_kind(&self) -> VolumeKind {
        self.0.volume_kind
    }
    async fn region(&self) -> &str {
        &self.0.region
    }
    async fn name(&self) -> &str {
        &self.0.name
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
    /// The GiB the provider bills, as it reports them (a fraction, and possibly small at first);
    /// not the volume's size: see `minDiskSizeGiB`.
    #[graphql(name = "sizeGiB")]
    async fn size_gib(&self) -> Option<f64> {
        self.0.size_gib
    }
    /// The smallest volume a restore makes.
    #[graphql(name = "minDiskSizeGiB")]
    async fn min_disk_size(&self) -> i64 {
        self.0.min_disk_size
    }
    async fn version(&self) -> i64 {
        self.0.version
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

/// Each field of `ProviderSnapshot` as the page renders it (`render`), as its resolver gives it.
impl Render for ProviderSnapshot {
    fn step(field: &Field, _: &Planner<'_>) -> Option<Step<Self>> {
        match field.name.node.as_str() {
            "id" => text(|s| &s.0.id),
            "tenantId" => text(|s| &s.0.tenant_id),
            "projectId" => optional_text(|s| s.0.project_id.as_deref()),
            "poolId" => text(|s| &s.0.pool_id),
            "volumeId" => text(|s| &s.0.volume_id),
            "volumeKind" => enumerated(|s| s.0.volume_kind),
            "region" => text(|s| &s.0.region),
            "name" => text(|s| &s.0.name),
            "state" => enumerated(|s| s.0.state),
            "desiredState" => enumerated(|s| s.0.desired_state),
            "message" => optional_text(|s| s.0.message.as_deref()),
            "sizeGiB" => optional(|s| s.0.size_gib),
            "minDiskSizeGiB" => scalar(|s| s.0.min_disk_size),
            "version" => scalar(|s| s.0.version),
            "createdAt" => scalar(|s| s.0.created_at),
            "readyAt" => optional(|s| s.0.ready_at),
            "deletedAt" => optional(|s| s.0.deleted_at),
            _ => None,
        }
    }
}

/// The columns each field of `ProviderSnapshot` is built from (`Columns::for_fields`).
pub(super) fn snapshot_columns(field: &str) -> Option<&'static [snapshot::Column]> {
    use snapshot::Column::*;
    Some(match field {
        "id" | "__typename" => &[],
        "tenantId" => &[TenantId],
        "projectId" => &[ProjectId],
        "poolId" => &[PoolId],
        "volumeId" => &[VolumeId],
        "volumeKind" => &[VolumeKind],
        "region" => &[Region],
        "name" => &[Name],
        "state" => &[State],
        "desiredState" => &[DesiredState],
        "message" => &[Message],
        "sizeGiB" => &[SizeGib],
        "minDiskSizeGiB" => &[MinDiskSize],
        "version" => &[Version],
        "createdAt" => &[CreatedAt],
        "readyAt" => &[ReadyAt],
        "deletedAt" => &[DeletedAt],
        _ => return None,
    })
}

#[derive(SimpleObject)]
pub struct ProviderSnapshotEdge {
    pub cursor: String,
    pub node: ProviderSnapshot,
}

impl Edge for ProviderSnapshotEdge {
    type Node = ProviderSnapshot;
    fn cursor(&self) -> &str {
        &self.cursor
    }
    fn node(&self) -> &ProviderSnapshot {
        &self.node
    }
}

#[derive(SimpleObject)]
pub struct ProviderSnapshotConnection {
    pub edges: Rendered<ProviderSnapshotEdge>,
    pub page_info: PageInfo,
}

#[derive(InputObject)]
pub struct ProviderSnapshotDeleteInput {
    pub tenant_id: String,
    pub snapshot_id: String,
}

#[derive(Default)]
pub struct SnapshotQuery;

#[Object]
impl SnapshotQuery {
    /// One snapshot (`compute:volumes:read` on `provider-snapshot/{id}`).
    async fn provider_snapshot(
        &self,
        ctx: &Context<'_>,
        tenant_id: String,
        snapshot_id: String,
    ) -> Result<ProviderSnapshot> {
        Ok(ProviderSnapshot(services(ctx).snapshot_get(actor(ctx)?, &tenant_id, &snapshot_id).await?))
    }

    /// The tenant's snapshots (optionally of one volume) in the order they were made.
    #[graphql(complexity = "super::limits::page(first, child_complexity)")]
    async fn provider_snapshots(
        &self,
        ctx: &Context<'_>,
        tenant_id: String,
        volume_id: Option<String>,
        #[graphql(default)] include_deleted: bool,
        #[graphql(default = 100)] first: i32,
        after: Option<String>,
    ) -> Result<ProviderSnapshotConnection> {
        let list = ListFilter { pool_id: None, project_id: None, include_deleted, first: first.max(0) as u64, after };
        let filter = SnapshotListFilter { volume_id, list };
        let page = services(ctx).snapshot_list(actor(ctx)?, &tenant_id, filter).await?;
        let edges = page
            .items
            .into_iter()
            .map(|s| ProviderSnapshotEdge { cursor: s.id.clone(), node: ProviderSnapshot(s) })
            .collect();
        Ok(ProviderSnapshotConnection {
            edges: Rendered(edges),
            page_info: PageInfo { end_cursor: page.end_cursor, has_next_page: page.has_next_page },
        })
    }
}

#[derive(Default)]
pub struct SnapshotMutation;

#[Object]
impl SnapshotMutation {
    /// Marks the snapshot for deletion and returns it DELETING.
    async fn provider_snapshot_delete(
        &self,
        ctx: &Context<'_>,
        input: ProviderSnapshotDeleteInput,
    ) -> Result<ProviderSnapshot> {
        Ok(ProviderSnapshot(services(ctx).snapshot_delete(actor(ctx)?, &input.tenant_id, &input.snapshot_id).await?))
    }
}

#[derive(Default)]
pub struct SnapshotSubscription;

#[Subscription]
impl SnapshotSubscription {
    /// The snapshot's new view on every change.
    async fn provider_snapshot_changed(
        &self,
        ctx: &Context<'_>,
        tenant_id: String,
        snapshot_id: String,
    ) -> Result<impl Stream<Item = Result<ProviderSnapshot>> + use<>> {
        let svc = services(ctx).clone();
        let filter = svc.snapshot_watch(actor(ctx)?, &tenant_id, &snapshot_id).await?;
        Ok(super::changes(&svc.feed, filter, ProviderSnapshot))
    }
}
