//! Snapshot schedules (issue 33) on a manual clock over days: each slot's snapshot is taken once
//! (a run stopped before its record, or two runs at once, take nothing twice), a slot missed
//! while the service was down is taken once, and retention keeps the newest K (counting manual
//! snapshots, which it deletes only when told, and never a protected one) and/or those younger
//! than an age. No worker runs: what runs, runs in the test's waits.
use crate::common;

use common::{Backend, START};
use sea_orm::{ActiveModelTrait, ColumnTrait, EntityTrait, QueryFilter, Set};
use serde_json::{Value, json};
use vps_graph::store::entity::{provider_snapshot, snapshot_schedule};

local_app!(Setup);

const HOUR: i64 = 3_600_000;
const DAY: i64 = 24 * HOUR;

async fn setup(backend: Backend) -> Setup {
    common::TestApp::on_clock(backend)
        .quotas(json!([{ "resource": "diskGiB", "max": 2000 }]))
        .workers(0)
        .build()
        .await
        .into()
}

impl Setup {
    async fn made(&self, field: &str, input: Value) -> String {
        let body = self.call(field, "id", input).await;
        body["data"][field]["id"].as_str().unwrap_or_else(|| panic!("{field}: {body}")).to_owned()
    }

    async fn ready_volume(&self, name: &str) -> String {
        let input = json!({ "tenantId": "acme", "poolId": self.pool, "name": name, "region": "nyc3", "sizeGiB": 10,
            "idempotencyKey": name });
        let id = self.made("providerVolumeCreate", input).await;
        let query = "query($v: String!) { providerVolume(tenantId: \"acme\", volumeId: $v) { state } }";
        let read =
            || async { self.server.ok(Some(&self.token), query, json!({ "v": id })).await["providerVolume"].clone() };
        common::until(self, "volume ready", read, |v| v["state"] == "READY").await;
        id
    }

    async fn snapshot(&self, volume: &str, name: &str, protected: bool) -> String {
        let input = json!({ "tenantId": "acme", "volumeId": volume, "name": name, "idempotencyKey": name,
            "deletionProtection": protected });
        self.made("providerVolumeSnapshot", input).await
    }

    async fn schedule(&self, input: Value) -> Value {
        let mut input = input;
        input["tenantId"] = json!("acme");
        let selection = "id nextRunAt lastSlotAt lastOutcome lastError version";
        let body = self.call("snapshotScheduleCreate", selection, input).await;
        assert!(body["errors"].is_null(), "{body}");
        body["data"]["snapshotScheduleCreate"].clone()
    }

    async fn read(&self, id: &str) -> Value {
        let query = "query($s: String!) { snapshotSchedule(tenantId: \"acme\", scheduleId: $s) {
            nextRunAt lastSlotAt lastOutcome lastError state version } }";
        self.server.ok(Some(&self.token), query, json!({ "s": id })).await["snapshotSchedule"].clone()
    }

    /// Moves the clock to `ms` and runs what is due there.
    async fn at(&self, ms: i64) {
        let now = self.clock.now_ms();
        assert!(ms >= now, "the clock only moves forward");
        self.clock.advance(ms - now);
        self.server.app.run_due().await.expect("due work runs");
    }

    /// Every snapshot row of the volume, deleted ones too: (name, schedule, wanted).
    async fn rows(&self, volume: &str) -> Vec<provider_snapshot::Model> {
        provider_snapshot::Entity::find()
            .filter(provider_snapshot::Column::VolumeId.eq(volume))
            .all(&self.server.app.services.db)
            .await
            .unwrap()
    }

    async fn ready(&self, volume: &str, name: &str) -> bool {
        let rows = self.rows(volume).await;
        rows.into_iter().any(|r| r.name == name && r.state == vps_graph::store::state::State::Ready)
    }

    /// The names of the volume's snapshots still wanted, sorted.
    async fn kept(&self, volume: &str) -> Vec<String> {
        let mut names: Vec<String> = self
            .rows(volume)
            .await
            .into_iter()
            .filter(|r| r.desired_state == vps_graph::store::state::Desired::Present)
            .map(|r| r.name)
            .collect();
        names.sort();
        names
    }
}

fn iso(ms: i64) -> String {
    chrono::DateTime::from_timestamp_millis(ms).unwrap().to_rfc3339()
}

