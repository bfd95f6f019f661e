//! Instances, as far as volumes need them.
use std::sync::Arc;

use async_graphql::parser::types::Field;
use async_graphql::{Context, ID, InputObject, Object, Result, SimpleObject, Subscription};
use chrono::{DateTime, Utc};
use futures_util::Stream;

use super::networks::PageInfo;
use super::render::{Edge, Planner, Render, Rendered, Step, enumerated, optional, optional_text, scalar, text};
use super::{actor, services};
use crate::service::instances::{FilesystemMountInput, InstanceCreate};
use crate::store::entity::instance;
use crate::store::list::ListFilter;
use crate::store::state::{Desired, OnDelete, State};
use crate::views::instances::InstanceView;

#[derive(Clone)]
pub struct Instance(pub Arc<InstanceView>);

impl From<InstanceView> for Instance {
    fn from(view: InstanceView) -> Self {
        Instance(Arc::new(view))
    }
}

// Its fields are read from memory: resolved one after another (`serial`), a page of them costs no
// task node and waker per field.
#[Object(serial)]
impl Instance {
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
    async fn network_id(&self) -> Option<&str> {
        self.0.network_id.as_deref()
    }
    async fn name(&self) -> &str {
        &self.0.name
    }
    async fn region(&self) -> &str {
        &self.0.region
    }
    /// AWS: the zone of the network's subnet it runs in.
    async fn zone(&self) -> Option<&str> {
        self.0.zone.as_deref()
    }
    /// The filesystems it mounts at boot, in the order asked.
    #[graphql(complexity = "super::limits::list(16, child_complexity)")]
    async fn filesystems(&self, ctx: &Context<'_>) -> Result<Vec<InstanceFilesystem>> {
        let loaders = super::loaders::loaders(ctx)?;
        let mounts = loaders.mounts.load_one(self.0.id.clone()).await?.unwrap_or_default();
        Ok(mounts.into_iter().map(|m| InstanceFilesystem { filesystem_id: m.filesystem_id, path: m.path }).collect())
    }
    /// The provider's size slug.
    async fn size(&self) -> &str {
        &self.0.size
    }
    /// The provider's image slug.
    async fn image(&self) -> &str {
        &self.0.image
    }
    /// What its delete does to the machine.
    async fn on_delete(&self) -> OnDelete {
        self.0.on_delete
    }
    async fn state(&self) -> State {
        self.0.state
    }
    async fn desired_state(&self) -> Desired {
        self.0.desired_state
    }
    /// The provider's id of its machine, once made.
    async fn provider_id(&self) -> Option<&str> {
        self.0.provider_id.as_deref()
    }
    async fn message(&self) -> Option<&str> {
        self.0.message.as_deref()
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

/// Each field of `Instance` as a page renders it (`render`), as its resolver gives it; its
/// filesystems are read apart.
impl Render for Instance {
    fn step(field: &Field, _: &Planner<'_>) -> Option<Step<Self>> {
        match field.name.node.as_str() {
            "id" => text(|i| &i.0.id),
            "tenantId" => text(|i| &i.0.tenant_id),
            "projectId" => optional_text(|i| i.0.project_id.as_deref()),
            "poolId" => text(|i| &i.0.pool_id),
            "networkId" => optional_text(|i| i.0.network_id.as_deref()),
            "name" => text(|i| &i.0.name),
            "region" => text(|i| &i.0.region),
            "zone" => optional_text(|i| i.0.zone.as_deref()),
            "size" => text(|i| &i.0.size),
            "image" => text(|i| &i.0.image),
            "onDelete" => enumerated(|i| i.0.on_delete),
            "state" => enumerated(|i| i.0.state),
            "desiredState" => enumerated(|i| i.0.desired_state),
            "providerId" => optional_text(|i| i.0.provider_id.as_deref()),
            "message" => optional_text(|i| i.0.message.as_deref()),
            "version" => scalar(|i| i.0.version),
            "createdAt" => scalar(|i| i.0.created_at),
            "readyAt" => optional(|i| i.0.ready_at),
            "deletedAt" => optional(|i| i.0.deleted_at),
            _ => None,
        }
    }
}

/// The columns each field of `Instance` is built from (`Columns::for_fields`).
pub(super) fn instance_columns(field: &str) -> Option<&'static [instance::Column]> {
    use instance::Column::*;
    Some(match field {
        "id" | "filesystems" | "__typename" => &[],
        "tenantId" => &[TenantId],
        "projectId" => &[ProjectId],
        "poolId" => &[PoolId],
        "networkId" => &[NetworkId],
        "name" => &[Name],
        "region" => &[Region],
        "zone" => &[Zone],
        "size" => &[Size],
        "image" => &[Image],
        "onDelete" => &[OnDelete],
        "state" => &[State],
        "desiredState" => &[DesiredState],
        "providerId" => &[ProviderId],
        "message" => &[Message],
        "version" => &[Version],
        "createdAt" => &[CreatedAt],
        "readyAt" => &[ReadyAt],
        "deletedAt" => &[DeletedAt],
        _ => return None,
    })
}

#[derive(SimpleObject)]
pub struct InstanceEdge {
    pub cursor: String,
    pub node: Instance,
}

impl Edge for InstanceEdge {
    type Node = Instance;
    fn cursor(&self) -> &str {
        &self.cursor
    }
    fn node(&self) -> &Instance {
        &self.node
    }
}

#[derive(SimpleObject)]
pub struct InstanceConnection {
    pub edges: Rendered<InstanceEdge>,
    pub page_info: PageInfo,
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
    ) -> Result<InstanceConnection> {
        let filter = ListFilter { pool_id, project_id, include_deleted, first: first.max(0) as u64, after };
        let page = services(ctx).instance_list(actor(ctx)?, &tenant_id, filter).await?;
        let edges =
            page.items.into_iter().map(|i| InstanceEdge { cursor: i.id.clone(), node: Instance::from(i) }).collect();
        Ok(InstanceConnection {
            edges: Rendered(edges),
            page_info: PageInfo { end_cursor: page.end_cursor, has_next_page: page.has_next_page },
        })
    }
}

#[derive(Default)]
pub struct InstanceMutation;

#[Object]
impl InstanceMutation {
    /// Records an instance and returns it PENDING; the reconciler makes its machine. Publishes
    /// `instance.created`, then `instance.ready` or `instance.error`.
    async fn instance_create(&self, ctx: &Context<'_>, input: InstanceCreateInput) -> Result<Instance> {
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
    }

    /// Marks the instance for deletion and returns it DELETING; once its machine is gone its
    /// volumes are detached (deleteWithInstance ones deleted).
    async fn instance_delete(&self, ctx: &Context<'_>, input: InstanceDeleteInput) -> Result<Instance> {
        Ok(Instance::from(services(ctx).instance_delete(actor(ctx)?, &input.tenant_id, &input.instance_id).await?))
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
        Ok(super::changes::<InstanceView, _>(&svc.feed, filter, Instance::from))
    }
}
