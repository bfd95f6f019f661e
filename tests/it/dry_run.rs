//! `dryRun: true` on every mutation: the call runs whole and answers what it would return, with
//! its plan in `extensions.plan`, and records nothing. The table of every mutation is the
//! boundaries test's (`bases`), so a mutation added later is dry-run here too.
use crate::boundaries::{OPERATOR, World, bases, filled, tenant, world};
use crate::common;

use std::collections::BTreeMap;

use common::{ADMIN, Backend, TestServer};
use sea_orm::{DbBackend, FromQueryResult, JsonValue, Statement};
use serde_json::{Value, json};

/// Every row of every table, each written as text, by table: what a dry run must leave as it was.
async fn dump(server: &TestServer) -> BTreeMap<String, Vec<String>> {
    let db = &server.app.services.db;
    let backend = db.get_database_backend();
    let list = match backend {
        DbBackend::Postgres => "SELECT tablename AS name FROM pg_tables WHERE schemaname = 'public'",
        _ => "SELECT name FROM sqlite_master WHERE type = 'table'",
    };
    let tables = JsonValue::find_by_statement(Statement::from_string(backend, list)).all(db).await.unwrap();
    let mut dump = BTreeMap::new();
    for table in tables {
        let name = table["name"].as_str().unwrap().to_owned();
        let select = Statement::from_string(backend, format!("SELECT * FROM {name}"));
        let mut rows: Vec<String> =
            JsonValue::find_by_statement(select).all(db).await.unwrap().iter().map(Value::to_string).collect();
        rows.sort();
        dump.insert(name, rows);
    }
    dump
}

/// The mutations' inputs in an order that keeps most of them possible: the deletes last.
fn ordered() -> Vec<(&'static str, Value)> {
    let mut calls: Vec<(&'static str, Value)> =
        bases().into_iter().flat_map(|(m, inputs)| inputs.into_iter().map(move |i| (m, i))).collect();
    let last = |m: &str| m.ends_with("Delete") || m.ends_with("Revoke") || m.ends_with("Remove");
    calls.sort_by_key(|(m, _)| (last(m), *m == "networkDelete"));
    calls
}

/// A mutation's document asking every field of its answer that is a scalar (or a list of
/// them), and the answer's type.
async fn documents(server: &TestServer) -> BTreeMap<String, String> {
    let query = "{ __schema { mutationType { fields { name type { ...T } } }
        types { name fields { name args { name } type { ...T } } } } }
        fragment T on __Type { kind name ofType { kind name ofType { kind name ofType { kind name } } } }";
    let schema = server.ok(Some(ADMIN), query, json!({})).await["__schema"].clone();
    let leaf = |ty: &Value| {
        let mut ty = ty;
        while ty["name"].is_null() {
            ty = &ty["ofType"];
        }
        (ty["kind"] == "SCALAR" || ty["kind"] == "ENUM").then(|| ty["name"].as_str().unwrap().to_owned())
    };
    let named = |ty: &Value| {
        let mut ty = ty;
        while ty["name"].is_null() {
            ty = &ty["ofType"];
        }
        ty["name"].as_str().unwrap().to_owned()
    };
    let types: BTreeMap<String, Value> = schema["types"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| (t["name"].as_str().unwrap().to_owned(), t.clone()))
        .collect();
    let mut documents = BTreeMap::new();
    for field in schema["mutationType"]["fields"].as_array().unwrap() {
        let name = field["name"].as_str().unwrap();
        let answer = &types[&named(&field["type"])];
        let leaves: Vec<&str> = answer["fields"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|f| f["args"].as_array().unwrap().is_empty() && leaf(&f["type"]).is_some())
            .map(|f| f["name"].as_str().unwrap())
            .collect();
        let mut chars = name.chars();
        let input = chars.next().unwrap().to_ascii_uppercase().to_string() + chars.as_str() + "Input";
        documents.insert(
            name.to_owned(),
            format!("mutation($i: {input}!) {{ {name}(input: $i) {{ __typename {} }} }}", leaves.join(" ")),
        );
    }
    documents
}

