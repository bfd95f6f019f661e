//! The usage pass `vps.ancillary-usage` and the `usage` query: whole-hour windows from ready
//! until deleted on a metered pool, per meter, each written once however often and however many
//! passes run. The clock is the test's; the pass is run by the test (`reconcile::usage::pass`)
//! at chosen times, while the app's own pass, due just after each hour's end, may run beside it.
use crate::common;

use std::time::Duration;

use chrono::{DateTime, Utc};
use common::Backend;
use common::START;
use sea_orm::{ActiveModelTrait, ColumnTrait, EntityTrait, QueryFilter, QueryOrder, Set};
use serde_json::{Value, json};
use vps_graph::reconcile::usage::{self, HOUR_MS};
use vps_graph::store::entity::{provider_address, provider_snapshot, provider_volume, usage_window};
use vps_graph::store::state::{AddressFamily, Assignment, Desired, State, VolumeKind};

/// On an hour boundary: hour `n` below is `[START + n h, START + (n + 1) h)`.
const MINUTE: i64 = 60_000;
const DAY: i64 = 24 * HOUR_MS;
const USAGE: &str = "query($t: String!, $p: String!, $f: DateTime!, $u: DateTime!) { usage(tenantId: $t, poolId: $p, from: $f, to: $u) { tenantId poolId from to meters { meter sourceKind quantity windows } } }";

local_app!(Setup);

async fn setup(backend: Backend) -> Setup {
    assert_eq!(START % HOUR_MS, 0);
    let s: Setup = common::TestApp::on_clock(backend)
        .quotas(json!([{ "resource": "diskGiB", "max": 2000 }]))
        .workers(0)
        .build()
        .await
        .into();
    // What a worker runs at start (the first usage pass and the account's first inventory pass).
    s.run_due().await;
    s
}

fn at(ms: i64) -> DateTime<Utc> {
    DateTime::from_timestamp_millis(ms).unwrap()
}

/// The start of hour `n`.
fn hour(n: i64) -> i64 {
    START + n * HOUR_MS
}

fn rfc3339(ms: i64) -> String {
    at(ms).to_rfc3339()
}

impl Setup {
    fn db(&self) -> &sea_orm::DatabaseConnection {
        &self.server.app.services.db
    }

    /// Moves the clock forward to `ms`.
    fn to(&self, ms: i64) {
        let now = self.clock.now_ms();
        assert!(ms >= now, "the clock only moves forward");
        self.clock.advance(ms - now);
    }

    /// Runs one pass now; how many windows it wrote.
    async fn pass(&self) -> u64 {
        usage::pass(&self.server.app.services, self.clock.now()).await.expect("usage pass")
    }

    /// Runs the reconcile work due now, here (the app has no worker).
    async fn run_due(&self) {
        self.server.app.run_due().await.expect("due work runs");
    }

    /// Runs the app's own pass if it is due, so that it has set its next run in the future and
    /// cannot run beside the test's passes until the clock passes the hour.
    async fn app_pass_done(&self) {
        self.run_due().await;
        let item = vps_graph::store::queue::item(self.db(), usage::KIND, usage::ITEM).await.unwrap();
        assert!(item.is_some_and(|(due, _, _)| due > self.clock.now_ms()), "the app's usage pass ran");
    }

    /// The windows of `resource_id`: (hour, meter, quantity), in order.
    async fn windows(&self, resource_id: &str) -> Vec<(i64, String, f64)> {
        usage_window::Entity::find()
            .filter(usage_window::Column::ResourceId.eq(resource_id))
            .order_by_asc(usage_window::Column::WindowStart)
            .all(self.db())
            .await
            .unwrap()
            .into_iter()
            .map(|w| {
                let start = w.window_start.timestamp_millis();
                assert_eq!(w.window_end.timestamp_millis(), start + HOUR_MS, "a window is one hour");
                assert_eq!(start % HOUR_MS, 0, "a window starts on the hour");
                ((start - START) / HOUR_MS, w.meter, w.quantity)
            })
            .collect()
    }

    async fn window_count(&self) -> usize {
        usage_window::Entity::find().all(self.db()).await.unwrap().len()
    }

