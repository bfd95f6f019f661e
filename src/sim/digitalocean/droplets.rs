//! Droplets (`/v2/droplets`): made `new` and `active` once their create action completes; a
//! deleted droplet answers (status `off`) until its destroy completes, then 404, and only then are
//! its volumes detached and its reserved IPs unassigned. Destroy with associated resources
//! (`…/destroy_with_associated_resources`) also deletes the named volumes, volume snapshots and
//! reserved IPv4s when the droplet goes, and reports per resource at `…/status`.
use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Json, Response};
use axum::routing::{delete, get, post};
use serde::Deserialize;
use serde_json::{Value, json};

use super::actions::Change;
use super::{API, Model, Page, REGIONS, Refusal, conflict, given, no_content, not_found, now_text, paged, parse};
use super::{region_json, unprocessable};
use crate::sim::Sim;

#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub(super) struct DropletRecord {
    pub(super) id: u64,
    pub(super) name: String,
    pub(super) region: String,
    pub(super) size: String,
    pub(super) vpc: String,
    /// `new`, `active`, or `off` once deleted.
    #[serde(deserialize_with = "crate::sim::word")]
    pub(super) status: crate::sim::Word,
    pub(super) deleting: bool,
    pub(super) tags: Vec<String>,
    pub(super) volume_ids: Vec<String>,
    /// The private address and its VPC's prefix length.
    pub(super) private_ip: (u32, u8),
    pub(super) public_ip: u32,
    pub(super) created_at: String,
}

impl DropletRecord {
    pub(super) fn json(&self) -> Value {
        let (private, prefix) = self.private_ip;
        let private_mask = u32::MAX << (32 - prefix);
        let public_mask = u32::MAX << 12;
        let address = |a: u32| std::net::Ipv4Addr::from(a).to_string();
        let (vcpus, memory, disk) = size_of(&self.size);
        json!({
            "id": self.id, "name": self.name, "status": self.status, "locked": false, "created_at": self.created_at,
            "memory": memory, "vcpus": vcpus, "disk": disk, "features": ["private_networking"],
            "backup_ids": [], "next_backup_window": null, "snapshot_ids": [], "kernel": null,
            "image": {
                "id": 191_457_505, "name": "24.04 (LTS) x64", "distribution": "Ubuntu", "slug": "ubuntu-24-04-x64",
                "public": true, "regions": REGIONS, "type": "base", "min_disk_size": 7, "size_gigabytes": 2.34,
                "created_at": "2024-04-24T14:52:07Z", "description": "Ubuntu 24.04 (LTS) x64", "status": "available",
            },
            "size": {
                "slug": self.size, "memory": memory, "vcpus": vcpus, "disk": disk, "transfer": 1.0,
                "price_monthly": 6.0, "price_hourly": 0.00893, "regions": REGIONS, "available": true,
                "description": "Basic",
            },
            "region": region_json(&self.region), "size_slug": self.size, "volume_ids": self.volume_ids,
            "tags": self.tags, "vpc_uuid": self.vpc,
            "networks": {
                "v4": [
                    { "ip_address": address(private), "netmask": address(private_mask),
                      "gateway": address((private & private_mask) + 1), "type": "private" },
                    { "ip_address": address(self.public_ip), "netmask": address(public_mask),
                      "gateway": address((self.public_ip & public_mask) + 1), "type": "public" },
                ],
                "v6": [],
            },
        })
    }
}

/// The vCPUs, memory (MiB) and disk (GiB) of a size slug such as `s-2vcpu-4gb`: the slug says
/// the first two, and a basic Droplet has 25 GiB of disk per GiB of memory.
fn size_of(slug: &str) -> (u64, u64, u64) {
    let number = |unit: &str| slug.split('-').find_map(|p| p.strip_suffix(unit)?.parse::<u64>().ok());
    let vcpus = number("vcpu").unwrap_or(1);
    let memory_gib = number("gb").unwrap_or(1);
    (vcpus, memory_gib * 1024, memory_gib * 25)
}

