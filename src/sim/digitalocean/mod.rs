//! The simulated DigitalOcean: one in-memory model behind a thin HTTP face with the real API's
//! paths, status codes, error bodies (`{id, message, request_id}`), pagination and rate-limit
//! headers. VPCs, droplets, cloud firewalls, block volumes with their actions and snapshots, NFS
//! shares with theirs, tags, and reserved IPv4 and IPv6 addresses with their assign and unassign
//! actions, one file each.
//!
//! Time: asynchronous work (a droplet's create and destroy, volume, NFS and reserved IP actions) is
//! an action record that carries the change it makes and when it is due. Every request first
//! settles what is due (`Model::settle`), so state changes at completion, `SimConfig::action_time`
//! after the start, and the handler always reads settled state.
mod actions;
mod droplets;
mod firewalls;
mod nfs;
mod reserved_ips;
mod seed;
mod tags;
mod volumes;
mod vpcs;

use std::time::Duration;

use axum::Router;
use axum::extract::{MatchedPath, Query, Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Json, Response};
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use super::{Fault, Sim, SimConfig};
pub use seed::{Plan, Seeded};

pub const REGIONS: &[&str] =
    &["nyc1", "nyc2", "nyc3", "sfo2", "sfo3", "ams3", "sgp1", "lon1", "fra1", "tor1", "blr1", "syd1", "atl1"];
const STALL: Duration = Duration::from_secs(120);
const API: &str = "https://api.digitalocean.com";

/// The account's state, shared by every token.
#[derive(serde::Serialize, serde::Deserialize)]
pub struct Model {
    action_time: Duration,
    #[serde(skip, default = "crate::clock::Clock::system")]
    clock: crate::clock::Clock,
    snapshot_interval: Duration,
    /// Numbers droplets and their addresses.
    serial: u64,
    vpcs: Vec<vpcs::VpcRecord>,
    actions: Vec<actions::ActionRecord>,
    droplets: Vec<droplets::DropletRecord>,
    destroys: Vec<droplets::DestroyRecord>,
    volumes: Vec<volumes::VolumeRecord>,
    snapshots: Vec<volumes::SnapshotRecord>,
    shares: Vec<nfs::ShareRecord>,
    firewalls: Vec<firewalls::FirewallRecord>,
    share_snapshots: Vec<nfs::ShareSnapshotRecord>,
    /// Tag names in their first spelling.
    tags: Vec<String>,
    /// Reserved IPv4 and IPv6 addresses.
    addresses: Vec<reserved_ips::AddressRecord>,
    /// Numbers reservations.
    reservations: u64,
    /// The latest `reserved_at`: the next is later.
    last_reserved: Option<chrono::DateTime<chrono::Utc>>,
    /// The account's default project, which reserved IPv4s belong to unless told otherwise.
    project: String,
}

impl Model {
    /// A kept model, on this run's clock and timing.
    pub fn configured(self, config: &SimConfig) -> Model {
        Model {
            action_time: config.action_time,
            clock: config.clock.clone(),
            snapshot_interval: config.snapshot_interval,
            ..self
        }
    }

    pub fn new(config: &SimConfig) -> Model {
        Model {
            action_time: config.action_time,
            clock: config.clock.clone(),
            snapshot_interval: config.snapshot_interval,
            serial: 0,
            vpcs: Vec::new(),
            actions: Vec::new(),
            droplets: Vec::new(),
            destroys: Vec::new(),
            volumes: Vec::new(),
            snapshots: Vec::new(),
            shares: Vec::new(),
            firewalls: Vec::new(),
            share_snapshots: Vec::new(),
            tags: Vec::new(),
            addresses: Vec::new(),
            reservations: 0,
            last_reserved: None,
            project: uuid(),
        }
    }

    /// Every selective destroy asked for, in order: the droplet's id and the request body.
    pub fn selective_destroys(&self) -> Vec<(u64, Value)> {
        self.destroys.iter().map(|d| (d.droplet, d.body.clone())).collect()
    }
}

pub fn router(sim: Sim) -> Router {
    let routes = [
        vpcs::routes,
        droplets::routes,
        firewalls::routes,
        volumes::routes,
        nfs::routes,
        tags::routes,
        reserved_ips::routes,
        actions::routes,
    ]
    .into_iter()
    .fold(Router::new(), |router, add| add(router));
    routes.fallback(|| async { not_found() }).layer(middleware::from_fn_with_state(sim.clone(), face)).with_state(sim)
}

