//! The simulated AWS account: one in-memory model (every region; a request's region is its SigV4
//! credential scope's) behind three thin faces on the sim's one listener, dispatched as the real
//! SDKs reach an overridden endpoint:
//!
//! - path prefix `/2015-02-01/` → EFS (REST-JSON; errors carry `x-amzn-ErrorType` and
//!   `{"ErrorCode", "Message"}`): file systems in `efs.rs`, mount targets in
//!   `efs/mount_targets.rs`;
//! - `POST /` with `X-Amz-Target: AWSSimbaAPIService_v20180301.<Op>` → FSx for Lustre (JSON 1.1;
//!   errors `{"__type", "Message"}`), in `fsx.rs`;
//! - `POST /` with a form body `Action=<Op>&Version=2016-11-15` → EC2 (query protocol, XML answers,
//!   errors `<Response><Errors><Error>…</Error></Errors><RequestID/></Response>`): VPCs and subnets
//!   in `ec2.rs`, security groups in `ec2_groups.rs`, instances in `ec2_instances.rs`.
//!
//! Every AWS call first passes `face`: it requires a well-formed
//! `Authorization: AWS4-HMAC-SHA256 Credential=<akid>/<date>/<region>/<service>/aws4_request,
//! SignedHeaders=…, Signature=…` whose service is the protocol's signing name (`ec2`,
//! `elasticfilesystem`, `fsx`) and whose region is in `REGIONS`; the signature is not verified.
//! EFS and FSx answer a missing header 403 `MissingAuthenticationTokenException`, a malformed one
//! 400 `IncompleteSignatureException`, a wrong service or region 403 `InvalidSignatureException`;
//! EC2 answers all three 401 `AuthFailure`. Refused calls are not counted. Then `face` counts the
//! call as `<service>.<Op>` (e.g. `ec2.CreateSecurityGroup`, `efs.CreateMountTarget`,
//! `fsx.CreateFileSystem`; `efs.Unknown` for an unrouted EFS path), takes a fault of that name
//! (`Sim::inject`), and settles the model. A `Fault::Status { status }` answers, doing nothing:
//!
//! | asked | EC2 | EFS | FSx |
//! |---|---|---|---|
//! | 400, 429, 503 | 503 `RequestLimitExceeded` | that status, `ThrottlingException` | 400 `ThrottlingException` |
//! | 504 | 503 `Unavailable` | 504 `DependencyTimeout` | 500 `InternalServerError` |
//! | other | 500 `InternalError` | 500 `InternalServerError` | 500 `InternalServerError` |
//!
//! (FSx answers only 400 or 500, as its model has no other statuses.) `Fault::Drop` acts and then
//! never answers; `Fault::Stall` neither acts nor answers, as on the DigitalOcean face.
//!
//! Time: asynchronous work (an EFS file system or mount target becoming `available` or gone, an
//! FSx file system `AVAILABLE` or gone, an instance `running` or `terminated`) is a pending change
//! with its due time, `SimConfig::action_time` after the start; `Model::settle` applies what is
//! due at the start of every request. This face never touches the DigitalOcean model.
//!
//! Shortcuts, each refused rather than faked: no default VPC (so `GroupName.N` lookups and
//! RunInstances without `SubnetId` fail as they do in an account without one); one instance per
//! RunInstances; no One Zone EFS; FSx serves `LUSTRE` only; EC2 filters take exact values (no `*`
//! wildcards). Terminated instances stay described for the sim's lifetime; FSx remembers a
//! `ClientRequestToken` while its file system exists. There is no per-credential rate limit: use
//! faults for throttling.
mod ec2;
mod ec2_groups;
mod ec2_instances;
mod efs;
mod fsx;
mod xml;

use std::time::Duration;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use serde_json::{Value, json};

use super::{Fault, Sim, SimConfig};