/// The slot of hour `h` of `START`'s day (START is 08:00 UTC).
fn name_at(prefix: &str, ms: i64) -> String {
    format!("{prefix}-{}", chrono::DateTime::from_timestamp_millis(ms).unwrap().format("%Y%m%d-%H%M"))
}

db_test!(a_schedule_takes_each_slot_once_and_keeps_the_newest_k_counting_manual_ones, |backend: Backend| async move {
    let s = setup(backend).await;
    assert_eq!(START % (6 * HOUR), 8 * HOUR % (6 * HOUR), "START is 08:00 UTC");
    let volume = s.ready_volume("pg-data").await;
    s.snapshot(&volume, "manual-1", false).await;
    let schedule = s
        .schedule(json!({ "volumeId": volume, "name": "six", "everyHours": 6, "keepLast": 3,
        "idempotencyKey": "six" }))
        .await;
    let id = schedule["id"].as_str().unwrap().to_owned();
    let first = START - START % (6 * HOUR) + 6 * HOUR;
    assert_eq!(schedule["nextRunAt"].as_str().unwrap(), iso(first), "{schedule}");
    s.at(first - 1).await;
    assert_eq!(s.kept(&volume).await, ["manual-1"], "nothing before the first slot");

    // Three days of slots, each run a minute after its slot.
    let slots: Vec<i64> = (0..12).map(|n| first + n * 6 * HOUR).collect();
    for slot in &slots {
        s.at(slot + 60_000).await;
        let read = s.read(&id).await;
        assert_eq!(read["lastSlotAt"].as_str().map(|t| t.to_owned()), Some(iso(*slot)), "{read}");
        assert!(read["lastError"].is_null(), "{read}");
        s.at(slot + 120_000).await; // the second run of the same slot takes nothing
    }
    let own: Vec<String> = s
        .rows(&volume)
        .await
        .into_iter()
        .filter(|r| r.schedule_id.as_deref() == Some(id.as_str()))
        .map(|r| r.name)
        .collect();
    assert_eq!(own.len(), slots.len(), "one snapshot a slot, never two: {own:?}");
    let last_three: Vec<String> = slots[9..].iter().map(|slot| name_at("six", *slot)).collect();
    let mut expected = vec!["manual-1".to_owned()];
    expected.extend(last_three);
    expected.sort();
    assert_eq!(
        s.kept(&volume).await,
        expected,
        "the newest 3 are kept; the manual one is not the schedule's to delete"
    );
    let read = s.read(&id).await;
    assert_eq!(read["nextRunAt"].as_str().unwrap(), iso(slots[11] + 6 * HOUR));
    assert!(read["lastOutcome"].as_str().unwrap().starts_with("took psnap_"), "{read}");
});

db_test!(
    a_slot_missed_while_the_service_was_down_is_taken_once_not_once_per_missed_slot,
    |backend: Backend| async move {
        let s = setup(backend).await;
        let volume = s.ready_volume("logs").await;
        let schedule = s
            .schedule(json!({ "volumeId": volume, "name": "hourly", "everyHours": 1, "keepLast": 25,
        "idempotencyKey": "hourly" }))
            .await;
        let id = schedule["id"].as_str().unwrap().to_owned();
        // Down for five hours: the clock moves on with nothing run.
        let back = s.clock.now_ms() + 5 * HOUR + 30 * 60_000;
        s.clock.advance(back - s.clock.now_ms());
        s.at(back).await;
        let taken = s.kept(&volume).await;
        let latest = back - back % HOUR;
        assert_eq!(taken, [name_at("hourly", latest)], "only the latest missed slot");
        let read = s.read(&id).await;
        assert_eq!(read["nextRunAt"].as_str().unwrap(), iso(latest + HOUR), "{read}");
    }
);

