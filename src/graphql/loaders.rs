//! DataLoaders of one request: what objects read on their own ask for by id (a volume's
//! snapshots, an attachment's or an address's instance, an instance's mounts) is read in one
//! statement per batch and cached for the request. A page of volumes reads its children itself,
//! with only the columns asked (`service::volumes::volume_page`).
use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;

use async_graphql::dataloader::{DataLoader, HashMapCache, Loader};

use crate::authz::Actor;
use crate::error::Error;
use crate::services::Services;
use crate::store::STATEMENTS;
use crate::views::instances::InstanceView;
use crate::views::snapshots::SnapshotView;

pub struct Loaders {
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
    type Value = Option<Arc<InstanceView>>;
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
fn every_key<V, S: std::hash::BuildHasher>(
    keys: &[String],
    mut found: std::collections::HashMap<String, Vec<V>, S>,
) -> HashMap<String, Vec<V>> {
    keys.iter().map(|k| (k.clone(), found.remove(k).unwrap_or_default())).collect()
}

/// Where the loaders of this request are (a WebSocket's subscriptions make their own).
pub(crate) fn loaders(ctx: &async_graphql::Context<'_>) -> async_graphql::Result<Arc<Loaders>> {
    Ok(match ctx.data_opt::<Arc<Loaders>>() {
        Some(loaders) => loaders.clone(),
        None => Arc::new(Loaders::new(super::services(ctx), super::actor(ctx)?, None)),
    })
}
