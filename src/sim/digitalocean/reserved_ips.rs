//! Reserved addresses: IPv4 at `/v2/reserved_ips` and IPv6 at `/v2/reserved_ipv6`, identified by
//! the address itself, with no name and no tags. An address is assigned to at most one droplet
//! and a droplet holds at most one of each family. Assign and unassign are actions, readable at
//! `/v2/actions/{id}` (an IPv4's also under its own path, an IPv6's nowhere else); the `droplet`
//! field changes only when one completes, and an IPv4 is `locked` while one runs. Each family hands
//! out its lowest free address (IPv4 from one range for the account, IPv6 from a /64 per region),
//! so an address released and reserved again comes back, with a later `reserved_at`. A droplet's
//! destroy leaves its addresses reserved and unassigned, unless a selective destroy named them.
use std::net::{Ipv4Addr, Ipv6Addr};

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Json, Response};
use axum::routing::{get, post};
use chrono::{DateTime, Utc};
use serde::Deserialize;
use serde_json::{Value, json};

use super::actions::{ActionRecord, Change};
use super::droplets::DropletRecord;
use super::unprocessable;
use super::{API, Model, Page, REGIONS, Refusal, given, no_content, not_found, paged, paginate, parse, region_json};
use crate::sim::Sim;

/// 45.55.0.0/16: reserved IPv4s are handed out from 45.55.0.1 up.
const V4_RANGE: u32 = 0x2D37_0000;
const V4_HOSTS: u32 = 0xFFFE;
/// Region `i` of `REGIONS` reserves IPv6 from `2604:a880:400:d{i}::/64` (hex), from `::1` up.
const V6_PREFIX: u128 = 0x2604_a880_0400_00d0;
const V6_HOSTS: u128 = 0xFFFF;
const PENDING: &str = "Droplet already has a pending event.";

#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub(super) enum Family {
    V4,
    V6,
}

impl Family {
    /// The singular key of an answer, the list's key and the collection's path.
    fn key(self) -> &'static str {
        match self {
            Family::V4 => "reserved_ip",
            Family::V6 => "reserved_ipv6",
        }
    }

    fn plural(self) -> &'static str {
        match self {
            Family::V4 => "reserved_ips",
            Family::V6 => "reserved_ipv6s",
        }
    }

    fn path(self) -> &'static str {
        match self {
            Family::V4 => "/v2/reserved_ips",
            Family::V6 => "/v2/reserved_ipv6",
        }
    }

    /// The address in its one written form; None when it is not an address of the family.
    fn canonical(self, text: &str) -> Option<String> {
        match self {
            Family::V4 => text.parse::<Ipv4Addr>().ok().map(|a| a.to_string()),
            Family::V6 => text.parse::<Ipv6Addr>().ok().map(|a| a.to_string()),
        }
    }
}

#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub(super) struct AddressRecord {
    /// The reservation's number: the id destroy with associated resources knows it by, and what its
    /// actions act on (an address released and reserved again is another reservation).
    pub(super) id: u64,
    pub(super) family: Family,
    pub(super) ip: String,
    pub(super) region: String,
    pub(super) droplet: Option<u64>,
    pub(super) project_id: String,
    pub(super) reserved_at: String,
}

impl Model {
    fn address(&self, family: Family, ip: &str) -> Option<&AddressRecord> {
        let ip = family.canonical(ip)?;
        self.addresses.iter().find(|a| a.family == family && a.ip == ip)
    }

    fn address_mut(&mut self, reservation: u64) -> Option<&mut AddressRecord> {
        self.addresses.iter_mut().find(|a| a.id == reservation)
    }

    /// Whether an action runs on the reservation.
    fn address_locked(&self, reservation: u64) -> bool {
        self.actions.iter().any(|a| a.in_progress() && a.address == Some(reservation))
    }

    fn address_json(&self, address: &AddressRecord) -> Value {
        let droplet = address.droplet.and_then(|id| self.droplet(id)).map_or(Value::Null, DropletRecord::json);
        match address.family {
            Family::V4 => json!({
                "ip": address.ip, "region": region_json(&address.region), "droplet": droplet,
                "locked": self.address_locked(address.id), "project_id": address.project_id,
            }),
            Family::V6 => json!({
                "ip": address.ip, "region_slug": address.region, "reserved_at": address.reserved_at, "droplet": droplet,
            }),
        }
    }

    /// The lowest address of the family no reservation holds.
    fn free_address(&self, family: Family, region: &str) -> Option<String> {
        let taken = |ip: &str| self.addresses.iter().any(|a| a.family == family && a.ip == ip);
        match family {
            Family::V4 => (1..=V4_HOSTS).map(|n| Ipv4Addr::from(V4_RANGE + n).to_string()).find(|ip| !taken(ip)),
            Family::V6 => {
                let index = REGIONS.iter().position(|r| *r == region)? as u128;
                let prefix = (V6_PREFIX + index) << 64;
                (1..=V6_HOSTS).map(|n| Ipv6Addr::from(prefix + n).to_string()).find(|ip| !taken(ip))
            }
        }
    }