/// One resource of a selective destroy, as the status reports it.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
struct Doomed {
    id: String,
    name: String,
    destroyed_at: Option<String>,
    error_message: Option<String>,
}

impl Doomed {
    fn json(&self) -> Value {
        json!({
            // Strings, as the spec has them: empty until destroyed, or while nothing failed.
            "id": self.id, "name": self.name, "destroyed_at": self.destroyed_at.clone().unwrap_or_default(),
            "error_message": self.error_message.clone().unwrap_or_default(),
        })
    }

    fn failed(&self) -> bool {
        self.error_message.is_some()
    }
}

/// The resources named by `ids`, not destroyed yet.
fn doomed(ids: Vec<String>, name: impl Fn(&str) -> Option<String>) -> Vec<Doomed> {
    ids.into_iter()
        .map(|id| Doomed { name: name(&id).unwrap_or_default(), id, destroyed_at: None, error_message: None })
        .collect()
}

/// A destroy with associated resources: what was asked, and how it went.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub(super) struct DestroyRecord {
    pub(super) droplet: u64,
    pub(super) body: Value,
    droplet_name: String,
    region: String,
    droplet_destroyed_at: Option<String>,
    volumes: Vec<Doomed>,
    volume_snapshots: Vec<Doomed>,
    reserved_ips: Vec<Doomed>,
    snapshots: Vec<Doomed>,
    completed_at: Option<String>,
}

impl DestroyRecord {
    fn all(&self) -> impl Iterator<Item = &Doomed> {
        self.volumes.iter().chain(&self.volume_snapshots).chain(&self.reserved_ips).chain(&self.snapshots)
    }

    fn json(&self) -> Value {
        let list = |items: &[Doomed]| items.iter().map(Doomed::json).collect::<Vec<_>>();
        json!({
            "droplet": {
                "id": self.droplet.to_string(), "name": self.droplet_name, "destroyed_at": self.droplet_destroyed_at.clone().unwrap_or_default(),
            },
            "resources": {
                "volumes": list(&self.volumes), "volume_snapshots": list(&self.volume_snapshots),
                "reserved_ips": list(&self.reserved_ips), "floating_ips": [], "snapshots": list(&self.snapshots),
            },
            "completed_at": self.completed_at.clone().unwrap_or_default(),
            "failures": self.all().filter(|d| d.failed()).count(),
        })
    }
}

impl Model {
    pub(super) fn droplet(&self, id: u64) -> Option<&DropletRecord> {
        self.droplets.iter().find(|d| d.id == id)
    }

    pub(super) fn droplet_mut(&mut self, id: u64) -> Option<&mut DropletRecord> {
        self.droplets.iter_mut().find(|d| d.id == id)
    }

    pub(super) fn droplet_active(&mut self, id: u64) {
        if let Some(droplet) = self.droplet_mut(id).filter(|d| !d.deleting) {
            droplet.status = "active";
        }
    }

    /// The droplet's destroy completes: a selective destroy takes its resources first, then the
    /// droplet's volumes are let go and it disappears.
    pub(super) fn droplet_gone(&mut self, id: u64) {
        if let Some(destroy) = self.destroys.iter_mut().find(|d| d.droplet == id) {
            destroy.droplet_destroyed_at = Some(now_text());
        }
        self.destroy_resources(id);
        for volume in self.volumes.iter_mut() {
            volume.droplet_ids.retain(|d| *d != id);
        }
        self.addresses_let_go(id);
        self.droplets.retain(|d| d.id != id);
    }