/// The endpoint name a call is counted and faulted under: the path's literal segments, then the
/// verb, e.g. `vpcs.create`, `volumes.actions.get`, `tags.resources.delete`.
fn endpoint(method: &Method, path: &str) -> String {
    let segments: Vec<&str> = path.trim_start_matches("/v2/").split('/').filter(|s| !s.is_empty()).collect();
    let one = segments.last().is_some_and(|s| s.starts_with('{'));
    let verb = match (method.as_str(), one) {
        ("POST", _) => "create",
        ("GET", false) => "list",
        ("GET", true) => "get",
        ("DELETE", _) => "delete",
        _ => "update",
    };
    let literal: Vec<&str> = segments.into_iter().filter(|s| !s.starts_with('{')).collect();
    if literal.is_empty() { format!("unmatched.{verb}") } else { format!("{}.{verb}", literal.join(".")) }
}

/// Every call: latency, authentication, rate limit (headers on every answer), counting, faults,
/// and the model settled before the handler reads it.
async fn face(State(sim): State<Sim>, request: Request, next: Next) -> Response {
    tokio::time::sleep(sim.config().latency).await;
    let Some(token) = bearer(request.headers()) else {
        let mut refused = error(StatusCode::UNAUTHORIZED, "unauthorized", "Unable to authenticate you.");
        stamp(&mut refused, &sim.unspent());
        return refused;
    };
    let path = request.extensions().get::<MatchedPath>().map(|p| p.as_str().to_owned()).unwrap_or_default();
    let name = endpoint(request.method(), &path);
    sim.count_call(&name);
    let budget = sim.spend(&token);
    // A refused request does not use up a fault meant for a request that gets through.
    let fault = if budget.refused_for.is_none() { sim.take_fault(&name) } else { None };
    sim.with_digitalocean(|model| model.settle());
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
        (None, Some(Fault::Fail { message })) => in_api_words(super::failing_with(message, next.run(request)).await),
        (None, None) => in_api_words(next.run(request).await),
    };
    stamp(&mut response, &budget);
    response
}

/// The headers of every answer: the rate limit and a request id.
fn stamp(response: &mut Response, budget: &super::Budget) {
    let headers = response.headers_mut();
    headers.insert("ratelimit-limit", HeaderValue::from(budget.limit));
    headers.insert("ratelimit-remaining", HeaderValue::from(budget.remaining));
    headers.insert("ratelimit-reset", HeaderValue::from(budget.reset_at));
    headers.insert("x-request-id", HeaderValue::from_str(&uuid()).unwrap_or(HeaderValue::from_static("-")));
}

