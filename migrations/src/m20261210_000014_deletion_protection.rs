//! Deletion protection: a volume, snapshot, address or filesystem that has it is refused a delete
//! (and an instance delete that would take such a volume with it) until it is turned off.
use sea_orm_migration::prelude::*;

use crate::columns::flag;

#[derive(DeriveMigrationName)]
pub struct Migration;

const TABLES: [&str; 4] = ["provider_volumes", "provider_snapshots", "provider_addresses", "filesystems"];

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        for table in TABLES {
            let add =
                Table::alter().table(Alias::new(table)).add_column(flag(Alias::new("deletion_protection"))).to_owned();
            manager.alter_table(add).await?;
        }
        Ok(())
    }
}
