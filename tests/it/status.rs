//! The one status write-back every reconciler makes (`store::status`), driven by hand on a
//! volume with no reconciler running: what the provider did is always written, what a run
//! decided only at the generation it read, and nothing at all once its lease is gone.
use crate::common;

use common::{Backend, TestDb, TestServer};
use sea_orm::EntityTrait;
use serde_json::json;
use vps_graph::clock::Clock;
use vps_graph::store::entity::provider_volume as volume;
use vps_graph::store::queue;
use vps_graph::store::state::State;
use vps_graph::store::status::StatusWrite;

const START: i64 = 1_800_000_000_000;
const KIND: &str = "vps.provider-resources";

db_test!(a_write_back_is_refused_only_for_a_stale_lease_never_for_a_user_change, |backend: Backend| async move {
    let db = TestDb::new(backend).await;
    let clock = Clock::manual(START);
    let mut config = common::config(&db.url);
    config.clock = clock.clone();
    config.sim = Some(common::quick_sim());
    config.runtime.workers = 0;
    let server = TestServer::with_config(config).await;
    server.tenant("acme").await;
    let pool = server.sim_pool("sim", &["nyc3"], None).await;
    server.offer(&pool, "acme", json!([{ "resource": "diskGiB", "max": 100 }])).await;
    let token = server.token(Some("acme"), &[("compute:*", "tenant/acme")]).await;
    let gql = |query: &'static str, input: serde_json::Value| {
        let (server, token) = (&server, &token);
        async move { server.gql(Some(token), query, json!({ "i": input })).await }
    };
    let made = gql(
        "mutation($i: ProviderVolumeCreateInput!) { providerVolumeCreate(input: $i) { id } }",
        json!({ "tenantId": "acme", "poolId": pool, "name": "data", "region": "nyc3", "sizeGiB": 5, "idempotencyKey": "data" }),
    )
    .await;
    let id = made["data"]["providerVolumeCreate"]["id"].as_str().expect("made").to_owned();
    let conn = &server.app.services.db;
    let read = || async { volume::Entity::find_by_id(id.clone()).one(conn).await.unwrap().unwrap() };
    let now = clock.now();
    // A lease of no time (on the database's clock): the run holds it until another worker claims.
    let claimed = queue::claim(conn, "worker-a", &[KIND], clock.now_ms(), 0, 1).await.unwrap().pop().expect("due");
    let looked = read().await;

    let marked = StatusWrite::of(&id, looked.generation)
        .attempt(volume::Column::CreateAttempts)
        .write::<volume::Entity>(conn, &claimed, now)
        .await
        .unwrap()
        .expect("the attempt is recorded at the generation read");
    assert_eq!(marked.create_attempts, 1);

    // The tenant resizes while the create is out.
    let resized = gql(
        "mutation($i: ProviderVolumeResizeInput!) { providerVolumeResize(input: $i) { sizeGiB } }",
        json!({ "tenantId": "acme", "volumeId": id, "sizeGiB": 8 }),
    )
    .await;
    assert_eq!(resized["data"]["providerVolumeResize"]["sizeGiB"], 8, "{resized}");

    // The create's answer: the provider's id is kept; the READY decided on the old spec is not.
    let answered = StatusWrite::of(&id, looked.generation)
        .fact(volume::Column::ProviderId, Some("vol-1".to_owned()))
        .fact(volume::Column::ObservedSizeGib, Some(5_i64))
        .decided(volume::Column::Message, Some("made".to_owned()))
        .state(State::Ready)
        .write::<volume::Entity>(conn, &claimed, now)
        .await
        .unwrap()
        .expect("a user change never refuses a write-back");
    assert_eq!(answered.provider_id.as_deref(), Some("vol-1"));
    assert_eq!(answered.observed_size_gib, Some(5));
    assert_eq!(answered.state, looked.state, "the state waits for a decision on the new spec");
    assert_eq!(answered.message, None);
    assert!(answered.ready_at.is_none());
    assert_eq!(answered.size_gib, 8, "the tenant's change stands");
    assert!(answered.generation > looked.generation, "the resize is a new generation");
    assert!(answered.version > marked.version, "every write orders the row's events");

    // A call decided on the old spec is not sent: its attempt is not recorded.
    let stale_attempt = StatusWrite::of(&id, looked.generation)
        .attempt(volume::Column::CreateAttempts)
        .write::<volume::Entity>(conn, &claimed, now)
        .await
        .unwrap();
    assert!(stale_attempt.is_none());
    assert_eq!(read().await.create_attempts, 1);

    // Decided on the new spec, it is written, and the first READY stamps readyAt.
    let ready = StatusWrite::of(&id, answered.generation)
        .state(State::Ready)
        .write::<volume::Entity>(conn, &claimed, now)
        .await
        .unwrap()
        .expect("written");
    assert_eq!(ready.state, State::Ready);
    assert_eq!(ready.ready_at, Some(now));

    // Its lease has run out and another worker takes the resource: the first run writes nothing.
    clock.advance(1_000);
    queue::wake(conn, KIND, &id, clock.now_ms()).await.unwrap();
    let taken = queue::claim(conn, "worker-b", &[KIND], clock.now_ms(), 60_000, 1).await.unwrap();
    assert_eq!(taken.len(), 1, "the expired lease is claimed again");
    let late = StatusWrite::of(&id, ready.generation)
        .fact(volume::Column::ProviderId, Some("vol-2".to_owned()))
        .state(State::Error)
        .write::<volume::Entity>(conn, &claimed, clock.now())
        .await
        .unwrap();
    assert!(late.is_none(), "a stale lease writes nothing");
    let kept = read().await;
    assert_eq!((kept.provider_id.as_deref(), kept.state.as_str()), (Some("vol-1"), "ready"));
    assert_eq!(kept.version, ready.version);
});