/// The simulated account's id, the owner of everything made through the face.
pub const ACCOUNT: &str = "123456789012";
/// The regions a credential scope may name (the commercial ones, GovCloud and China).
pub const REGIONS: &[&str] = &[
    "us-east-1",
    "us-east-2",
    "us-west-1",
    "us-west-2",
    "af-south-1",
    "ap-east-1",
    "ap-east-2",
    "ap-south-1",
    "ap-south-2",
    "ap-southeast-1",
    "ap-southeast-2",
    "ap-southeast-3",
    "ap-southeast-4",
    "ap-southeast-5",
    "ap-southeast-7",
    "ap-northeast-1",
    "ap-northeast-2",
    "ap-northeast-3",
    "ca-central-1",
    "ca-west-1",
    "eu-central-1",
    "eu-central-2",
    "eu-west-1",
    "eu-west-2",
    "eu-west-3",
    "eu-north-1",
    "eu-south-1",
    "eu-south-2",
    "il-central-1",
    "me-south-1",
    "me-central-1",
    "mx-central-1",
    "sa-east-1",
    "us-gov-west-1",
    "us-gov-east-1",
    "cn-north-1",
    "cn-northwest-1",
];
const STALL: Duration = Duration::from_secs(120);
const BODY_LIMIT: usize = 1 << 20;

/// The three protocols, by their SigV4 signing names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Service {
    Ec2,
    Efs,
    Fsx,
}

impl Service {
    fn signing_name(self) -> &'static str {
        match self {
            Service::Ec2 => "ec2",
            Service::Efs => "elasticfilesystem",
            Service::Fsx => "fsx",
        }
    }

    fn prefix(self) -> &'static str {
        match self {
            Service::Ec2 => "ec2",
            Service::Efs => "efs",
            Service::Fsx => "fsx",
        }
    }
}

/// The caller, as the face found it: the region of its credential scope.
#[derive(Clone, Debug)]
pub(super) struct Caller {
    pub(super) region: String,
}

/// A change that happens when it is due.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub(super) enum Change {
    EfsAvailable(String),
    EfsGone(String),
    MountTargetAvailable(String),
    MountTargetGone(String),
    FsxAvailable(String),
    FsxGone(String),
    InstanceRunning(String),
    InstanceTerminated(String),
    /// The change fails (`Fault::Fail`), with the provider's words.
    Fails(Box<Change>, String),
}

/// Which of a security group's rule lists an EC2 call reads or changes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flow {
    Ingress,
    Egress,
}

/// The account's state in every region.
#[derive(serde::Serialize, serde::Deserialize)]
pub struct Model {
    action_time: Duration,
    #[serde(skip, default = "crate::clock::Clock::system")]
    clock: crate::clock::Clock,
    /// Changes to make, each with its due time in ms on `clock`.
    pending: Vec<(i64, Change)>,
    /// Numbers private addresses handed out in subnets.
    serial: u32,
    vpcs: Vec<ec2::VpcRecord>,
    subnets: Vec<ec2::SubnetRecord>,
    groups: Vec<ec2_groups::GroupRecord>,
    instances: Vec<ec2_instances::InstanceRecord>,
    file_systems: Vec<efs::FileSystemRecord>,
    mount_targets: Vec<efs::mount_targets::MountTargetRecord>,
    lustres: Vec<fsx::LustreRecord>,
    /// How EFS answers a describe by a token no file system holds (see
    /// `Sim::aws_efs_unknown_token_not_found`).
    efs_unknown_token_not_found: bool,
    /// `SimConfig::page_limit`: the most items a page of a list holds.
    page_limit: Option<usize>,
}

impl Model {
    /// A kept model, on this run's clock and timing.
    pub fn configured(self, config: &SimConfig) -> Model {
        Model { action_time: config.action_time, clock: config.clock.clone(), page_limit: config.page_limit, ..self }
    }

    pub fn new(config: &SimConfig) -> Model {
        Model {
            action_time: config.action_time,
            clock: config.clock.clone(),
            pending: Vec::new(),
            serial: 0,
            vpcs: Vec::new(),
            subnets: Vec::new(),
            groups: Vec::new(),
            instances: Vec::new(),
            file_systems: Vec::new(),
            mount_targets: Vec::new(),
            lustres: Vec::new(),
            efs_unknown_token_not_found: false,
            page_limit: config.page_limit,
        }
    }

    /// Schedules `change`, `action_time` from now.
    pub(super) fn later(&mut self, change: Change) {
        let change = match crate::sim::failing() {
            Some(message) => Change::Fails(Box::new(change), message),
            None => change,
        };
        let due = self.due();
        self.pending.push((due, change));
    }

    /// When what starts now is done: `action_time` on the clock.
    pub(super) fn due(&self) -> i64 {
        self.clock.now_ms() + self.action_time.as_millis() as i64
    }