    /// Deletes what a selective destroy named and has not deleted yet; what cannot be is a failure.
    pub(super) fn destroy_resources(&mut self, droplet: u64) {
        let Some(index) = self.destroys.iter().position(|d| d.droplet == droplet && d.completed_at.is_none()) else {
            return;
        };
        let mut destroy = self.destroys[index].clone();
        let now = now_text();
        for doomed in destroy.volumes.iter_mut().filter(|d| d.destroyed_at.is_none()) {
            let attached = self.volume(&doomed.id).map(|v| v.droplet_ids.contains(&droplet));
            doomed.error_message = match attached {
                Some(true) => None,
                Some(false) => Some("the volume is not attached to the Droplet".to_owned()),
                None => Some("the volume was not found".to_owned()),
            };
            if doomed.error_message.is_none() {
                self.volumes.retain(|v| v.id != doomed.id);
                doomed.destroyed_at = Some(now.clone());
            }
        }
        for doomed in destroy.volume_snapshots.iter_mut().filter(|d| d.destroyed_at.is_none()) {
            let found = self.snapshots.iter().any(|s| s.id == doomed.id);
            self.snapshots.retain(|s| s.id != doomed.id);
            doomed.destroyed_at = found.then(|| now.clone());
            doomed.error_message = (!found).then(|| "the snapshot was not found".to_owned());
        }
        for doomed in destroy.reserved_ips.iter_mut().filter(|d| d.destroyed_at.is_none()) {
            doomed.error_message = self.address_destroy(&doomed.id, droplet).err().map(str::to_owned);
            if doomed.error_message.is_none() {
                doomed.destroyed_at = Some(now.clone());
            }
        }
        // The sim has no droplet snapshots: whatever is named there is not found.
        for doomed in destroy.snapshots.iter_mut() {
            doomed.error_message = Some("the resource was not found".to_owned());
        }
        destroy.completed_at = Some(now);
        self.destroys[index] = destroy;
    }

    fn droplet_create(&mut self, body: DropletCreate) -> Result<(Value, u64), Refusal> {
        let region = body.region.unwrap_or_default();
        let vpc = match given(body.vpc_uuid) {
            Some(id) => self.vpc(&id).filter(|v| v.region == region).cloned(),
            None => self.default_vpc(&region).cloned(),
        };
        let vpc = vpc.ok_or_else(|| unprocessable("vpc_uuid is not a VPC in the Droplet's region"))?;
        let tags = self.tag_all(body.tags)?;
        self.serial += 1;
        let hosts = 1u32 << (32 - u32::from(vpc.ip_range.1));
        // .1 is the gateway and .2 an NFS share's host; droplets number from .3.
        let private = vpc.ip_range.0 + 3 + (self.serial as u32 % hosts.saturating_sub(4).max(1));
        let record = DropletRecord {
            id: 500_000_000 + self.serial,
            name: body.name.unwrap_or_default(),
            region: region.clone(),
            size: body.size.unwrap_or_default(),
            vpc: vpc.id,
            status: "new",
            deleting: false,
            tags,
            volume_ids: Vec::new(),
            private_ip: (private, vpc.ip_range.1),
            // 104.248.0.0/16, one address each.
            public_ip: 0x68F8_0000 + 1 + (self.serial as u32 % 65_534),
            created_at: now_text(),
        };
        let (id, json) = (record.id, record.json());
        self.droplets.push(record);
        let action = self.begin("create", "droplet", &region, Change::DropletActive(id));
        action.droplet = Some(id);
        action.resource_id = json!(id);
        Ok((json, action.id))
    }

    /// Starts the droplet's destroy; a droplet already going stays on its course.
    fn droplet_delete(&mut self, id: u64) -> Result<(), Refusal> {
        let droplet = self.droplet_mut(id).ok_or_else(not_found)?;
        if droplet.deleting {
            return Ok(());
        }
        droplet.deleting = true;
        droplet.status = "off";
        let region = droplet.region.clone();
        let action = self.begin("destroy", "droplet", &region, Change::DropletGone(id));
        action.droplet = Some(id);
        action.resource_id = json!(id);
        Ok(())
    }

