//! The instance a client reads, and its `instance.*` events.
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::store::entity::instance;
use crate::store::outbox::{NewEvent, Payload};
use crate::store::state::{Desired, OnDelete, State};

pub const KIND: &str = "instance";

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InstanceView {
    pub id: String,
    pub tenant_id: String,
    pub project_id: Option<String>,
    pub pool_id: String,
    pub network_id: Option<String>,
    pub name: String,
    pub region: String,
    pub size: String,
    pub image: String,
    pub on_delete: OnDelete,
    pub zone: Option<String>,
    pub state: State,
    pub desired_state: Desired,
    /// The machine's id (a Droplet's, an EC2 instance's), once made.
    pub provider_id: Option<String>,
    pub message: Option<String>,
    pub version: i64,
    pub created_at: DateTime<Utc>,
    pub ready_at: Option<DateTime<Utc>>,
    pub deleted_at: Option<DateTime<Utc>>,
}

pub fn view(i: &instance::Model) -> InstanceView {
    i.clone().into()
}

impl From<instance::Model> for InstanceView {
    fn from(i: instance::Model) -> Self {
        InstanceView {
            id: i.id,
            tenant_id: i.tenant_id,
            project_id: i.project_id,
            pool_id: i.pool_id,
            network_id: i.network_id,
            name: i.name,
            region: i.region,
            size: i.size,
            image: i.image,
            on_delete: i.on_delete,
            zone: i.zone,
            state: i.state,
            desired_state: i.desired_state,
            provider_id: i.provider_id,
            message: i.message,
            version: i.version,
            created_at: i.created_at,
            ready_at: i.ready_at,
            deleted_at: i.deleted_at,
        }
    }
}

pub fn event(event_type: &str, i: &instance::Model) -> NewEvent {
    NewEvent {
        event_type: format!("instance.{event_type}"),
        subject_kind: KIND,
        subject: i.id.clone(),
        tenant_id: Some(i.tenant_id.clone()),
        project_id: i.project_id.clone(),
        version: i.version,
        data: Payload::of(&view(i)),
    }
}
