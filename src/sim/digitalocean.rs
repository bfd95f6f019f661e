//! The simulated DigitalOcean: an in-memory model and a thin HTTP face with the real API's
//! paths, status codes, error bodies (`{id, message, request_id}`), pagination and rate-limit
//! headers. VPCs now; droplets, volumes and their actions, snapshots, NFS shares, reserved IPs
//! and tags join the same model.
use std::time::Duration;

use axum::Router;
use axum::extract::{MatchedPath, Path, Query, Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Json, Response};
use axum::routing::get;
use serde::Deserialize;
use serde_json::{Value, json};

use super::{Fault, Sim};

pub const REGIONS: &[&str] =
    &["nyc1", "nyc2", "nyc3", "sfo2", "sfo3", "ams3", "sgp1", "lon1", "fra1", "tor1", "blr1", "syd1", "atl1"];
const STALL: Duration = Duration::from_secs(120);

#[derive(Clone, Debug)]
struct VpcRecord {
    id: String,
    name: String,
    description: String,
    region: String,
    ip_range: (u32, u8),
    created_at: String,
}

impl VpcRecord {
    fn json(&self) -> Value {
        json!({
            "id": self.id, "urn": format!("do:vpc:{}", self.id), "name": self.name, "description": self.description,
            "region": self.region, "ip_range": crate::cidr::text(self.ip_range), "default": false, "created_at": self.created_at,
        })
    }
}

/// An asynchronous action: in progress until the sim's action time has passed.
#[derive(Clone, Debug)]
struct ActionRecord {
    id: u64,
    kind: String,
    resource_type: String,
    region: String,
    started: std::time::Instant,
    started_at: chrono::DateTime<chrono::Utc>,
}

impl ActionRecord {
    fn json(&self, took: Duration) -> Value {
        let done = self.started.elapsed() >= took;
        let completed_at = done.then(|| {
            (self.started_at + chrono::Duration::from_std(took).unwrap_or_default())
                .to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
        });
        json!({
            "id": self.id, "status": if done { "completed" } else { "in-progress" }, "type": self.kind,
            "started_at": self.started_at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true), "completed_at": completed_at,
            "resource_id": null, "resource_type": self.resource_type,
            "region": { "slug": self.region, "name": self.region, "sizes": [], "features": [], "available": true },
            "region_slug": self.region,
        })
    }
}

/// The account's state, shared by every token.
#[derive(Default)]
pub struct Model {
    vpcs: Vec<VpcRecord>,
    actions: Vec<ActionRecord>,
}

impl Model {
    /// Starts an action (volume attach, resize …) and returns its id.
    pub fn start_action(&mut self, kind: &str, resource_type: &str, region: &str) -> u64 {
        let id = 70_000_000 + self.actions.len() as u64 + 1;
        self.actions.push(ActionRecord {
            id,
            kind: kind.to_owned(),
            resource_type: resource_type.to_owned(),
            region: region.to_owned(),
            started: std::time::Instant::now(),
            started_at: chrono::Utc::now(),
        });
        id
    }
}

impl Model {
    fn vpc(&self, id: &str) -> Option<&VpcRecord> {
        self.vpcs.iter().find(|v| v.id == id)
    }
}

pub fn router(sim: Sim) -> Router {
    Router::new()
        .route("/v2/vpcs", get(vpc_list).post(vpc_create))
        .route("/v2/vpcs/{id}", get(vpc_get).delete(vpc_delete))
        .route("/v2/actions/{id}", get(action_get))
        .fallback(|| async { not_found() })
        .layer(middleware::from_fn_with_state(sim.clone(), face))
        .with_state(sim)
}

/// The endpoint name a call is counted and faulted under, e.g. `vpcs.create`.
fn endpoint(method: &Method, path: &str) -> String {
    let collection = path.trim_start_matches("/v2/").split('/').next().unwrap_or("");
    let one = path.contains('{');
    let verb = match (method.as_str(), one) {
        ("POST", _) => "create",
        ("GET", false) => "list",
        ("GET", true) => "get",
        ("DELETE", _) => "delete",
        _ => "update",
    };
    format!("{collection}.{verb}")
}