    /// Now to the millisecond, and always later than the previous reservation's.
    fn reservation_time(&mut self) -> String {
        let now = Utc::now();
        let now = DateTime::from_timestamp_millis(now.timestamp_millis()).unwrap_or(now);
        let at = match self.last_reserved {
            Some(last) if now <= last => last + chrono::Duration::milliseconds(1),
            _ => now,
        };
        self.last_reserved = Some(at);
        at.to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
    }

    fn reserve(&mut self, family: Family, region: &str, project_id: Option<String>) -> Result<AddressRecord, Refusal> {
        let ip = self.free_address(family, region).ok_or_else(|| unprocessable("no address is free in the region"))?;
        self.reservations += 1;
        let record = AddressRecord {
            id: 6_000_000 + self.reservations,
            family,
            ip,
            region: region.to_owned(),
            droplet: None,
            project_id: project_id.unwrap_or_else(|| self.project.clone()),
            reserved_at: self.reservation_time(),
        };
        self.addresses.push(record.clone());
        Ok(record)
    }

    /// `POST /v2/reserved_ips`: in a region, or for a droplet (reserved in its region, the region
    /// given is then ignored, and assigned at once by an action the answer links to).
    fn reserve_v4(&mut self, body: V4Create) -> Result<Value, Refusal> {
        let project = given(body.project_id);
        let Some(droplet) = body.droplet_id else {
            let region = given(body.region).ok_or_else(|| unprocessable("region or droplet_id is required"))?;
            if !REGIONS.contains(&region.as_str()) {
                return Err(unprocessable("region is not a valid region"));
            }
            let record = self.reserve(Family::V4, &region, project)?;
            return Ok(json!({ "reserved_ip": self.address_json(&record), "links": {} }));
        };
        let region = self.check_assign(Family::V4, None, droplet)?;
        let record = self.reserve(Family::V4, &region, project)?;
        let change = Change::AddressAssign { reservation: record.id, droplet };
        let action = self.begin_address_action(&record, "assign_ip", droplet, change).id;
        let links = json!({
            "droplets": [{ "id": droplet, "rel": "droplet", "href": format!("{API}/v2/droplets/{droplet}") }],
            "actions": [{ "id": action, "rel": "assign_ip", "href": format!("{API}/v2/actions/{action}") }],
        });
        Ok(json!({ "reserved_ip": self.address_json(&record), "links": links }))
    }

    fn reserve_v6(&mut self, body: V6Create) -> Result<Value, Refusal> {
        let region = given(body.region_slug).ok_or_else(|| unprocessable("region_slug is required"))?;
        if !REGIONS.contains(&region.as_str()) {
            return Err(unprocessable("region_slug is not a valid region"));
        }
        let record = self.reserve(Family::V6, &region, None)?;
        Ok(json!({ "ip": record.ip, "region_slug": record.region, "reserved_at": record.reserved_at }))
    }

    /// An IPv4 goes even when assigned (it is let go first); an IPv6 must be unassigned first.
    fn address_delete(&mut self, family: Family, ip: &str) -> Result<(), Refusal> {
        let record = self.address(family, ip).ok_or_else(not_found)?;
        if family == Family::V6 && record.droplet.is_some() {
            return Err(unprocessable("the reserved IPv6 is assigned to a Droplet: unassign it first"));
        }
        if family == Family::V6 && self.address_locked(record.id) {
            return Err(unprocessable("the reserved IPv6 has an action in progress"));
        }
        let id = record.id;
        self.addresses.retain(|a| a.id != id);
        Ok(())
    }

    /// The checks of an assign to `droplet` (of `record`, or of an address still to reserve);
    /// returns the droplet's region.
    fn check_assign(&self, family: Family, record: Option<&AddressRecord>, droplet: u64) -> Result<String, Refusal> {
        let target = self.droplet(droplet).filter(|d| !d.deleting);
        let target = target.ok_or_else(|| unprocessable("the Droplet does not exist or is being deleted"))?;
        if record.is_some_and(|r| r.region != target.region) {
            return Err(unprocessable("the reserved IP and the Droplet must be in the same region"));
        }
        if self.droplet_busy(droplet) {
            return Err(unprocessable(PENDING));
        }
        let other = |a: &AddressRecord| record.is_none_or(|r| r.id != a.id);
        if self.addresses.iter().any(|a| a.family == family && a.droplet == Some(droplet) && other(a)) {
            return Err(unprocessable("the Droplet already has a reserved IP of this family"));
        }
        Ok(target.region.clone())
    }

    /// Starts an assign (moving it, when assigned elsewhere) or an unassign.
    fn address_action(&mut self, family: Family, ip: &str, body: AddressAction) -> Result<Value, Refusal> {
        let record = self.address(family, ip).ok_or_else(not_found)?.clone();
        if self.address_locked(record.id) {
            return Err(unprocessable("the reserved IP has an action in progress"));
        }
        let (kind, droplet, change) = match body.kind.as_deref().unwrap_or_default() {
            "assign" => {
                let droplet = body.droplet_id.ok_or_else(|| unprocessable("droplet_id is required"))?;
                self.check_assign(family, Some(&record), droplet)?;
                ("assign_ip", droplet, Change::AddressAssign { reservation: record.id, droplet })
            }
            "unassign" => {
                let droplet =
                    record.droplet.ok_or_else(|| unprocessable("the reserved IP is not assigned to a Droplet"))?;
                if self.droplet_busy(droplet) {
                    return Err(unprocessable(PENDING));
                }
                ("unassign_ip", droplet, Change::AddressUnassign(record.id))
            }
            _ => return Err(unprocessable("type must be assign or unassign")),
        };
        Ok(self.begin_address_action(&record, kind, droplet, change).json())
    }