/// An answer as it compares between a dry run and a real one: its own new id and the moments
/// it was made at differ between two calls, nothing else may.
fn comparable(answer: &Value) -> Value {
    let own = answer["id"].as_str().map(str::to_owned);
    fn walk(value: &Value, own: &Option<String>) -> Value {
        match value {
            Value::String(s) if Some(s) == own.as_ref() => json!("<its id>"),
            Value::Array(items) => Value::Array(items.iter().map(|v| walk(v, own)).collect()),
            Value::Object(fields) => Value::Object(
                fields
                    .iter()
                    .filter(|(k, _)| !k.ends_with("At") && *k != "secret" && *k != "providerName")
                    .map(|(k, v)| (k.clone(), walk(v, own)))
                    .collect(),
            ),
            other => other.clone(),
        }
    }
    walk(answer, &own)
}

async fn run(server: &TestServer, token: &str, document: &str, mut input: Value, dry_run: bool) -> Value {
    input["dryRun"] = json!(dry_run);
    server.gql(Some(token), document, json!({ "i": input })).await
}

db_test!(every_mutations_dry_run_agrees_with_its_real_run_and_changes_no_table, |backend: Backend| async move {
    // No reconciler runs: the tables change only by what the calls write.
    let db = common::TestDb::new(backend).await;
    let mut config = common::config(&db.url);
    config.runtime.workers = 0;
    let mut server = TestServer::with_config(config).await;
    server.keep(db);
    let (acme, globex) = (tenant(&server, "acme").await, tenant(&server, "other").await);
    let a = server.project("acme", "a").await;
    let c = server.project("other", "c").await;
    let own: World = world(&server, &acme, &a, true, 1).await;
    let stranger: World = world(&server, &globex, &c, true, 3).await;
    let documents = documents(&server).await;
    let calls = ordered();
    for mutation in documents.keys() {
        assert!(calls.iter().any(|(m, _)| m == mutation), "{mutation} has no input in boundaries::bases");
    }
    let (mut answered, mut refused) = (0, 0);
    for (mutation, base) in calls {
        let document = &documents[mutation];
        let token = if OPERATOR.contains(&mutation) { ADMIN } else { own.token.as_str() };
        let input = filled(&base, &own);
        // Another tenant's caller naming this tenant's ids: refused alike, dry or not.
        if !OPERATOR.contains(&mutation) {
            let before = dump(&server).await;
            let dry = run(&server, &stranger.token, document, input.clone(), true).await;
            let real = run(&server, &stranger.token, document, input.clone(), false).await;
            assert_eq!(before, dump(&server).await, "{mutation} by a stranger wrote: {dry} / {real}");
            assert_eq!(common::first_code(&dry), common::first_code(&real), "{mutation} by a stranger: {dry} / {real}");
            assert!(common::first_code(&dry).is_some(), "{mutation} by a stranger: {dry}");
        }
        let before = dump(&server).await;
        let dry = run(&server, token, document, input.clone(), true).await;
        assert_eq!(before, dump(&server).await, "the dry run of {mutation} changed a table: {dry}");
        let real = run(&server, token, document, input, false).await;
        match common::first_code(&real) {
            Some(code) => {
                refused += 1;
                assert_eq!(common::first_code(&dry).as_deref(), Some(code.as_str()), "{mutation}: {dry} / {real}");
                assert!(dry["extensions"]["plan"].is_null(), "a refused dry run has no plan: {dry}");
            }
            None => {
                answered += 1;
                assert!(dry["errors"].is_null(), "{mutation}'s dry run was refused, its real run not: {dry} / {real}");
                let (dry_answer, real_answer) = (&dry["data"][mutation], &real["data"][mutation]);
                assert_eq!(comparable(dry_answer), comparable(real_answer), "{mutation}'s answers differ");
                assert!(dry["extensions"]["plan"][mutation].is_object(), "{mutation}'s plan: {dry}");
                assert!(real["extensions"]["plan"].is_null(), "a real run has no plan: {real}");
            }
        }
    }
    eprintln!("{answered} mutations answered alike dry and real, {refused} refused alike");
    assert!(answered >= 25, "most calls of the table are possible: {answered} answered, {refused} refused");
});

