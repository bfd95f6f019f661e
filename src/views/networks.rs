//! What a network looks like to its callers and in its events: the views built from its rows.
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::store::entity::{network, network_subnet};
use crate::store::outbox::{NewEvent, Payload};
use crate::store::state::{Desired, State};

pub const KIND: &str = "network";

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SubnetView {
    pub id: String,
    pub region: String,
    pub zone: Option<String>,
    pub ip_range: String,
    pub state: State,
    pub desired_state: Desired,
    /// The provider's id of its VPC, once made.
    pub provider_id: Option<String>,
    pub message: Option<String>,
    pub ready_at: Option<DateTime<Utc>>,
    pub deleted_at: Option<DateTime<Utc>>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NetworkView {
    pub id: String,
    pub tenant_id: String,
    pub project_id: Option<String>,
    pub pool_id: String,
    pub provider_account_id: String,
    pub name: String,
    pub description: Option<String>,
    pub state: State,
    pub desired_state: Desired,
    pub message: Option<String>,
    pub version: i64,
    pub created_at: DateTime<Utc>,
    pub ready_at: Option<DateTime<Utc>>,
    pub deleted_at: Option<DateTime<Utc>>,
    /// AWS: the VPC's region, CIDR block and id.
    pub region: Option<String>,
    pub ip_range: Option<String>,
    pub provider_id: Option<String>,
    pub adopted: bool,
    pub subnets: Vec<SubnetView>,
}

pub fn view(n: &network::Model, subnets: &[network_subnet::Model]) -> NetworkView {
    NetworkView {
        id: n.id.clone(),
        tenant_id: n.tenant_id.clone(),
        project_id: n.project_id.clone(),
        pool_id: n.pool_id.clone(),
        provider_account_id: n.provider_account_id.clone(),
        name: n.name.clone(),
        description: n.description.clone(),
        state: n.state,
        desired_state: n.desired_state,
        message: n.message.clone(),
        version: n.version,
        created_at: n.created_at,
        ready_at: n.ready_at,
        deleted_at: n.deleted_at,
        region: n.region.clone(),
        ip_range: n.ip_range.clone(),
        provider_id: n.provider_id.clone(),
        adopted: n.adopted,
        subnets: subnets.iter().filter(|s| s.network_id == n.id).map(subnet_view).collect(),
    }
}

pub fn subnet_view(s: &network_subnet::Model) -> SubnetView {
    SubnetView {
        id: s.id.clone(),
        region: s.region.clone(),
        zone: s.zone.clone(),
        ip_range: s.ip_range.clone(),
        state: s.state,
        desired_state: s.desired_state,
        provider_id: s.provider_id.clone(),
        message: s.message.clone(),
        ready_at: s.ready_at,
        deleted_at: s.deleted_at,
    }
}

/// The `network.*` event of a change to `view`.
pub fn event(event_type: &str, view: &NetworkView) -> NewEvent {
    NewEvent {
        event_type: format!("network.{event_type}"),
        subject_kind: KIND,
        subject: view.id.clone(),
        tenant_id: Some(view.tenant_id.clone()),
        project_id: view.project_id.clone(),
        version: view.version,
        data: Payload::of(&view),
    }
}
