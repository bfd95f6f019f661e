//! What a pool offers of machines, and instances and filesystems metered as volumes are: a
//! pool's `sizes` and `images` (JSON arrays; empty offers any the provider makes), and the index
//! the usage pass reads instances and filesystems through.
use sea_orm_migration::prelude::*;

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum Pools {
    Table,
    Sizes,
    Images,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        // One column a statement: SQLite alters a table one column at a time.
        for column in [Pools::Sizes, Pools::Images] {
            manager
                .alter_table(
                    Table::alter()
                        .table(Pools::Table)
                        .add_column(ColumnDef::new(column).json_binary().not_null().default("[]"))
                        .to_owned(),
                )
                .await?;
        }
        let db = manager.get_connection();
        for table in ["instances", "filesystems"] {
            db.execute_unprepared(&format!(
                "CREATE INDEX {table}_billable ON {table} (deleted_at, id) WHERE ready_at IS NOT NULL"
            ))
            .await?;
        }
        Ok(())
    }
}