    /// Applies every change due by now, in due order.
    pub fn settle(&mut self) {
        let now = self.clock.now_ms();
        let (mut due, rest): (Vec<_>, Vec<_>) =
            std::mem::take(&mut self.pending).into_iter().partition(|(at, _)| *at <= now);
        self.pending = rest;
        due.sort_by_key(|(at, _)| *at);
        for (_, change) in due {
            self.apply(change);
        }
    }

    fn apply(&mut self, change: Change) {
        match change {
            Change::EfsAvailable(id) => self.efs_available(&id),
            Change::EfsGone(id) => self.file_systems.retain(|f| f.id != id),
            Change::MountTargetAvailable(id) => self.mount_target_available(&id),
            Change::MountTargetGone(id) => self.mount_targets.retain(|m| m.id != id),
            Change::FsxAvailable(id) => self.lustre_available(&id),
            Change::FsxGone(id) => self.lustres.retain(|l| l.id != id),
            Change::InstanceRunning(id) => self.instance_state(&id, "pending", "running"),
            Change::InstanceTerminated(id) => self.instance_state(&id, "shutting-down", "terminated"),
            Change::Fails(change, message) => self.fail(*change, &message),
        }
    }

    /// What a failed change leaves: a file system or mount target being made in error (FSx's
    /// with the message), an instance being launched terminated; a delete still completes.
    fn fail(&mut self, change: Change, message: &str) {
        match change {
            Change::EfsAvailable(id) => self
                .file_systems
                .iter_mut()
                .filter(|f| f.id == id && f.state == "creating")
                .for_each(|f| f.state = "error"),
            Change::MountTargetAvailable(id) => self
                .mount_targets
                .iter_mut()
                .filter(|m| m.id == id && m.state == "creating")
                .for_each(|m| m.state = "error"),
            Change::FsxAvailable(id) => {
                for lustre in self.lustres.iter_mut().filter(|l| l.id == id && l.state == "CREATING") {
                    lustre.state = "FAILED";
                    lustre.failure = Some(message.to_owned());
                }
            }
            Change::InstanceRunning(id) => self.instance_state(&id, "pending", "terminated"),
            other => self.apply(other),
        }
    }

    /// The next private address of a subnet (from its fourth address on, as AWS reserves three).
    pub(super) fn next_address(&mut self, cidr: (u32, u8)) -> String {
        self.serial += 1;
        let hosts = (u32::MAX >> cidr.1).saturating_sub(4).max(1);
        std::net::Ipv4Addr::from(cidr.0 + 4 + (self.serial - 1) % hosts).to_string()
    }
}

/// `<prefix>-` and 17 lower-case hex digits, as current accounts' ids look.
pub(super) fn new_id(prefix: &str) -> String {
    let bits = u128::from(ulid::Ulid::generate()) & ((1u128 << 68) - 1);
    format!("{prefix}-{:017x}", bits)
}

pub(super) fn request_id() -> String {
    let hex = format!("{:032x}", u128::from(ulid::Ulid::generate()));
    format!("{}-{}-{}-{}-{}", &hex[..8], &hex[8..12], &hex[12..16], &hex[16..20], &hex[20..])
}

/// Epoch seconds with a fraction, as EFS and FSx write timestamps (JSON numbers).
pub(super) fn epoch_now() -> f64 {
    chrono::Utc::now().timestamp_millis() as f64 / 1000.0
}

/// A request a service refuses, answered in that service's error shape.
#[derive(Debug)]
pub(super) struct Refusal {
    pub(super) service: Service,
    pub(super) status: StatusCode,
    pub(super) code: &'static str,
    pub(super) message: String,
    /// Error-specific members of a JSON error body (`FileSystemId`, `Parameter`, …).
    pub(super) members: Value,
}

impl Refusal {
    pub(super) fn new(service: Service, status: u16, code: &'static str, message: impl Into<String>) -> Refusal {
        let status = StatusCode::from_u16(status).unwrap_or(StatusCode::BAD_REQUEST);
        Refusal { service, status, code, message: message.into(), members: json!({}) }
    }

    pub(super) fn with(mut self, key: &str, value: impl Into<Value>) -> Refusal {
        if let Some(map) = self.members.as_object_mut() {
            map.insert(key.to_owned(), value.into());
        }
        self
    }
}

