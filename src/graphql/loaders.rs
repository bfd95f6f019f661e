//! DataLoaders of one request: a page of volumes loads its attachments, snapshots and the
//! attachments' instances in one statement each, whatever its size. The loaders cache for the
//! request, and a list primes them for its whole page at once (see `prime`), so the count does
//! not hang on how many keys arrive within a batch's delay.
use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;

use async_graphql::dataloader::{DataLoader, HashMapCache, Loader};

use crate::error::Error;
use crate::service::Services;
use crate::service::authz::Actor;
use crate::service::instances::InstanceView;
use crate::service::snapshots::SnapshotView;
use crate::service::volumes::AttachmentView;
use crate::store::STATEMENTS;

pub struct Loaders {
    pub attachments: DataLoader<AttachmentLoader, HashMapCache>,
    pub snapshots: DataLoader<SnapshotLoader, HashMapCache>,
    pub instances: DataLoader<InstanceLoader, HashMapCache>,
    pub mounts: DataLoader<MountLoader, HashMapCache>,
}

impl Loaders {
    /// Loaders for `actor`'s request; their tasks count statements on `statements`.
    pub fn new(services: &Services, actor: &Actor, statements: Option<Arc<AtomicU64>>) -> Loaders {
        let spawner = move |task| {
            let statements = statements.clone();
            tokio::spawn(async move {
                match statements {
                    Some(count) => STATEMENTS.scope(count, task).await,
                    None => task.await,
                }
            })
        };
        let context = || Context { services: services.clone(), actor: actor.clone() };
        Loaders {
            attachments: DataLoader::with_cache(AttachmentLoader(context()), spawner.clone(), HashMapCache::default()),
            snapshots: DataLoader::with_cache(SnapshotLoader(context()), spawner.clone(), HashMapCache::default()),
            instances: DataLoader::with_cache(InstanceLoader(context()), spawner.clone(), HashMapCache::default()),
            mounts: DataLoader::with_cache(MountLoader(context()), spawner, HashMapCache::default()),
        }
    }
}

pub struct Context {
    services: Services,
    actor: Actor,
}

/// A volume's attachments that are not finished.
pub struct AttachmentLoader(Context);

impl Loader<String> for AttachmentLoader {
    type Value = Vec<AttachmentView>;
    type Error = Error;

    async fn load(&self, keys: &[String]) -> Result<HashMap<String, Self::Value>, Self::Error> {
        Ok(every_key(keys, self.0.services.attachments_of(keys).await?))
    }
}

/// A volume's snapshots that are not deleted, those the caller may read.
pub struct SnapshotLoader(Context);

impl Loader<String> for SnapshotLoader {
    type Value = Vec<SnapshotView>;
    type Error = Error;

    async fn load(&self, keys: &[String]) -> Result<HashMap<String, Self::Value>, Self::Error> {
        Ok(every_key(keys, self.0.services.snapshots_of(&self.0.actor, keys).await?))
    }
}

/// Instances by id: None for one the caller may not read.
pub struct InstanceLoader(Context);

impl Loader<String> for InstanceLoader {
    type Value = Option<InstanceView>;
    type Error = Error;

    async fn load(&self, keys: &[String]) -> Result<HashMap<String, Self::Value>, Self::Error> {
        let mut found = self.0.services.instances_by_id(&self.0.actor, keys).await?;
        Ok(keys.iter().map(|k| (k.clone(), found.remove(k))).collect())
    }
}

/// The filesystems an instance mounts (the instance itself was read already: no decision here).
pub struct MountLoader(Context);

impl Loader<String> for MountLoader {
    type Value = Vec<crate::service::instances::FilesystemMountInput>;
    type Error = Error;

    async fn load(&self, keys: &[String]) -> Result<HashMap<String, Self::Value>, Self::Error> {
        Ok(every_key(keys, self.0.services.instance_mounts(keys).await?))
    }
}

/// An answer for every key (an empty list for none), so the cache also remembers "nothing".
fn every_key<V>(keys: &[String], mut found: HashMap<String, Vec<V>>) -> HashMap<String, Vec<V>> {
    keys.iter().map(|k| (k.clone(), found.remove(k).unwrap_or_default())).collect()
}

impl Loaders {
    /// Loads, in one batch each, what a page of volumes will ask for: their attachments (and those
    /// attachments' instances) and their snapshots, as far as `node` selects them.
    pub async fn prime(&self, node: &async_graphql::Lookahead<'_>, volume_ids: Vec<String>) -> Result<(), Error> {
        let wants = |field: &str| node.field(field).exists();
        let wants_instances =
            node.field("attachments").field("instance").exists() || node.field("attachment").field("instance").exists();
        if wants("attachments") || wants("attachment") {
            let attached = self.attachments.load_many(volume_ids.clone()).await?;
            if wants_instances {
                let instance_ids: std::collections::BTreeSet<String> =
                    attached.values().flatten().map(|a| a.instance_id.clone()).collect();
                self.instances.load_many(instance_ids).await?;
            }
        }
        if wants("snapshots") {
            self.snapshots.load_many(volume_ids).await?;
        }
        Ok(())
    }
}

/// Where the loaders of this request are (a WebSocket's subscriptions make their own).
pub(crate) fn loaders(ctx: &async_graphql::Context<'_>) -> async_graphql::Result<Arc<Loaders>> {
    Ok(match ctx.data_opt::<Arc<Loaders>>() {
        Some(loaders) => loaders.clone(),
        None => Arc::new(Loaders::new(super::services(ctx), super::actor(ctx)?, None)),
    })
}
