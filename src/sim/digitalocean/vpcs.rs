//! VPCs (`/v2/vpcs`): regional private networks with RFC 1918 ranges. Each region gets a default
//! VPC, `default-<region>`, the first time a droplet is made there without one.
use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Json, Response};
use axum::routing::get;
use serde::Deserialize;
use serde_json::{Value, json};

use super::{Model, Page, REGIONS, Refusal, no_content, not_found, now_text, paged, parse, unprocessable, uuid};
use crate::sim::Sim;

#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub(super) struct VpcRecord {
    pub(super) id: String,
    pub(super) name: String,
    pub(super) description: String,
    pub(super) region: String,
    pub(super) ip_range: (u32, u8),
    pub(super) default: bool,
    pub(super) created_at: String,
}

impl VpcRecord {
    fn json(&self) -> Value {
        json!({
            "id": self.id, "urn": format!("do:vpc:{}", self.id), "name": self.name, "description": self.description,
            "region": self.region, "ip_range": crate::cidr::text(self.ip_range), "default": self.default,
            "created_at": self.created_at,
        })
    }
}

impl Model {
    pub(super) fn vpc(&self, id: &str) -> Option<&VpcRecord> {
        self.vpcs.iter().find(|v| v.id == id)
    }

    /// The region's default VPC, made on first use (its name does not look like ours: `bc-…`).
    pub(super) fn default_vpc(&mut self, region: &str) -> Option<&VpcRecord> {
        if !self.vpcs.iter().any(|v| v.default && v.region == region) {
            let ip_range = free_range(self)?;
            self.vpcs.push(VpcRecord {
                id: uuid(),
                name: format!("default-{region}"),
                description: String::new(),
                region: region.to_owned(),
                ip_range,
                default: true,
                created_at: now_text(),
            });
        }
        self.vpcs.iter().find(|v| v.default && v.region == region)
    }
}

pub(super) fn routes(router: Router<Sim>) -> Router<Sim> {
    router.route("/v2/vpcs", get(list).post(create)).route("/v2/vpcs/{id}", get(one).delete(delete))
}

#[derive(Deserialize)]
struct VpcCreate {
    name: Option<String>,
    region: Option<String>,
    ip_range: Option<String>,
    #[serde(default)]
    description: String,
}

async fn create(State(sim): State<Sim>, body: Bytes) -> Result<Response, Refusal> {
    let body: VpcCreate = parse(&body)?;
    let name = body.name.clone().unwrap_or_default();
    sim.count_name("vpcs.create", &name);
    if name.is_empty() || name.len() > 255 || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '.') {
        return Err(unprocessable("name must contain only letters, numbers, dashes and periods"));
    }
    let region = body.region.clone().unwrap_or_default();
    if !REGIONS.contains(&region.as_str()) {
        return Err(unprocessable("region is not a valid region"));
    }
    if body.description.len() > 255 {
        return Err(unprocessable("description must be at most 255 characters"));
    }
    let vpc = sim.with_digitalocean(|model| model.vpc_create(body, name.clone(), region))?;
    // Creates that made something, per name: what "never made twice" is checked against.
    sim.count_name("vpcs.made", &name);
    Ok((StatusCode::CREATED, Json(json!({ "vpc": vpc }))).into_response())
}

impl Model {
    fn vpc_create(&mut self, body: VpcCreate, name: String, region: String) -> Result<Value, Refusal> {
        if self.vpcs.iter().any(|v| v.name == name) {
            return Err(unprocessable("a VPC with this name already exists"));
        }
        let ip_range = match body.ip_range.as_deref().map(crate::cidr::parse_private) {
            Some(Some(range)) => range,
            Some(None) => return Err(unprocessable("ip_range must be a private CIDR block from /28 to /16")),
            None => free_range(self).ok_or_else(|| unprocessable("no free ip_range left on the account"))?,
        };
        // Account-wide, default VPCs included: VPC ranges of one account never overlap, in any region.
        if self.vpcs.iter().any(|v| crate::cidr::overlaps(v.ip_range, ip_range)) {
            return Err(unprocessable("ip_range overlaps with another VPC network in the account"));
        }
        let record = VpcRecord {
            id: uuid(),
            name,
            description: body.description,
            region,
            ip_range,
            default: false,
            created_at: now_text(),
        };
        let json = record.json();
        self.vpcs.push(record);
        Ok(json)
    }
}

async fn list(State(sim): State<Sim>, page: Page) -> Response {
    sim.with_digitalocean(|model| paged("vpcs", "/v2/vpcs", model.vpcs.iter(), &page, VpcRecord::json))
}

async fn one(State(sim): State<Sim>, Path(id): Path<String>) -> Response {
    sim.with_digitalocean(|model| match model.vpc(&id) {
        Some(vpc) => Json(json!({ "vpc": vpc.json() })).into_response(),
        None => not_found().into_response(),
    })
}

async fn delete(State(sim): State<Sim>, Path(id): Path<String>) -> Response {
    sim.with_digitalocean(|model| {
        let before = model.vpcs.len();
        model.vpcs.retain(|v| v.id != id);
        if model.vpcs.len() == before { not_found().into_response() } else { no_content() }
    })
}

/// The first /20 of 10.0.0.0/8 free on the account, as the API picks one when none is asked.
fn free_range(model: &Model) -> Option<(u32, u8)> {
    (0..4096u32)
        .map(|i| (0x0A00_0000 | (i << 12), 20))
        .find(|r| !model.vpcs.iter().any(|v| crate::cidr::overlaps(v.ip_range, *r)))
}
