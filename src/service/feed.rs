//! The event feed of one process: a single tailer reads new outbox rows (woken in-process after a
//! commit, by LISTEN/NOTIFY on PostgreSQL for other replicas' commits, and by a slow poll as a
//! safety net) and fans them out to subscribers over a broadcast channel; subscribers never query
//! per event. A subscriber that starts `after` a cursor, or falls behind the channel, reads from
//! the outbox until it has caught up, then goes live: no gap, no duplicate.
use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::Stream;
use sea_orm::{DatabaseConnection, DbBackend};
use tokio::sync::{Notify, broadcast};
use tokio_util::sync::CancellationToken;

use crate::error::{Code, Error, Result};
use crate::metrics::{GaugeGuard, Metrics};
use crate::service::authz::{Actor, Target, read_permission};
use crate::store::notify;
use crate::store::outbox::{self, Cursor, Event, Position};

const TAIL_BATCH: u64 = 512;
const REPLAY_PAGE: u64 = 256;
const CHANNEL_CAPACITY: usize = 2048;
const REPLAY_BACKOFF: Duration = Duration::from_secs(1);
const RECHECK: Duration = Duration::from_millis(50);
const RECHECK_FOR: Duration = Duration::from_secs(3);

#[derive(Clone)]
pub struct Feed {
    inner: Arc<Inner>,
}

struct Inner {
    db: DatabaseConnection,
    epoch: String,
    wake: Notify,
    live: Mutex<Live>,
    metrics: Arc<Metrics>,
}

/// The tailer's position and the channel it sends on, changed together under one lock so a new
/// subscriber knows exactly which events it will receive live.
struct Live {
    sender: broadcast::Sender<Arc<Event>>,
    head: Position,
}

/// Which events a subscriber or a page wants.
#[derive(Clone, Debug)]
pub struct Filter {
    pub actor: Actor,
    pub tenant_id: Option<String>,
    /// Exact types, or prefixes written `providerVolume.*`; empty means every type.
    pub types: Vec<String>,
    /// Only events about this subject.
    pub subject: Option<String>,
    /// Types left out, written as `types` are: a resource's own events without those its parts
    /// publish on it (a network without its filesystems').
    pub except: Vec<String>,
    /// Only the events of one part of the subject, named in their data under this key (a
    /// network's filesystem: `filesystemId`).
    pub part: Option<(&'static str, String)>,
}

impl Filter {
    /// The events of one resource whose types match `types` (e.g. `providerVolume.*`): what a
    /// `…Changed` subscription follows.
    pub fn resource(actor: &Actor, tenant_id: String, types: &str, subject: String) -> Filter {
        Filter {
            actor: actor.clone(),
            tenant_id: Some(tenant_id),
            types: vec![types.to_owned()],
            subject: Some(subject),
            except: Vec::new(),
            part: None,
        }
    }

    /// Leaves out the events whose types match `types`.
    pub fn except(mut self, types: &str) -> Filter {
        self.except.push(types.to_owned());
        self
    }

    /// Keeps only the events of the subject's part whose data names `id` under `key`.
    pub fn part(mut self, key: &'static str, id: String) -> Filter {
        self.part = Some((key, id));
        self
    }

