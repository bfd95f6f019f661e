//! Query limits with clear errors (`extensions.code = LIMIT_EXCEEDED`, details naming the limit).
//! A request is admitted before async-graphql sees it (`Limits::admit`): its text may not nest
//! deeper than the parser may safely recurse, and its document is measured once, fragment by
//! fragment (`measure`), against the selections, nesting, depth and alias bounds, so that nothing
//! async-graphql then does (its parse checks, validation, execution) can cost more than the
//! bounds allow. Complexity comes from validation, where lists and connections weigh their page
//! size; it is checked here after it. Introspection (`__schema`, `__type`) counts against none of
//! depth, complexity and aliases: every standard client sends graphql-js's introspection query,
//! deeper than any dashboard query. It has bounds of its own instead: one `__schema` and a few
//! `__type` per operation, lists nested at most three deep, few aliases, a depth no schema needs
//! to exceed. It also gives GraphQL's own parse and validation errors a code (INVALID_INPUT).
use std::sync::Arc;

use async_graphql::extensions::{
    Extension, ExtensionContext, ExtensionFactory, NextRequest, NextSubscribe, NextValidation,
};
use async_graphql::futures_util::stream::{BoxStream, StreamExt};
use async_graphql::{Request, Response, ServerError, ValidationResult};
use serde_json::json;

use super::documents::Documents;
use super::error::server_error;
use super::measure::{MAX_NESTING, Measure, Refusal, measure};
use crate::error::{Code, Error};

/// Introspection's own bounds: graphql-js's query is 13 deep (its type reference nests `ofType`)
/// and nests three lists (`types { fields { args } }`).
const INTROSPECTION_DEPTH: usize = 24;
const INTROSPECTION_LISTS: usize = 3;
/// No introspection type has more than a dozen fields: more in one set are repeats, each resolved
/// again for every object of the lists above.
const INTROSPECTION_BREADTH: usize = 16;
const INTROSPECTION_ALIASES: usize = 4;
const SCHEMA_FIELDS: usize = 1;
const TYPE_FIELDS: usize = 10;

#[derive(Clone, Copy, Debug)]
pub struct Limits {
    pub depth: usize,
    pub complexity: usize,
    pub aliases: usize,
    /// Selections (and directives, variable definitions, input values) of the document once
    /// its fragments are expanded.
    pub selections: usize,
    pub introspection: bool,
    /// How long a query or mutation may take: sent over a WebSocket too.
    pub deadline: std::time::Duration,
}

impl ExtensionFactory for Limits {
    fn create(&self) -> Arc<dyn Extension> {
        Arc::new(Guard { limits: *self })
    }
}

/// One request's limits, checked after validation measured its complexity.
struct Guard {
    limits: Limits,
}

fn exceeded(limit: &str, value: usize, max: usize) -> ServerError {
    server_error(
        Error::new(Code::LimitExceeded, format!("the query's {limit} is {value}, more than the limit of {max}"))
            .with_details(json!({ "limit": limit, "value": value, "max": max })),
    )
}

/// Marks a request to be checked only: validation stops it once every limit is checked. It may
/// carry less complexity than a request's own limit: what is left of its batch's.
pub struct CheckOnly {
    pub complexity_left: usize,
}

/// What stops a checked request that passed (never sent to a client).
const PASSED: &str = "vps-graph: the request passed its checks";

/// The complexity a `CheckOnly` request measured, if it passed: its only error is the one
/// validation stops it with.
pub fn passed(response: &Response) -> Option<usize> {
    match &response.errors[..] {
        [only] if only.message == PASSED => only
            .extensions
            .as_ref()
            .and_then(|e| e.get("complexity"))
            .and_then(|c| if let async_graphql::Value::Number(n) = c { n.as_u64() } else { None })
            .map(|n| n as usize),
        _ => None,
    }
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

impl Limits {
    /// Admits `request` for execution: its text nests no deeper than `MAX_TEXT_NESTING`, it
    /// parses (once per text, `documents`), and its measure fits every bound. Returns the
    /// measure, which validation needs; on refusal nothing of async-graphql has run.
    pub fn admit(&self, documents: &Documents, request: &mut Request) -> Result<Measure, ServerError> {
        let known = documents.parse(request)?;
        let variables = std::mem::take(&mut request.variables);
        let measured = request.parsed_query().map(|document| measure(document, &variables));
        request.variables = variables;
        let measured = measured?.map_err(|refusal| match refusal {
            Refusal::Nesting => exceeded("nesting", MAX_NESTING + 1, MAX_NESTING),
            Refusal::Cycle(name) => {
                server_error(Error::invalid_input("query", format!("fragment {name} spreads itself")))
            }
        })?;
        self.check(&measured)?;
        if !known {
            documents.keep(request);
        }
        Ok(measured)
    }

    fn check(&self, m: &Measure) -> Result<(), ServerError> {
        if !self.introspection && m.schema_fields + m.type_fields > 0 {
            let off = Error::new(Code::Unsupported, "introspection is turned off on this server")
                .with_details(json!({ "reason": "introspection" }));
            return Err(server_error(off));
        }
        let bounds = [
            ("selections", m.selections, self.selections),
            ("depth", m.depth, self.depth),
            ("aliases", m.aliases, self.aliases),
            ("introspection depth", m.introspection_depth, INTROSPECTION_DEPTH),
            ("introspection lists", m.introspection_lists, INTROSPECTION_LISTS),
            ("introspection breadth", m.introspection_breadth, INTROSPECTION_BREADTH),
            ("introspection aliases", m.introspection_aliases, INTROSPECTION_ALIASES),
            ("__schema fields", m.schema_fields, SCHEMA_FIELDS),
            ("__type fields", m.type_fields, TYPE_FIELDS),
        ];
        match bounds.into_iter().find(|(_, value, max)| value > max) {
            Some((limit, value, max)) => Err(exceeded(limit, value, max)),
            None => Ok(()),
        }
    }

    /// The complexity and depth the executing schema refuses past on its own, introspection
    /// included: what an admitted request can never reach.
    pub fn executing_bounds(&self) -> (usize, usize) {
        (self.complexity.saturating_add(self.selections), self.depth.max(INTROSPECTION_DEPTH))
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

    async fn validation(
        &self,
        ctx: &ExtensionContext<'_>,
        next: NextValidation<'_>,
    ) -> Result<ValidationResult, Vec<ServerError>> {
        let mut result = next.run(ctx).await?;
        // Admitted requests carry their measure; one without (none should be) counts its
        // introspection against complexity, the safe way round.
        let measured = ctx.data_opt::<Measure>().copied().unwrap_or_default();
        result.depth = measured.depth;
        result.complexity = result.complexity.saturating_sub(measured.introspection_fields);
        if result.complexity > self.limits.complexity {
            return Err(vec![exceeded("complexity", result.complexity, self.limits.complexity)]);
        }
        if let Some(check) = ctx.data_opt::<CheckOnly>() {
            // A batch is one request: its operations share one complexity.
            if result.complexity > check.complexity_left {
                return Err(vec![exceeded("batch complexity", result.complexity, check.complexity_left)]);
            }
            let mut passed = ServerError::new(PASSED, None);
            passed.extensions.get_or_insert_with(Default::default).set("complexity", result.complexity as u64);
            return Err(vec![passed]);
        }
        Ok(result)
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
