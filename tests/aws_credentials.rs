//! Issue 14: an AWS account takes its credentials the way AWS tooling does on a host, through
//! the SDK's own providers: the standard environment variables, a profile of the shared files,
//! the instance metadata service, a web identity token exchanged at STS. Each is told apart at
//! the sim by the access key that signed the calls (EC2 signed by hand, EFS through the SDK).
//! One test, as it sets the process's environment.
#[path = "it/common/mod.rs"]
mod common;

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::routing::{get, put};
use common::{ADMIN, Backend, TestDb, TestServer};
use serde_json::json;
use vps_graph::metrics::Metrics;
use vps_graph::provider::aws::{Aws, Settings, ToolingSource};
use vps_graph::sim::{Sim, SimConfig};

const REGION: &str = "us-east-1";

/// Serves `app` on a loopback port; its base URL.
async fn serve(app: Router) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    url
}

/// An instance metadata service that hands out one role's credentials (IMDSv2: a session
/// token first).
async fn metadata_service() -> String {
    let credentials = json!({
        "Code": "Success", "LastUpdated": "2026-12-01T00:00:00Z", "Type": "AWS-HMAC",
        "AccessKeyId": "AKIAFROMMETADATA", "SecretAccessKey": "metadata-secret", "Token": "metadata-session",
        "Expiration": "2099-01-01T00:00:00Z",
    })
    .to_string();
    let app = Router::new()
        .route(
            "/latest/api/token",
            put(|| async { ([("x-aws-ec2-metadata-token-ttl-seconds", "21600")], "imds-session-token") }),
        )
        .route("/latest/meta-data/iam/security-credentials/", get(|| async { "vps-graph-role" }))
        .route("/latest/meta-data/iam/security-credentials-extended/", get(|| async { "vps-graph-role" }))
        .route("/latest/meta-data/iam/security-credentials/vps-graph-role", get(move || async move { credentials }))
        .route(
            "/latest/meta-data/iam/security-credentials-extended/vps-graph-role",
            get(|| async { (axum::http::StatusCode::NOT_FOUND, "") }),
        );
    serve(app).await
}

/// STS answering AssumeRoleWithWebIdentity with one role's credentials, once it was given the
/// token the file holds.
async fn security_token_service() -> String {
    let answer = r#"<AssumeRoleWithWebIdentityResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/"><AssumeRoleWithWebIdentityResult><Credentials><AccessKeyId>AKIAFROMWEBIDENTITY</AccessKeyId><SecretAccessKey>web-secret</SecretAccessKey><SessionToken>web-session</SessionToken><Expiration>2099-01-01T00:00:00Z</Expiration></Credentials><AssumedRoleUser><Arn>arn:aws:sts::123456789012:assumed-role/vps-graph/s</Arn><AssumedRoleId>AROA:s</AssumedRoleId></AssumedRoleUser></AssumeRoleWithWebIdentityResult><ResponseMetadata><RequestId>r</RequestId></ResponseMetadata></AssumeRoleWithWebIdentityResponse>"#;
    let app = Router::new().route(
        "/",
        axum::routing::post(move |body: String| async move {
            match body.contains("Action=AssumeRoleWithWebIdentity") && body.contains("WebIdentityToken=the-jwt") {
                true => (axum::http::StatusCode::OK, [("content-type", "text/xml")], answer.to_owned()),
                false => (axum::http::StatusCode::BAD_REQUEST, [("content-type", "text/xml")], body),
            }
        }),
    );
    serve(app).await
}

/// Makes one EC2 call and one EFS call with `source`; the access key the sim saw sign both.
async fn signed_by(sim: &Sim, url: &str, source: ToolingSource, key: &str) {
    let settings =
        Settings { timeout: Duration::from_secs(5), max_attempts: 2, initial_backoff: Duration::from_millis(5) };
    let aws = Aws::from_tooling(Some(url.to_owned()), source.clone(), settings, Arc::new(Metrics::default()));
    let before = sim.name_calls("aws.access-key", key);
    aws.vpcs_find_by_name(REGION, "bc-none").await.unwrap_or_else(|e| panic!("{source:?}: EC2: {e:?}"));
    aws.efs_find_by_token(REGION, "bc-none").await.unwrap_or_else(|e| panic!("{source:?}: EFS: {e:?}"));
    assert_eq!(sim.name_calls("aws.access-key", key) - before, 2, "{source:?} signed with {key}");
}

