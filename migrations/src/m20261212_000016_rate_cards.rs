//! A pool's rate card: the price per unit of each usage meter, in one currency (JSON, none until
//! an operator sets one), from which usage answers its cost and a dry run its monthly price.
use sea_orm_migration::prelude::*;

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum Pools {
    Table,
    Rates,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        let add =
            Table::alter().table(Pools::Table).add_column(ColumnDef::new(Pools::Rates).json_binary().null()).to_owned();
        manager.alter_table(add).await
    }
}