    fn selective_destroy(&mut self, id: u64, body: Value, asked: Selective) -> Result<(), Refusal> {
        let droplet = self.droplet(id).ok_or_else(not_found)?;
        if droplet.deleting {
            return Err(conflict("the Droplet is already being destroyed"));
        }
        let record = DestroyRecord {
            droplet: id,
            body,
            droplet_name: droplet.name.clone(),
            region: droplet.region.clone(),
            droplet_destroyed_at: None,
            volumes: doomed(asked.volumes, |v| self.volume(v).map(|v| v.name.clone())),
            volume_snapshots: doomed(asked.volume_snapshots, |s| self.snapshot(s).map(|s| s.name.clone())),
            reserved_ips: doomed([asked.reserved_ips, asked.floating_ips].concat(), |a| {
                self.address_numbered(a).map(|a| a.ip.clone())
            }),
            snapshots: doomed(asked.snapshots, |_| None),
            completed_at: None,
        };
        self.destroys.push(record);
        self.droplet_delete(id)
    }

    /// Tries the failed resources of a finished selective destroy again.
    fn destroy_retry(&mut self, id: u64) -> Result<(), Refusal> {
        let destroy = self.destroys.iter_mut().find(|d| d.droplet == id).ok_or_else(not_found)?;
        if destroy.completed_at.is_none() {
            return Err(conflict("a destroy of this Droplet is already running"));
        }
        destroy.completed_at = None;
        let region = destroy.region.clone();
        self.begin("destroy", "droplet", &region, Change::DestroyAgain(id)).resource_id = json!(id);
        Ok(())
    }

    /// What a destroy with associated resources could take: the attached volumes, their snapshots
    /// and the assigned reserved IPv4.
    fn associated(&self, id: u64) -> Option<Value> {
        let droplet = self.droplet(id)?;
        let volumes: Vec<_> = self.volumes.iter().filter(|v| droplet.volume_ids.contains(&v.id)).collect();
        let snapshots = self.snapshots.iter().filter(|s| volumes.iter().any(|v| v.id == s.volume));
        // Prices per GiB and month: volumes $0.10, snapshots $0.06.
        let item = |id: &str, name: &str, cost: f64| json!({ "id": id, "name": name, "cost": format!("{cost:.2}") });
        let volume_items: Vec<Value> = volumes.iter().map(|v| item(&v.id, &v.name, v.size as f64 * 0.10)).collect();
        let snapshot_items: Vec<Value> = snapshots.map(|s| item(&s.id, &s.name, s.size_gigabytes * 0.06)).collect();
        Some(json!({
            "volumes": volume_items, "volume_snapshots": snapshot_items,
            "reserved_ips": self.associated_addresses(id), "floating_ips": [], "snapshots": [],
        }))
    }
}

pub(super) fn routes(router: Router<Sim>) -> Router<Sim> {
    let destroy = "/v2/droplets/{id}/destroy_with_associated_resources";
    router
        .route("/v2/droplets", get(list).post(create))
        .route("/v2/droplets/{id}", get(one).delete(remove))
        .route(destroy, get(associated))
        .route(&format!("{destroy}/selective"), delete(selective))
        .route(&format!("{destroy}/status"), get(status))
        .route(&format!("{destroy}/retry"), post(retry))
}

#[derive(Deserialize)]
struct DropletCreate {
    name: Option<String>,
    region: Option<String>,
    size: Option<String>,
    /// A slug or a numeric image id.
    image: Option<Value>,
    vpc_uuid: Option<String>,
    tags: Option<Vec<String>>,
}

impl DropletCreate {
    fn check(&self) -> Result<(), Refusal> {
        if self.name.as_deref().unwrap_or_default().is_empty() {
            return Err(unprocessable("name is required"));
        }
        if !REGIONS.contains(&self.region.as_deref().unwrap_or_default()) {
            return Err(unprocessable("region is not a valid region"));
        }
        if self.size.as_deref().unwrap_or_default().is_empty() {
            return Err(unprocessable("size is required"));
        }
        match &self.image {
            Some(Value::String(slug)) if !slug.is_empty() => Ok(()),
            Some(Value::Number(_)) => Ok(()),
            _ => Err(unprocessable("image is required")),
        }
    }
}

