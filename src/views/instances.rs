//! The instance a client reads, and its `instance.*` events.
use chrono::{DateTime, Utc};

use super::fields::view;

use crate::store::entity::instance;
use crate::store::outbox::{NewEvent, Payload};
use crate::store::state::{Desired, OnDelete, State};

pub const KIND: &str = "instance";

view! {
    /// A machine of the tenant's.
    pub struct InstanceView from instance::Model {
        #[graphql(skip)]
        pub id: String,
        pub tenant_id: String,
        pub project_id: Option<String>,
        pub pool_id: String,
        pub network_id: Option<String>,
        pub name: String,
        pub region: String,
        /// The provider's size slug.
        pub size: String,
        /// The provider's image slug.
        pub image: String,
        /// What its delete does to the machine.
        pub on_delete: OnDelete,
        /// AWS: the zone of the network's subnet it runs in.
        pub zone: Option<String>,
        pub state: State,
        pub desired_state: Desired,
        /// The provider's id of its machine (a Droplet's, an EC2 instance's), once made.
        pub provider_id: Option<String>,
        pub message: Option<String>,
        pub version: i64,
        pub created_at: DateTime<Utc>,
        pub ready_at: Option<DateTime<Utc>>,
        pub deleted_at: Option<DateTime<Utc>>,
    }
}

pub fn view(i: &instance::Model) -> InstanceView {
    i.clone().into()
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
