//! PostgreSQL `LISTEN`: calls `on_notify` for every notification on `channel` (the outbox and
//! the work queue send them at commit), reconnecting with a pause when the connection drops.
use std::time::Duration;

use sea_orm::DatabaseConnection;
use tokio_util::sync::CancellationToken;

const RECONNECT: Duration = Duration::from_secs(5);

pub async fn listen(db: DatabaseConnection, channel: &'static str, stop: CancellationToken, on_notify: impl Fn()) {
    let pool = db.get_postgres_connection_pool().clone();
    loop {
        let mut listener = match sqlx::postgres::PgListener::connect_with(&pool).await {
            Ok(listener) => listener,
            Err(err) => {
                tracing::warn!(error = %err, channel, "LISTEN could not connect; polling meanwhile");
                tokio::select! { _ = stop.cancelled() => return, _ = tokio::time::sleep(RECONNECT) => continue }
            }
        };
        if let Err(err) = listener.listen(channel).await {
            tracing::warn!(error = %err, channel, "LISTEN failed; polling meanwhile");
            tokio::select! { _ = stop.cancelled() => return, _ = tokio::time::sleep(RECONNECT) => continue }
        }
        loop {
            tokio::select! {
                _ = stop.cancelled() => return,
                note = listener.recv() => match note {
                    Ok(_) => on_notify(),
                    Err(err) => { tracing::warn!(error = %err, channel, "LISTEN dropped; reconnecting"); break; }
                }
            }
        }
        // Whatever was sent while reconnecting is caught by this wake and the poll.
        on_notify();
    }
}
