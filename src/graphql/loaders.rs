//! DataLoaders of one request: a page of volumes loads its attachments, snapshots and the
//! attachments' instances in one statement each, whatever its size.
use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;

use async_graphql::dataloader::{DataLoader, Loader};

use crate::error::Error;
use crate::service::Services;
use crate::service::authz::Actor;
use crate::service::instances::InstanceView;
use crate::service::snapshots::SnapshotView;
use crate::service::volumes::AttachmentView;
use crate::store::STATEMENTS;

pub struct Loaders {
    pub attachments: DataLoader<AttachmentLoader>,
    pub snapshots: DataLoader<SnapshotLoader>,
    pub instances: DataLoader<InstanceLoader>,
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
            attachments: DataLoader::new(AttachmentLoader(context()), spawner.clone()),
            snapshots: DataLoader::new(SnapshotLoader(context()), spawner.clone()),
            instances: DataLoader::new(InstanceLoader(context()), spawner),
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
        self.0.services.attachments_of(keys).await
    }
}

/// A volume's snapshots that are not deleted, those the caller may read.
pub struct SnapshotLoader(Context);

impl Loader<String> for SnapshotLoader {
    type Value = Vec<SnapshotView>;
    type Error = Error;

    async fn load(&self, keys: &[String]) -> Result<HashMap<String, Self::Value>, Self::Error> {
        self.0.services.snapshots_of(&self.0.actor, keys).await
    }
}

/// Instances by id, those the caller may read.
pub struct InstanceLoader(Context);

impl Loader<String> for InstanceLoader {
    type Value = InstanceView;
    type Error = Error;

    async fn load(&self, keys: &[String]) -> Result<HashMap<String, Self::Value>, Self::Error> {
        self.0.services.instances_by_id(&self.0.actor, keys).await
    }
}
