//! The edge a GraphQL tool meets first: introspection as every standard client sends it, limits
//! that weigh what a query costs (over HTTP and WebSocket alike), the GraphQL-over-HTTP response
//! shapes, request ids, deadlines, panics, and WebSocket bounds.
use crate::common;

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use axum::Router;
use axum::routing::get;
use common::{ADMIN, Backend, TestServer, first_code};
use serde_json::{Value, json};

const WAIT: Duration = Duration::from_secs(10);

fn playground() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("playground")
}

/// graphql-js's introspection query with every option, printed by graphql-js itself; None (the
/// test says it is skipped) only where Node.js is absent.
fn introspection_query() -> Option<String> {
    if !Command::new("node").arg("--version").output().is_ok_and(|o| o.status.success()) {
        eprintln!("SKIPPED: Node.js is not installed; graphql-js's introspection query was not sent");
        return None;
    }
    assert!(
        playground().join("node_modules/graphql").exists(),
        "playground/node_modules is missing: the build (build.rs) installs it when Node.js is present"
    );
    let output = Command::new("node").arg(playground().join("tests/introspection-query.mjs")).output().unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    Some(String::from_utf8(output.stdout).unwrap())
}

async fn post(server: &TestServer, body: Value, accept: Option<&str>) -> reqwest::Response {
    let mut request = server.http.post(server.url("/graphql")).bearer_auth(ADMIN).json(&body);
    if let Some(accept) = accept {
        request = request.header("accept", accept);
    }
    request.send().await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn graphql_js_introspection_query_with_every_option_succeeds_over_http() {
    let Some(query) = introspection_query() else { return };
    let server = TestServer::start(Backend::Sqlite).await;
    // Anonymous, as a tool's first request is: introspection needs no token.
    let started = std::time::Instant::now();
    let response = server.http.post(server.url("/graphql")).json(&json!({ "query": query })).send().await.unwrap();
    let text = response.text().await.unwrap();
    let elapsed = started.elapsed();
    let body: Value = serde_json::from_str(&text).unwrap();
    assert!(body.get("errors").is_none(), "introspection refused: {}", &text[..text.len().min(400)]);
    eprintln!("introspection answer: {} bytes in {elapsed:?}", text.len());
    let answer = std::env::temp_dir().join(format!("vps-graph-introspection-{}.json", std::process::id()));
    std::fs::write(&answer, &text).unwrap();
    let output = Command::new("node")
        .arg(playground().join("tests/introspection-query.mjs"))
        .arg("--check")
        .arg(&answer)
        .output()
        .unwrap();
    let _ = std::fs::remove_file(&answer);
    assert!(
        output.status.success(),
        "graphql-js could not build a schema: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let built: Value = serde_json::from_slice(&output.stdout).unwrap();
    let query_fields = built["query"].as_array().unwrap();
    assert!(query_fields.contains(&json!("providerVolumes")), "{built}");
    assert!(built["providerVolumeFields"].as_array().unwrap().contains(&json!("attachments")), "{built}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn introspection_is_refused_when_turned_off() {
    let db = common::TestDb::new(Backend::Sqlite).await;
    let mut config = common::config(&db.url);
    config.limits.introspection = vps_graph::config::Toggle::Off;
    let server = TestServer::with_config(config).await;
    let body = server.gql(None, "{ __schema { queryType { name } } }", json!({})).await;
    assert_eq!(first_code(&body).as_deref(), Some("UNSUPPORTED"), "{body}");
    assert_eq!(body["errors"][0]["extensions"]["details"]["reason"], "introspection", "{body}");
    assert_eq!(body["data"], Value::Null, "{body}");
    // The API itself still answers.
    assert_eq!(server.ok(Some(ADMIN), "{ __typename }", json!({})).await["__typename"], "Query");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn introspection_has_bounds_of_its_own() {
    let server = TestServer::start(Backend::Sqlite).await;
    let twice = "{ a: __schema { queryType { name } } b: __schema { queryType { name } } }";
    let body = server.gql(None, twice, json!({})).await;
    assert_eq!(first_code(&body).as_deref(), Some("LIMIT_EXCEEDED"), "{body}");
    assert_eq!(body["errors"][0]["extensions"]["details"]["limit"], "__schema fields", "{body}");
    let mut deep = String::from("name");
    for _ in 0..30 {
        deep = format!("ofType {{ {deep} }}");
    }
    let body = server.gql(None, &format!("{{ __type(name: \"Query\") {{ {deep} }} }}"), json!({})).await;
    assert_eq!(body["errors"][0]["extensions"]["details"]["limit"], "introspection depth", "{body}");
    // Deep introspection is not counted against the query's own depth limit (12).
    let mut nested = String::from("name");
    for _ in 0..14 {
        nested = format!("ofType {{ {nested} }}");
    }
    let body = server.gql(None, &format!("{{ __type(name: \"Query\") {{ {nested} }} }}"), json!({})).await;
    assert!(body.get("errors").is_none(), "{body}");
}

const VOLUME_PAGE: &str = "query($first: Int!) { providerVolumes(tenantId: \"t\", first: $first) { edges { node {
    name state device attachments { state instance { name } } snapshots { name state sizeGiB } } } } }";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn complexity_weighs_a_connection_by_its_first_times_its_items() {
    let server = TestServer::start(Backend::Sqlite).await;
    let body = server.gql(Some(ADMIN), VOLUME_PAGE, json!({ "first": 1000 })).await;
    assert_eq!(first_code(&body).as_deref(), Some("LIMIT_EXCEEDED"), "{body}");
    let details = &body["errors"][0]["extensions"]["details"];
    assert_eq!(details["limit"], "complexity");
    assert!(details["value"].as_u64().unwrap() > 100_000, "a thousand volumes with their lists: {details}");
    // The same selection on a page of 100 fits, and is weighed as a tenth.
    let body = server.gql(Some(ADMIN), VOLUME_PAGE, json!({ "first": 100 })).await;
    assert_ne!(first_code(&body).as_deref(), Some("LIMIT_EXCEEDED"), "{body}");
    // A thousand names alone fit too: the weight is the items' cost, not the page size alone.
    let names = "{ providerVolumes(tenantId: \"t\", first: 1000) { edges { node { name } } } }";
    let body = server.gql(Some(ADMIN), names, json!({})).await;
    assert_ne!(first_code(&body).as_deref(), Some("LIMIT_EXCEEDED"), "{body}");
}

