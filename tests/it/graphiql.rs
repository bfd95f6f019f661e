//! GraphiQL served at `/` from the embedded playground build, loaded in headless Chromium with
//! every non-loopback host unresolvable: the page renders, runs a query with the token in its
//! headers, and shows the result; its Docs explorer and its query editor's autocompletion show
//! the schema. Skipped, with a message, only where Chromium is absent.
use crate::common;

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use common::{Backend, TestServer};

fn chromium() -> Option<String> {
    let path = std::env::var("CHROMIUM").unwrap_or_else(|_| "/usr/bin/chromium".into());
    Path::new(&path).exists().then_some(path)
}

fn node_works() -> bool {
    Command::new("node").arg("--version").output().is_ok_and(|o| o.status.success())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn graphiql_runs_a_query_offline_in_chromium() {
    let Some(chromium) = chromium() else {
        eprintln!(
            "SKIPPED: Chromium is not installed (apt-get install -y chromium); GraphiQL was not tested in a browser"
        );
        return;
    };
    assert!(node_works(), "Chromium is here but Node.js is not: it builds the playground and drives Chromium");
    let driver = Path::new(env!("CARGO_MANIFEST_DIR")).join("playground/tests/browser.mjs");
    assert!(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("playground/node_modules/playwright-core").exists(),
        "playground/node_modules is missing: the build (build.rs) installs it when Node.js is present"
    );
    let server = TestServer::start(Backend::Sqlite).await;
    let page = server.http.get(server.url("/")).send().await.unwrap().text().await.unwrap();
    assert!(!page.contains("loads from a CDN"), "the binary serves the CDN fallback: the playground build is missing");
    server.tenant("browser-tenant").await;
    let token = server.token(Some("browser-tenant"), &[("compute:*", "tenant/browser-tenant")]).await;
    let screenshot = std::env::temp_dir().join(format!("vps-graph-graphiql-{}.png", std::process::id()));
    // The driver saves one screenshot per step next to this one (`-docs.png`, `-autocomplete.png`).
    let shots = screenshot.with_extension("").display().to_string();
    let base = server.url("");
    let run = tokio::task::spawn_blocking(move || {
        Command::new("node")
            .arg(driver)
            .arg(base)
            .arg(token)
            .arg(&screenshot)
            .arg(common::ADMIN)
            .env("CHROMIUM", chromium)
            .output()
    });
    let output =
        tokio::time::timeout(Duration::from_secs(120), run).await.expect("browser run finished").unwrap().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "browser run failed: {stdout}\n{}", String::from_utf8_lossy(&output.stderr));
    let report: serde_json::Value = serde_json::from_str(stdout.lines().last().unwrap_or("")).expect("one JSON line");
    assert_eq!(report["ok"], true, "{report}");
    let result = report["result"].as_str().unwrap();
    assert!(result.contains("\"tenantId\": \"browser-tenant\""), "GraphiQL showed: {result}");
    // Docs and autocompletion both come from the schema GraphiQL introspects at start-up; when the
    // server refused that introspection query (it once hit the depth limit), queries still ran
    // but the Docs explorer stayed empty and the editor suggested nothing.
    let names = |key: &str| -> Vec<String> {
        let list = report[key].as_array().unwrap_or_else(|| panic!("no {key} list: {report}"));
        list.iter().map(|name| name.as_str().unwrap_or_default().to_owned()).collect()
    };
    assert_eq!(report["docs"], true, "{report}");
    let docs_fields = names("docsFields");
    assert!(
        docs_fields.iter().any(|name| name == "providerVolumes"),
        "the Docs explorer's Query type lacks providerVolumes: {docs_fields:?} (see {shots}-docs.png)"
    );
    // Typed inside `providerVolumes { edges { node { ... } } }`, so the editor must know the field's
    // type down to ProviderVolume, not merely the root fields.
    let completions = names("completions");
    assert!(
        completions.iter().any(|name| name == "attachments"),
        "no ProviderVolume field among the suggestions: {completions:?} (see {shots}-autocomplete.png)"
    );
    assert_eq!(report["kept"], true, "the headers outlive a reload, in the tab's session only: {report}");
    assert_eq!(
        report["subscription"]["made"].as_array().map(Vec::len),
        Some(2),
        "a new tab's subscription lists its events: {report} (see {shots}-subscription.png)"
    );
}
