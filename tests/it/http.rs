//! HTTP behaviour: GraphQL-over-HTTP negotiation, GET for queries only, query limits with clear
//! errors, body size, health, readiness and metrics.
use crate::common;

use common::{ADMIN, Backend, TestDb, TestServer};
use serde_json::{Value, json};
use vps_graph::config::LimitArgs;

async fn limited(db: &TestDb) -> TestServer {
    let mut config = common::config(&db.url);
    config.limits = LimitArgs {
        max_depth: 4,
        max_complexity: 40,
        max_aliases: 3,
        max_batch: 3,
        max_body_bytes: 4096,
        feed_poll_ms: 200,
        ..LimitArgs::default()
    };
    TestServer::with_config(config).await
}

async fn post_raw(server: &TestServer, body: &str, content_type: &str, accept: Option<&str>) -> reqwest::Response {
    let mut request =
        server.http.post(server.url("/graphql")).header("content-type", content_type).body(body.to_owned());
    if let Some(accept) = accept {
        request = request.header("accept", accept);
    }
    request.bearer_auth(ADMIN).send().await.unwrap()
}

fn limit_of(body: &Value) -> (&str, &str) {
    let ext = &body["errors"][0]["extensions"];
    (ext["code"].as_str().unwrap_or(""), ext["details"]["limit"].as_str().unwrap_or(""))
}

db_test!(query_deeper_than_the_limit_is_limit_exceeded, |backend: Backend| async move {
    let db = TestDb::new(backend).await;
    let server = limited(&db).await;
    let deep = "{ providerVolumes(tenantId: \"t\") { edges { node { attachments { instance { name } } } } } }";
    let body = server.gql(Some(ADMIN), deep, json!({})).await;
    assert_eq!(limit_of(&body), ("LIMIT_EXCEEDED", "depth"), "{body}");
    assert!(body["data"].is_null());
    server.ok(Some(ADMIN), "{ me { grants { scope } } }", json!({})).await;
});

db_test!(query_more_complex_than_the_limit_is_limit_exceeded, |backend: Backend| async move {
    let db = TestDb::new(backend).await;
    let server = limited(&db).await;
    let fields = (0..41).map(|_| "tenantId").collect::<Vec<_>>().join(" ");
    let body = server.gql(Some(ADMIN), &format!("{{ me {{ {fields} }} }}"), json!({})).await;
    assert_eq!(limit_of(&body), ("LIMIT_EXCEEDED", "complexity"), "{body}");
});

db_test!(query_with_too_many_aliases_is_limit_exceeded, |backend: Backend| async move {
    let db = TestDb::new(backend).await;
    let server = limited(&db).await;
    let body = server
        .gql(Some(ADMIN), "{ a: me { tenantId } b: me { tenantId } c: me { tenantId } d: me { tenantId } }", json!({}))
        .await;
    assert_eq!(limit_of(&body), ("LIMIT_EXCEEDED", "aliases"), "{body}");
    assert_eq!(body["errors"][0]["extensions"]["details"]["max"], 3);
    server.ok(Some(ADMIN), "{ a: me { tenantId } b: me { tenantId } c: me { tenantId } }", json!({})).await;
});

db_test!(body_over_the_limit_is_refused, |backend: Backend| async move {
    let db = TestDb::new(backend).await;
    let server = limited(&db).await;
    let padding = " ".repeat(5000);
    let response =
        post_raw(&server, &format!("{{\"query\":\"{{ me {{ tenantId }} }}{padding}\"}}"), "application/json", None)
            .await;
    assert_eq!(response.status(), 413);
});

db_test!(get_runs_queries_and_refuses_mutations, |backend: Backend| async move {
    let server = TestServer::start(backend).await;
    let query = server
        .http
        .get(server.url("/graphql"))
        .query(&[("query", "{ me { operator } }")])
        .bearer_auth(ADMIN)
        .send()
        .await
        .unwrap();
    assert_eq!(query.status(), 200);
    assert_eq!(query.json::<Value>().await.unwrap()["data"]["me"]["operator"], true);
    let mutation = server
        .http
        .get(server.url("/graphql"))
        .query(&[("query", "mutation { tenantCreate(input: { id: \"x\", name: \"x\" }) { id } }")])
        .bearer_auth(ADMIN)
        .send()
        .await
        .unwrap();
    assert_eq!(mutation.status(), 405);
    assert_eq!(mutation.headers()["allow"], "POST");
    let tenants = server.ok(Some(ADMIN), "{ tenants { id } }", json!({})).await;
    assert_eq!(tenants["tenants"], json!([]), "the refused GET wrote nothing");
});

