//! A restore that names no size takes its snapshot's size as the provider reports it: the volume
//! records that it was asked so, to grow to that size when the snapshot turns out larger than
//! recorded (the source volume was resized before the provider took it).
use sea_orm_migration::prelude::*;

use crate::columns::flag;

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum ProviderVolumes {
    Table,
    SizeFromSnapshot,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        let add =
            Table::alter().table(ProviderVolumes::Table).add_column(flag(ProviderVolumes::SizeFromSnapshot)).to_owned();
        manager.alter_table(add).await
    }
}
