//! GraphQL over WebSocket (graphql-transport-ws, and the legacy graphql-ws) with the bounds a
//! public socket needs: `connection_init` must come within a deadline (else close 4408, as
//! graphql-transport-ws says), a connection holds at most `MAX_SUBSCRIPTIONS` at once (one more is
//! answered with a coded LIMIT_EXCEEDED error for its id), and revoking the token a connection
//! authenticated with closes it (4403), on every replica, since the revocation is an event.
//! Message and frame sizes are bounded at the upgrade (`graphql.rs`).
use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use async_graphql::Data;
use async_graphql::http::ALL_WEBSOCKET_PROTOCOLS;
use async_graphql::http::{WebSocket as GraphQLSocket, WebSocketProtocols, WsMessage};
use axum::extract::ws::{CloseFrame, Message, WebSocket};
use axum::extract::{FromRequestParts, Request, WebSocketUpgrade};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use futures_util::{SinkExt, StreamExt, future};
use serde_json::{Value, json};
use tokio::sync::{mpsc, oneshot};

use super::{HttpState, bearer};
use crate::graphql::Caller;
use crate::metrics::GaugeGuard;
use crate::service::authz::Actor;
use crate::service::feed::Filter;

/// The largest WebSocket message (and frame) a client may send: as large as an HTTP body may be.
const MAX_WS_MESSAGE: usize = 256 * 1024;

/// Subscriptions one connection may hold at once.
pub const MAX_SUBSCRIPTIONS: usize = 100;

/// The ids of the subscriptions running on one connection.
#[derive(Default)]
struct Running(Mutex<HashSet<String>>);