local_app!(Setup);

impl Setup {
    async fn used(&self) -> i64 {
        let query = "{ quotas(tenantId: \"acme\") { resource used } }";
        let quotas = self.server.ok(Some(&self.token), query, json!({})).await["quotas"].clone();
        quotas.as_array().unwrap().iter().find(|q| q["resource"] == "diskGiB").unwrap()["used"].as_i64().unwrap()
    }
}

async fn setup(backend: Backend) -> Setup {
    common::TestApp::on_clock(backend)
        .quotas(json!([{ "resource": "diskGiB", "max": 2000 }]))
        .workers(0)
        .build()
        .await
        .into()
}

fn volume(size: i64, key: &str) -> Value {
    json!({ "tenantId": "acme", "poolId": "$pool", "name": key, "region": "nyc3", "sizeGiB": size,
        "idempotencyKey": key })
}

db_test!(
    a_volume_creates_dry_run_plans_its_quota_provider_call_meter_and_monthly_price,
    |backend: Backend| async move {
        let s = setup(backend).await;
        let card = json!({ "currency": "USD", "prices": [{ "meter": "vps.volume.gib.hours", "price": 0.000137 }] });
        let rates = "mutation($i: PoolRatesSetInput!) { poolRatesSet(input: $i) { id } }";
        s.server.ok(Some(ADMIN), rates, json!({ "i": { "poolId": s.pool, "rateCard": card } })).await;
        let mut input = volume(100, "pg-data");
        input["poolId"] = json!(s.pool);
        input["dryRun"] = json!(true);
        let dry = s.call("providerVolumeCreate", "id state sizeGiB", input.clone()).await;
        let answer = &dry["data"]["providerVolumeCreate"];
        assert_eq!((answer["state"].as_str(), answer["sizeGiB"].as_i64()), (Some("PENDING"), Some(100)), "{dry}");
        let id = answer["id"].as_str().unwrap();
        let plan = &dry["extensions"]["plan"]["providerVolumeCreate"];
        assert_eq!(
            plan["quota"],
            json!([{ "poolId": s.pool, "resource": "diskGiB", "heldBy": id, "before": 0, "after": 100, "max": 2000 }])
        );
        assert_eq!(
            plan["providerCalls"],
            json!([{ "provider": "digitalocean", "resourceId": id, "call": "POST /v2/volumes" }])
        );
        assert_eq!(
            plan["meters"],
            json!([{ "meter": "vps.volume.gib.hours", "resourceId": id, "poolId": s.pool, "quantity": 100.0 }])
        );
        assert_eq!(plan["events"], json!(["providerVolume.created"]));
        assert_eq!(plan["monthlyCost"], json!({ "amount": 10.001, "currency": "USD" }), "100 GiB × 0.000137 × 730 h");
        assert_eq!(s.used().await, 0, "nothing booked");
        let listed = s
            .server
            .ok(Some(&s.token), "{ providerVolumes(tenantId: \"acme\") { edges { cursor } } }", json!({}))
            .await;
        assert_eq!(listed["providerVolumes"]["edges"], json!([]), "nothing recorded");

        // The key was not recorded: the real call under it is a first call.
        input["dryRun"] = json!(false);
        let real = s.call("providerVolumeCreate", "id", input.clone()).await;
        let made = real["data"]["providerVolumeCreate"]["id"].as_str().unwrap().to_owned();
        assert_ne!(made, id, "a first call makes its own volume");
        assert_eq!(s.used().await, 100);
        // A dry run of the call made replays it: what it made, nothing booked or called again.
        input["dryRun"] = json!(true);
        let replay = s.call("providerVolumeCreate", "id", input).await;
        assert_eq!(replay["data"]["providerVolumeCreate"]["id"], json!(made));
        let plan = &replay["extensions"]["plan"]["providerVolumeCreate"];
        assert_eq!(
            (&plan["quota"], &plan["providerCalls"], &plan["events"]),
            (&json!([]), &json!([]), &json!([])),
            "{plan}"
        );
    }
);