    /// An action on the reservation that keeps `droplet` busy. An IPv4's `resource_id` is the
    /// address as an integer, an IPv6's the reservation's number.
    fn begin_address_action(
        &mut self,
        record: &AddressRecord,
        kind: &str,
        droplet: u64,
        change: Change,
    ) -> &mut ActionRecord {
        let resource_id = match record.family {
            Family::V4 => json!(record.ip.parse::<Ipv4Addr>().map(u32::from).unwrap_or_default()),
            Family::V6 => json!(record.id),
        };
        let action = self.begin(kind, record.family.key(), &record.region, change);
        action.resource_id = resource_id;
        action.droplet = Some(droplet);
        action.address = Some(record.id);
        action
    }

    /// An assign completes: unless the reservation or the droplet went meanwhile.
    pub(super) fn address_assign(&mut self, reservation: u64, droplet: u64) {
        if self.droplet(droplet).is_none() {
            return;
        }
        if let Some(address) = self.address_mut(reservation) {
            address.droplet = Some(droplet);
        }
    }

    pub(super) fn address_unassign(&mut self, reservation: u64) {
        if let Some(address) = self.address_mut(reservation) {
            address.droplet = None;
        }
    }

    /// The droplet is gone: its addresses stay reserved, unassigned.
    pub(super) fn addresses_let_go(&mut self, droplet: u64) {
        for address in self.addresses.iter_mut().filter(|a| a.droplet == Some(droplet)) {
            address.droplet = None;
        }
    }

    /// The reserved IPv4 a destroy with associated resources names by its number.
    pub(super) fn address_numbered(&self, id: &str) -> Option<&AddressRecord> {
        self.addresses.iter().find(|a| a.family == Family::V4 && a.id.to_string() == id)
    }

    /// What a destroy with associated resources lists of the droplet's: its reserved IPv4, by
    /// number, named by its address. Free while assigned.
    pub(super) fn associated_addresses(&self, droplet: u64) -> Vec<Value> {
        self.addresses
            .iter()
            .filter(|a| a.family == Family::V4 && a.droplet == Some(droplet))
            .map(|a| json!({ "id": a.id.to_string(), "name": a.ip, "cost": "0.00" }))
            .collect()
    }

    /// A selective destroy deletes the reserved IPv4 it named, if it is still the droplet's.
    pub(super) fn address_destroy(&mut self, id: &str, droplet: u64) -> Result<(), &'static str> {
        let address = self.address_numbered(id).ok_or("the reserved IP was not found")?;
        if address.droplet != Some(droplet) {
            return Err("the reserved IP is not assigned to the Droplet");
        }
        let id = address.id;
        self.addresses.retain(|a| a.id != id);
        Ok(())
    }
}

pub(super) fn routes(router: Router<Sim>) -> Router<Sim> {
    router
        .route("/v2/reserved_ips", get(v4_list).post(v4_create))
        .route("/v2/reserved_ips/{ip}", get(v4_one).delete(v4_remove))
        .route("/v2/reserved_ips/{ip}/actions", get(v4_action_list).post(v4_action_create))
        .route("/v2/reserved_ips/{ip}/actions/{action_id}", get(v4_action_one))
        .route("/v2/reserved_ipv6", get(v6_list).post(v6_create))
        .route("/v2/reserved_ipv6/{ip}", get(v6_one).delete(v6_remove))
        .route("/v2/reserved_ipv6/{ip}/actions", post(v6_action_create))
}

#[derive(Deserialize)]
struct V4Create {
    region: Option<String>,
    droplet_id: Option<u64>,
    project_id: Option<String>,
}

#[derive(Deserialize)]
struct V6Create {
    region_slug: Option<String>,
}

#[derive(Deserialize)]
struct AddressAction {
    #[serde(rename = "type")]
    kind: Option<String>,
    droplet_id: Option<u64>,
}

/// Counts a reservation made, per family and region.
fn count_made(sim: &Sim, family: Family, answer: &Value) {
    let address = answer.get(family.key()).unwrap_or(answer);
    let region = address["region"]["slug"].as_str().or_else(|| address["region_slug"].as_str()).unwrap_or_default();
    sim.count_name(&format!("{}.made", family.plural()), region);
}

async fn v4_create(State(sim): State<Sim>, body: Bytes) -> Result<Response, Refusal> {
    let body: V4Create = parse(&body)?;
    let answer = sim.with_digitalocean(|model| model.reserve_v4(body))?;
    count_made(&sim, Family::V4, &answer);
    Ok((StatusCode::ACCEPTED, Json(answer)).into_response())
}

