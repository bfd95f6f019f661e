//! A sim on a free port with a short action time, and a client that speaks the three AWS protocols
//! with a syntactically valid SigV4 `Authorization` (nothing is really signed).
use std::time::Duration;

use serde_json::Value;

use crate::sim::{Sim, SimConfig};

pub(super) const ACTION_TIME: Duration = Duration::from_millis(50);
pub(super) const REGION: &str = "us-east-1";

/// What the SDK sends, with a made-up signature.
pub(super) fn authorization(service: &str, region: &str) -> String {
    format!(
        "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20261201/{region}/{service}/aws4_request, \
SignedHeaders=content-type;host;x-amz-date, Signature={}",
        "0a".repeat(32)
    )
}

pub(super) struct Aws {
    pub(super) sim: Sim,
    pub(super) url: String,
    pub(super) http: reqwest::Client,
}

impl Aws {
    pub(super) async fn start() -> Aws {
        crate::init_crypto();
        let config = SimConfig { action_time: ACTION_TIME, snapshot_interval: Duration::ZERO, ..Default::default() };
        let (sim, url) = Sim::spawn_local(config).await.unwrap();
        Aws { sim, url, http: reqwest::Client::new() }
    }

    /// Waits until changes started now have happened.
    pub(super) async fn later(&self) {
        tokio::time::sleep(ACTION_TIME + Duration::from_millis(30)).await;
    }

    fn json_of(text: &str) -> Value {
        if text.is_empty() { Value::Null } else { serde_json::from_str(text).unwrap() }
    }

    pub(super) async fn raw_efs_get(&self, path: &str, auth: Option<&str>) -> (u16, reqwest::header::HeaderMap, Value) {
        let mut request = self.http.get(format!("{}{path}", self.url));
        if let Some(auth) = auth {
            request = request.header("authorization", auth);
        }
        let response = request.send().await.unwrap();
        let (status, headers) = (response.status().as_u16(), response.headers().clone());
        (status, headers, Self::json_of(&response.text().await.unwrap()))
    }

    async fn efs_send(&self, request: reqwest::RequestBuilder) -> (u16, reqwest::header::HeaderMap, Value) {
        let response = request
            .header("authorization", authorization("elasticfilesystem", REGION))
            .header("x-amz-date", "20261201T120000Z")
            .send()
            .await
            .unwrap();
        let (status, headers) = (response.status().as_u16(), response.headers().clone());
        (status, headers, Self::json_of(&response.text().await.unwrap()))
    }

    pub(super) async fn efs_get(&self, path: &str) -> (u16, reqwest::header::HeaderMap, Value) {
        self.efs_send(self.http.get(format!("{}{path}", self.url))).await
    }

    pub(super) async fn efs_post(&self, path: &str, body: Value) -> (u16, reqwest::header::HeaderMap, Value) {
        let request = self.http.post(format!("{}{path}", self.url)).header("content-type", "application/json");
        self.efs_send(request.body(body.to_string())).await
    }

    pub(super) async fn efs_put(&self, path: &str, body: Value) -> (u16, reqwest::header::HeaderMap, Value) {
        let request = self.http.put(format!("{}{path}", self.url)).header("content-type", "application/json");
        self.efs_send(request.body(body.to_string())).await
    }

    pub(super) async fn efs_delete(&self, path: &str) -> (u16, reqwest::header::HeaderMap, Value) {
        self.efs_send(self.http.delete(format!("{}{path}", self.url))).await
    }

    pub(super) async fn fsx_signed_as(&self, service: &str, operation: &str, body: Value) -> (u16, Value) {
        let response = self
            .http
            .post(format!("{}/", self.url))
            .header("content-type", "application/x-amz-json-1.1")
            .header("x-amz-target", format!("AWSSimbaAPIService_v20180301.{operation}"))
            .header("authorization", authorization(service, REGION))
            .body(body.to_string())
            .send()
            .await
            .unwrap();
        let status = response.status().as_u16();
        (status, Self::json_of(&response.text().await.unwrap()))
    }

    pub(super) async fn fsx(&self, operation: &str, body: Value) -> (u16, Value) {
        self.fsx_signed_as("fsx", operation, body).await
    }

    pub(super) async fn raw_ec2(&self, body: &str, auth: Option<&str>) -> (u16, String) {
        let mut request = self
            .http
            .post(format!("{}/", self.url))
            .header("content-type", "application/x-www-form-urlencoded")
            .body(body.to_owned());
        if let Some(auth) = auth {
            request = request.header("authorization", auth);
        }
        let response = request.send().await.unwrap();
        (response.status().as_u16(), response.text().await.unwrap())
    }

    /// An EC2 call in `region`, its parameters form-encoded after `Action` and `Version`.
    pub(super) async fn ec2_in(&self, region: &str, action: &str, params: &[(&str, &str)]) -> (u16, String) {
        let mut body = format!("Action={action}&Version=2016-11-15");
        for (k, v) in params {
            body.push_str(&format!("&{}={}", encode(k), encode(v)));
        }
        self.raw_ec2(&body, Some(&authorization("ec2", region))).await
    }

    pub(super) async fn ec2(&self, action: &str, params: &[(&str, &str)]) -> (u16, String) {
        self.ec2_in(REGION, action, params).await
    }

    /// An EC2 call that must succeed; its XML.
    pub(super) async fn ec2_ok(&self, action: &str, params: &[(&str, &str)]) -> String {
        let (status, text) = self.ec2(action, params).await;
        assert_eq!(status, 200, "{action}: {text}");
        text
    }

    /// A VPC with `cidr`, its id.
    pub(super) async fn vpc(&self, cidr: &str) -> String {
        let text = self.ec2_ok("CreateVpc", &[("CidrBlock", cidr)]).await;
        between(&text, "<vpcId>", "</vpcId>")
    }

    pub(super) async fn subnet(&self, vpc: &str, cidr: &str, zone: &str) -> String {
        let text =
            self.ec2_ok("CreateSubnet", &[("VpcId", vpc), ("CidrBlock", cidr), ("AvailabilityZone", zone)]).await;
        between(&text, "<subnetId>", "</subnetId>")
    }

    pub(super) async fn group(&self, vpc: &str, name: &str) -> String {
        let text = self
            .ec2_ok("CreateSecurityGroup", &[("VpcId", vpc), ("GroupName", name), ("GroupDescription", "test group")])
            .await;
        between(&text, "<groupId>", "</groupId>")
    }

    /// An EFS file system with `token`, available.
    pub(super) async fn efs(&self, token: &str) -> String {
        let (status, _, body) =
            self.efs_post("/2015-02-01/file-systems", serde_json::json!({ "CreationToken": token })).await;
        assert_eq!(status, 201, "{body}");
        self.later().await;
        body["FileSystemId"].as_str().unwrap().to_owned()
    }
}

/// Percent-encodes a form value.
pub(super) fn encode(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// The text between the first `start` and the `end` after it.
pub(super) fn between(text: &str, start: &str, end: &str) -> String {
    let from = text.find(start).unwrap_or_else(|| panic!("{start} not in {text}")) + start.len();
    let to = text[from..].find(end).unwrap() + from;
    text[from..to].to_owned()
}

/// How many times `needle` occurs.
pub(super) fn count(text: &str, needle: &str) -> usize {
    text.matches(needle).count()
}
