//! The load a process takes is bounded before any work: each caller's request budget (429 with
//! the IETF draft's RateLimit-* headers), requests in flight (503 with Retry-After), sockets and
//! connections (overall and per token), connections that never speak, sockets that stop
//! answering pings or hold nothing, operations over a socket past the HTTP deadline, and a
//! database that does not answer (503 at once, and back by itself).
use crate::common;

use std::time::{Duration, Instant};

use common::{ADMIN, Backend, TestDb, TestServer};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use vps_graph::app::AppConfig;
use vps_graph::config::LoadArgs;

const WAIT: Duration = Duration::from_secs(5);

async fn server_with(backend: Backend, load: LoadArgs, tune: impl FnOnce(&mut AppConfig)) -> TestServer {
    let db = TestDb::new(backend).await;
    let mut config = common::config(&db.url);
    config.load = load;
    tune(&mut config);
    let mut server = TestServer::with_config(config).await;
    server.keep(db);
    server.tenant("acme").await;
    server
}

async fn post(server: &TestServer, token: Option<&str>, query: &str) -> reqwest::Response {
    let mut request = server.http.post(server.url("/graphql")).json(&json!({ "query": query }));
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    request.send().await.unwrap()
}

fn header(response: &reqwest::Response, name: &str) -> Option<String> {
    response.headers().get(name).map(|v| v.to_str().unwrap().to_owned())
}

db_test!(a_token_past_its_budget_is_answered_429_with_the_drafts_ratelimit_headers, |backend: Backend| async move {
    let server = server_with(backend, LoadArgs { rate_limit: 3, ..LoadArgs::default() }, |_| {}).await;
    let token = server.token(Some("acme"), &[("compute:*", "tenant/acme")]).await;
    for remaining in ["2", "1", "0"] {
        let response = post(&server, Some(&token), "{ me { tenantId } }").await;
        assert_eq!(response.status(), 200);
        assert_eq!(header(&response, "ratelimit-limit").as_deref(), Some("3"));
        assert_eq!(header(&response, "ratelimit-remaining").as_deref(), Some(remaining));
        let reset: u64 = header(&response, "ratelimit-reset").unwrap().parse().unwrap();
        assert!((1..=60).contains(&reset), "{reset}");
    }
    let refused = post(&server, Some(&token), "{ me { tenantId } }").await;
    assert_eq!(refused.status(), 429);
    assert_eq!(header(&refused, "ratelimit-remaining").as_deref(), Some("0"));
    assert!(header(&refused, "retry-after").is_some());
    let body: Value = refused.json().await.unwrap();
    assert_eq!(body["errors"][0]["extensions"]["code"], "LIMIT_EXCEEDED", "{body}");
    assert_eq!(body["errors"][0]["extensions"]["details"]["limit"], "requests per minute", "{body}");
    // Another token's budget is its own; an operator has none unless told.
    let other = server.token(Some("acme"), &[("compute:*", "tenant/acme")]).await;
    assert_eq!(post(&server, Some(&other), "{ me { tenantId } }").await.status(), 200);
    for _ in 0..5 {
        let operator = post(&server, Some(ADMIN), "{ me { operator } }").await;
        assert_eq!(operator.status(), 200);
        assert!(header(&operator, "ratelimit-limit").is_none());
    }
    // Requests without a token are counted by the address they come from.
    for _ in 0..3 {
        assert_eq!(post(&server, None, "{ __typename }").await.status(), 200);
    }
    assert_eq!(post(&server, None, "{ __typename }").await.status(), 429);
    // A socket's init and each operation it sends are counted: the token's budget is spent.
    let mut ws = server.ws(json!({ "Authorization": format!("Bearer {token}") })).await;
    let (code, reason) = ws.closed(WAIT).await.expect("a close frame");
    assert_eq!(code, 1013, "{reason}");
    let mut fresh = server.ws(json!({ "Authorization": format!("Bearer {other}") })).await;
    assert_eq!(fresh.next(WAIT).await.unwrap()["type"], "connection_ack");
    for id in ["1", "2"] {
        fresh.subscribe(id, "subscription { events(tenantId: \"acme\") { type } }", json!({})).await;
    }
    // The first subscription is live: an event of the tenant made above may reach it first.
    let reply = loop {
        let reply = fresh.next(WAIT).await.unwrap();
        if reply["id"] != "1" {
            break reply;
        }
        assert_eq!(reply["type"], "next", "{reply}");
    };
    assert_eq!((reply["type"].as_str(), reply["id"].as_str()), (Some("error"), Some("2")), "{reply}");
    assert_eq!(reply["payload"][0]["extensions"]["code"], "LIMIT_EXCEEDED", "{reply}");
});

