//! Reading the event feed: pages for the `events` query, and the filter and start position of
//! a subscription. Both are decided on the tenant (`compute:events:read`), then each event is
//! filtered to what the caller may read; the whole feed (no tenant) is the operator's.
use std::sync::Arc;

use chrono::{DateTime, Utc};

use super::validate;
use crate::authz::Actor;
use crate::error::{Error, Result};
use crate::feed::Filter;
use crate::services::Services;
use crate::store::outbox::{Event, Position};

const MAX_PAGE: i32 = 1000;
const MAX_TYPES: usize = 50;

/// Where a read of the feed starts: `after` a cursor, or `since` a moment (the first event stamped
/// at or after it), not both.
#[derive(Clone, Copy, Default)]
pub struct Start<'a> {
    pub after: Option<&'a str>,
    pub since: Option<DateTime<Utc>>,
    /// Whose events are read (None: the whole feed, the operator's): `since` is sought in them.
    pub tenant_id: Option<&'a str>,
}

pub struct EventPage {
    pub events: Vec<Arc<Event>>,
    /// The position to continue after: the last event read, even one filtered out.
    pub end: Position,
    pub has_next_page: bool,
}

impl Services {
    pub async fn event_list(
        &self,
        actor: &Actor,
        tenant_id: Option<String>,
        start: Start<'_>,
        first: i32,
    ) -> Result<EventPage> {
        validate::range("first", i64::from(first), 1, i64::from(MAX_PAGE))?;
        let filter = self.event_filter(actor, tenant_id, Vec::new())?;
        let after = self.start_position(start).await?;
        let rows = self.feed.read_after(after, filter.tenant_id.as_deref(), first as u64).await?;
        let has_next_page = rows.len() == first as usize;
        // Nothing read from the start: go on from the oldest event kept, not from before it.
        let end = match (rows.last(), after) {
            (Some(last), _) => last.position,
            (None, Some(after)) => after,
            (None, None) => self.feed.horizon().await?,
        };
        let events = rows.into_iter().filter(|e| filter.accepts(e)).map(Arc::new).collect();
        Ok(EventPage { events, end, has_next_page })
    }

    pub async fn event_subscription(
        &self,
        actor: &Actor,
        tenant_id: Option<String>,
        types: Vec<String>,
        start: Start<'_>,
    ) -> Result<(Filter, Option<Position>)> {
        let filter = self.event_filter(actor, tenant_id, types)?;
        let after = self.start_position(start).await?;
        if let Some(after) = after {
            self.feed.check_retained(after).await?;
        }
        self.ensure_active(actor).await?;
        Ok((filter, after))
    }

    /// Where a read starts: after a cursor, from a moment, or (neither) from the oldest event kept
    /// for a page and from now on for a subscription.
    async fn start_position(&self, start: Start<'_>) -> Result<Option<Position>> {
        match (start.after, start.since) {
            (Some(_), Some(_)) => Err(Error::invalid_input("since", "give `after` or `since`, not both")),
            (Some(cursor), None) => Ok(Some(self.feed.parse_cursor(cursor)?)),
            (None, Some(since)) => Ok(Some(self.feed.start_since(start.tenant_id, since).await?)),
            (None, None) => Ok(None),
        }
    }

    fn event_filter(&self, actor: &Actor, tenant_id: Option<String>, types: Vec<String>) -> Result<Filter> {
        match &tenant_id {
            Some(tenant_id) => {
                validate::tenant_id("tenantId", tenant_id)?;
                actor.decide_list("compute:events:read", tenant_id)?;
            }
            None if actor.is_operator() => {}
            None => return Err(Error::invalid_input("tenantId", "tenantId is required for a tenant's token")),
        }
        if types.len() > MAX_TYPES {
            return Err(Error::invalid_input("types", format!("at most {MAX_TYPES} types")));
        }
        for t in &types {
            validate::max_len("types", t, 128)?;
        }
        Ok(Filter { actor: actor.clone(), tenant_id, types, subject: None, except: Vec::new(), part: None })
    }
}
