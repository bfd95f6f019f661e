//! What both answers of `/graphql` share, the JSON one and the event stream: a request's
//! operation type, and its execution with the caller's loaders and statement count.
use std::sync::Arc;
use std::sync::atomic::AtomicU64;

use async_graphql::parser::types::OperationType;
use async_graphql::{BatchRequest, BatchResponse};

use super::HttpState;
use crate::graphql::Caller;
use crate::graphql::loaders::Loaders;
use crate::store::STATEMENTS;

/// The GraphQL operation type of a request, for the latency metrics (`batch` for several).
#[derive(Clone, Copy)]
pub struct Operation(pub &'static str);

/// Parses a request once, or finds its text parsed before (execution reuses the document), to
/// learn its operation type: the POST's metrics label, and the GET's refusal of a mutation.
pub async fn operation_of_request(
    state: &HttpState,
    request: async_graphql::Request,
) -> (async_graphql::Request, Operation) {
    let (mut request, parsed) = state.schema.parse(request).await;
    let operation = match parsed {
        Ok(()) => operation_type(&mut request),
        Err(_) => Operation("invalid"),
    };
    (request, operation)
}

fn operation_type(request: &mut async_graphql::Request) -> Operation {
    let name = request.operation_name.clone();
    let Ok(document) = request.parsed_query() else { return Operation("invalid") };
    Operation(match crate::graphql::documents::chosen(document, name.as_deref()).map(|op| op.node.ty) {
        Some(OperationType::Query) => "query",
        Some(OperationType::Mutation) => "mutation",
        Some(OperationType::Subscription) => "subscription",
        None => "invalid",
    })
}

/// The request's DataLoaders, counting their statements with the request's.
pub fn with_loaders(
    state: &HttpState,
    caller: &Caller,
    statements: &Arc<AtomicU64>,
    batch: BatchRequest,
) -> BatchRequest {
    match caller {
        Caller::Authenticated(actor) => {
            batch.data(Arc::new(Loaders::new(&state.services, actor, Some(statements.clone()))))
        }
        _ => batch,
    }
}

/// Executes one request of `caller` as a POST's is: with the caller's loaders, its statements
/// counted.
pub async fn execute_one(
    state: &HttpState,
    caller: &Caller,
    request: async_graphql::Request,
) -> async_graphql::Response {
    let statements = Arc::new(AtomicU64::new(0));
    let batch = with_loaders(state, caller, &statements, BatchRequest::Single(request.data(caller.clone())));
    match STATEMENTS.scope(statements, state.schema.execute_batch(batch)).await {
        BatchResponse::Single(response) => response,
        BatchResponse::Batch(mut responses) => responses.pop().unwrap_or_default(),
    }
}

/// How many fields the chosen operation selects at its root (a fragment spread or inline there
/// counted by its own items); 0 when the request has no parsed document.
pub fn root_fields(request: &mut async_graphql::Request) -> usize {
    use async_graphql::parser::types::Selection;
    let name = request.operation_name.clone();
    let Ok(document) = request.parsed_query() else { return 0 };
    let Some(operation) = crate::graphql::documents::chosen(document, name.as_deref()) else { return 0 };
    operation
        .node
        .selection_set
        .node
        .items
        .iter()
        .map(|item| match &item.node {
            Selection::Field(_) => 1,
            Selection::InlineFragment(inline) => inline.node.selection_set.node.items.len(),
            Selection::FragmentSpread(spread) => document
                .fragments
                .get(&spread.node.fragment_name.node)
                .map_or(1, |fragment| fragment.node.selection_set.node.items.len()),
        })
        .sum()
}