impl IntoResponse for Refusal {
    fn into_response(self) -> Response {
        match self.service {
            Service::Ec2 => {
                let body = format!(
                    "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Response><Errors><Error><Code>{}</Code><Message>{}</Message></Error></Errors><RequestID>{}</RequestID></Response>",
                    xml::escape(self.code),
                    xml::escape(&self.message),
                    request_id()
                );
                (self.status, [(header::CONTENT_TYPE, "text/xml;charset=UTF-8")], body).into_response()
            }
            Service::Efs => {
                let mut body = json!({ "ErrorCode": self.code, "Message": self.message });
                if let (Some(map), Some(extra)) = (body.as_object_mut(), self.members.as_object()) {
                    map.extend(extra.clone());
                }
                let mut response = (self.status, axum::Json(body)).into_response();
                let headers = response.headers_mut();
                headers.insert("x-amzn-errortype", HeaderValue::from_static(self.code));
                headers.insert("x-amzn-requestid", header_value(&request_id()));
                response
            }
            Service::Fsx => {
                let mut body = json!({ "__type": self.code, "Message": self.message });
                if let (Some(map), Some(extra)) = (body.as_object_mut(), self.members.as_object()) {
                    map.extend(extra.clone());
                }
                json_11(self.status, body)
            }
        }
    }
}

fn header_value(text: &str) -> HeaderValue {
    HeaderValue::from_str(text).unwrap_or(HeaderValue::from_static("-"))
}

/// A JSON 1.1 answer (FSx).
pub(super) fn json_11(status: StatusCode, body: Value) -> Response {
    let mut response =
        (status, [(header::CONTENT_TYPE, "application/x-amz-json-1.1")], body.to_string()).into_response();
    response.headers_mut().insert("x-amzn-requestid", header_value(&request_id()));
    response
}

/// `POST /` (FSx and EC2) and the EFS paths, all behind `face`.
pub fn router(sim: Sim) -> Router {
    let routes = efs::routes(Router::new()).route("/", post(dispatch));
    routes.layer(middleware::from_fn_with_state(sim.clone(), face)).with_state(sim)
}

/// Which protocol a request speaks, and its operation's name.
fn classify(headers: &HeaderMap, path: &str, method: &axum::http::Method, body: &[u8]) -> Option<(Service, String)> {
    if path.starts_with("/2015-02-01/") {
        return Some((Service::Efs, efs::operation(method, path)));
    }
    if let Some(target) = headers.get("x-amz-target").and_then(|v| v.to_str().ok()) {
        let op = target.strip_prefix("AWSSimbaAPIService_v20180301.")?;
        return Some((Service::Fsx, op.to_owned()));
    }
    let form = xml::form(body);
    let version = form.iter().find(|(k, _)| k == "Version").map(|(_, v)| v.as_str());
    let action = form.iter().find(|(k, _)| k == "Action").map(|(_, v)| v.clone())?;
    (version == Some("2016-11-15")).then_some((Service::Ec2, action))
}

/// The region of a well-formed SigV4 `Authorization` for `service`, or the service's refusal.
/// Counts who signed a call, as `aws.access-key:<id>` (and `aws.session-token:<token>`), so a
/// test can tell which credentials a client used.
fn count_signer(sim: &Sim, headers: &HeaderMap) {
    let value = headers.get(header::AUTHORIZATION).and_then(|v| v.to_str().ok()).unwrap_or_default();
    let key = value.split("Credential=").nth(1).and_then(|c| c.split('/').next()).unwrap_or_default();
    sim.count_name("aws.access-key", key);
    if let Some(token) = headers.get("x-amz-security-token").and_then(|v| v.to_str().ok()) {
        sim.count_name("aws.session-token", token);
    }
}

