//! Secrets are never printed: a full run of the binary at debug level (the API with the static
//! operator token, a DigitalOcean account whose token is read from the environment, and a
//! network converged through it at a separate simulated cloud) leaves neither the operator token
//! nor the provider token in any log line of either process. Its access log names request ids.
use crate::common;

use std::io::Read;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use common::{free_port, gql_at as gql};
use serde_json::{Value, json};

const ADMIN: &str = "admin-token-never-in-a-log-7f3a9c";
const DO_TOKEN: &str = "dop_v1_provider-token-never-in-a-log-51be";

fn spawn(args: &[&str], data: &std::path::Path) -> Child {
    Command::new(env!("CARGO_BIN_EXE_vps-graph"))
        .args(args)
        .current_dir(data)
        .env("RUST_LOG", "trace")
        .env("VPSG_TEST_DO_TOKEN", DO_TOKEN)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

fn output(mut child: Child) -> String {
    let _ = child.kill();
    let _ = child.wait();
    let mut text = String::new();
    child.stdout.take().unwrap().read_to_string(&mut text).unwrap();
    child.stderr.take().unwrap().read_to_string(&mut text).unwrap();
    text
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_log_line_of_a_full_run_carries_the_operator_token_or_a_provider_token() {
    vps_graph::init_crypto();
    let data = std::env::temp_dir().join(format!("vps-graph-secrets-{}", std::process::id()));
    std::fs::create_dir_all(&data).unwrap();
    let (api_port, sim_port) = (free_port(), free_port());
    let sim = spawn(&["sim", "--listen", &format!("127.0.0.1:{sim_port}"), "--sim-action-ms", "50"], &data);
    let api_listen = format!("127.0.0.1:{api_port}");
    let server = spawn(
        &["serve", "--listen", &api_listen, "--admin-token", ADMIN, "--log-format", "json", "--feed-poll-ms", "100"],
        &data,
    );
    let (http, base) = (reqwest::Client::new(), format!("http://{api_listen}"));
    let account = gql(
        &http,
        &base,
        ADMIN,
        "mutation($i: ProviderAccountCreateInput!) { providerAccountCreate(input: $i) { id } }",
        json!({ "i": { "name": "real", "kind": "DIGITALOCEAN", "apiUrl": format!("http://127.0.0.1:{sim_port}"),
            "credentialRef": "env:VPSG_TEST_DO_TOKEN", "regions": ["nyc3"] } }),
    )
    .await;
    let account =
        account["data"]["providerAccountCreate"]["id"].as_str().unwrap_or_else(|| panic!("{account}")).to_owned();
    let pool = gql(
        &http,
        &base,
        ADMIN,
        "mutation($i: PoolCreateInput!) { poolCreate(input: $i) { id } }",
        json!({ "i": { "name": "real", "providerAccountId": account, "billing": "METERED" } }),
    )
    .await;
    let pool = pool["data"]["poolCreate"]["id"].as_str().unwrap().to_owned();
    gql(&http, &base, ADMIN, "mutation { tenantCreate(input: { id: \"acme\", name: \"Acme\" }) { id } }", json!({}))
        .await;
    gql(
        &http,
        &base,
        ADMIN,
        "mutation($i: PoolOfferInput!) { poolOffer(input: $i) { quotas { resource } } }",
        json!({ "i": { "poolId": pool, "tenantId": "acme", "quotas": [{ "resource": "networks", "max": 5 }] } }),
    )
    .await;
    let created = gql(
        &http,
        &base,
        ADMIN,
        "mutation($i: NetworkCreateInput!) { networkCreate(input: $i) { id } }",
        json!({ "i": { "tenantId": "acme", "poolId": pool, "name": "web", "idempotencyKey": "web-1",
            "subnets": [{ "region": "nyc3", "ipRange": "10.10.0.0/24" }] } }),
    )
    .await;
    let network = created["data"]["networkCreate"]["id"].as_str().unwrap_or_else(|| panic!("{created}")).to_owned();
    let mut state = Value::Null;
    for _ in 0..200 {
        let read = gql(
            &http,
            &base,
            ADMIN,
            "query($t: String!, $n: String!) { network(tenantId: $t, networkId: $n) { state } }",
            json!({ "t": "acme", "n": network }),
        )
        .await;
        state = read["data"]["network"]["state"].clone();
        if state == "READY" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(state, "READY", "the network converged through the provider token");
    // A wrong token is refused and logged as refused, without its text either.
    gql(&http, &base, &format!("{ADMIN}-wrong"), "{ me { tenantId } }", json!({})).await;
    // The access log line names the request id the client sent (and was answered with).
    let traced =
        http.get(format!("{base}/healthz")).header("x-request-id", "trace-in-the-log-42").send().await.unwrap();
    assert_eq!(traced.headers()["x-request-id"], "trace-in-the-log-42");
    let server_logs = output(server);
    let access =
        server_logs.lines().find(|l| l.contains("trace-in-the-log-42") && l.contains("finished processing request"));
    assert!(
        access.is_some_and(|l| l.contains("\"request_id\":\"trace-in-the-log-42\"")),
        "no access log line names it: {access:?}"
    );
    let logs = server_logs + &output(sim);
    let _ = std::fs::remove_dir_all(&data);
    assert!(logs.lines().count() > 20, "the run logged: {logs}");
    for secret in [ADMIN, DO_TOKEN] {
        let line = logs.lines().find(|l| l.contains(secret));
        assert!(line.is_none(), "a log line carries a secret: {line:?}");
    }
}
