//! `dryRun: true` on a mutation's input: the call runs whole as a dry run (`plan::dry_run`) and
//! its plan goes in the response's `extensions.plan`, under the field's response key (its alias,
//! or its name), beside the answer it would have given.
use std::future::Future;
use std::sync::{Arc, Mutex};

use async_graphql::{Context, Result};
use serde_json::{Map, Value};

use super::services;

/// The plans of one request's dry runs, by response key.
#[derive(Clone, Default)]
pub struct Plans(Arc<Mutex<Map<String, Value>>>);

impl Plans {
    /// The `plan` extension of the response: None when no field was a dry run.
    pub fn extension(&self) -> Option<async_graphql::Value> {
        let plans = self.0.lock().ok()?;
        if plans.is_empty() {
            return None;
        }
        async_graphql::Value::from_json(Value::Object(plans.clone())).ok()
    }
}

/// Runs the mutation `call` as asked: for real, or, with `dry_run`, as a dry run whose plan the
/// response carries. A dry run that is refused is refused as the real call would be, no plan.
pub async fn planned<T>(ctx: &Context<'_>, dry_run: bool, call: impl Future<Output = Result<T>>) -> Result<T> {
    if !dry_run {
        return call.await;
    }
    let (answer, plan) = crate::plan::dry_run(call).await;
    let answer = answer?;
    let field = &ctx.item.node;
    let plan = services(ctx).finish_plan(field.name.node.as_str(), plan).await?;
    if let Some(plans) = ctx.data_opt::<Plans>()
        && let Ok(mut plans) = plans.0.lock()
    {
        plans.insert(field.response_key().node.to_string(), serde_json::to_value(plan)?);
    }
    Ok(answer)
}