db_test!(a_request_past_the_cap_in_flight_is_answered_503_at_once, |backend: Backend| async move {
    let server = server_with(backend, LoadArgs { max_in_flight: 1, ..LoadArgs::default() }, |_| {}).await;
    // A body sent slowly holds its connection, not the one place among the requests in flight.
    let mut slow = tokio::net::TcpStream::connect(server.addr).await.unwrap();
    let head = "POST /graphql HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: 100\r\n\r\n{\"q";
    slow.write_all(head.as_bytes()).await.unwrap();
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(post(&server, Some(ADMIN), "{ __typename }").await.status(), 200, "a slow body takes no place");
    // A request that waits on the database holds it: SQLite's one connection, or PostgreSQL's
    // projects table, held by the test.
    use sea_orm::{ConnectionTrait, TransactionTrait};
    let held = server.app.services.db.begin().await.unwrap();
    if backend == Backend::Postgres {
        held.execute_unprepared("LOCK TABLE projects IN ACCESS EXCLUSIVE MODE").await.unwrap();
    }
    let waiting = {
        let (http, url) = (server.http.clone(), server.url("/graphql"));
        tokio::spawn(async move {
            let query = json!({ "query": "{ projects(tenantId: \"acme\") { id } }" });
            http.post(url).bearer_auth(ADMIN).json(&query).send().await.unwrap().status()
        })
    };
    let mut refused = None;
    for _ in 0..50 {
        tokio::time::sleep(Duration::from_millis(20)).await;
        let response = post(&server, Some(ADMIN), "{ __typename }").await;
        if response.status() == 503 {
            refused = Some(response);
            break;
        }
    }
    let refused = refused.expect("a 503 while the waiting request holds the place");
    assert_eq!(header(&refused, "retry-after").as_deref(), Some("1"));
    let body: Value = refused.json().await.unwrap();
    assert_eq!(body["errors"][0]["extensions"]["code"], "UNAVAILABLE", "{body}");
    assert_eq!(body["errors"][0]["extensions"]["details"]["limit"], "requests in flight", "{body}");
    drop(held);
    assert_eq!(waiting.await.unwrap(), 200, "the waiting request is answered once the database is free");
    assert_eq!(post(&server, Some(ADMIN), "{ __typename }").await.status(), 200, "its place was given back");
    // Health is never refused.
    assert_eq!(server.http.get(server.url("/healthz")).send().await.unwrap().status(), 200);
});

db_test!(sockets_are_capped_overall_and_per_token, |backend: Backend| async move {
    let load = LoadArgs { max_sockets: 3, max_sockets_per_token: 1, ..LoadArgs::default() };
    let server = server_with(backend, load, |_| {}).await;
    let token = server.token(Some("acme"), &[("compute:*", "tenant/acme")]).await;
    let mut first = server.ws(json!({ "Authorization": format!("Bearer {token}") })).await;
    assert_eq!(first.next(WAIT).await.unwrap()["type"], "connection_ack");
    let mut second = server.ws(json!({ "Authorization": format!("Bearer {token}") })).await;
    let (code, reason) = second.closed(WAIT).await.expect("a close frame");
    assert_eq!(code, 1013, "{reason}");
    // An operator's are not counted per token.
    let mut operator = server.ws(json!({ "Authorization": format!("Bearer {ADMIN}") })).await;
    assert_eq!(operator.next(WAIT).await.unwrap()["type"], "connection_ack");
    let mut third = server.ws(json!({ "Authorization": format!("Bearer {ADMIN}") })).await;
    assert_eq!(third.next(WAIT).await.unwrap()["type"], "connection_ack");
    // Three open: the fourth upgrade is refused.
    let mut request = tokio_tungstenite::tungstenite::client::IntoClientRequest::into_client_request(format!(
        "ws://{}/graphql",
        server.addr
    ))
    .unwrap();
    request.headers_mut().insert("Sec-WebSocket-Protocol", "graphql-transport-ws".parse().unwrap());
    match tokio_tungstenite::connect_async(request).await {
        Err(tokio_tungstenite::tungstenite::Error::Http(response)) => assert_eq!(response.status(), 503),
        other => panic!("a fourth socket: {:?}", other.map(|(_, r)| r.status())),
    }
});