#[tokio::test]
async fn an_aws_account_takes_credentials_from_the_environment_a_profile_or_instance_metadata() {
    vps_graph::init_crypto();
    let (sim, url) = Sim::spawn_local(SimConfig::default()).await.unwrap();
    let dir = std::env::temp_dir().join(format!("vps-graph-aws-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let shared = dir.join("credentials");
    std::fs::write(
        &shared,
        "[default]\naws_access_key_id = AKIADEFAULTPROFILE\naws_secret_access_key = d\n\n[ci]\naws_access_key_id = AKIACIPROFILE\naws_secret_access_key = c\n",
    )
    .unwrap();
    let metadata = metadata_service().await;
    let sts = security_token_service().await;
    let token_file = dir.join("token");
    std::fs::write(&token_file, "the-jwt").unwrap();
    // SAFETY: set before anything else of this test process reads the environment, and this
    // file holds this one test.
    unsafe {
        std::env::set_var("AWS_ACCESS_KEY_ID", "AKIAFROMENVIRONMENT");
        std::env::set_var("AWS_SECRET_ACCESS_KEY", "environment-secret");
        std::env::set_var("AWS_SESSION_TOKEN", "environment-session");
        std::env::set_var("AWS_SHARED_CREDENTIALS_FILE", &shared);
        std::env::set_var("AWS_CONFIG_FILE", dir.join("no-config"));
        std::env::set_var("AWS_EC2_METADATA_SERVICE_ENDPOINT", &metadata);
        std::env::set_var("AWS_WEB_IDENTITY_TOKEN_FILE", &token_file);
        std::env::set_var("AWS_ROLE_ARN", "arn:aws:iam::123456789012:role/vps-graph");
        std::env::set_var("AWS_ROLE_SESSION_NAME", "vps-graph");
        std::env::set_var("AWS_ENDPOINT_URL_STS", &sts);
    }

    signed_by(&sim, &url, ToolingSource::Environment, "AKIAFROMENVIRONMENT").await;
    assert!(sim.name_calls("aws.session-token", "environment-session") >= 2, "the session token is sent");
    signed_by(&sim, &url, ToolingSource::Profile(None), "AKIADEFAULTPROFILE").await;
    signed_by(&sim, &url, ToolingSource::Profile(Some("ci".into())), "AKIACIPROFILE").await;
    signed_by(&sim, &url, ToolingSource::InstanceMetadata, "AKIAFROMMETADATA").await;
    assert!(sim.name_calls("aws.session-token", "metadata-session") >= 2);
    signed_by(&sim, &url, ToolingSource::WebIdentity, "AKIAFROMWEBIDENTITY").await;

    // A profile that is not there: the account is misconfigured, and nothing is sent.
    let settings = Settings::default();
    let missing = Aws::from_tooling(
        Some(url.clone()),
        ToolingSource::Profile(Some("nope".into())),
        settings,
        Arc::new(Metrics::default()),
    );
    let calls = sim.calls("ec2.DescribeVpcs");
    let err = missing.vpcs_find_by_name(REGION, "bc-none").await.unwrap_err();
    assert!(matches!(err, vps_graph::provider::ProviderError::Misconfigured { .. }), "{err:?}");
    assert_eq!(sim.calls("ec2.DescribeVpcs"), calls);

    // Through the API: an AWS account names its source; a DigitalOcean one cannot.
    let db = TestDb::new(Backend::Sqlite).await;
    let server = TestServer::with_config(common::config(&db.url)).await;
    let create = "mutation($i: ProviderAccountCreateInput!) { providerAccountCreate(input: $i) { id } }";
    let aws = json!({ "name": "host", "kind": "AWS", "apiUrl": url, "credentialRef": "aws:environment", "regions": [REGION], "zones": ["us-east-1a"] });
    server.ok(Some(ADMIN), create, json!({ "i": aws })).await;
    let digitalocean =
        json!({ "name": "do", "kind": "DIGITALOCEAN", "credentialRef": "aws:environment", "regions": ["nyc3"] });
    let refused = server.gql(Some(ADMIN), create, json!({ "i": digitalocean })).await;
    assert_eq!(common::first_code(&refused).as_deref(), Some("INVALID_INPUT"), "{refused}");
    assert_eq!(refused["errors"][0]["extensions"]["details"]["reason"], "awsOnly");
    let unknown = json!({ "name": "odd", "kind": "AWS", "credentialRef": "aws:sso", "regions": [REGION], "zones": ["us-east-1a"] });
    let refused = server.gql(Some(ADMIN), create, json!({ "i": unknown })).await;
    assert_eq!(common::first_code(&refused).as_deref(), Some("INVALID_INPUT"), "{refused}");
    let _ = std::fs::remove_dir_all(&dir);
}