/// Every call: latency, authentication, rate limit (headers on every answer), counting, faults.
async fn face(State(sim): State<Sim>, request: Request, next: Next) -> Response {
    tokio::time::sleep(sim.config().latency).await;
    let Some(token) = bearer(request.headers()) else {
        return error(StatusCode::UNAUTHORIZED, "unauthorized", "Unable to authenticate you.");
    };
    let path = request.extensions().get::<MatchedPath>().map(|p| p.as_str().to_owned()).unwrap_or_default();
    let name = endpoint(request.method(), &path);
    sim.count_call(&name);
    let budget = sim.spend(&token);
    // A refused request does not use up a fault meant for a request that gets through.
    let fault = if budget.refused_for.is_none() { sim.take_fault(&name) } else { None };
    let mut response = match (budget.refused_for, fault) {
        (Some(wait), _) => {
            let mut r = error(StatusCode::TOO_MANY_REQUESTS, "too_many_requests", "API Rate limit exceeded.");
            r.headers_mut().insert("retry-after", HeaderValue::from(wait));
            r
        }
        (None, Some(Fault::Status { status })) => {
            let status = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
            let (id, message) = error_words(status);
            error(status, id, message)
        }
        (None, Some(Fault::Stall)) => {
            tokio::time::sleep(STALL).await;
            error(StatusCode::GATEWAY_TIMEOUT, "server_error", "stalled")
        }
        (None, Some(Fault::Drop)) => {
            let _done = next.run(request).await;
            tokio::time::sleep(STALL).await;
            error(StatusCode::GATEWAY_TIMEOUT, "server_error", "answer dropped")
        }
        (None, None) => next.run(request).await,
    };
    let headers = response.headers_mut();
    headers.insert("ratelimit-limit", HeaderValue::from(budget.limit));
    headers.insert("ratelimit-remaining", HeaderValue::from(budget.remaining));
    headers.insert("ratelimit-reset", HeaderValue::from(budget.reset_at));
    headers.insert(
        "x-request-id",
        HeaderValue::from_str(&ulid::Ulid::generate().to_string()).unwrap_or(HeaderValue::from_static("-")),
    );
    response
}

/// The API's `id` and example message per status (the reference's table).
fn error_words(status: StatusCode) -> (&'static str, &'static str) {
    match status.as_u16() {
        400 => ("bad_request", "error parsing request body"),
        401 => ("unauthorized", "Unable to authenticate you."),
        403 => ("forbidden", "You do not have permission to perform this action."),
        404 => ("not_found", "The resource you requested could not be found."),
        409 => ("conflict", "The request could not be completed due to a conflict."),
        422 => ("unprocessable_entity", "request payload validation failed"),
        429 => ("too_many_requests", "API Rate limit exceeded."),
        _ => ("server_error", "Unexpected server-side error"),
    }
}

fn bearer(headers: &HeaderMap) -> Option<String> {
    let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    let token = value.strip_prefix("Bearer ")?.trim();
    (!token.is_empty()).then(|| token.to_owned())
}

fn error(status: StatusCode, id: &str, message: &str) -> Response {
    let body = json!({ "id": id, "message": message, "request_id": ulid::Ulid::generate().to_string().to_lowercase() });
    (status, Json(body)).into_response()
}

fn unprocessable(message: &str) -> Response {
    error(StatusCode::UNPROCESSABLE_ENTITY, "unprocessable_entity", message)
}

fn not_found() -> Response {
    error(StatusCode::NOT_FOUND, "not_found", "The resource you requested could not be found.")
}

#[derive(Deserialize)]
struct Page {
    page: Option<usize>,
    per_page: Option<usize>,
}

/// A page of `items` under `key`, with `links` and `meta` as the API writes them.
fn paginate(key: &str, base: &str, items: Vec<Value>, page: &Page) -> Response {
    let per_page = page.per_page.unwrap_or(20).clamp(1, 200);
    let pages = items.len().div_ceil(per_page).max(1);
    let current = page.page.unwrap_or(1).max(1);
    let chunk: Vec<Value> = items.iter().skip((current - 1) * per_page).take(per_page).cloned().collect();
    let link = |n: usize| format!("https://api.digitalocean.com{base}?page={n}&per_page={per_page}");
    let mut links = serde_json::Map::new();
    if current > 1 {
        links.insert("first".into(), json!(link(1)));
        links.insert("prev".into(), json!(link(current - 1)));
    }
    if current < pages {
        links.insert("next".into(), json!(link(current + 1)));
        links.insert("last".into(), json!(link(pages)));
    }
    let links = if links.is_empty() { json!({}) } else { json!({ "pages": links }) };
    Json(json!({ key: chunk, "links": links, "meta": { "total": items.len() } })).into_response()
}