/// Every GraphQL block of README.md, and the playground's first query, as a reader copies them.
fn documented_operations() -> Vec<(String, String)> {
    let readme = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md")).unwrap();
    let mut blocks: Vec<String> =
        readme.split("```graphql").skip(1).map(|b| b.split("```").next().unwrap().to_owned()).collect();
    let main = std::fs::read_to_string(playground().join("src/main.js")).unwrap();
    let default_query = main.split("const defaultQuery = `").nth(1).unwrap().split('`').next().unwrap();
    blocks.push(default_query.to_owned());
    // A block may hold several operations: each is sent alone, by name.
    blocks
        .iter()
        .flat_map(|block| {
            let names: Vec<&str> = block
                .split(['\n', ' ', '{', '('])
                .collect::<Vec<_>>()
                .windows(2)
                .filter(|w| matches!(w[0], "query" | "mutation" | "subscription") && !w[1].is_empty())
                .map(|w| w[1])
                .collect();
            names.into_iter().map(|name| (name.to_owned(), block.clone())).collect::<Vec<_>>()
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_documented_query_fits_the_default_limits() {
    let server = TestServer::start(Backend::Sqlite).await;
    let operations = documented_operations();
    assert!(operations.len() >= 15, "README.md's operations were not found: {}", operations.len());
    for (name, document) in operations {
        let body: Value =
            post(&server, json!({ "query": document, "operationName": name }), None).await.json().await.unwrap();
        for error in body["errors"].as_array().into_iter().flatten() {
            assert_ne!(error["extensions"]["code"], "LIMIT_EXCEEDED", "{name} is over a limit: {error}");
            let message = error["message"].as_str().unwrap_or("");
            assert!(!message.contains("Unknown field") && !message.contains("Unknown argument"), "{name}: {error}");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn limits_apply_to_operations_sent_over_websocket() {
    let server = TestServer::start(Backend::Sqlite).await;
    let mut ws = server.ws(json!({ "Authorization": format!("Bearer {ADMIN}") })).await;
    assert_eq!(ws.next(WAIT).await.unwrap()["type"], "connection_ack");
    let aliases: String = (0..31).map(|i| format!("a{i}: type ")).collect();
    ws.subscribe("1", &format!("subscription {{ events(tenantId: \"t\") {{ {aliases} }} }}"), json!({})).await;
    let reply = ws.next(WAIT).await.expect("an answer");
    assert_eq!(reply["id"], "1");
    let errors = if reply["type"] == "error" { &reply["payload"] } else { &reply["payload"]["errors"] };
    assert_eq!(errors[0]["extensions"]["code"], "LIMIT_EXCEEDED", "{reply}");
    assert_eq!(errors[0]["extensions"]["details"]["limit"], "aliases", "{reply}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn graphql_response_json_omits_data_when_the_request_was_not_executed() {
    let server = TestServer::start(Backend::Sqlite).await;
    let accept = Some("application/graphql-response+json");
    for query in ["{ me {", "{ nothingHere }", "{ __typename }"] {
        let response = post(&server, json!({ "query": query }), accept).await;
        let status = response.status().as_u16();
        let body: Value = response.json().await.unwrap();
        if query == "{ __typename }" {
            assert_eq!(status, 200);
            assert_eq!(body["data"]["__typename"], "Query");
        } else {
            assert_eq!(status, 400, "{query}: {body}");
            assert!(body.get("data").is_none(), "{query}: a request error carries no data: {body}");
            assert_eq!(first_code(&body).as_deref(), Some("INVALID_INPUT"), "{body}");
        }
    }
    // Under plain JSON the shape stays what older clients read: `data: null` beside the errors.
    let body: Value = post(&server, json!({ "query": "{ nothingHere }" }), None).await.json().await.unwrap();
    assert_eq!(body["data"], Value::Null, "{body}");
    // A field error happens during execution: data is there (null), with status 200.
    let anonymous = server
        .http
        .post(server.url("/graphql"))
        .header("accept", "application/graphql-response+json")
        .json(&json!({ "query": "{ me { tenantId } }" }))
        .send()
        .await
        .unwrap();
    assert_eq!(anonymous.status().as_u16(), 200);
    let body: Value = anonymous.json().await.unwrap();
    assert!(body.get("data").is_some(), "{body}");
    assert_eq!(first_code(&body).as_deref(), Some("UNAUTHENTICATED"), "{body}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_response_carries_a_request_id_and_keeps_a_well_formed_one() {
    let server = TestServer::start(Backend::Sqlite).await;
    let generated = server.http.get(server.url("/healthz")).send().await.unwrap();
    let id = generated.headers()["x-request-id"].to_str().unwrap().to_owned();
    assert!(id.starts_with("req_") && id.len() > 20, "{id}");
    let kept = server
        .http
        .get(server.url("/graphql?query=%7B__typename%7D"))
        .header("x-request-id", "trace-42.a:b")
        .send()
        .await;
    assert_eq!(kept.unwrap().headers()["x-request-id"], "trace-42.a:b");
    let replaced = server.http.get(server.url("/healthz")).header("x-request-id", "no spaces or <tags>").send().await;
    let replaced = replaced.unwrap().headers()["x-request-id"].to_str().unwrap().to_owned();
    assert!(replaced.starts_with("req_"), "{replaced}");
}

async fn serve(router: Router) -> String {
    vps_graph::init_crypto();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, router).await });
    format!("http://{addr}")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_panic_below_the_edge_is_a_coded_internal_error_with_the_request_id() {
    async fn panics() -> &'static str {
        panic!("a resolver's bug")
    }
    let base = serve(vps_graph::http::with_edge(Router::new().route("/boom", get(panics)), WAIT)).await;
    let response =
        reqwest::Client::new().get(format!("{base}/boom")).header("x-request-id", "req-7").send().await.unwrap();
    assert_eq!(response.status().as_u16(), 500);
    assert_eq!(response.headers()["x-request-id"], "req-7");
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["errors"][0]["extensions"]["code"], "INTERNAL", "{body}");
    assert_eq!(body["errors"][0]["extensions"]["requestId"], "req-7", "{body}");
    assert!(!body.to_string().contains("a resolver's bug"), "the panic's text stays in the log: {body}");
    // The server goes on serving.
    let again = reqwest::Client::new().get(format!("{base}/boom")).send().await.unwrap();
    assert_eq!(again.status().as_u16(), 500);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_past_its_deadline_is_answered_with_a_coded_timeout() {
    async fn hangs() -> &'static str {
        std::future::pending::<()>().await;
        "never"
    }
    let deadline = Duration::from_millis(200);
    let base = serve(vps_graph::http::with_edge(Router::new().route("/slow", get(hangs)), deadline)).await;
    let response =
        tokio::time::timeout(WAIT, reqwest::Client::new().get(format!("{base}/slow")).send()).await.unwrap().unwrap();
    assert_eq!(response.status().as_u16(), 503);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["errors"][0]["extensions"]["code"], "TIMEOUT", "{body}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_websocket_message_over_the_limit_closes_the_socket() {
    let server = TestServer::start(Backend::Sqlite).await;
    let mut ws = server.ws(json!({ "Authorization": format!("Bearer {ADMIN}") })).await;
    assert_eq!(ws.next(WAIT).await.unwrap()["type"], "connection_ack");
    let padding = "x".repeat(300 * 1024);
    let big = json!({ "id": "1", "type": "subscribe", "payload": { "query": format!("subscription {{ events {{ type }} }} # {padding}") } });
    ws.send_text(big.to_string()).await;
    // tungstenite refuses the frame: the socket is closed (1009, message too big) or dropped.
    let closed = ws.closed(WAIT).await;
    assert!(closed.as_ref().is_none_or(|(code, _)| *code == 1009), "{closed:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_websocket_that_never_sends_connection_init_is_closed_with_4408() {
    let db = common::TestDb::new(Backend::Sqlite).await;
    let mut config = common::config(&db.url);
    config.limits.ws_init_timeout_ms = 300;
    let server = TestServer::with_config(config).await;
    let mut silent = server.ws_uninitialised().await;
    let closed = silent.closed(WAIT).await.expect("a close frame");
    assert_eq!(closed.0, 4408, "{closed:?}");
    // One that does initialise in time stays open past the deadline and is answered.
    let mut prompt = server.ws(json!({ "Authorization": format!("Bearer {ADMIN}") })).await;
    assert_eq!(prompt.next(WAIT).await.unwrap()["type"], "connection_ack");
    tokio::time::sleep(Duration::from_millis(600)).await;
    prompt.send(json!({ "type": "ping" })).await;
    assert_eq!(prompt.next(WAIT).await.expect("still open")["type"], "pong");
}

db_test!(a_connection_holds_at_most_100_subscriptions, |backend: Backend| async move {
    let server = TestServer::start(backend).await;
    server.tenant("t").await;
    let mut ws = server.ws(json!({ "Authorization": format!("Bearer {ADMIN}") })).await;
    assert_eq!(ws.next(WAIT).await.unwrap()["type"], "connection_ack");
    let live = "subscription { events(tenantId: \"t\", types: [\"nothing.*\"]) { type } }";
    for i in 0..100 {
        ws.subscribe(&i.to_string(), live, json!({})).await;
    }
    ws.subscribe("one-more", live, json!({})).await;
    let refused = ws.next(WAIT).await.expect("an answer for the 101st");
    assert_eq!(refused["id"], "one-more", "{refused}");
    assert_eq!(refused["type"], "error", "{refused}");
    assert_eq!(refused["payload"][0]["extensions"]["code"], "LIMIT_EXCEEDED", "{refused}");
    assert_eq!(refused["payload"][0]["extensions"]["details"]["max"], 100, "{refused}");
    // Completing one frees its place: the next subscription reaches GraphQL (and is validated).
    ws.send(json!({ "id": "0", "type": "complete" })).await;
    ws.subscribe("after", "subscription { events(tenantId: \"t\") { noSuchField } }", json!({})).await;
    let mut answered = ws.next(WAIT).await.expect("an answer");
    while answered["id"] != "after" {
        assert_eq!(answered, json!({ "id": "0", "type": "complete" }), "only the completed one's end comes first");
        answered = ws.next(WAIT).await.expect("an answer");
    }
    let errors = if answered["type"] == "error" { &answered["payload"] } else { &answered["payload"]["errors"] };
    assert_ne!(errors[0]["extensions"]["code"], "LIMIT_EXCEEDED", "{answered}");
    assert!(errors[0]["message"].as_str().unwrap().contains("noSuchField"), "{answered}");
});

db_test!(revoking_a_token_closes_the_sockets_that_used_it_with_4403, |backend: Backend| async move {
    let server = TestServer::start(backend).await;
    server.tenant("acme").await;
    let (secret, token_id) = server.token_with_id(Some("acme"), &[("compute:*", "tenant/acme")]).await;
    let other = server.token(Some("acme"), &[("compute:*", "tenant/acme")]).await;
    let mut revoked_socket = server.ws(json!({ "Authorization": format!("Bearer {secret}") })).await;
    assert_eq!(revoked_socket.next(WAIT).await.unwrap()["type"], "connection_ack");
    let mut other_socket = server.ws(json!({ "Authorization": format!("Bearer {other}") })).await;
    assert_eq!(other_socket.next(WAIT).await.unwrap()["type"], "connection_ack");
    let revoke = "mutation($id: String!) { tokenRevoke(input: { tokenId: $id }) { revokedAt } }";
    server.ok(Some(ADMIN), revoke, json!({ "id": token_id })).await;
    let closed = revoked_socket.closed(Duration::from_secs(20)).await.expect("a close frame");
    assert_eq!(closed.0, 4403, "{closed:?}");
    // The socket of another token is untouched: it still answers.
    other_socket.send(json!({ "type": "ping" })).await;
    assert_eq!(other_socket.next(WAIT).await.expect("still open")["type"], "pong");
});

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_websocket_that_breaks_the_protocol_is_closed_with_its_code() {
    let server = TestServer::start(Backend::Sqlite).await;
    server.tenant("t").await;
    let live = "subscription { events(tenantId: \"t\") { type } }";
    let admin = json!({ "Authorization": format!("Bearer {ADMIN}") });

    // 4401: a subscription before connection_init.
    let mut early = server.ws_uninitialised().await;
    early.subscribe("1", live, json!({})).await;
    assert_eq!(early.closed(WAIT).await.expect("a close frame").0, 4401);

    // 4429: connection_init twice.
    let mut twice = server.ws(admin.clone()).await;
    assert_eq!(twice.next(WAIT).await.unwrap()["type"], "connection_ack");
    twice.send(json!({ "type": "connection_init", "payload": admin.clone() })).await;
    assert_eq!(twice.closed(WAIT).await.expect("a close frame").0, 4429);

    // 4409: an id already running.
    let mut same_id = server.ws(admin.clone()).await;
    assert_eq!(same_id.next(WAIT).await.unwrap()["type"], "connection_ack");
    same_id.subscribe("1", live, json!({})).await;
    same_id.subscribe("1", live, json!({})).await;
    assert_eq!(same_id.closed(WAIT).await.expect("a close frame").0, 4409);

    // 4400: a message that is not one of the protocol's, or not JSON.
    for message in [json!({ "type": "nonsense" }).to_string(), "{ not json".to_owned()] {
        let mut bad = server.ws(admin.clone()).await;
        assert_eq!(bad.next(WAIT).await.unwrap()["type"], "connection_ack");
        bad.send_text(message.clone()).await;
        assert_eq!(bad.closed(WAIT).await.expect("a close frame").0, 4400, "{message}");
    }
}
