//! The store: SeaORM entities, the connection to SQLite or PostgreSQL, and the mechanisms every
//! resource service uses inside its transaction (quota ledger, idempotency records, outbox).
//! It knows nothing of HTTP or providers; its stored enums (`state`) carry their GraphQL names
//! too, so that a state is one type from the column to the API.
pub mod addresses;
pub mod admin;
pub mod attachments;
pub mod change;
pub mod columns;
pub mod entity;
pub mod filesystems;
pub mod firewall_rules;
pub mod health;
pub mod idempotency;
pub mod instances;
pub mod inventory;
pub mod list;
pub mod meta;
pub mod networks;
pub mod nodes;
pub mod notify;
pub mod outbox;
pub mod pools;
pub mod queue;
pub mod quota;
pub mod schedules;
pub mod session;
pub mod snapshots;
pub mod state;
pub mod status;
pub mod tenants;
pub mod tokens;
pub mod usage;
pub mod volumes;

use std::time::Duration;

use migrations::{Migrator, MigratorTrait};
use sea_orm::{
    ConnectOptions, ConnectionTrait, Database, DatabaseConnection, DbBackend, DbErr, Statement, TransactionTrait, Value,
};

/// Every SQL statement this process has run: `vps_graph_sql_statements` at /metrics, the figure
/// behind "statements per volume converged" in the bench.
pub static SQL_STATEMENTS: std::sync::LazyLock<prometheus_client::metrics::counter::Counter> =
    std::sync::LazyLock::new(Default::default);

tokio::task_local! {
    /// Counts the SQL statements run within its scope (one GraphQL request, whose DataLoader
    /// tasks carry it too): the figure behind "a page costs a constant number of statements".
    pub static STATEMENTS: std::sync::Arc<std::sync::atomic::AtomicU64>;
}

/// Connects to `url` (a `sqlite:` or `postgres:` URL) and applies pending migrations.
pub async fn connect(url: &str, max_connections: u32) -> crate::error::Result<DatabaseConnection> {
    let mut options = ConnectOptions::new(url.to_owned());
    // A statement that cannot have a connection within 5 s fails (UNAVAILABLE) rather than hold
    // its request while the database is away; the prober (`health`) tells the next ones at once.
    options.sqlx_logging(false).acquire_timeout(Duration::from_secs(5));
    // A connection is pinged before it is handed out only when it sat idle long enough for the
    // server or a proxy to have dropped it: a ping on every checkout was a round trip more per
    // statement, four more per page of a list.
    options.test_before_acquire_if_idle_for(Duration::from_secs(10));
    if url.starts_with("sqlite:") {
        // SQLite serializes writers; one connection makes that explicit instead of surfacing
        // SQLITE_BUSY on concurrent transactions, and it keeps `sqlite::memory:` alive.
        options.max_connections(1).min_connections(1).idle_timeout(None::<Duration>).max_lifetime(None::<Duration>);
    } else {
        options.max_connections(max_connections).min_connections(1);
    }
    let mut db = Database::connect(options).await?;
    db.set_metric_callback(|info| count_statement(info.statement));
    if db.get_database_backend() == DbBackend::Sqlite {
        db.execute_unprepared("PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = ON;")
            .await?;
    }
    migrate(&db).await?;
    outbox::ensure_feed_epoch(&db).await?;
    Ok(db)
}

/// Counts a statement run, in all and in the request running it (if any).
pub(crate) fn count_statement(statement: &Statement) {
    SQL_STATEMENTS.inc();
    let in_request = STATEMENTS.try_with(|count| count.fetch_add(1, std::sync::atomic::Ordering::Relaxed));
    // A request's statements with their values, at trace level: what the bench replays in
    // pgbench as "the service's own statements".
    if in_request.is_ok() {
        tracing::trace!(target: "vps_graph::sql", "{statement}");
    }
}

/// Applies pending migrations; on PostgreSQL under an advisory lock, so replicas starting
/// together take turns instead of racing.
async fn migrate(db: &DatabaseConnection) -> Result<(), DbErr> {
    if db.get_database_backend() != DbBackend::Postgres {
        // One transaction for them all: SQLite's DDL is transactional, and a commit per statement
        // was most of a first start's time.
        let txn = db.begin().await?;
        Migrator::up(&txn, None).await?;
        return txn.commit().await;
    }
    let lock = db.begin().await?;
    lock.execute_unprepared("SELECT pg_advisory_xact_lock(7301946151)").await?;
    let result = Migrator::up(db, None).await;
    lock.commit().await?;
    result
}

