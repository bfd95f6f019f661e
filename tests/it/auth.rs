//! Authentication and authorization over HTTP: no token, bad token, revoked token, foreign
//! tenant, missing grant, project-scoped grant, operator surface.
use crate::common;

use common::{ADMIN, Backend, TestServer};
use serde_json::json;

const ME: &str = "{ me { tenantId operator } }";
const POOLS: &str = "query($t: String!) { pools(tenantId: $t) { id } }";
const QUOTAS: &str = "query($t: String!) { quotas(tenantId: $t) { resource max used } }";
const PROJECTS: &str = "query($t: String!) { projects(tenantId: $t) { id name } }";

db_test!(request_without_token_is_unauthenticated, |backend: Backend| async move {
    let server = TestServer::start(backend).await;
    assert_eq!(server.code(None, ME, json!({})).await, "UNAUTHENTICATED");
    // The schema itself stays readable without a token (GraphiQL's docs need it).
    let body = server.gql(None, "{ __schema { queryType { name } } }", json!({})).await;
    assert_eq!(body["data"]["__schema"]["queryType"]["name"], "Query");
});

db_test!(unknown_token_is_unauthenticated, |backend: Backend| async move {
    let server = TestServer::start(backend).await;
    assert_eq!(server.code(Some("vpsg_not-a-token"), ME, json!({})).await, "UNAUTHENTICATED");
});

db_test!(revoked_token_is_unauthenticated, |backend: Backend| async move {
    let server = TestServer::start(backend).await;
    server.tenant("acme").await;
    let issued = server
        .ok(
            Some(ADMIN),
            "mutation { tokenIssue(input: { tenantId: \"acme\", grants: [{ permission: \"compute:*\", scope: \"tenant/acme\" }] }) { secret token { id } } }",
            json!({}),
        )
        .await;
    let secret = issued["tokenIssue"]["secret"].as_str().unwrap();
    let token_id = issued["tokenIssue"]["token"]["id"].as_str().unwrap();
    assert_eq!(server.ok(Some(secret), ME, json!({})).await["me"]["tenantId"], "acme");
    let revoked = server
        .ok(
            Some(ADMIN),
            "mutation($id: String!) { tokenRevoke(input: { tokenId: $id }) { revokedAt } }",
            json!({ "id": token_id }),
        )
        .await;
    assert!(revoked["tokenRevoke"]["revokedAt"].is_string());
    assert_eq!(server.code(Some(secret), ME, json!({})).await, "UNAUTHENTICATED");
});

db_test!(token_secret_is_stored_only_as_a_hash, |backend: Backend| async move {
    use sea_orm::EntityTrait;
    let server = TestServer::start(backend).await;
    server.tenant("acme").await;
    let secret = server.token(Some("acme"), &[("compute:*", "tenant/acme")]).await;
    let rows = vps_graph::store::entity::api_token::Entity::find().all(&server.app.services.db).await.unwrap();
    assert_eq!(rows.len(), 1);
    assert_ne!(rows[0].secret_hash, secret);
    assert!(!rows[0].secret_hash.contains(&secret[5..]));
    assert_eq!(rows[0].secret_hash, vps_graph::service::tokens::hash_secret(&secret));
});

db_test!(foreign_tenant_is_not_found, |backend: Backend| async move {
    let server = TestServer::start(backend).await;
    server.tenant("acme").await;
    server.tenant("other").await;
    let project = server.project("other", "web").await;
    let acme = server.token(Some("acme"), &[("*", "tenant/acme")]).await;
    assert_eq!(server.code(Some(&acme), POOLS, json!({ "t": "other" })).await, "NOT_FOUND");
    assert_eq!(server.code(Some(&acme), QUOTAS, json!({ "t": "other" })).await, "NOT_FOUND");
    let get = "query($t: String!, $p: String!) { project(tenantId: $t, projectId: $p) { id } }";
    assert_eq!(server.code(Some(&acme), get, json!({ "t": "other", "p": project })).await, "NOT_FOUND");
    // Asking for it under one's own tenant does not find it either.
    assert_eq!(server.code(Some(&acme), get, json!({ "t": "acme", "p": project })).await, "NOT_FOUND");
});

