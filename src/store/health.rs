//! Whether the database answers, known before a request needs it: a prober asks it every
//! second on a connection of its own (never the pool's, which a busy moment may fill without the
//! database being down), so that `/readyz` and every request can tell at once that it is
//! unreachable instead of each waiting for the pool to give up, and know again within a second
//! of its return. SQLite is a file of this process: always reachable.
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use sqlx::Connection;
use tokio_util::sync::CancellationToken;

/// How often the database is asked, how long an answer may take, and how many in a row must go
/// unanswered before it is taken for away (one slow answer on a busy machine is not an outage).
const EVERY: Duration = Duration::from_secs(1);
const WAIT: Duration = Duration::from_secs(2);
const MISSED: u32 = 2;

/// The last answer of the prober.
#[derive(Clone)]
pub struct Health {
    up: Arc<AtomicBool>,
}

impl Health {
    /// Reachable until told otherwise.
    pub fn up() -> Health {
        Health { up: Arc::new(AtomicBool::new(true)) }
    }

    pub fn is_up(&self) -> bool {
        self.up.load(Ordering::Relaxed)
    }

    fn set(&self, up: bool) {
        if self.up.swap(up, Ordering::Relaxed) != up {
            match up {
                true => tracing::info!("the database answers again"),
                false => tracing::warn!("the database does not answer: requests are refused until it does"),
            }
        }
    }

    /// Asks the PostgreSQL database at `url` every second until `stop`; a SQLite database is
    /// never asked.
    pub fn watch(&self, url: &str, stop: CancellationToken) {
        if !url.starts_with("postgres") {
            return;
        }
        let (health, url) = (self.clone(), url.to_owned());
        tokio::spawn(async move {
            let mut connection: Option<sqlx::PgConnection> = None;
            let mut tick = tokio::time::interval(EVERY);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            let mut missed = 0;
            loop {
                tokio::select! {
                    _ = stop.cancelled() => return,
                    _ = tick.tick() => {}
                }
                let answered = match tokio::time::timeout(WAIT, probe(&url, &mut connection)).await {
                    Ok(Ok(())) => true,
                    // The database answered, if only to refuse (every connection taken, say): it
                    // is there.
                    Ok(Err(sqlx::Error::Database(_))) => true,
                    Ok(Err(_)) | Err(_) => false,
                };
                if !answered {
                    connection = None;
                }
                missed = if answered { 0 } else { missed + 1 };
                health.set(missed < MISSED);
            }
        });
    }
}

async fn probe(url: &str, connection: &mut Option<sqlx::PgConnection>) -> Result<(), sqlx::Error> {
    if connection.is_none() {
        *connection = Some(sqlx::PgConnection::connect(url).await?);
    }
    match connection {
        Some(open) => open.ping().await,
        None => Ok(()),
    }
}
