//! What a tenant and a project look like to operators and in their `tenant.*` and `project.*`
//! events.
use chrono::{DateTime, Utc};

use super::fields::view;
use crate::store::entity::{project, tenant};
use crate::store::outbox::{NewEvent, Payload};

view! {
    /// A tenant: the customer every resource belongs to.
    pub struct TenantView from tenant::Model {
        #[graphql(skip)]
        pub id: String,
        pub name: String,
        pub version: i64,
        pub created_at: DateTime<Utc>,
    }
}

view! {
    /// A project of a tenant's: a scope for grants and lists.
    pub struct ProjectView from project::Model {
        #[graphql(skip)]
        pub id: String,
        pub tenant_id: String,
        pub name: String,
        pub description: Option<String>,
        pub version: i64,
        pub created_at: DateTime<Utc>,
    }
}

pub fn tenant_event(event_type: &str, t: &tenant::Model) -> NewEvent {
    NewEvent {
        event_type: event_type.into(),
        subject_kind: "tenant",
        subject: t.id.clone(),
        tenant_id: Some(t.id.clone()),
        project_id: None,
        version: t.version,
        data: Payload::of(&TenantView::from(t.clone())),
    }
}

pub fn project_event(event_type: &str, p: &project::Model) -> NewEvent {
    NewEvent {
        event_type: event_type.into(),
        subject_kind: "project",
        subject: p.id.clone(),
        tenant_id: Some(p.tenant_id.clone()),
        project_id: Some(p.id.clone()),
        version: p.version,
        data: Payload::of(&ProjectView::from(p.clone())),
    }
}
