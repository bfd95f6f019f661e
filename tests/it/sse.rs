//! GraphQL over Server-Sent Events (issue 34): the `graphql-sse` protocol's distinct connections
//! mode on `/graphql`. Each `next` of a subscription carries its event's feed cursor as the SSE
//! `id`; a reconnect with `Last-Event-ID` resumes after it, nothing missed and nothing twice. A
//! query or mutation is one `next` and `complete`; a refusal is a `next` with errors. And the
//! protocol's reference client (`graphql-sse`, in Node) follows the feed across a restart of the
//! binary.
use crate::common;

use std::time::Duration;

use common::{Backend, TestServer};
use serde_json::{Value, json};

/// One SSE message: its event, id and data.
#[derive(Debug)]
struct Message {
    event: String,
    id: Option<String>,
    data: Value,
}

/// An open event stream, read message by message.
struct Stream {
    response: reqwest::Response,
    buffer: String,
}

impl Stream {
    async fn open(server: &TestServer, token: Option<&str>, query: &str, last_event_id: Option<&str>) -> Stream {
        let mut request = server
            .http
            .post(server.url("/graphql"))
            .header("accept", "text/event-stream")
            .json(&json!({ "query": query }));
        if let Some(token) = token {
            request = request.bearer_auth(token);
        }
        if let Some(id) = last_event_id {
            request = request.header("last-event-id", id);
        }
        let response = request.send().await.expect("the stream opens");
        assert_eq!(response.status(), 200);
        let content_type = response.headers()["content-type"].to_str().unwrap().to_owned();
        assert!(content_type.starts_with("text/event-stream"), "{content_type}");
        Stream { response, buffer: String::new() }
    }

    /// Whether the stream ends within `wait` with no message more (pings aside).
    async fn ended(&mut self, wait: Duration) -> bool {
        let deadline = tokio::time::Instant::now() + wait;
        loop {
            let buffered = self.buffer.replace(":\n\n", "");
            if !buffered.trim().is_empty() {
                return false;
            }
            self.buffer.clear();
            match tokio::time::timeout_at(deadline, self.response.chunk()).await {
                Ok(Ok(Some(chunk))) => self.buffer.push_str(std::str::from_utf8(&chunk).unwrap()),
                Ok(Ok(None)) | Ok(Err(_)) => return true,
                Err(_) => return false,
            }
        }
    }

    /// The next message (pings skipped), or None when the stream ended or `wait` passed.
    async fn next(&mut self, wait: Duration) -> Option<Message> {
        let deadline = tokio::time::Instant::now() + wait;
        loop {
            if let Some(end) = self.buffer.find("\n\n") {
                let block: String = self.buffer.drain(..end + 2).collect();
                let mut message = Message { event: String::new(), id: None, data: Value::Null };
                for line in block.lines() {
                    match line.split_once(':') {
                        Some(("event", v)) => message.event = v.trim().to_owned(),
                        Some(("id", v)) => message.id = Some(v.trim().to_owned()),
                        Some(("data", v)) if !v.trim().is_empty() => {
                            message.data = serde_json::from_str(v.trim()).unwrap()
                        }
                        _ => {}
                    }
                }
                if message.event.is_empty() {
                    continue; // a ping
                }
                return Some(message);
            }
            let chunk = tokio::time::timeout_at(deadline, self.response.chunk()).await.ok()?.ok()??;
            self.buffer.push_str(std::str::from_utf8(&chunk).unwrap());
        }
    }
}

async fn volume(server: &TestServer, token: &str, pool: &str, name: &str) -> String {
    let query = "mutation($i: ProviderVolumeCreateInput!) { providerVolumeCreate(input: $i) { id } }";
    let input = json!({ "tenantId": "acme", "poolId": pool, "name": name, "region": "nyc3", "sizeGiB": 1,
        "idempotencyKey": name });
    server.ok(Some(token), query, json!({ "i": input })).await["providerVolumeCreate"]["id"]
        .as_str()
        .unwrap()
        .to_owned()
}