db_test!(a_socket_that_stops_answering_pings_or_holds_nothing_is_closed, |backend: Backend| async move {
    let load = LoadArgs { ws_ping_ms: 200, ws_idle_ms: 600, ..LoadArgs::default() };
    let server = server_with(backend, load, |_| {}).await;
    let mut silent = server.ws(json!({ "Authorization": format!("Bearer {ADMIN}") })).await;
    let (seen, closed) = silent.read_until_closed(WAIT).await;
    assert_eq!(seen.first().map(|m| m["type"].clone()), Some(json!("connection_ack")));
    assert!(seen.iter().any(|m| m["type"] == "ping"), "pinged: {seen:?}");
    assert_eq!(closed.map(|(code, _)| code), Some(1001), "never answered");
    // One that answers every ping but holds no subscription is let go once idle.
    // Timed from before the connection: the server's idle time starts once it has accepted it.
    let started = Instant::now();
    let mut idle = server.ws(json!({ "Authorization": format!("Bearer {ADMIN}") })).await;
    loop {
        match idle.next_or_why(WAIT).await {
            Ok(_) => continue,
            Err(why) => {
                assert!(why.contains("1000") || why.contains("Normal"), "{why}");
                break;
            }
        }
    }
    assert!(started.elapsed() >= Duration::from_millis(600), "{:?}", started.elapsed());
    // One that holds a subscription stays.
    let mut busy = server.ws(json!({ "Authorization": format!("Bearer {ADMIN}") })).await;
    assert_eq!(busy.next(WAIT).await.unwrap()["type"], "connection_ack");
    busy.subscribe("1", "subscription { events(tenantId: \"acme\") { type } }", json!({})).await;
    // Past twice the idle time, answering pings, it is neither closed nor sent anything else.
    let quiet = tokio::time::timeout(Duration::from_millis(1500), busy.next(WAIT)).await;
    assert!(quiet.is_err(), "{quiet:?}");
});

db_test!(an_operation_over_a_socket_has_the_http_deadline, |backend: Backend| async move {
    let server = server_with(backend, LoadArgs::default(), |config| config.limits.request_timeout_ms = 300).await;
    // Hold what the query needs: SQLite's one connection, PostgreSQL's projects table.
    use sea_orm::{ConnectionTrait, TransactionTrait};
    let db = &server.app.services.db;
    let held = db.begin().await.unwrap();
    if backend == Backend::Postgres {
        held.execute_unprepared("LOCK TABLE projects IN ACCESS EXCLUSIVE MODE").await.unwrap();
    }
    let mut ws = server.ws(json!({ "Authorization": format!("Bearer {ADMIN}") })).await;
    assert_eq!(ws.next(WAIT).await.unwrap()["type"], "connection_ack");
    let started = Instant::now();
    ws.subscribe("q", "{ projects(tenantId: \"acme\") { id } }", json!({})).await;
    let reply = ws.next(WAIT).await.expect("an answer");
    assert!(started.elapsed() < Duration::from_secs(2), "{:?}", started.elapsed());
    assert_eq!(reply["payload"]["errors"][0]["extensions"]["code"], "TIMEOUT", "{reply}");
    assert_eq!(ws.next(WAIT).await.unwrap()["type"], "complete");
    drop(held);
});

db_test!(connections_that_never_speak_are_let_go_and_capped, |backend: Backend| async move {
    let load = LoadArgs { header_timeout_ms: 300, max_connections: 2, ..LoadArgs::default() };
    let server = server_with(backend, load, |_| {}).await;
    let mut quiet = tokio::net::TcpStream::connect(server.addr).await.unwrap();
    let started = Instant::now();
    let mut buffer = [0u8; 64];
    let read = tokio::time::timeout(WAIT, quiet.read(&mut buffer)).await.expect("closed within the wait");
    assert!(matches!(read, Ok(0) | Err(_)), "{read:?}");
    assert!(started.elapsed() >= Duration::from_millis(250), "{:?}", started.elapsed());
    // Two held open: a third is closed as it is accepted.
    let _held: Vec<tokio::net::TcpStream> = vec![
        tokio::net::TcpStream::connect(server.addr).await.unwrap(),
        tokio::net::TcpStream::connect(server.addr).await.unwrap(),
    ];
    tokio::time::sleep(Duration::from_millis(50)).await;
    let mut third = tokio::net::TcpStream::connect(server.addr).await.unwrap();
    let _ = third.write_all(b"GET /healthz HTTP/1.1\r\nhost: x\r\n\r\n").await;
    let read = tokio::time::timeout(Duration::from_millis(250), third.read(&mut buffer)).await.expect("closed at once");
    assert!(matches!(read, Ok(0) | Err(_)), "{read:?}");
});

/// A TCP relay to PostgreSQL that a test can cut and mend: the database "goes away" for the
/// app alone, not for the other tests on the same server.
struct Relay {
    port: u16,
    up: std::sync::Arc<std::sync::atomic::AtomicBool>,
    cut: std::sync::Arc<tokio::sync::Notify>,
}