db_test!(response_type_follows_accept, |backend: Backend| async move {
    let server = TestServer::start(backend).await;
    let body = r#"{"query":"{ me { operator } }"}"#;
    let plain = post_raw(&server, body, "application/json", None).await;
    assert_eq!(plain.headers()["content-type"], "application/json");
    let negotiated = post_raw(&server, body, "application/json", Some("application/graphql-response+json")).await;
    assert_eq!(negotiated.status(), 200);
    assert_eq!(negotiated.headers()["content-type"], "application/graphql-response+json");
    // A request error (the document does not parse): 400 under graphql-response+json, 200 under json.
    let broken = r#"{"query":"{ me { "}"#;
    assert_eq!(
        post_raw(&server, broken, "application/json", Some("application/graphql-response+json")).await.status(),
        400
    );
    assert_eq!(post_raw(&server, broken, "application/json", Some("application/json")).await.status(), 200);
    assert_eq!(post_raw(&server, body, "text/plain", None).await.status(), 415);
    let not_json = post_raw(&server, "{", "application/json", None).await;
    assert_eq!(not_json.status(), 400);
    assert_eq!(not_json.json::<Value>().await.unwrap()["errors"][0]["extensions"]["code"], "INVALID_INPUT");
});

db_test!(health_readiness_and_metrics_answer, |backend: Backend| async move {
    let server = TestServer::start(backend).await;
    let get = |path: &'static str| {
        let url = server.url(path);
        let http = server.http.clone();
        async move { http.get(url).send().await.unwrap() }
    };
    assert_eq!(get("/healthz").await.status(), 200);
    assert_eq!(get("/readyz").await.status(), 200);
    server.code(None, "{ me { tenantId } }", json!({})).await;
    let metrics = get("/metrics").await.text().await.unwrap();
    assert!(metrics.contains("vps_graph_graphql_errors_total{code=\"UNAUTHENTICATED\"} 1"), "{metrics}");
    assert!(
        metrics.contains("vps_graph_http_requests_total{route=\"/graphql\",method=\"POST\",status=\"200\"}"),
        "{metrics}"
    );
    assert!(metrics.contains("vps_graph_subscribers 0"), "{metrics}");
});

db_test!(internal_errors_hide_their_cause, |backend: Backend| async move {
    let err = vps_graph::error::Error::internal("SELECT secret FROM somewhere failed");
    let gql: async_graphql::Error = err.into();
    assert!(gql.message.starts_with("internal error (request id req_"), "{}", gql.message);
    assert!(!gql.message.contains("SELECT"));
    let _ = backend;
});

db_test!(batch_larger_than_the_limit_is_refused, |backend: Backend| async move {
    let db = TestDb::new(backend).await;
    let server = limited(&db).await;
    let one = json!({ "query": "{ me { operator } }" });
    let ok =
        server.http.post(server.url("/graphql")).bearer_auth(ADMIN).json(&json!([one, one, one])).send().await.unwrap();
    let answers: Value = ok.json().await.unwrap();
    assert_eq!(answers.as_array().unwrap().len(), 3);
    let refused = server
        .http
        .post(server.url("/graphql"))
        .bearer_auth(ADMIN)
        .json(&json!([one, one, one, one]))
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), 400);
    assert_eq!(refused.json::<Value>().await.unwrap()["errors"][0]["extensions"]["code"], "LIMIT_EXCEEDED");
});

db_test!(graphql_validation_errors_carry_a_code, |backend: Backend| async move {
    let server = TestServer::start(backend).await;
    for query in [
        "{ me { noSuchField } }",
        "{ me { ",
        "mutation { poolCreate(input: { name: \"x\", providerAccountId: \"y\", billing: NOPE }) { id } }",
    ] {
        let body = server.gql(Some(ADMIN), query, json!({})).await;
        assert_eq!(body["errors"][0]["extensions"]["code"], "INVALID_INPUT", "{query}: {body}");
    }
});

#[tokio::test]
async fn a_short_admin_token_is_refused_at_start() {
    let dir = std::env::temp_dir().join(format!("vps-graph-short-{}", ulid::Ulid::generate()));
    let mut config = common::config(&format!("sqlite://{}/db.sqlite?mode=rwc", dir.display()));
    config.admin_token = Some("short".into());
    let err = vps_graph::app::App::start(config).await.err().expect("refused");
    assert_eq!(err.code, vps_graph::error::Code::InvalidInput);
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test]
async fn an_in_memory_sqlite_database_is_refused_at_start() {
    let err = vps_graph::app::App::start(common::config("sqlite::memory:")).await.err().expect("refused");
    assert_eq!(err.code, vps_graph::error::Code::InvalidInput);
    assert!(err.describe().contains("in-memory"), "{}", err.describe());
}

