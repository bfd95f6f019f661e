//! Instances, as far as volumes need them.
use std::sync::Arc;

use async_graphql::parser::types::Field;
use async_graphql::{ComplexObject, Context, ID, InputObject, Object, Result, SimpleObject, Subscription};
use futures_util::Stream;

use super::pages::Connection;
use super::plans::planned;
use super::render::{Planner, Render, Step, view_field};
use super::{actor, services};
use crate::service::instances::{FilesystemMountInput, InstanceCreate};
use crate::store::list::ListFilter;
use crate::store::state::OnDelete;
use crate::views::instances::InstanceView;

/// A machine of the tenant's.
#[derive(Clone, SimpleObject)]
#[graphql(complex, serial)]
pub struct Instance {
    #[graphql(flatten)]
    pub view: Arc<InstanceView>,
}

impl From<InstanceView> for Instance {
    fn from(view: InstanceView) -> Self {
        Instance { view: Arc::new(view) }
    }
}

impl From<Arc<InstanceView>> for Instance {
    fn from(view: Arc<InstanceView>) -> Self {
        Instance { view }
    }
}

#[ComplexObject]
impl Instance {
    pub async fn id(&self) -> ID {
        ID(self.view.id.clone())
    }
    /// The filesystems it mounts at boot, in the order asked.
    #[graphql(complexity = "super::limits::list(16, child_complexity)")]
    async fn filesystems(&self, ctx: &Context<'_>) -> Result<Vec<InstanceFilesystem>> {
        let loaders = super::loaders::loaders(ctx)?;
        let mounts = loaders.mounts.load_one(self.view.id.clone()).await?.unwrap_or_default();
        Ok(mounts.into_iter().map(|m| InstanceFilesystem { filesystem_id: m.filesystem_id, path: m.path }).collect())
    }
}

/// `Instance` as a page renders it: its view's fields; its filesystems are read apart.
impl Render for Instance {
    fn step(field: &Field, _: &Planner<'_>) -> Option<Step<Self>> {
        view_field(field, |i: &Instance| &*i.view)
    }
}

/// The view fields each field of `Instance` that is not its view's is built from.
pub(super) fn derived(field: &str) -> Option<&'static [&'static str]> {
    Some(match field {
        "id" | "filesystems" => &[],
        _ => return None,
    })
}

#[derive(InputObject)]
pub struct InstanceCreateInput {
    pub tenant_id: String,
    pub project_id: Option<String>,
    pub pool_id: String,
    /// Unique in the tenant among instances not deleted.
    pub name: String,
    pub region: String,
    /// The provider's size slug, e.g. `s-1vcpu-1gb`.
    pub size: String,
    /// The provider's image slug, e.g. `ubuntu-24-04-x64`.
    pub image: String,
    /// A network of the tenant with a subnet in the region: the machine goes in that subnet.
    pub network_id: Option<String>,
    /// AWS: the zone of the network's subnet the machine runs in (default: the account's first
    /// zone where the network has a subnet).
    pub zone: Option<String>,
    /// The tenant's own user data; the filesystems' mounts are rendered before it.
    pub user_data: Option<String>,
    /// Ready filesystems of the instance's network to mount at boot, at most 16.
    #[graphql(default)]
    pub filesystems: Vec<InstanceFilesystemInput>,
    /// DELETE (the default) deletes the machine when the instance is deleted; DETACH leaves it
    /// running and only lets its volumes and addresses go.
    #[graphql(default_with = "OnDelete::Delete")]
    pub on_delete: OnDelete,
    pub idempotency_key: String,
    /// Runs the whole call and records nothing: the answer it would give, with its plan (quota,
    /// provider calls, meters, monthly cost) in the response's `extensions.plan`.
    #[graphql(default)]
    pub dry_run: bool,
}

/// A filesystem to mount, at an absolute path of plain segments outside the system directories
/// (`/etc`, `/usr`, `/var` and the like).
#[derive(InputObject)]
pub struct InstanceFilesystemInput {
    /// The filesystem's id.
    pub filesystem: String,
    pub path: String,
}