    async fn gql(&self, query: &str, variables: Value) -> Value {
        self.server.ok(Some(&self.token), query, variables).await
    }

    async fn volume_row(&self, id: &str) -> provider_volume::Model {
        provider_volume::Entity::find_by_id(id.to_owned()).one(self.db()).await.unwrap().unwrap()
    }

    /// Reads the volume until `check` holds, moving the clock a second at a time (so the
    /// reconciler's looks 5 s later come round) while the sim's actions finish in real time.
    async fn until_volume(&self, id: &str, what: &str, check: impl Fn(&provider_volume::Model) -> bool) {
        for _ in 0..600 {
            self.run_due().await;
            if check(&self.volume_row(id).await) {
                return;
            }
            self.clock.advance(1_000);
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        panic!("never {what}: {:?}", self.volume_row(id).await);
    }

    async fn mutate(&self, field: &str, input: Value) {
        let mut chars = field.chars();
        let input_type = chars.next().unwrap().to_ascii_uppercase().to_string() + chars.as_str() + "Input";
        self.gql(
            &format!("mutation($i: {input_type}!) {{ {field}(input: $i) {{ __typename }} }}"),
            json!({ "i": input }),
        )
        .await;
    }

    /// A volume row as the reconciler leaves it, on `pool`.
    async fn insert_volume(
        &self,
        pool: &str,
        kind: VolumeKind,
        size_gib: i64,
        ready_at: Option<i64>,
        deleted_at: Option<i64>,
    ) -> String {
        let id = vps_graph::ids::new_id(vps_graph::ids::VOLUME);
        let created = at(ready_at.unwrap_or(self.clock.now_ms()) - MINUTE);
        provider_volume::ActiveModel {
            id: Set(id.clone()),
            tenant_id: Set("acme".into()),
            project_id: Set(None),
            pool_id: Set(pool.to_owned()),
            provider_account_id: Set("pacct_x".into()),
            name: Set(id.clone()),
            description: Set(None),
            region: Set("nyc3".into()),
            kind: Set(kind),
            network_id: Set((kind == VolumeKind::Shared).then(|| "net_x".to_owned())),
            filesystem: Set(None),
            delete_with_instance: Set(false),
            source_snapshot_id: Set(None),
            size_from_snapshot: Set(false),
            size_gib: Set(size_gib),
            observed_size_gib: Set(ready_at.map(|_| size_gib)),
            state: Set(state(ready_at, deleted_at)),
            desired_state: Set(Desired::Present),
            provider_id: Set(None),
            provider_name: Set(id.clone()),
            device: Set(None),
            mount_source: Set(None),
            create_attempts: Set(1),
            lost: Set(false),
            action_id: Set(None),
            message: Set(None),
            deletion_protection: Set(false),
            version: Set(1),
            generation: Set(1),
            created_at: Set(created),
            updated_at: Set(created),
            ready_at: Set(ready_at.map(at)),
            deleted_at: Set(deleted_at.map(at)),
        }
        .insert(self.db())
        .await
        .unwrap();
        id
    }

    async fn insert_snapshot(&self, size_gib: Option<f64>, ready_at: i64, deleted_at: Option<i64>) -> String {
        let id = vps_graph::ids::new_id(vps_graph::ids::SNAPSHOT);
        provider_snapshot::ActiveModel {
            id: Set(id.clone()),
            tenant_id: Set("acme".into()),
            project_id: Set(None),
            pool_id: Set(self.pool.clone()),
            provider_account_id: Set("pacct_x".into()),
            volume_id: Set("pvol_x".into()),
            volume_kind: Set(VolumeKind::Block),
            region: Set("nyc3".into()),
            name: Set(id.clone()),
            state: Set(state(Some(ready_at), deleted_at)),
            desired_state: Set(Desired::Present),
            provider_id: Set(None),
            provider_name: Set(id.clone()),
            size_gib: Set(size_gib),
            min_disk_size: Set(10),
            create_attempts: Set(1),
            lost: Set(false),
            message: Set(None),
            deletion_protection: Set(false),
            schedule_id: Set(None),
            version: Set(1),
            generation: Set(1),
            created_at: Set(at(ready_at - MINUTE)),
            updated_at: Set(at(ready_at)),
            ready_at: Set(Some(at(ready_at))),
            deleted_at: Set(deleted_at.map(at)),
        }
        .insert(self.db())
        .await
        .unwrap();
        id
    }

    async fn insert_address(&self, ready_at: i64, deleted_at: Option<i64>) -> String {
        let id = vps_graph::ids::new_id(vps_graph::ids::ADDRESS);
        provider_address::ActiveModel {
            id: Set(id.clone()),
            tenant_id: Set("acme".into()),
            project_id: Set(None),
            pool_id: Set(self.pool.clone()),
            provider_account_id: Set("pacct_x".into()),
            name: Set(id.clone()),
            region: Set("nyc3".into()),
            family: Set(AddressFamily::Ipv4),
            state: Set(state(Some(ready_at), deleted_at)),
            desired_state: Set(Desired::Present),
            address: Set(None),
            fingerprint: Set(None),
            reserve_attempts: Set(1),
            lost: Set(false),
            message: Set(None),
            instance_id: Set(None),
            assignment_state: Set(Assignment::None),
            assignment_message: Set(None),
            action_id: Set(None),
            deletion_protection: Set(false),
            version: Set(1),
            generation: Set(1),
            created_at: Set(at(ready_at - MINUTE)),
            updated_at: Set(at(ready_at)),
            ready_at: Set(Some(at(ready_at))),
            deleted_at: Set(deleted_at.map(at)),
        }
        .insert(self.db())
        .await
        .unwrap();
        id
    }
}

fn state(ready_at: Option<i64>, deleted_at: Option<i64>) -> State {
    match (ready_at, deleted_at) {
        (_, Some(_)) => State::Deleted,
        (Some(_), None) => State::Ready,
        (None, None) => State::Pending,
    }
}

fn hours(meter: &str, list: &[(i64, f64)]) -> Vec<(i64, String, f64)> {
    list.iter().map(|&(h, q)| (h, meter.to_owned(), q)).collect()
}

db_test!(a_volume_bills_whole_hours_from_ready_until_deleted_at_the_size_of_each_hour, |backend: Backend| async move {
    let s = setup(backend).await;
    let data = s
        .gql(
            "mutation($i: ProviderVolumeCreateInput!) { providerVolumeCreate(input: $i) { id } }",
            json!({ "i": { "tenantId": "acme", "poolId": s.pool, "name": "pg-data", "region": "nyc3", "sizeGiB": 10, "idempotencyKey": "pg-data" } }),
        )
        .await;
    let id = data["providerVolumeCreate"]["id"].as_str().unwrap().to_owned();
    s.until_volume(&id, "ready", |v| v.state == State::Ready).await;
    let ready_at = s.volume_row(&id).await.ready_at.unwrap().timestamp_millis();
    assert!(ready_at >= hour(0) && ready_at < hour(0) + 10 * MINUTE, "ready early in hour 0");
    assert_eq!(s.pass().await, 0, "hour 0 has not closed");
    assert!(s.windows(&id).await.is_empty());

    s.to(hour(1) + 1_000);
    s.pass().await;
    assert_eq!(s.windows(&id).await, hours("vps.volume.gib.hours", &[(0, 10.0)]), "hour 0, partly used, bills whole");

    s.mutate("providerVolumeResize", json!({ "tenantId": "acme", "volumeId": id, "sizeGiB": 20 })).await;
    s.until_volume(&id, "resized", |v| v.state == State::Ready && v.observed_size_gib == Some(20)).await;
    assert!(s.clock.now_ms() < hour(2), "resized in hour 1");
    s.to(hour(2) + 1_000);
    s.pass().await;
    assert_eq!(
        s.windows(&id).await,
        hours("vps.volume.gib.hours", &[(0, 10.0), (1, 20.0)]),
        "the hour of the resize bills the larger size"
    );

    s.mutate("providerVolumeDelete", json!({ "tenantId": "acme", "volumeId": id })).await;
    s.until_volume(&id, "deleted", |v| v.deleted_at.is_some()).await;
    assert!(s.clock.now_ms() < hour(3), "deleted in hour 2");
    s.to(hour(5) + 1_000);
    s.pass().await;
    assert_eq!(
        s.windows(&id).await,
        hours("vps.volume.gib.hours", &[(0, 10.0), (1, 20.0), (2, 20.0)]),
        "the hour of the delete bills whole, nothing after it"
    );
    s.to(hour(8));
    assert_eq!(s.pass().await, 0);
    assert_eq!(s.windows(&id).await.len(), 3);
    let window = usage_window::Entity::find().one(s.db()).await.unwrap().unwrap();
    assert_eq!((window.tenant_id.as_str(), window.pool_id.as_str()), ("acme", s.pool.as_str()));
    assert_eq!(window.source_kind, "volume");
});

db_test!(a_shared_volume_bills_its_gib_on_the_share_meter, |backend: Backend| async move {
    let s = setup(backend).await;
    s.app_pass_done().await;
    let share = s.insert_volume(&s.pool, VolumeKind::Shared, 50, Some(hour(-3) + 45 * MINUTE), None).await;
    let block = s.insert_volume(&s.pool, VolumeKind::Block, 8, Some(hour(-1) + 59 * MINUTE), None).await;
    assert_eq!(s.pass().await, 4);
    assert_eq!(s.windows(&share).await, hours("vps.share.gib.hours", &[(-3, 50.0), (-2, 50.0), (-1, 50.0)]));
    assert_eq!(s.windows(&block).await, hours("vps.volume.gib.hours", &[(-1, 8.0)]));
    let row = usage_window::Entity::find()
        .filter(usage_window::Column::ResourceId.eq(share.as_str()))
        .one(s.db())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(row.source_kind, "volume");
});

db_test!(a_snapshot_bills_the_gib_the_provider_reports_once_they_are_known, |backend: Backend| async move {
    let s = setup(backend).await;
    s.app_pass_done().await;
    let reported = s.insert_snapshot(Some(2.75), hour(-2) + 30 * MINUTE, None).await;
    let unknown = s.insert_snapshot(None, hour(-3) + 5 * MINUTE, None).await;
    s.pass().await;
    assert_eq!(s.windows(&reported).await, hours("vps.snapshot.gib.hours", &[(-2, 2.75), (-1, 2.75)]));
    assert!(s.windows(&unknown).await.is_empty(), "no window while the provider has not said its size");
    provider_snapshot::ActiveModel { id: Set(unknown.clone()), size_gib: Set(Some(1.5)), ..Default::default() }
        .update(s.db())
        .await
        .unwrap();
    assert_eq!(s.pass().await, 3, "written from its ready hour once known");
    assert_eq!(s.windows(&unknown).await, hours("vps.snapshot.gib.hours", &[(-3, 1.5), (-2, 1.5), (-1, 1.5)]));
    let row = usage_window::Entity::find()
        .filter(usage_window::Column::ResourceId.eq(reported.as_str()))
        .one(s.db())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(row.source_kind, "snapshot");
});

db_test!(an_address_bills_one_per_hour_held, |backend: Backend| async move {
    let s = setup(backend).await;
    s.app_pass_done().await;
    let held = s.insert_address(hour(-4) + 59 * MINUTE, Some(hour(-2) + MINUTE)).await;
    let live = s.insert_address(hour(-1), None).await;
    s.pass().await;
    assert_eq!(
        s.windows(&held).await,
        hours("vps.address.hours", &[(-4, 1.0), (-3, 1.0), (-2, 1.0)]),
        "the hours it was ready in and deleted in bill whole"
    );
    assert_eq!(s.windows(&live).await, hours("vps.address.hours", &[(-1, 1.0)]));
    let row = usage_window::Entity::find()
        .filter(usage_window::Column::ResourceId.eq(live.as_str()))
        .one(s.db())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(row.source_kind, "address");
});

db_test!(a_resource_that_never_became_ready_never_bills, |backend: Backend| async move {
    let s = setup(backend).await;
    s.app_pass_done().await;
    let pending = s.insert_volume(&s.pool, VolumeKind::Block, 10, None, None).await;
    let failed = s.insert_volume(&s.pool, VolumeKind::Block, 10, None, Some(hour(-2))).await;
    assert_eq!(s.pass().await, 0);
    assert!(s.windows(&pending).await.is_empty());
    assert!(s.windows(&failed).await.is_empty());
});

db_test!(nothing_bills_on_a_byo_pool, |backend: Backend| async move {
    let s = setup(backend).await;
    let byo = s.server.sim_pool("own", &["nyc3"], Some("acme")).await;
    s.server.offer(&byo, "acme", json!([{ "resource": "diskGiB", "max": 100 }])).await;
    s.app_pass_done().await;
    let volume = s.insert_volume(&byo, VolumeKind::Block, 10, Some(hour(-5)), None).await;
    let shared = s.insert_volume(&byo, VolumeKind::Shared, 10, Some(hour(-5)), Some(hour(-1))).await;
    assert_eq!(s.pass().await, 0);
    assert!(s.windows(&volume).await.is_empty());
    assert!(s.windows(&shared).await.is_empty());
    let usage = s.gql(USAGE, json!({ "t": "acme", "p": byo, "f": rfc3339(hour(-24)), "u": rfc3339(hour(0)) })).await;
    assert_eq!(usage["usage"]["meters"], json!([]));
});

db_test!(a_pass_run_twice_writes_each_window_once, |backend: Backend| async move {
    let s = setup(backend).await;
    s.app_pass_done().await;
    let volume = s.insert_volume(&s.pool, VolumeKind::Block, 10, Some(hour(-3) + 10 * MINUTE), None).await;
    let address = s.insert_address(hour(-2), Some(hour(-1) + MINUTE)).await;
    assert_eq!(s.pass().await, 5);
    assert_eq!(s.pass().await, 0, "a rerun writes nothing");
    assert_eq!(s.window_count().await, 5);
    // A pass cut short (here: the windows of one hour lost) is made whole by the next.
    usage_window::Entity::delete_many()
        .filter(usage_window::Column::ResourceId.eq(volume.as_str()))
        .filter(usage_window::Column::WindowStart.eq(at(hour(-2))))
        .exec(s.db())
        .await
        .unwrap();
    assert_eq!(s.pass().await, 1, "the missing hour, and only it");
    assert_eq!(s.windows(&volume).await, hours("vps.volume.gib.hours", &[(-3, 10.0), (-2, 10.0), (-1, 10.0)]));
    assert_eq!(s.windows(&address).await, hours("vps.address.hours", &[(-2, 1.0), (-1, 1.0)]));
});

db_test!(two_passes_at_once_write_each_window_once, |backend: Backend| async move {
    let s = setup(backend).await;
    s.app_pass_done().await;
    // 10 addresses of 3 days: 720 windows, more than one insert's batch.
    for _ in 0..10 {
        s.insert_address(hour(-72) + 30 * MINUTE, None).await;
    }
    let (a, b) = tokio::join!(s.pass(), s.pass());
    assert_eq!(a + b, 720, "between them the two passes wrote each window once ({a} + {b})");
    assert_eq!(s.window_count().await, 720);
    assert_eq!(s.pass().await, 0);
});

db_test!(a_pass_looks_back_31_days_for_windows_to_write, |backend: Backend| async move {
    let s = setup(backend).await;
    s.app_pass_done().await;
    let long_gone = s.insert_address(hour(-40 * 24), Some(hour(-32 * 24))).await;
    let old = s.insert_address(hour(-40 * 24), None).await;
    s.pass().await;
    assert!(s.windows(&long_gone).await.is_empty(), "deleted before the horizon: not read");
    let windows = s.windows(&old).await;
    assert_eq!(windows.len() as i64, usage::LOOKBACK_HOURS, "the last 31 days only");
    assert_eq!(windows[0].0, -usage::LOOKBACK_HOURS);
});

db_test!(the_usage_query_totals_each_meter_over_the_windows_that_start_in_the_range, |backend: Backend| async move {
    let s = setup(backend).await;
    s.app_pass_done().await;
    s.insert_volume(&s.pool, VolumeKind::Block, 10, Some(hour(-3) + 10 * MINUTE), None).await;
    s.insert_address(hour(-2) + 59 * MINUTE, Some(hour(-1) + MINUTE)).await;
    s.insert_snapshot(Some(2.5), hour(-1) + 30 * MINUTE, None).await;
    assert_eq!(s.pass().await, 6);
    let query = |from: i64, to: i64| {
        let s = &s;
        async move {
            s.gql(USAGE, json!({ "t": "acme", "p": s.pool, "f": rfc3339(from), "u": rfc3339(to) })).await["usage"]
                .clone()
        }
    };
    let all = query(hour(-3), hour(0)).await;
    assert_eq!(all["tenantId"], "acme");
    assert_eq!(all["poolId"], s.pool.as_str());
    assert_eq!(
        all["meters"],
        json!([
            { "meter": "vps.address.hours", "sourceKind": "address", "quantity": 2.0, "windows": 2 },
            { "meter": "vps.snapshot.gib.hours", "sourceKind": "snapshot", "quantity": 2.5, "windows": 1 },
            { "meter": "vps.volume.gib.hours", "sourceKind": "volume", "quantity": 30.0, "windows": 3 },
        ])
    );
    let one_hour = query(hour(-2), hour(-1)).await;
    assert_eq!(
        one_hour["meters"],
        json!([
            { "meter": "vps.address.hours", "sourceKind": "address", "quantity": 1.0, "windows": 1 },
            { "meter": "vps.volume.gib.hours", "sourceKind": "volume", "quantity": 10.0, "windows": 1 },
        ]),
        "windows that start in [from, to)"
    );
    let inside = query(hour(-2) + 30 * MINUTE, hour(-1) + 30 * MINUTE).await;
    assert_eq!(inside["meters"].as_array().unwrap().len(), 3, "the hour -1 windows start inside: {inside}");
    assert_eq!(query(hour(-400 * 24), hour(-34 * 24)).await["meters"], json!([]));
    assert_eq!(query(hour(0) - 366 * DAY, hour(0)).await["meters"].as_array().unwrap().len(), 3, "366 days");
});

db_test!(the_usage_query_checks_its_range_grant_and_pool, |backend: Backend| async move {
    let s = setup(backend).await;
    let vars = |pool: &str, from: i64, to: i64| json!({ "t": "acme", "p": pool, "f": rfc3339(from), "u": rfc3339(to) });
    let code = |token: String, variables: Value| {
        let s = &s;
        async move { s.server.code(Some(&token), USAGE, variables).await }
    };
    let token = s.token.clone();
    assert_eq!(code(token.clone(), vars(&s.pool, hour(0), hour(0))).await, "INVALID_INPUT", "from = to");
    assert_eq!(code(token.clone(), vars(&s.pool, hour(1), hour(0))).await, "INVALID_INPUT", "from after to");
    assert_eq!(
        code(token.clone(), vars(&s.pool, hour(0) - 366 * DAY - 1_000, hour(0))).await,
        "INVALID_INPUT",
        "over 366 days"
    );
    let volumes_only = s.server.token(Some("acme"), &[("compute:volumes:read", "tenant/acme")]).await;
    assert_eq!(code(volumes_only, vars(&s.pool, hour(-1), hour(0))).await, "ACCESS_DENIED");
    let usage_reader = s.server.token(Some("acme"), &[("compute:usage:read", "tenant/acme")]).await;
    s.server.ok(Some(&usage_reader), USAGE, vars(&s.pool, hour(-1), hour(0))).await;
    let not_offered = s.server.sim_pool("elsewhere", &["nyc3"], None).await;
    assert_eq!(code(token.clone(), vars(&not_offered, hour(-1), hour(0))).await, "NOT_FOUND");
    assert_eq!(code(token, vars("pool_missing", hour(-1), hour(0))).await, "NOT_FOUND");
    s.server.tenant("other").await;
    let other = s.server.token(Some("other"), &[("compute:*", "tenant/other")]).await;
    assert_eq!(code(other, vars(&s.pool, hour(-1), hour(0))).await, "NOT_FOUND", "another tenant's usage");
});

db_test!(usage_answers_its_cost_at_the_pools_rate_card_and_none_without_one, |backend: Backend| async move {
    let s = setup(backend).await;
    s.app_pass_done().await;
    let share = s.insert_volume(&s.pool, VolumeKind::Shared, 50, Some(hour(-3) + 45 * MINUTE), None).await;
    let block = s.insert_volume(&s.pool, VolumeKind::Block, 8, Some(hour(-1) + 59 * MINUTE), None).await;
    assert_eq!(s.pass().await, 4, "{share} {block}");
    let query = "query($t: String!, $p: String!, $f: DateTime!, $u: DateTime!) { usage(tenantId: $t, poolId: $p, from: $f, to: $u) { meters { meter quantity cost } cost { amount currency } } }";
    let vars = json!({ "t": "acme", "p": s.pool, "f": rfc3339(hour(-3)), "u": rfc3339(hour(0)) });
    let usage = s.gql(query, vars.clone()).await["usage"].clone();
    assert!(usage["cost"].is_null(), "no rate card, no cost: {usage}");
    assert!(usage["meters"].as_array().unwrap().iter().all(|m| m["cost"].is_null()), "{usage}");

    let rates =
        "mutation($i: PoolRatesSetInput!) { poolRatesSet(input: $i) { rateCard { currency prices { meter price } } } }";
    let card = json!({ "currency": "USD", "prices": [
        { "meter": "vps.volume.gib.hours", "price": 0.001 }, { "meter": "vps.share.gib.hours", "price": 0.002 }] });
    let set = s.server.ok(Some(common::ADMIN), rates, json!({ "i": { "poolId": s.pool, "rateCard": card } })).await;
    assert_eq!(set["poolRatesSet"]["rateCard"]["currency"], "USD");
    let usage = s.gql(query, vars).await["usage"].clone();
    let cost_of = |meter: &str| {
        usage["meters"].as_array().unwrap().iter().find(|m| m["meter"] == meter).unwrap()["cost"].as_f64().unwrap()
    };
    assert_eq!(cost_of("vps.share.gib.hours"), 0.3, "150 GiB-hours at 0.002: {usage}");
    assert_eq!(cost_of("vps.volume.gib.hours"), 0.008, "8 GiB-hours at 0.001: {usage}");
    assert_eq!(usage["cost"], json!({ "amount": 0.308, "currency": "USD" }));
});

db_test!(
    a_rate_card_prices_only_the_meters_usage_has_once_each_from_zero_in_a_currency_code,
    |backend: Backend| async move {
        let s = setup(backend).await;
        let rates = "mutation($i: PoolRatesSetInput!) { poolRatesSet(input: $i) { rateCard { currency } } }";
        let price = |meter: &str, price: f64| json!({ "meter": meter, "price": price });
        let volume = "vps.volume.gib.hours";
        for (currency, prices, field) in [
            ("usd", vec![price(volume, 0.1)], "currency"),
            ("USD", vec![price("vps.gpu.hours", 0.1)], "meter"),
            ("USD", vec![price(volume, -0.1)], "price"),
            ("USD", vec![price(volume, 0.1), price(volume, 0.2)], "prices"),
        ] {
            let input = json!({ "poolId": s.pool, "rateCard": { "currency": currency, "prices": prices } });
            let body = s.server.gql(Some(common::ADMIN), rates, json!({ "i": input })).await;
            assert_eq!(common::first_code(&body).as_deref(), Some("INVALID_INPUT"), "{body}");
            assert_eq!(body["errors"][0]["extensions"]["details"]["field"], field, "{body}");
        }
        let pool = "query { pools(tenantId: \"acme\") { rateCard { currency } } }";
        assert!(s.gql(pool, json!({})).await["pools"][0]["rateCard"].is_null(), "nothing refused was written");
        let body = s.server.gql(Some(&s.token), rates, json!({ "i": { "poolId": s.pool, "rateCard": null } })).await;
        assert_eq!(common::first_code(&body).as_deref(), Some("ACCESS_DENIED"), "an operator's call: {body}");
    }
);
