//! EFS (`/2015-02-01/…`, REST-JSON): the routes, the error and paging helpers, and file systems
//! (mount targets are in `efs_mount_targets.rs`). A file system is made `creating` (201) and
//! becomes `available` after the action time; its `CreationToken` is held until it is gone, and a
//! create with a held token answers 409 `FileSystemAlreadyExists` with the holder's
//! `FileSystemId`, whoever made it. Delete (204) is refused with 409 `FileSystemInUse` while any
//! mount target (even a `deleting` one) exists, else `deleting`, then gone (404
//! `FileSystemNotFound`). TagResource adds or replaces a file system's tags. Timestamps are JSON
//! numbers (epoch seconds).
pub(super) mod mount_targets;

use std::collections::HashMap;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Extension, Path, Query, State};
use axum::http::{Method, StatusCode};
use axum::response::{IntoResponse, Json, Response};
use axum::routing::{delete, get, post};
use serde::Deserialize;
use serde_json::{Value, json};

use super::{ACCOUNT, Caller, Change, Model, Refusal, Service, epoch_now, new_id, request_id};
use crate::sim::Sim;
use mount_targets::{mount_create, mount_describe, mount_groups, mount_groups_modify, mount_remove};

#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub(super) struct FileSystemRecord {
    pub(super) id: String,
    pub(super) region: String,
    pub(super) token: String,
    pub(super) encrypted: bool,
    pub(super) kms_key: Option<String>,
    pub(super) performance: String,
    pub(super) throughput: String,
    pub(super) provisioned: Option<f64>,
    pub(super) tags: Vec<(String, String)>,
    /// `creating`, `available`, `deleting`, or `error` (forced by `Sim::aws_fail_efs`).
    #[serde(deserialize_with = "crate::sim::word")]
    pub(super) state: crate::sim::Word,
    pub(super) created: f64,
}

pub(super) fn refuse(status: u16, code: &'static str, message: impl Into<String>) -> Refusal {
    Refusal::new(Service::Efs, status, code, message)
}

pub(super) fn bad_request(message: impl Into<String>) -> Refusal {
    refuse(400, "BadRequest", message)
}

pub(super) fn file_system_not_found(id: &str) -> Refusal {
    refuse(404, "FileSystemNotFound", format!("File system '{id}' does not exist."))
}

impl FileSystemRecord {
    fn json(&self, mount_targets: usize) -> Value {
        let mut body = json!({
            "OwnerId": ACCOUNT, "CreationToken": self.token, "FileSystemId": self.id,
            "FileSystemArn": format!("arn:aws:elasticfilesystem:{}:{ACCOUNT}:file-system/{}", self.region, self.id),
            "CreationTime": self.created, "LifeCycleState": self.state, "NumberOfMountTargets": mount_targets,
            "SizeInBytes": { "Value": 6144, "Timestamp": self.created, "ValueInIA": 0, "ValueInStandard": 6144, "ValueInArchive": 0 },
            "PerformanceMode": self.performance, "Encrypted": self.encrypted, "ThroughputMode": self.throughput,
            "Tags": self.tags.iter().map(|(k, v)| json!({ "Key": k, "Value": v })).collect::<Vec<_>>(),
            "FileSystemProtection": { "ReplicationOverwriteProtection": "ENABLED" },
        });
        let map = body.as_object_mut().expect("an object");
        if let Some((_, name)) = self.tags.iter().find(|(k, _)| k == "Name") {
            map.insert("Name".into(), json!(name));
        }
        if let Some(key) = &self.kms_key {
            map.insert("KmsKeyId".into(), json!(key));
        }
        if let Some(mibps) = self.provisioned {
            map.insert("ProvisionedThroughputInMibps".into(), json!(mibps));
        }
        body
    }
}

