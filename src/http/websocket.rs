//! GraphQL over WebSocket: graphql-transport-ws, and the legacy graphql-ws (subscriptions-
//! transport-ws), with the bounds a public socket needs. A socket takes a place among the
//! server's (`http::load`: past the cap the upgrade is 503), and its token one among the token's
//! (past it, close 1013). `connection_init` must come within a deadline (else close 4408), at
//! most once (4429), with a token that authenticates (else 4403); a subscription before it is
//! 4401, an id already running 4409, a message that is not one of the protocol's 4400. It is
//! pinged every `--ws-ping-ms`: one that sent nothing since the last ping is closed (1001), and
//! one that holds no subscription for `--ws-idle-ms` too (1000). Every operation is counted on
//! the token's request budget, and a query or mutation sent over it has the HTTP deadline. A
//! connection holds at most `MAX_SUBSCRIPTIONS` at once (one more is answered with a coded
//! LIMIT_EXCEEDED error for its id). Revoking the token a connection authenticated with closes it (4403), on every
//! replica, since the revocation is an event. A connection that does not read what it is sent
//! (`QUEUE` messages behind) is closed with 1013: its client reconnects and resumes after the last
//! cursor it saw; one whose peer does not take a message for `SEND_TIMEOUT` is dropped. Subscriptions are answered through `graphql::shared`, which runs the live ones
//! that ask the same once for all their subscribers. Message and frame sizes are bounded at the
//! upgrade.
use std::collections::HashMap;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;

use async_graphql::http::{ALL_WEBSOCKET_PROTOCOLS, WebSocketProtocols};
use axum::extract::ws::{CloseFrame, Message, WebSocket};
use axum::extract::{FromRequestParts, Request, WebSocketUpgrade};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use futures_util::{SinkExt, StreamExt, future};
use serde::Deserialize;
use serde_json::{Value, json};

use super::load::{self, SocketPlace, Spender};
use super::{HttpState, bearer};
use crate::authz::Actor;
use crate::feed::Filter;
use crate::graphql::Caller;
use crate::graphql::shared::{Link, Membership, Outbound};
use crate::metrics::GaugeGuard;

/// The largest WebSocket message (and frame) a client may send: as large as an HTTP body may be.
const MAX_WS_MESSAGE: usize = 256 * 1024;

/// What a connection reads at a time: client messages are small (a larger one still arrives,
/// the buffer grows for it), and every idle subscriber holds this buffer.
const READ_BUFFER: usize = 1024;

/// Subscriptions one connection may hold at once.
pub const MAX_SUBSCRIPTIONS: usize = 100;

/// Messages a connection may be behind on before it is closed.
const QUEUE: usize = 1024;

/// How long one message may wait for a peer to read before the connection is dropped.
const SEND_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

/// graphql-transport-ws (and the legacy graphql-ws) on the same path. The token comes in
/// `connection_init` (`{"Authorization": "Bearer …"}`), or else from the upgrade request's header;
/// a token that does not authenticate closes the connection.
pub async fn upgrade(state: HttpState, request: Request, peer: Option<SocketAddr>) -> Response {
    let place = match state.load.open_socket(peer) {
        Ok(place) => place,
        Err(full) => return full.into_response(),
    };
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
    upgrade
        .read_buffer_size(READ_BUFFER)
        .write_buffer_size(0)
        // A GraphQL message is a few KiB; tungstenite would accept 64 MiB.
        .max_message_size(MAX_WS_MESSAGE)
        .max_frame_size(MAX_WS_MESSAGE)
        .protocols(ALL_WEBSOCKET_PROTOCOLS)
        .on_upgrade(move |socket| serve(socket, state, Protocol(protocol), header, Place { socket: place, peer }))
        .into_response()
}

/// The protocol a connection speaks: its message names differ, not its flow.
#[derive(Clone, Copy)]
struct Protocol(WebSocketProtocols);

impl Protocol {
    fn is_legacy(self) -> bool {
        self.0 == WebSocketProtocols::SubscriptionsTransportWS
    }

