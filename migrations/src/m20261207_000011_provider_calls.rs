//! A work item counts the state-changing provider calls its runs sent: each is recorded, on the
//! run's lease, before it is sent (a fenced attempt marker for the calls that have no attempt
//! column of their own), so a run whose lease changed hands sends nothing more. And it says what
//! it is due for (`asked`: a change someone made; `following`: a running action; `drift`: the
//! hourly read), which is the order an account's request budget serves them in.
use sea_orm_migration::prelude::*;

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum WorkItems {
    Table,
    ProviderCalls,
    DueFor,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        // One column a statement: SQLite alters a table one column at a time.
        manager
            .alter_table(
                Table::alter()
                    .table(WorkItems::Table)
                    .add_column(ColumnDef::new(WorkItems::ProviderCalls).big_integer().not_null().default(0))
                    .to_owned(),
            )
            .await?;
        manager
            .alter_table(
                Table::alter()
                    .table(WorkItems::Table)
                    .add_column(ColumnDef::new(WorkItems::DueFor).string().not_null().default("asked"))
                    .to_owned(),
            )
            .await
    }
}