db_test!(a_dry_run_that_would_not_fit_the_quota_is_refused_as_the_real_call_is, |backend: Backend| async move {
    let s = setup(backend).await;
    let mut input = volume(2001, "too-big");
    input["poolId"] = json!(s.pool);
    input["dryRun"] = json!(true);
    let dry = s.call("providerVolumeCreate", "id", input.clone()).await;
    input["dryRun"] = json!(false);
    let real = s.call("providerVolumeCreate", "id", input).await;
    assert_eq!(common::first_code(&dry).as_deref(), Some("QUOTA_EXCEEDED"), "{dry}");
    assert_eq!(dry["errors"][0]["extensions"], real["errors"][0]["extensions"]);
    assert!(dry["extensions"]["plan"].is_null());
});

db_test!(a_dry_run_of_a_change_no_reconciler_acts_on_plans_no_provider_call, |backend: Backend| async move {
    let s = setup(backend).await;
    let mut input = volume(10, "logs");
    input["poolId"] = json!(s.pool);
    let id = s.call("providerVolumeCreate", "id", input).await["data"]["providerVolumeCreate"]["id"].clone();
    let update = json!({ "tenantId": "acme", "volumeId": id, "deletionProtection": true, "dryRun": true });
    let dry = s.call("providerVolumeUpdate", "deletionProtection version", update).await;
    assert_eq!(dry["data"]["providerVolumeUpdate"], json!({ "deletionProtection": true, "version": 2 }), "{dry}");
    let plan = &dry["extensions"]["plan"]["providerVolumeUpdate"];
    assert_eq!(plan["events"], json!(["providerVolume.updated"]));
    assert_eq!((&plan["providerCalls"], &plan["quota"], &plan["meters"]), (&json!([]), &json!([]), &json!([])));
    let resize = json!({ "tenantId": "acme", "volumeId": id, "sizeGiB": 20, "dryRun": true });
    let dry = s.call("providerVolumeResize", "sizeGiB", resize).await;
    let plan = &dry["extensions"]["plan"]["providerVolumeResize"];
    assert_eq!(plan["providerCalls"][0]["call"], "POST /v2/volumes/{id}/actions (resize)", "{dry}");
    assert_eq!((plan["quota"][0]["before"].as_i64(), plan["quota"][0]["after"].as_i64()), (Some(10), Some(20)));
    let read = "query($v: String!) { providerVolume(tenantId: \"acme\", volumeId: $v) { sizeGiB deletionProtection version } }";
    let volume = s.server.ok(Some(&s.token), read, json!({ "v": id })).await["providerVolume"].clone();
    assert_eq!(volume, json!({ "sizeGiB": 10, "deletionProtection": false, "version": 1 }));
});

db_test!(a_dry_run_over_the_socket_answers_its_plan_too, |backend: Backend| async move {
    let s = setup(backend).await;
    let mut ws = s.server.ws(json!({ "Authorization": format!("Bearer {}", s.token) })).await;
    let query = "mutation($i: ProviderVolumeCreateInput!) { providerVolumeCreate(input: $i) { state } }";
    let input = json!({ "tenantId": "acme", "poolId": s.pool, "name": "ws", "region": "nyc3", "sizeGiB": 5,
        "idempotencyKey": "ws", "dryRun": true });
    ws.subscribe("1", query, json!({ "i": input })).await;
    let mut next = ws.next(std::time::Duration::from_secs(10)).await.expect("an answer");
    while next["type"] == "connection_ack" {
        next = ws.next(std::time::Duration::from_secs(10)).await.expect("an answer");
    }
    let payload = &next["payload"];
    assert_eq!(payload["data"]["providerVolumeCreate"]["state"], "PENDING", "{next}");
    assert_eq!(payload["extensions"]["plan"]["providerVolumeCreate"]["quota"][0]["after"], 5, "{next}");
    assert_eq!(s.used().await, 0);
});