const EVENTS: &str =
    "subscription { events(tenantId: \"acme\", types: [\"providerVolume.created\"]) { cursor subject } }";

async fn setup(backend: Backend) -> (TestServer, String, String) {
    let db = common::TestDb::new(backend).await;
    let mut config = common::config(&db.url);
    config.runtime.workers = 0;
    let mut server = TestServer::with_config(config).await;
    server.keep(db);
    server.tenant("acme").await;
    let pool = server.sim_pool("do", &["nyc3"], None).await;
    server.offer(&pool, "acme", json!([{ "resource": "diskGiB", "max": 100 }])).await;
    let token = server.token(Some("acme"), &[("compute:*", "tenant/acme")]).await;
    (server, pool, token)
}

/// The subject of a `next`, checking its id is its cursor.
fn subject(message: &Message) -> String {
    assert_eq!(message.event, "next", "{message:?}");
    let event = &message.data["data"]["events"];
    assert_eq!(message.id.as_deref(), event["cursor"].as_str(), "the SSE id is the event's cursor: {message:?}");
    event["subject"].as_str().unwrap().to_owned()
}

db_test!(
    an_sse_subscription_sends_each_event_with_its_cursor_and_resumes_after_last_event_id,
    |backend: Backend| async move {
        let (server, pool, token) = setup(backend).await;
        let before = server.app.services.feed.registered();
        let mut stream = Stream::open(&server, Some(&token), EVENTS, None).await;
        // Registered twice: the subscription and its token's watch.
        server.registered_beyond(before + 1).await;
        let second = volume(&server, &token, &pool, "second").await;
        let seen = subject(&stream.next(Duration::from_secs(20)).await.expect("the second volume's event"));
        assert_eq!(seen, second, "the first event the stream sends");
        let resume_at = {
            let third = volume(&server, &token, &pool, "third").await;
            let message = stream.next(Duration::from_secs(20)).await.expect("the third volume's event");
            assert_eq!(subject(&message), third);
            message.id.clone().unwrap()
        };
        drop(stream);
        // Made while no stream is open: the resumed one replays them, and nothing before.
        let fourth = volume(&server, &token, &pool, "fourth").await;
        let fifth = volume(&server, &token, &pool, "fifth").await;
        // The same document each reconnect sends: `Last-Event-ID` decides where it goes on, not `since`.
        let since = EVENTS.replace("types:", "since: \"2020-01-01T00:00:00Z\", types:");
        let mut resumed = Stream::open(&server, Some(&token), &since, Some(&resume_at)).await;
        let mut subjects = Vec::new();
        while subjects.len() < 2 {
            let message = resumed.next(Duration::from_secs(20)).await.expect("the events after the cursor");
            subjects.push(subject(&message));
        }
        assert_eq!(subjects, [fourth, fifth], "after the last event seen: nothing missed, nothing twice");
        let sixth = volume(&server, &token, &pool, "sixth").await;
        assert_eq!(subject(&resumed.next(Duration::from_secs(20)).await.unwrap()), sixth, "then live");
    }
);