db_test!(missing_grant_is_access_denied, |backend: Backend| async move {
    let server = TestServer::start(backend).await;
    server.tenant("acme").await;
    let reader = server.token(Some("acme"), &[("compute:volumes:read", "tenant/acme")]).await;
    let body = server.gql(Some(&reader), POOLS, json!({ "t": "acme" })).await;
    assert_eq!(body["errors"][0]["extensions"]["code"], "ACCESS_DENIED");
    assert_eq!(body["errors"][0]["extensions"]["details"]["permission"], "compute:pools:read");
    assert!(body["data"].is_null());
});

db_test!(project_scoped_grant_sees_only_its_project, |backend: Backend| async move {
    let server = TestServer::start(backend).await;
    server.tenant("acme").await;
    let web = server.project("acme", "web").await;
    let db = server.project("acme", "db").await;
    let scoped = server.token(Some("acme"), &[("compute:projects:read", &format!("project/{web}"))]).await;
    let listed = server.ok(Some(&scoped), PROJECTS, json!({ "t": "acme" })).await;
    let ids: Vec<&str> = listed["projects"].as_array().unwrap().iter().map(|p| p["id"].as_str().unwrap()).collect();
    assert_eq!(ids, vec![web.as_str()]);
    let get = "query($t: String!, $p: String!) { project(tenantId: $t, projectId: $p) { id } }";
    assert_eq!(server.code(Some(&scoped), get, json!({ "t": "acme", "p": db })).await, "ACCESS_DENIED");
    // A project grant is not a tenant grant.
    assert_eq!(server.code(Some(&scoped), POOLS, json!({ "t": "acme" })).await, "ACCESS_DENIED");
});

db_test!(operator_surface_needs_the_operator_grant, |backend: Backend| async move {
    let server = TestServer::start(backend).await;
    server.tenant("acme").await;
    let tenant_admin = server.token(Some("acme"), &[("*", "tenant/acme")]).await;
    for mutation in [
        "mutation { tenantCreate(input: { id: \"x\", name: \"x\" }) { id } }",
        "mutation { projectCreate(input: { tenantId: \"acme\", name: \"x\" }) { id } }",
        "mutation { tokenIssue(input: { tenantId: \"acme\", grants: [{ permission: \"*\", scope: \"tenant/acme\" }] }) { secret } }",
        "mutation { providerAccountCreate(input: { name: \"x\", kind: AWS, credentialRef: \"env:X\", regions: [\"us-east-1\"], zones: [\"us-east-1a\"] }) { id } }",
    ] {
        assert_eq!(server.code(Some(&tenant_admin), mutation, json!({})).await, "ACCESS_DENIED", "{mutation}");
    }
    // An operator token issued through the API works like the static one.
    let operator = server.token(None, &[("*", "operator")]).await;
    let me = server.ok(Some(&operator), ME, json!({})).await;
    assert_eq!(me["me"]["operator"], true);
    server
        .ok(Some(&operator), "mutation { tenantCreate(input: { id: \"beta\", name: \"Beta\" }) { id } }", json!({}))
        .await;
});

db_test!(tenant_token_grants_stay_inside_the_tenant, |backend: Backend| async move {
    let server = TestServer::start(backend).await;
    server.tenant("acme").await;
    server.tenant("other").await;
    let other_project = server.project("other", "web").await;
    let issue = "mutation($i: TokenIssueInput!) { tokenIssue(input: $i) { secret } }";
    for (tenant, scope) in [
        (Some("acme"), "tenant/other".to_owned()),
        (Some("acme"), format!("project/{other_project}")),
        (Some("acme"), "operator".to_owned()),
        (None, "tenant/acme".to_owned()),
        (Some("acme"), "spaceship/1".to_owned()),
        (None, "operator:narrow".to_owned()),
    ] {
        let input = json!({ "i": { "tenantId": tenant, "grants": [{ "permission": "*", "scope": scope }] } });
        assert_eq!(server.code(Some(ADMIN), issue, input).await, "INVALID_INPUT", "{tenant:?} {scope}");
    }
});

