//! `generation` on every resource row the reconcilers converge (networks have had it from the
//! start): bumped by each user change, so a
//! write-back can tell "the user changed something since I looked" from "my lease is gone".
use sea_orm_migration::prelude::*;

use crate::columns::big;

#[derive(DeriveMigrationName)]
pub struct Migration;

const TABLES: [&str; 7] = [
    "provider_volumes",
    "volume_attachments",
    "provider_snapshots",
    "provider_addresses",
    "instances",
    "network_subnets",
    "filesystems",
];

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        for table in TABLES {
            let add = Table::alter().table(Alias::new(table)).add_column(big(Alias::new("generation"), 1)).to_owned();
            manager.alter_table(add).await?;
        }
        Ok(())
    }
}