    pub fn accepts(&self, event: &Event) -> bool {
        if self.tenant_id.is_some() && event.tenant_id != self.tenant_id {
            return false;
        }
        if self.subject.as_ref().is_some_and(|s| *s != event.subject) {
            return false;
        }
        if !self.types.is_empty() && !self.types.iter().any(|t| type_matches(t, &event.event_type)) {
            return false;
        }
        if self.except.iter().any(|t| type_matches(t, &event.event_type)) {
            return false;
        }
        if let Some((key, id)) = &self.part
            && event.data[*key].as_str() != Some(id.as_str())
        {
            return false;
        }
        match &event.tenant_id {
            Some(tenant_id) => {
                let target =
                    Target::resource(tenant_id, event.project_id.as_deref(), &event.subject_kind, &event.subject);
                self.actor.allows(read_permission(&event.subject_kind), &target)
            }
            None => self.actor.is_operator(),
        }
    }
}

fn type_matches(pattern: &str, event_type: &str) -> bool {
    match pattern.strip_suffix('*') {
        Some(prefix) => event_type.starts_with(prefix),
        None => pattern == event_type,
    }
}

impl Feed {
    /// Starts the tailer at the current end of the outbox.
    pub async fn start(
        db: DatabaseConnection,
        metrics: Arc<Metrics>,
        poll: Duration,
        stop: CancellationToken,
    ) -> Result<Feed> {
        let epoch = outbox::feed_epoch(&db).await?;
        let head = outbox::head(&db).await?;
        let (sender, _) = broadcast::channel(CHANNEL_CAPACITY);
        let feed = Feed {
            inner: Arc::new(Inner { db, epoch, wake: Notify::new(), live: Mutex::new(Live { sender, head }), metrics }),
        };
        if feed.inner.db.get_database_backend() == DbBackend::Postgres {
            // Other replicas' commits (the outbox trigger's NOTIFY).
            let woken = feed.clone();
            tokio::spawn(notify::listen(feed.inner.db.clone(), "vps_graph_outbox", stop.clone(), move || woken.wake()));
        }
        tokio::spawn(tail(feed.clone(), poll, stop));
        Ok(feed)
    }

    /// Tells the tailer new rows were committed.
    pub fn wake(&self) {
        self.inner.wake.notify_one();
    }

    pub fn epoch(&self) -> &str {
        &self.inner.epoch
    }

    pub fn cursor(&self, position: Position) -> String {
        Cursor { epoch: self.inner.epoch.clone(), position }.to_string()
    }

    pub fn parse_cursor(&self, text: &str) -> Result<Position> {
        Cursor::parse(text, &self.inner.epoch)
    }

    pub fn db(&self) -> &DatabaseConnection {
        &self.inner.db
    }

    /// Events the filter accepts, from `after` (replayed from the outbox) or from now on, in feed
    /// order, until the feed stops.
    pub fn subscribe(
        &self,
        filter: Filter,
        after: Option<Position>,
    ) -> impl Stream<Item = Result<Arc<Event>>> + Send + 'static + use<> {
        let (receiver, head) = {
            let live = self.inner.live.lock().unwrap_or_else(|e| e.into_inner());
            (live.sender.subscribe(), live.head)
        };
        let state = Subscriber {
            feed: self.clone(),
            filter,
            receiver,
            last: after.unwrap_or(head),
            replaying: after.is_some(),
            ready: VecDeque::new(),
            revoked: false,
            told_revoked: false,
            _open: GaugeGuard::new(&self.inner.metrics.subscribers),
        };
        futures_util::stream::unfold(state, |mut state| async move {
            let item = state.next().await?;
            Some((item, state))
        })
    }
}

struct Subscriber {
    feed: Feed,
    filter: Filter,
    receiver: broadcast::Receiver<Arc<Event>>,
    /// The position of the last event this subscriber has passed (delivered or filtered out).
    last: Position,
    replaying: bool,
    ready: VecDeque<Arc<Event>>,
    /// Set when the subscriber's own token is revoked: the stream says so and ends.
    revoked: bool,
    told_revoked: bool,
    _open: GaugeGuard,
}

impl Subscriber {
    async fn next(&mut self) -> Option<Result<Arc<Event>>> {
        loop {
            if let Some(event) = self.ready.pop_front() {
                self.feed.inner.metrics.events_delivered.inc();
                return Some(Ok(event));
            }
            if self.revoked {
                if self.told_revoked {
                    return None;
                }
                self.told_revoked = true;
                return Some(Err(Error::new(Code::Unauthenticated, "the bearer token was revoked")));
            }
            if self.replaying {
                if let Err(err) = self.replay_page().await {
                    // Say so, then try again after a pause rather than in a tight loop.
                    tokio::time::sleep(REPLAY_BACKOFF).await;
                    return Some(Err(err));
                }
                continue;
            }
            match self.receiver.recv().await {
                Ok(event) => self.pass(event),
                Err(broadcast::error::RecvError::Lagged(_)) => self.replaying = true,
                Err(broadcast::error::RecvError::Closed) => return None,
            }
        }
    }