db_test!(a_run_stopped_before_its_record_or_two_runs_at_once_take_the_slot_once, |backend: Backend| async move {
    let s = setup(backend).await;
    let volume = s.ready_volume("db").await;
    let schedule = s
        .schedule(json!({ "volumeId": volume, "name": "db", "dailyAt": "00:00", "keepLast": 5,
        "idempotencyKey": "db" }))
        .await;
    let id = schedule["id"].as_str().unwrap().to_owned();
    let midnight = START - START % DAY + DAY;
    s.clock.advance(midnight + 60_000 - s.clock.now_ms());
    let services = &s.server.app.services;
    // Two replicas' runs at once.
    let (a, b) = tokio::join!(services.schedule_run(&id), services.schedule_run(&id));
    a.unwrap();
    b.unwrap();
    assert_eq!(s.rows(&volume).await.len(), 1, "two runs of one slot took one snapshot");
    // The process killed after the take, before the run's record: the record is lost, the run
    // goes again.
    let db = &services.db;
    let row = snapshot_schedule::Entity::find_by_id(id.clone()).one(db).await.unwrap().unwrap();
    let mut lost: snapshot_schedule::ActiveModel = row.into();
    lost.last_slot_at = Set(None);
    lost.update(db).await.unwrap();
    services.schedule_run(&id).await.unwrap();
    assert_eq!(s.rows(&volume).await.len(), 1, "the run again took nothing twice");
    assert_eq!(s.kept(&volume).await, [name_at("db", midnight)]);
    let read = s.read(&id).await;
    assert!(read["lastError"].is_null(), "a replayed take is no error: {read}");
});

db_test!(
    retention_by_age_deletes_manual_ones_only_when_told_and_never_a_protected_one,
    |backend: Backend| async move {
        let s = setup(backend).await;
        let volume = s.ready_volume("media").await;
        s.snapshot(&volume, "keep-me", true).await;
        s.snapshot(&volume, "old-manual", false).await;
        let schedule = s
            .schedule(json!({ "volumeId": volume, "name": "nightly", "dailyAt": "02:00", "maxAgeHours": 48,
        "pruneManual": true, "idempotencyKey": "nightly" }))
            .await;
        let id = schedule["id"].as_str().unwrap().to_owned();
        let first = START - START % DAY + DAY + 2 * HOUR;
        for day in 0..4 {
            s.at(first + day * DAY + 60_000).await;
        }
        // At the fourth slot: the manual ones are 3 days old, the first two slots' 72 and 48 h.
        let mut expected =
            vec!["keep-me".to_owned(), name_at("nightly", first + 2 * DAY), name_at("nightly", first + 3 * DAY)];
        expected.sort();
        assert_eq!(s.kept(&volume).await, expected, "older than 48 h deleted, the protected one kept");
        let read = s.read(&id).await;
        assert!(read["lastOutcome"].as_str().unwrap().contains("deleted psnap_"), "{read}");
    }
);

db_test!(
    a_project_schedule_covers_its_volumes_made_later_and_a_deleted_schedule_takes_nothing,
    |backend: Backend| async move {
        let s = setup(backend).await;
        let project = s.server.project("acme", "data").await;
        let input = json!({ "tenantId": "acme", "projectId": project, "poolId": s.pool, "name": "late", "region": "nyc3",
        "sizeGiB": 10, "idempotencyKey": "late" });
        let schedule = s
            .schedule(json!({ "projectId": project, "name": "proj", "everyHours": 24, "keepLast": 2,
        "idempotencyKey": "proj" }))
            .await;
        let id = schedule["id"].as_str().unwrap().to_owned();
        let volume = s.made("providerVolumeCreate", input).await;
        let query = "query($v: String!) { providerVolume(tenantId: \"acme\", volumeId: $v) { state } }";
        let read =
            || async { s.server.ok(Some(&s.token), query, json!({ "v": volume })).await["providerVolume"].clone() };
        common::until(&s, "volume ready", read, |v| v["state"] == "READY").await;
        let slot = START - START % DAY + DAY;
        s.at(slot + 60_000).await;
        assert_eq!(s.kept(&volume).await, [name_at("proj", slot)]);
        let deleted = s.call("snapshotScheduleDelete", "state", json!({ "tenantId": "acme", "scheduleId": id })).await;
        assert_eq!(deleted["data"]["snapshotScheduleDelete"]["state"], "DELETED", "{deleted}");
        s.at(slot + DAY + 60_000).await;
        assert_eq!(
            s.kept(&volume).await,
            [name_at("proj", slot)],
            "a deleted schedule takes nothing, and its snapshots stay"
        );
        let events = "{ events(tenantId: \"acme\", first: 1000) { edges { node { type subject } } } }";
        let page = s.server.ok(Some(&s.token), events, json!({})).await;
        let types: Vec<&str> = page["events"]["edges"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["node"]["subject"] == id.as_str())
            .map(|e| e["node"]["type"].as_str().unwrap())
            .collect();
        assert_eq!(types, ["snapshotSchedule.created", "snapshotSchedule.ran", "snapshotSchedule.deleted"]);
    }
);