fn authenticate(service: Service, headers: &HeaderMap) -> Result<String, Refusal> {
    let ec2 = service == Service::Ec2;
    let refuse = |status: u16, code: &'static str, message: String| {
        if ec2 {
            Refusal::new(service, 401, "AuthFailure", message)
        } else {
            Refusal::new(service, status, code, message)
        }
    };
    let Some(value) = headers.get(header::AUTHORIZATION).and_then(|v| v.to_str().ok()) else {
        return Err(refuse(403, "MissingAuthenticationTokenException", "Missing Authentication Token".into()));
    };
    let malformed = || {
        refuse(
            400,
            "IncompleteSignatureException",
            format!("Authorization header requires well-formed SigV4: '{value}'"),
        )
    };
    let rest = value.strip_prefix("AWS4-HMAC-SHA256 ").ok_or_else(malformed)?;
    let mut credential = None;
    let mut signed = None;
    let mut signature = None;
    for part in rest.split(',').map(str::trim) {
        if let Some(v) = part.strip_prefix("Credential=") {
            credential = Some(v);
        } else if let Some(v) = part.strip_prefix("SignedHeaders=") {
            signed = Some(v);
        } else if let Some(v) = part.strip_prefix("Signature=") {
            signature = Some(v);
        }
    }
    let (Some(credential), Some(signed), Some(signature)) = (credential, signed, signature) else {
        return Err(malformed());
    };
    let scope: Vec<&str> = credential.split('/').collect();
    let well_formed = scope.len() == 5
        && !scope[0].is_empty()
        && scope[1].len() == 8
        && scope[1].chars().all(|c| c.is_ascii_digit())
        && !scope[2].is_empty()
        && scope[2].chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        && scope[4] == "aws4_request"
        && !signed.is_empty()
        && signed.split(';').any(|h| h == "host")
        && !signature.is_empty()
        && signature.chars().all(|c| c.is_ascii_hexdigit());
    if !well_formed {
        return Err(malformed());
    }
    if !REGIONS.contains(&scope[2]) {
        return Err(refuse(403, "InvalidSignatureException", "Credential should be scoped to a valid region.".into()));
    }
    if scope[3] != service.signing_name() {
        return Err(refuse(
            403,
            "InvalidSignatureException",
            format!("Credential should be scoped to correct service: '{}'.", service.signing_name()),
        ));
    }
    Ok(scope[2].to_owned())
}

/// The answer a fault gives in the service's shape (see the module's table).
fn fault_refusal(service: Service, status: u16) -> Refusal {
    match service {
        Service::Ec2 => match status {
            400 | 429 | 503 => Refusal::new(service, 503, "RequestLimitExceeded", "Request limit exceeded."),
            504 => Refusal::new(service, 503, "Unavailable", "The server is overloaded and can't handle the request."),
            _ => Refusal::new(service, 500, "InternalError", "An internal error has occurred."),
        },
        Service::Efs => match status {
            400 | 429 | 503 => Refusal::new(service, status, "ThrottlingException", "Rate exceeded"),
            504 => {
                Refusal::new(service, 504, "DependencyTimeout", "The service timed out trying to fulfill the request.")
            }
            _ => Refusal::new(service, 500, "InternalServerError", "An internal error occurred."),
        },
        Service::Fsx => match status {
            400 | 429 | 503 => Refusal::new(service, 400, "ThrottlingException", "Rate exceeded"),
            _ => Refusal::new(service, 500, "InternalServerError", "An internal error occurred."),
        },
    }
}

/// Every AWS call: latency, the protocol and operation, authentication, counting, faults, and the
/// model settled before the handler reads it.
async fn face(State(sim): State<Sim>, request: Request, next: Next) -> Response {
    tokio::time::sleep(sim.config().latency).await;
    let (parts, body) = request.into_parts();
    let Ok(bytes) = axum::body::to_bytes(body, BODY_LIMIT).await else {
        return (StatusCode::PAYLOAD_TOO_LARGE, "request body too large").into_response();
    };
    let Some((service, operation)) = classify(&parts.headers, parts.uri.path(), &parts.method, &bytes) else {
        // A `POST /` that speaks none of the three protocols: EC2's answers for a missing action
        // or another API version.
        let form = xml::form(&bytes);
        let refusal = match form.iter().find(|(k, _)| k == "Version") {
            Some((_, version)) if form.iter().any(|(k, _)| k == "Action") => Refusal::new(
                Service::Ec2,
                400,
                "NoSuchVersion",
                format!("The requested version ({version}) of service AmazonEC2 does not exist"),
            ),
            _ => Refusal::new(Service::Ec2, 400, "MissingAction", "The request must contain the parameter Action"),
        };
        return refusal.into_response();
    };
    let region = match authenticate(service, &parts.headers) {
        Ok(region) => region,
        Err(refusal) => return refusal.into_response(),
    };
    let name = format!("{}.{operation}", service.prefix());
    sim.count_call(&name);
    count_signer(&sim, &parts.headers);
    let fault = sim.take_fault(&name);
    sim.with_aws(|model| model.settle());
    let mut request = Request::from_parts(parts, Body::from(bytes));
    request.extensions_mut().insert(Caller { region });
    request.extensions_mut().insert(Operation { service, name: operation });
    match fault {
        Some(Fault::Status { status }) => fault_refusal(service, status).into_response(),
        Some(Fault::Stall) => {
            tokio::time::sleep(STALL).await;
            fault_refusal(service, 500).into_response()
        }
        Some(Fault::Drop) => {
            let _done = next.run(request).await;
            tokio::time::sleep(STALL).await;
            fault_refusal(service, 500).into_response()
        }
        Some(Fault::Fail { message }) => crate::sim::failing_with(message, next.run(request)).await,
        None => next.run(request).await,
    }
}

