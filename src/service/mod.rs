//! The service layer: one module per resource group with the rules of each call. Every mutation
//! validates, authorizes, then writes its desired state, quota booking, idempotency record and
//! outbox event in one transaction, and returns at once. It knows nothing of GraphQL or HTTP.
pub mod authz;
pub mod bootstrap;
pub mod events;
pub mod feed;
pub mod pools;
pub mod tenants;
pub mod tokens;
pub mod validate;

use std::sync::Arc;

use sea_orm::{DatabaseConnection, DatabaseTransaction, TransactionTrait};

use crate::error::Result;
use crate::metrics::Metrics;
use crate::store::outbox::{self, NewEvent};
use feed::Feed;

/// What every service call needs; cheap to clone.
#[derive(Clone)]
pub struct Services {
    pub db: DatabaseConnection,
    pub feed: Feed,
    pub metrics: Arc<Metrics>,
    /// SHA-256 of the static operator token given at start, if any.
    pub admin_token_hash: Option<String>,
}

impl Services {
    pub async fn begin(&self) -> Result<DatabaseTransaction> {
        Ok(self.db.begin().await?)
    }

    /// Appends `events` and commits, then wakes this process's feed.
    pub async fn commit(&self, txn: DatabaseTransaction, events: Vec<NewEvent>) -> Result<()> {
        for event in events {
            outbox::append(&txn, event).await?;
        }
        txn.commit().await?;
        self.feed.wake();
        Ok(())
    }
}