db_test!(a_schedule_asks_one_cadence_some_retention_and_at_most_25_kept, |backend: Backend| async move {
    let s = setup(backend).await;
    let volume = s.ready_volume("v").await;
    let base = json!({ "tenantId": "acme", "volumeId": volume, "name": "x", "everyHours": 6, "keepLast": 3,
        "idempotencyKey": "x" });
    let with = |key: &str, value: Value| {
        let mut input = base.clone();
        if value.is_null() {
            input.as_object_mut().unwrap().remove(key);
        } else {
            input[key] = value;
        }
        input
    };
    let mut both = with("dailyAt", json!("03:00"));
    both["idempotencyKey"] = json!("y");
    for (input, field) in [
        (both, "everyHours"),
        (with("everyHours", Value::Null), "everyHours"),
        (with("everyHours", json!(0)), "everyHours"),
        (with("keepLast", json!(26)), "keepLast"),
        (with("keepLast", Value::Null), "keepLast"),
        (with("name", json!("a-name-longer-than-twenty-eight")), "name"),
    ] {
        let body = s.call("snapshotScheduleCreate", "id", input.clone()).await;
        assert_eq!(common::first_code(&body).as_deref(), Some("INVALID_INPUT"), "{input}: {body}");
        assert_eq!(body["errors"][0]["extensions"]["details"]["field"], field, "{body}");
    }
    let mut daily = with("everyHours", Value::Null);
    daily["dailyAt"] = json!("25:00");
    let body = s.call("snapshotScheduleCreate", "id", daily).await;
    assert_eq!(body["errors"][0]["extensions"]["details"]["field"], "dailyAt", "{body}");
    let listed = s.server.ok(Some(&s.token), "{ snapshotSchedules(tenantId: \"acme\") { id } }", json!({})).await;
    assert_eq!(listed["snapshotSchedules"], json!([]), "nothing refused was recorded");
});

db_test!(keeping_one_never_leaves_the_volume_without_a_ready_snapshot, |backend: Backend| async move {
    let s = setup(backend).await;
    let volume = s.ready_volume("one").await;
    let schedule = s
        .schedule(json!({ "volumeId": volume, "name": "one", "everyHours": 1, "keepLast": 1,
        "idempotencyKey": "one" }))
        .await;
    let first = START + HOUR;
    s.at(first + 60_000).await;
    for _ in 0..50 {
        if s.ready(&volume, &name_at("one", first)).await {
            break;
        }
        s.at(s.clock.now_ms() + 1_000).await;
    }
    assert!(s.ready(&volume, &name_at("one", first)).await, "the first slot's snapshot is READY");
    // The next slot's take is pending when retention runs: the READY one stays with it.
    let second = first + HOUR;
    s.clock.advance(second + 60_000 - s.clock.now_ms());
    s.server.app.services.schedule_run(schedule["id"].as_str().unwrap()).await.unwrap();
    let mut both = vec![name_at("one", first), name_at("one", second)];
    both.sort();
    assert_eq!(s.kept(&volume).await, both, "the newest READY snapshot is never deleted for one still pending");
    // Once the second is READY, the next slot deletes the first.
    s.at(second + 30 * 60_000).await;
    s.at(second + HOUR + 60_000).await;
    let mut last = vec![name_at("one", second), name_at("one", second + HOUR)];
    last.sort();
    assert_eq!(s.kept(&volume).await, last);
});

