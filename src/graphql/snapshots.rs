//! Provider snapshots.
use async_graphql::parser::types::Field;
use async_graphql::{ComplexObject, Context, ID, InputObject, Object, Result, SimpleObject, Subscription};
use futures_util::Stream;

use super::pages::Connection;
use super::plans::planned;
use super::render::{Planner, Render, Step, view_field};
use super::{actor, services};
use crate::service::protection::Protection;
use crate::service::snapshots::SnapshotListFilter;
use crate::store::list::ListFilter;
use crate::views::snapshots::SnapshotView;

/// A snapshot of a volume, which outlives it.
#[derive(Clone, SimpleObject)]
#[graphql(complex, serial)]
pub struct ProviderSnapshot {
    #[graphql(flatten)]
    pub view: SnapshotView,
}

impl From<SnapshotView> for ProviderSnapshot {
    fn from(view: SnapshotView) -> Self {
        ProviderSnapshot { view }
    }
}

#[ComplexObject]
impl ProviderSnapshot {
    pub async fn id(&self) -> ID {
        ID(self.view.id.clone())
    }
}

/// `ProviderSnapshot` as a page renders it: its view's fields.
impl Render for ProviderSnapshot {
    fn step(field: &Field, _: &Planner<'_>) -> Option<Step<Self>> {
        view_field(field, |s: &ProviderSnapshot| &s.view)
    }
}

/// The view fields each field of `ProviderSnapshot` that is not its view's is built from.
pub(super) fn derived(field: &str) -> Option<&'static [&'static str]> {
    Some(match field {
        "id" => &[],
        _ => return None,
    })
}

#[derive(InputObject)]
pub struct ProviderSnapshotDeleteInput {
    pub tenant_id: String,
    pub snapshot_id: String,
    /// Runs the whole call and records nothing: the answer it would give, with its plan (quota,
    /// provider calls, meters, monthly cost) in the response's `extensions.plan`.
    #[graphql(default)]
    pub dry_run: bool,
}

#[derive(InputObject)]
pub struct ProviderSnapshotUpdateInput {
    pub tenant_id: String,
    pub snapshot_id: String,
    /// Turns deletion protection on or off (left as it is when not given).
    pub deletion_protection: Option<bool>,
    /// Runs the whole call and records nothing: the answer it would give, with its plan (quota,
    /// provider calls, meters, monthly cost) in the response's `extensions.plan`.
    #[graphql(default)]
    pub dry_run: bool,
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
        Ok(ProviderSnapshot::from(services(ctx).snapshot_get(actor(ctx)?, &tenant_id, &snapshot_id).await?))
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
    ) -> Result<Connection<ProviderSnapshot>> {
        let list = ListFilter { pool_id: None, project_id: None, include_deleted, first: first.max(0) as u64, after };
        let filter = SnapshotListFilter { volume_id, list };
        let page = services(ctx).snapshot_list(actor(ctx)?, &tenant_id, filter).await?;
        Ok(Connection::of(page, |s| &s.id, ProviderSnapshot::from))
    }
}

#[derive(Default)]
pub struct SnapshotMutation;

#[Object]
impl SnapshotMutation {
    /// Changes its settings (deletion protection); publishes `providerVolume.snapshot.updated`.
    /// Asking what it already has returns it unchanged; INVALID_STATE while it is being deleted.
    async fn provider_snapshot_update(
        &self,
        ctx: &Context<'_>,
        input: ProviderSnapshotUpdateInput,
    ) -> Result<ProviderSnapshot> {
        let dry_run = input.dry_run;
        planned(ctx, dry_run, async move {
            let update =
                Protection { tenant_id: input.tenant_id, id: input.snapshot_id, on: input.deletion_protection };
            Ok(ProviderSnapshot::from(services(ctx).snapshot_update(actor(ctx)?, update).await?))
        })
        .await
    }

    /// Marks the snapshot for deletion and returns it DELETING. INVALID_STATE while it has
    /// deletion protection (`reason: deletionProtected`).
    async fn provider_snapshot_delete(
        &self,
        ctx: &Context<'_>,
        input: ProviderSnapshotDeleteInput,
    ) -> Result<ProviderSnapshot> {
        let dry_run = input.dry_run;
        planned(ctx, dry_run, async move {
            Ok(ProviderSnapshot::from(
                services(ctx).snapshot_delete(actor(ctx)?, &input.tenant_id, &input.snapshot_id).await?,
            ))
        })
        .await
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
        super::changes(ctx, &svc.feed, filter, |view: SnapshotView| ProviderSnapshot::from(view)).await
    }
}
