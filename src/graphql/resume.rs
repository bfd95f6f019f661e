//! Where a resumed stream starts, and where it got to: a GraphQL-over-SSE request's
//! `Last-Event-ID` is the feed cursor of the last event its client saw, and each event a
//! subscription delivers is marked here, so the stream writes its cursor as the SSE `id`.
use std::sync::{Arc, Mutex};

/// A stream's resume point (`after`) and the cursor of the event it delivered last.
#[derive(Clone, Default)]
pub struct Resume {
    after: Option<String>,
    last: Arc<Mutex<Option<String>>>,
}

impl Resume {
    pub fn after(cursor: Option<String>) -> Resume {
        Resume { after: cursor, last: Arc::default() }
    }

    /// The cursor the stream resumes after, if it was asked to.
    pub fn start(&self) -> Option<&str> {
        self.after.as_deref()
    }

    /// Notes that the event at `cursor` is the one being delivered.
    pub fn mark(&self, cursor: &str) {
        if let Ok(mut last) = self.last.lock() {
            *last = Some(cursor.to_owned());
        }
    }

    /// The cursor of the event delivered last, taken (None once taken, or before any).
    pub fn take(&self) -> Option<String> {
        self.last.lock().ok().and_then(|mut last| last.take())
    }
}
