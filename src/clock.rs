//! The one clock every due time and lease is measured on, in milliseconds since the epoch.
//! Tests drive a manual clock instead of sleeping.
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};

#[derive(Clone, Debug, Default)]
pub struct Clock {
    manual: Option<Arc<AtomicI64>>,
}

impl Clock {
    pub fn system() -> Self {
        Clock { manual: None }
    }

    /// A clock that stands still until advanced.
    pub fn manual(start_ms: i64) -> Self {
        Clock { manual: Some(Arc::new(AtomicI64::new(start_ms))) }
    }

    pub fn now_ms(&self) -> i64 {
        match &self.manual {
            Some(now) => now.load(Ordering::SeqCst),
            None => chrono::Utc::now().timestamp_millis(),
        }
    }

    /// Moves a manual clock forward; a system clock ignores it.
    pub fn advance(&self, ms: i64) {
        if let Some(now) = &self.manual {
            now.fetch_add(ms, Ordering::SeqCst);
        }
    }

    pub fn now(&self) -> chrono::DateTime<chrono::Utc> {
        chrono::DateTime::from_timestamp_millis(self.now_ms()).unwrap_or_default()
    }
}
