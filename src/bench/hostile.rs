//! `bench --only-hostile`: the worst documents each family of attack can make under the body
//! limit (fragments that spread each other, deep nesting, aliases, directives, long strings,
//! deep and wide variables, batches, many operations in one document or on one socket, the
//! heaviest introspection), each sent with and without a token to a server that budgets no one,
//! so every request is measured whole: the server's CPU per request is read from the kernel's own
//! count (`/proc/<pid>/task/*/schedstat`, nanoseconds). Then eight clients send them all while a
//! ninth reads `/healthz`, whose p99 says whether anyone else is still served. Last, the rate at
//! which a tenant's token is throttled by the default budget.
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio_tungstenite::tungstenite::Message;

use super::{BenchResult, Client, Server, verdict};

/// The largest body the server takes (its default).
const BODY: usize = 256 * 1024;
/// Requests a document is sent per figure.
const SENDS: usize = 20;
/// Target: no request of any family costs more CPU than this.
const TARGET_MS: f64 = 50.0;

/// One attack: its family, what it is, and the body it posts.
struct Attack {
    family: &'static str,
    what: String,
    body: Value,
}

/// `levels` fragments, each spreading the one below `fan` times.
fn fan_out(levels: usize, fan: usize) -> String {
    let mut text = format!("query {{ ...F{levels} }}\nfragment F0 on Query {{ __typename }}\n");
    for level in 1..=levels {
        text.push_str(&format!("fragment F{level} on Query {{ {}}}\n", format!("...F{} ", level - 1).repeat(fan)));
    }
    text
}

fn query(text: String) -> Value {
    json!({ "query": text })
}

/// Repeats `unit` as many times as fits in `room` bytes.
fn fill(unit: &str, room: usize) -> String {
    unit.repeat(room / unit.len().max(1))
}

/// 30 aliased pages of the tenant's volumes, as large as complexity allows.
fn pages(tenant: &str) -> String {
    let page = |i: usize| {
        format!("a{i}: providerVolumes(tenantId: \"{tenant}\", first: 100) {{ edges {{ node {{ id name }} }} }} ")
    };
    format!("{{ {} }}", (0..30).map(page).collect::<String>())
}