#[derive(Deserialize)]
struct VpcCreate {
    name: Option<String>,
    region: Option<String>,
    ip_range: Option<String>,
    #[serde(default)]
    description: String,
}

async fn vpc_create(State(sim): State<Sim>, body: Option<Json<VpcCreate>>) -> Response {
    let Some(Json(body)) = body else {
        return error(StatusCode::BAD_REQUEST, "bad_request", "error parsing request body");
    };
    let name = body.name.unwrap_or_default();
    sim.count_name("vpcs.create", &name);
    if name.is_empty() || name.len() > 255 || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '.') {
        return unprocessable("name must contain only letters, numbers, dashes and periods");
    }
    let region = body.region.unwrap_or_default();
    if !REGIONS.contains(&region.as_str()) {
        return unprocessable("region is not a valid region");
    }
    if body.description.len() > 255 {
        return unprocessable("description must be at most 255 characters");
    }
    sim.with_digitalocean(|model| {
        if model.vpcs.iter().any(|v| v.name == name) {
            return unprocessable("a VPC with this name already exists");
        }
        let range = match body.ip_range.as_deref().map(crate::cidr::parse_private) {
            Some(Some(range)) => range,
            Some(None) => return unprocessable("ip_range must be a private CIDR block from /28 to /16"),
            None => match free_range(model, &region) {
                Some(range) => range,
                None => return unprocessable("no free ip_range left in the region"),
            },
        };
        if model.vpcs.iter().any(|v| v.region == region && crate::cidr::overlaps(v.ip_range, range)) {
            return unprocessable("ip_range overlaps with another VPC in the region");
        }
        let record = VpcRecord {
            id: uuid(),
            name: name.clone(),
            description: body.description.clone(),
            region: region.clone(),
            ip_range: range,
            created_at: chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
        };
        let json = record.json();
        model.vpcs.push(record);
        // Creates that made something, per name: what "never made twice" is checked against.
        sim.count_name("vpcs.made", &name);
        (StatusCode::CREATED, Json(json!({ "vpc": json }))).into_response()
    })
}

async fn vpc_list(State(sim): State<Sim>, Query(page): Query<Page>) -> Response {
    let items = sim.with_digitalocean(|model| model.vpcs.iter().map(VpcRecord::json).collect());
    paginate("vpcs", "/v2/vpcs", items, &page)
}

async fn vpc_get(State(sim): State<Sim>, Path(id): Path<String>) -> Response {
    sim.with_digitalocean(|model| match model.vpc(&id) {
        Some(vpc) => Json(json!({ "vpc": vpc.json() })).into_response(),
        None => not_found(),
    })
}

async fn vpc_delete(State(sim): State<Sim>, Path(id): Path<String>) -> Response {
    sim.with_digitalocean(|model| {
        let before = model.vpcs.len();
        model.vpcs.retain(|v| v.id != id);
        if model.vpcs.len() == before { not_found() } else { StatusCode::NO_CONTENT.into_response() }
    })
}

async fn action_get(State(sim): State<Sim>, Path(id): Path<String>) -> Response {
    let took = sim.config().action_time;
    sim.with_digitalocean(|model| match model.actions.iter().find(|a| a.id.to_string() == id) {
        Some(action) => Json(json!({ "action": action.json(took) })).into_response(),
        None => not_found(),
    })
}

fn uuid() -> String {
    let hex = format!("{:032x}", u128::from(ulid::Ulid::generate()));
    format!("{}-{}-{}-{}-{}", &hex[..8], &hex[8..12], &hex[12..16], &hex[16..20], &hex[20..])
}

/// The first free /20 of 10.0.0.0/8 in the region, as the API picks one when none is asked.
fn free_range(model: &Model, region: &str) -> Option<(u32, u8)> {
    (0..4096u32)
        .map(|i| (0x0A00_0000 | (i << 12), 20))
        .find(|r| !model.vpcs.iter().any(|v| v.region == region && crate::cidr::overlaps(v.ip_range, *r)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints_are_named_by_collection_and_verb() {
        assert_eq!(endpoint(&Method::POST, "/v2/vpcs"), "vpcs.create");
        assert_eq!(endpoint(&Method::GET, "/v2/vpcs"), "vpcs.list");
        assert_eq!(endpoint(&Method::GET, "/v2/vpcs/{id}"), "vpcs.get");
        assert_eq!(endpoint(&Method::DELETE, "/v2/vpcs/{id}"), "vpcs.delete");
    }
}
