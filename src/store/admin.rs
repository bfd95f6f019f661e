//! Database administration on a PostgreSQL server, for the tests and the benchmark that make a
//! database of their own and drop it afterwards.

/// `base` (a `postgres://…/db?…` URL) with its database name replaced by `name`.
pub fn with_database(base: &str, name: &str) -> String {
    let (head, query) = base.split_once('?').map_or((base, None), |(h, q)| (h, Some(q)));
    let scheme_end = head.find("://").map_or(0, |i| i + 3);
    let host = head[scheme_end..].find('/').map_or(head, |i| &head[..scheme_end + i]);
    match query {
        Some(q) => format!("{host}/{name}?{q}"),
        None => format!("{host}/{name}"),
    }
}

/// Runs one statement (`CREATE DATABASE …`, `DROP DATABASE …`) on its own connection to `base`.
pub async fn execute(base: &str, sql: &str) -> Result<(), String> {
    use sqlx::Connection;
    let mut conn = sqlx::PgConnection::connect(base).await.map_err(|e| format!("postgres: {e}"))?;
    sqlx::raw_sql(sqlx::AssertSqlSafe(sql.to_owned()))
        .execute(&mut conn)
        .await
        .map_err(|e| format!("postgres: {e}"))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_database_name_is_replaced_and_the_options_kept() {
        assert_eq!(
            super::with_database("postgres://u@h:5432/test?sslmode=disable", "x"),
            "postgres://u@h:5432/x?sslmode=disable"
        );
        assert_eq!(super::with_database("postgres://u@h/test", "x"), "postgres://u@h/x");
    }
}
