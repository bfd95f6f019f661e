//! Schema migrations of vps-graph. One module per migration: `DeriveMigrationName` takes the
//! migration's name from its module path.
pub use sea_orm_migration::prelude::*;

mod columns;

mod m20261129_000001_foundation;
mod m20261129_000002_networks;
mod m20261129_000003_volumes;
mod m20261201_000004_addresses;
mod m20261201_000005_usage;
mod m20261201_000006_filesystems;
mod m20261202_000007_generations;
mod m20261204_000008_bytewise_ids;
mod m20261205_000009_machines;
mod m20261206_000010_firewall_rules;
mod m20261207_000011_provider_calls;
mod m20261208_000012_inventory;
mod m20261209_000013_restore_size;
mod m20261210_000014_deletion_protection;
mod m20261211_000015_event_times;
mod m20261212_000016_rate_cards;
mod m20261213_000017_snapshot_schedules;

pub struct Migrator;

#[async_trait::async_trait]
impl MigratorTrait for Migrator {
    fn migrations() -> Vec<Box<dyn MigrationTrait>> {
        vec![
            Box::new(m20261129_000001_foundation::Migration),
            Box::new(m20261129_000002_networks::Migration),
            Box::new(m20261129_000003_volumes::Migration),
            Box::new(m20261201_000004_addresses::Migration),
            Box::new(m20261201_000005_usage::Migration),
            Box::new(m20261201_000006_filesystems::Migration),
            Box::new(m20261202_000007_generations::Migration),
            Box::new(m20261204_000008_bytewise_ids::Migration),
            Box::new(m20261205_000009_machines::Migration),
            Box::new(m20261206_000010_firewall_rules::Migration),
            Box::new(m20261207_000011_provider_calls::Migration),
            Box::new(m20261208_000012_inventory::Migration),
            Box::new(m20261209_000013_restore_size::Migration),
            Box::new(m20261210_000014_deletion_protection::Migration),
            Box::new(m20261211_000015_event_times::Migration),
            Box::new(m20261212_000016_rate_cards::Migration),
            Box::new(m20261213_000017_snapshot_schedules::Migration),
        ]
    }
}
