//! Query limits with clear errors (`extensions.code = LIMIT_EXCEEDED`, details naming the limit).
//! Depth and aliases are measured here on the parsed document, fragments inlined; complexity
//! comes from validation, where lists and connections weigh their page size. Introspection
//! (`__schema`, `__type`) counts against none of them: every standard client sends graphql-js's
//! introspection query, deeper than any dashboard query. It has bounds of its own instead: one
//! `__schema` and a few `__type` per operation, and a depth no schema needs to exceed.
//! It also gives GraphQL's own parse and validation errors a code (INVALID_INPUT).
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use async_graphql::Response;
use async_graphql::extensions::{
    Extension, ExtensionContext, ExtensionFactory, NextParseQuery, NextRequest, NextSubscribe, NextValidation,
};
use async_graphql::futures_util::stream::{BoxStream, StreamExt};
use async_graphql::parser::types::{ExecutableDocument, FragmentDefinition, Selection, SelectionSet};
use async_graphql::parser::{Positioned, types::Field};
use async_graphql::{Name, ServerError, ServerResult, ValidationResult, Variables};
use serde_json::json;

use super::error::server_error;
use crate::error::{Code, Error};

/// Introspection's own bounds: graphql-js's query is 13 deep (its type reference nests `ofType`).
const INTROSPECTION_DEPTH: usize = 24;
const SCHEMA_FIELDS: usize = 1;
const TYPE_FIELDS: usize = 10;

#[derive(Clone, Copy, Debug)]
pub struct Limits {
    pub depth: usize,
    pub complexity: usize,
    pub aliases: usize,
    pub introspection: bool,
}

impl ExtensionFactory for Limits {
    fn create(&self) -> Arc<dyn Extension> {
        Arc::new(Guard { limits: *self, measured: Mutex::default() })
    }
}

/// One request's limits, with what parsing measured for validation to use.
struct Guard {
    limits: Limits,
    measured: Mutex<Measure>,
}

/// What one document costs, fragments inlined. Introspection is measured apart.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Measure {
    pub depth: usize,
    pub aliases: usize,
    /// Fields under `__schema` / `__type`, themselves included: what validation counted for them.
    pub introspection_fields: usize,
    pub introspection_depth: usize,
    pub schema_fields: usize,
    pub type_fields: usize,
}

fn exceeded(limit: &str, value: usize, max: usize) -> ServerError {
    server_error(
        Error::new(Code::LimitExceeded, format!("the query's {limit} is {value}, more than the limit of {max}"))
            .with_details(json!({ "limit": limit, "value": value, "max": max })),
    )
}

/// Marks a request to be checked only: validation stops it once every limit is checked.
pub struct CheckOnly;

/// What stops a checked request that passed (never sent to a client).
const PASSED: &str = "vps-graph: the request passed its checks";

/// Whether a `CheckOnly` request passed: its only error is the one validation stops it with.
pub fn passed(response: &Response) -> bool {
    matches!(&response.errors[..], [only] if only.message == PASSED)
}

pub fn with_codes(mut response: Response) -> Response {
    for error in &mut response.errors {
        let extensions = error.extensions.get_or_insert_with(Default::default);
        if extensions.get("code").is_none() {
            extensions.set("code", Code::InvalidInput.as_str());
        }
    }
    response
}

impl Guard {
    fn check(&self, m: &Measure) -> ServerResult<()> {
        if !self.limits.introspection && m.schema_fields + m.type_fields > 0 {
            let off = Error::new(Code::Unsupported, "introspection is turned off on this server")
                .with_details(json!({ "reason": "introspection" }));
            return Err(server_error(off));
        }
        let bounds = [
            ("depth", m.depth, self.limits.depth),
            ("aliases", m.aliases, self.limits.aliases),
            ("introspection depth", m.introspection_depth, INTROSPECTION_DEPTH),
            ("__schema fields", m.schema_fields, SCHEMA_FIELDS),
            ("__type fields", m.type_fields, TYPE_FIELDS),
        ];
        match bounds.into_iter().find(|(_, value, max)| value > max) {
            Some((limit, value, max)) => Err(exceeded(limit, value, max)),
            None => Ok(()),
        }
    }
}

#[async_graphql::async_trait::async_trait]
impl Extension for Guard {
    async fn request(&self, ctx: &ExtensionContext<'_>, next: NextRequest<'_>) -> Response {
        with_codes(next.run(ctx).await)
    }

