//! `/graphql` over HTTP and WebSocket, per the GraphQL-over-HTTP spec: the response type follows
//! `Accept` (`application/graphql-response+json` only when asked, else `application/json`), a
//! request error under graphql-response+json is status 400, an unsupported body type 415, and a
//! mutation over GET 405. The bearer token is read once per request (or per WebSocket, from
//! `connection_init`) and handed to resolvers as the `Caller`.
use async_graphql::http::parse_query_string;
use async_graphql::{BatchRequest, BatchResponse};
use axum::body::Bytes;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::json;

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use axum::Extension;
use axum::extract::ConnectInfo;

use super::HttpState;
use super::bearer::{caller, header_token};
use super::execute::{Operation, operation_of_request, with_loaders};
use super::load::{Budget, Spender};
use crate::error::Code;
use crate::graphql::Caller;
use crate::graphql::render;
use crate::store::STATEMENTS;

const GRAPHQL_RESPONSE: &str = "application/graphql-response+json";
const JSON: &str = "application/json";

/// Where a request came from, when the accept loop said so (`http::serve`).
type Peer = Option<Extension<ConnectInfo<SocketAddr>>>;

pub async fn post(State(state): State<HttpState>, peer: Peer, headers: HeaderMap, body: Bytes) -> Response {
    let content_type = headers.get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or("");
    let media = content_type.split(';').next().unwrap_or("").trim().to_ascii_lowercase();
    if media != JSON && media != "application/graphql+json" {
        return (StatusCode::UNSUPPORTED_MEDIA_TYPE, "send the request as application/json\n").into_response();
    }
    let batch: BatchRequest = match serde_json::from_slice(&body) {
        Ok(batch) => batch,
        Err(err) => {
            return request_error(&headers, Code::InvalidInput, &format!("the body is not a GraphQL request: {err}"));
        }
    };
    if let BatchRequest::Batch(operations) = &batch
        && operations.len() > state.max_batch
    {
        let message = format!("a batch holds at most {} operations, not {}", state.max_batch, operations.len());
        return request_error(&headers, Code::LimitExceeded, &message);
    }
    if super::sse::wanted(&headers) {
        let BatchRequest::Single(request) = batch else {
            return request_error(&headers, Code::InvalidInput, "an event stream answers one operation, not a batch");
        };
        return super::sse::serve(state, peer.map(|p| p.0.0), &headers, request, Method::POST).await;
    }
    let caller = caller(&state, header_token(&headers)).await;
    let operations = match &batch {
        BatchRequest::Single(_) => 1,
        BatchRequest::Batch(operations) => operations.len() as u64,
    };
    let budget = state.load.spend(&Spender::of(&caller, peer.map(|p| p.0.0)), operations);
    if let Some(spent) = budget.filter(|b| !b.allowed) {
        return spent.refusal();
    }
    let (batch, operation) = operation_of(&state, batch).await;
    let statements = Arc::new(AtomicU64::new(0));
    let batch = with_loaders(&state, &caller, &statements, batch.data(caller.clone()));
    let response = STATEMENTS.scope(statements.clone(), state.schema.execute_batch(batch)).await;
    let response = counted(respond(&state, &headers, response), &statements, &caller);
    labelled(budgeted(response, budget), operation)
}

/// The budget's headers on a response counted on one.
fn budgeted(mut response: Response, budget: Option<Budget>) -> Response {
    if let Some(budget) = budget {
        budget.headers(response.headers_mut());
    }
    response
}

/// The operation type of a request; `batch` for several.
async fn operation_of(state: &HttpState, batch: BatchRequest) -> (BatchRequest, Operation) {
    match batch {
        BatchRequest::Single(request) => {
            let (request, operation) = operation_of_request(state, request).await;
            (BatchRequest::Single(request), operation)
        }
        batch => (batch, Operation("batch")),
    }
}

fn labelled(mut response: Response, operation: Operation) -> Response {
    response.extensions_mut().insert(operation);
    response
}

/// `x-sql-statements`: how many SQL statements the request cost, for operators (and benchmarks)
/// only: to anyone else the count would tell whether an id it may not read exists.
fn counted(mut response: Response, statements: &AtomicU64, caller: &Caller) -> Response {
    if matches!(caller, Caller::Authenticated(actor) if actor.is_operator()) {
        response.headers_mut().insert("x-sql-statements", HeaderValue::from(statements.load(Ordering::Relaxed)));
    }
    response
}

