//! Documents built to cost the server more than their size: each is refused with a clear code
//! before async-graphql walks it, quickly, on every transport, and the server stays up.
use crate::common;

use std::time::{Duration, Instant};

use common::{ADMIN, Backend, TestServer, first_code};
use serde_json::{Value, json};

/// `levels` fragments, each spreading the one below `fan` times, the lowest `{ __typename }`:
/// `fan`^`levels` fields once expanded.
fn fan_out(levels: usize, fan: usize) -> String {
    let mut text = String::from("query { ...F");
    text.push_str(&levels.to_string());
    text.push_str(" }\nfragment F0 on Query { __typename }\n");
    for level in 1..=levels {
        let spreads = format!("...F{} ", level - 1).repeat(fan);
        text.push_str(&format!("fragment F{level} on Query {{ {spreads}}}\n"));
    }
    text
}

fn limit(body: &Value) -> (&str, &str) {
    let extensions = &body["errors"][0]["extensions"];
    (extensions["code"].as_str().unwrap_or(""), extensions["details"]["limit"].as_str().unwrap_or(""))
}

db_test!(the_783_byte_fragment_bomb_is_refused_at_once_without_a_token, |backend: Backend| async move {
    let server = TestServer::start(backend).await;
    let bomb = fan_out(10, 8);
    assert!(bomb.len() <= 800, "{} bytes", bomb.len());
    let started = Instant::now();
    let body = server.gql(None, &bomb, json!({})).await;
    let took = started.elapsed();
    assert_eq!(limit(&body), ("LIMIT_EXCEEDED", "selections"), "{body}");
    assert!(body["errors"][0]["extensions"]["details"]["value"].as_u64().unwrap() > 1_000_000_000, "{body}");
    assert!(took < Duration::from_millis(100), "answered in {took:?}");
    // The same bomb in a batch, and one whose fragments spread each other in a ring.
    let batch = json!([{ "query": "{ __typename }" }, { "query": bomb }]);
    let answers: Value =
        server.http.post(server.url("/graphql")).json(&batch).send().await.unwrap().json().await.unwrap();
    assert_eq!(answers[0]["data"]["__typename"], "Query", "{answers}");
    assert_eq!(limit(&answers[1]), ("LIMIT_EXCEEDED", "selections"), "{answers}");
    let ring = "{ ...A } fragment A on Query { ...B ...B ...B } fragment B on Query { ...A ...A ...A }";
    let started = Instant::now();
    let body = server.gql(None, ring, json!({})).await;
    assert_eq!(first_code(&body).as_deref(), Some("INVALID_INPUT"), "{body}");
    assert!(started.elapsed() < Duration::from_millis(100), "{:?}", started.elapsed());
    let alive = server.http.get(server.url("/healthz")).send().await.unwrap();
    assert_eq!(alive.status(), 200);
});

db_test!(a_document_nested_past_what_the_parser_may_recurse_is_refused_unparsed, |backend: Backend| async move {
    let server = TestServer::start(backend).await;
    // 200,000 brackets: parsed, this would overflow a thread's stack and abort the process.
    let deep = format!("{{ me(x: {}) {{ tenantId }} }}", "[".repeat(200_000));
    let body = server.gql(Some(ADMIN), &deep, json!({})).await;
    assert_eq!(limit(&body), ("LIMIT_EXCEEDED", "text nesting"), "{}", &body.to_string()[..300]);
    let selections = format!("{}tenantId{}", "me { ".repeat(40), " }".repeat(40));
    let body = server.gql(Some(ADMIN), &format!("{{ {selections} }}"), json!({})).await;
    assert_eq!(limit(&body), ("LIMIT_EXCEEDED", "nesting"), "{body}");
    assert_eq!(server.ok(None, "{ __typename }", json!({})).await["__typename"], "Query");
});

db_test!(typename_inside_introspection_cannot_cancel_the_complexity, |backend: Backend| async move {
    let server = TestServer::start(backend).await;
    let page = "providerVolumes(tenantId: \"t\", first: 1000) { edges { node { name snapshots { name } } } }";
    let alone = server.gql(Some(ADMIN), &format!("{{ {page} }}"), json!({})).await;
    assert_eq!(limit(&alone), ("LIMIT_EXCEEDED", "complexity"), "{alone}");
    let value = alone["errors"][0]["extensions"]["details"]["value"].clone();
    // Each `__typename` under `__type` was subtracted from the measure but never counted in it:
    // as many as the introspection bounds let through (ten `__type`, fifteen each).
    let typenames = "__typename ".repeat(15);
    let types: String = (0..10).map(|i| format!("t{i}: __type(name: \"Query\") {{ ...T }} ")).collect();
    let bypass = format!("{{ {page} {types} }} fragment T on __Type {{ {typenames} }}");
    let body = server.gql(Some(ADMIN), &bypass, json!({})).await;
    assert_eq!(limit(&body), ("LIMIT_EXCEEDED", "complexity"), "{body}");
    assert_eq!(body["errors"][0]["extensions"]["details"]["value"], value, "introspection neither adds nor subtracts");
});