db_test!(pools_and_quotas_are_read_by_the_tenant, |backend: Backend| async move {
    let server = TestServer::start(backend).await;
    server.tenant("acme").await;
    let pool = server.pool("main").await;
    server
        .offer_exactly(
            &pool,
            "acme",
            json!([{ "resource": "diskGiB", "max": 100 }, { "resource": "addresses", "max": 2 }]),
        )
        .await;
    let token = server
        .token(Some("acme"), &[("compute:pools:read", "tenant/acme"), ("compute:quotas:read", "tenant/acme")])
        .await;
    let pools =
        server.ok(Some(&token), "{ pools(tenantId: \"acme\") { id billing providerKind regions } }", json!({})).await;
    assert_eq!(
        pools["pools"],
        json!([{ "id": pool, "billing": "METERED", "providerKind": "DIGITALOCEAN", "regions": ["nyc3"] }])
    );
    let quotas = server
        .ok(
            Some(&token),
            "query($p: String) { quotas(tenantId: \"acme\", poolId: $p) { resource max used } }",
            json!({ "p": pool }),
        )
        .await;
    assert_eq!(
        quotas["quotas"],
        json!([{ "resource": "addresses", "max": 2, "used": 0 }, { "resource": "diskGiB", "max": 100, "used": 0 }])
    );
    let set = "mutation($i: QuotaSetInput!) { quotaSet(input: $i) { max } }";
    let input = json!({ "i": { "tenantId": "acme", "poolId": pool, "resource": "diskGiB", "max": 500 } });
    assert_eq!(server.ok(Some(ADMIN), set, input).await["quotaSet"]["max"], 500);
});

db_test!(quota_set_on_a_pool_not_offered_is_invalid_state, |backend: Backend| async move {
    let server = TestServer::start(backend).await;
    server.tenant("acme").await;
    let pool = server.pool("main").await;
    let set = "mutation($i: QuotaSetInput!) { quotaSet(input: $i) { max } }";
    let input = json!({ "i": { "tenantId": "acme", "poolId": pool, "resource": "diskGiB", "max": 5 } });
    assert_eq!(server.code(Some(ADMIN), set, input).await, "INVALID_STATE");
});

db_test!(provider_account_never_returns_its_credential, |backend: Backend| async move {
    let server = TestServer::start(backend).await;
    let body = server
        .gql(
            Some(ADMIN),
            "mutation { providerAccountCreate(input: { name: \"main\", kind: DIGITALOCEAN, credentialRef: \"env:DO_SECRET_VAR\", regions: [\"nyc3\"] }) { id apiUrl } }",
            json!({}),
        )
        .await;
    assert!(body["errors"].is_null(), "{body}");
    assert_eq!(body["data"]["providerAccountCreate"]["apiUrl"], "https://api.digitalocean.com");
    let sdl = vps_graph::graphql::sdl();
    assert!(
        !sdl.contains("credentialRef:")
            || !sdl.split("type ProviderAccount ").nth(1).unwrap().split('}').next().unwrap().contains("credential")
    );
    let events = server.ok(Some(ADMIN), "{ events(first: 10) { edges { node { type data } } } }", json!({})).await;
    assert!(!events.to_string().contains("DO_SECRET_VAR"), "credential reference leaked into the feed");
    // A plain secret is refused: only a reference is accepted.
    let refused = "mutation { providerAccountCreate(input: { name: \"b\", kind: DIGITALOCEAN, credentialRef: \"dop_v1_abc\", regions: [\"nyc3\"] }) { id } }";
    assert_eq!(server.code(Some(ADMIN), refused, json!({})).await, "INVALID_INPUT");
});

