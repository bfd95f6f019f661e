//! `vps.provider-resources`: one reconciler for provider volumes (with their attachments),
//! provider snapshots and provider addresses; a work item's resource id says which (`pvol_…`,
//! `psnap_…` or `paddr_…`).
use super::{Next, Reconciler, Run};
use crate::error::Result;
use crate::ids;
use crate::store::volumes::RECONCILER;

pub struct ProviderResourceReconciler;

#[async_trait::async_trait]
impl Reconciler for ProviderResourceReconciler {
    fn kind(&self) -> &'static str {
        RECONCILER
    }

    async fn run(&self, run: &Run<'_>) -> Result<Next> {
        if ids::is_id(ids::SNAPSHOT, run.resource_id()) {
            super::snapshots::run(run).await
        } else if ids::is_id(ids::ADDRESS, run.resource_id()) {
            super::addresses::run(run).await
        } else {
            super::volumes::run(run).await
        }
    }
}
