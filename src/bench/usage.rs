//! The usage pass's figures: how long `vps.ancillary-usage` takes over a tenant of many ready
//! volumes with a day of closed hours each (the windows it writes per second), and how long a
//! second pass takes that finds everything written already. On PostgreSQL the tables are analyzed
//! between the passes, as after any seeding (autovacuum may be off): the first pass writes every
//! window the second reads, and the second was timed with the planner's statistics from before.
use std::time::Instant;

use chrono::Duration;
use sea_orm::{EntityTrait, Set};

use super::{ADMIN, BenchArgs, BenchResult, Server};
use crate::app::{App, AppConfig};
use crate::clock::Clock;
use crate::config::LimitArgs;
use crate::reconcile::RuntimeConfig;
use crate::reconcile::usage;
use crate::store::entity::provider_volume as volume;
use crate::store::state::{Desired, State, VolumeKind};

pub struct UsageFigures {
    pub windows: u64,
    pub first_secs: f64,
    pub second_secs: f64,
    pub second_windows: u64,
    pub seed_secs: f64,
}

/// Hours each seeded volume has been ready.
pub const HOURS: i64 = 24;

/// Who a bench's seeded rows belong to.
pub(super) struct Owner {
    pub tenant: String,
    pub pool: String,
    pub account: String,
}

impl Owner {
    /// A volume of `kind`, ready since `at` at `size_gib` (the size the provider showed too),
    /// with `provider_id` if it is known at the provider.
    pub(super) fn ready_volume(
        &self,
        name: &str,
        kind: VolumeKind,
        size_gib: i64,
        provider_id: Option<String>,
        at: chrono::DateTime<chrono::Utc>,
    ) -> volume::ActiveModel {
        let id = crate::ids::new_id(crate::ids::VOLUME);
        volume::ActiveModel {
            provider_name: Set(crate::service::volumes::provider_name(&id)),
            id: Set(id),
            tenant_id: Set(self.tenant.clone()),
            project_id: Set(None),
            pool_id: Set(self.pool.clone()),
            provider_account_id: Set(self.account.clone()),
            name: Set(name.to_owned()),
            description: Set(None),
            region: Set("nyc3".into()),
            kind: Set(kind),
            network_id: Set(None),
            filesystem: Set(None),
            delete_with_instance: Set(false),
            source_snapshot_id: Set(None),
            size_from_snapshot: Set(false),
            size_gib: Set(size_gib),
            observed_size_gib: Set(Some(size_gib)),
            state: Set(State::Ready),
            desired_state: Set(Desired::Present),
            provider_id: Set(provider_id),
            device: Set(None),
            mount_source: Set(None),
            create_attempts: Set(1),
            lost: Set(false),
            action_id: Set(None),
            message: Set(None),
            deletion_protection: Set(false),
            version: Set(1),
            generation: Set(1),
            created_at: Set(at),
            updated_at: Set(at),
            ready_at: Set(Some(at)),
            deleted_at: Set(None),
        }
    }
}

/// Seeds `args.usage_volumes` volumes ready `HOURS` hours ago in a metered pool, then runs the
/// pass twice in this process (reconcile workers off, so nothing else writes).
pub async fn pass_figures(database_url: &str, args: &BenchArgs) -> BenchResult<UsageFigures> {
    let (tenant, pool) = {
        let server = Server::start_with(database_url, &["--no-sim", "--reconcile-workers", "0"]).await?;
        super::volumes::tenant_with_pool(&server.client, "http://127.0.0.1:9", "bench-usage").await?
    };
    let app = App::start(AppConfig {
        database_url: database_url.to_owned(),
        db_max_connections: 16,
        admin_token: Some(ADMIN.into()),
        metrics_token: None,
        demo: false,
        limits: LimitArgs::default(),
        load: crate::config::LoadArgs::default(),
        sim: None,
        runtime: RuntimeConfig { workers: 0, ..RuntimeConfig::default() },
        provider_timeout: std::time::Duration::from_secs(5),
        clock: Clock::system(),
    })
    .await
    .map_err(|e| e.describe())?;
    let services = &app.services;
    let now = services.clock.now();
    let ready = now - Duration::hours(HOURS) - Duration::minutes(30);
    let account = crate::store::entity::pool::Entity::find_by_id(pool.clone())
        .one(&services.db)
        .await
        .map_err(|e| e.to_string())?
        .ok_or("the pool vanished")?
        .provider_account_id;
    let seeding = Instant::now();
    let owner = Owner { tenant: tenant.clone(), pool: pool.clone(), account: account.clone() };
    for chunk in (0..args.usage_volumes).collect::<Vec<_>>().chunks(500) {
        let rows = chunk.iter().map(|i| owner.ready_volume(&format!("v-{i}"), VolumeKind::Block, 10, None, ready));
        volume::Entity::insert_many(rows).exec(&services.db).await.map_err(|e| e.to_string())?;
    }
    let seed_secs = seeding.elapsed().as_secs_f64();
    let first = Instant::now();
    let windows = usage::pass(services, now).await.map_err(|e| e.describe())?;
    let first_secs = first.elapsed().as_secs_f64();
    if database_url.starts_with("postgres") {
        crate::store::admin::execute(database_url, "ANALYZE").await?;
    }
    let second = Instant::now();
    let second_windows = usage::pass(services, now).await.map_err(|e| e.describe())?;
    let second_secs = second.elapsed().as_secs_f64();
    app.shutdown(std::time::Duration::from_secs(5)).await;
    Ok(UsageFigures { windows, first_secs, second_secs, second_windows, seed_secs })
}
