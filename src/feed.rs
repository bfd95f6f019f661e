//! The event feed of one process: a single tailer reads new outbox rows (woken in-process after a
//! commit, by LISTEN/NOTIFY on PostgreSQL for other replicas' commits, and by a slow poll as a
//! safety net) and hands each event to the subscribers routed to it (by subject, by tenant, or
//! the whole feed), each over its own bounded queue: an event costs work for the subscribers it
//! may concern, not for every open subscription, and it is decoded once and shared by all of them.
//! Subscribers never query per event. A subscriber that starts `after` a cursor, or whose queue
//! overflowed, reads from the outbox until it has caught up, then goes live: no gap, no duplicate.
use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use chrono::{DateTime, Utc};
use futures_util::Stream;
use sea_orm::{DatabaseConnection, DbBackend};
use tokio::sync::{Notify, mpsc};
use tokio_util::sync::CancellationToken;

use crate::authz::{Actor, Target, read_permission};
use crate::clock::Clock;
use crate::error::{Code, Error, Result};
use crate::metrics::Metrics;
use crate::store::notify;
use crate::store::outbox::{self, Cursor, Event, Position};

const TAIL_BATCH: u64 = 512;
const TOKEN: &str = "token";
const REPLAY_PAGE: u64 = 256;
/// Events a subscriber's queue holds before it overflows (it then reads from the outbox).
const QUEUE_CAPACITY: usize = 256;
const BEHIND_RETENTION: &str = "cursorBehindRetention";
/// The longest a transaction is taken to stay open between its first write and its events:
/// within it, feed order and the events' stamps may disagree (see `outbox::first_since`).
const SINCE_SLACK: chrono::Duration = chrono::Duration::seconds(60);
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
    next_slot: AtomicU64,
    metrics: Arc<Metrics>,
    /// The app's clock, which events are stamped with.
    clock: Clock,
}

/// The tailer's position and the routes it hands events on, changed together under one lock so
/// a new subscriber knows exactly which events it will receive live.
struct Live {
    head: Position,
    routes: Routes,
    /// Set when the feed stops: no route is taken any more.
    stopped: bool,
}

/// Where a subscriber is reached: the queue the tailer pushes to, and the flag it raises when
/// the queue was full (the subscriber then reads what it missed from the outbox).
#[derive(Clone)]
struct Slot {
    queue: mpsc::Sender<Arc<Event>>,
    overflowed: Arc<AtomicBool>,
}

/// A route an event is looked up by.
#[derive(Clone, PartialEq, Eq, Hash)]
enum Route {
    /// Every event (the operator's whole feed).
    All,
    Tenant(String),
    Subject(String),
}

#[derive(Default)]
struct Routes(HashMap<Route, HashMap<u64, Slot>>);

impl Routes {
    fn add(&mut self, route: Route, id: u64, slot: Slot) {
        self.0.entry(route).or_default().insert(id, slot);
    }

    fn remove(&mut self, route: &Route, id: u64) {
        if let Some(slots) = self.0.get_mut(route) {
            slots.remove(&id);
            if slots.is_empty() {
                self.0.remove(route);
            }
        }
    }

    /// Hands `event` to every subscriber routed to it; a full queue is told it overflowed.
    /// Once it has, nothing more is queued until the subscriber took note (and reads on from the
    /// outbox): what it queued next would pass before what was dropped, which the subscriber
    /// then skips as behind it.
    fn deliver(&self, event: &Arc<Event>) {
        let subject = Route::Subject(event.subject.clone());
        let tenant = event.tenant_id.clone().map(Route::Tenant);
        for route in [Some(&Route::All), tenant.as_ref(), Some(&subject)].into_iter().flatten() {
            for slot in self.0.get(route).into_iter().flat_map(HashMap::values) {
                if slot.overflowed.load(Ordering::Acquire) {
                    continue;
                }
                if let Err(mpsc::error::TrySendError::Full(_)) = slot.queue.try_send(event.clone()) {
                    slot.overflowed.store(true, Ordering::Release);
                }
            }
        }
    }
}

impl Filter {
    /// The routes that reach every event this filter may accept: its subject's, else its
    /// tenant's, else the whole feed's; and its own token's, whose revocation ends it.
    fn routes(&self) -> Vec<Route> {
        let mut routes = vec![match (&self.subject, &self.tenant_id) {
            (Some(subject), _) => Route::Subject(subject.clone()),
            (None, Some(tenant_id)) => Route::Tenant(tenant_id.clone()),
            (None, None) => Route::All,
        }];
        if let Some(token_id) = &self.actor.token_id
            && self.subject.as_ref() != Some(token_id)
        {
            routes.push(Route::Subject(token_id.clone()));
        }
        routes
    }
}

