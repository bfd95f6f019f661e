//! The run a provider call is sent for. The reconcile runtime runs each reconcile step inside a
//! `scope` holding its lease and what the run is for; every call that changes something at the
//! provider asks `before_change` first, which records the call on that lease and refuses to send
//! it once the lease has changed hands. One check in the clients, so that no state-changing call
//! of any reconciler can be sent by a run that another replica may be running too. The clients
//! also read the run's `purpose`: an account's request budget serves what someone asked first and
//! the hourly drift reads last. Outside a run (tools, tests of a client) there is nothing to fence,
//! calls go out, and they count as asked.
use std::sync::Arc;

use super::{ProviderError, ProviderResult};

/// What a run's calls are fenced on: records one state-changing call, and says whether the
/// run still holds its lease (false: the call must not be sent).
#[async_trait::async_trait]
pub trait CallFence: Send + Sync {
    async fn before_change(&self) -> bool;
}

pub use crate::store::queue::Purpose;

struct Sent {
    fence: Arc<dyn CallFence>,
    purpose: Purpose,
}

tokio::task_local! {
    static RUN: Sent;
}

/// Runs `work` with its provider calls fenced on `fence` and served as `purpose`.
pub async fn scope<F: std::future::Future>(fence: Arc<dyn CallFence>, purpose: Purpose, work: F) -> F::Output {
    RUN.scope(Sent { fence, purpose }, work).await
}

/// What the current run is for (asked, outside a run).
pub fn purpose() -> Purpose {
    RUN.try_with(|run| run.purpose).unwrap_or(Purpose::Asked)
}

/// Called by the clients before a state-changing request is sent. Nothing was sent when it
/// refuses, so the refusal is a `RetryLater`: the run that lost its lease writes nothing back,
/// and the replica that holds the lease now carries on.
pub(crate) async fn before_change() -> ProviderResult<()> {
    let Ok(fence) = RUN.try_with(|run| run.fence.clone()) else { return Ok(()) };
    if fence.before_change().await {
        Ok(())
    } else {
        Err(ProviderError::RetryLater {
            message: "not sent: the run's lease changed hands".into(),
            after: std::time::Duration::ZERO,
        })
    }
}