#[tokio::test]
async fn first_start_makes_the_demo_and_prints_tokens_once() {
    let dir = std::env::temp_dir().join(format!("vps-graph-demo-{}", ulid::Ulid::generate()));
    let url = format!("sqlite://{}/demo.db?mode=rwc", dir.display());
    let mut config = common::config(&url);
    config.demo = true;
    let first = TestServer::with_config(config.clone()).await;
    let tokens = first.app.first_start.as_ref().expect("tokens on the first start");
    let me = first
        .ok(
            Some(&tokens.tenant_token),
            "{ me { tenantId } pools(tenantId: \"demo\") { name } quotas(tenantId: \"demo\") { resource max } }",
            json!({}),
        )
        .await;
    assert_eq!(me["me"]["tenantId"], "demo");
    assert_eq!(me["pools"][0]["name"], "demo");
    // DigitalOcean's pool: diskGiB, addresses, instances, networks; AWS's: diskGiB, instances,
    // networks, filesystems, filesystemGiB.
    let resources: Vec<&str> =
        me["quotas"].as_array().unwrap().iter().map(|q| q["resource"].as_str().unwrap()).collect();
    assert_eq!(resources.len(), 9, "{resources:?}");
    for resource in ["diskGiB", "addresses", "instances", "networks", "filesystems", "filesystemGiB"] {
        assert!(resources.contains(&resource), "{resource}: {resources:?}");
    }
    let operator = tokens.operator_token.clone();
    first.app.stop.cancel();
    drop(first);
    let again = TestServer::with_config(config).await;
    assert!(again.app.first_start.is_none(), "a restart prints no new tokens");
    assert_eq!(
        again.ok(Some(&operator), "{ me { operator } }", json!({})).await["me"]["operator"],
        true,
        "the data was kept"
    );
    let _ = std::fs::remove_dir_all(dir);
}

db_test!(the_pages_send_a_content_security_policy_and_may_not_be_framed_or_sniffed, |backend: Backend| async move {
    let server = TestServer::start(backend).await;
    for path in ["/", "/dashboard", "/index.html", "/dashboard.html"] {
        let page = server.http.get(server.url(path)).send().await.unwrap();
        let header = |name: &str| page.headers().get(name).map(|v| v.to_str().unwrap().to_owned()).unwrap_or_default();
        let policy = header("content-security-policy");
        for part in ["frame-ancestors 'none'", "object-src 'none'", "base-uri 'none'"] {
            assert!(policy.contains(part), "{path}: {policy}");
        }
        assert!(!policy.contains("unsafe-eval") && !policy.contains("script-src *"), "{path}: {policy}");
        assert_eq!(header("x-frame-options"), "DENY", "{path}");
        assert_eq!(header("x-content-type-options"), "nosniff", "{path}");
        assert_eq!(header("referrer-policy"), "no-referrer", "{path}");
    }
    let api =
        server.http.post(server.url("/graphql")).json(&json!({ "query": "{ __typename }" })).send().await.unwrap();
    assert_eq!(api.headers()["x-content-type-options"], "nosniff");
});

db_test!(a_misconfigured_account_is_told_to_the_operator_never_in_a_tenants_message, |backend: Backend| async move {
    let server = TestServer::start(backend).await;
    server.tenant("acme").await;
    // `pool` makes an account whose credential is `env:DO_TOKEN`, which is not set here.
    assert!(std::env::var_os("DO_TOKEN").is_none(), "DO_TOKEN is set: this test needs it unset");
    let pool = server.pool("real").await;
    server.offer(&pool, "acme", json!([{ "resource": "networks", "max": 5 }])).await;
    let token = server.token(Some("acme"), &[("compute:*", "tenant/acme")]).await;
    let input = json!({ "tenantId": "acme", "poolId": pool, "name": "lan", "idempotencyKey": "lan",
        "subnets": [{ "region": "nyc3", "ipRange": "10.1.0.0/24" }] });
    let made = server
        .ok(
            Some(&token),
            "mutation($i: NetworkCreateInput!) { networkCreate(input: $i) { id } }",
            json!({ "i": input }),
        )
        .await;
    let id = made["networkCreate"]["id"].as_str().unwrap().to_owned();
    let read = "query($n: String!) { network(tenantId: \"acme\", networkId: $n) { state message } }";
    let mut seen = Value::Null;
    for _ in 0..100 {
        seen = server.ok(Some(&token), read, json!({ "n": id })).await["network"].clone();
        if seen["state"] == "ERROR" {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert_eq!(seen["state"], "ERROR", "{seen}");
    let message = seen["message"].as_str().unwrap();
    assert_eq!(message, vps_graph::provider::MISCONFIGURED);
    assert!(!message.contains("DO_TOKEN") && !message.contains("env:"), "{message}");
});

db_test!(a_batch_is_one_request_whose_operations_share_one_complexity, |backend: Backend| async move {
    let db = TestDb::new(backend).await;
    let server = limited(&db).await;
    // 1 + 15 each: two fit under 40, the third finds 8 left.
    let fields = (0..15).map(|_| "tenantId").collect::<Vec<_>>().join(" ");
    let one = json!({ "query": format!("{{ me {{ {fields} }} }}") });
    let answers: Value = server
        .http
        .post(server.url("/graphql"))
        .bearer_auth(ADMIN)
        .json(&json!([one, one, one]))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert!(answers[0]["errors"].is_null() && answers[1]["errors"].is_null(), "{answers}");
    assert_eq!(limit_of(&answers[2]), ("LIMIT_EXCEEDED", "batch complexity"), "{answers}");
    assert_eq!(answers[2]["errors"][0]["extensions"]["details"]["max"], 8, "{answers}");
});
