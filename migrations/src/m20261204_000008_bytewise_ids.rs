//! Identifiers compare byte by byte on PostgreSQL, as they do on SQLite (`BINARY`). Under the
//! database's collation (`C.UTF-8`, `en_US.UTF-8`: anything but `C`) every comparison of two ids
//! (a B-tree descent, a sort, a page's `id > after`) went through the C library's `strcoll`; with
//! `COLLATE "C"` it is a `memcmp`. Equality is the same either way; the order of ids, all of one
//! alphabet and case, is too. A column added later that holds an id says `COLLATE "C"` itself
//! (a test checks every one).
use sea_orm_migration::prelude::*;
use sea_orm_migration::sea_orm::{ConnectionTrait, DbBackend, Statement};

#[derive(DeriveMigrationName)]
pub struct Migration;

/// The identifier columns (`id`, `…_id`) of the schema that do not yet compare bytewise.
const ID_COLUMNS: &str = r#"
SELECT table_name::text, column_name::text, character_maximum_length::int
FROM information_schema.columns
WHERE table_schema = current_schema()
  AND data_type = 'character varying'
  AND (column_name = 'id' OR column_name LIKE '%\_id')
  AND collation_name IS DISTINCT FROM 'C'
ORDER BY table_name, ordinal_position
"#;

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        ids_bytewise(manager).await
    }
}

/// Makes every identifier column that does not compare bytewise do so (PostgreSQL only): the
/// migrations that add id columns end with it.
pub async fn ids_bytewise(manager: &SchemaManager<'_>) -> Result<(), DbErr> {
    let db = manager.get_connection();
    if db.get_database_backend() != DbBackend::Postgres {
        return Ok(());
    }
    let rows = db.query_all_raw(Statement::from_string(DbBackend::Postgres, ID_COLUMNS)).await?;
    let mut by_table: Vec<(String, Vec<String>)> = Vec::new();
    for row in rows {
        let (table, column, length): (String, String, i32) =
            (row.try_get_by_index(0)?, row.try_get_by_index(1)?, row.try_get_by_index(2)?);
        let change = format!("ALTER COLUMN \"{column}\" TYPE varchar({length}) COLLATE \"C\"");
        match by_table.last_mut() {
            Some((last, changes)) if *last == table => changes.push(change),
            _ => by_table.push((table, vec![change])),
        }
    }
    // One statement a table: its indexes are rebuilt once.
    for (table, changes) in by_table {
        db.execute_unprepared(&format!("ALTER TABLE \"{table}\" {}", changes.join(", "))).await?;
    }
    Ok(())
}