fn attacks(tenant: &str) -> Vec<Attack> {
    let mut all = Vec::new();
    let mut add = |family: &'static str, what: &str, body: Value| all.push(Attack { family, what: what.into(), body });
    // Fragments: the exponential one (refused), and the widest that fits under the bounds.
    add("fragment fan-out", "10 levels of 8 (8^10 fields)", query(fan_out(10, 8)));
    add("fragment fan-out", "31 levels of 8 (saturates)", query(fan_out(31, 8)));
    add("fragment fan-out", "5 levels of 4 (1,024 fields)", query(fan_out(5, 4)));
    add("fragment fan-out", "2 levels of 40 (1,600 fields)", query(fan_out(2, 40)));
    let chain = |n: usize| {
        let mut text = format!("query {{ ...C{n} }}\nfragment C0 on Query {{ __typename }}\n");
        for i in 1..=n {
            text.push_str(&format!("fragment C{i} on Query {{ ...C{} __typename }}\n", i - 1));
        }
        text
    };
    add("fragment depth", "31 fragments in a chain", query(chain(31)));
    add("fragment depth", "5,000 fragments in a chain", query(chain(5_000)));
    let ring = "query { ...A } fragment A on Query { ...B ...B ...B ...B } fragment B on Query { ...A ...A ...A ...A }";
    add("fragment depth", "a ring of two, each spread four times", query(ring.into()));
    // Nesting.
    add("nesting", "200,000 brackets", query(format!("{{ me(x: {}) }}", "[".repeat(200_000))));
    let deep = |n: usize| format!("{{ {}tenantId{} }}", "me { ".repeat(n), " }".repeat(n));
    add("nesting", "40 selection sets", query(deep(40)));
    // Aliases: the most, each the heaviest page the complexity allows.
    add("aliases", "30 aliased pages of 100 volumes", query(pages(tenant)));
    let fields = "id name description region kind sizeGiB observedSizeGiB state desiredState message device \
        createdAt readyAt deleteWithInstance filesystem networkId";
    let whole =
        format!("{{ providerVolumes(tenantId: \"{tenant}\", first: 1000) {{ edges {{ node {{ {fields} }} }} }} }}");
    add("complexity", "1,000 volumes with 16 fields each", query(whole));
    add("aliases", "12,000 aliases", query(format!("{{ {} }}", fill("x: __typename ", BODY - 64))));
    // Directives.
    add(
        "directives",
        "2,400 directives on one field",
        query(format!("{{ __typename {} }}", "@include(if: true) ".repeat(2_400))),
    );
    add("directives", "14,000 directives", query(format!("{{ __typename {} }}", fill("@skip(if: false) ", BODY - 64))));
    // Long strings.
    let long = "y".repeat(BODY - 200);
    add("long strings", "a 256 KiB argument", query(format!("{{ tenant(id: \"{long}\") {{ id }} }}")));
    let spread_long =
        format!("query {{ ...S ...S }} fragment S on Query {{ tenant(id: \"{}\") {{ id }} }}", "z".repeat(64 * 2_000));
    add("long strings", "a 128 KiB argument in a fragment spread twice", query(spread_long));
    // Variables: as deep as JSON is parsed, and as wide as the body holds.
    let mut deep_value = json!(1);
    for _ in 0..120 {
        deep_value = json!([deep_value]);
    }
    add(
        "variables",
        "a variable 120 lists deep",
        json!({ "query": "query($v: [ID!]) { nodes(ids: $v) { id } }", "variables": { "v": deep_value } }),
    );
    let ids: Vec<String> = (0..(BODY / 36)).map(|i| format!("pvol_01jz{i:022}")).collect();
    add(
        "variables",
        "7,000 ids in one variable",
        json!({ "query": "query($v: [ID!]!) { nodes(ids: $v) { id } }", "variables": { "v": ids } }),
    );
    let hundred: Vec<String> = (0..100).map(|i| format!("pvol_01jz{i:022}")).collect();
    add(
        "variables",
        "100 ids, read",
        json!({ "query": "query($v: [ID!]!) { nodes(ids: $v) { id ... on ProviderVolume { name state } } }", "variables": { "v": hundred } }),
    );
    // Operations: many in one document, and batches of the worst admitted.
    let named = |n: usize| (0..n).map(|i| format!("query Q{i} {{ __typename }} ")).collect::<String>();
    add("operations", "9,000 operations in one document", json!({ "query": named(9_000), "operationName": "Q7" }));
    add("operations", "4,000 operations (admitted)", json!({ "query": named(4_000), "operationName": "Q7" }));
    let batch: Vec<Value> = (0..10).map(|_| query(pages(tenant))).collect();
    add("batches", "10 operations of 30 pages", Value::Array(batch));
    let bombs: Vec<Value> = (0..10).map(|_| query(fan_out(10, 8))).collect();
    add("batches", "10 fragment bombs", Value::Array(bombs));
    // Introspection: the standard query's shape, and the heaviest the bounds let through.
    let full = "query { __schema { types { name kind fields { name args { name type { name kind ofType { name kind ofType { name } } } } type { name kind ofType { name kind ofType { name } } } } inputFields { name } enumValues { name } interfaces { name } possibleTypes { name } } directives { name args { name } } } }";
    add("introspection", "the whole schema", query(full.into()));
    let repeats = format!("{{ __schema {{ types {{ fields {{ {} }} }} }} }}", "name ".repeat(4_900));
    add("introspection", "a field repeated 4,900 times under two lists", query(repeats));
    let most = format!(
        "{{ __schema {{ types {{ fields {{ {} args {{ {} }} }} }} }} }}",
        "name ".repeat(15),
        "name ".repeat(16)
    );
    add("introspection", "16 fields at each of three lists (the most admitted)", query(most));
    let aliased: String =
        (0..5).map(|i| format!("t{i}: types {{ name fields {{ name args {{ name type {{ name }} }} }} }} ")).collect();
    add("introspection", "the whole schema five times (refused)", query(format!("{{ __schema {{ {aliased} }} }}")));
    let most: String =
        (0..4).map(|i| format!("t{i}: types {{ name fields {{ name args {{ name type {{ name }} }} }} }} ")).collect();
    add(
        "introspection",
        "the whole schema four times (the most admitted)",
        query(format!("{{ __schema {{ {most} types {{ name }} }} }}")),
    );
    all
}