db_test!(over_sse_a_query_or_mutation_is_one_next_and_a_refusal_is_a_next_with_errors, |backend: Backend| async move {
    let (server, pool, token) = setup(backend).await;
    let mut query = Stream::open(&server, Some(&token), "{ me { tenantId } }", None).await;
    let answer = query.next(Duration::from_secs(10)).await.unwrap();
    assert_eq!((answer.event.as_str(), &answer.data["data"]["me"]["tenantId"]), ("next", &json!("acme")));
    assert_eq!(query.next(Duration::from_secs(10)).await.unwrap().event, "complete");
    assert!(query.ended(Duration::from_secs(5)).await, "the stream ends");

    let mutation = format!(
        "mutation {{ providerVolumeCreate(input: {{ tenantId: \"acme\", poolId: \"{pool}\", name: \"m\", region: \"nyc3\", sizeGiB: 1, idempotencyKey: \"m\" }}) {{ state }} }}"
    );
    let mut made = Stream::open(&server, Some(&token), &mutation, None).await;
    let answer = made.next(Duration::from_secs(10)).await.unwrap();
    assert_eq!(answer.data["data"]["providerVolumeCreate"]["state"], "PENDING", "{answer:?}");
    assert_eq!(made.next(Duration::from_secs(10)).await.unwrap().event, "complete");
    // Never over GET: an event stream's GET is retried by browsers and proxies.
    let url = server.url("/graphql");
    let get = server
        .http
        .get(&url)
        .query(&[("query", mutation.as_str())])
        .header("accept", "text/event-stream")
        .bearer_auth(&token)
        .send()
        .await
        .unwrap();
    assert_eq!(get.status(), 405, "a mutation over GET");
    let two = "subscription { events(tenantId: \"acme\") { cursor } providerVolumeChanged(tenantId: \"acme\", volumeId: \"pvol_01jz0000000000000000000000\") { id } }";
    let mut refused = Stream::open(&server, Some(&token), two, None).await;
    let message = refused.next(Duration::from_secs(10)).await.unwrap();
    assert_eq!(message.data["errors"][0]["extensions"]["code"], "INVALID_INPUT", "one root field: {message:?}");

    let mut stranger = Stream::open(&server, None, EVENTS, None).await;
    let refused = stranger.next(Duration::from_secs(10)).await.unwrap();
    assert_eq!(refused.data["errors"][0]["extensions"]["code"], "UNAUTHENTICATED", "{refused:?}");
    assert_eq!(stranger.next(Duration::from_secs(10)).await.unwrap().event, "complete");

    let reader = server.token(Some("acme"), &[("compute:volumes:read", "tenant/acme")]).await;
    let mut denied =
        Stream::open(&server, Some(&reader), "subscription { events(tenantId: \"acme\") { cursor } }", None).await;
    let refused = denied.next(Duration::from_secs(10)).await.unwrap();
    assert_eq!(refused.data["errors"][0]["extensions"]["code"], "ACCESS_DENIED", "{refused:?}");
    assert!(refused.data["data"].is_null() || refused.data["data"]["events"].is_null(), "{refused:?}");
});

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_reference_sse_client_follows_the_feed_across_a_restart_with_nothing_missed_or_twice() {
    use std::io::Write;
    use std::process::Command;

    use crate::dashboard::{Driver, Server};

    vps_graph::init_crypto();
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    assert!(
        root.join("playground/node_modules/graphql-sse").exists(),
        "playground/node_modules is missing graphql-sse: the build (build.rs) installs it when Node.js is present"
    );
    let data = std::env::temp_dir().join(format!("vps-graph-sse-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&data);
    std::fs::create_dir_all(&data).unwrap();
    let listen = format!("127.0.0.1:{}", common::free_port());
    let (token_sent, token) = std::sync::mpsc::channel();
    let mut server = Server::start(&listen, &data, token_sent);
    let token = token.recv_timeout(Duration::from_secs(60)).expect("the first start prints the tenant token");
    let base = server.url();
    let mut command = Command::new("node");
    command.arg(root.join("playground/tests/sse.mjs")).arg(&base).arg(&token).current_dir(root.join("playground"));
    let (node, mut to_client, mut received) = Driver::spawn(command);
    let (mut report, mut restarted) = (Value::Null, false);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(180);
    while let Ok(Some(line)) = tokio::time::timeout_at(deadline, received.recv()).await {
        let Ok(message) = serde_json::from_str::<Value>(&line) else { continue };
        if message["await"] == "restart" {
            server.restart();
            let pools = common::gql_at(
                &reqwest::Client::new(),
                &base,
                &token,
                "{ pools(tenantId: \"demo\") { id name } }",
                json!({}),
            )
            .await;
            let pool =
                pools["data"]["pools"].as_array().unwrap().iter().find(|p| p["name"] == "demo").unwrap()["id"].clone();
            let during = "mutation($p: String!) { providerVolumeCreate(input: { tenantId: \"demo\", poolId: $p,
                name: \"sse-during\", region: \"nyc3\", sizeGiB: 1, idempotencyKey: \"sse-during\" }) { id } }";
            let made = common::gql_at(&reqwest::Client::new(), &base, &token, during, json!({ "p": pool })).await;
            assert!(made.get("errors").is_none(), "{made}");
            writeln!(to_client, "restarted").unwrap();
            restarted = true;
        } else if message.get("ok").is_some() {
            report = message;
            break;
        }
    }
    let stderr = node.finish();
    assert!(restarted, "the client never asked for the restart: {report}\n{stderr}");
    assert_eq!(report["ok"], true, "the SSE client failed: {report}\n{stderr}");
    let _ = std::fs::remove_dir_all(&data);
}

db_test!(an_sse_subscription_takes_a_socket_place_of_its_token, |backend: Backend| async move {
    let db = common::TestDb::new(backend).await;
    let mut config = common::config(&db.url);
    config.load.max_sockets_per_token = 1;
    let mut server = TestServer::with_config(config).await;
    server.keep(db);
    server.tenant("acme").await;
    let token = server.token(Some("acme"), &[("compute:*", "tenant/acme")]).await;
    let before = server.app.services.feed.registered();
    let _open = Stream::open(&server, Some(&token), EVENTS, None).await;
    // Registered twice: the subscription and its token's watch.
    server.registered_beyond(before + 1).await;
    let second = server
        .http
        .post(server.url("/graphql"))
        .header("accept", "text/event-stream")
        .bearer_auth(&token)
        .json(&json!({ "query": EVENTS }))
        .send()
        .await
        .unwrap();
    assert_eq!(second.status(), 503, "the token holds its one place");
    drop(_open);
    // Given back once the stream is gone.
    for _ in 0..100 {
        let again = server
            .http
            .post(server.url("/graphql"))
            .header("accept", "text/event-stream")
            .bearer_auth(&token)
            .json(&json!({ "query": "subscription { events(tenantId: \"acme\") { cursor } }" }))
            .send()
            .await
            .unwrap();
        if again.status() == 200 {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the place was never given back");
});

db_test!(a_revoked_token_ends_its_stream_and_a_shutdown_ends_it_without_complete, |backend: Backend| async move {
    let (server, pool, _) = setup(backend).await;
    let (token, token_id) = server.token_with_id(Some("acme"), &[("compute:*", "tenant/acme")]).await;
    let before = server.app.services.feed.registered();
    let mut stream = Stream::open(&server, Some(&token), EVENTS, None).await;
    // Registered twice: the subscription and its token's watch.
    server.registered_beyond(before + 1).await;
    let revoke = "mutation($t: String!) { tokenRevoke(input: { tokenId: $t }) { id } }";
    server.ok(Some(common::ADMIN), revoke, json!({ "t": token_id })).await;
    // The stream says why it ends (the feed's end of the subscription and the token's watch may
    // both say so), then completes and ends.
    let mut said = 0;
    loop {
        let message = stream.next(Duration::from_secs(20)).await.expect("the stream says why it ends");
        if message.event == "complete" {
            break;
        }
        assert!(message.data["errors"][0]["extensions"]["code"].is_string(), "only refusals after it: {message:?}");
        said += 1;
    }
    assert!(said >= 1, "a refusal before the end");
    assert!(stream.ended(Duration::from_secs(10)).await, "and ends");

    let other = server.token(Some("acme"), &[("compute:*", "tenant/acme")]).await;
    let before = server.app.services.feed.registered();
    let mut stream = Stream::open(&server, Some(&other), EVENTS, None).await;
    // Registered twice: the subscription and its token's watch.
    server.registered_beyond(before + 1).await;
    let made = volume(&server, &other, &pool, "before-stop").await;
    assert_eq!(subject(&stream.next(Duration::from_secs(20)).await.unwrap()), made);
    server.app.stop.cancel();
    assert!(
        stream.ended(Duration::from_secs(20)).await,
        "a shutdown ends the stream with no `complete`, so clients reconnect"
    );
});