db_test!(a_slot_that_meets_a_volume_at_its_limit_is_tried_again_not_lost, |backend: Backend| async move {
    let s = setup(backend).await;
    let volume = s.ready_volume("full").await;
    let mut manual = Vec::new();
    for n in 0..24 {
        manual.push(s.snapshot(&volume, &format!("m{n}"), false).await);
    }
    let schedule = s
        .schedule(json!({ "volumeId": volume, "name": "full", "everyHours": 1, "keepLast": 25,
        "idempotencyKey": "full" }))
        .await;
    let id = schedule["id"].as_str().unwrap().to_owned();
    let first = START + HOUR;
    s.at(first + 60_000).await;
    assert_eq!(s.kept(&volume).await.len(), 25, "the first slot fills the volume");
    let second = first + HOUR;
    s.at(second + 60_000).await;
    let read = s.read(&id).await;
    assert_eq!(read["lastSlotAt"].as_str().unwrap(), iso(first), "the second slot is not recorded taken: {read}");
    assert!(read["lastError"].as_str().unwrap().contains("QUOTA_EXCEEDED"), "{read}");
    assert_eq!(read["nextRunAt"].as_str().unwrap(), iso(second + 2 * 60_000), "tried again a minute later: {read}");
    // The user makes room; the retry takes the slot.
    s.call("providerSnapshotDelete", "id", json!({ "tenantId": "acme", "snapshotId": manual[0] })).await;
    for _ in 0..30 {
        s.at(s.clock.now_ms() + 10_000).await;
        if s.read(&id).await["lastSlotAt"].as_str() == Some(iso(second).as_str()) {
            break;
        }
    }
    let read = s.read(&id).await;
    assert_eq!(read["lastSlotAt"].as_str().unwrap(), iso(second), "{read}");
    assert!(s.kept(&volume).await.contains(&name_at("full", second)));
});

db_test!(
    a_schedule_pruning_manual_snapshots_asks_the_right_to_delete_them_and_goes_with_its_volume,
    |backend: Backend| async move {
        let s = setup(backend).await;
        let volume = s.ready_volume("owned").await;
        let on_volume = format!("provider-volume/{volume}");
        let grants = [("compute:volumes:manage", on_volume.as_str()), ("compute:volumes:read", on_volume.as_str())];
        let token = s.server.token(Some("acme"), &grants).await;
        let create = "mutation($i: SnapshotScheduleCreateInput!) { snapshotScheduleCreate(input: $i) { id } }";
        let input = json!({ "tenantId": "acme", "volumeId": volume, "name": "mine", "everyHours": 6, "keepLast": 2,
        "pruneManual": true, "idempotencyKey": "mine" });
        let body = s.server.gql(Some(&token), create, json!({ "i": input })).await;
        assert_eq!(common::first_code(&body).as_deref(), Some("ACCESS_DENIED"), "{body}");
        let mut input = input;
        input["pruneManual"] = json!(false);
        let body = s.server.gql(Some(&token), create, json!({ "i": input })).await;
        let id = body["data"]["snapshotScheduleCreate"]["id"].as_str().unwrap_or_else(|| panic!("{body}")).to_owned();
        // Its maker reads and stops it by its right on the volume.
        let read = "query($s: String!) { snapshotSchedule(tenantId: \"acme\", scheduleId: $s) { state } }";
        assert_eq!(s.server.ok(Some(&token), read, json!({ "s": id })).await["snapshotSchedule"]["state"], "ACTIVE");
        let listed = s.server.ok(Some(&token), "{ snapshotSchedules(tenantId: \"acme\") { id } }", json!({})).await;
        assert_eq!(listed["snapshotSchedules"], json!([{ "id": id }]));
        // Same name again: CONFLICT; a volume and a project at once: INVALID_INPUT.
        let again = s
            .call(
                "snapshotScheduleCreate",
                "id",
                json!({ "tenantId": "acme", "volumeId": volume, "name": "mine",
        "everyHours": 6, "keepLast": 2, "idempotencyKey": "mine-2" }),
            )
            .await;
        assert_eq!(common::first_code(&again).as_deref(), Some("CONFLICT"), "{again}");
        let project = s.server.project("acme", "p").await;
        let both = s
            .call(
                "snapshotScheduleCreate",
                "id",
                json!({ "tenantId": "acme", "volumeId": volume, "projectId": project,
        "name": "both", "everyHours": 6, "keepLast": 2, "idempotencyKey": "both" }),
            )
            .await;
        assert_eq!(common::first_code(&both).as_deref(), Some("INVALID_INPUT"), "{both}");
        // Its volume deleted, the schedule ends at its next slot.
        s.call("providerVolumeDelete", "id", json!({ "tenantId": "acme", "volumeId": volume })).await;
        s.at(START + 6 * HOUR).await;
        let state = s.read(&id).await["state"].clone();
        assert_eq!(state, "DELETED");
    }
);