/// The operation a request under `/2015-02-01/` names, for counting and faults.
pub(super) fn operation(method: &Method, path: &str) -> String {
    let segments: Vec<&str> = path.trim_start_matches("/2015-02-01/").split('/').filter(|s| !s.is_empty()).collect();
    let name = match (method.as_str(), segments.as_slice()) {
        ("POST", ["file-systems"]) => "CreateFileSystem",
        ("GET", ["file-systems"]) => "DescribeFileSystems",
        ("DELETE", ["file-systems", _]) => "DeleteFileSystem",
        ("POST", ["mount-targets"]) => "CreateMountTarget",
        ("GET", ["mount-targets"]) => "DescribeMountTargets",
        ("DELETE", ["mount-targets", _]) => "DeleteMountTarget",
        ("GET", ["mount-targets", _, "security-groups"]) => "DescribeMountTargetSecurityGroups",
        ("PUT", ["mount-targets", _, "security-groups"]) => "ModifyMountTargetSecurityGroups",
        ("POST", ["resource-tags", _]) => "TagResource",
        _ => "Unknown",
    };
    name.to_owned()
}

pub(super) fn routes(router: Router<Sim>) -> Router<Sim> {
    router
        .route("/2015-02-01/file-systems", post(create).get(describe))
        .route("/2015-02-01/file-systems/{id}", delete(remove))
        .route("/2015-02-01/mount-targets", post(mount_create).get(mount_describe))
        .route("/2015-02-01/mount-targets/{id}", delete(mount_remove))
        .route("/2015-02-01/mount-targets/{id}/security-groups", get(mount_groups).put(mount_groups_modify))
        .route("/2015-02-01/resource-tags/{id}", post(tag))
        .route("/2015-02-01/{*rest}", axum::routing::any(unknown))
}

async fn unknown() -> Refusal {
    bad_request("The requested operation is not supported by this endpoint.")
}

pub(super) fn parse<T: serde::de::DeserializeOwned>(body: &[u8]) -> Result<T, Refusal> {
    serde_json::from_slice(body).map_err(|e| bad_request(format!("The request body could not be read: {e}")))
}