pub fn is_postgres(db: &DatabaseConnection) -> bool {
    db.get_database_backend() == DbBackend::Postgres
}

/// Takes `table`'s row lock for `id` on PostgreSQL (SQLite has one writer at a time). Every
/// transaction that writes resource rows, mutation or write-back, takes its locks in one order,
/// so that no two ever wait on each other in a cycle:
/// network → subnets → firewall rules → volumes → attachments → snapshots → addresses → instances → filesystems
/// → work items (taken last, by a wake or by the write-back's lease check).
pub async fn lock(conn: &impl ConnectionTrait, table: &str, id: &str) -> crate::error::Result<()> {
    if conn.get_database_backend() == DbBackend::Postgres {
        let sql = format!("SELECT id FROM {table} WHERE id = $1 FOR UPDATE");
        conn.execute_raw(Statement::from_sql_and_values(DbBackend::Postgres, sql, vec![id.into()])).await?;
    }
    Ok(())
}

/// Whether an insert failed on a unique or primary key.
pub fn is_unique_violation(err: &DbErr) -> bool {
    matches!(err.sql_err(), Some(sea_orm::SqlErr::UniqueConstraintViolation(_)))
}

/// What an insert's error means: a unique violation is CONFLICT on `field` (a name or id taken),
/// saying `message`; any other error is the database's.
pub fn taken(field: &'static str, message: impl FnOnce() -> String) -> impl FnOnce(DbErr) -> crate::error::Error {
    move |err| match is_unique_violation(&err) {
        true => crate::error::Error::conflict(message()).with_details(serde_json::json!({ "field": field })),
        false => err.into(),
    }
}

/// The database's words for a unique violation (they name the index or its columns), if it is one.
pub fn unique_violation(err: &DbErr) -> Option<String> {
    match err.sql_err() {
        Some(sea_orm::SqlErr::UniqueConstraintViolation(text)) => Some(text),
        _ => None,
    }
}

/// A statement written with `$n` placeholders, turned into `?` for SQLite.
pub(crate) fn stmt(backend: DbBackend, sql: &str, values: Vec<Value>) -> Statement {
    match backend {
        DbBackend::Postgres => Statement::from_sql_and_values(backend, sql, values),
        _ => {
            let (sql, values) = positional(sql, &values);
            Statement::from_sql_and_values(backend, sql, values)
        }
    }
}

/// `$1 … $n` → `?`, with each placeholder's value in the order they come: a value used twice is
/// bound twice. (SQLite's own `?1` would bind by number, but a statement written so cannot be
/// shown with its values inlined, as the SQL trace shows every statement.)
fn positional(sql: &str, values: &[Value]) -> (String, Vec<Value>) {
    let (mut out, mut bound) = (String::with_capacity(sql.len()), Vec::with_capacity(values.len()));
    let mut chars = sql.char_indices().peekable();
    while let Some((_, c)) = chars.next() {
        if c != '$' {
            out.push(c);
            continue;
        }
        let mut digits = String::new();
        while let Some(&(_, digit)) = chars.peek().filter(|(_, d)| d.is_ascii_digit()) {
            digits.push(digit);
            chars.next();
        }
        let value = digits.parse::<usize>().ok().and_then(|n| n.checked_sub(1)).and_then(|i| values.get(i));
        match value {
            Some(value) => {
                out.push('?');
                bound.push(value.clone());
            }
            None => {
                out.push('$');
                out.push_str(&digits);
            }
        }
    }
    (out, bound)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_value_used_twice_is_bound_twice_and_the_statement_shows_with_its_values() {
        let values: Vec<Value> = vec![5i64.into(), "acme".into()];
        let (sql, bound) = positional("UPDATE q SET used = used + $1 WHERE t = $2 AND ($1 <= 0) AND x = '$'", &values);
        assert_eq!(sql, "UPDATE q SET used = used + ? WHERE t = ? AND (? <= 0) AND x = '$'");
        assert_eq!(bound, vec![values[0].clone(), values[1].clone(), values[0].clone()]);
        let shown = stmt(DbBackend::Sqlite, "SELECT $1, $1, $3", values).to_string();
        assert_eq!(shown, "SELECT 5, 5, $3");
    }
}