db_test!(refused_operator_call_writes_nothing, |backend: Backend| async move {
    let server = TestServer::start(backend).await;
    server.tenant("acme").await;
    // On PostgreSQL the feed shows a commit once every older transaction of the cluster is done:
    // wait for the tenant's event before taking the picture.
    let mut before = json!(null);
    for _ in 0..200 {
        before = server.ok(Some(ADMIN), "{ events(first: 1000) { edges { cursor } } }", json!({})).await;
        if before["events"]["edges"].as_array().is_some_and(|e| !e.is_empty()) {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(25)).await;
    }
    let project = "mutation($i: ProjectCreateInput!) { projectCreate(input: $i) { id } }";
    assert_eq!(
        server.code(Some(ADMIN), project, json!({ "i": { "tenantId": "acme", "name": "Bad Name" } })).await,
        "INVALID_INPUT"
    );
    assert_eq!(
        server.code(Some(ADMIN), project, json!({ "i": { "tenantId": "nobody", "name": "ok" } })).await,
        "NOT_FOUND"
    );
    let after = server.ok(Some(ADMIN), "{ events(first: 1000) { edges { cursor } } }", json!({})).await;
    assert_eq!(before, after);
    let projects = server.ok(Some(ADMIN), "{ projects(tenantId: \"acme\") { id } }", json!({})).await;
    assert_eq!(projects["projects"], json!([]));
});

db_test!(operator_scope_takes_only_the_full_permission, |backend: Backend| async move {
    let server = TestServer::start(backend).await;
    let issue = "mutation($i: TokenIssueInput!) { tokenIssue(input: $i) { secret } }";
    let narrow = json!({ "i": { "grants": [{ "permission": "compute:events:read", "scope": "operator" }] } });
    assert_eq!(server.code(Some(ADMIN), issue, narrow).await, "INVALID_INPUT");
});

