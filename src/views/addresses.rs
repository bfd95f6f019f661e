//! The reserved address a client reads, and its `providerAddress.*` events.
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::store::entity::provider_address as address;
use crate::store::outbox::{NewEvent, Payload};
use crate::store::state::{AddressFamily, Assignment, Desired, State};

pub const KIND: &str = "provider-address";

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AddressView {
    pub id: String,
    pub tenant_id: String,
    pub project_id: Option<String>,
    pub pool_id: String,
    pub name: String,
    pub region: String,
    pub family: AddressFamily,
    pub state: State,
    pub desired_state: Desired,
    pub message: Option<String>,
    /// The IP, once reserved (forgotten once it was released outside).
    pub address: Option<String>,
    pub instance_id: Option<String>,
    pub assignment_state: Assignment,
    pub assignment_message: Option<String>,
    /// Released at the provider outside vps-graph: never called for again.
    pub lost: bool,
    /// A delete is refused while it is set.
    pub deletion_protection: bool,
    pub version: i64,
    pub created_at: DateTime<Utc>,
    pub ready_at: Option<DateTime<Utc>>,
    pub deleted_at: Option<DateTime<Utc>>,
}

pub fn view(a: &address::Model) -> AddressView {
    AddressView {
        id: a.id.clone(),
        tenant_id: a.tenant_id.clone(),
        project_id: a.project_id.clone(),
        pool_id: a.pool_id.clone(),
        name: a.name.clone(),
        region: a.region.clone(),
        family: a.family,
        state: a.state,
        desired_state: a.desired_state,
        message: a.message.clone(),
        address: a.address.clone(),
        instance_id: a.instance_id.clone(),
        assignment_state: a.assignment_state,
        assignment_message: a.assignment_message.clone(),
        lost: a.lost,
        deletion_protection: a.deletion_protection,
        version: a.version,
        created_at: a.created_at,
        ready_at: a.ready_at,
        deleted_at: a.deleted_at,
    }
}

/// The `providerAddress.*` event of a change to `a`.
pub fn event(event_type: &str, a: &address::Model) -> NewEvent {
    NewEvent {
        event_type: format!("providerAddress.{event_type}"),
        subject_kind: KIND,
        subject: a.id.clone(),
        tenant_id: Some(a.tenant_id.clone()),
        project_id: a.project_id.clone(),
        version: a.version,
        data: Payload::of(&view(a)),
    }
}