async fn v6_create(State(sim): State<Sim>, body: Bytes) -> Result<Response, Refusal> {
    let body: V6Create = parse(&body)?;
    let address = sim.with_digitalocean(|model| model.reserve_v6(body))?;
    count_made(&sim, Family::V6, &address);
    Ok((StatusCode::CREATED, Json(json!({ "reserved_ipv6": address }))).into_response())
}

fn list(sim: &Sim, family: Family, page: &Page) -> Response {
    sim.with_digitalocean(|model| {
        let matching: Vec<_> = model.addresses.iter().filter(|a| a.family == family).collect();
        paged(family.plural(), family.path(), matching.into_iter(), page, |a| model.address_json(a))
    })
}

async fn v4_list(State(sim): State<Sim>, page: Page) -> Response {
    list(&sim, Family::V4, &page)
}

async fn v6_list(State(sim): State<Sim>, page: Page) -> Response {
    list(&sim, Family::V6, &page)
}

fn one(sim: &Sim, family: Family, ip: &str) -> Result<Response, Refusal> {
    let address = sim.with_digitalocean(|model| model.address(family, ip).map(|a| model.address_json(a)));
    Ok(Json(json!({ family.key(): address.ok_or_else(not_found)? })).into_response())
}

async fn v4_one(State(sim): State<Sim>, Path(ip): Path<String>) -> Result<Response, Refusal> {
    one(&sim, Family::V4, &ip)
}

async fn v6_one(State(sim): State<Sim>, Path(ip): Path<String>) -> Result<Response, Refusal> {
    one(&sim, Family::V6, &ip)
}

async fn v4_remove(State(sim): State<Sim>, Path(ip): Path<String>) -> Result<Response, Refusal> {
    sim.with_digitalocean(|model| model.address_delete(Family::V4, &ip))?;
    Ok(no_content())
}

async fn v6_remove(State(sim): State<Sim>, Path(ip): Path<String>) -> Result<Response, Refusal> {
    sim.with_digitalocean(|model| model.address_delete(Family::V6, &ip))?;
    Ok(no_content())
}

fn action_create(sim: &Sim, family: Family, ip: &str, body: &[u8]) -> Result<Response, Refusal> {
    let body: AddressAction = parse(body)?;
    let action = sim.with_digitalocean(|model| model.address_action(family, ip, body))?;
    Ok((StatusCode::CREATED, Json(json!({ "action": action }))).into_response())
}

async fn v4_action_create(State(sim): State<Sim>, Path(ip): Path<String>, body: Bytes) -> Result<Response, Refusal> {
    action_create(&sim, Family::V4, &ip, &body)
}

async fn v6_action_create(State(sim): State<Sim>, Path(ip): Path<String>, body: Bytes) -> Result<Response, Refusal> {
    action_create(&sim, Family::V6, &ip, &body)
}

/// The actions of the address's current reservation.
async fn v4_action_list(State(sim): State<Sim>, Path(ip): Path<String>, page: Page) -> Result<Response, Refusal> {
    let items = sim.with_digitalocean(|model| {
        let reservation = model.address(Family::V4, &ip).ok_or_else(not_found)?.id;
        let of_address = model.actions.iter().filter(|a| a.address == Some(reservation));
        Ok::<_, Refusal>(of_address.map(ActionRecord::json).collect())
    })?;
    Ok(paginate("actions", &format!("/v2/reserved_ips/{ip}/actions"), items, &page))
}