impl Relay {
    async fn to(target: &str) -> Relay {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let up = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(true));
        let cut = std::sync::Arc::new(tokio::sync::Notify::new());
        let (flag, cutting, target) = (up.clone(), cut.clone(), target.to_owned());
        tokio::spawn(async move {
            loop {
                let Ok((mut inbound, _)) = listener.accept().await else { return };
                if !flag.load(std::sync::atomic::Ordering::SeqCst) {
                    continue;
                }
                let (target, cutting) = (target.clone(), cutting.clone());
                tokio::spawn(async move {
                    let Ok(mut outbound) = tokio::net::TcpStream::connect(&target).await else { return };
                    tokio::select! {
                        _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound) => {}
                        _ = cutting.notified() => {}
                    }
                });
            }
        });
        Relay { port, up, cut }
    }

    fn set(&self, up: bool) {
        self.up.store(up, std::sync::atomic::Ordering::SeqCst);
        if !up {
            self.cut.notify_waiters();
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn while_postgresql_is_away_readyz_and_requests_fail_fast_and_recover_by_themselves() {
    let Some(base) = common::postgres_base() else {
        eprintln!("TEST_DATABASE_URL is not set: PostgreSQL variant not run (SQLite is a file of the process)");
        return;
    };
    let db = TestDb::new(Backend::Postgres).await;
    let url = reqwest::Url::parse(&db.url).unwrap();
    let target = format!("{}:{}", url.host_str().unwrap(), url.port().unwrap_or(5432));
    let relay = Relay::to(&target).await;
    let mut relayed = url.clone();
    relayed.set_port(Some(relay.port)).unwrap();
    let _ = base;
    let mut config = common::config(relayed.as_str());
    config.db_max_connections = 4;
    let mut server = TestServer::with_config(config).await;
    server.keep(db);
    server.tenant("acme").await;
    assert_eq!(server.http.get(server.url("/readyz")).send().await.unwrap().status(), 200);

    relay.set(false);
    let started = Instant::now();
    let mut refused = None;
    while started.elapsed() < Duration::from_secs(5) {
        let asked = Instant::now();
        let ready = server.http.get(server.url("/readyz")).send().await.unwrap();
        if ready.status() == 503 {
            refused = Some(asked.elapsed());
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let answered_in = refused.expect("readyz turned 503");
    assert!(answered_in < Duration::from_millis(1500), "{answered_in:?}");
    let asked = Instant::now();
    let mutation = server
        .http
        .post(server.url("/graphql"))
        .bearer_auth(ADMIN)
        .json(&json!({ "query": "mutation { projectCreate(input: { tenantId: \"acme\", name: \"away\" }) { id } }" }))
        .send()
        .await
        .unwrap();
    assert!(asked.elapsed() < Duration::from_millis(200), "failed fast: {:?}", asked.elapsed());
    assert_eq!(mutation.status(), 503);
    assert!(header(&mutation, "retry-after").is_some());
    let body: Value = mutation.json().await.unwrap();
    assert_eq!(body["errors"][0]["extensions"]["code"], "UNAVAILABLE", "{body}");
    assert_eq!(server.http.get(server.url("/healthz")).send().await.unwrap().status(), 200, "alive");

    relay.set(true);
    let back = Instant::now();
    let mut recovered = false;
    while back.elapsed() < Duration::from_secs(10) {
        let made = server
            .gql(
                Some(ADMIN),
                "mutation { projectCreate(input: { tenantId: \"acme\", name: \"back\" }) { id } }",
                json!({}),
            )
            .await;
        if made["data"]["projectCreate"]["id"].is_string() {
            recovered = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(recovered, "requests are served again once it is back");
    assert!(back.elapsed() < Duration::from_secs(3), "back within {:?}", back.elapsed());
    assert_eq!(server.http.get(server.url("/readyz")).send().await.unwrap().status(), 200);
}

db_test!(an_address_holds_few_sockets_that_have_not_authenticated, |backend: Backend| async move {
    let server = server_with(backend, LoadArgs::default(), |_| {}).await;
    let mut waiting = Vec::new();
    for _ in 0..64 {
        waiting.push(server.ws_uninitialised().await);
    }
    let mut request = tokio_tungstenite::tungstenite::client::IntoClientRequest::into_client_request(format!(
        "ws://{}/graphql",
        server.addr
    ))
    .unwrap();
    request.headers_mut().insert("Sec-WebSocket-Protocol", "graphql-transport-ws".parse().unwrap());
    match tokio_tungstenite::connect_async(request.clone()).await {
        Err(tokio_tungstenite::tungstenite::Error::Http(response)) => assert_eq!(response.status(), 503),
        other => panic!("a 65th socket waiting for connection_init: {:?}", other.map(|(_, r)| r.status())),
    }
    // One that authenticates no longer counts against its address.
    waiting[0]
        .send(json!({ "type": "connection_init", "payload": { "Authorization": format!("Bearer {ADMIN}") } }))
        .await;
    assert_eq!(waiting[0].next(WAIT).await.unwrap()["type"], "connection_ack");
    assert!(tokio_tungstenite::connect_async(request).await.is_ok());
});