impl Running {
    fn ids(&self) -> std::sync::MutexGuard<'_, HashSet<String>> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// graphql-transport-ws (and the legacy graphql-ws) on the same path. The token comes in
/// `connection_init` (`{"Authorization": "Bearer …"}`), or else from the upgrade request's header;
/// a token that does not authenticate closes the connection.
pub async fn upgrade(state: HttpState, request: Request) -> Response {
    let (mut parts, _) = request.into_parts();
    let offered = parts.headers.get(header::SEC_WEBSOCKET_PROTOCOL).and_then(|v| v.to_str().ok()).unwrap_or("");
    let Some(protocol) = offered.split(',').find_map(|p| p.trim().parse::<WebSocketProtocols>().ok()) else {
        return (StatusCode::BAD_REQUEST, "offer graphql-transport-ws (or graphql-ws) in Sec-WebSocket-Protocol\n")
            .into_response();
    };
    let upgrade = match WebSocketUpgrade::from_request_parts(&mut parts, &state).await {
        Ok(upgrade) => upgrade,
        Err(rejection) => return rejection.into_response(),
    };
    let header = bearer::header_token(&parts.headers);
    // tungstenite's default 128 KiB read buffer per socket would dominate the memory of many idle
    // subscribers; GraphQL messages are small, and larger frames still arrive (the buffer grows).
    upgrade
        .read_buffer_size(8 * 1024)
        .write_buffer_size(8 * 1024)
        // A GraphQL message is a few KiB; tungstenite would accept 64 MiB.
        .max_message_size(MAX_WS_MESSAGE)
        .max_frame_size(MAX_WS_MESSAGE)
        .protocols(ALL_WEBSOCKET_PROTOCOLS)
        .on_upgrade(move |socket| serve(socket, state, protocol, header))
        .into_response()
}

async fn serve(socket: WebSocket, state: HttpState, protocol: WebSocketProtocols, header_token: Option<String>) {
    let _open = GaugeGuard::new(&state.metrics.websocket_connections);
    let (mut sink, stream) = socket.split();
    let running = Arc::new(Running::default());
    let (refused_tx, mut refused_rx) = mpsc::unbounded_channel::<String>();
    let admitted = running.clone();
    let input = stream.take_while(|message| future::ready(message.is_ok())).filter_map(move |message| {
        future::ready(match message {
            Ok(Message::Text(text)) => admit(&admitted, &refused_tx, text.as_bytes()).then(|| text.as_bytes().to_vec()),
            Ok(Message::Binary(bytes)) => admit(&admitted, &refused_tx, &bytes).then(|| bytes.to_vec()),
            _ => None,
        })
    });
    let (actor_tx, actor_rx) = oneshot::channel::<Actor>();
    let init_state = state.clone();
    let mut output = GraphQLSocket::new(state.schema.checked.clone(), input, protocol)
        .on_connection_init(move |payload| async move {
            let token = init_token(&payload).or(header_token);
            match bearer::caller(&init_state, token).await {
                Caller::Rejected(err) => Err(async_graphql::Error::from(err)),
                caller => {
                    if let Caller::Authenticated(actor) = &caller {
                        let _ = actor_tx.send(actor.clone());
                    }
                    let mut data = Data::default();
                    data.insert(caller);
                    Ok(data)
                }
            }
        })
        .boxed();
    let init_deadline = tokio::time::sleep(state.ws_init_timeout);
    tokio::pin!(init_deadline);
    let mut acknowledged = false;
    let revoked = revocation(state.clone(), actor_rx);
    tokio::pin!(revoked);
    loop {
        let message = tokio::select! {
            next = output.next() => match next {
                Some(WsMessage::Text(text)) => {
                    acknowledged |= sent(&running, &text);
                    Message::Text(text.into())
                }
                Some(WsMessage::Close(code, reason)) => close(code, &reason),
                None => break,
            },
            Some(id) = refused_rx.recv() => Message::Text(over_the_cap(&id, protocol).to_string().into()),
            _ = &mut init_deadline, if !acknowledged => close(4408, "Connection initialisation timeout"),
            () = &mut revoked => close(4403, "Forbidden: the token was revoked"),
        };
        let closing = matches!(message, Message::Close(_));
        if sink.send(message).await.is_err() || closing {
            break;
        }
    }
}

fn close(code: u16, reason: &str) -> Message {
    Message::Close(Some(CloseFrame { code, reason: reason.to_owned().into() }))
}

/// Whether a client message goes on to the GraphQL socket: a subscription beyond the cap does
/// not, and its id is answered with an error instead. A subscription the client completes
/// frees its place.
fn admit(running: &Running, refused: &mpsc::UnboundedSender<String>, bytes: &[u8]) -> bool {
    let Ok(message) = serde_json::from_slice::<Value>(bytes) else { return true };
    let Some(id) = message["id"].as_str() else { return true };
    match message["type"].as_str() {
        Some("subscribe" | "start") => {
            let mut ids = running.ids();
            if ids.contains(id) || ids.len() < MAX_SUBSCRIPTIONS {
                ids.insert(id.to_owned());
                true
            } else {
                let _ = refused.send(id.to_owned());
                false
            }
        }
        Some("complete" | "stop") => {
            running.ids().remove(id);
            true
        }
        _ => true,
    }
}

/// Notes what the server sent: a subscription it ended frees its place. Returns whether the
/// message acknowledged the connection.
fn sent(running: &Running, text: &str) -> bool {
    let Ok(message) = serde_json::from_str::<Value>(text) else { return false };
    match (message["type"].as_str(), message["id"].as_str()) {
        (Some("complete" | "error"), Some(id)) => {
            running.ids().remove(id);
            false
        }
        (Some("connection_ack"), _) => true,
        _ => false,
    }
}

fn over_the_cap(id: &str, protocol: WebSocketProtocols) -> Value {
    let error = json!({
        "message": format!("a connection holds at most {MAX_SUBSCRIPTIONS} subscriptions"),
        "extensions": { "code": "LIMIT_EXCEEDED", "details": { "limit": "subscriptions", "max": MAX_SUBSCRIPTIONS } },
    });
    // graphql-transport-ws sends a list of errors; the legacy protocol one error.
    let payload = if protocol == WebSocketProtocols::GraphQLWS { json!([error]) } else { error };
    json!({ "id": id, "type": "error", "payload": payload })
}

/// Resolves when the token the connection authenticated with is revoked (never for the static
/// operator token, an anonymous connection, or once the feed stops).
async fn revocation(state: HttpState, actor: oneshot::Receiver<Actor>) {
    let Ok(actor) = actor.await else { return future::pending().await };
    let Some(token_id) = actor.token_id.clone() else { return future::pending().await };
    let filter = Filter {
        actor: actor.clone(),
        tenant_id: None,
        types: vec!["token.revoked".into()],
        subject: Some(token_id),
        except: Vec::new(),
        part: None,
    };
    // The feed ends a subscriber's stream with an error once its own token is revoked.
    let events = state.services.feed.subscribe(filter, None);
    // A revocation committed between the socket's authentication and this subscription is not
    // in the stream; the token's row says so.
    if state.services.ensure_active(&actor).await.is_err() {
        return;
    }
    tokio::pin!(events);
    while let Some(event) = events.next().await {
        if event.is_err() {
            return;
        }
    }
    future::pending().await
}

fn init_token(payload: &Value) -> Option<String> {
    ["Authorization", "authorization", "authToken", "token"]
        .iter()
        .find_map(|key| payload.get(key).and_then(|v| v.as_str()))
        .map(bearer::bearer)
}
