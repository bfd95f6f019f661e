//! The edge every HTTP request passes first: it gets a request id (a well-formed `x-request-id`
//! from the client is kept, else a new one), answered in `x-request-id`, carried by the access
//! log line and by any internal error; it has a deadline (a coded TIMEOUT, never a hung socket);
//! and a panic below becomes a coded INTERNAL error naming the id, never a dropped connection.
use std::panic::AssertUnwindSafe;
use std::time::Duration;

use axum::Router;
use axum::extract::{Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use futures_util::FutureExt;
use serde_json::json;

use crate::error::{Code, REQUEST_ID};

pub const REQUEST_ID_HEADER: &str = "x-request-id";

/// Wraps `router` (and every layer already on it) in the edge.
pub fn with_edge(router: Router, deadline: Duration) -> Router {
    router.layer(middleware::from_fn_with_state(deadline, edge))
}

async fn edge(State(deadline): State<Duration>, mut request: Request, next: Next) -> Response {
    let id = request
        .headers()
        .get(REQUEST_ID_HEADER)
        .and_then(|v| v.to_str().ok())
        .filter(|v| well_formed(v))
        .map(str::to_owned)
        .unwrap_or_else(|| crate::ids::new_id("req"));
    let value = HeaderValue::from_str(&id).unwrap_or_else(|_| HeaderValue::from_static("req"));
    request.headers_mut().insert(REQUEST_ID_HEADER, value.clone());
    let run = AssertUnwindSafe(REQUEST_ID.scope(id.clone(), next.run(request))).catch_unwind();
    let mut response = match tokio::time::timeout(deadline, run).await {
        Ok(Ok(response)) => response,
        Ok(Err(panic)) => {
            let what = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_default();
            tracing::error!(request_id = %id, panic = %what, "a request panicked");
            coded(StatusCode::INTERNAL_SERVER_ERROR, Code::Internal, format!("internal error (request id {id})"), &id)
        }
        Err(_) => {
            tracing::warn!(request_id = %id, deadline_ms = deadline.as_millis() as u64, "a request ran out of time");
            let message = format!("the request took longer than {} ms (request id {id})", deadline.as_millis());
            coded(StatusCode::SERVICE_UNAVAILABLE, Code::Timeout, message, &id)
        }
    };
    response.headers_mut().insert(REQUEST_ID_HEADER, value);
    // No response is to be read as another type than it says.
    response.headers_mut().insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    response
}

/// A client's id is kept when it is short and plain (it lands in logs and headers).
fn well_formed(id: &str) -> bool {
    (1..=128).contains(&id.len()) && id.bytes().all(|b| b.is_ascii_alphanumeric() || b"-_.:".contains(&b))
}

fn coded(status: StatusCode, code: Code, message: String, id: &str) -> Response {
    let body = json!({ "errors": [{ "message": message, "extensions": { "code": code.as_str(), "requestId": id } }] });
    (status, [(header::CONTENT_TYPE, "application/json")], body.to_string()).into_response()
}