    async fn replay_page(&mut self) -> Result<()> {
        let tenant = self.filter.tenant_id.as_deref();
        let page = outbox::read_after(self.feed.db(), self.last, tenant, REPLAY_PAGE).await?;
        if (page.len() as u64) < REPLAY_PAGE {
            self.replaying = false;
        }
        for event in page {
            self.pass(Arc::new(event));
        }
        Ok(())
    }

    fn pass(&mut self, event: Arc<Event>) {
        if event.position <= self.last || self.revoked {
            return;
        }
        self.last = event.position;
        if event.event_type == "token.revoked" && self.filter.actor.token_id.as_ref() == Some(&event.subject) {
            self.revoked = true;
            self.ready.clear();
            return;
        }
        if self.filter.accepts(&event) {
            self.ready.push_back(event);
        }
    }
}

async fn tail(feed: Feed, poll: Duration, stop: CancellationToken) {
    // After a wake, look again briefly at a short interval: on PostgreSQL a commit's rows stay
    // behind the horizon while an older transaction anywhere on the cluster is still running,
    // and no second notification comes when it ends.
    let mut recheck_until = tokio::time::Instant::now();
    loop {
        let now = tokio::time::Instant::now();
        let wait = if now < recheck_until { RECHECK.min(poll) } else { poll };
        tokio::select! {
            _ = stop.cancelled() => break,
            _ = feed.inner.wake.notified() => recheck_until = tokio::time::Instant::now() + RECHECK_FOR,
            _ = tokio::time::sleep(wait) => {}
        }
        if let Err(err) = drain(&feed).await {
            tracing::warn!(error = err.describe(), "feed tailer could not read the outbox");
        }
    }
    // Dropping the sender ends every live subscription.
    let (closed, _) = broadcast::channel(1);
    feed.inner.live.lock().unwrap_or_else(|e| e.into_inner()).sender = closed;
}

async fn drain(feed: &Feed) -> Result<()> {
    loop {
        let head = feed.inner.live.lock().unwrap_or_else(|e| e.into_inner()).head;
        let batch = outbox::read_after(feed.db(), head, None, TAIL_BATCH).await?;
        let full = batch.len() as u64 == TAIL_BATCH;
        feed.inner.metrics.events_tailed.inc_by(batch.len() as u64);
        if let Some(newest) = batch.last() {
            let age = chrono::Utc::now().signed_duration_since(newest.time);
            feed.inner.metrics.feed_lag_seconds.set(age.num_milliseconds().max(0) as f64 / 1000.0);
        }
        let mut live = feed.inner.live.lock().unwrap_or_else(|e| e.into_inner());
        for event in batch {
            live.head = event.position;
            let _ = live.sender.send(Arc::new(event));
        }
        if !full {
            return Ok(());
        }
    }
}

#[cfg(test)]
mod tests {
    use chrono::Utc;
    use serde_json::json;

    use super::*;

    fn event(event_type: &str, data: serde_json::Value) -> Event {
        Event {
            position: Position::default(),
            id: "evt_1".into(),
            event_type: event_type.into(),
            source: "vps-graph".into(),
            subject_kind: "network".into(),
            subject: "net_1".into(),
            tenant_id: Some("acme".into()),
            project_id: None,
            version: 1,
            time: Utc::now(),
            data,
        }
    }

    #[test]
    fn a_network_is_followed_without_its_filesystems_and_a_filesystem_alone() {
        let actor = Actor::system();
        let network =
            Filter::resource(&actor, "acme".into(), "network.*", "net_1".into()).except("network.filesystem.*");
        assert!(network.accepts(&event("network.ready", json!({ "id": "net_1" }))));
        assert!(!network.accepts(&event("network.filesystem.ready", json!({ "filesystemId": "fs_1" }))));
        let one = Filter::resource(&actor, "acme".into(), "network.filesystem.*", "net_1".into())
            .part("filesystemId", "fs_1".into());
        assert!(one.accepts(&event("network.filesystem.ready", json!({ "filesystemId": "fs_1" }))));
        assert!(!one.accepts(&event("network.filesystem.ready", json!({ "filesystemId": "fs_2" }))), "another part");
        assert!(!one.accepts(&event("network.ready", json!({ "id": "net_1" }))), "the network's own");
    }
}
