//! The event feed: a page query and a live subscription that can resume after a cursor.
use std::sync::Arc;

use async_graphql::{Context, Json, Object, Result, Subscription};
use chrono::{DateTime, Utc};
use futures_util::{Stream, StreamExt};

use super::pages::{Connection, Edge};
use super::render::Render;
use super::resume::Resume;
use super::{actor, services};
use crate::service::events::Start;
use crate::store::outbox;

/// A CloudEvents-style event. `data` is the subject's view after the change; `version` orders
/// views of one subject (the feed is in transaction order, so keep the newest version).
pub struct Event {
    event: Arc<outbox::Event>,
    cursor: String,
}

#[Object]
impl Event {
    /// Where this event is in the feed: pass it as `after` to continue behind it.
    async fn cursor(&self) -> &str {
        &self.cursor
    }
    async fn id(&self) -> &str {
        &self.event.id
    }
    async fn specversion(&self) -> &str {
        "1.0"
    }
    /// e.g. `tenant.created`, `quota.updated`.
    #[graphql(name = "type")]
    async fn event_type(&self) -> &str {
        &self.event.event_type
    }
    async fn source(&self) -> &str {
        &self.event.source
    }
    /// The id of the resource the event is about.
    async fn subject(&self) -> &str {
        &self.event.subject
    }
    async fn time(&self) -> DateTime<Utc> {
        self.event.time
    }
    async fn tenant_id(&self) -> Option<&str> {
        self.event.tenant_id.as_deref()
    }
    async fn project_id(&self) -> Option<&str> {
        self.event.project_id.as_deref()
    }
    async fn version(&self) -> i64 {
        self.event.version
    }
    async fn data(&self) -> Json<&serde_json::Value> {
        Json(&self.event.data)
    }
}

/// A page of events goes to the executor: an event's data is JSON of any shape.
impl Render for Event {}

#[derive(Default)]
pub struct EventQuery;

#[Object]
impl EventQuery {
    /// The tenant's events in feed order, after a cursor or from a moment (`since`: the first
    /// event stamped at or after it; not with `after`), `compute:events:read` on the tenant, each
    /// event filtered to what the caller may read. Operators may omit tenantId for all.
    #[graphql(complexity = "super::limits::page(first, child_complexity)")]
    async fn events(
        &self,
        ctx: &Context<'_>,
        tenant_id: Option<String>,
        after: Option<String>,
        since: Option<DateTime<Utc>>,
        #[graphql(default = 100)] first: i32,
    ) -> Result<Connection<Event>> {
        let svc = services(ctx);
        let start = Start { after: after.as_deref(), since, tenant_id: tenant_id.as_deref() };
        let page = svc.event_list(actor(ctx)?, tenant_id.clone(), start, first).await?;
        let edges = page
            .events
            .into_iter()
            .map(|event| {
                let cursor = svc.feed.cursor(event.position);
                Edge { cursor: cursor.clone(), node: Event { event, cursor } }
            })
            .collect();
        Ok(Connection::new(edges, Some(svc.feed.cursor(page.end)), page.has_next_page))
    }
}

#[derive(Default)]
pub struct EventSubscription;

#[Subscription]
impl EventSubscription {
    /// The tenant's events as they commit. `types` keeps only those types (`quota.updated`, or a
    /// prefix such as `providerVolume.*`); `after` replays what came after that cursor first (or
    /// `since` what came from that moment on), then goes live with no gap and no duplicate.
    async fn events(
        &self,
        ctx: &Context<'_>,
        tenant_id: Option<String>,
        types: Option<Vec<String>>,
        after: Option<String>,
        since: Option<DateTime<Utc>>,
    ) -> Result<impl Stream<Item = Result<Event>> + use<>> {
        let svc = services(ctx).clone();
        // A stream resumed over SSE goes on after the last event its client saw, whatever its
        // document asked (the same document is sent again on each reconnect).
        let resume = ctx.data_opt::<Resume>().cloned();
        let (after, since) = match resume.as_ref().and_then(|r| r.start()) {
            Some(cursor) => (Some(cursor.to_owned()), None),
            None => (after, since),
        };
        let start = Start { after: after.as_deref(), since, tenant_id: tenant_id.as_deref() };
        let (filter, after) =
            svc.event_subscription(actor(ctx)?, tenant_id.clone(), types.unwrap_or_default(), start).await?;
        let feed = svc.feed.clone();
        Ok(feed.subscribe(filter, after).map(move |item| {
            let event = item?;
            let cursor = svc.feed.cursor(event.position);
            if let Some(resume) = &resume {
                resume.mark(&cursor);
            }
            Ok(Event { event, cursor })
        }))
    }
}