async fn create(State(sim): State<Sim>, body: Bytes) -> Result<Response, Refusal> {
    // The spec has no null for `vpc_uuid`: a Droplet without a network leaves it out.
    let raw: Value = parse(&body)?;
    if raw.get("vpc_uuid").is_some_and(Value::is_null) {
        return Err(unprocessable("vpc_uuid must be a VPC's id; leave it out for the region's default VPC"));
    }
    let body: DropletCreate = parse(&body)?;
    let name = body.name.clone().unwrap_or_default();
    sim.count_name("droplets.create", &name);
    body.check()?;
    let (droplet, action) = sim.with_digitalocean(|model| model.droplet_create(body))?;
    sim.count_name("droplets.made", &name);
    let links = json!({ "actions": [{ "id": action, "rel": "create", "href": format!("{API}/v2/actions/{action}") }] });
    Ok((StatusCode::ACCEPTED, Json(json!({ "droplet": droplet, "links": links }))).into_response())
}

#[derive(Deserialize)]
struct DropletFilter {
    tag_name: Option<String>,
    name: Option<String>,
}

async fn list(State(sim): State<Sim>, page: Page, Query(filter): Query<DropletFilter>) -> Response {
    let (tag, name) = (given(filter.tag_name), given(filter.name));
    sim.with_digitalocean(|model| {
        let matching: Vec<&DropletRecord> = model
            .droplets
            .iter()
            .filter(|d| tag.as_ref().is_none_or(|t| d.tags.contains(t)))
            .filter(|d| name.as_ref().is_none_or(|n| &d.name == n))
            .collect();
        paged("droplets", "/v2/droplets", matching.into_iter(), &page, DropletRecord::json)
    })
}

/// Droplet ids are integers; anything else names no droplet.
fn droplet_id(id: &str) -> Result<u64, Refusal> {
    id.parse().map_err(|_| not_found())
}

async fn one(State(sim): State<Sim>, Path(id): Path<String>) -> Result<Response, Refusal> {
    let id = droplet_id(&id)?;
    let droplet = sim.with_digitalocean(|model| model.droplet(id).map(DropletRecord::json)).ok_or_else(not_found)?;
    Ok(Json(json!({ "droplet": droplet })).into_response())
}

async fn remove(State(sim): State<Sim>, Path(id): Path<String>) -> Result<Response, Refusal> {
    let id = droplet_id(&id)?;
    sim.with_digitalocean(|model| model.droplet_delete(id))?;
    Ok(no_content())
}

async fn associated(State(sim): State<Sim>, Path(id): Path<String>) -> Result<Response, Refusal> {
    let id = droplet_id(&id)?;
    let listing = sim.with_digitalocean(|model| model.associated(id)).ok_or_else(not_found)?;
    Ok(Json(listing).into_response())
}

/// The selective destroy's body: string ids per kind.
#[derive(Deserialize, Default)]
#[serde(default)]
struct Selective {
    volumes: Vec<String>,
    volume_snapshots: Vec<String>,
    reserved_ips: Vec<String>,
    floating_ips: Vec<String>,
    snapshots: Vec<String>,
}

async fn selective(State(sim): State<Sim>, Path(id): Path<String>, body: Bytes) -> Result<Response, Refusal> {
    let id = droplet_id(&id)?;
    // No body names nothing: the droplet alone goes.
    let raw: Value = if body.is_empty() { json!({}) } else { parse(&body)? };
    let asked: Selective =
        serde_json::from_value(raw.clone()).map_err(|_| super::bad_request("ids must be strings"))?;
    sim.with_digitalocean(|model| model.selective_destroy(id, raw, asked))?;
    Ok(StatusCode::ACCEPTED.into_response())
}

async fn status(State(sim): State<Sim>, Path(id): Path<String>) -> Result<Response, Refusal> {
    let id = droplet_id(&id)?;
    let status =
        sim.with_digitalocean(|model| model.destroys.iter().find(|d| d.droplet == id).map(DestroyRecord::json));
    Ok(Json(status.ok_or_else(not_found)?).into_response())
}

