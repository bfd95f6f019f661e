//! GraphQL over Server-Sent Events: the `graphql-sse` protocol's distinct connections mode on
//! `/graphql` itself, for a POST (or a GET) that accepts `text/event-stream`. A query or
//! mutation is answered as over HTTP (same deadline, same place among the requests in flight),
//! as one `next` and `complete`; a subscription streams a `next` per event, each with the event's
//! feed cursor as its SSE `id`, and takes a place among the sockets while it runs. A reconnect
//! that sends `Last-Event-ID` resumes after that event: nothing missed, nothing twice. The
//! token, limits and authorization are those of any request; a revoked token ends the stream.
use std::convert::Infallible;
use std::net::SocketAddr;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use futures_util::stream::{self, BoxStream, StreamExt};

use super::HttpState;
use super::bearer::{caller, header_token};
use super::load::Spender;
use crate::error::{Code, Error};
use crate::graphql::error::server_error;
use crate::graphql::resume::Resume;
use crate::graphql::{Caller, render};

const EVENT_STREAM: &str = "text/event-stream";
/// A comment line this often keeps proxies from closing a quiet stream.
const PING: Duration = Duration::from_secs(15);

/// Whether the request asks for an event stream.
pub fn wanted(headers: &HeaderMap) -> bool {
    headers
        .get_all(header::ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|v| v.split(';').next().unwrap_or("").trim().eq_ignore_ascii_case(EVENT_STREAM))
}

/// Answers `request` as an event stream.
pub async fn serve(
    state: HttpState,
    peer: Option<SocketAddr>,
    headers: &HeaderMap,
    request: async_graphql::Request,
    method: Method,
) -> Response {
    let caller = caller(&state, header_token(headers)).await;
    if let Some(spent) = state.load.spend(&Spender::of(&caller, peer), 1).filter(|b| !b.allowed) {
        return spent.refusal();
    }
    let (mut request, operation) = super::execute::operation_of_request(&state, request).await;
    if method == Method::GET && operation.0 == "mutation" {
        let mut response = (StatusCode::METHOD_NOT_ALLOWED, "mutations are sent with POST\n").into_response();
        response.headers_mut().insert(header::ALLOW, HeaderValue::from_static("POST"));
        return response;
    }
    // One root field a subscription (the GraphQL spec's rule): one stream, one cursor per event.
    if operation.0 == "subscription" && super::execute::root_fields(&mut request) > 1 {
        let error = Error::invalid_input("query", "a subscription selects one root field");
        let refused = async_graphql::Response::from_errors(vec![server_error(error)]);
        return events(stream::iter([next(&refused, None), complete()]).boxed());
    }
    if operation.0 != "subscription" {
        let response = super::execute::execute_one(&state, &caller, request).await;
        return events(stream::iter([next(&response, None), complete()]).boxed());
    }
    let place = match socket_place(&state, &caller, peer) {
        Ok(place) => place,
        Err(refused) => return *refused,
    };
    let resume = Resume::after(last_event_id(headers));
    let answers = match state.schema.stream(request, &caller, resume.clone()).await {
        Ok(answers) => answers,
        Err(refused) => {
            let refused = async_graphql::Response::from_errors(vec![refused]);
            return events(stream::iter([next(&refused, None), complete()]).boxed());
        }
    };
    let nexts = answers.map(move |response| next(&response, resume.take().as_deref()));
    // A revoked token ends its stream, as it closes its sockets.
    let revoked: futures_util::future::BoxFuture<'static, ()> = match &caller {
        Caller::Authenticated(actor) => Box::pin(super::websocket::revocation(state.clone(), actor.clone())),
        _ => Box::pin(futures_util::future::pending()),
    };
    let nexts = until_revoked(nexts.boxed(), revoked);
    // `complete` only for a subscription that is over: one cut short by a shutdown is dropped,
    // so that its client reconnects (and resumes) once a server is back.
    let feed = state.services.feed.clone();
    let ending = stream::iter([()]).filter_map(move |()| {
        let over = (!feed.is_stopped()).then(complete);
        async move { over }
    });
    // The place is held as long as the stream is.
    let body = with_pings(nexts.chain(ending).boxed()).map(move |chunk| {
        let _held = &place;
        chunk
    });
    events(body.boxed())
}