/// A subscriber's place on its routes, given up when it is dropped.
struct Registration {
    feed: Feed,
    id: u64,
    routes: Vec<Route>,
    /// Whether it took its place (not once the feed has stopped), and counts in the gauge.
    placed: bool,
}

impl Drop for Registration {
    fn drop(&mut self) {
        let mut live = self.feed.inner.live.lock().unwrap_or_else(|e| e.into_inner());
        for route in &self.routes {
            live.routes.remove(route, self.id);
        }
        if self.placed {
            self.feed.inner.metrics.feed_registered.dec();
        }
    }
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
            // Tokens are read by operators alone (`tokens`), a tenant's own included.
            Some(_) if event.subject_kind == TOKEN => self.actor.is_operator(),
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
        clock: Clock,
        poll: Duration,
        stop: CancellationToken,
    ) -> Result<Feed> {
        let epoch = outbox::feed_epoch(&db).await?;
        let head = outbox::head(&db).await?;
        let live = Live { head, routes: Routes::default(), stopped: false };
        let feed = Feed {
            inner: Arc::new(Inner {
                db,
                epoch,
                wake: Notify::new(),
                live: Mutex::new(live),
                next_slot: AtomicU64::new(0),
                metrics,
                clock,
            }),
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

    /// Where the feed kept starts: every event after it is kept.
    pub async fn horizon(&self) -> Result<Position> {
        outbox::horizon(self.db()).await
    }

    /// Up to `limit` events after `after` (narrowed to a tenant's), or from the oldest event kept
    /// when `after` is None. Refused when retention has removed events after `after`: the
    /// reader would otherwise skip them without knowing.
    pub async fn read_after(&self, after: Option<Position>, tenant_id: Option<&str>, limit: u64) -> Result<Vec<Event>> {
        let events = outbox::read_after(self.db(), after.unwrap_or_default(), tenant_id, limit).await?;
        if let Some(after) = after {
            // Checked after the page: a removal the page saw has moved the horizon already.
            self.check_retained(after).await?;
        }
        Ok(events)
    }

    /// Where a read of the events (of `tenant_id`'s, if given) from `since` on starts: just before
    /// the first in feed order stamped at or after it, and no later than what a reader may see now
    /// (a transaction still open may commit events stamped after `since`), so none is skipped.
    /// Refused like a cursor when retention may have removed events stamped since then: a removed
    /// event precedes the first kept in the feed, so it was stamped at most `SINCE_SLACK` after it.
    pub async fn start_since(&self, tenant_id: Option<&str>, since: DateTime<Utc>) -> Result<Position> {
        let horizon = self.horizon().await?;
        if horizon != Position::default()
            && outbox::first_time_after(self.db(), horizon)
                .await?
                .is_some_and(|first_kept| since <= first_kept + SINCE_SLACK)
        {
            return Err(Error::invalid_input(
                "since",
                "the events since then are older than the feed keeps: read again from `retainedAfter`",
            )
            .with_details(serde_json::json!({
                "field": "since",
                "reason": BEHIND_RETENTION,
                "retainedAfter": self.cursor(horizon),
            })));
        }
        let head = outbox::head(self.db()).await?;
        let start = match outbox::first_since(self.db(), tenant_id, since, SINCE_SLACK).await? {
            Some(first) => first.just_before().min(head),
            None => head,
        };
        // On a quiet feed the head may be the feed's start, behind what retention removed.
        Ok(start.max(horizon))
    }

    /// Refuses a position retention has removed events after (INVALID_INPUT, reason
    /// `cursorBehindRetention`, with the cursor to read on from if the gap is acceptable).
    pub async fn check_retained(&self, after: Position) -> Result<()> {
        let horizon = self.horizon().await?;
        if after >= horizon {
            return Ok(());
        }
        Err(Error::invalid_input(
            "after",
            "the events after this cursor are older than the feed keeps: read again from `retainedAfter`",
        )
        .with_details(serde_json::json!({
            "field": "after",
            "reason": BEHIND_RETENTION,
            "retainedAfter": self.cursor(horizon),
        })))
    }

    /// Whether the feed has stopped (the process is shutting down): its streams ended for that,
    /// not because their subscriptions were over.
    pub fn is_stopped(&self) -> bool {
        self.inner.live.lock().unwrap_or_else(|e| e.into_inner()).stopped
    }

    /// How many live subscriptions are registered (one per execution, one per socket watching
    /// its token): a subscription made before an event sees it once it counts here, not when its
    /// socket was answered.
    pub fn registered(&self) -> usize {
        let live = self.inner.live.lock().unwrap_or_else(|e| e.into_inner());
        let ids: std::collections::HashSet<u64> =
            live.routes.0.values().flat_map(|slots| slots.keys().copied()).collect();
        ids.len()
    }

    /// Events the filter accepts, from `after` (replayed from the outbox) or from now on, in feed
    /// order, until the feed stops.
    pub fn subscribe(
        &self,
        filter: Filter,
        after: Option<Position>,
    ) -> impl Stream<Item = Result<Arc<Event>>> + Send + 'static + use<> {
        let (queue, receiver) = mpsc::channel(QUEUE_CAPACITY);
        let overflowed = Arc::new(AtomicBool::new(false));
        let mut registration = Registration {
            feed: self.clone(),
            id: self.inner.next_slot.fetch_add(1, Ordering::Relaxed),
            routes: filter.routes(),
            placed: false,
        };
        let head = {
            let mut live = self.inner.live.lock().unwrap_or_else(|e| e.into_inner());
            if !live.stopped {
                let slot = Slot { queue, overflowed: overflowed.clone() };
                for route in &registration.routes {
                    live.routes.add(route.clone(), registration.id, slot.clone());
                }
                registration.placed = true;
                self.inner.metrics.feed_registered.inc();
            }
            live.head
        };
        let state = Subscriber {
            feed: self.clone(),
            filter,
            receiver,
            overflowed,
            _registration: registration,
            last: after.unwrap_or(head),
            replaying: after.is_some(),
            ready: VecDeque::new(),
            ending: None,
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
    receiver: mpsc::Receiver<Arc<Event>>,
    overflowed: Arc<AtomicBool>,
    _registration: Registration,
    /// The position of the last event this subscriber has passed (delivered or filtered out).
    last: Position,
    replaying: bool,
    ready: VecDeque<Arc<Event>>,
    /// Set when the stream is to end: after it has said why (its token was revoked, its cursor
    /// fell behind retention), once.
    ending: Option<Ending>,
}

enum Ending {
    Tell(Error),
    Told,
}

impl Subscriber {
    async fn next(&mut self) -> Option<Result<Arc<Event>>> {
        loop {
            if let Some(event) = self.ready.pop_front() {
                self.feed.inner.metrics.events_delivered.inc();
                return Some(Ok(event));
            }
            match self.ending.replace(Ending::Told) {
                Some(Ending::Tell(why)) => return Some(Err(why)),
                Some(Ending::Told) => return None,
                None => self.ending = None,
            }
            if self.replaying {
                if let Err(err) = self.replay_page().await {
                    if err.details["reason"] == BEHIND_RETENTION {
                        // Nothing a retry would change.
                        self.ending = Some(Ending::Tell(err));
                        continue;
                    }
                    // Say so, then try again after a pause rather than in a tight loop.
                    tokio::time::sleep(REPLAY_BACKOFF).await;
                    return Some(Err(err));
                }
                continue;
            }
            // What is queued is in feed order and came before any overflow: pass it first, then
            // read what the overflow dropped from the outbox (passed events are skipped there).
            match self.receiver.try_recv() {
                Ok(event) => self.pass(event),
                Err(_) if self.overflowed.swap(false, Ordering::AcqRel) => self.replaying = true,
                Err(mpsc::error::TryRecvError::Disconnected) => return None,
                Err(mpsc::error::TryRecvError::Empty) => match self.receiver.recv().await {
                    Some(event) => self.pass(event),
                    None => return None,
                },
            }
        }
    }

    async fn replay_page(&mut self) -> Result<()> {
        let tenant = self.filter.tenant_id.as_deref();
        let page = self.feed.read_after(Some(self.last), tenant, REPLAY_PAGE).await?;
        if (page.len() as u64) < REPLAY_PAGE {
            self.replaying = false;
        }
        for event in page {
            self.pass(Arc::new(event));
        }
        Ok(())
    }

    fn pass(&mut self, event: Arc<Event>) {
        if event.position <= self.last || self.ending.is_some() {
            return;
        }
        self.last = event.position;
        if event.event_type == "token.revoked" && self.filter.actor.token_id.as_ref() == Some(&event.subject) {
            self.ending = Some(Ending::Tell(Error::new(Code::Unauthenticated, "the bearer token was revoked")));
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
    // Dropping the queues' senders ends every live subscription.
    let mut live = feed.inner.live.lock().unwrap_or_else(|e| e.into_inner());
    live.stopped = true;
    live.routes = Routes::default();
}

async fn drain(feed: &Feed) -> Result<()> {
    loop {
        let head = feed.inner.live.lock().unwrap_or_else(|e| e.into_inner()).head;
        let batch = outbox::read_after(feed.db(), head, None, TAIL_BATCH).await?;
        let full = batch.len() as u64 == TAIL_BATCH;
        feed.inner.metrics.events_tailed.inc_by(batch.len() as u64);
        if let Some(newest) = batch.last() {
            let age = feed.inner.clock.now().signed_duration_since(newest.time);
            feed.inner.metrics.feed_lag_seconds.set(age.num_milliseconds().max(0) as f64 / 1000.0);
        }
        let mut live = feed.inner.live.lock().unwrap_or_else(|e| e.into_inner());
        for event in batch {
            live.head = event.position;
            live.routes.deliver(&Arc::new(event));
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

    fn slot() -> (Slot, mpsc::Receiver<Arc<Event>>) {
        let (queue, receiver) = mpsc::channel(2);
        (Slot { queue, overflowed: Arc::default() }, receiver)
    }

    #[test]
    fn an_event_is_handed_only_to_the_subscribers_of_its_subject_its_tenant_and_the_whole_feed() {
        let mut routes = Routes::default();
        let (all, mut to_all) = slot();
        let (acme, mut to_acme) = slot();
        let (other, mut to_other) = slot();
        let (subject, mut to_subject) = slot();
        let (another_subject, mut to_another_subject) = slot();
        routes.add(Route::All, 1, all);
        routes.add(Route::Tenant("acme".into()), 2, acme);
        routes.add(Route::Tenant("globex".into()), 3, other);
        routes.add(Route::Subject("net_1".into()), 4, subject);
        routes.add(Route::Subject("net_2".into()), 5, another_subject);
        routes.deliver(&Arc::new(event("network.ready", json!({}))));
        for (who, queue) in [("all", &mut to_all), ("acme", &mut to_acme), ("net_1", &mut to_subject)] {
            assert!(queue.try_recv().is_ok(), "{who} is handed the event");
        }
        assert!(to_other.try_recv().is_err(), "another tenant's subscriber does no work for it");
        assert!(to_another_subject.try_recv().is_err(), "nor does another subject's");
        routes.remove(&Route::Tenant("acme".into()), 2);
        routes.deliver(&Arc::new(event("network.ready", json!({}))));
        assert!(to_acme.try_recv().is_err(), "a subscriber gone is no longer reached");
    }

    #[test]
    fn a_full_queue_is_told_it_overflowed_and_keeps_what_came_first() {
        let mut routes = Routes::default();
        let (acme, mut queue) = slot();
        let overflowed = acme.overflowed.clone();
        routes.add(Route::Tenant("acme".into()), 1, acme);
        for n in 0..3 {
            let mut e = event("network.ready", json!({}));
            e.position = Position { txid: 0, id: n };
            routes.deliver(&Arc::new(e));
        }
        assert!(overflowed.load(Ordering::Acquire), "the third event did not fit");
        assert_eq!(queue.try_recv().unwrap().position.id, 0);
        assert_eq!(queue.try_recv().unwrap().position.id, 1);
        assert!(queue.try_recv().is_err());
    }

    #[test]
    fn after_an_overflow_nothing_more_is_queued_until_the_subscriber_reads_what_it_missed() {
        let mut routes = Routes::default();
        let (acme, mut queue) = slot();
        let overflowed = acme.overflowed.clone();
        routes.add(Route::Tenant("acme".into()), 1, acme);
        let at = |n: i64| {
            let mut e = event("network.ready", json!({}));
            e.position = Position { txid: 0, id: n };
            Arc::new(e)
        };
        for n in 0..3 {
            routes.deliver(&at(n));
        }
        assert_eq!(queue.try_recv().unwrap().position.id, 0, "the subscriber reads one: there is room again");
        routes.deliver(&at(3));
        // Queued, 3 would be passed before 2 (dropped, to be read from the outbox), and 2 then
        // skipped as behind it: a lost event.
        assert_eq!(queue.try_recv().unwrap().position.id, 1);
        assert!(queue.try_recv().is_err(), "nothing after the overflow was queued");
        assert!(overflowed.swap(false, Ordering::AcqRel), "the subscriber is told");
        routes.deliver(&at(4));
        assert_eq!(queue.try_recv().unwrap().position.id, 4, "once it took note, events are queued again");
    }

    #[test]
    fn a_subscriber_is_routed_by_its_subject_else_its_tenant_and_by_its_own_token() {
        let mut actor = Actor::system();
        actor.token_id = Some("tok_1".into());
        let network = Filter::resource(&actor, "acme".into(), "network.*", "net_1".into());
        assert!(network.routes() == vec![Route::Subject("net_1".into()), Route::Subject("tok_1".into())]);
        let tenant = Filter { subject: None, ..network.clone() };
        assert!(tenant.routes() == vec![Route::Tenant("acme".into()), Route::Subject("tok_1".into())]);
        let whole = Filter { tenant_id: None, subject: None, actor: Actor::system(), ..network };
        assert!(whole.routes() == vec![Route::All]);
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
