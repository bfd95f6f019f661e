//! Tags (`/v2/tags`): names on droplets, volumes and volume snapshots. Creating an existing tag
//! succeeds; the first spelling is the tag's name (and the one URLs must use); tagging with a tag
//! that does not exist is a 404. Tags named in a resource's create are made on the way.
use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Json, Response};
use axum::routing::{get, post};
use serde::Deserialize;
use serde_json::{Value, json};

use super::{API, Model, Page, Refusal, bad_request, no_content, not_found, paginate, parse, unprocessable};
use crate::sim::Sim;

/// `^[a-zA-Z0-9_:-]{1,255}$`
fn valid(name: &str) -> bool {
    (1..=255).contains(&name.len()) && name.chars().all(|c| c.is_ascii_alphanumeric() || "_:-".contains(c))
}

/// The create's 400 comes in the tag API's own shape too (`error`, `messages`, `root_causes`).
fn invalid_name(name: &str) -> Response {
    let message = format!("tag name {name:?} must be 1 to 255 letters, digits, '_', ':' or '-'");
    let body = json!({
        "id": "bad_request", "message": message, "request_id": ulid::Ulid::generate().to_string().to_lowercase(),
        "error": message, "messages": [message], "root_causes": [message],
    });
    (StatusCode::BAD_REQUEST, Json(body)).into_response()
}

impl Model {
    /// The tag's name in its first spelling, if it exists in any spelling.
    pub(super) fn tag_spelled(&self, name: &str) -> Option<String> {
        self.tags.iter().find(|t| t.eq_ignore_ascii_case(name)).cloned()
    }

    fn tag_make(&mut self, name: &str) -> String {
        self.tag_spelled(name).unwrap_or_else(|| {
            self.tags.push(name.to_owned());
            name.to_owned()
        })
    }

    /// The tags a create names (`null` is none): all checked first, then made as needed.
    pub(super) fn tag_all(&mut self, names: Option<Vec<String>>) -> Result<Vec<String>, Refusal> {
        let names = names.unwrap_or_default();
        if let Some(bad) = names.iter().find(|n| !valid(n)) {
            return Err(unprocessable(&format!("tag name {bad:?} is invalid")));
        }
        let mut made: Vec<String> = Vec::new();
        for name in names {
            let name = self.tag_make(&name);
            if !made.contains(&name) {
                made.push(name);
            }
        }
        Ok(made)
    }

    /// The tag list of a resource, by the tag API's type and id.
    fn tags_of(&mut self, kind: &str, id: &str) -> Option<&mut Vec<String>> {
        match kind {
            "droplet" => self.droplets.iter_mut().find(|d| d.id.to_string() == id).map(|d| &mut d.tags),
            "volume" => self.volumes.iter_mut().find(|v| v.id == id).map(|v| &mut v.tags),
            "volume_snapshot" => self.snapshots.iter_mut().find(|s| s.id == id).map(|s| &mut s.tags),
            _ => None,
        }
    }

    fn tag_json(&self, name: &str) -> Value {
        let has = |tags: &Vec<String>| tags.iter().any(|t| t == name);
        let droplets: Vec<String> =
            self.droplets.iter().filter(|d| has(&d.tags)).map(|d| format!("{API}/v2/droplets/{}", d.id)).collect();
        let volumes: Vec<String> =
            self.volumes.iter().filter(|v| has(&v.tags)).map(|v| format!("{API}/v2/volumes/{}", v.id)).collect();
        let snapshots: Vec<String> =
            self.snapshots.iter().filter(|s| has(&s.tags)).map(|s| format!("{API}/v2/snapshots/{}", s.id)).collect();
        // Model order stands in for tagging order.
        let last = |uris: &[String]| uris.last().cloned().unwrap_or_default();
        let group = |uris: &[String]| json!({ "count": uris.len(), "last_tagged_uri": last(uris) });
        let all = [droplets.clone(), volumes.clone(), snapshots.clone()].concat();
        json!({ "name": name, "resources": {
            "count": all.len(), "last_tagged_uri": last(&all),
            "droplets": group(&droplets), "images": group(&[]), "volumes": group(&volumes),
            "volume_snapshots": group(&snapshots), "databases": group(&[]),
        }})
    }

    fn tag_delete(&mut self, name: &str) {
        self.tags.retain(|t| t != name);
        let lists = self.droplets.iter_mut().map(|d| &mut d.tags);
        let lists = lists.chain(self.volumes.iter_mut().map(|v| &mut v.tags));
        for tags in lists.chain(self.snapshots.iter_mut().map(|s| &mut s.tags)) {
            tags.retain(|t| t != name);
        }
    }

    /// Tags or untags every named resource, or none when one is not found.
    fn tag_resources(&mut self, name: &str, resources: &[Resource], tag: bool) -> Result<(), Refusal> {
        if !self.tags.iter().any(|t| t == name) {
            return Err(not_found());
        }
        for r in resources {
            if !["droplet", "image", "volume", "volume_snapshot", "database"].contains(&r.resource_type.as_str()) {
                return Err(bad_request(&format!("resource_type {:?} is not supported", r.resource_type)));
            }
            self.tags_of(&r.resource_type, &r.id()).ok_or_else(not_found)?;
        }
        for r in resources {
            let tags = self.tags_of(&r.resource_type, &r.id()).expect("checked above");
            tags.retain(|t| t != name);
            if tag {
                tags.push(name.to_owned());
            }
        }
        Ok(())
    }
}

pub(super) fn routes(router: Router<Sim>) -> Router<Sim> {
    router
        .route("/v2/tags", get(list).post(create))
        .route("/v2/tags/{tag}", get(one).delete(remove))
        .route("/v2/tags/{tag}/resources", post(tag).delete(untag))
}

