//! NFS shares (`/v2/nfs`): made `CREATING`, `ACTIVE` once their create completes (`INACTIVE` while
//! attached to no VPC). Actions (`POST /v2/nfs/{id}/actions`: resize, attach, detach, snapshot)
//! answer 201 with a UUID and cannot be read back; the share and its snapshots show the progress.
//! Every refusal here is the API's 400, as the create's size check is. The `region` query is
//! optional: lists filter on it, get and delete ignore it.
use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Json, Response};
use axum::routing::{get, post};
use serde::Deserialize;
use serde_json::{Value, json};

use super::actions::Change;
use super::{Model, Page, REGIONS, Refusal, bad_request, given, no_content, not_found, now_text, paged, parse, uuid};
use crate::sim::Sim;

/// The account's number, as NFS mount paths start with it.
const ACCOUNT_NUMBER: u64 = 2_480_912;
const MIN_GIB: u64 = 50;
/// 32 TiB.
const MAX_GIB: u64 = 32_768;

#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub(super) struct ShareRecord {
    pub(super) id: String,
    pub(super) name: String,
    pub(super) size_gib: u64,
    pub(super) region: String,
    /// `CREATING`, `ACTIVE`, `INACTIVE`.
    #[serde(deserialize_with = "crate::sim::word")]
    pub(super) status: crate::sim::Word,
    pub(super) vpc_ids: Vec<String>,
    pub(super) performance_tier: String,
    /// Set when the share becomes active: `.2` of its first VPC's range.
    pub(super) host: String,
    pub(super) mount_path: String,
    pub(super) created_at: String,
}

impl ShareRecord {
    fn json(&self) -> Value {
        json!({
            "id": self.id, "name": self.name, "size_gib": self.size_gib, "region": self.region, "status": self.status,
            "created_at": self.created_at, "vpc_ids": self.vpc_ids, "performance_tier": self.performance_tier,
            "host": self.host, "mount_path": self.mount_path, "access_points": [],
        })
    }
}

#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub(super) struct ShareSnapshotRecord {
    pub(super) id: String,
    pub(super) name: String,
    pub(super) size_gib: u64,
    pub(super) region: String,
    /// `CREATING`, then `ACTIVE`.
    #[serde(deserialize_with = "crate::sim::word")]
    pub(super) status: crate::sim::Word,
    pub(super) share_id: String,
    pub(super) created_at: String,
}

impl ShareSnapshotRecord {
    fn json(&self) -> Value {
        json!({
            "id": self.id, "name": self.name, "size_gib": self.size_gib, "region": self.region,
            "status": self.status, "created_at": self.created_at, "share_id": self.share_id,
        })
    }
}

impl Model {
    fn share(&self, id: &str) -> Option<&ShareRecord> {
        self.shares.iter().find(|s| s.id == id)
    }

    fn share_mut(&mut self, id: &str) -> Option<&mut ShareRecord> {
        self.shares.iter_mut().find(|s| s.id == id)
    }

    /// The NFS server's address in the share's first VPC, and the export path.
    fn share_address(&self, share: &ShareRecord) -> (String, String) {
        let host = share.vpc_ids.first().and_then(|id| self.vpc(id)).map(|vpc| vpc.ip_range.0 + 2);
        let host = host.map(|a| std::net::Ipv4Addr::from(a).to_string()).unwrap_or_default();
        (host, format!("/{ACCOUNT_NUMBER}/{}", share.id))
    }

    /// Active with a VPC, inactive without; an address once it has one.
    fn share_settle_status(&mut self, id: &str) {
        let Some(share) = self.share(id) else { return };
        let (host, mount_path) = self.share_address(share);
        if let Some(share) = self.share_mut(id) {
            share.status = if share.vpc_ids.is_empty() { "INACTIVE" } else { "ACTIVE" };
            if share.host.is_empty() {
                share.host = host;
            }
            share.mount_path = mount_path;
        }
    }

    pub(super) fn share_active(&mut self, id: &str) {
        self.share_settle_status(id);
    }