async fn v4_action_one(
    State(sim): State<Sim>,
    Path((ip, action_id)): Path<(String, String)>,
) -> Result<Response, Refusal> {
    let action = sim.with_digitalocean(|model| {
        let reservation = model.address(Family::V4, &ip)?.id;
        model.action(&action_id).filter(|a| a.address == Some(reservation)).map(ActionRecord::json)
    });
    Ok(Json(json!({ "action": action.ok_or_else(not_found)? })).into_response())
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::super::testing::Api;

    async fn reserve(api: &Api, region: &str) -> String {
        let (status, made) = api.post("/v2/reserved_ips", json!({ "region": region })).await;
        assert_eq!(status, 202, "{made}");
        made["reserved_ip"]["ip"].as_str().unwrap().to_owned()
    }

    async fn reserve_v6(api: &Api, region: &str) -> (String, String) {
        let (status, made) = api.post("/v2/reserved_ipv6", json!({ "region_slug": region })).await;
        assert_eq!(status, 201, "{made}");
        let address = &made["reserved_ipv6"];
        (address["ip"].as_str().unwrap().to_owned(), address["reserved_at"].as_str().unwrap().to_owned())
    }

    async fn act(api: &Api, path: &str, ip: &str, body: Value) -> (u16, Value) {
        api.post(&format!("{path}/{ip}/actions"), body).await
    }

    async fn assign(api: &Api, path: &str, ip: &str, droplet: u64) -> (u16, Value) {
        act(api, path, ip, json!({ "type": "assign", "droplet_id": droplet })).await
    }

    const V4: &str = "/v2/reserved_ips";
    const V6: &str = "/v2/reserved_ipv6";

    #[tokio::test]
    async fn a_reserved_ipv4_is_reserved_202_assigned_201_on_completion_and_deleted_204() {
        let api = Api::start().await;
        let (status, made) = api.post(V4, json!({ "region": "nyc3" })).await;
        assert_eq!(status, 202, "{made}");
        assert_eq!(made["links"], json!({}));
        let address = &made["reserved_ip"];
        let ip = address["ip"].as_str().unwrap().to_owned();
        assert_eq!(ip, "45.55.0.1");
        assert_eq!(address["region"]["slug"], "nyc3");
        assert!(address["droplet"].is_null() && address["locked"] == false, "{address}");
        assert_eq!(address["project_id"].as_str().map(str::len), Some(36), "a UUID");
        assert!(address.get("name").is_none() && address.get("tags").is_none());
        assert_eq!(api.sim.name_calls("reserved_ips.made", "nyc3"), 1);
        for body in [json!({}), json!({ "region": "mars1" }), json!({ "region": "" })] {
            assert_eq!(api.post(V4, body.clone()).await.0, 422, "{body}");
        }
        assert_eq!(api.sim.calls("reserved_ips.create"), 4);

        let (status, read) = api.get(&format!("{V4}/{ip}")).await;
        assert_eq!((status, read["reserved_ip"]["ip"].as_str()), (200, Some(ip.as_str())));
        assert_eq!(api.get(&format!("{V4}/45.55.9.9")).await.0, 404);
        assert_eq!(api.get(&format!("{V4}/not-an-address")).await.0, 404);

        let droplet = api.droplet("web", "nyc3").await;
        let (status, started) = assign(&api, V4, &ip, droplet).await;
        assert_eq!(status, 201, "{started}");
        let action = &started["action"];
        assert_eq!((action["type"].as_str(), action["status"].as_str()), (Some("assign_ip"), Some("in-progress")));
        assert_eq!(action["resource_type"], "reserved_ip");
        assert_eq!(action["resource_id"], json!(u32::from(std::net::Ipv4Addr::new(45, 55, 0, 1))));
        let id = action["id"].as_u64().unwrap();
        let (_, during) = api.get(&format!("{V4}/{ip}")).await;
        assert!(during["reserved_ip"]["droplet"].is_null(), "not yet: {during}");
        assert_eq!(during["reserved_ip"]["locked"], true);
        assert_eq!(api.get(&format!("/v2/actions/{id}")).await.1["action"]["status"], "in-progress");
        assert_eq!(api.get(&format!("{V4}/{ip}/actions/{id}")).await.1["action"]["status"], "in-progress");
        let (status, locked) = act(&api, V4, &ip, json!({ "type": "unassign" })).await;
        assert_eq!(status, 422, "an action runs on it: {locked}");
        assert_eq!(locked["id"], "unprocessable_entity");

        api.later().await;
        let (_, done) = api.get(&format!("/v2/actions/{id}")).await;
        assert!(done["action"]["status"] == "completed" && done["action"]["completed_at"].is_string(), "{done}");
        let (_, assigned) = api.get(&format!("{V4}/{ip}")).await;
        assert_eq!(assigned["reserved_ip"]["droplet"]["id"], droplet);
        assert_eq!(assigned["reserved_ip"]["droplet"]["name"], "web");
        assert_eq!(assigned["reserved_ip"]["locked"], false);

        let (status, started) = act(&api, V4, &ip, json!({ "type": "unassign" })).await;
        assert_eq!((status, started["action"]["type"].as_str()), (201, Some("unassign_ip")));
        assert!(!api.get(&format!("{V4}/{ip}")).await.1["reserved_ip"]["droplet"].is_null(), "until it completes");
        api.later().await;
        assert!(api.get(&format!("{V4}/{ip}")).await.1["reserved_ip"]["droplet"].is_null());
        let (status, unassigned) = act(&api, V4, &ip, json!({ "type": "unassign" })).await;
        assert_eq!(
            (status, unassigned["message"].as_str()),
            (422, Some("the reserved IP is not assigned to a Droplet"))
        );
        assert_eq!(act(&api, V4, &ip, json!({ "type": "float" })).await.0, 422);
        assert_eq!(act(&api, V4, &ip, json!({ "type": "assign" })).await.0, 422, "no droplet_id");

        let (status, actions) = api.get(&format!("{V4}/{ip}/actions")).await;
        assert_eq!((status, actions["meta"]["total"].as_u64()), (200, Some(2)));
        assert_eq!(api.get(&format!("{V4}/45.55.9.9/actions")).await.0, 404);
        assert_eq!(api.sim.calls("reserved_ips.actions.create"), 6);
        assert_eq!(api.sim.calls("reserved_ips.actions.get"), 1);

        assert_eq!(api.delete(&format!("{V4}/{ip}")).await, (204, Value::Null));
        assert_eq!(api.get(&format!("{V4}/{ip}")).await.0, 404);
        assert_eq!(api.get(&format!("{V4}/{ip}/actions/{id}")).await.0, 404);
        assert_eq!(api.delete(&format!("{V4}/{ip}")).await.0, 404);
        assert_eq!(assign(&api, V4, &ip, droplet).await.0, 404);
        assert_eq!(api.get(&format!("/v2/actions/{id}")).await.0, 200, "actions outlive their address");
    }

    #[tokio::test]
    async fn reserving_for_a_droplet_assigns_it_by_an_action_the_answer_links() {
        let api = Api::start().await;
        let droplet = api.droplet("far", "sfo3").await;
        let (status, made) = api.post(V4, json!({ "droplet_id": droplet, "region": "nyc3" })).await;
        assert_eq!(status, 202, "{made}");
        let address = &made["reserved_ip"];
        assert_eq!(address["region"]["slug"], "sfo3", "the droplet's region");
        assert!(address["droplet"].is_null() && address["locked"] == true, "{address}");
        let link = &made["links"]["actions"][0];
        assert_eq!(link["rel"], "assign_ip");
        assert!(link["href"].as_str().unwrap().ends_with(&format!("/v2/actions/{}", link["id"])));
        assert_eq!(made["links"]["droplets"][0]["id"], droplet);
        let ip = address["ip"].as_str().unwrap();
        assert_eq!(api.get(&format!("/v2/actions/{}", link["id"])).await.1["action"]["status"], "in-progress");
        api.later().await;
        assert_eq!(api.get(&format!("/v2/actions/{}", link["id"])).await.1["action"]["status"], "completed");
        assert_eq!(api.get(&format!("{V4}/{ip}")).await.1["reserved_ip"]["droplet"]["id"], droplet);

        assert_eq!(api.post(V4, json!({ "droplet_id": 1 })).await.0, 422, "no such droplet");
        assert_eq!(api.post(V4, json!({ "droplet_id": droplet })).await.0, 422, "it has one");
        assert_eq!(api.sim.name_calls("reserved_ips.made", "sfo3"), 1);
    }

    #[tokio::test]
    async fn assigns_are_refused_for_a_busy_gone_or_distant_droplet_and_move_an_assigned_address() {
        let api = Api::start().await;
        let (ip, other) = (reserve(&api, "nyc3").await, reserve(&api, "nyc3").await);
        let body = json!({ "name": "young", "region": "nyc3", "size": "s-1vcpu-1gb", "image": "ubuntu-24-04-x64" });
        let young = api.post("/v2/droplets", body).await.1["droplet"]["id"].as_u64().unwrap();
        let (status, busy) = assign(&api, V4, &ip, young).await;
        assert_eq!((status, busy["message"].as_str()), (422, Some("Droplet already has a pending event.")));
        assert_eq!(
            api.post(V4, json!({ "droplet_id": young })).await.1["message"],
            "Droplet already has a pending event."
        );
        api.later().await;

        // A volume attach in flight keeps the droplet busy too, and an assign keeps it from attaching.
        let volume = api.volume("data", "nyc3", 1).await;
        let attach = json!({ "type": "attach", "droplet_id": young });
        assert_eq!(api.post(&format!("/v2/volumes/{volume}/actions"), attach.clone()).await.0, 202);
        let (status, busy) = assign(&api, V4, &ip, young).await;
        assert_eq!((status, busy["message"].as_str()), (422, Some("Droplet already has a pending event.")));
        api.later().await;
        assert_eq!(assign(&api, V4, &ip, young).await.0, 201);
        let (status, busy) = assign(&api, V4, &other, young).await;
        assert_eq!((status, busy["message"].as_str()), (422, Some("Droplet already has a pending event.")));
        api.later().await;
        let (status, one_each) = assign(&api, V4, &other, young).await;
        assert_eq!(status, 422, "one reserved IPv4 per droplet: {one_each}");

        let far = api.droplet("far", "sfo3").await;
        assert_eq!(assign(&api, V4, &other, far).await.0, 422, "another region");
        assert_eq!(assign(&api, V4, &other, 1).await.0, 422, "no such droplet");
        let doomed = api.droplet("doomed", "nyc3").await;
        assert_eq!(api.delete(&format!("/v2/droplets/{doomed}")).await.0, 204);
        assert_eq!(assign(&api, V4, &other, doomed).await.0, 422, "being deleted");

        // Assigned to one droplet, assigned to another: it moves when the action completes.
        let next = api.droplet("next", "nyc3").await;
        assert_eq!(assign(&api, V4, &ip, next).await.0, 201);
        assert_eq!(api.get(&format!("{V4}/{ip}")).await.1["reserved_ip"]["droplet"]["id"], young);
        api.later().await;
        assert_eq!(api.get(&format!("{V4}/{ip}")).await.1["reserved_ip"]["droplet"]["id"], next);

        // Deleting an assigned IPv4 lets it go and deletes it.
        assert_eq!(api.delete(&format!("{V4}/{ip}")).await.0, 204);
        assert_eq!(api.get(&format!("{V4}/{ip}")).await.0, 404);
        assert_eq!(api.get(&format!("/v2/droplets/{next}")).await.0, 200);
        assert_eq!(assign(&api, V4, &other, next).await.0, 201, "the droplet has none now");
    }

    #[tokio::test]
    async fn a_reserved_ipv6_is_reserved_201_assigned_201_and_not_deleted_while_assigned() {
        let api = Api::start().await;
        let (status, made) = api.post(V6, json!({ "region_slug": "nyc3" })).await;
        assert_eq!(status, 201, "{made}");
        let address = made["reserved_ipv6"].as_object().unwrap();
        let keys: Vec<&str> = address.keys().map(String::as_str).collect();
        assert_eq!(keys, ["ip", "region_slug", "reserved_at"], "the create's answer");
        let ip = address["ip"].as_str().unwrap().to_owned();
        assert_eq!(ip, "2604:a880:400:d2::1");
        assert_eq!(address["region_slug"], "nyc3");
        assert!(chrono::DateTime::parse_from_rfc3339(address["reserved_at"].as_str().unwrap()).is_ok());
        for body in [json!({}), json!({ "region_slug": "mars1" }), json!({ "region": "nyc3" })] {
            assert_eq!(api.post(V6, body.clone()).await.0, 422, "{body}");
        }

        let (status, read) = api.get(&format!("{V6}/{ip}")).await;
        assert_eq!(status, 200);
        let read = &read["reserved_ipv6"];
        assert!(read["droplet"].is_null() && read["reserved_at"] == address["reserved_at"], "{read}");
        assert_eq!(api.get(&format!("{V6}/2604:a880:0400:00d2:0::1")).await.1["reserved_ipv6"]["ip"], ip.as_str());
        assert_eq!(api.get(&format!("{V6}/2604:a880:400:d2::99")).await.0, 404);
        assert_eq!(api.get(&format!("{V4}/{ip}")).await.0, 404, "not an IPv4");
        assert_eq!(api.sim.calls("reserved_ipv6.get"), 3);

        let droplet = api.droplet("web", "nyc3").await;
        let (status, started) = assign(&api, V6, &ip, droplet).await;
        assert_eq!(status, 201, "{started}");
        let action = &started["action"];
        assert_eq!(
            (action["type"].as_str(), action["resource_type"].as_str()),
            (Some("assign_ip"), Some("reserved_ipv6"))
        );
        assert!(action["resource_id"].is_u64());
        let id = action["id"].as_u64().unwrap();
        assert_eq!(api.get(&format!("{V6}/{ip}/actions")).await.0, 405, "no actions to read under the address");
        assert!(api.get(&format!("{V6}/{ip}")).await.1["reserved_ipv6"]["droplet"].is_null());
        assert_eq!(api.get(&format!("/v2/actions/{id}")).await.1["action"]["status"], "in-progress");
        assert_eq!(api.delete(&format!("{V6}/{ip}")).await.0, 422, "an assign is in flight");
        api.later().await;
        assert_eq!(api.get(&format!("/v2/actions/{id}")).await.1["action"]["status"], "completed");
        assert_eq!(api.get(&format!("{V6}/{ip}")).await.1["reserved_ipv6"]["droplet"]["id"], droplet);
        assert_eq!(api.get(V6).await.1["reserved_ipv6s"][0]["droplet"]["id"], droplet);

        let (status, assigned) = api.delete(&format!("{V6}/{ip}")).await;
        assert_eq!((status, assigned["id"].as_str()), (422, Some("unprocessable_entity")), "assigned");
        let (status, started) = act(&api, V6, &ip, json!({ "type": "unassign" })).await;
        assert_eq!((status, started["action"]["type"].as_str()), (201, Some("unassign_ip")));
        api.later().await;
        assert!(api.get(&format!("{V6}/{ip}")).await.1["reserved_ipv6"]["droplet"].is_null());
        assert_eq!(act(&api, V6, &ip, json!({ "type": "unassign" })).await.0, 422, "not assigned");
        assert_eq!(api.delete(&format!("{V6}/{ip}")).await, (204, Value::Null));
        assert_eq!(api.delete(&format!("{V6}/{ip}")).await.0, 404);
        assert_eq!(assign(&api, V6, &ip, droplet).await.0, 404);
        assert_eq!(api.sim.calls("reserved_ipv6.actions.create"), 4);
    }

    #[tokio::test]
    async fn a_released_address_is_handed_out_again_with_a_later_reserved_at() {
        let api = Api::start().await;
        let (first, second) = (reserve(&api, "nyc3").await, reserve(&api, "ams3").await);
        assert_eq!((first.as_str(), second.as_str()), ("45.55.0.1", "45.55.0.2"), "one range for the account");
        assert_eq!(api.delete(&format!("{V4}/{first}")).await.0, 204);
        assert_eq!(reserve(&api, "sfo3").await, first, "the lowest free address");
        assert_eq!(reserve(&api, "sfo3").await, "45.55.0.3");

        let (ip, reserved_at) = reserve_v6(&api, "nyc3").await;
        let (elsewhere, _) = reserve_v6(&api, "sfo3").await;
        assert_eq!(elsewhere, "2604:a880:400:d4::1", "a range per region");
        let (after, _) = reserve_v6(&api, "nyc3").await;
        assert_eq!(after, "2604:a880:400:d2::2");
        assert_eq!(api.delete(&format!("{V6}/{ip}")).await.0, 204);
        let (again, reserved_again) = reserve_v6(&api, "nyc3").await;
        assert_eq!(again, ip, "handed out again");
        assert_ne!(reserved_again, reserved_at, "another reservation of the same address");
        assert!(reserved_again > reserved_at, "{reserved_again} after {reserved_at}");
    }

    #[tokio::test]
    async fn address_lists_paginate() {
        let api = Api::start().await;
        for _ in 0..3 {
            reserve(&api, "nyc3").await;
            reserve_v6(&api, "nyc3").await;
        }
        let (status, page) = api.get(&format!("{V4}?per_page=2")).await;
        assert_eq!((status, page["meta"]["total"].as_u64()), (200, Some(3)));
        assert_eq!(page["reserved_ips"].as_array().unwrap().len(), 2);
        assert!(page["links"]["pages"]["next"].as_str().unwrap().contains("/v2/reserved_ips?page=2"));
        let (_, last) = api.get(&format!("{V4}?page=2&per_page=2")).await;
        assert_eq!(last["reserved_ips"][0]["ip"], "45.55.0.3");
        let (status, page) = api.get(&format!("{V6}?per_page=2")).await;
        assert_eq!((status, page["meta"]["total"].as_u64()), (200, Some(3)));
        assert_eq!(page["reserved_ipv6s"].as_array().unwrap().len(), 2);
        assert_eq!(api.get(V6).await.1["links"], json!({}));
        assert_eq!(api.sim.calls("reserved_ipv6.list"), 2);
    }

    #[tokio::test]
    async fn a_destroyed_droplets_addresses_stay_reserved_and_unassigned() {
        let api = Api::start().await;
        let droplet = api.droplet("brief", "nyc3").await;
        let ip = reserve(&api, "nyc3").await;
        let (ip6, _) = reserve_v6(&api, "nyc3").await;
        assert_eq!(assign(&api, V4, &ip, droplet).await.0, 201);
        api.later().await;
        assert_eq!(assign(&api, V6, &ip6, droplet).await.0, 201);
        api.later().await;
        assert_eq!(api.delete(&format!("/v2/droplets/{droplet}")).await.0, 204);
        assert_eq!(api.get(&format!("{V4}/{ip}")).await.1["reserved_ip"]["droplet"]["status"], "off", "until it goes");
        api.later().await;
        assert_eq!(api.get(&format!("/v2/droplets/{droplet}")).await.0, 404);
        let (status, v4) = api.get(&format!("{V4}/{ip}")).await;
        assert!(status == 200 && v4["reserved_ip"]["droplet"].is_null(), "{v4}");
        let (status, v6) = api.get(&format!("{V6}/{ip6}")).await;
        assert!(status == 200 && v6["reserved_ipv6"]["droplet"].is_null(), "{v6}");
        assert_eq!(api.delete(&format!("{V6}/{ip6}")).await.0, 204, "unassigned now");
    }

    #[tokio::test]
    async fn a_selective_destroy_lists_the_assigned_ipv4_by_number_and_takes_it_when_named() {
        let api = Api::start().await;
        let droplet = api.droplet("doomed", "nyc3").await;
        let (ip, loose) = (reserve(&api, "nyc3").await, reserve(&api, "nyc3").await);
        let (ip6, _) = reserve_v6(&api, "nyc3").await;
        assert_eq!(assign(&api, V4, &ip, droplet).await.0, 201);
        api.later().await;
        assert_eq!(assign(&api, V6, &ip6, droplet).await.0, 201);
        api.later().await;

        let path = format!("/v2/droplets/{droplet}/destroy_with_associated_resources");
        let (_, listing) = api.get(&path).await;
        let listed = listing["reserved_ips"].as_array().unwrap();
        assert_eq!(listed.len(), 1, "only the assigned IPv4: {listing}");
        let id = listed[0]["id"].as_str().unwrap().to_owned();
        assert!(id.parse::<u64>().is_ok() && id != ip, "a numeric id, not the address: {id}");
        assert_eq!(listed[0]["name"], ip.as_str());
        assert!(listed[0]["cost"].is_string());

        let (_, numbers) = api.get(V4).await;
        assert_eq!(numbers["meta"]["total"], 2);
        let body = json!({ "reserved_ips": [id, "999"], "volumes": [] });
        assert_eq!(api.delete_with(&format!("{path}/selective"), body).await.0, 202);
        let (_, running) = api.get(&format!("{path}/status")).await;
        assert_eq!(running["resources"]["reserved_ips"][0]["name"], ip.as_str());
        assert_eq!(api.get(&format!("{V4}/{ip}")).await.0, 200, "until the droplet goes");
        api.later().await;
        let (_, done) = api.get(&format!("{path}/status")).await;
        let reported = &done["resources"]["reserved_ips"];
        assert!(reported[0]["destroyed_at"] != "" && reported[0]["error_message"] == "", "{done}");
        assert!(reported[1]["error_message"] != "", "999 names nothing: {done}");
        assert_eq!(done["failures"], 1);
        assert_eq!(api.get(&format!("{V4}/{ip}")).await.0, 404, "named: deleted with the droplet");
        assert_eq!(api.get(&format!("{V4}/{loose}")).await.0, 200, "not named: kept");
        assert!(api.get(&format!("{V6}/{ip6}")).await.1["reserved_ipv6"]["droplet"].is_null(), "kept, unassigned");
    }
}
