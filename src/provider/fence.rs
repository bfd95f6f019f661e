//! The run a provider call is sent for. The reconcile runtime runs each reconcile step inside a
//! `scope` holding its lease; every call that changes something at the provider asks
//! `before_change` first, which records the call on that lease and refuses to send it once the
//! lease has changed hands. One check in the clients, so that no state-changing call of any
//! reconciler can be sent by a run that another replica may be running too. Outside a run
//! (tools, tests of a client) there is nothing to fence and calls go out.
use std::sync::Arc;

use super::{ProviderError, ProviderResult};

/// What a run's calls are fenced on: records one state-changing call, and says whether the
/// run still holds its lease (false: the call must not be sent).
#[async_trait::async_trait]
pub trait CallFence: Send + Sync {
    async fn before_change(&self) -> bool;
}

tokio::task_local! {
    static FENCE: Arc<dyn CallFence>;
}

/// Runs `work` with its provider calls fenced on `fence`.
pub async fn scope<F: std::future::Future>(fence: Arc<dyn CallFence>, work: F) -> F::Output {
    FENCE.scope(fence, work).await
}

/// Called by the clients before a state-changing request is sent. Nothing was sent when it
/// refuses, so the refusal is a `RetryLater`: the run that lost its lease writes nothing back,
/// and the replica that holds the lease now carries on.
pub(crate) async fn before_change() -> ProviderResult<()> {
    let Ok(fence) = FENCE.try_with(Arc::clone) else { return Ok(()) };
    if fence.before_change().await {
        Ok(())
    } else {
        Err(ProviderError::RetryLater {
            message: "not sent: the run's lease changed hands".into(),
            after: std::time::Duration::ZERO,
        })
    }
}