pub(super) fn ok(status: StatusCode, body: Value) -> Response {
    let mut response = (status, Json(body)).into_response();
    if let Ok(value) = request_id().parse() {
        response.headers_mut().insert("x-amzn-requestid", value);
    }
    response
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct Tag {
    key: String,
    value: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct Tagging {
    #[serde(default)]
    tags: Vec<Tag>,
}

/// TagResource on a file system (200, empty): a key given again takes the new value.
async fn tag(
    State(sim): State<Sim>,
    Extension(caller): Extension<Caller>,
    Path(id): Path<String>,
    body: Bytes,
) -> Result<Response, Refusal> {
    let body: Tagging = parse(&body)?;
    if body.tags.is_empty() {
        return Err(bad_request("Tags must not be empty."));
    }
    if let Some(tag) = body.tags.iter().find(|t| t.key.is_empty() || t.key.len() > 128 || t.key.starts_with("aws:")) {
        return Err(bad_request(format!("Invalid tag key: '{}'", tag.key)));
    }
    sim.with_aws(|model| {
        let fs = model
            .file_systems
            .iter_mut()
            .find(|f| f.region == caller.region && f.id == id)
            .ok_or_else(|| file_system_not_found(&id))?;
        for tag in body.tags {
            match fs.tags.iter_mut().find(|(k, _)| *k == tag.key) {
                Some(existing) => existing.1 = tag.value,
                None => fs.tags.push((tag.key, tag.value)),
            }
        }
        Ok(ok(StatusCode::OK, json!({})))
    })
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct FileSystemCreate {
    creation_token: Option<String>,
    #[serde(default)]
    encrypted: bool,
    kms_key_id: Option<String>,
    performance_mode: Option<String>,
    throughput_mode: Option<String>,
    provisioned_throughput_in_mibps: Option<f64>,
    availability_zone_name: Option<String>,
    #[serde(default)]
    tags: Vec<Tag>,
}

async fn create(
    State(sim): State<Sim>,
    Extension(caller): Extension<Caller>,
    body: Bytes,
) -> Result<Response, Refusal> {
    let body: FileSystemCreate = parse(&body)?;
    let token = body.creation_token.clone().unwrap_or_default();
    sim.count_name("efs.CreateFileSystem", &token);
    if token.is_empty() || token.len() > 64 {
        return Err(bad_request("CreationToken must be 1 to 64 characters long."));
    }
    let performance = body.performance_mode.clone().unwrap_or_else(|| "generalPurpose".to_owned());
    let throughput = body.throughput_mode.clone().unwrap_or_else(|| "bursting".to_owned());
    if !["generalPurpose", "maxIO"].contains(&performance.as_str()) {
        return Err(bad_request(format!("Invalid PerformanceMode: {performance}")));
    }
    if !["bursting", "provisioned", "elastic"].contains(&throughput.as_str()) {
        return Err(bad_request(format!("Invalid ThroughputMode: {throughput}")));
    }
    if throughput == "provisioned" && body.provisioned_throughput_in_mibps.is_none_or(|m| m < 1.0) {
        return Err(bad_request(
            "ProvisionedThroughputInMibps of at least 1.0 is required for provisioned throughput.",
        ));
    }
    if throughput != "provisioned" && body.provisioned_throughput_in_mibps.is_some() {
        return Err(bad_request("ProvisionedThroughputInMibps is only valid with provisioned throughput."));
    }
    if performance == "maxIO" && (throughput == "elastic" || body.availability_zone_name.is_some()) {
        return Err(bad_request("maxIO performance mode is not supported with elastic throughput or One Zone."));
    }
    if body.kms_key_id.is_some() && !body.encrypted {
        return Err(bad_request("KmsKeyId requires Encrypted to be true."));
    }
    if body.availability_zone_name.is_some() {
        return Err(refuse(400, "UnsupportedAvailabilityZone", "The sim does not make One Zone file systems."));
    }
    if let Some(tag) = body.tags.iter().find(|t| t.key.is_empty() || t.key.len() > 128 || t.key.starts_with("aws:")) {
        return Err(bad_request(format!("Invalid tag key: '{}'", tag.key)));
    }
    let region = caller.region;
    let created = sim.with_aws(|model| {
        if let Some(holder) = model.file_systems.iter().find(|f| f.region == region && f.token == token) {
            let message = format!("File system '{}' already exists with creation token '{token}'", holder.id);
            return Err(refuse(409, "FileSystemAlreadyExists", message).with("FileSystemId", holder.id.clone()));
        }
        let kms_key = body.encrypted.then(|| {
            body.kms_key_id.clone().unwrap_or_else(|| format!("arn:aws:kms:{region}:{ACCOUNT}:key/{}", request_id()))
        });
        let record = FileSystemRecord {
            id: new_id("fs"),
            region: region.clone(),
            token: token.clone(),
            encrypted: body.encrypted,
            kms_key,
            performance,
            throughput,
            provisioned: body.provisioned_throughput_in_mibps,
            tags: body.tags.into_iter().map(|t| (t.key, t.value)).collect(),
            state: "creating",
            created: epoch_now(),
        };
        let json = record.json(0);
        model.later(Change::EfsAvailable(record.id.clone()));
        model.file_systems.push(record);
        Ok(json)
    })?;
    sim.count_name("efs.made", &token);
    Ok(ok(StatusCode::CREATED, created))
}

/// `Marker` and `MaxItems` (or the sim's page limit) over `items`: the page, and the answer's
/// marker members. EFS pages at 100 whatever more is asked.
pub(super) fn page(
    items: Vec<Value>,
    query: &HashMap<String, String>,
    key: &str,
    limit: Option<usize>,
) -> Result<Value, Refusal> {
    let start: usize = match query.get("Marker") {
        Some(m) => m.parse().map_err(|_| bad_request("Invalid Marker"))?,
        None => 0,
    };
    let max: usize = match query.get("MaxItems") {
        Some(m) => m.parse().ok().filter(|n| *n >= 1).ok_or_else(|| bad_request("MaxItems must be at least 1"))?,
        None => 100,
    }
    .min(100)
    .min(limit.unwrap_or(usize::MAX));
    let total = items.len();
    let chunk: Vec<Value> = items.into_iter().skip(start).take(max).collect();
    let mut body = json!({ key: chunk });
    let map = body.as_object_mut().expect("an object");
    if let Some(marker) = query.get("Marker") {
        map.insert("Marker".into(), json!(marker));
    }
    if start.saturating_add(max) < total {
        map.insert("NextMarker".into(), json!((start + max).to_string()));
    }
    Ok(body)
}

async fn describe(
    State(sim): State<Sim>,
    Extension(caller): Extension<Caller>,
    Query(query): Query<HashMap<String, String>>,
) -> Result<Response, Refusal> {
    let by_id = query.get("FileSystemId");
    let by_token = query.get("CreationToken");
    if by_id.is_some() && by_token.is_some() {
        return Err(bad_request("Specify either FileSystemId or CreationToken, not both."));
    }
    let items = sim.with_aws(|model| {
        let count = |id: &str| model.mount_targets.iter().filter(|m| m.file_system == id).count();
        let found: Vec<Value> = model
            .file_systems
            .iter()
            .filter(|f| f.region == caller.region)
            .filter(|f| by_id.is_none_or(|id| &f.id == id) && by_token.is_none_or(|t| &f.token == t))
            .map(|f| f.json(count(&f.id)))
            .collect();
        match (by_id, by_token) {
            (Some(id), _) if found.is_empty() => Err(file_system_not_found(id)),
            (_, Some(token)) if found.is_empty() && model.efs_unknown_token_not_found => {
                Err(refuse(404, "FileSystemNotFound", format!("No file system has creation token '{token}'.")))
            }
            _ => Ok(found),
        }
    })?;
    Ok(ok(StatusCode::OK, page(items, &query, "FileSystems", sim.config().page_limit)?))
}

async fn remove(
    State(sim): State<Sim>,
    Extension(caller): Extension<Caller>,
    Path(id): Path<String>,
) -> Result<Response, Refusal> {
    sim.with_aws(|model| {
        if !model.file_systems.iter().any(|f| f.region == caller.region && f.id == id) {
            return Err(file_system_not_found(&id));
        }
        if model.mount_targets.iter().any(|m| m.file_system == id) {
            return Err(refuse(409, "FileSystemInUse", format!("File system '{id}' has mount targets.")));
        }
        let record = model.file_systems.iter_mut().find(|f| f.id == id).expect("found above");
        if record.state != "deleting" {
            record.state = "deleting";
            model.pending.retain(|(_, c)| !matches!(c, Change::EfsAvailable(f) if *f == id));
            model.later(Change::EfsGone(id.clone()));
        }
        Ok(StatusCode::NO_CONTENT.into_response())
    })
}

impl Model {
    pub(super) fn efs_available(&mut self, id: &str) {
        if let Some(fs) = self.file_systems.iter_mut().find(|f| f.id == id && f.state == "creating") {
            fs.state = "available";
        }
    }
}

impl Sim {
    /// Plants an `available` EFS file system the service did not make, holding `creation_token`,
    /// with `tags` (none of ours unless given), in `region`; returns its id.
    pub fn aws_plant_foreign_efs(&self, region: &str, creation_token: &str, tags: &[(&str, &str)]) -> String {
        let record = FileSystemRecord {
            id: new_id("fs"),
            region: region.to_owned(),
            token: creation_token.to_owned(),
            encrypted: false,
            kms_key: None,
            performance: "generalPurpose".to_owned(),
            throughput: "bursting".to_owned(),
            provisioned: None,
            tags: tags.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect(),
            state: "available",
            created: epoch_now(),
        };
        let id = record.id.clone();
        self.with_aws(|model| model.file_systems.push(record));
        id
    }

    /// Puts an EFS file system in the terminal `error` state (as a create that failed), its pending
    /// change dropped; false if there is no such file system.
    pub fn aws_fail_efs(&self, id: &str) -> bool {
        self.with_aws(|model| {
            model.pending.retain(|(_, c)| !matches!(c, Change::EfsAvailable(f) if f == id));
            model.file_systems.iter_mut().find(|f| f.id == id).map(|f| f.state = "error").is_some()
        })
    }

    /// How DescribeFileSystems answers a `CreationToken` no file system holds: an empty list (the
    /// default) or, with `true`, 404 `FileSystemNotFound` (real EFS's answer is unconfirmed).
    pub fn aws_efs_unknown_token_not_found(&self, not_found: bool) {
        self.with_aws(|model| model.efs_unknown_token_not_found = not_found);
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::super::testing::{Aws, REGION};
    use crate::sim::Fault;

    const CREATE: &str = "/2015-02-01/file-systems";

    fn captured() -> serde_json::Value {
        json!({
            "CreationToken": "bc-tenant1", "Encrypted": true, "PerformanceMode": "generalPurpose",
            "Tags": [{ "Key": "Name", "Value": "bc-tenant1" }], "ThroughputMode": "elastic",
        })
    }

    #[tokio::test]
    async fn a_file_system_is_created_then_available_with_numeric_timestamps() {
        let aws = Aws::start().await;
        let (status, _, body) = aws.efs_post(CREATE, captured()).await;
        assert_eq!(status, 201, "{body}");
        assert_eq!(body["LifeCycleState"], "creating");
        assert_eq!(body["Name"], "bc-tenant1");
        assert_eq!(body["Encrypted"], true);
        assert_eq!(body["ThroughputMode"], "elastic");
        assert_eq!(body["NumberOfMountTargets"], 0);
        assert!(body["CreationTime"].is_f64() && body["SizeInBytes"]["Timestamp"].is_number(), "{body}");
        let id = body["FileSystemId"].as_str().unwrap().to_owned();
        assert!(id.starts_with("fs-") && id.len() == 20, "{id}");
        aws.later().await;
        let (status, _, body) = aws.efs_get(&format!("{CREATE}?FileSystemId={id}")).await;
        assert_eq!(status, 200);
        assert_eq!(body["FileSystems"][0]["LifeCycleState"], "available");
        let (_, _, body) = aws.efs_get(&format!("{CREATE}?CreationToken=bc-tenant1")).await;
        assert_eq!(body["FileSystems"].as_array().unwrap().len(), 1);
        assert_eq!(aws.sim.calls("efs.CreateFileSystem"), 1);
        assert_eq!(aws.sim.name_calls("efs.made", "bc-tenant1"), 1);
    }

    #[tokio::test]
    async fn defaults_are_unencrypted_general_purpose_bursting() {
        let aws = Aws::start().await;
        let (_, _, body) = aws.efs_post(CREATE, json!({ "CreationToken": "t" })).await;
        assert_eq!(
            (body["Encrypted"].as_bool(), body["PerformanceMode"].as_str()),
            (Some(false), Some("generalPurpose"))
        );
        assert_eq!(body["ThroughputMode"], "bursting");
        assert!(body.get("Name").is_none());
        let (status, headers, body) =
            aws.efs_post(CREATE, json!({ "CreationToken": "u", "ThroughputMode": "provisioned" })).await;
        assert_eq!(status, 400);
        assert_eq!(headers["x-amzn-errortype"], "BadRequest");
        assert_eq!(body["ErrorCode"], "BadRequest");
    }

    #[tokio::test]
    async fn a_held_creation_token_answers_file_system_already_exists_with_the_holders_id() {
        let aws = Aws::start().await;
        let (_, _, first) = aws.efs_post(CREATE, captured()).await;
        let (status, headers, body) = aws.efs_post(CREATE, json!({ "CreationToken": "bc-tenant1" })).await;
        assert_eq!(status, 409);
        assert_eq!(headers["x-amzn-errortype"], "FileSystemAlreadyExists");
        assert_eq!(body["ErrorCode"], "FileSystemAlreadyExists");
        assert_eq!(body["FileSystemId"], first["FileSystemId"]);
        // Still held while deleting; free once gone.
        aws.later().await;
        let id = first["FileSystemId"].as_str().unwrap();
        assert_eq!(aws.efs_delete(&format!("{CREATE}/{id}")).await.0, 204);
        assert_eq!(aws.efs_post(CREATE, captured()).await.0, 409);
        aws.later().await;
        assert_eq!(aws.efs_post(CREATE, captured()).await.0, 201);
    }

    #[tokio::test]
    async fn a_planted_foreign_file_system_holds_its_token_and_is_described_without_our_tags() {
        let aws = Aws::start().await;
        let foreign = aws.sim.aws_plant_foreign_efs(REGION, "bc-x", &[("Name", "bc-x")]);
        let (status, _, body) = aws.efs_post(CREATE, json!({ "CreationToken": "bc-x" })).await;
        assert_eq!(status, 409);
        assert_eq!(body["FileSystemId"], foreign.as_str());
        let (_, _, body) = aws.efs_get(&format!("{CREATE}?CreationToken=bc-x")).await;
        assert_eq!(body["FileSystems"][0]["Tags"], json!([{ "Key": "Name", "Value": "bc-x" }]));
    }

    #[tokio::test]
    async fn describe_answers_not_found_for_an_unknown_id_and_either_shape_for_an_unknown_token() {
        let aws = Aws::start().await;
        let (status, headers, body) = aws.efs_get(&format!("{CREATE}?FileSystemId=fs-0123456789abcdef0")).await;
        assert_eq!((status, body["ErrorCode"].as_str()), (404, Some("FileSystemNotFound")));
        assert_eq!(headers["x-amzn-errortype"], "FileSystemNotFound");
        let (status, _, body) = aws.efs_get(&format!("{CREATE}?CreationToken=nobody")).await;
        assert_eq!((status, body["FileSystems"].as_array().map(Vec::len)), (200, Some(0)));
        aws.sim.aws_efs_unknown_token_not_found(true);
        let (status, _, body) = aws.efs_get(&format!("{CREATE}?CreationToken=nobody")).await;
        assert_eq!((status, body["ErrorCode"].as_str()), (404, Some("FileSystemNotFound")));
        let (status, _, _) = aws.efs_get(&format!("{CREATE}?CreationToken=a&FileSystemId=fs-1")).await;
        assert_eq!(status, 400);
    }

    #[tokio::test]
    async fn describe_pages_with_marker_and_max_items() {
        let aws = Aws::start().await;
        for token in ["a", "b", "c"] {
            aws.efs_post(CREATE, json!({ "CreationToken": token })).await;
        }
        let (_, _, body) = aws.efs_get(&format!("{CREATE}?MaxItems=2")).await;
        assert_eq!(body["FileSystems"].as_array().unwrap().len(), 2);
        let next = body["NextMarker"].as_str().unwrap().to_owned();
        let (_, _, body) = aws.efs_get(&format!("{CREATE}?MaxItems=2&Marker={next}")).await;
        assert_eq!(body["FileSystems"].as_array().unwrap().len(), 1);
        assert_eq!(body["Marker"], next.as_str());
        assert!(body.get("NextMarker").is_none());
    }

    #[tokio::test]
    async fn describe_pages_at_100_whatever_more_is_asked() {
        let aws = Aws::start().await;
        for i in 0..150 {
            aws.sim.aws_plant_foreign_efs(REGION, &format!("token-{i}"), &[]);
        }
        let (_, _, body) = aws.efs_get(&format!("{CREATE}?MaxItems=1000")).await;
        assert_eq!(body["FileSystems"].as_array().unwrap().len(), 100);
        assert_eq!(body["NextMarker"], "100");
    }

    #[tokio::test]
    async fn a_create_whose_answer_was_lost_is_found_again_by_its_token() {
        let aws = Aws::start().await;
        aws.sim.inject("efs.CreateFileSystem", Fault::Drop, 1);
        let lost = aws
            .http
            .post(format!("{}{CREATE}", aws.url))
            .header("authorization", super::super::testing::authorization("elasticfilesystem", REGION))
            .body(captured().to_string())
            .timeout(std::time::Duration::from_millis(300))
            .send()
            .await;
        assert!(lost.is_err(), "the answer should have been dropped");
        let (status, _, body) = aws.efs_post(CREATE, captured()).await;
        assert_eq!((status, body["ErrorCode"].as_str()), (409, Some("FileSystemAlreadyExists")));
        let (_, _, found) = aws.efs_get(&format!("{CREATE}?CreationToken=bc-tenant1")).await;
        assert_eq!(found["FileSystems"][0]["FileSystemId"], body["FileSystemId"]);
        assert_eq!(aws.sim.name_calls("efs.made", "bc-tenant1"), 1);
    }

    #[tokio::test]
    async fn tag_resource_adds_and_replaces_tags() {
        let aws = Aws::start().await;
        let id = aws.efs("bc-t").await;
        let tags = json!({ "Tags": [{ "Key": "Name", "Value": "bc-t" }, { "Key": "bc:managed-by", "Value": "svc" }] });
        let (status, _, _) = aws.efs_post(&format!("/2015-02-01/resource-tags/{id}"), tags).await;
        assert_eq!(status, 200);
        let again = json!({ "Tags": [{ "Key": "Name", "Value": "bc-u" }] });
        aws.efs_post(&format!("/2015-02-01/resource-tags/{id}"), again).await;
        let (_, _, body) = aws.efs_get(&format!("{CREATE}?FileSystemId={id}")).await;
        let fs = &body["FileSystems"][0];
        assert_eq!(fs["Name"], "bc-u");
        assert_eq!(fs["Tags"].as_array().unwrap().len(), 2);
        assert_eq!(aws.sim.calls("efs.TagResource"), 2);
        let bad = json!({ "Tags": [{ "Key": "aws:x", "Value": "y" }] });
        let (status, _, body) = aws.efs_post(&format!("/2015-02-01/resource-tags/{id}"), bad).await;
        assert_eq!((status, body["ErrorCode"].as_str()), (400, Some("BadRequest")));
    }

    #[tokio::test]
    async fn a_failed_file_system_stays_in_error() {
        let aws = Aws::start().await;
        let (_, _, body) = aws.efs_post(CREATE, captured()).await;
        let id = body["FileSystemId"].as_str().unwrap().to_owned();
        assert!(aws.sim.aws_fail_efs(&id));
        aws.later().await;
        let (_, _, body) = aws.efs_get(&format!("{CREATE}?FileSystemId={id}")).await;
        assert_eq!(body["FileSystems"][0]["LifeCycleState"], "error");
    }

    #[tokio::test]
    async fn a_throttling_fault_on_create_does_nothing_and_is_counted() {
        let aws = Aws::start().await;
        aws.sim.inject("efs.CreateFileSystem", Fault::Status { status: 400 }, 1);
        let (status, headers, _) = aws.efs_post(CREATE, captured()).await;
        assert_eq!(status, 400);
        assert_eq!(headers["x-amzn-errortype"], "ThrottlingException");
        assert_eq!(aws.efs_post(CREATE, captured()).await.0, 201);
        assert_eq!(aws.sim.calls("efs.CreateFileSystem"), 2);
        assert_eq!(aws.sim.name_calls("efs.made", "bc-tenant1"), 1);
    }
}