/// CPU nanoseconds every thread of process `pid` has run so far.
fn cpu_ns(pid: u32) -> BenchResult<u64> {
    let mut total = 0u64;
    for task in std::fs::read_dir(format!("/proc/{pid}/task")).map_err(|e| e.to_string())?.flatten() {
        let stat = std::fs::read_to_string(task.path().join("schedstat")).unwrap_or_default();
        total += stat.split_whitespace().next().and_then(|n| n.parse::<u64>().ok()).unwrap_or(0);
    }
    Ok(total)
}

/// Posts `body`; what came back: `answered`, or the first error's code.
async fn post(client: &Client, token: Option<&str>, body: &Value) -> BenchResult<String> {
    let mut request = client.http.post(format!("http://{}/graphql", client.addr)).json(body);
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    let response = request.send().await.map_err(|e| e.to_string())?;
    let status = response.status().as_u16();
    let answer: Value = response.json().await.unwrap_or(Value::Null);
    let first =
        if answer.is_array() { &answer[answer.as_array().map_or(0, |a| a.len().saturating_sub(1))] } else { &answer };
    Ok(match first["errors"][0]["extensions"]["code"].as_str() {
        Some(code) => code.to_owned(),
        None if status == 200 => "answered".into(),
        None => status.to_string(),
    })
}

/// The server's CPU per request of `attack`, as `token` sends it, in ms, and how it was answered.
async fn cost(server: &Server, token: Option<&str>, attack: &Attack) -> BenchResult<(f64, String)> {
    let answer = post(&server.client, token, &attack.body).await?; // warm: cached, its pages read
    let pid = server.pid()?;
    let before = cpu_ns(pid)?;
    for _ in 0..SENDS {
        post(&server.client, token, &attack.body).await?;
    }
    Ok(((cpu_ns(pid)? - before) as f64 / SENDS as f64 / 1e6, answer))
}

/// One WebSocket sending 100 queries of 30 pages each, as `token`: CPU per operation, in ms.
async fn socket_cost(server: &Server, token: &str, tenant: &str) -> BenchResult<f64> {
    let mut ws = super::Subscriber::connect(&server.client, token).await?;
    let pid = server.pid()?;
    let before = cpu_ns(pid)?;
    for id in 0..100 {
        let message = json!({ "id": id.to_string(), "type": "subscribe", "payload": { "query": pages(tenant) } });
        ws.ws.send(Message::text(message.to_string())).await.map_err(|e| e.to_string())?;
    }
    // Each is answered, then completed.
    let mut completed = 0;
    while completed < 100 {
        match tokio::time::timeout(Duration::from_secs(30), ws.ws.next()).await {
            Ok(Some(Ok(Message::Text(text)))) if text.contains("\"complete\"") => completed += 1,
            Ok(Some(Ok(_))) => {}
            _ => return Err(format!("{completed} of 100 operations over one socket completed")),
        }
    }
    Ok((cpu_ns(pid)? - before) as f64 / 100.0 / 1e6)
}