db_test!(introspection_is_bounded_by_its_own_lists_and_aliases, |backend: Backend| async move {
    let server = TestServer::start(backend).await;
    let four = "{ __schema { types { fields { args { type { fields { name } } } } } } }";
    assert_eq!(limit(&server.gql(None, four, json!({})).await), ("LIMIT_EXCEEDED", "introspection lists"));
    let copies: String = (0..5).map(|i| format!("t{i}: types {{ name }} ")).collect();
    let body = server.gql(None, &format!("{{ __schema {{ {copies} }} }}"), json!({})).await;
    assert_eq!(limit(&body), ("LIMIT_EXCEEDED", "introspection aliases"), "{body}");
    let repeats = format!("{{ __schema {{ types {{ fields {{ {} }} }} }} }}", "name ".repeat(4_000));
    let started = Instant::now();
    assert_eq!(limit(&server.gql(None, &repeats, json!({})).await), ("LIMIT_EXCEEDED", "introspection breadth"));
    // Refused before any work: far under a second even on a busy machine (not a speed target).
    assert!(started.elapsed() < Duration::from_secs(1), "{:?}", started.elapsed());
    let three = "{ __schema { types { fields { args { name } } } } }";
    assert!(server.gql(None, three, json!({})).await.get("errors").is_none());
});

db_test!(nodes_weighs_each_id_by_what_reading_it_costs, |backend: Backend| async move {
    let server = TestServer::start(backend).await;
    let ids: Vec<String> = (0..100).map(|i| format!("pvol_01jz{i:022}")).collect();
    let query = "query($ids: [ID!]!) { nodes(ids: $ids) { id ... on ProviderVolume { name state } } }";
    let body = server.gql(Some(ADMIN), query, json!({ "ids": ids })).await;
    assert!(body.get("errors").is_none(), "{body}");
    assert_eq!(body["data"]["nodes"].as_array().unwrap().len(), 100);
    let response = server
        .http
        .post(server.url("/graphql"))
        .bearer_auth(ADMIN)
        .json(&json!({ "query": query, "variables": { "ids": ids } }))
        .send()
        .await
        .unwrap();
    let statements: u64 = response.headers()["x-sql-statements"].to_str().unwrap().parse().unwrap();
    assert!(statements <= 3, "a hundred volume ids in one read: {statements} statements");
    // Each id weighs what is read of it, and the call its statements (20): two such lists of a
    // hundred volumes with their snapshots (1 + 1 + (1 + 25 × 4) = 103 each) weigh past 20,000.
    let heavy = "query($ids: [ID!]!) { a: nodes(ids: $ids) { ...V } b: nodes(ids: $ids) { ...V } }
        fragment V on Node { id ... on ProviderVolume { name snapshots { id name state sizeGiB } } }";
    let body = server.gql(Some(ADMIN), heavy, json!({ "ids": ids })).await;
    assert_eq!(limit(&body), ("LIMIT_EXCEEDED", "complexity"), "{body}");
    assert_eq!(body["errors"][0]["extensions"]["details"]["value"], 2 * (1 + 20 + 100 * (1 + 103)), "{body}");
});

db_test!(a_hostile_document_over_a_websocket_is_refused_for_its_id, |backend: Backend| async move {
    let server = TestServer::start(backend).await;
    let mut ws = server.ws(json!({ "Authorization": format!("Bearer {ADMIN}") })).await;
    assert_eq!(ws.next(Duration::from_secs(5)).await.unwrap()["type"], "connection_ack");
    let started = Instant::now();
    ws.subscribe("bomb", &fan_out(10, 8).replace("on Query", "on Subscription"), json!({})).await;
    let reply = ws.next(Duration::from_secs(5)).await.expect("an answer");
    assert!(started.elapsed() < Duration::from_millis(100), "{:?}", started.elapsed());
    assert_eq!((reply["type"].as_str(), reply["id"].as_str()), (Some("error"), Some("bomb")), "{reply}");
    assert_eq!(reply["payload"][0]["extensions"]["details"]["limit"], "selections", "{reply}");
    // The socket still serves.
    ws.subscribe("fine", "subscription { events(tenantId: \"t\") { type } }", json!({})).await;
    ws.send(json!({ "id": "fine", "type": "complete" })).await;
    assert_eq!(ws.next(Duration::from_secs(5)).await.unwrap()["type"], "complete");
});