#[derive(Deserialize)]
struct TagCreate {
    name: Option<String>,
}

async fn create(State(sim): State<Sim>, body: Bytes) -> Response {
    let name = match parse::<TagCreate>(&body) {
        Ok(body) => body.name.unwrap_or_default(),
        Err(refusal) => return refusal.into_response(),
    };
    if !valid(&name) {
        return invalid_name(&name);
    }
    let tag = sim.with_digitalocean(|model| {
        let name = model.tag_make(&name);
        model.tag_json(&name)
    });
    (StatusCode::CREATED, Json(json!({ "tag": tag }))).into_response()
}

async fn list(State(sim): State<Sim>, page: Page) -> Response {
    let items = sim.with_digitalocean(|model| model.tags.iter().map(|t| model.tag_json(t)).collect());
    paginate("tags", "/v2/tags", items, &page)
}

async fn one(State(sim): State<Sim>, Path(name): Path<String>) -> Result<Response, Refusal> {
    let tag = sim.with_digitalocean(|model| model.tags.contains(&name).then(|| model.tag_json(&name)));
    Ok(Json(json!({ "tag": tag.ok_or_else(not_found)? })).into_response())
}

async fn remove(State(sim): State<Sim>, Path(name): Path<String>) -> Result<Response, Refusal> {
    sim.with_digitalocean(|model| model.tags.contains(&name).then(|| model.tag_delete(&name)).ok_or_else(not_found))?;
    Ok(no_content())
}

#[derive(Deserialize)]
struct Resource {
    /// A string by the spec; a droplet's number is taken too.
    resource_id: Value,
    resource_type: String,
}

impl Resource {
    fn id(&self) -> String {
        match &self.resource_id {
            Value::String(id) => id.clone(),
            other => other.to_string(),
        }
    }
}

#[derive(Deserialize)]
struct Resources {
    resources: Vec<Resource>,
}

async fn tag(State(sim): State<Sim>, Path(name): Path<String>, body: Bytes) -> Result<Response, Refusal> {
    let body: Resources = parse(&body)?;
    sim.with_digitalocean(|model| model.tag_resources(&name, &body.resources, true))?;
    Ok(no_content())
}

async fn untag(State(sim): State<Sim>, Path(name): Path<String>, body: Bytes) -> Result<Response, Refusal> {
    let body: Resources = parse(&body)?;
    sim.with_digitalocean(|model| model.tag_resources(&name, &body.resources, false))?;
    Ok(no_content())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::super::testing::Api;

    #[tokio::test]
    async fn tags_keep_their_first_spelling_and_follow_their_resources() {
        let api = Api::start().await;
        let (status, made) = api.post("/v2/tags", json!({ "name": "Env:prod" })).await;
        assert_eq!((status, made["tag"]["name"].as_str()), (201, Some("Env:prod")));
        let (status, again) = api.post("/v2/tags", json!({ "name": "env:prod" })).await;
        assert_eq!((status, again["tag"]["name"].as_str()), (201, Some("Env:prod")), "exists: first spelling");
        assert_eq!(api.post("/v2/tags", json!({ "name": "no spaces" })).await.0, 400);
        assert_eq!(api.post("/v2/tags", json!({ "name": "x".repeat(256) })).await.0, 400);
        assert_eq!(api.get("/v2/tags/env:prod").await.0, 404, "URLs use the first spelling");

        let droplet = api.droplet("tagged", "nyc3").await;
        let volume = api.volume("tagged", "nyc3", 1).await;
        let resources = json!({ "resources": [
            { "resource_id": droplet.to_string(), "resource_type": "droplet" },
            { "resource_id": volume, "resource_type": "volume" },
        ] });
        assert_eq!(api.post("/v2/tags/Env:prod/resources", resources.clone()).await.0, 204);
        assert_eq!(api.sim.calls("tags.resources.create"), 1);
        assert_eq!(api.get(&format!("/v2/droplets/{droplet}")).await.1["droplet"]["tags"], json!(["Env:prod"]));
        assert_eq!(api.get(&format!("/v2/volumes/{volume}")).await.1["volume"]["tags"], json!(["Env:prod"]));
        let (_, tag) = api.get("/v2/tags/Env:prod").await;
        assert_eq!(tag["tag"]["resources"]["count"], 2);
        assert_eq!(tag["tag"]["resources"]["droplets"]["count"], 1);
        assert_eq!(api.post("/v2/tags/missing/resources", resources.clone()).await.0, 404, "no such tag");
        let unknown = json!({ "resources": [{ "resource_id": "123", "resource_type": "droplet" }] });
        assert_eq!(api.post("/v2/tags/Env:prod/resources", unknown).await.0, 404, "no such droplet");

        let just_droplet = json!({ "resources": [{ "resource_id": droplet.to_string(), "resource_type": "droplet" }] });
        assert_eq!(api.delete_with("/v2/tags/Env:prod/resources", just_droplet).await.0, 204);
        assert_eq!(api.get(&format!("/v2/droplets/{droplet}")).await.1["droplet"]["tags"], json!([]));
        assert_eq!(api.delete("/v2/tags/Env:prod").await.0, 204);
        assert_eq!(api.get(&format!("/v2/volumes/{volume}")).await.1["volume"]["tags"], json!([]));
        assert_eq!(api.get("/v2/tags/Env:prod").await.0, 404);
        assert_eq!(api.delete("/v2/tags/Env:prod").await.0, 404);
        assert_eq!(api.sim.calls("tags.delete"), 2);
    }
}