    pub(super) fn share_resize(&mut self, id: &str, size: u64) {
        if let Some(share) = self.share_mut(id) {
            share.size_gib = size;
        }
    }

    pub(super) fn share_attach(&mut self, id: &str, vpc: &str) {
        let Some(share) = self.share_mut(id) else { return };
        if !share.vpc_ids.iter().any(|v| v == vpc) {
            share.vpc_ids.push(vpc.to_owned());
        }
        if share.status != "CREATING" {
            self.share_settle_status(id);
        }
    }

    pub(super) fn share_detach(&mut self, id: &str, vpc: &str) {
        let Some(share) = self.share_mut(id) else { return };
        share.vpc_ids.retain(|v| v != vpc);
        if share.status != "CREATING" {
            self.share_settle_status(id);
        }
    }

    /// A share whose create failed: `FAILED`, with no address.
    pub(super) fn share_failed(&mut self, id: &str) {
        if let Some(share) = self.share_mut(id) {
            share.status = "FAILED";
        }
    }

    pub(super) fn share_snapshot_failed(&mut self, id: &str) {
        if let Some(snapshot) = self.share_snapshots.iter_mut().find(|s| s.id == id) {
            snapshot.status = "FAILED";
        }
    }

    pub(super) fn share_snapshot_active(&mut self, id: &str) {
        if let Some(snapshot) = self.share_snapshots.iter_mut().find(|s| s.id == id) {
            snapshot.status = "ACTIVE";
        }
    }

    /// The VPCs the share will have once its attaches and detaches in flight complete.
    fn vpcs_to_be(&self, share: &ShareRecord) -> Vec<String> {
        let mut vpcs = share.vpc_ids.clone();
        for change in self.pending() {
            match change {
                Change::ShareAttach { share: s, vpc } if *s == share.id && !vpcs.contains(vpc) => {
                    vpcs.push(vpc.clone())
                }
                Change::ShareDetach { share: s, vpc } if *s == share.id => vpcs.retain(|v| v != vpc),
                _ => {}
            }
        }
        vpcs
    }

    fn share_size_to_be(&self, share: &ShareRecord) -> u64 {
        let pending = self.pending().filter_map(|c| match c {
            Change::ShareResize { share: s, size } if *s == share.id => Some(*size),
            _ => None,
        });
        pending.fold(share.size_gib, u64::max)
    }

    fn regional_vpc(&self, id: &str, region: &str) -> Result<(), Refusal> {
        match self.vpc(id) {
            Some(vpc) if vpc.region == region => Ok(()),
            _ => Err(bad_request(&format!("{id} is not a VPC in region {region}"))),
        }
    }

    fn share_create(&mut self, body: ShareCreate) -> Result<Value, Refusal> {
        let performance_tier = body.check()?;
        let region = body.region.unwrap_or_default();
        let vpc_ids = body.vpc_ids.unwrap_or_default();
        for id in &vpc_ids {
            self.regional_vpc(id, &region)?;
        }
        let record = ShareRecord {
            id: uuid(),
            name: body.name.unwrap_or_default(),
            size_gib: body.size_gib.unwrap_or_default(),
            region,
            status: "CREATING",
            vpc_ids,
            performance_tier,
            host: String::new(),
            mount_path: String::new(),
            created_at: now_text(),
        };
        let (id, json) = (record.id.clone(), record.json());
        let region = record.region.clone();
        self.shares.push(record);
        self.begin_nfs("CREATE_SHARE", "SHARE", &region, json!(id), Change::ShareActive(id));
        Ok(json)
    }

    /// Starts an NFS action: UUID id, upper-case names.
    fn begin_nfs(&mut self, kind: &str, resource_type: &str, region: &str, resource: Value, change: Change) -> Value {
        let action = self.begin(kind, resource_type, region, change);
        action.nfs_id = Some(uuid());
        action.resource_id = resource;
        action.nfs_json()
    }

