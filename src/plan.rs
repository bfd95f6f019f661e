//! A dry run's plan. A mutation asked with `dryRun: true` runs whole (validation, authorization,
//! state rules, quota, idempotency) inside `dry_run`; the store notes here what the transaction
//! booked and woke, and `Services::commit` rolls it back instead of committing, noting what its
//! events would have started. Nothing is recorded, published or woken.
use std::future::Future;
use std::sync::{Arc, Mutex};

use serde::Serialize;

tokio::task_local! {
    static PLAN: Arc<Mutex<Plan>>;
}

/// What a call would have done.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Plan {
    /// Each booking, in the order the call made it.
    pub quota: Vec<QuotaChange>,
    /// The provider calls its reconcilers would make.
    pub provider_calls: Vec<ProviderCall>,
    /// The usage meters it would start (metered pools only).
    pub meters: Vec<MeterStart>,
    /// The events it would publish, by type.
    pub events: Vec<String>,
    /// What the meters would cost over a month of 730 hours, where the pool has a rate card.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub monthly_cost: Option<Cost>,
    /// Whether it would wake a reconciler (a change no reconciler acts on makes no call).
    #[serde(skip)]
    pub woke: bool,
    /// The resources at a provider its events are of.
    #[serde(skip)]
    pub subjects: Vec<Subject>,
}

/// A resource at a provider a dry run's change is of.
#[derive(Clone, Debug, PartialEq)]
pub struct Subject {
    pub id: String,
    pub cloud: Cloud,
    pub shape: Shape,
}

/// The provider a resource is at, as a plan names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cloud {
    DigitalOcean,
    Aws,
}

impl Cloud {
    pub fn name(self) -> &'static str {
        match self {
            Cloud::DigitalOcean => "digitalocean",
            Cloud::Aws => "aws",
        }
    }
}

/// The kind of a resource where it changes the provider's calls.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shape {
    Plain,
    /// A shared volume (an NFS share), or a snapshot of one.
    Shared,
    /// A Lustre filesystem.
    Lustre,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct QuotaChange {
    pub pool_id: String,
    /// The quota's resource name, e.g. `diskGiB`.
    pub resource: String,
    /// The resource that would hold it.
    pub held_by: String,
    pub before: i64,
    pub after: i64,
    pub max: i64,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ProviderCall {
    pub provider: String,
    /// The resource the call is for.
    pub resource_id: String,
    /// The provider's own name of the call: an HTTP route of DigitalOcean's API, an AWS action.
    pub call: String,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct MeterStart {
    pub meter: String,
    pub resource_id: String,
    pub pool_id: String,
    /// Units per hour.
    pub quantity: f64,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Cost {
    pub amount: f64,
    pub currency: String,
}

/// Runs `call` as a dry run: the plan it recorded beside its answer.
pub async fn dry_run<F: Future>(call: F) -> (F::Output, Plan) {
    let plan = Arc::new(Mutex::new(Plan::default()));
    let answer = PLAN.scope(plan.clone(), call).await;
    let plan = plan.lock().map(|p| p.clone()).unwrap_or_default();
    (answer, plan)
}

/// Whether the running call is a dry run.
pub fn active() -> bool {
    PLAN.try_with(|_| ()).is_ok()
}

/// Notes into the running dry run's plan; nothing outside one.
pub fn note(write: impl FnOnce(&mut Plan)) {
    let _ = PLAN.try_with(|plan| {
        if let Ok(mut plan) = plan.lock() {
            write(&mut plan);
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn notes_reach_the_dry_run_that_made_them_and_no_other_call() {
        note(|p| p.events.push("outside".into()));
        assert!(!active());
        let ((), plan) = dry_run(async {
            assert!(active());
            note(|p| p.events.push("inside".into()));
        })
        .await;
        assert_eq!(plan.events, vec!["inside".to_owned()]);
    }
}