pub async fn figures(url: &str) -> BenchResult<()> {
    // No budget: every request is measured whole, not answered 429 once spent.
    let server = Server::start_with(url, &["--rate-limit", "1000000000", "--reconcile-workers", "0"]).await?;
    let client = &server.client;
    // A tenant with 1,000 volumes: the pages the heaviest admitted documents read are full.
    let (tenant, pool) = super::volumes::tenant_with_pool(client, "http://127.0.0.1:9", "bench-hostile").await?;
    for n in 0..1_000 {
        let input = json!({ "tenantId": tenant, "poolId": pool, "name": format!("v{n}"), "region": "nyc3",
            "sizeGiB": 1, "idempotencyKey": format!("v{n}") });
        client
            .gql(
                "mutation($i: ProviderVolumeCreateInput!) { providerVolumeCreate(input: $i) { id } }",
                json!({ "i": input }),
            )
            .await?;
    }
    let token = client.tenant_token(&tenant).await?;
    let attacks = attacks(&tenant);
    println!(
        "hostile: {} documents in {} families, each sent {SENDS} times without and with a token",
        attacks.len(),
        {
            let mut families: Vec<&str> = attacks.iter().map(|a| a.family).collect();
            families.dedup();
            families.len()
        }
    );
    let mut worst: Vec<(&'static str, f64, String)> = Vec::new();
    for attack in &attacks {
        let size = attack.body.to_string().len();
        for (who, token) in [("anonymous", None), ("token", Some(token.as_str()))] {
            let (ms, answer) = cost(&server, token, attack).await?;
            println!(
                "  {:<17} {:<47} {:>7} B  {who:<9} {answer:<15} {ms:>8.3} ms CPU",
                attack.family, attack.what, size
            );
            match worst.iter_mut().find(|(family, _, _)| *family == attack.family) {
                Some(entry) if entry.1 >= ms => {}
                Some(entry) => *entry = (attack.family, ms, format!("{} ({who})", attack.what)),
                None => worst.push((attack.family, ms, format!("{} ({who})", attack.what))),
            }
        }
    }
    let socket = socket_cost(&server, &token, &tenant).await?;
    worst.push(("socket operations", socket, "100 queries of 30 pages on one socket".into()));
    for (family, ms, what) in &worst {
        println!(
            "hostile: {family}: worst {ms:.2} ms CPU (target ≤ {TARGET_MS}) {}: {what}",
            verdict(*ms <= TARGET_MS)
        );
    }
    let p99 = healthz_under_attack(&server, &attacks, &token).await?;
    println!("hostile: /healthz p99 {p99:.1} ms while 8 clients send them (target ≤ 50) {}", verdict(p99 <= 50.0));
    drop(server);
    throttle(url).await
}

/// `/healthz` latency, p99 in ms, while 8 clients send every attack in turn for 10 s.
async fn healthz_under_attack(server: &Server, attacks: &[Attack], token: &str) -> BenchResult<f64> {
    let stop = Arc::new(AtomicBool::new(false));
    let bodies: Arc<Vec<Value>> = Arc::new(attacks.iter().map(|a| a.body.clone()).collect());
    let mut senders = Vec::new();
    for n in 0..8 {
        let (client, stop, bodies, token) = (server.client.clone(), stop.clone(), bodies.clone(), token.to_owned());
        senders.push(tokio::spawn(async move {
            let mut i = n;
            while !stop.load(Ordering::Relaxed) {
                let token = (i % 2 == 0).then_some(token.as_str());
                let _ = post(&client, token, &bodies[i % bodies.len()]).await;
                i += 1;
            }
        }));
    }
    let mut latencies = Vec::new();
    let started = Instant::now();
    let health = reqwest::Client::new();
    while started.elapsed() < Duration::from_secs(10) {
        let asked = Instant::now();
        let answered = health.get(format!("http://{}/healthz", server.client.addr)).send().await;
        if answered.is_ok_and(|r| r.status().is_success()) {
            latencies.push(asked.elapsed().as_secs_f64() * 1000.0);
        } else {
            latencies.push(f64::INFINITY);
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    stop.store(true, Ordering::Relaxed);
    for sender in senders {
        let _ = sender.await;
    }
    latencies.sort_by(f64::total_cmp);
    Ok(latencies[((latencies.len() as f64 - 1.0) * 0.99) as usize])
}

/// The default budget, met by one tenant token sending as fast as 8 connections can.
async fn throttle(url: &str) -> BenchResult<()> {
    let server = Server::start_with(url, &["--reconcile-workers", "0"]).await?;
    server.client.ensure_tenant("bench-throttle").await?;
    let token = server.client.tenant_token("bench-throttle").await?;
    let started = Instant::now();
    let accepted = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let refused = Arc::new(AtomicBool::new(false));
    let mut senders = Vec::new();
    for _ in 0..8 {
        let (client, token, accepted, refused) =
            (server.client.clone(), token.clone(), accepted.clone(), refused.clone());
        senders.push(tokio::spawn(async move {
            let body = json!({ "query": "{ __typename }" });
            while !refused.load(Ordering::Relaxed) {
                match post(&client, Some(&token), &body).await {
                    Ok(code) if code == "LIMIT_EXCEEDED" => refused.store(true, Ordering::Relaxed),
                    Ok(_) => {
                        accepted.fetch_add(1, Ordering::Relaxed);
                    }
                    Err(_) => return,
                }
            }
        }));
    }
    for sender in senders {
        let _ = sender.await;
    }
    let accepted = accepted.load(Ordering::Relaxed);
    println!(
        "rate limit: a tenant token is throttled past its budget of {} requests a minute (the first 429 after {accepted} accepted, {:.1} s); operators are exempt",
        crate::config::LoadArgs::default().rate_limit,
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_attack_fits_under_the_body_limit() {
        for attack in attacks("bench-hostile-01jz0000000000000000000000") {
            let size = attack.body.to_string().len();
            assert!(size <= BODY, "{} / {}: {size} bytes", attack.family, attack.what);
        }
    }
}
