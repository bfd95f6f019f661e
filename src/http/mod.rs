//! HTTP: `/graphql` (POST, GET for queries only, WebSocket), GraphiQL at `/`, `/healthz`,
//! `/readyz`, `/metrics`. It knows nothing of SQL or providers.
mod edge;
mod graphql;
mod playground;
mod websocket;

pub use edge::{REQUEST_ID_HEADER, with_edge};

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

use crate::graphql::AppSchema;
use crate::metrics::Metrics;
use crate::service::Services;

#[derive(Clone)]
pub struct HttpState {
    pub schema: AppSchema,
    pub services: Services,
    pub metrics: Arc<Metrics>,
    pub max_batch: usize,
    /// How long a WebSocket may take to send `connection_init`.
    pub ws_init_timeout: std::time::Duration,
}

pub fn router(state: HttpState, limits: &LimitArgs) -> Router {
    // One line per request at info: the access log.
    let trace = TraceLayer::new_for_http()
        .make_span_with(|request: &Request<_>| {
            let id = request.headers().get(REQUEST_ID_HEADER).and_then(|v| v.to_str().ok()).unwrap_or("");
            tracing::info_span!("request", method = %request.method(), uri = %request.uri(), request_id = %id)
        })
        .on_response(DefaultOnResponse::new().level(Level::INFO));
    let router = Router::new()
        .route("/graphql", get(graphql::get).post(graphql::post))
        .route("/healthz", get(|| async { "ok\n" }))
        .route("/readyz", get(readyz))
        .route("/metrics", get(metrics))
        .route("/", get(playground::index))
        .route("/{*path}", get(playground::asset))
        .layer(middleware::from_fn_with_state(state.clone(), count_requests))
        .layer(DefaultBodyLimit::max(limits.max_body_bytes))
        .layer(trace)
        .with_state(state);
    with_edge(router, std::time::Duration::from_millis(limits.request_timeout_ms))
}

async fn readyz(State(state): State<HttpState>) -> Response {
    if crate::store::ready(&state.services.db).await {
        (StatusCode::OK, "ready\n").into_response()
    } else {
        (StatusCode::SERVICE_UNAVAILABLE, "database unreachable or migrations pending\n").into_response()
    }
}

async fn metrics(State(state): State<HttpState>) -> Response {
    ([(header::CONTENT_TYPE, "text/plain; version=0.0.4")], state.metrics.render()).into_response()
}

async fn count_requests(State(state): State<HttpState>, request: Request, next: Next) -> Response {
    let route =
        request.extensions().get::<MatchedPath>().map(|p| p.as_str().to_owned()).unwrap_or_else(|| "other".into());
    let method = request.method().as_str().to_owned();
    let response = next.run(request).await;
    let status = response.status().as_u16().to_string();
    state.metrics.inc("vps_graph_http_requests_total", &[("route", &route), ("method", &method), ("status", &status)]);
    response
}