    fn share_action(&mut self, id: &str, body: ShareAction) -> Result<Value, Refusal> {
        let share = self.share(id).ok_or_else(not_found)?.clone();
        let params = body.params.unwrap_or_default();
        let (region, share_id) = (share.region.clone(), json!(share.id));
        match body.kind.as_deref().unwrap_or_default() {
            "resize" => {
                let size = params.size_gib.unwrap_or_default();
                if size <= self.share_size_to_be(&share) || size > MAX_GIB {
                    return Err(bad_request("size_gib must be larger than the share's size and at most 32768"));
                }
                let change = Change::ShareResize { share: share.id, size };
                Ok(self.begin_nfs("RESIZE_SHARE", "SHARE", &region, share_id, change))
            }
            "attach" => {
                let vpc = params.vpc_id.unwrap_or_default();
                self.regional_vpc(&vpc, &region)?;
                if self.vpcs_to_be(&share).contains(&vpc) {
                    return Err(bad_request("the VPC is already attached to the share"));
                }
                let change = Change::ShareAttach { share: share.id, vpc };
                Ok(self.begin_nfs("ATTACH_VPC", "SHARE", &region, share_id, change))
            }
            "detach" => {
                let vpc = params.vpc_id.unwrap_or_default();
                if !self.vpcs_to_be(&share).contains(&vpc) {
                    return Err(bad_request("the VPC is not attached to the share"));
                }
                let change = Change::ShareDetach { share: share.id, vpc };
                Ok(self.begin_nfs("DETACH_VPC", "SHARE", &region, share_id, change))
            }
            "snapshot" => self.share_snapshot(&share, params.name),
            _ => Err(bad_request("type must be resize, attach, detach or snapshot")),
        }
    }

    /// The snapshot exists at once, `CREATING`; the action's `resource_id` is its id.
    fn share_snapshot(&mut self, share: &ShareRecord, name: Option<String>) -> Result<Value, Refusal> {
        let name = given(name).filter(|n| n.len() <= 20);
        let name = name.ok_or_else(|| bad_request("params.name is required, at most 20 characters"))?;
        let id = uuid();
        self.share_snapshots.push(ShareSnapshotRecord {
            id: id.clone(),
            name,
            size_gib: share.size_gib,
            region: share.region.clone(),
            status: "CREATING",
            share_id: share.id.clone(),
            created_at: now_text(),
        });
        Ok(self.begin_nfs("SNAPSHOT", "SNAPSHOT", &share.region, json!(id), Change::ShareSnapshotActive(id.clone())))
    }
}

pub(super) fn routes(router: Router<Sim>) -> Router<Sim> {
    router
        .route("/v2/nfs", get(list).post(create))
        .route("/v2/nfs/snapshots", get(snapshot_list))
        .route("/v2/nfs/snapshots/{id}", get(snapshot_one).delete(snapshot_remove))
        .route("/v2/nfs/{id}", get(one).delete(remove))
        .route("/v2/nfs/{id}/actions", post(action))
}

#[derive(Deserialize)]
struct ShareCreate {
    name: Option<String>,
    size_gib: Option<u64>,
    region: Option<String>,
    vpc_ids: Option<Vec<String>>,
    performance_tier: Option<String>,
}

impl ShareCreate {
    /// The checks that need no state; the tier as the API writes it.
    fn check(&self) -> Result<String, Refusal> {
        if self.name.as_deref().unwrap_or_default().is_empty() {
            return Err(bad_request("name is required"));
        }
        let size = self.size_gib.unwrap_or_default();
        if size < MIN_GIB {
            return Err(bad_request("The value for 'size_gib' must be greater than or equal to 50Gib."));
        }
        if size > MAX_GIB {
            return Err(bad_request("The value for 'size_gib' must be at most 32768Gib."));
        }
        if !REGIONS.contains(&self.region.as_deref().unwrap_or_default()) {
            return Err(bad_request("region is not a valid region"));
        }
        if self.vpc_ids.as_ref().is_none_or(Vec::is_empty) {
            return Err(bad_request("vpc_ids is required"));
        }
        match given(self.performance_tier.clone()).as_deref().unwrap_or("standard") {
            "standard" => Ok("PERFORMANCE_TIER_STANDARD".to_owned()),
            "high" => Ok("PERFORMANCE_TIER_HIGH".to_owned()),
            _ => Err(bad_request("performance_tier must be standard or high")),
        }
    }
}