pub async fn get(State(state): State<HttpState>, peer: Peer, request: Request) -> Response {
    let peer = peer.map(|p| p.0.0);
    if request.headers().contains_key(header::UPGRADE) {
        return super::websocket::upgrade(state, request, peer).await;
    }
    let headers = request.headers().clone();
    let query = request.uri().query().unwrap_or("");
    let graphql_request = match parse_query_string(query) {
        Ok(r) => r,
        Err(err) => {
            return request_error(
                &headers,
                Code::InvalidInput,
                &format!("the query string is not a GraphQL request: {err}"),
            );
        }
    };
    if super::sse::wanted(&headers) {
        return super::sse::serve(state, peer, &headers, graphql_request, Method::GET).await;
    }
    // Who asks and whether they may, before the document is parsed.
    let caller = caller(&state, header_token(&headers)).await;
    let budget = state.load.spend(&Spender::of(&caller, peer), 1);
    if let Some(spent) = budget.filter(|b| !b.allowed) {
        return spent.refusal();
    }
    let (graphql_request, operation) = operation_of_request(&state, graphql_request).await;
    if operation.0 == "mutation" {
        let mut response = (StatusCode::METHOD_NOT_ALLOWED, "mutations are sent with POST\n").into_response();
        response.headers_mut().insert(header::ALLOW, HeaderValue::from_static("POST"));
        return response;
    }
    let statements = Arc::new(AtomicU64::new(0));
    let batch = BatchRequest::Single(graphql_request.data(caller.clone()));
    let batch = with_loaders(&state, &caller, &statements, batch);
    let response = STATEMENTS.scope(statements.clone(), state.schema.execute_batch(batch)).await;
    let response = counted(respond(&state, &headers, response), &statements, &caller);
    labelled(budgeted(response, budget), Operation("query"))
}

fn wants_graphql_response(headers: &HeaderMap) -> bool {
    headers
        .get_all(header::ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|v| v.split(';').next().unwrap_or("").trim().eq_ignore_ascii_case(GRAPHQL_RESPONSE))
}

fn respond(state: &HttpState, headers: &HeaderMap, response: BatchResponse) -> Response {
    let responses: Vec<&async_graphql::Response> = match &response {
        BatchResponse::Single(r) => vec![r],
        BatchResponse::Batch(rs) => rs.iter().collect(),
    };
    for err in responses.iter().flat_map(|r| &r.errors) {
        let code = match err.extensions.as_ref().and_then(|e| e.get("code")) {
            Some(async_graphql::Value::String(code)) => code.as_str(),
            _ => "GRAPHQL_VALIDATION_FAILED",
        };
        state.metrics.graphql_errors.get_or_create(&crate::metrics::ErrorCode { code: code.to_owned() }).inc();
    }
    let graphql_response = wants_graphql_response(headers);
    let request_error = responses.iter().any(|r| is_request_error(r));
    let status = if graphql_response && request_error { StatusCode::BAD_REQUEST } else { StatusCode::OK };
    let content_type = if graphql_response { GRAPHQL_RESPONSE } else { JSON };
    // Written straight to JSON in the selection-set order, rendered lists as they are
    // (`render::response_json`).
    let answer = |out: &mut Vec<u8>, r: &async_graphql::Response| match graphql_response && is_request_error(r) {
        true => {
            let _ = serde_json::to_writer(out, &Unexecuted::from(r));
        }
        false => render::write_response(out, r),
    };
    let mut body = Vec::with_capacity(responses.iter().map(|r| render::written_len(&r.data)).sum::<usize>() + 1024);
    match &response {
        BatchResponse::Single(r) => answer(&mut body, r),
        BatchResponse::Batch(rs) => {
            body.push(b'[');
            for (i, r) in rs.iter().enumerate() {
                if i > 0 {
                    body.push(b',');
                }
                answer(&mut body, r);
            }
            body.push(b']');
        }
    }
    (status, [(header::CONTENT_TYPE, content_type)], body).into_response()
}

/// A request that never reached execution (it did not parse, validate, or fit the limits): its
/// errors point at no field.
fn is_request_error(response: &async_graphql::Response) -> bool {
    response.data == async_graphql::Value::Null
        && !response.errors.is_empty()
        && response.errors.iter().all(|e| e.path.is_empty())
}

/// Under graphql-response+json a request that was not executed has no `data` entry at all (the
/// GraphQL-over-HTTP spec: `data` is present only once execution started).
#[derive(serde::Serialize)]
struct Unexecuted<'a> {
    errors: &'a [async_graphql::ServerError],
}

impl<'a> From<&'a async_graphql::Response> for Unexecuted<'a> {
    fn from(response: &'a async_graphql::Response) -> Self {
        Unexecuted { errors: &response.errors }
    }
}

fn request_error(headers: &HeaderMap, code: Code, message: &str) -> Response {
    let body = json!({ "errors": [{ "message": message, "extensions": { "code": code.as_str() } }] });
    let content_type = if wants_graphql_response(headers) { GRAPHQL_RESPONSE } else { JSON };
    (StatusCode::BAD_REQUEST, [(header::CONTENT_TYPE, content_type)], body.to_string()).into_response()
}
