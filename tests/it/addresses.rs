//! Provider addresses over HTTP against the simulated DigitalOcean, each test named after the
//! seed rule it checks: reserve → assign → unassign → delete for both families, what the calls
//! refuse, a reserve whose answer was lost, an address moved or released outside, and what an
//! instance's delete does to its addresses and volumes. The clock is driven by the test; the
//! sim's actions take 50 ms of real time.
use crate::common;

use std::time::Duration;

use common::{ADMIN, Backend};
use serde_json::{Value, json};
use vps_graph::sim::{Fault, Sim, SimConfig};

const ADDRESS: &str = "query($a: String!) { providerAddress(tenantId: \"acme\", addressId: $a) { id name family state message address lost instanceId instance { name } assignmentState assignmentMessage version readyAt deletedAt } }";
const CREATE: &str = "mutation($i: ProviderAddressCreateInput!) { providerAddressCreate(input: $i) { id state family assignmentState version } }";

local_app!(Setup);

async fn setup(backend: Backend) -> Setup {
    setup_with(backend, Duration::ZERO).await
}

/// `setup` on the tenant's own account (BYO): a machine may be left running there.
async fn setup_own(backend: Backend) -> Setup {
    common::TestApp::driven(backend)
        .regions(&["nyc3", "sfo3"])
        .own_account()
        .quotas(json!([{ "resource": "diskGiB", "max": 2000 }, { "resource": "addresses", "max": 3 }]))
        .build()
        .await
        .into()
}

/// `setup` with `latency` added to every call the sim answers.
async fn setup_with(backend: Backend, latency: Duration) -> Setup {
    common::TestApp::driven(backend)
        .regions(&["nyc3", "sfo3"])
        .sim(SimConfig { latency, ..common::quick_sim() })
        .quotas(json!([{ "resource": "diskGiB", "max": 2000 }, { "resource": "addresses", "max": 3 }]))
        .build()
        .await
        .into()
}

impl Setup {
    fn sim(&self) -> &Sim {
        self.server.app.sim.as_ref().expect("in-process sim")
    }

    /// Calls the sim as an outsider (another client of the same account).
    async fn at_sim(&self, method: reqwest::Method, path: &str, body: Option<Value>) -> (u16, Value) {
        let url = format!("{}{path}", self.server.app.services.sim_url.clone().unwrap());
        let mut request = self.server.http.request(method, url).bearer_auth("outsider");
        if let Some(body) = body {
            request = request.json(&body);
        }
        let response = request.send().await.unwrap();
        let status = response.status().as_u16();
        (status, response.json().await.unwrap_or(Value::Null))
    }

    async fn gql(&self, query: &str, variables: Value) -> Value {
        self.server.ok(Some(&self.token), query, variables).await
    }

    async fn address(&self, id: &str) -> Value {
        self.gql(ADDRESS, json!({ "a": id })).await["providerAddress"].clone()
    }

    fn input(&self, name: &str, extra: Value) -> Value {
        let mut input =
            json!({ "tenantId": "acme", "poolId": self.pool, "name": name, "region": "nyc3", "idempotencyKey": name });
        for (k, v) in extra.as_object().unwrap() {
            input[k] = v.clone();
        }
        json!({ "i": input })
    }

    async fn create(&self, name: &str, extra: Value) -> String {
        let data = self.gql(CREATE, self.input(name, extra)).await;
        data["providerAddressCreate"]["id"].as_str().unwrap().to_owned()
    }

    /// The error code and details of a create that must fail.
    async fn create_refused(&self, name: &str, extra: Value) -> (String, Value) {
        let body = self.server.gql(Some(&self.token), CREATE, self.input(name, extra)).await;
        refusal(&body)
    }

    /// A mutation `field` with `input`, as the caller `token` (the test's own when None).
    async fn call_as(&self, token: &str, field: &str, input: Value) -> Value {
        let mut chars = field.chars();
        let input_type = chars.next().unwrap().to_ascii_uppercase().to_string() + chars.as_str() + "Input";
        let selection = match field.starts_with("instance") {
            true => "id state",
            false => "id version state assignmentState instanceId",
        };
        let query = format!("mutation($i: {input_type}!) {{ {field}(input: $i) {{ {selection} }} }}");
        self.server.gql(Some(token), &query, json!({ "i": input })).await
    }

    async fn call(&self, field: &str, input: Value) -> Value {
        self.call_as(&self.token.clone(), field, input).await
    }

    async fn assign(&self, address: &str, instance: &str) -> Value {
        self.call("providerAddressAssign", json!({ "tenantId": "acme", "addressId": address, "instanceId": instance }))
            .await
    }

    /// `common::until` on the test's clock.
    async fn until<F, Fut>(&self, what: &str, read: F, check: impl Fn(&Value) -> bool) -> Value
    where
        F: Fn() -> Fut,
        Fut: std::future::Future<Output = Value>,
    {
        common::until(self, what, read, check).await
    }

    async fn until_address(&self, id: &str, what: &str, check: impl Fn(&Value) -> bool) -> Value {
        self.until(what, || self.address(id), check).await
    }