/// A filesystem the instance mounts at boot.
#[derive(SimpleObject)]
pub struct InstanceFilesystem {
    pub filesystem_id: String,
    pub path: String,
}

#[derive(InputObject)]
pub struct InstanceDeleteInput {
    pub tenant_id: String,
    pub instance_id: String,
    /// Runs the whole call and records nothing: the answer it would give, with its plan (quota,
    /// provider calls, meters, monthly cost) in the response's `extensions.plan`.
    #[graphql(default)]
    pub dry_run: bool,
}

#[derive(Default)]
pub struct InstanceQuery;

#[Object]
impl InstanceQuery {
    /// One instance (`compute:instances:read` on `instance/{id}`).
    async fn instance(&self, ctx: &Context<'_>, tenant_id: String, instance_id: String) -> Result<Instance> {
        Ok(Instance::from(services(ctx).instance_get(actor(ctx)?, &tenant_id, &instance_id).await?))
    }

    /// The tenant's instances in the order they were made (at most 1000 a page).
    #[allow(clippy::too_many_arguments)]
    #[graphql(complexity = "super::limits::page(first, child_complexity)")]
    async fn instances(
        &self,
        ctx: &Context<'_>,
        tenant_id: String,
        pool_id: Option<String>,
        project_id: Option<String>,
        #[graphql(default)] include_deleted: bool,
        #[graphql(default = 100)] first: i32,
        after: Option<String>,
    ) -> Result<Connection<Instance>> {
        let filter = ListFilter { pool_id, project_id, include_deleted, first: first.max(0) as u64, after };
        let page = services(ctx).instance_list(actor(ctx)?, &tenant_id, filter).await?;
        Ok(Connection::of(page, |i| &i.id, Instance::from))
    }
}

#[derive(Default)]
pub struct InstanceMutation;

#[Object]
impl InstanceMutation {
    /// Records an instance and returns it PENDING; the reconciler makes its machine. Publishes
    /// `instance.created`, then `instance.ready` or `instance.error`.
    async fn instance_create(&self, ctx: &Context<'_>, input: InstanceCreateInput) -> Result<Instance> {
        let dry_run = input.dry_run;
        planned(ctx, dry_run, async move {
            let create = InstanceCreate {
                tenant_id: input.tenant_id,
                project_id: input.project_id,
                pool_id: input.pool_id,
                name: input.name,
                region: input.region,
                size: input.size,
                image: input.image,
                network_id: input.network_id,
                on_delete: input.on_delete,
                zone: input.zone,
                user_data: input.user_data,
                filesystems: input
                    .filesystems
                    .into_iter()
                    .map(|f| FilesystemMountInput { filesystem_id: f.filesystem, path: f.path })
                    .collect(),
                idempotency_key: input.idempotency_key,
            };
            Ok(Instance::from(services(ctx).instance_create(actor(ctx)?, create).await?))
        })
        .await
    }

    /// Marks the instance for deletion and returns it DELETING; once its machine is gone its
    /// volumes are detached (deleteWithInstance ones deleted).
    async fn instance_delete(&self, ctx: &Context<'_>, input: InstanceDeleteInput) -> Result<Instance> {
        let dry_run = input.dry_run;
        planned(ctx, dry_run, async move {
            Ok(Instance::from(services(ctx).instance_delete(actor(ctx)?, &input.tenant_id, &input.instance_id).await?))
        })
        .await
    }
}

#[derive(Default)]
pub struct InstanceSubscription;

#[Subscription]
impl InstanceSubscription {
    /// The instance's new view on every change.
    async fn instance_changed(
        &self,
        ctx: &Context<'_>,
        tenant_id: String,
        instance_id: String,
    ) -> Result<impl Stream<Item = Result<Instance>> + use<>> {
        let svc = services(ctx).clone();
        let filter = svc.instance_watch(actor(ctx)?, &tenant_id, &instance_id).await?;
        super::changes::<InstanceView, _>(ctx, &svc.feed, filter, Instance::from).await
    }
}
