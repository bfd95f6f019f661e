//! HTTP: `/graphql` (POST, GET for queries only, WebSocket), GraphiQL at `/`, `/healthz`,
//! `/readyz`, `/metrics`. It knows nothing of SQL or providers.
mod bearer;
mod edge;
mod execute;
mod graphql;
mod load;
pub mod playground;
mod serve;
mod sse;
mod websocket;

pub use edge::{REQUEST_ID_HEADER, with_edge};
pub use load::Load;
pub use serve::serve;

use std::sync::Arc;

use axum::Router;
use axum::extract::{DefaultBodyLimit, MatchedPath, Request, State};
use axum::http::{StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use tower_http::trace::{DefaultOnResponse, TraceLayer};
use tracing::Level;

use crate::config::LimitArgs;

use crate::graphql::Schemas;
use crate::metrics::{HttpOperation, HttpRequest, Metrics};
use crate::services::Services;

#[derive(Clone)]
pub struct HttpState {
    pub schema: Schemas,
    pub services: Services,
    pub metrics: Arc<Metrics>,
    pub max_batch: usize,
    /// How long a WebSocket may take to send `connection_init`.
    pub ws_init_timeout: std::time::Duration,
    /// How long a request may take: an operation sent over a WebSocket too.
    pub request_timeout: std::time::Duration,
    /// When set, `/metrics` needs it as a bearer token.
    pub metrics_token: Option<crate::secret::Secret>,
    pub max_body_bytes: usize,
    pub load: Load,
    pub health: crate::store::health::Health,
}

pub fn router(state: HttpState, limits: &LimitArgs) -> Router {
    // One line per request at info: the access log.
    let trace = TraceLayer::new_for_http()
        .make_span_with(|request: &Request<_>| {
            let id = request.headers().get(REQUEST_ID_HEADER).and_then(|v| v.to_str().ok()).unwrap_or("");
            tracing::info_span!("request", method = %request.method(), uri = %request.uri(), request_id = %id)
        })
        .on_response(DefaultOnResponse::new().level(Level::INFO));
    let graphql = get(graphql::get).post(graphql::post).layer(middleware::from_fn_with_state(state.clone(), admit));
    let router = Router::new()
        .route("/graphql", graphql)
        .route("/healthz", get(|| async { "ok\n" }))
        .route("/readyz", get(readyz))
        .route("/metrics", get(metrics))
        .route("/", get(playground::index))
        .route("/dashboard", get(playground::dashboard))
        .route("/graphiql-fallback.js", get(playground::fallback_script))
        .route("/{*path}", get(playground::asset))
        .layer(middleware::from_fn_with_state(state.clone(), count_requests))
        .layer(DefaultBodyLimit::max(limits.max_body_bytes))
        .layer(trace)
        .with_state(state);
    with_edge(router, std::time::Duration::from_millis(limits.request_timeout_ms))
}

/// A GraphQL request is taken only while the database answers (else 503 at once, not after the
/// pool's wait) and while there is room among the requests in flight. Its body is read first,
/// within the header deadline: a client that sends one slowly holds a connection, never a place
/// among the requests in flight.
async fn admit(State(state): State<HttpState>, request: Request, next: Next) -> Response {
    if !state.health.is_up() {
        return load::Full::database().into_response();
    }
    let (parts, body) = request.into_parts();
    let read = tokio::time::timeout(state.load.header_timeout(), axum::body::to_bytes(body, state.max_body_bytes));
    let body = match read.await {
        Ok(Ok(bytes)) => bytes,
        Ok(Err(_)) => return (StatusCode::PAYLOAD_TOO_LARGE, "the body is over the limit\n").into_response(),
        Err(_) => return (StatusCode::REQUEST_TIMEOUT, "the body did not come in time\n").into_response(),
    };
    let request = Request::from_parts(parts, axum::body::Body::from(body));
    let _place = match state.load.enter() {
        Ok(place) => place,
        Err(full) => return full.into_response(),
    };
    next.run(request).await
}

/// Ready while the database answers, as its prober last saw (every migration was applied at
/// start, or the process would not be serving): answered at once, with no query of its own.
async fn readyz(State(state): State<HttpState>) -> Response {
    if state.health.is_up() {
        (StatusCode::OK, "ready\n").into_response()
    } else {
        (StatusCode::SERVICE_UNAVAILABLE, "database unreachable or migrations pending\n").into_response()
    }
}

async fn metrics(State(state): State<HttpState>, headers: axum::http::HeaderMap) -> Response {
    if let Some(token) = &state.metrics_token {
        let sent = headers.get(header::AUTHORIZATION).and_then(|v| v.to_str().ok()).map(bearer::bearer);
        if !sent.is_some_and(|sent| token.matches(&sent)) {
            let challenge = [(header::WWW_AUTHENTICATE, "Bearer")];
            return (StatusCode::UNAUTHORIZED, challenge, "send Authorization: Bearer <metrics token>\n")
                .into_response();
        }
    }
    let content_type = "application/openmetrics-text; version=1.0.0; charset=utf-8";
    ([(header::CONTENT_TYPE, content_type)], state.metrics.render()).into_response()
}

async fn count_requests(State(state): State<HttpState>, request: Request, next: Next) -> Response {
    let route =
        request.extensions().get::<MatchedPath>().map(|p| p.as_str().to_owned()).unwrap_or_else(|| "other".into());
    let method = request.method().as_str().to_owned();
    let started = std::time::Instant::now();
    let response = next.run(request).await;
    let operation = response.extensions().get::<execute::Operation>().map_or("none", |o| o.0);
    state
        .metrics
        .http_seconds
        .get_or_create(&HttpOperation { operation: operation.into() })
        .observe(started.elapsed().as_secs_f64());
    let status = response.status().as_u16().to_string();
    state.metrics.http_requests.get_or_create(&HttpRequest { route, method, status }).inc();
    response
}