async fn create(State(sim): State<Sim>, body: Bytes) -> Result<Response, Refusal> {
    let body: ShareCreate = parse(&body)?;
    let name = body.name.clone().unwrap_or_default();
    sim.count_name("nfs.create", &name);
    let share = sim.with_digitalocean(|model| model.share_create(body))?;
    sim.count_name("nfs.made", &name);
    Ok((StatusCode::CREATED, Json(json!({ "share": share }))).into_response())
}

#[derive(Deserialize)]
struct RegionFilter {
    region: Option<String>,
    share_id: Option<String>,
}

/// The spec shows NFS lists without `links`; they page here as every other list does (godo reads
/// `links` when present), so that a client that follows them is tested.
async fn list(State(sim): State<Sim>, page: Page, Query(filter): Query<RegionFilter>) -> Response {
    let region = given(filter.region);
    sim.with_digitalocean(|model| {
        let shares: Vec<&ShareRecord> =
            model.shares.iter().filter(|s| region.as_ref().is_none_or(|r| &s.region == r)).collect();
        paged("shares", "/v2/nfs", shares.into_iter(), &page, ShareRecord::json)
    })
}

async fn one(State(sim): State<Sim>, Path(id): Path<String>) -> Result<Response, Refusal> {
    let share = sim.with_digitalocean(|model| model.share(&id).map(ShareRecord::json)).ok_or_else(not_found)?;
    Ok(Json(json!({ "share": share })).into_response())
}

/// Gone at once; its snapshots stay.
async fn remove(State(sim): State<Sim>, Path(id): Path<String>) -> Result<Response, Refusal> {
    sim.with_digitalocean(|model| {
        model.share(&id).ok_or_else(not_found)?;
        model.shares.retain(|s| s.id != id);
        Ok::<_, Refusal>(())
    })?;
    Ok(no_content())
}

#[derive(Deserialize)]
struct ShareAction {
    #[serde(rename = "type")]
    kind: Option<String>,
    params: Option<ShareParams>,
}

#[derive(Deserialize, Default)]
struct ShareParams {
    size_gib: Option<u64>,
    vpc_id: Option<String>,
    name: Option<String>,
}

async fn action(State(sim): State<Sim>, Path(id): Path<String>, body: Bytes) -> Result<Response, Refusal> {
    let body: ShareAction = parse(&body)?;
    let action = sim.with_digitalocean(|model| model.share_action(&id, body))?;
    Ok((StatusCode::CREATED, Json(json!({ "action": action }))).into_response())
}

async fn snapshot_list(State(sim): State<Sim>, page: Page, Query(filter): Query<RegionFilter>) -> Response {
    let (region, share) = (given(filter.region), given(filter.share_id));
    sim.with_digitalocean(|model| {
        let snapshots = model.share_snapshots.iter().filter(|s| region.as_ref().is_none_or(|r| &s.region == r));
        let snapshots: Vec<&ShareSnapshotRecord> =
            snapshots.filter(|s| share.as_ref().is_none_or(|id| &s.share_id == id)).collect();
        paged("snapshots", "/v2/nfs/snapshots", snapshots.into_iter(), &page, ShareSnapshotRecord::json)
    })
}

async fn snapshot_one(State(sim): State<Sim>, Path(id): Path<String>) -> Result<Response, Refusal> {
    let snapshot =
        sim.with_digitalocean(|model| model.share_snapshots.iter().find(|s| s.id == id).map(ShareSnapshotRecord::json));
    Ok(Json(json!({ "snapshot": snapshot.ok_or_else(not_found)? })).into_response())
}