    /// A response of subscription `id`.
    fn next(self, id: &str, payload: &str) -> String {
        let kind = if self.is_legacy() { "data" } else { "next" };
        format!(r#"{{"type":"{kind}","id":{},"payload":{payload}}}"#, Value::from(id))
    }

    fn complete(self, id: &str) -> String {
        json!({ "type": "complete", "id": id }).to_string()
    }

    /// A ping; the legacy protocol has only its keep-alive, which nothing answers.
    fn ping(self) -> String {
        let kind = if self.is_legacy() { "ka" } else { "ping" };
        format!(r#"{{"type":"{kind}"}}"#)
    }

    /// Errors for subscription `id` that was never run: a list in graphql-transport-ws, one error
    /// in the legacy protocol.
    fn error(self, id: &str, error: Value) -> String {
        let payload = if self.is_legacy() { error } else { json!([error]) };
        json!({ "id": id, "type": "error", "payload": payload }).to_string()
    }

    /// Ends the connection for `reason`: a close code, or the legacy protocol's connection_error
    /// (which has no codes) followed by a plain close.
    fn refuse(self, code: u16, reason: &str) -> Vec<Message> {
        if self.is_legacy() && code >= 4000 {
            let error = json!({ "type": "connection_error", "payload": { "message": reason } });
            return vec![Message::Text(error.to_string().into()), close(1000, reason)];
        }
        vec![close(code, reason)]
    }
}

/// A client message of either protocol.
#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum ClientMessage {
    ConnectionInit {
        #[serde(default)]
        payload: Option<Value>,
    },
    #[serde(alias = "start")]
    Subscribe {
        id: String,
        payload: Box<async_graphql::Request>,
    },
    #[serde(alias = "stop")]
    Complete {
        id: String,
    },
    Ping {},
    Pong {},
    ConnectionTerminate,
}

/// One connection's state: who it authenticated as, and its running subscriptions.
struct Connection {
    state: HttpState,
    protocol: Protocol,
    header_token: Option<String>,
    caller: Option<Caller>,
    running: HashMap<Arc<str>, Membership>,
    link: Link,
    place: Place,
}

/// Where a connection stands: its place among the server's sockets, and the address it came
/// from (the budget of a caller without a token).
struct Place {
    socket: SocketPlace,
    peer: Option<SocketAddr>,
}

/// What handling a client message comes to.
enum Step {
    Send(Vec<Message>),
    /// Authenticated: acknowledge, and watch the token for its revocation.
    Acknowledge(Option<Actor>),
    End(Vec<Message>),
}

async fn serve(socket: WebSocket, state: HttpState, protocol: Protocol, header_token: Option<String>, place: Place) {
    let _open = GaugeGuard::new(&state.metrics.websocket_connections);
    let (mut sink, mut stream) = socket.split();
    let (link, mut outbound, behind) = Link::new(QUEUE);
    let deadline = state.ws_init_timeout;
    let (ping_every, idle_for) = (state.load.ws_ping(), state.load.ws_idle());
    let mut connection =
        Connection { state, protocol, header_token, caller: None, running: HashMap::new(), link, place };
    let init_deadline = tokio::time::sleep(deadline);
    tokio::pin!(init_deadline);
    let mut ping = tokio::time::interval_at(tokio::time::Instant::now() + ping_every, ping_every);
    // A send that waited long must not be followed by pings in a burst, each judging the peer.
    ping.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    // Whether the peer sent anything since the last ping, and since when it holds nothing.
    let (mut heard, mut idle_since) = (true, tokio::time::Instant::now());
    // What a connection waits on is kept to what it needs: an operator's or an anonymous one
    // never waits for a revocation, and a token's watch is made once it authenticated.
    let mut revoked: Pin<Box<dyn Future<Output = ()> + Send>> = Box::pin(future::pending());
    loop {
        let messages = tokio::select! {
            incoming = stream.next() => {
                heard = true;
                match incoming {
                    Some(Ok(Message::Text(text))) => connection.handle(text.as_bytes()).await,
                    Some(Ok(Message::Binary(bytes))) => connection.handle(&bytes).await,
                    Some(Ok(Message::Close(_))) | Some(Err(_)) | None => break,
                    Some(Ok(_)) => continue,
                }
            }
            _ = ping.tick() => {
                if !connection.running.is_empty() {
                    idle_since = tokio::time::Instant::now();
                }
                if !heard {
                    Step::End(vec![close(1001, "Going away: nothing heard since the last ping")])
                } else if idle_since.elapsed() >= idle_for {
                    Step::End(vec![close(1000, "Idle: no subscription")])
                } else {
                    heard = false;
                    Step::Send(vec![text(protocol.ping())])
                }
            }
            Some(message) = outbound.recv() => Step::Send(connection.outbound(message).into_iter().collect()),
            _ = &mut init_deadline, if connection.caller.is_none() => {
                Step::End(protocol.refuse(4408, "Connection initialisation timeout"))
            }
            () = &mut revoked => Step::End(vec![close(4403, "Forbidden: the token was revoked")]),
            () = behind.notified() => Step::End(vec![close(1013, "Try again later: the subscriber fell behind")]),
        };
        let (messages, last) = match messages {
            Step::Send(messages) => (messages, false),
            Step::Acknowledge(actor) => {
                if let Some(actor) = actor.filter(|a| a.token_id.is_some()) {
                    revoked = Box::pin(revocation(connection.state.clone(), actor));
                }
                (vec![Message::Text(r#"{"type":"connection_ack"}"#.into())], false)
            }
            Step::End(messages) => (messages, true),
        };
        for message in messages {
            // A peer that stops reading fills the socket's buffers and a send waits for it: give
            // up on it then, or it would hold its subscriptions forever (a close frame would wait
            // the same way).
            match tokio::time::timeout(SEND_TIMEOUT, sink.send(message)).await {
                Ok(Ok(())) => {}
                Ok(Err(_)) | Err(_) => return,
            }
        }
        if last {
            return;
        }
    }
}

/// A close frame; its reason cut to the 123 bytes a control frame has room for (RFC 6455 5.5),
/// since a longer one breaks the frame and the peer sees no code at all.
fn close(code: u16, reason: &str) -> Message {
    let mut end = reason.len().min(123);
    while !reason.is_char_boundary(end) {
        end -= 1;
    }
    Message::Close(Some(CloseFrame { code, reason: reason[..end].to_owned().into() }))
}

fn text(message: String) -> Message {
    Message::Text(message.into())
}

impl Connection {
    async fn handle(&mut self, bytes: &[u8]) -> Step {
        let protocol = self.protocol;
        let message = match serde_json::from_slice::<ClientMessage>(bytes) {
            Ok(message) => message,
            Err(err) => return Step::End(protocol.refuse(4400, &format!("Invalid message received: {err}"))),
        };
        match message {
            ClientMessage::ConnectionInit { payload } => self.initialise(payload.unwrap_or_default()).await,
            ClientMessage::Subscribe { id, payload } => self.subscribe(id, *payload).await,
            ClientMessage::Complete { id } => match self.running.remove(id.as_str()) {
                Some(membership) => {
                    drop(membership);
                    Step::Send(vec![text(protocol.complete(&id))])
                }
                None => Step::Send(Vec::new()),
            },
            ClientMessage::Ping { .. } => Step::Send(vec![Message::Text(r#"{"type":"pong"}"#.into())]),
            ClientMessage::Pong { .. } => Step::Send(Vec::new()),
            ClientMessage::ConnectionTerminate => Step::End(vec![close(1000, "terminated")]),
        }
    }

    async fn initialise(&mut self, payload: Value) -> Step {
        if self.caller.is_some() {
            return Step::End(self.protocol.refuse(4429, "Too many initialisation requests"));
        }
        let token = init_token(&payload).or_else(|| self.header_token.take());
        // Boxed: the lookup is done once, and a connection should not carry its size for life.
        match Box::pin(bearer::caller(&self.state, token)).await {
            Caller::Rejected(err) => Step::End(self.protocol.refuse(4403, &format!("Forbidden: {}", err.message))),
            Caller::Anonymous => Step::End(self.protocol.refuse(4403, "Forbidden: connection_init needs a token")),
            Caller::Authenticated(actor) => {
                let spender = Spender::of(&Caller::Authenticated(actor.clone()), self.place.peer);
                if let Some(spent) = self.state.load.spend(&spender, 1).filter(|b| !b.allowed) {
                    let reason = format!("Try again later: the request budget is spent for {} s", spent.reset);
                    return Step::End(vec![close(1013, &reason)]);
                }
                let holder = actor.token_id.as_deref().unwrap_or("admin");
                if !self.state.load.claim_socket(&mut self.place.socket, holder, actor.is_operator()) {
                    let most = self.state.load.max_sockets_per_token();
                    let reason = format!("Try again later: this token holds its most sockets ({most})");
                    return Step::End(vec![close(1013, &reason)]);
                }
                self.caller = Some(Caller::Authenticated(actor.clone()));
                Step::Acknowledge(Some(actor))
            }
        }
    }

    async fn subscribe(&mut self, id: String, request: async_graphql::Request) -> Step {
        let Some(caller) = &self.caller else {
            return Step::End(self.protocol.refuse(4401, "Unauthorized: send connection_init first"));
        };
        if self.running.contains_key(id.as_str()) {
            return Step::End(self.protocol.refuse(4409, &format!("Subscriber for {id} already exists")));
        }
        if self.running.len() >= MAX_SUBSCRIPTIONS {
            return Step::Send(vec![text(self.protocol.error(&id, over_the_cap()))]);
        }
        let spender = Spender::of(caller, self.place.peer);
        if let Some(spent) = self.state.load.spend(&spender, 1).filter(|b| !b.allowed) {
            return Step::Send(vec![text(self.protocol.error(&id, spent.error()))]);
        }
        // A query or mutation sent here takes a place among the requests in flight, as over HTTP
        // (a live subscription gives it back once it runs).
        let place = match self.state.health.is_up() {
            true => self.state.load.enter(),
            false => Err(load::Full::database()),
        };
        let place = match place {
            Ok(place) => place,
            Err(full) => return Step::Send(vec![text(self.protocol.error(&id, full.error()))]),
        };
        match self.state.schema.subscribe(request, caller, &id, self.link.clone(), place).await {
            Ok(membership) => {
                self.running.insert(Arc::from(id), membership);
                Step::Send(Vec::new())
            }
            Err(refused) => {
                let error = serde_json::to_value(&refused).unwrap_or_else(|_| json!({ "message": refused.message }));
                Step::Send(vec![text(self.protocol.error(&id, error))])
            }
        }
    }

    /// What a subscription sent, as the message to write (none for one the client completed
    /// meanwhile); one that ended frees its place.
    fn outbound(&mut self, message: Outbound) -> Option<Message> {
        let (id, number) = match &message {
            Outbound::Next { id, number, .. } | Outbound::Complete { id, number } => (id, *number),
        };
        if self.running.get(id).is_none_or(|running| running.number() != number) {
            return None;
        }
        Some(match message {
            Outbound::Next { id, payload, .. } => text(self.protocol.next(&id, &payload)),
            Outbound::Complete { id, .. } => {
                self.running.remove(&id);
                text(self.protocol.complete(&id))
            }
        })
    }
}

fn over_the_cap() -> Value {
    json!({
        "message": format!("a connection holds at most {MAX_SUBSCRIPTIONS} subscriptions"),
        "extensions": { "code": "LIMIT_EXCEEDED", "details": { "limit": "subscriptions", "max": MAX_SUBSCRIPTIONS } },
    })
}

/// Watches `actor`'s token from now on (registered on the feed before the socket is
/// acknowledged, so an acknowledged socket's revocation is never missed): the future resolves
/// once the token is revoked (never once the feed stops).
pub(super) fn revocation(state: HttpState, actor: Actor) -> impl Future<Output = ()> + Send + 'static {
    let events = actor.token_id.clone().map(|token_id| {
        let filter = Filter {
            actor: actor.clone(),
            tenant_id: None,
            types: vec!["token.revoked".into()],
            subject: Some(token_id),
            except: Vec::new(),
            part: None,
        };
        // The feed ends a subscriber's stream with an error once its own token is revoked.
        state.services.feed.subscribe(filter, None)
    });
    async move {
        let Some(events) = events else { return future::pending().await };
        // A revocation committed between the socket's authentication and this subscription is
        // not in the stream; the token's row says so.
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
}

fn init_token(payload: &Value) -> Option<String> {
    ["Authorization", "authorization", "authToken", "token"]
        .iter()
        .find_map(|key| payload.get(key).and_then(|v| v.as_str()))
        .map(bearer::bearer)
}
