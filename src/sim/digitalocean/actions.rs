//! Actions: the account's asynchronous work. Each is a record with the change it makes and when it
//! is due; `Model::settle` applies what is due, in due order, at the start of every request.
//! DigitalOcean actions (integer ids) are read at `/v2/actions/{id}`; NFS actions carry UUIDs and,
//! as in the real API, cannot be read back at all.

use axum::Router;
use axum::extract::{Path, State};
use axum::response::{IntoResponse, Json, Response};
use axum::routing::get;
use chrono::{DateTime, Utc};
use serde_json::{Value, json};

use super::{Model, Page, not_found, paginate, region_json, timestamp};
use crate::sim::Sim;

/// What an action changes when it completes.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub(super) enum Change {
    Nothing,
    DropletActive(u64),
    /// The droplet disappears (a plain or a selective destroy).
    DropletGone(u64),
    /// A selective destroy's retry: the resources that failed are tried again.
    DestroyAgain(u64),
    Attach {
        volume: String,
        droplet: u64,
    },
    Detach {
        volume: String,
        droplet: u64,
    },
    Resize {
        volume: String,
        size: u64,
    },
    ShareActive(String),
    ShareResize {
        share: String,
        size: u64,
    },
    ShareAttach {
        share: String,
        vpc: String,
    },
    ShareDetach {
        share: String,
        vpc: String,
    },
    ShareSnapshotActive(String),
    /// A reserved address (by its reservation's number) lands on the droplet.
    AddressAssign {
        reservation: u64,
        droplet: u64,
    },
    AddressUnassign(u64),
}

#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub(super) struct ActionRecord {
    pub(super) id: u64,
    /// An NFS action's public id; such an action is not at `/v2/actions`.
    pub(super) nfs_id: Option<String>,
    pub(super) kind: String,
    pub(super) resource_type: String,
    pub(super) resource_id: Value,
    pub(super) region: String,
    /// The droplet this action keeps busy: one action per droplet at a time.
    pub(super) droplet: Option<u64>,
    /// The volume a volume action acts on.
    pub(super) volume: Option<String>,
    /// The reservation (its number) a reserved IP action acts on.
    pub(super) address: Option<u64>,
    pub(super) started_at: DateTime<Utc>,
    /// When it completes, in ms on the sim's clock.
    pub(super) due: i64,
    pub(super) completed_at: Option<DateTime<Utc>>,
    pub(super) change: Change,
    /// Set when the action is to fail (`Fault::Fail`): it ends errored and changes nothing, or,
    /// for a create, leaves what it made failed.
    pub(super) fails: Option<String>,
}

impl ActionRecord {
    pub(super) fn in_progress(&self) -> bool {
        self.completed_at.is_none()
    }

    fn status(&self) -> &'static str {
        match (self.in_progress(), &self.fails) {
            (true, _) => "in-progress",
            (false, None) => "completed",
            (false, Some(_)) => "errored",
        }
    }

    fn nfs_status(&self) -> &'static str {
        match (self.in_progress(), &self.fails) {
            (true, _) => "IN_PROGRESS",
            (false, None) => "COMPLETED",
            (false, Some(_)) => "ACTION_FAILED",
        }
    }

    pub(super) fn json(&self) -> Value {
        json!({
            "id": self.id, "status": self.status(), "type": self.kind,
            "started_at": timestamp(self.started_at), "completed_at": self.completed_at.map(timestamp),
            "resource_id": self.resource_id, "resource_type": self.resource_type,
            "region": region_json(&self.region), "region_slug": self.region,
        })
    }

    /// NFS actions have their own shape: UUID id, upper-case status, no completion time.
    pub(super) fn nfs_json(&self) -> Value {
        json!({
            "id": self.nfs_id, "status": self.nfs_status(),
            "type": self.kind, "resource_id": self.resource_id, "resource_type": self.resource_type,
            "region_slug": self.region, "started_at": timestamp(self.started_at),
        })
    }
}

impl Model {
    /// Starts an action that makes `change` when it completes, `action_time` from now.
    pub(super) fn begin(&mut self, kind: &str, resource_type: &str, region: &str, change: Change) -> &mut ActionRecord {
        let id = 70_000_000 + self.actions.len() as u64 + 1;
        self.actions.push(ActionRecord {
            id,
            nfs_id: None,
            kind: kind.to_owned(),
            resource_type: resource_type.to_owned(),
            resource_id: Value::Null,
            region: region.to_owned(),
            droplet: None,
            volume: None,
            address: None,
            started_at: self.clock.now(),
            due: self.clock.now_ms() + self.action_time.as_millis() as i64,
            completed_at: None,
            change,
            fails: crate::sim::failing(),
        });
        self.actions.last_mut().expect("just pushed")
    }