db_test!(refused_inputs_write_nothing, |backend: Backend| async move {
    let server = TestServer::start(backend).await;
    server.tenant("acme").await;
    for mutation in [
        "mutation { tenantCreate(input: { id: \"acme\", name: \"dup\" }) { id } }",
        "mutation { tenantCreate(input: { id: \"ok\", name: \" \" }) { id } }",
        "mutation { providerAccountCreate(input: { name: \"Bad\", kind: AWS, credentialRef: \"env:X\", regions: [\"us-east-1\"], zones: [\"us-east-1a\"] }) { id } }",
        "mutation { providerAccountCreate(input: { name: \"aws\", kind: AWS, credentialRef: \"env:X\", regions: [\"us-east-1\"] }) { id } }",
        "mutation { providerAccountCreate(input: { name: \"byo\", kind: DIGITALOCEAN, credentialRef: \"env:X\", regions: [\"nyc3\"], tenantId: \"nobody\" }) { id } }",
        "mutation { poolCreate(input: { name: \"p\", providerAccountId: \"pacct_01jz00000000000000000000000\", billing: METERED }) { id } }",
        "mutation { tokenIssue(input: { tenantId: \"acme\", grants: [] }) { secret } }",
    ] {
        let body = server.gql(Some(ADMIN), mutation, json!({})).await;
        assert!(body["errors"][0]["extensions"]["code"].is_string(), "{mutation}: {body}");
    }
    // A known event after the refusals: once it is handed out, so is anything written before it
    // (on PostgreSQL the feed waits for older transactions anywhere on the cluster).
    let marker = server.project("acme", "marker").await;
    let mut written = Vec::new();
    for _ in 0..200 {
        let events =
            server.ok(Some(ADMIN), "{ events(first: 1000) { edges { node { type subject } } } }", json!({})).await;
        written = events["events"]["edges"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| format!("{} {}", e["node"]["type"].as_str().unwrap(), e["node"]["subject"].as_str().unwrap()))
            .collect();
        if written.last().is_some_and(|last| last.ends_with(&marker)) {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    let expected = vec!["tenant.created acme".to_owned(), format!("project.created {marker}")];
    assert_eq!(written, expected, "only the setup and the marker wrote anything");
});

db_test!(byo_pool_rules, |backend: Backend| async move {
    let server = TestServer::start(backend).await;
    server.tenant("acme").await;
    server.tenant("other").await;
    let account = server
        .ok(Some(ADMIN), "mutation { providerAccountCreate(input: { name: \"acme-own\", kind: DIGITALOCEAN, credentialRef: \"env:ACME_DO\", regions: [\"nyc3\"], tenantId: \"acme\" }) { id tenantId } }", json!({}))
        .await;
    let account_id = account["providerAccountCreate"]["id"].as_str().unwrap();
    let create = "mutation($a: String!, $b: Billing!) { poolCreate(input: { name: \"acme-pool\", providerAccountId: $a, billing: $b }) { id billing } }";
    assert_eq!(
        server.code(Some(ADMIN), create, json!({ "a": account_id, "b": "METERED" })).await,
        "INVALID_INPUT",
        "a tenant's own account is BYO"
    );
    let pool = server.ok(Some(ADMIN), create, json!({ "a": account_id, "b": "BYO" })).await;
    let pool_id = pool["poolCreate"]["id"].as_str().unwrap();
    let offer = "mutation($p: String!, $t: String!) { poolOffer(input: { poolId: $p, tenantId: $t }) { tenantId } }";
    assert_eq!(server.code(Some(ADMIN), offer, json!({ "p": pool_id, "t": "other" })).await, "INVALID_INPUT");
    server.ok(Some(ADMIN), offer, json!({ "p": pool_id, "t": "acme" })).await;
});

db_test!(a_taken_tenant_id_project_account_or_pool_name_is_a_conflict_on_that_field, |backend: Backend| async move {
    let server = TestServer::start(backend).await;
    server.tenant("acme").await;
    server.project("acme", "web").await;
    server.pool("shared").await;
    let conflict = |body: serde_json::Value| {
        let error = &body["errors"][0];
        (error["extensions"]["code"].as_str().map(str::to_owned), error["extensions"]["details"]["field"].clone())
    };
    let tenant = server
        .gql(Some(ADMIN), "mutation { tenantCreate(input: { id: \"acme\", name: \"again\" }) { id } }", json!({}))
        .await;
    assert_eq!(conflict(tenant), (Some("CONFLICT".into()), json!("id")), "tenant id");
    let project = server
        .gql(Some(ADMIN), "mutation { projectCreate(input: { tenantId: \"acme\", name: \"web\" }) { id } }", json!({}))
        .await;
    assert_eq!(conflict(project), (Some("CONFLICT".into()), json!("name")), "project name in the tenant");
    let account = server
        .gql(
            Some(ADMIN),
            "mutation { providerAccountCreate(input: { name: \"shared-account\", kind: DIGITALOCEAN, credentialRef: \"env:DO_TOKEN\", regions: [\"nyc3\"] }) { id } }",
            json!({}),
        )
        .await;
    assert_eq!(conflict(account), (Some("CONFLICT".into()), json!("name")), "account name");
    let accounts = server.ok(Some(ADMIN), "{ providerAccounts { id name } }", json!({})).await;
    let account_id = accounts["providerAccounts"][0]["id"].clone();
    let pool = server
        .gql(
            Some(ADMIN),
            "mutation($a: String!) { poolCreate(input: { name: \"shared\", providerAccountId: $a, billing: METERED }) { id } }",
            json!({ "a": account_id }),
        )
        .await;
    assert_eq!(conflict(pool), (Some("CONFLICT".into()), json!("name")), "pool name");
});