async fn retry(State(sim): State<Sim>, Path(id): Path<String>) -> Result<Response, Refusal> {
    let id = droplet_id(&id)?;
    sim.with_digitalocean(|model| model.destroy_retry(id))?;
    Ok(StatusCode::ACCEPTED.into_response())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::super::testing::Api;

    fn droplet(name: &str, region: &str) -> serde_json::Value {
        json!({ "name": name, "region": region, "size": "s-1vcpu-1gb", "image": "ubuntu-24-04-x64" })
    }

    #[tokio::test]
    async fn droplets_are_new_until_their_create_completes_and_answer_a_while_after_delete() {
        let api = Api::start().await;
        let (status, made) = api.post("/v2/droplets", droplet("web-1", "nyc3")).await;
        assert_eq!(status, 202);
        let id = made["droplet"]["id"].as_u64().expect("an integer id");
        assert_eq!(made["droplet"]["status"], "new");
        assert_eq!(made["droplet"]["region"]["slug"], "nyc3");
        assert_eq!(made["droplet"]["volume_ids"], json!([]));
        assert_eq!(made["droplet"]["networks"]["v4"][0]["type"], "private");
        let link = &made["links"]["actions"][0];
        assert_eq!(link["rel"], "create");
        let (_, action) = api.get(&format!("/v2/actions/{}", link["id"])).await;
        assert_eq!(action["action"]["status"], "in-progress");
        assert_eq!(api.get(&format!("/v2/droplets/{id}")).await.1["droplet"]["status"], "new");

        // Without vpc_uuid it went into the region's default VPC, made for it.
        let (_, vpcs) = api.get("/v2/vpcs").await;
        let default = &vpcs["vpcs"][0];
        assert_eq!((default["name"].as_str(), default["default"].as_bool()), (Some("default-nyc3"), Some(true)));
        assert_eq!(made["droplet"]["vpc_uuid"], default["id"]);

        api.later().await;
        assert_eq!(api.get(&format!("/v2/droplets/{id}")).await.1["droplet"]["status"], "active");
        assert_eq!(api.get(&format!("/v2/actions/{}", link["id"])).await.1["action"]["status"], "completed");
        assert_eq!(api.sim.name_calls("droplets.made", "web-1"), 1);
        assert_eq!(api.sim.calls("droplets.create"), 1);

        assert_eq!(api.delete(&format!("/v2/droplets/{id}")).await.0, 204);
        let (status, gone) = api.get(&format!("/v2/droplets/{id}")).await;
        assert_eq!((status, gone["droplet"]["status"].as_str()), (200, Some("off")), "answers a while after delete");
        api.later().await;
        assert_eq!(api.get(&format!("/v2/droplets/{id}")).await.0, 404);
        assert_eq!(api.delete(&format!("/v2/droplets/{id}")).await.0, 404);
        assert_eq!(api.get("/v2/droplets/not-a-number").await.0, 404);
    }

    #[tokio::test]
    async fn droplet_creates_are_checked_and_tags_filter_the_list() {
        let api = Api::start().await;
        let elsewhere = api.vpc("far", "sfo3").await;
        let refused = [
            json!({ "region": "nyc3", "size": "s", "image": "i" }),
            json!({ "name": "a", "region": "mars1", "size": "s", "image": "i" }),
            json!({ "name": "a", "region": "nyc3", "size": "", "image": "i" }),
            json!({ "name": "a", "region": "nyc3", "size": "s" }),
            json!({ "name": "a", "region": "nyc3", "size": "s", "image": "i", "vpc_uuid": elsewhere }),
            json!({ "name": "a", "region": "nyc3", "size": "s", "image": "i", "tags": ["no spaces"] }),
        ];
        for body in refused {
            assert_eq!(api.post("/v2/droplets", body.clone()).await.0, 422, "{body}");
        }
        assert_eq!(api.sim.name_calls("droplets.made", "a"), 0);
        let mine = api.vpc("near", "nyc3").await;
        let body =
            json!({ "name": "db", "region": "nyc3", "size": "s", "image": 42, "vpc_uuid": mine, "tags": ["env:prod"] });
        let (status, made) = api.post("/v2/droplets", body).await;
        assert_eq!(status, 202);
        assert_eq!(made["droplet"]["vpc_uuid"], mine.as_str());
        assert_eq!(made["droplet"]["tags"], json!(["env:prod"]));
        api.droplet("web", "nyc3").await;
        let (_, tagged) = api.get("/v2/droplets?tag_name=env:prod").await;
        assert_eq!(tagged["droplets"].as_array().unwrap().len(), 1);
        assert_eq!(tagged["droplets"][0]["name"], "db");
        let (_, named) = api.get("/v2/droplets?name=web").await;
        assert_eq!(named["meta"]["total"], 1);
        assert_eq!(api.get("/v2/droplets").await.1["meta"]["total"], 2);
    }

    #[tokio::test]
    async fn a_selective_destroy_takes_the_named_resources_with_the_droplet_and_reports() {
        let api = Api::start().await;
        let id = api.droplet("doomed", "nyc3").await;
        let (attached, loose) = (api.volume("attached", "nyc3", 10).await, api.volume("loose", "nyc3", 10).await);
        let attach = json!({ "type": "attach", "droplet_id": id });
        assert_eq!(api.post(&format!("/v2/volumes/{attached}/actions"), attach).await.0, 202);
        let (_, snapshot) = api.post(&format!("/v2/volumes/{attached}/snapshots"), json!({ "name": "last" })).await;
        let snapshot = snapshot["snapshot"]["id"].as_str().unwrap().to_owned();
        api.later().await;

        let (_, listing) = api.get(&format!("/v2/droplets/{id}/destroy_with_associated_resources")).await;
        assert_eq!(listing["volumes"][0]["id"], attached.as_str());
        assert_eq!(listing["volume_snapshots"][0]["id"], snapshot.as_str());

        let path = format!("/v2/droplets/{id}/destroy_with_associated_resources");
        let body = json!({
            "volumes": [attached, loose], "volume_snapshots": [snapshot], "reserved_ips": [], "snapshots": [],
        });
        assert_eq!(api.delete_with(&format!("{path}/selective"), body.clone()).await, (202, serde_json::Value::Null));
        assert_eq!(api.sim.selective_destroys(), vec![(id, body)]);
        assert_eq!(api.sim.calls("droplets.destroy_with_associated_resources.selective.delete"), 1);
        let (status, running) = api.get(&format!("{path}/status")).await;
        assert_eq!(status, 200);
        assert!(running["completed_at"] == "" && running["droplet"]["destroyed_at"] == "", "strings, empty: {running}");
        assert_eq!(running["resources"]["volumes"][0]["name"], "attached");
        assert_eq!(api.post(&format!("{path}/retry"), json!({})).await.0, 409, "one is running");
        assert_eq!(api.get(&format!("/v2/droplets/{id}")).await.0, 200, "answers until it completes");

        api.later().await;
        let (_, done) = api.get(&format!("{path}/status")).await;
        assert!(done["completed_at"] != "" && done["droplet"]["destroyed_at"] != "");
        assert_eq!(done["failures"], 1, "the loose volume was not attached: {done}");
        let volumes = &done["resources"]["volumes"];
        assert!(volumes[0]["destroyed_at"] != "" && volumes[0]["error_message"] == "");
        assert!(volumes[1]["destroyed_at"] == "" && volumes[1]["error_message"] != "");
        assert!(done["resources"]["volume_snapshots"][0]["destroyed_at"] != "");
        assert_eq!(api.get(&format!("/v2/droplets/{id}")).await.0, 404);
        assert_eq!(api.get(&format!("/v2/volumes/{attached}")).await.0, 404);
        assert_eq!(api.get(&format!("/v2/volumes/{loose}")).await.0, 200, "named but not attached: kept");
        assert_eq!(api.get(&format!("/v2/snapshots/{snapshot}")).await.0, 404);

        assert_eq!(api.post(&format!("{path}/retry"), json!({})).await.0, 202);
        api.later().await;
        assert_eq!(api.get(&format!("{path}/status")).await.1["failures"], 1, "still not attached");
        assert_eq!(api.get("/v2/droplets/1/destroy_with_associated_resources/status").await.0, 404);
    }
}