    /// Moves the clock by `ms` once the run that last touched `id` has set its next look.
    async fn later(&self, id: &str, ms: i64) {
        let db = &self.server.app.services.db;
        for _ in 0..400 {
            let due = vps_graph::store::queue::item(db, "vps.provider-resources", id).await.unwrap();
            if due.is_none_or(|(due, _, _)| due > self.clock.now_ms()) {
                self.clock.advance(ms);
                // Every run that came due in that time has happened once this returns.
                common::idle(&self.server, &self.clock, id).await;
                return;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!("{id} never settled");
    }

    /// Moves the clock to `ms` short of the next look the last run of `id` set, which is measured
    /// from when that run wrote, not from when the test saw it (the test's waits move the clock).
    async fn short_of_next_look(&self, id: &str, ms: i64) {
        let db = &self.server.app.services.db;
        self.later(id, 0).await;
        let (due, _, _) =
            vps_graph::store::queue::item(db, "vps.provider-resources", id).await.unwrap().expect("a next look");
        self.later(id, (due - ms - self.clock.now_ms()).max(0)).await;
    }

    /// Waits until the reconciler has recorded the address's reserve attempt (the call is then
    /// on its way to the sim, which answers `latency` later).
    async fn reserve_sent(&self, id: &str) {
        use sea_orm::EntityTrait;
        let db = &self.server.app.services.db;
        for _ in 0..400 {
            let row = vps_graph::store::entity::provider_address::Entity::find_by_id(id.to_owned()).one(db).await;
            if row.unwrap().is_some_and(|a| a.reserve_attempts > 0) {
                return;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        panic!("the reserve of {id} was never sent");
    }

    async fn instance(&self, name: &str, region: &str, extra: Value) -> (String, String) {
        let mut input = json!({ "tenantId": "acme", "poolId": self.pool, "name": name, "region": region, "size": "s-1vcpu-1gb", "image": "ubuntu-24-04-x64", "idempotencyKey": name });
        for (k, v) in extra.as_object().unwrap() {
            input[k] = v.clone();
        }
        let data = self
            .gql("mutation($i: InstanceCreateInput!) { instanceCreate(input: $i) { id } }", json!({ "i": input }))
            .await;
        let id = data["instanceCreate"]["id"].as_str().unwrap().to_owned();
        let ready = self.until("an instance ready", || self.instance_view(&id), |i| i["state"] == "READY").await;
        (id, ready["providerId"].as_str().unwrap().to_owned())
    }

    async fn instance_view(&self, id: &str) -> Value {
        let query = "query($i: String!) { instance(tenantId: \"acme\", instanceId: $i) { state providerId onDelete } }";
        self.gql(query, json!({ "i": id })).await["instance"].clone()
    }

    async fn used(&self, resource: &str) -> i64 {
        let data = self.gql("{ quotas(tenantId: \"acme\") { resource used } }", json!({})).await;
        data["quotas"].as_array().unwrap().iter().find(|q| q["resource"] == resource).unwrap()["used"].as_i64().unwrap()
    }

    /// The types of the events of `subject` once `last` is among them (on PostgreSQL the feed
    /// shows an event once every older transaction of the cluster has ended), in feed order.
    async fn events_through(&self, subject: &str, last: &str) -> Vec<String> {
        for _ in 0..400 {
            let types = self.event_types(subject).await;
            if types.iter().any(|t| t == last) {
                return types;
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
        panic!("{last} of {subject} never showed: {:?}", self.event_types(subject).await);
    }

    /// The types of the events of `subject`, in feed order.
    async fn event_types(&self, subject: &str) -> Vec<String> {
        let page = self
            .gql("{ events(tenantId: \"acme\", first: 1000) { edges { node { type subject } } } }", json!({}))
            .await;
        page["events"]["edges"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["node"]["subject"] == subject)
            .map(|e| e["node"]["type"].as_str().unwrap().to_owned())
            .collect()
    }

    /// The path of an address's family at the sim.
    fn sim_path(family: &str, ip: &str) -> String {
        match family {
            "IPV6" => format!("/v2/reserved_ipv6/{ip}"),
            _ => format!("/v2/reserved_ips/{ip}"),
        }
    }
}

fn refusal(body: &Value) -> (String, Value) {
    let code = common::first_code(body).unwrap_or_else(|| panic!("expected an error: {body}"));
    (code, body["errors"][0]["extensions"]["details"].clone())
}

fn code(body: &Value) -> String {
    refusal(body).0
}

/// Whether `wanted` appear in `seen` in this order (other events may come between).
fn in_order(seen: &[String], wanted: &[&str]) -> bool {
    let mut rest = seen.iter();
    wanted.iter().all(|w| rest.any(|s| s == w))
}

db_test!(an_address_is_reserved_assigned_unassigned_and_deleted_for_both_families, |backend: Backend| async move {
    let s = setup(backend).await;
    let (instance, droplet) = s.instance("web-1", "nyc3", json!({})).await;
    for family in ["IPV4", "IPV6"] {
        let name = format!("ingress-{}", family.to_lowercase());
        let id = s.create(&name, json!({ "family": family })).await;
        assert_eq!(s.used("addresses").await, 1, "one addresses booked at once");
        let ready = s.until_address(&id, "reserved", |a| a["state"] == "READY").await;
        assert_eq!(ready["family"], family);
        assert_eq!(ready["assignmentState"], "NONE");
        assert!(ready["readyAt"].is_string(), "billing starts: {ready}");
        let ip = ready["address"].as_str().unwrap().to_owned();
        assert_eq!(ip.contains(':'), family == "IPV6", "{ip}");
        let path = Setup::sim_path(family, &ip);
        assert_eq!(s.at_sim(reqwest::Method::GET, &path, None).await.0, 200, "reserved at the provider");

        let pending = s.assign(&id, &instance).await;
        assert_eq!(pending["data"]["providerAddressAssign"]["assignmentState"], "PENDING", "{pending}");
        let assigned = s.until_address(&id, "assigned", |a| a["assignmentState"] == "READY").await;
        assert_eq!((&assigned["instanceId"], &assigned["instance"]["name"]), (&json!(instance), &json!("web-1")));
        let (_, at_sim) = s.at_sim(reqwest::Method::GET, &path, None).await;
        let key = if family == "IPV6" { "reserved_ipv6" } else { "reserved_ip" };
        assert_eq!(at_sim[key]["droplet"]["id"].to_string(), droplet, "on the instance's Droplet: {at_sim}");

        let again = s.assign(&id, &instance).await;
        assert_eq!(
            again["data"]["providerAddressAssign"]["version"], assigned["version"],
            "the same instance: unchanged"
        );

        s.call("providerAddressUnassign", json!({ "tenantId": "acme", "addressId": id })).await;
        let unassigned = s.until_address(&id, "unassigned", |a| a["assignmentState"] == "NONE").await;
        assert_eq!((&unassigned["state"], &unassigned["instanceId"]), (&json!("READY"), &Value::Null), "kept reserved");
        let (_, at_sim) = s.at_sim(reqwest::Method::GET, &path, None).await;
        assert!(at_sim[key]["droplet"].is_null(), "unassigned at the provider: {at_sim}");

        s.call("providerAddressDelete", json!({ "tenantId": "acme", "addressId": id })).await;
        let query =
            "{ providerAddresses(tenantId: \"acme\", includeDeleted: true) { edges { node { id state deletedAt } } } }";
        s.until(
            "released",
            || async { s.gql(query, json!({})).await },
            |page| {
                page["providerAddresses"]["edges"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|e| e["node"]["id"] == id.as_str() && e["node"]["state"] == "DELETED")
            },
        )
        .await;
        assert_eq!(s.at_sim(reqwest::Method::GET, &path, None).await.0, 404, "released at the provider");
        assert_eq!(s.used("addresses").await, 0, "refunded once released");
        let types = s.events_through(&id, "providerAddress.deleted").await;
        let wanted = [
            "providerAddress.created",
            "providerAddress.ready",
            "providerAddress.updated",
            "providerAddress.assigned",
            "providerAddress.updated",
            "providerAddress.unassigned",
            "providerAddress.deleting",
            "providerAddress.deleted",
        ];
        assert!(in_order(&types, &wanted), "{types:?}");
    }
    let v4 = s.sim().calls("reserved_ips.create");
    let v6 = s.sim().calls("reserved_ipv6.create");
    assert_eq!((v4, v6), (1, 1), "one reserve each");
});

db_test!(a_reserve_whose_answer_was_lost_goes_to_error_and_is_never_sent_again, |backend: Backend| async move {
    let s = setup(backend).await;
    s.sim().inject("reserved_ips.create", Fault::Drop, 1);
    let id = s.create("lost", json!({})).await;
    let failed = s.until_address(&id, "in error", |a| a["state"] == "ERROR").await;
    assert!(failed["message"].as_str().unwrap().contains("check the account's reserved IPs"), "{failed}");
    assert_eq!((&failed["address"], &failed["lost"]), (&Value::Null, &json!(true)));
    // The periodic pass comes round, and an hour's drift read: no second reserve.
    for _ in 0..3 {
        s.later(&id, 30 * 60_000).await;
    }
    assert_eq!(s.sim().calls("reserved_ips.create"), 1, "never sent again");
    assert_eq!(
        code(&s.assign(&id, &s.instance("web", "nyc3", json!({})).await.0).await),
        "INVALID_STATE",
        "not managed"
    );
    s.call("providerAddressDelete", json!({ "tenantId": "acme", "addressId": id })).await;
    s.until_address(&id, "deleted", |a| a["state"] == "DELETED").await;
    assert_eq!(s.sim().calls("reserved_ips.delete"), 0, "finished without a provider call");
    assert_eq!(s.used("addresses").await, 0, "refunded");
});

db_test!(a_refused_or_rate_limited_reserve_reserved_nothing_and_is_retried, |backend: Backend| async move {
    let s = setup(backend).await;
    s.sim().inject("reserved_ips.create", Fault::Status { status: 429 }, 1);
    let limited = s.create("limited", json!({})).await;
    s.until_address(&limited, "reserved after the rate limit", |a| a["state"] == "READY").await;
    assert_eq!(s.sim().calls("reserved_ips.create"), 2);

    s.sim().inject("reserved_ipv6.create", Fault::Status { status: 422 }, 1);
    let refused = s.create("refused", json!({ "family": "IPV6" })).await;
    let failed = s.until_address(&refused, "refused", |a| a["state"] == "ERROR").await;
    assert_eq!(failed["lost"], false, "a refusal reserved nothing: {failed}");
    // Retried by the periodic pass, 5 minutes on.
    s.later(&refused, 5 * 60_000).await;
    s.until_address(&refused, "reserved on the retry", |a| a["state"] == "READY").await;
    assert_eq!(s.sim().calls("reserved_ipv6.create"), 2);
});

db_test!(
    an_address_the_provider_shows_on_another_machine_is_an_assignment_error_and_nothing_is_moved,
    |backend: Backend| async move {
        let s = setup(backend).await;
        let (instance, droplet) = s.instance("web-1", "nyc3", json!({})).await;
        let id = s.create("ingress", json!({})).await;
        let ip =
            s.until_address(&id, "reserved", |a| a["state"] == "READY").await["address"].as_str().unwrap().to_owned();
        s.assign(&id, &instance).await;
        s.until_address(&id, "assigned", |a| a["assignmentState"] == "READY").await;
        // Someone moves it to a machine of their own at the provider.
        let body = json!({ "name": "theirs", "region": "nyc3", "size": "s-1vcpu-1gb", "image": "ubuntu-24-04-x64" });
        let (_, theirs) = s.at_sim(reqwest::Method::POST, "/v2/droplets", Some(body)).await;
        let theirs = theirs["droplet"]["id"].to_string();
        // The sim's actions take their time on the app's clock: the Droplet is made.
        s.clock.advance(1_000);
        let moved = json!({ "type": "assign", "droplet_id": theirs.parse::<u64>().unwrap() });
        let (status, _) = s.at_sim(reqwest::Method::POST, &format!("/v2/reserved_ips/{ip}/actions"), Some(moved)).await;
        assert_eq!(status, 201);
        let assigns_before = s.sim().calls("reserved_ips.actions.create");
        // The hourly drift read finds it.
        s.later(&id, 61 * 60_000).await;
        let failed = s.until_address(&id, "an assignment error", |a| a["assignmentState"] == "ERROR").await;
        assert!(failed["assignmentMessage"].as_str().unwrap().contains(&theirs), "{failed}");
        s.later(&id, 6 * 60_000).await;
        let (_, at_sim) = s.at_sim(reqwest::Method::GET, &format!("/v2/reserved_ips/{ip}"), None).await;
        assert_eq!(at_sim["reserved_ip"]["droplet"]["id"].to_string(), theirs, "nothing moved back");
        assert_ne!(theirs, droplet);
        assert_eq!(s.sim().calls("reserved_ips.actions.create"), assigns_before, "no assign or unassign sent");
    }
);

db_test!(an_address_released_outside_is_lost_for_good_and_never_readopted, |backend: Backend| async move {
    let s = setup(backend).await;
    let (instance, _) = s.instance("web-1", "nyc3", json!({})).await;
    let first = s.create("first", json!({})).await;
    let ip =
        s.until_address(&first, "reserved", |a| a["state"] == "READY").await["address"].as_str().unwrap().to_owned();
    s.assign(&first, &instance).await;
    s.until_address(&first, "assigned", |a| a["assignmentState"] == "READY").await;
    // Released at the provider behind our back; the next reserve of the account is handed it.
    let (status, _) = s.at_sim(reqwest::Method::DELETE, &format!("/v2/reserved_ips/{ip}"), None).await;
    assert_eq!(status, 204);
    let second = s.create("second", json!({})).await;
    let handed = s.until_address(&second, "reserved", |a| a["state"] == "READY").await;
    assert_eq!(handed["address"], ip.as_str(), "the sim hands the same IP out again");
    let lost = s.until_address(&first, "lost", |a| a["lost"] == true).await;
    assert_eq!((&lost["state"], &lost["address"], &lost["instanceId"]), (&json!("ERROR"), &Value::Null, &Value::Null));
    assert!(lost["message"].as_str().unwrap().contains("released"), "{lost}");

    let refused = s.assign(&first, &instance).await;
    let (got, details) = refusal(&refused);
    assert_eq!((got.as_str(), &details["reason"]), ("INVALID_STATE", &json!("notManaged")));
    let calls_before = (s.sim().calls("reserved_ips.actions.create"), s.sim().calls("reserved_ips.get"));
    s.later(&first, 61 * 60_000).await;
    let calls_after = (s.sim().calls("reserved_ips.actions.create"), s.sim().calls("reserved_ips.get"));
    assert_eq!(calls_before.0, calls_after.0, "never assigned");
    let second_reads = calls_after.1 - calls_before.1;
    assert!(second_reads <= 1, "only the other address is read: {second_reads}");

    s.call("providerAddressDelete", json!({ "tenantId": "acme", "addressId": first })).await;
    s.until_address(&first, "deleted", |a| a["state"] == "DELETED").await;
    assert_eq!(s.sim().calls("reserved_ips.delete"), 1, "only the outsider's: never released by us");
    let (status, _) = s.at_sim(reqwest::Method::GET, &format!("/v2/reserved_ips/{ip}"), None).await;
    assert_eq!(status, 200, "the second address keeps it");
    assert_eq!(s.address(&second).await["address"], ip.as_str());
    assert_eq!(s.used("addresses").await, 1, "the lost one refunded");
});

db_test!(a_reserved_ipv6_whose_reservation_time_changed_is_another_reservation, |backend: Backend| async move {
    let s = setup(backend).await;
    let id = s.create("v6", json!({ "family": "IPV6" })).await;
    let ip = s.until_address(&id, "reserved", |a| a["state"] == "READY").await["address"].as_str().unwrap().to_owned();
    // The run that wrote READY may look once more right after: let it settle first, so no read
    // falls between the release and the new reservation below (that read would see it gone).
    common::idle(&s.server, &s.clock, &id).await;
    // Released and reserved again by someone else: same IP, another reservation time.
    assert_eq!(s.at_sim(reqwest::Method::DELETE, &format!("/v2/reserved_ipv6/{ip}"), None).await.0, 204);
    tokio::time::sleep(Duration::from_millis(20)).await;
    let (status, again) =
        s.at_sim(reqwest::Method::POST, "/v2/reserved_ipv6", Some(json!({ "region_slug": "nyc3" }))).await;
    assert_eq!((status, again["reserved_ipv6"]["ip"].as_str()), (201, Some(ip.as_str())));
    s.later(&id, 61 * 60_000).await;
    let lost = s.until_address(&id, "lost", |a| a["lost"] == true).await;
    assert!(lost["message"].as_str().unwrap().contains("another reservation"), "{lost}");
    s.call("providerAddressDelete", json!({ "tenantId": "acme", "addressId": id })).await;
    s.until_address(&id, "deleted", |a| a["state"] == "DELETED").await;
    assert_eq!(s.sim().calls("reserved_ipv6.delete"), 1, "the outsider's only");
    assert_eq!(s.at_sim(reqwest::Method::GET, &format!("/v2/reserved_ipv6/{ip}"), None).await.0, 200);
});

db_test!(deleting_an_instance_unassigns_its_addresses_which_stay_reserved, |backend: Backend| async move {
    let s = setup(backend).await;
    let (instance, _) = s.instance("web-1", "nyc3", json!({})).await;
    let id = s.create("ingress", json!({})).await;
    let ip = s.until_address(&id, "reserved", |a| a["state"] == "READY").await["address"].as_str().unwrap().to_owned();
    s.assign(&id, &instance).await;
    s.until_address(&id, "assigned", |a| a["assignmentState"] == "READY").await;
    s.call("instanceDelete", json!({ "tenantId": "acme", "instanceId": instance })).await;
    s.until("the instance deleted", || s.instance_view(&instance), |i| i["state"] == "DELETED").await;
    let after = s.until_address(&id, "unassigned", |a| a["assignmentState"] == "NONE").await;
    assert_eq!((&after["state"], &after["address"]), (&json!("READY"), &json!(ip)), "still reserved: {after}");
    let (status, at_sim) = s.at_sim(reqwest::Method::GET, &format!("/v2/reserved_ips/{ip}"), None).await;
    assert_eq!((status, &at_sim["reserved_ip"]["droplet"]), (200, &Value::Null));
    let types = s.events_through(&id, "providerAddress.unassigned").await;
    assert!(in_order(&types, &["providerAddress.assigned", "providerAddress.updated", "providerAddress.unassigned"]));
});

db_test!(
    an_instance_made_to_detach_on_delete_leaves_its_machine_running_and_only_lets_go,
    |backend: Backend| async move {
        let s = setup_own(backend).await;
        let (instance, droplet) = s.instance("keeper", "nyc3", json!({ "onDelete": "DETACH" })).await;
        assert_eq!(s.instance_view(&instance).await["onDelete"], "DETACH");
        let address = s.create("ingress", json!({})).await;
        s.until_address(&address, "reserved", |a| a["state"] == "READY").await;
        s.assign(&address, &instance).await;
        s.until_address(&address, "assigned", |a| a["assignmentState"] == "READY").await;
        let volume = s
            .gql(
                "mutation($i: ProviderVolumeCreateInput!) { providerVolumeCreate(input: $i) { id } }",
                json!({ "i": { "tenantId": "acme", "poolId": s.pool, "name": "data", "region": "nyc3", "sizeGiB": 10, "deleteWithInstance": true, "instanceId": instance, "idempotencyKey": "data" } }),
            )
            .await["providerVolumeCreate"]["id"]
            .as_str()
            .unwrap()
            .to_owned();
        let query =
            "query($v: String!) { providerVolume(tenantId: \"acme\", volumeId: $v) { state attachments { state } } }";
        let volume_view = || async { s.gql(query, json!({ "v": volume })).await["providerVolume"].clone() };
        s.until("attached", volume_view, |v| v["attachments"][0]["state"] == "READY").await;

        s.call("instanceDelete", json!({ "tenantId": "acme", "instanceId": instance })).await;
        s.until("the instance deleted", || s.instance_view(&instance), |i| i["state"] == "DELETED").await;
        s.until("detached", volume_view, |v| v["attachments"].as_array().unwrap().is_empty()).await;
        s.until_address(&address, "unassigned", |a| a["assignmentState"] == "NONE").await;
        assert_eq!(volume_view().await["state"], "READY", "a deleteWithInstance volume only detached");
        let (status, at_sim) = s.at_sim(reqwest::Method::GET, &format!("/v2/droplets/{droplet}"), None).await;
        assert_eq!((status, at_sim["droplet"]["status"].as_str()), (200, Some("active")), "the machine runs on");
        assert!(at_sim["droplet"]["volume_ids"].as_array().unwrap().is_empty(), "{at_sim}");
        assert_eq!(s.sim().calls("droplets.delete"), 0);
        assert_eq!(s.sim().calls("droplets.destroy_with_associated_resources.selective.delete"), 0);
    }
);

db_test!(create_books_one_address_and_fails_closed, |backend: Backend| async move {
    let s = setup(backend).await;
    for i in 0..3 {
        s.create(&format!("a{i}"), json!({})).await;
    }
    assert_eq!(s.used("addresses").await, 3);
    let (got, _) = s.create_refused("a3", json!({})).await;
    assert_eq!(got, "QUOTA_EXCEEDED", "max 3");
    s.server.tenant("globex").await;
    s.server.offer(&s.pool, "globex", json!([{ "resource": "diskGiB", "max": 10 }])).await;
    let globex = s.server.token(Some("globex"), &[("compute:*", "tenant/globex")]).await;
    let input = json!({ "i": { "tenantId": "globex", "poolId": s.pool, "name": "x", "region": "nyc3", "idempotencyKey": "x" } });
    assert_eq!(s.server.code(Some(&globex), CREATE, input).await, "QUOTA_EXCEEDED", "no quota row: fail closed");
    let page = s.gql("{ providerAddresses(tenantId: \"acme\") { edges { node { name } } } }", json!({})).await;
    assert_eq!(page["providerAddresses"]["edges"].as_array().unwrap().len(), 3, "nothing half-written");
});

db_test!(create_refuses_bad_input_and_pools_without_addresses, |backend: Backend| async move {
    let s = setup(backend).await;
    assert_eq!(s.create_refused("Bad_Name", json!({})).await.0, "INVALID_INPUT");
    let (got, details) = s.create_refused("far", json!({ "region": "ams3" })).await;
    assert_eq!(
        (got.as_str(), &details["field"]),
        ("INVALID_INPUT", &json!("region")),
        "a region the account does not use"
    );
    assert_eq!(s.create_refused("x", json!({ "poolId": "pool_nope" })).await.0, "INVALID_INPUT");
    let pool = s.server.aws_pool("aws").await;
    s.server.offer(&pool, "acme", json!([{ "resource": "addresses", "max": 5 }])).await;
    let (got, details) = s.create_refused("on-aws", json!({ "poolId": pool, "region": "us-east-1" })).await;
    assert_eq!((got.as_str(), &details["reason"]), ("UNSUPPORTED", &json!("addresses")));
    assert_eq!(s.used("addresses").await, 0, "nothing booked");
});

db_test!(names_are_unique_in_the_tenant_and_idempotency_keys_replay, |backend: Backend| async move {
    let s = setup(backend).await;
    let id = s.create("ingress", json!({})).await;
    assert_eq!(s.create("ingress", json!({})).await, id, "the same key and input: the same address");
    assert_eq!(
        s.create_refused("ingress", json!({ "family": "IPV6" })).await.0,
        "CONFLICT",
        "the key with other input"
    );
    let (got, details) = s.create_refused("ingress", json!({ "idempotencyKey": "other" })).await;
    assert_eq!((got.as_str(), &details["field"]), ("CONFLICT", &json!("name")));
    assert_eq!(s.used("addresses").await, 1);
});

db_test!(assign_rules_one_instance_at_a_time_and_the_callers_own_instances_update, |backend: Backend| async move {
    let s = setup(backend).await;
    let (a, _) = s.instance("web-a", "nyc3", json!({})).await;
    let (b, _) = s.instance("web-b", "nyc3", json!({})).await;
    let (far, _) = s.instance("far", "sfo3", json!({})).await;
    let id = s.create("ingress", json!({})).await;
    s.assign(&id, &a).await;
    assert_eq!(code(&s.assign(&id, &b).await), "CONFLICT", "a second instance");
    let other = s.create("other", json!({})).await;
    assert_eq!(code(&s.assign(&other, &far).await), "INVALID_INPUT", "another region");
    // Another tenant's instance, and one the caller may not update.
    s.server.tenant("globex").await;
    s.server.offer(&s.pool, "globex", json!([])).await;
    let globex = s.server.token(Some("globex"), &[("compute:*", "tenant/globex")]).await;
    let theirs = s
        .server
        .ok(
            Some(&globex),
            "mutation($i: InstanceCreateInput!) { instanceCreate(input: $i) { id } }",
            json!({ "i": { "tenantId": "globex", "poolId": s.pool, "name": "g", "region": "nyc3", "size": "s-1vcpu-1gb", "image": "ubuntu-24-04-x64", "idempotencyKey": "g" } }),
        )
        .await["instanceCreate"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(code(&s.assign(&other, &theirs).await), "ACCESS_DENIED", "another tenant's instance");
    let addresses_only = s.server.token(Some("acme"), &[("compute:addresses:*", "tenant/acme")]).await;
    let input = json!({ "tenantId": "acme", "addressId": other, "instanceId": b });
    let (got, details) = refusal(&s.call_as(&addresses_only, "providerAddressAssign", input).await);
    assert_eq!((got.as_str(), &details["permission"]), ("ACCESS_DENIED", &json!("compute:instances:update")));
    // An instance being deleted.
    s.call("instanceDelete", json!({ "tenantId": "acme", "instanceId": b })).await;
    assert_eq!(code(&s.assign(&other, &b).await), "INVALID_STATE");
    let page =
        s.gql("{ providerAddresses(tenantId: \"acme\") { edges { node { name instanceId } } } }", json!({})).await;
    let other_row = page["providerAddresses"]["edges"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["node"]["name"] == "other")
        .unwrap()
        .clone();
    assert_eq!(other_row["node"]["instanceId"], Value::Null, "no refusal half-wrote an assignment");
});

db_test!(delete_is_invalid_state_while_assigned_and_unassign_keeps_it_reserved, |backend: Backend| async move {
    let s = setup(backend).await;
    let (instance, _) = s.instance("web", "nyc3", json!({})).await;
    let id = s.create("ingress", json!({})).await;
    s.until_address(&id, "reserved", |a| a["state"] == "READY").await;
    s.assign(&id, &instance).await;
    let (got, details) =
        refusal(&s.call("providerAddressDelete", json!({ "tenantId": "acme", "addressId": id })).await);
    assert_eq!((got.as_str(), &details["reason"]), ("INVALID_STATE", &json!("assigned")));
    s.until_address(&id, "assigned", |a| a["assignmentState"] == "READY").await;
    let unassigning = s.call("providerAddressUnassign", json!({ "tenantId": "acme", "addressId": id })).await;
    assert_eq!(unassigning["data"]["providerAddressUnassign"]["assignmentState"], "DELETING");
    assert_eq!(code(&s.assign(&id, &instance).await), "INVALID_STATE", "while the unassign runs");
    s.until_address(&id, "unassigned", |a| a["assignmentState"] == "NONE").await;
    assert_eq!(s.used("addresses").await, 1, "unassigned, still reserved and booked");
    // The release held at the provider, so the address stays deleting for a while.
    s.sim().inject("reserved_ips.delete", Fault::Stall, 1);
    let deleting = s.call("providerAddressDelete", json!({ "tenantId": "acme", "addressId": id })).await;
    assert_eq!(deleting["data"]["providerAddressDelete"]["state"], "DELETING");
    let again = s.call("providerAddressDelete", json!({ "tenantId": "acme", "addressId": id })).await;
    assert!(again.get("errors").is_none(), "deleting one being deleted returns it: {again}");
    assert_eq!(code(&s.assign(&id, &instance).await), "INVALID_STATE", "being deleted");
});

db_test!(addresses_are_read_with_addresses_read_and_changed_with_addresses_manage, |backend: Backend| async move {
    let s = setup(backend).await;
    let project = s.server.project("acme", "edge").await;
    let id = s.create("ingress", json!({ "projectId": project })).await;
    let other = s.create("other", json!({})).await;
    let reader = s.server.token(Some("acme"), &[("compute:addresses:read", &format!("project/{project}"))]).await;
    let seen = s.server.gql(Some(&reader), ADDRESS, json!({ "a": id })).await;
    assert_eq!(seen["data"]["providerAddress"]["name"], "ingress", "{seen}");
    assert_eq!(s.server.code(Some(&reader), ADDRESS, json!({ "a": other })).await, "ACCESS_DENIED");
    let page = s
        .server
        .ok(Some(&reader), "{ providerAddresses(tenantId: \"acme\") { edges { node { id } } } }", json!({}))
        .await;
    assert_eq!(
        page["providerAddresses"]["edges"],
        json!([{ "node": { "id": id } }]),
        "a list keeps what the caller may read"
    );
    let deleted = s.call_as(&reader, "providerAddressDelete", json!({ "tenantId": "acme", "addressId": id })).await;
    assert_eq!(
        refusal(&deleted),
        (
            "ACCESS_DENIED".into(),
            json!({ "permission": "compute:addresses:manage", "scope": format!("provider-address/{id}") })
        )
    );
    let globex = {
        s.server.tenant("globex").await;
        s.server.token(Some("globex"), &[("compute:*", "tenant/globex")]).await
    };
    let foreign = s
        .server
        .gql(
            Some(&globex),
            "query($a: String!) { providerAddress(tenantId: \"globex\", addressId: $a) { id } }",
            json!({ "a": id }),
        )
        .await;
    assert_eq!(code(&foreign), "NOT_FOUND", "another tenant's address is not seen");
});

db_test!(a_page_of_addresses_with_their_instances_costs_the_same_sql_statements, |backend: Backend| async move {
    let s = setup(backend).await;
    let raise = "mutation($p: String!) { quotaSet(input: { tenantId: \"acme\", poolId: $p, resource: \"addresses\", max: 30 }) { max } }";
    s.server.ok(Some(ADMIN), raise, json!({ "p": s.pool })).await;
    for i in 0..24 {
        let input = json!({ "tenantId": "acme", "poolId": s.pool, "name": format!("host-{i}"), "region": "nyc3", "size": "s-1vcpu-1gb", "image": "ubuntu-24-04-x64", "idempotencyKey": format!("host-{i}") });
        let instance = s
            .gql("mutation($i: InstanceCreateInput!) { instanceCreate(input: $i) { id } }", json!({ "i": input }))
            .await["instanceCreate"]["id"]
            .as_str()
            .unwrap()
            .to_owned();
        let address = s.create(&format!("ip-{i}"), json!({})).await;
        let assigned = s.assign(&address, &instance).await;
        assert!(assigned.get("errors").is_none(), "{assigned}");
    }
    let query = "query($n: Int!) { providerAddresses(tenantId: \"acme\", first: $n) { edges { node { id instance { id name } } } } }";
    let mut counts = Vec::new();
    for first in [2, 8, 24] {
        let (body, statements) = s.server.counted(ADMIN, query, json!({ "n": first })).await;
        let edges = body["data"]["providerAddresses"]["edges"].as_array().unwrap().clone();
        assert_eq!(edges.len(), first, "{body}");
        assert!(edges.iter().all(|e| e["node"]["instance"]["name"].is_string()), "{body}");
        counts.push(statements);
    }
    assert!(counts.iter().all(|c| *c == counts[0]), "statements per page size 2, 8, 24: {counts:?}");
    assert!(counts[0] <= 2, "the page and its instances: {counts:?}");
});

db_test!(a_refused_reserve_racing_an_assign_is_retried_and_keeps_the_assignment, |backend: Backend| async move {
    let s = setup_with(backend, Duration::from_millis(400)).await;
    let (instance, droplet) = s.instance("web", "nyc3", json!({})).await;
    s.sim().inject("reserved_ips.create", Fault::Status { status: 422 }, 1);
    let id = s.create("ingress", json!({})).await;
    s.reserve_sent(&id).await;
    let assigning = s.assign(&id, &instance).await;
    assert_eq!(assigning["data"]["providerAddressAssign"]["state"], "PENDING", "assigned while the reserve runs");
    let refused = s.until_address(&id, "refused", |a| a["state"] == "ERROR").await;
    assert_eq!((&refused["lost"], &refused["instanceId"]), (&json!(false), &json!(instance)), "{refused}");
    s.later(&id, 5 * 60_000).await;
    let assigned = s.until_address(&id, "reserved and assigned", |a| a["assignmentState"] == "READY").await;
    let (_, at_sim) = s
        .at_sim(reqwest::Method::GET, &format!("/v2/reserved_ips/{}", assigned["address"].as_str().unwrap()), None)
        .await;
    assert_eq!(at_sim["reserved_ip"]["droplet"]["id"].to_string(), droplet);
    assert_eq!(s.sim().calls("reserved_ips.create"), 2);
});

db_test!(an_address_deleted_while_its_reserve_runs_is_released_not_leaked, |backend: Backend| async move {
    let s = setup_with(backend, Duration::from_millis(400)).await;
    let id = s.create("ingress", json!({})).await;
    s.reserve_sent(&id).await;
    let deleting = s.call("providerAddressDelete", json!({ "tenantId": "acme", "addressId": id })).await;
    assert_eq!(deleting["data"]["providerAddressDelete"]["state"], "DELETING", "{deleting}");
    s.until_address(&id, "deleted", |a| a["state"] == "DELETED").await;
    assert_eq!(s.sim().calls("reserved_ips.create"), 1);
    assert_eq!(s.sim().calls("reserved_ips.delete"), 1, "the IP the reserve was handed is released");
    let (_, held) = s.at_sim(reqwest::Method::GET, "/v2/reserved_ips", None).await;
    assert_eq!(held["meta"]["total"], 0, "nothing left at the provider: {held}");
    assert_eq!(s.used("addresses").await, 0);
});

// Issue 14: an assign or unassign action that ends `errored` at the provider.

db_test!(
    an_errored_assign_is_the_assignments_error_and_sent_again_by_the_periodic_pass,
    |backend: Backend| async move {
        let s = setup(backend).await;
        let (instance, droplet) = s.instance("web-1", "nyc3", json!({})).await;
        let id = s.create("ingress", json!({})).await;
        let ip =
            s.until_address(&id, "reserved", |a| a["state"] == "READY").await["address"].as_str().unwrap().to_owned();
        let path = Setup::sim_path("IPV4", &ip);
        s.sim().inject("reserved_ips.actions.create", Fault::Fail { message: None }, 1);
        s.assign(&id, &instance).await;
        let failed = s.until_address(&id, "the assignment in error", |a| a["assignmentState"] == "ERROR").await;
        assert_eq!(failed["assignmentMessage"], "the provider's assign failed", "{failed}");
        assert_eq!(failed["state"], "READY", "the reservation itself is fine");
        assert!(s.at_sim(reqwest::Method::GET, &path, None).await.1["reserved_ip"]["droplet"].is_null());
        // Not asked again before the periodic pass, five minutes after the error: the clock is
        // moved to just short of it.
        let errored_at = s.clock.now_ms();
        s.short_of_next_look(&id, 1_000).await;
        assert!(s.clock.now_ms() - errored_at <= 5 * 60_000, "the next look is the periodic pass");
        assert_eq!(s.sim().calls("reserved_ips.actions.create"), 1);
        s.later(&id, 1_000).await;
        s.until_address(&id, "assigned", |a| a["assignmentState"] == "READY").await;
        assert_eq!(s.sim().calls("reserved_ips.actions.create"), 2);
        let (_, at_sim) = s.at_sim(reqwest::Method::GET, &path, None).await;
        assert_eq!(at_sim["reserved_ip"]["droplet"]["id"].to_string(), droplet);

        // An errored unassign: still wanted (deleting), asked again by the periodic pass.
        s.sim().inject("reserved_ips.actions.create", Fault::Fail { message: None }, 1);
        s.call("providerAddressUnassign", json!({ "tenantId": "acme", "addressId": id })).await;
        let waiting = s
            .until_address(&id, "told the unassign failed", |a| {
                a["assignmentMessage"].as_str().is_some_and(|m| m.contains("unassign failed"))
            })
            .await;
        assert_eq!(waiting["assignmentState"], "DELETING", "{waiting}");
        s.later(&id, 5 * 60_000).await;
        s.until_address(&id, "unassigned", |a| a["assignmentState"] == "NONE").await;
        assert!(s.at_sim(reqwest::Method::GET, &path, None).await.1["reserved_ip"]["droplet"].is_null());
    }
);

db_test!(every_change_the_tenant_asks_of_an_address_bumps_its_generation, |backend: Backend| async move {
    // A reconciler's write-back never bumps a generation, so each step's count is exact
    // whatever the reconcilers do meanwhile.
    use sea_orm::EntityTrait;
    use vps_graph::store::entity::provider_address as address;
    let s = setup(backend).await;
    let db = &s.server.app.services.db;
    let (instance, _) = s.instance("web-1", "nyc3", json!({})).await;
    let id = s.create("ingress", json!({})).await;
    s.until_address(&id, "reserved", |a| a["state"] == "READY").await;
    let generation = || async { address::Entity::find_by_id(id.clone()).one(db).await.unwrap().unwrap().generation };
    assert_eq!(generation().await, 1, "as made, and reserved by the reconciler");

    s.assign(&id, &instance).await;
    assert_eq!(generation().await, 2, "an assign");
    s.until_address(&id, "assigned", |a| a["assignmentState"] == "READY").await;
    assert_eq!(generation().await, 2, "the assign's write-back is no user change");
    s.assign(&id, &instance).await;
    assert_eq!(generation().await, 2, "assigned to the same instance again: nothing asked anew");

    s.call("providerAddressUnassign", json!({ "tenantId": "acme", "addressId": id })).await;
    assert_eq!(generation().await, 3, "an unassign");
    s.until_address(&id, "unassigned", |a| a["assignmentState"] == "NONE").await;

    s.call("providerAddressDelete", json!({ "tenantId": "acme", "addressId": id })).await;
    assert_eq!(generation().await, 4, "a delete");
});
