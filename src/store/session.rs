//! One connection for a group of reads. On PostgreSQL every statement sent to the pool checks a
//! connection out and back in, and sqlx tests the connection on its way back with a round trip
//! of its own (no option turns that off): a page of the dashboard's list, then four statements, was
//! eight round trips and four checkouts. A `Session` checks one connection out for all of a
//! page's statements and runs them on it with sqlx, whose rows are decoded as they are (not
//! wrapped and copied into SeaORM's). On SQLite (one connection, in process) it reads through
//! the pool as before.
//!
//! A session holds its connection until it is dropped, so it must not wait on the pool itself
//! while open: whatever reads within it reads through it.
use std::sync::Arc;

use sea_orm::{ConnectionTrait, DatabaseConnection, DbBackend, DbErr, QueryResult, RuntimeErr, Statement};
use sea_query_sqlx::SqlxValues;
use sqlx::Postgres;
use sqlx::pool::PoolConnection;
use sqlx::postgres::PgRow;
use tokio::sync::Mutex;
use tracing::instrument::WithSubscriber;
use tracing::subscriber::NoSubscriber;

use crate::error::Result;

/// A row as the backend gave it.
#[derive(Clone, Copy)]
pub enum Row<'r> {
    Postgres(&'r PgRow),
    Other(&'r QueryResult),
}

pub struct Session<'a> {
    db: &'a DatabaseConnection,
    /// PostgreSQL's connection, shared by the reads of the session that run concurrently.
    postgres: Option<Mutex<PoolConnection<Postgres>>>,
}

impl<'a> Session<'a> {
    pub async fn open(db: &'a DatabaseConnection) -> Result<Session<'a>> {
        let postgres = match db.get_database_backend() {
            DbBackend::Postgres => {
                let pool = db.get_postgres_connection_pool();
                let connection = pool.acquire().await.map_err(|err| DbErr::Conn(sqlx_error(err)))?;
                Some(Mutex::new(connection))
            }
            _ => None,
        };
        Ok(Session { db, postgres })
    }

    pub fn backend(&self) -> DbBackend {
        self.db.get_database_backend()
    }

    /// The rows `statement` finds, in order; it is counted as the pool's statements are
    /// (`super::count_statement`).
    pub async fn rows(&self, mut statement: Statement) -> Result<Rows> {
        let Some(postgres) = &self.postgres else {
            return Ok(Rows::Other(self.db.query_all_raw(statement).await?));
        };
        super::count_statement(&statement);
        let values = statement.values.take().unwrap_or(sea_orm::Values(Vec::new()));
        let query = sqlx::query_with(sqlx::AssertSqlSafe(statement.sql.as_str()), SqlxValues(values));
        let mut connection = postgres.lock().await;
        // sqlx enters the caller's span each time its row stream is polled, once a row: under a
        // request's span (the access log's) that was 6% of a page's instructions. Its statement
        // logging is off (`store::connect`), so nothing it would log is lost here.
        let fetch = query.fetch_all(&mut **connection).with_subscriber(NoSubscriber::default());
        Ok(Rows::Postgres(fetch.await.map_err(|err| DbErr::Query(sqlx_error(err)))?))
    }
}

/// The rows of a statement, as the backend gave them.
pub enum Rows {
    Postgres(Vec<PgRow>),
    Other(Vec<QueryResult>),
}

impl Rows {
    pub fn len(&self) -> usize {
        match self {
            Rows::Postgres(rows) => rows.len(),
            Rows::Other(rows) => rows.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn iter(&self) -> impl Iterator<Item = Row<'_>> {
        let (postgres, other): (&[PgRow], &[QueryResult]) = match self {
            Rows::Postgres(rows) => (rows, &[]),
            Rows::Other(rows) => (&[], rows),
        };
        postgres.iter().map(Row::Postgres).chain(other.iter().map(Row::Other))
    }
}

fn sqlx_error(err: sqlx::Error) -> RuntimeErr {
    RuntimeErr::SqlxError(Arc::new(err))
}