/// The operation `face` found, for `dispatch`.
#[derive(Clone, Debug)]
struct Operation {
    service: Service,
    name: String,
}

/// `POST /`: FSx by its target header, EC2 by its form's `Action`.
async fn dispatch(
    State(sim): State<Sim>,
    axum::Extension(caller): axum::Extension<Caller>,
    axum::Extension(operation): axum::Extension<Operation>,
    body: Bytes,
) -> Response {
    match operation.service {
        Service::Fsx => fsx::handle(&sim, &caller, &operation.name, &body),
        Service::Ec2 => ec2::handle(&sim, &caller, &operation.name, &body),
        Service::Efs => Refusal::new(Service::Efs, 404, "BadRequest", "Unknown operation").into_response(),
    }
}

impl Sim {
    pub(super) fn with_aws<T>(&self, f: impl FnOnce(&mut Model) -> T) -> T {
        f(&mut self.inner.aws.lock().unwrap_or_else(|e| e.into_inner()))
    }
}

#[cfg(test)]
pub(super) mod testing;

#[cfg(test)]
mod tests {
    use super::testing::Aws;
    use super::*;

    #[test]
    fn ids_are_the_prefix_and_17_hex_digits() {
        let id = new_id("sg");
        assert_eq!(id.len(), 20, "{id}");
        assert!(id.starts_with("sg-") && id[3..].chars().all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase()));
    }

    #[tokio::test]
    async fn a_missing_or_malformed_authorization_is_refused_in_each_services_shape() {
        let aws = Aws::start().await;
        let (status, headers, body) = aws.raw_efs_get("/2015-02-01/file-systems", None).await;
        assert_eq!(status, 403);
        assert_eq!(headers["x-amzn-errortype"], "MissingAuthenticationTokenException");
        assert_eq!(body["ErrorCode"], "MissingAuthenticationTokenException");
        let (status, _, body) = aws.raw_efs_get("/2015-02-01/file-systems", Some("AWS4-HMAC-SHA256 nonsense")).await;
        assert_eq!(status, 400);
        assert_eq!(body["ErrorCode"], "IncompleteSignatureException");
        let (status, text) = aws.raw_ec2("Action=DescribeVpcs&Version=2016-11-15", None).await;
        assert_eq!(status, 401);
        assert!(text.contains("<Code>AuthFailure</Code>"), "{text}");
        // Nothing was counted: the call never reached the service.
        assert_eq!(aws.sim.calls("efs.DescribeFileSystems"), 0);
    }

    #[tokio::test]
    async fn a_wrong_signing_service_is_refused() {
        let aws = Aws::start().await;
        // The classic bug: `efs` instead of `elasticfilesystem`.
        let auth = super::testing::authorization("efs", "us-east-1");
        let (status, headers, body) = aws.raw_efs_get("/2015-02-01/file-systems", Some(&auth)).await;
        assert_eq!(status, 403);
        assert_eq!(headers["x-amzn-errortype"], "InvalidSignatureException");
        assert_eq!(body["Message"], "Credential should be scoped to correct service: 'elasticfilesystem'.");
        let (status, body) = aws.fsx_signed_as("ec2", "DescribeFileSystems", json!({})).await;
        assert_eq!(status, 403);
        assert_eq!(body["__type"], "InvalidSignatureException");
        let auth = super::testing::authorization("fsx", "us-east-1");
        let (status, text) = aws.raw_ec2("Action=DescribeVpcs&Version=2016-11-15", Some(&auth)).await;
        assert_eq!(status, 401);
        assert!(text.contains("<Code>AuthFailure</Code>"), "{text}");
        // A DigitalOcean region is no AWS region.
        let auth = super::testing::authorization("elasticfilesystem", "nyc1");
        let (status, _, body) = aws.raw_efs_get("/2015-02-01/file-systems", Some(&auth)).await;
        assert_eq!((status, body["Message"].as_str()), (403, Some("Credential should be scoped to a valid region.")));
    }

    #[tokio::test]
    async fn faults_answer_each_services_throttling_shape_and_calls_are_counted() {
        let aws = Aws::start().await;
        aws.sim.inject("efs.DescribeFileSystems", Fault::Status { status: 400 }, 1);
        aws.sim.inject("fsx.DescribeFileSystems", Fault::Status { status: 400 }, 1);
        aws.sim.inject("ec2.DescribeVpcs", Fault::Status { status: 503 }, 1);
        let (status, headers, body) = aws.efs_get("/2015-02-01/file-systems").await;
        assert_eq!((status, body["ErrorCode"].as_str()), (400, Some("ThrottlingException")));
        assert_eq!(headers["x-amzn-errortype"], "ThrottlingException");
        let (status, body) = aws.fsx("DescribeFileSystems", json!({})).await;
        assert_eq!((status, body["__type"].as_str()), (400, Some("ThrottlingException")));
        let (status, text) = aws.ec2("DescribeVpcs", &[]).await;
        assert_eq!(status, 503);
        assert!(text.contains("<Code>RequestLimitExceeded</Code>") && text.contains("<RequestID>"), "{text}");
        // The fault was used up: the next calls answer.
        assert_eq!(aws.efs_get("/2015-02-01/file-systems").await.0, 200);
        assert_eq!(aws.fsx("DescribeFileSystems", json!({})).await.0, 200);
        assert_eq!(aws.ec2("DescribeVpcs", &[]).await.0, 200);
        assert_eq!(aws.sim.calls("efs.DescribeFileSystems"), 2);
        assert_eq!(aws.sim.calls("fsx.DescribeFileSystems"), 2);
        assert_eq!(aws.sim.calls("ec2.DescribeVpcs"), 2);
        let (endpoints, _) = aws.sim.all_calls();
        assert!(endpoints.contains_key("ec2.DescribeVpcs"));
    }

    #[tokio::test]
    async fn a_post_that_speaks_no_protocol_is_refused_as_ec2_would() {
        let aws = Aws::start().await;
        let auth = super::testing::authorization("ec2", "us-east-1");
        let (status, text) = aws.raw_ec2("Version=2016-11-15", Some(&auth)).await;
        assert_eq!(status, 400);
        assert!(text.contains("<Code>MissingAction</Code>"), "{text}");
        let (_, text) = aws.raw_ec2("Action=DescribeVpcs&Version=2014-01-01", Some(&auth)).await;
        assert!(text.contains("<Code>NoSuchVersion</Code>"), "{text}");
    }

    #[tokio::test]
    async fn the_control_endpoint_lists_aws_calls() {
        let aws = Aws::start().await;
        aws.ec2_ok("DescribeVpcs", &[]).await;
        aws.efs_get("/2015-02-01/file-systems").await;
        aws.fsx("DescribeFileSystems", json!({})).await;
        let calls: Value = aws.http.get(format!("{}/_sim/calls", aws.url)).send().await.unwrap().json().await.unwrap();
        assert_eq!(calls["endpoints"]["ec2.DescribeVpcs"], 1);
        assert_eq!(calls["endpoints"]["efs.DescribeFileSystems"], 1);
        assert_eq!(calls["endpoints"]["fsx.DescribeFileSystems"], 1);
    }

    #[tokio::test]
    async fn the_digitalocean_face_still_answers_beside_the_aws_one() {
        let aws = Aws::start().await;
        let response = aws.http.get(format!("{}/v2/vpcs", aws.url)).bearer_auth("t").send().await.unwrap();
        assert_eq!(response.status().as_u16(), 200);
        assert!(response.headers().contains_key("ratelimit-limit"));
        // The AWS face does not take a bearer token, and the DigitalOcean one does not take SigV4.
        let response =
            aws.http.get(format!("{}/2015-02-01/file-systems", aws.url)).bearer_auth("t").send().await.unwrap();
        assert_eq!(response.status().as_u16(), 400);
        assert_eq!(response.headers()["x-amzn-errortype"], "IncompleteSignatureException");
        assert!(!response.headers().contains_key("ratelimit-limit"));
        let auth = super::testing::authorization("ec2", "us-east-1");
        let response = aws.http.get(format!("{}/v2/vpcs", aws.url)).header("authorization", auth).send().await.unwrap();
        assert_eq!(response.status().as_u16(), 401);
    }
}