/// `nexts` until `revoked` resolves; then a `next` saying the token was revoked.
fn until_revoked(
    nexts: BoxStream<'static, Bytes>,
    revoked: futures_util::future::BoxFuture<'static, ()>,
) -> impl futures_util::Stream<Item = Bytes> + Send + 'static {
    stream::unfold(Some((nexts, revoked)), |state| async move {
        let (mut nexts, mut revoked) = state?;
        tokio::select! {
            chunk = nexts.next() => chunk.map(|chunk| (chunk, Some((nexts, revoked)))),
            () = &mut revoked => {
                let error = Error::new(Code::Unauthenticated, "the token was revoked");
                Some((next(&async_graphql::Response::from_errors(vec![server_error(error)]), None), None))
            }
        }
    })
}

/// A subscription streams on a place among the sockets: the server's and its token's.
fn socket_place(
    state: &HttpState,
    caller: &Caller,
    peer: Option<SocketAddr>,
) -> Result<Option<super::load::SocketPlace>, Box<Response>> {
    let Caller::Authenticated(actor) = caller else { return Ok(None) };
    let mut place = state.load.open_socket(peer).map_err(|full| Box::new(full.into_response()))?;
    let token = actor.token_id.clone().unwrap_or_default();
    if !state.load.claim_socket(&mut place, &token, actor.is_operator()) {
        let max = state.load.max_sockets_per_token();
        let full = super::load::unavailable(
            format!("this token holds {max} streams and sockets: close one first"),
            serde_json::json!({ "limit": "sockets per token", "max": max }),
        );
        return Err(Box::new(full));
    }
    Ok(Some(place))
}

fn last_event_id(headers: &HeaderMap) -> Option<String> {
    let id = headers.get("last-event-id")?.to_str().ok()?.trim();
    (!id.is_empty() && id.len() <= 256).then(|| id.to_owned())
}

/// A `next` event: the response as JSON, with its cursor as the event's id when it has one.
fn next(response: &async_graphql::Response, id: Option<&str>) -> Bytes {
    let mut out = Vec::with_capacity(render::written_len(&response.data) + 64);
    out.extend_from_slice(b"event: next\n");
    if let Some(id) = id.filter(|id| !id.contains(['\n', '\r'])) {
        out.extend_from_slice(format!("id: {id}\n").as_bytes());
    }
    out.extend_from_slice(b"data: ");
    out.extend_from_slice(&render::response_json(response));
    out.extend_from_slice(b"\n\n");
    Bytes::from(out)
}

fn complete() -> Bytes {
    Bytes::from_static(b"event: complete\ndata:\n\n")
}

/// `chunks`, with a comment line whenever it has been quiet for `PING`; ends with it.
fn with_pings(chunks: BoxStream<'static, Bytes>) -> impl futures_util::Stream<Item = Bytes> + Send + 'static {
    stream::unfold(Some(chunks), |chunks| async move {
        let mut chunks = chunks?;
        match tokio::time::timeout(PING, chunks.next()).await {
            Ok(Some(chunk)) => Some((chunk, Some(chunks))),
            Ok(None) => None,
            Err(_) => Some((Bytes::from_static(b":\n\n"), Some(chunks))),
        }
    })
}

fn events(body: BoxStream<'static, Bytes>) -> Response {
    let body = Body::from_stream(body.map(Ok::<_, Infallible>));
    let mut response = (StatusCode::OK, body).into_response();
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("text/event-stream; charset=utf-8"));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    // Not buffered by a reverse proxy in front.
    headers.insert("x-accel-buffering", HeaderValue::from_static("no"));
    response
}