    /// Starts an action that changes nothing (as an attach or a resize would look), returns its id.
    pub fn start_action(&mut self, kind: &str, resource_type: &str, region: &str) -> u64 {
        self.begin(kind, resource_type, region, Change::Nothing).id
    }

    /// Completes every action due by now, applying its change.
    pub fn settle(&mut self) {
        let now = self.clock.now_ms();
        let mut due: Vec<usize> =
            (0..self.actions.len()).filter(|&i| self.actions[i].in_progress() && self.actions[i].due <= now).collect();
        due.sort_by_key(|&i| (self.actions[i].due, i));
        let took = chrono::Duration::from_std(self.action_time).unwrap_or_default();
        for i in due {
            let action = &mut self.actions[i];
            // Completion is when it was due, not when someone happened to look.
            action.completed_at = Some(action.started_at + took);
            let change = action.change.clone();
            match action.fails.is_some() {
                true => self.fail(change),
                false => self.apply(change),
            }
        }
    }

    fn apply(&mut self, change: Change) {
        match change {
            Change::Nothing => {}
            Change::DropletActive(id) => self.droplet_active(id),
            Change::DropletGone(id) => self.droplet_gone(id),
            Change::DestroyAgain(id) => self.destroy_resources(id),
            Change::Attach { volume, droplet } => self.attach(&volume, droplet),
            Change::Detach { volume, droplet } => self.detach(&volume, droplet),
            Change::Resize { volume, size } => self.resize(&volume, size),
            Change::ShareActive(id) => self.share_active(&id),
            Change::ShareResize { share, size } => self.share_resize(&share, size),
            Change::ShareAttach { share, vpc } => self.share_attach(&share, &vpc),
            Change::ShareDetach { share, vpc } => self.share_detach(&share, &vpc),
            Change::ShareSnapshotActive(id) => self.share_snapshot_active(&id),
            Change::AddressAssign { reservation, droplet } => self.address_assign(reservation, droplet),
            Change::AddressUnassign(reservation) => self.address_unassign(reservation),
        }
    }

    /// What a failed action leaves: a create's resource failed (a share `FAILED`, a Droplet gone,
    /// as a create the provider gave up on); any other action changes nothing.
    fn fail(&mut self, change: Change) {
        match change {
            Change::ShareActive(id) => self.share_failed(&id),
            Change::DropletActive(id) => self.droplet_gone(id),
            Change::ShareSnapshotActive(id) => self.share_snapshot_failed(&id),
            _ => {}
        }
    }

    /// The changes still to come, in the order they will happen.
    pub(super) fn pending(&self) -> impl Iterator<Item = &Change> {
        self.actions.iter().filter(|a| a.in_progress()).map(|a| &a.change)
    }

    /// Whether the droplet has an action in flight (its create or destroy, a volume attach/detach,
    /// a reserved IP assign/unassign).
    pub(super) fn droplet_busy(&self, id: u64) -> bool {
        self.actions.iter().any(|a| a.in_progress() && a.droplet == Some(id))
    }

    /// A DigitalOcean action by its id (NFS actions are not readable).
    pub(super) fn action(&self, id: &str) -> Option<&ActionRecord> {
        self.actions.iter().find(|a| a.nfs_id.is_none() && a.id.to_string() == id)
    }
}

pub(super) fn routes(router: Router<Sim>) -> Router<Sim> {
    router.route("/v2/actions", get(list)).route("/v2/actions/{id}", get(one))
}

async fn list(State(sim): State<Sim>, page: Page) -> Response {
    let items = sim.with_digitalocean(|model| {
        model.actions.iter().filter(|a| a.nfs_id.is_none()).map(ActionRecord::json).collect()
    });
    paginate("actions", "/v2/actions", items, &page)
}

async fn one(State(sim): State<Sim>, Path(id): Path<String>) -> Response {
    sim.with_digitalocean(|model| match model.action(&id) {
        Some(action) => Json(json!({ "action": action.json() })).into_response(),
        None => not_found().into_response(),
    })
}
