//! A provider account records when its last whole inventory pass began: every settled resource
//! that pass listed was read for drift then, which operators read as the oldest drift read.
use sea_orm_migration::prelude::*;

use crate::columns::time;

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum ProviderAccounts {
    Table,
    ListedAt,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .alter_table(
                Table::alter()
                    .table(ProviderAccounts::Table)
                    .add_column(time(ProviderAccounts::ListedAt, true))
                    .to_owned(),
            )
            .await
    }
}