/// An error the router itself answered (a method the path does not take, a query value that does
/// not parse) in the API's JSON error body, as every other error.
fn in_api_words(response: Response) -> Response {
    let status = response.status();
    let json =
        response.headers().get(header::CONTENT_TYPE).is_some_and(|t| t.as_bytes().starts_with(b"application/json"));
    if !status.is_client_error() || json {
        return response;
    }
    let (id, message) = match status {
        StatusCode::METHOD_NOT_ALLOWED => ("method_not_allowed", "The method is not allowed for this resource."),
        _ => error_words(status),
    };
    error(status, id, message)
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

/// A request the API refuses: the answer's status, error `id` and `message`. Small, so that
/// results carry it cheaply; it becomes the error body when answered.
#[derive(Debug)]
struct Refusal {
    status: StatusCode,
    id: &'static str,
    message: String,
}

impl IntoResponse for Refusal {
    fn into_response(self) -> Response {
        error(self.status, self.id, &self.message)
    }
}

fn unprocessable(message: &str) -> Refusal {
    Refusal { status: StatusCode::UNPROCESSABLE_ENTITY, id: "unprocessable_entity", message: message.to_owned() }
}

fn bad_request(message: &str) -> Refusal {
    Refusal { status: StatusCode::BAD_REQUEST, id: "bad_request", message: message.to_owned() }
}

fn conflict(message: &str) -> Refusal {
    Refusal { status: StatusCode::CONFLICT, id: "conflict", message: message.to_owned() }
}

fn not_found() -> Refusal {
    let message = "The resource you requested could not be found.".to_owned();
    Refusal { status: StatusCode::NOT_FOUND, id: "not_found", message }
}

fn no_content() -> Response {
    StatusCode::NO_CONTENT.into_response()
}

/// A JSON request body; one that does not parse is the API's 400.
fn parse<T: DeserializeOwned>(body: &[u8]) -> Result<T, Refusal> {
    serde_json::from_slice(body).map_err(|_| bad_request("error parsing request body"))
}

/// Empty strings and nulls in a request mean "not given", as the API takes them.
fn given(value: Option<String>) -> Option<String> {
    value.filter(|v| !v.is_empty())
}

/// A list request's `page` and `per_page` (20 when not given, at most 200, or the sim's page
/// limit).
struct Page {
    page: Option<usize>,
    per_page: usize,
}

#[derive(Deserialize)]
struct PageAsked {
    page: Option<usize>,
    per_page: Option<usize>,
}

impl axum::extract::FromRequestParts<Sim> for Page {
    type Rejection = Response;

    async fn from_request_parts(parts: &mut axum::http::request::Parts, sim: &Sim) -> Result<Self, Self::Rejection> {
        let Query(asked) =
            Query::<PageAsked>::from_request_parts(parts, sim).await.map_err(IntoResponse::into_response)?;
        let most = sim.config().page_limit.unwrap_or(200).clamp(1, 200);
        Ok(Page { page: asked.page, per_page: asked.per_page.unwrap_or(20).clamp(1, 200).min(most) })
    }
}

/// A page of `items` under `key`, with `links` and `meta` as the API writes them.
fn paginate(key: &str, base: &str, items: Vec<Value>, page: &Page) -> Response {
    paged(key, base, items.into_iter(), page, |item| item)
}

/// A page of what `matching` yields, each shown by `json`: only the page's items are written
/// out, so reading every page of a long list costs the length of the list, not its square.
fn paged<T>(
    key: &str,
    base: &str,
    matching: impl ExactSizeIterator<Item = T>,
    page: &Page,
    json: impl Fn(T) -> Value,
) -> Response {
    let per_page = page.per_page;
    let total = matching.len();
    let pages = total.div_ceil(per_page).max(1);
    let current = page.page.unwrap_or(1).max(1);
    let chunk: Vec<Value> = matching.skip((current - 1).saturating_mul(per_page)).take(per_page).map(json).collect();
    let link = |n: usize| format!("{API}{base}?page={n}&per_page={per_page}");
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
    Json(json!({ key: chunk, "links": links, "meta": { "total": total } })).into_response()
}

/// The full region object droplets, volumes and actions carry.
fn region_json(slug: &str) -> Value {
    let name = match slug {
        "nyc1" => "New York 1",
        "nyc2" => "New York 2",
        "nyc3" => "New York 3",
        "sfo2" => "San Francisco 2",
        "sfo3" => "San Francisco 3",
        "ams3" => "Amsterdam 3",
        "sgp1" => "Singapore 1",
        "lon1" => "London 1",
        "fra1" => "Frankfurt 1",
        "tor1" => "Toronto 1",
        "blr1" => "Bangalore 1",
        "syd1" => "Sydney 1",
        "atl1" => "Atlanta 1",
        other => other,
    };
    json!({ "name": name, "slug": slug, "sizes": [], "features": ["metadata", "storage"], "available": true })
}

fn timestamp(at: chrono::DateTime<chrono::Utc>) -> String {
    at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

fn now_text() -> String {
    timestamp(chrono::Utc::now())
}

fn uuid() -> String {
    let hex = format!("{:032x}", u128::from(ulid::Ulid::generate()));
    format!("{}-{}-{}-{}-{}", &hex[..8], &hex[8..12], &hex[12..16], &hex[16..20], &hex[20..])
}

/// A sim on a free port with a short action time, and a client for it (`Bearer t`).
#[cfg(test)]
mod testing {
    use std::time::Duration;

    use serde_json::Value;

    use crate::sim::{Sim, SimConfig};

    pub(super) const ACTION_TIME: Duration = Duration::from_millis(50);

    pub(super) struct Api {
        pub(super) sim: Sim,
        url: String,
        http: reqwest::Client,
    }

    impl Api {
        pub(super) async fn start() -> Api {
            Api::start_with(SimConfig {
                action_time: ACTION_TIME,
                snapshot_interval: Duration::ZERO,
                ..Default::default()
            })
            .await
        }

        pub(super) async fn start_with(config: SimConfig) -> Api {
            crate::init_crypto();
            let (sim, url) = Sim::spawn_local(config).await.unwrap();
            Api { sim, url, http: reqwest::Client::new() }
        }

        async fn send(&self, request: reqwest::RequestBuilder) -> (u16, Value) {
            let response = request.bearer_auth("t").send().await.unwrap();
            let status = response.status().as_u16();
            let text = response.text().await.unwrap();
            (status, if text.is_empty() { Value::Null } else { serde_json::from_str(&text).unwrap() })
        }

        pub(super) async fn get(&self, path: &str) -> (u16, Value) {
            self.send(self.http.get(format!("{}{path}", self.url))).await
        }

        pub(super) async fn post(&self, path: &str, body: Value) -> (u16, Value) {
            self.send(self.http.post(format!("{}{path}", self.url)).json(&body)).await
        }

        pub(super) async fn put(&self, path: &str, body: Value) -> (u16, Value) {
            self.send(self.http.put(format!("{}{path}", self.url)).json(&body)).await
        }

        pub(super) async fn delete(&self, path: &str) -> (u16, Value) {
            self.send(self.http.delete(format!("{}{path}", self.url))).await
        }

        pub(super) async fn delete_with(&self, path: &str, body: Value) -> (u16, Value) {
            self.send(self.http.delete(format!("{}{path}", self.url)).json(&body)).await
        }

        /// Waits until actions started now have completed.
        pub(super) async fn later(&self) {
            tokio::time::sleep(ACTION_TIME + Duration::from_millis(30)).await;
        }

        pub(super) async fn vpc(&self, name: &str, region: &str) -> String {
            let (status, body) = self.post("/v2/vpcs", serde_json::json!({ "name": name, "region": region })).await;
            assert_eq!(status, 201, "{body}");
            body["vpc"]["id"].as_str().unwrap().to_owned()
        }

        /// A droplet in `region`, active.
        pub(super) async fn droplet(&self, name: &str, region: &str) -> u64 {
            let body = serde_json::json!({
                "name": name, "region": region, "size": "s-1vcpu-1gb", "image": "ubuntu-24-04-x64",
            });
            let (status, body) = self.post("/v2/droplets", body).await;
            assert_eq!(status, 202, "{body}");
            self.later().await;
            body["droplet"]["id"].as_u64().unwrap()
        }

        pub(super) async fn volume(&self, name: &str, region: &str, size: u64) -> String {
            let body = serde_json::json!({ "name": name, "region": region, "size_gigabytes": size });
            let (status, body) = self.post("/v2/volumes", body).await;
            assert_eq!(status, 201, "{body}");
            body["volume"]["id"].as_str().unwrap().to_owned()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints_are_named_by_literal_segments_and_verb() {
        assert_eq!(endpoint(&Method::POST, "/v2/vpcs"), "vpcs.create");
        assert_eq!(endpoint(&Method::GET, "/v2/vpcs"), "vpcs.list");
        assert_eq!(endpoint(&Method::GET, "/v2/vpcs/{id}"), "vpcs.get");
        assert_eq!(endpoint(&Method::DELETE, "/v2/vpcs/{id}"), "vpcs.delete");
        assert_eq!(endpoint(&Method::POST, "/v2/volumes/{id}/actions"), "volumes.actions.create");
        assert_eq!(endpoint(&Method::GET, "/v2/volumes/{id}/actions/{action_id}"), "volumes.actions.get");
        assert_eq!(endpoint(&Method::GET, "/v2/volumes/{id}/snapshots"), "volumes.snapshots.list");
        assert_eq!(endpoint(&Method::GET, "/v2/volumes/snapshots/{id}"), "volumes.snapshots.get");
        assert_eq!(endpoint(&Method::DELETE, "/v2/snapshots/{id}"), "snapshots.delete");
        assert_eq!(endpoint(&Method::GET, "/v2/nfs/snapshots/{id}"), "nfs.snapshots.get");
        assert_eq!(endpoint(&Method::POST, "/v2/tags/{tag}/resources"), "tags.resources.create");
        assert_eq!(
            endpoint(&Method::DELETE, "/v2/droplets/{id}/destroy_with_associated_resources/selective"),
            "droplets.destroy_with_associated_resources.selective.delete"
        );
        assert_eq!(endpoint(&Method::PUT, "/v2/vpcs/{id}"), "vpcs.update");
        assert_eq!(endpoint(&Method::GET, ""), "unmatched.list");
    }
}