async fn snapshot_remove(State(sim): State<Sim>, Path(id): Path<String>) -> Result<Response, Refusal> {
    sim.with_digitalocean(|model| {
        let before = model.share_snapshots.len();
        model.share_snapshots.retain(|s| s.id != id);
        if model.share_snapshots.len() == before { Err(not_found()) } else { Ok(()) }
    })?;
    Ok(no_content())
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::super::testing::Api;

    async fn share(api: &Api, id: &str) -> Value {
        let (status, body) = api.get(&format!("/v2/nfs/{id}?region=")).await;
        assert_eq!(status, 200, "{body}");
        body["share"].clone()
    }

    #[tokio::test]
    async fn shares_are_created_then_active_with_an_address() {
        let api = Api::start().await;
        let vpc = api.vpc("files", "atl1").await;
        let far = api.vpc("far", "nyc3").await;
        let small = json!({ "name": "media", "size_gib": 49, "region": "atl1", "vpc_ids": [vpc] });
        let (status, refused) = api.post("/v2/nfs", small).await;
        assert_eq!(status, 400);
        assert_eq!(refused["message"], "The value for 'size_gib' must be greater than or equal to 50Gib.");
        let wrong = json!({ "name": "media", "size_gib": 50, "region": "atl1", "vpc_ids": [far] });
        assert_eq!(api.post("/v2/nfs", wrong).await.0, 400, "a VPC of another region");
        let body =
            json!({ "name": "media", "size_gib": 100, "region": "atl1", "vpc_ids": [vpc], "performance_tier": "high" });
        let (status, made) = api.post("/v2/nfs", body).await;
        assert_eq!(status, 201, "{made}");
        let id = made["share"]["id"].as_str().unwrap().to_owned();
        assert_eq!((made["share"]["status"].as_str(), made["share"]["host"].as_str()), (Some("CREATING"), Some("")));
        assert_eq!(made["share"]["performance_tier"], "PERFORMANCE_TIER_HIGH");
        assert_eq!(share(&api, &id).await["status"], "CREATING");
        assert_eq!(api.sim.name_calls("nfs.made", "media"), 1);

        api.later().await;
        let active = share(&api, &id).await;
        assert_eq!(active["status"], "ACTIVE");
        let (_, vpc_body) = api.get(&format!("/v2/vpcs/{vpc}")).await;
        let network = vpc_body["vpc"]["ip_range"].as_str().unwrap().split('/').next().unwrap().to_owned();
        assert_eq!(active["host"], format!("{}.2", network.rsplit_once('.').unwrap().0), "the VPC's .2");
        assert_eq!(active["mount_path"], format!("/2480912/{id}"));
        assert_eq!(api.get("/v2/nfs").await.1["shares"].as_array().unwrap().len(), 1);
        assert_eq!(api.get("/v2/nfs?region=atl1").await.1["shares"].as_array().unwrap().len(), 1);
        assert_eq!(api.get("/v2/nfs?region=nyc3").await.1["shares"], json!([]));
        assert_eq!(api.delete(&format!("/v2/nfs/{id}?region=atl1")).await.0, 204);
        assert_eq!(api.get(&format!("/v2/nfs/{id}")).await.0, 404);
        assert_eq!(api.delete(&format!("/v2/nfs/{id}")).await.0, 404);
        assert_eq!(api.sim.calls("nfs.get"), 3);
    }

    #[tokio::test]
    async fn share_actions_answer_201_and_show_only_in_the_share() {
        let api = Api::start().await;
        let (first, second) = (api.vpc("one", "atl1").await, api.vpc("two", "atl1").await);
        let body = json!({ "name": "work", "size_gib": 50, "region": "atl1", "vpc_ids": [first] });
        let id = api.post("/v2/nfs", body).await.1["share"]["id"].as_str().unwrap().to_owned();
        api.later().await;
        let path = format!("/v2/nfs/{id}/actions");
        let act = |body: Value| api.post(&path, body);

        let (status, resize) = act(json!({ "type": "resize", "region": "", "params": { "size_gib": 200 } })).await;
        assert_eq!(status, 201);
        let action = &resize["action"];
        assert_eq!((action["status"].as_str(), action["type"].as_str()), (Some("IN_PROGRESS"), Some("RESIZE_SHARE")));
        assert_eq!(
            (action["resource_id"].as_str(), action["resource_type"].as_str()),
            (Some(id.as_str()), Some("SHARE"))
        );
        assert_eq!(action["id"].as_str().unwrap().len(), 36, "a UUID");
        assert_eq!(api.get(&format!("/v2/actions/{}", action["id"].as_str().unwrap())).await.0, 404, "no GET");
        assert_eq!(act(json!({ "type": "resize", "params": { "size_gib": 200 } })).await.0, 400, "not larger");
        assert_eq!(act(json!({ "type": "attach", "params": { "vpc_id": second } })).await.0, 201);
        assert_eq!(act(json!({ "type": "attach", "params": { "vpc_id": second } })).await.0, 400, "attaching already");
        assert_eq!(act(json!({ "type": "attach", "params": { "vpc_id": "nope" } })).await.0, 400);
        assert_eq!(act(json!({ "type": "reassign", "params": {} })).await.0, 400);
        let before = share(&api, &id).await;
        assert_eq!((before["size_gib"].clone(), before["vpc_ids"].clone()), (json!(50), json!([first])));

        api.later().await;
        let after = share(&api, &id).await;
        assert_eq!((after["size_gib"].clone(), after["vpc_ids"].clone()), (json!(200), json!([first, second])));
        assert_eq!(act(json!({ "type": "detach", "params": { "vpc_id": first } })).await.0, 201);
        assert_eq!(act(json!({ "type": "detach", "params": { "vpc_id": second } })).await.0, 201);
        assert_eq!(act(json!({ "type": "detach", "params": { "vpc_id": second } })).await.0, 400, "detaching already");
        api.later().await;
        let bare = share(&api, &id).await;
        assert_eq!((bare["status"].as_str(), bare["vpc_ids"].clone()), (Some("INACTIVE"), json!([])));
        act(json!({ "type": "attach", "params": { "vpc_id": second } })).await;
        api.later().await;
        assert_eq!(share(&api, &id).await["status"], "ACTIVE");

        let (status, snap) = act(json!({ "type": "snapshot", "params": { "name": "nightly" } })).await;
        assert_eq!((status, snap["action"]["resource_type"].as_str()), (201, Some("SNAPSHOT")));
        let snapshot = snap["action"]["resource_id"].as_str().unwrap().to_owned();
        let (_, creating) = api.get(&format!("/v2/nfs/snapshots/{snapshot}?region=atl1")).await;
        assert_eq!(
            (creating["snapshot"]["status"].as_str(), creating["snapshot"]["size_gib"].as_u64()),
            (Some("CREATING"), Some(200))
        );
        assert_eq!(api.sim.calls("nfs.snapshots.get"), 1, "not taken for /v2/nfs/{{id}}");
        api.later().await;
        assert_eq!(api.get(&format!("/v2/nfs/snapshots/{snapshot}")).await.1["snapshot"]["status"], "ACTIVE");
        let (_, listed) = api.get(&format!("/v2/nfs/snapshots?share_id={id}&region=")).await;
        assert_eq!(listed["snapshots"][0]["share_id"], id.as_str());
        assert_eq!(api.get("/v2/nfs/snapshots?share_id=other").await.1["snapshots"], json!([]));
        assert_eq!(api.delete(&format!("/v2/nfs/{id}")).await.0, 204);
        assert_eq!(api.get(&format!("/v2/nfs/snapshots/{snapshot}")).await.0, 200, "outlives its share");
        assert_eq!(api.delete(&format!("/v2/nfs/snapshots/{snapshot}")).await.0, 204);
        assert_eq!(api.get(&format!("/v2/nfs/snapshots/{snapshot}")).await.0, 404);
        assert_eq!(
            api.post("/v2/nfs/nope/actions", json!({ "type": "resize", "params": { "size_gib": 60 } })).await.0,
            404
        );
    }
}