    fn subscribe<'s>(
        &self,
        ctx: &ExtensionContext<'_>,
        stream: BoxStream<'s, Response>,
        next: NextSubscribe<'_>,
    ) -> BoxStream<'s, Response> {
        next.run(ctx, stream).map(with_codes).boxed()
    }

    async fn parse_query(
        &self,
        ctx: &ExtensionContext<'_>,
        query: &str,
        variables: &Variables,
        next: NextParseQuery<'_>,
    ) -> ServerResult<ExecutableDocument> {
        let document = next.run(ctx, query, variables).await?;
        let measured = measure(&document);
        self.check(&measured)?;
        *self.measured.lock().unwrap_or_else(|e| e.into_inner()) = measured;
        Ok(document)
    }

    async fn validation(
        &self,
        ctx: &ExtensionContext<'_>,
        next: NextValidation<'_>,
    ) -> Result<ValidationResult, Vec<ServerError>> {
        let mut result = next.run(ctx).await?;
        let measured = *self.measured.lock().unwrap_or_else(|e| e.into_inner());
        result.depth = measured.depth;
        result.complexity = result.complexity.saturating_sub(measured.introspection_fields);
        if result.complexity > self.limits.complexity {
            return Err(vec![exceeded("complexity", result.complexity, self.limits.complexity)]);
        }
        if ctx.data_opt::<CheckOnly>().is_some() {
            return Err(vec![ServerError::new(PASSED, None)]);
        }
        Ok(result)
    }
}

/// Measures every operation of the document, following fragment spreads (a spread cycle is
/// validation's to refuse; here it stops the walk).
pub fn measure(document: &ExecutableDocument) -> Measure {
    let mut walk = Walk { fragments: &document.fragments, stack: Vec::new(), measure: Measure::default() };
    for (_, operation) in document.operations.iter() {
        walk.set(&operation.node.selection_set.node, 0, false);
    }
    walk.measure
}

struct Walk<'a> {
    fragments: &'a HashMap<Name, Positioned<FragmentDefinition>>,
    stack: Vec<&'a str>,
    measure: Measure,
}

impl<'a> Walk<'a> {
    fn set(&mut self, set: &'a SelectionSet, depth: usize, introspection: bool) {
        for item in &set.items {
            match &item.node {
                Selection::Field(field) => self.field(&field.node, depth + 1, introspection),
                Selection::InlineFragment(fragment) => {
                    self.set(&fragment.node.selection_set.node, depth, introspection)
                }
                Selection::FragmentSpread(spread) => {
                    let name = spread.node.fragment_name.node.as_str();
                    let Some(fragment) = self.fragments.get(name) else { continue };
                    if self.stack.contains(&name) {
                        continue;
                    }
                    self.stack.push(name);
                    self.set(&fragment.node.selection_set.node, depth, introspection);
                    self.stack.pop();
                }
            }
        }
    }

    fn field(&mut self, field: &'a Field, depth: usize, introspection: bool) {
        let name = field.name.node.as_str();
        let enters = !introspection && (name == "__schema" || name == "__type");
        let m = &mut self.measure;
        if enters && name == "__schema" {
            m.schema_fields += 1;
        } else if enters {
            m.type_fields += 1;
        }
        if introspection || enters {
            m.introspection_fields += 1;
            m.introspection_depth = m.introspection_depth.max(depth);
        } else {
            m.depth = m.depth.max(depth);
            m.aliases += usize::from(field.alias.is_some());
        }
        self.set(&field.selection_set.node, depth, introspection || enters);
    }
}

/// What a list without a cap of its own is weighed as (a tenant's pools, a shared volume's
/// attachments): the objects a typical answer holds, not the few it may.
pub const LIST_WEIGHT: usize = 10;

/// A connection's cost: its page size, as asked (at most a page's maximum), times what each
/// item costs.
pub fn page(first: i32, child_complexity: usize) -> usize {
    1 + (first.clamp(0, crate::service::rows::MAX_PAGE as i32) as usize).saturating_mul(child_complexity)
}

/// A list capped at `max` items (a volume's 25 snapshots, a network's 8 filesystems).
pub fn list(max: usize, child_complexity: usize) -> usize {
    1 + max.saturating_mul(child_complexity)
}

pub fn unbounded(child_complexity: usize) -> usize {
    list(LIST_WEIGHT, child_complexity)
}
