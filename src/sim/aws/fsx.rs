//! FSx for Lustre (`POST /`, `X-Amz-Target: AWSSimbaAPIService_v20180301.<Op>`, JSON 1.1): file
//! systems made `CREATING`, `AVAILABLE` after the action time (only then with `DNSName` and
//! `LustreConfiguration.MountName`), deleted `DELETING`, then gone (`FileSystemNotFound`).
//! Creation checks what real FSx checks for Lustre: one subnet; known subnet and groups
//! (`InvalidNetworkSettings`); groups that admit Lustre traffic (TCP 988 and 1018–1023);
//! deployment type, storage type, capacity and throughput per unit; `KmsKeyId` only for persistent
//! types. A `ClientRequestToken` held by a live file system answers that file system (200) when
//! the rest of the request is the same, else `IncompatibleParameterError` naming the first
//! differing parameter. Names are not unique: several file systems may carry one `Name` tag.
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use super::ec2_groups::GroupRecord;
use super::{ACCOUNT, Caller, Change, Model, Refusal, Service, epoch_now, json_11, new_id};
use crate::sim::Sim;

#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub(super) struct LustreRecord {
    pub(super) id: String,
    pub(super) region: String,
    pub(super) token: Option<String>,
    /// The create request without its token, for the token's check.
    request: Value,
    deployment: String,
    capacity: u64,
    storage_type: String,
    per_unit: Option<u64>,
    kms_key: Option<String>,
    version: String,
    pub(super) subnet: String,
    vpc: String,
    pub(super) groups: Vec<String>,
    tags: Vec<(String, String)>,
    /// `CREATING`, `AVAILABLE`, `DELETING`, or `FAILED` (forced by `Sim::aws_fail_fsx`).
    #[serde(deserialize_with = "crate::sim::word")]
    pub(super) state: crate::sim::Word,
    pub(super) failure: Option<String>,
    created: f64,
    mount_name: String,
    /// The file server's network interface, `eni-…`.
    pub(super) interface: String,
}

impl LustreRecord {
    fn json(&self) -> Value {
        let mut lustre = json!({
            "DeploymentType": self.deployment, "WeeklyMaintenanceStartTime": "1:05:00", "DataCompressionType": "NONE",
            "CopyTagsToBackups": false, "LogConfiguration": { "Level": "DISABLED" },
        });
        let mut body = json!({
            "OwnerId": ACCOUNT, "CreationTime": self.created, "FileSystemId": self.id, "FileSystemType": "LUSTRE",
            "FileSystemTypeVersion": self.version, "Lifecycle": self.state, "StorageCapacity": self.capacity,
            "StorageType": self.storage_type, "VpcId": self.vpc, "SubnetIds": [self.subnet],
            "NetworkInterfaceIds": [self.interface],
            "ResourceARN": format!("arn:aws:fsx:{}:{ACCOUNT}:file-system/{}", self.region, self.id),
            "Tags": self.tags.iter().map(|(k, v)| json!({ "Key": k, "Value": v })).collect::<Vec<_>>(),
            "AdministrativeActions": [],
        });
        let (l, b) = (lustre.as_object_mut().expect("an object"), body.as_object_mut().expect("an object"));
        if let Some(per_unit) = self.per_unit {
            l.insert("PerUnitStorageThroughput".into(), json!(per_unit));
            l.insert("AutomaticBackupRetentionDays".into(), json!(0));
        }
        if self.state == "AVAILABLE" {
            l.insert("MountName".into(), json!(self.mount_name));
            b.insert("DNSName".into(), json!(format!("{}.fsx.{}.amazonaws.com", self.id, self.region)));
        }
        if let Some(key) = &self.kms_key {
            b.insert("KmsKeyId".into(), json!(key));
        }
        if let Some(message) = &self.failure {
            b.insert("FailureDetails".into(), json!({ "Message": message }));
        }
        b.insert("LustreConfiguration".into(), lustre);
        body
    }
}

fn refuse(code: &'static str, message: impl Into<String>) -> Refusal {
    Refusal::new(Service::Fsx, 400, code, message)
}

fn bad_request(message: impl Into<String>) -> Refusal {
    refuse("BadRequest", message)
}

fn not_found(id: &str) -> Refusal {
    refuse("FileSystemNotFound", format!("File system '{id}' does not exist."))
}

/// Eight random lower-case letters and digits, as FSx names a non-SCRATCH_1 file system's mount.
fn mount_name() -> String {
    const ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789";
    let mut bits = u128::from(ulid::Ulid::generate());
    (0..8)
        .map(|_| {
            let c = ALPHABET[(bits % 36) as usize] as char;
            bits /= 36;
            c
        })
        .collect()
}

/// Every FSx operation, by its target.
pub(super) fn handle(sim: &Sim, caller: &Caller, operation: &str, body: &[u8]) -> Response {
    let body: Value = match serde_json::from_slice(if body.is_empty() { b"{}" } else { body }) {
        Ok(Value::Object(map)) => Value::Object(map),
        _ => return bad_request("The request body must be a JSON object.").into_response(),
    };
    let region = caller.region.as_str();
    let result = match operation {
        "CreateFileSystem" => {
            let token = body["ClientRequestToken"].as_str().unwrap_or_default().to_owned();
            sim.count_name("fsx.CreateFileSystem", &token);
            let made = sim.with_aws(|model| model.lustre_create(region, &body));
            if let Ok((_, true)) = &made {
                let name = body["Tags"].as_array().and_then(|tags| {
                    tags.iter().find(|t| t["Key"] == "Name").and_then(|t| t["Value"].as_str()).map(str::to_owned)
                });
                sim.count_name("fsx.made", &name.unwrap_or_default());
            }
            made.map(|(json, _)| json!({ "FileSystem": json }))
        }
        "DescribeFileSystems" => sim.with_aws(|model| model.lustre_describe(region, &body)),
        "DeleteFileSystem" => sim.with_aws(|model| model.lustre_delete(region, &body)),
        other => Err(refuse("UnknownOperationException", format!("Unknown operation {other}"))),
    };
    match result {
        Ok(answer) => json_11(StatusCode::OK, answer),
        Err(refusal) => refusal.into_response(),
    }
}

/// Whether one of `groups` admits inbound TCP on every port of `ports`.
fn admits(groups: &[&GroupRecord], ports: (i32, i32)) -> bool {
    groups.iter().any(|g| {
        g.ingress.iter().any(|r| match (r.protocol.as_str(), r.ports) {
            ("-1", _) => true,
            ("tcp", Some((from, to))) => from <= ports.0 && ports.1 <= to,
            _ => false,
        })
    })
}

impl Model {
    /// A new file system, or the one a held token names (`false`: nothing was made).
    fn lustre_create(&mut self, region: &str, body: &Value) -> Result<(Value, bool), Refusal> {
        let token = body.get("ClientRequestToken").and_then(Value::as_str).map(str::to_owned);
        if let Some(token) = &token {
            let ok = token.len() <= 63 && token.chars().all(|c| c.is_ascii_alphanumeric() || "_.-".contains(c));
            if !ok {
                return Err(bad_request("ClientRequestToken must be at most 63 of A-Z a-z 0-9 _ . -"));
            }
        }
        let mut request = body.clone();
        if let Some(map) = request.as_object_mut() {
            map.remove("ClientRequestToken");
        }
        if let Some(token) = &token
            && let Some(earlier) = self.lustres.iter().find(|l| l.region == region && l.token.as_ref() == Some(token))
        {
            if earlier.request == request {
                return Ok((earlier.json(), false));
            }
            let keys = earlier
                .request
                .as_object()
                .into_iter()
                .flat_map(|m| m.keys())
                .chain(request.as_object().into_iter().flat_map(|m| m.keys()));
            let parameter =
                keys.into_iter().find(|k| earlier.request.get(*k) != request.get(*k)).cloned().unwrap_or_default();
            return Err(refuse(
                "IncompatibleParameterError",
                format!("The request token '{token}' was used with a different value of {parameter}."),
            )
            .with("Parameter", parameter));
        }
        match body.get("FileSystemType").and_then(Value::as_str) {
            Some("LUSTRE") => {}
            Some(other) => return Err(bad_request(format!("The sim serves only LUSTRE file systems, not {other}."))),
            None => return Err(bad_request("FileSystemType is required.")),
        }
        let lustre = body.get("LustreConfiguration").cloned().unwrap_or(json!({}));
        let deployment = lustre["DeploymentType"].as_str().unwrap_or("SCRATCH_1").to_owned();
        if !["SCRATCH_1", "SCRATCH_2", "PERSISTENT_1", "PERSISTENT_2"].contains(&deployment.as_str()) {
            return Err(bad_request(format!("Invalid DeploymentType: {deployment}")));
        }
        let persistent = deployment.starts_with("PERSISTENT");
        let storage_type = body["StorageType"].as_str().unwrap_or("SSD").to_owned();
        let storage_ok = match storage_type.as_str() {
            "SSD" => true,
            "HDD" => deployment == "PERSISTENT_1",
            "INTELLIGENT_TIERING" => deployment == "PERSISTENT_2",
            _ => false,
        };
        if !storage_ok {
            return Err(bad_request(format!("StorageType {storage_type} is not supported with {deployment}.")));
        }
        let per_unit = lustre.get("PerUnitStorageThroughput").and_then(Value::as_u64);
        let allowed: &[u64] = match (deployment.as_str(), storage_type.as_str()) {
            ("PERSISTENT_1", "HDD") => &[12, 40],
            ("PERSISTENT_1", _) => &[50, 100, 200],
            ("PERSISTENT_2", "SSD") => &[125, 250, 500, 1000],
            _ => &[],
        };
        match (persistent && storage_type != "INTELLIGENT_TIERING", per_unit) {
            (true, None) => return Err(bad_request(format!("PerUnitStorageThroughput is required for {deployment}."))),
            (true, Some(n)) if !allowed.contains(&n) => {
                return Err(refuse(
                    "InvalidPerUnitStorageThroughput",
                    format!("PerUnitStorageThroughput {n} is not valid for {deployment} {storage_type}."),
                ));
            }
            (false, Some(_)) if !persistent => {
                return Err(bad_request(format!("PerUnitStorageThroughput is not supported with {deployment}.")));
            }
            _ => {}
        }
        let capacity = body.get("StorageCapacity").and_then(Value::as_u64);
        let capacity_ok = match (deployment.as_str(), storage_type.as_str(), capacity, per_unit) {
            (_, "INTELLIGENT_TIERING", None, _) => true,
            (_, _, None, _) => return Err(bad_request("StorageCapacity is required.")),
            ("SCRATCH_1", _, Some(c), _) => c == 1200 || c == 2400 || (c > 0 && c % 3600 == 0),
            ("PERSISTENT_1", "HDD", Some(c), Some(12)) => c > 0 && c % 6000 == 0,
            ("PERSISTENT_1", "HDD", Some(c), _) => c > 0 && c % 1800 == 0,
            (_, _, Some(c), _) => c == 1200 || (c > 0 && c % 2400 == 0),
        };
        if !capacity_ok {
            return Err(bad_request(format!(
                "Invalid StorageCapacity {} for {deployment}: for SCRATCH_2, PERSISTENT_1 SSD and PERSISTENT_2 SSD use 1200 GiB or a multiple of 2400 GiB.",
                capacity.unwrap_or_default()
            )));
        }
        let kms_key = body.get("KmsKeyId").and_then(Value::as_str).map(str::to_owned);
        if kms_key.is_some() && !persistent {
            return Err(bad_request(format!(
                "KmsKeyId is not supported with {deployment}: scratch file systems use the FSx service key."
            )));
        }
        let version = body["FileSystemTypeVersion"]
            .as_str()
            .unwrap_or(if deployment == "PERSISTENT_2" { "2.12" } else { "2.10" })
            .to_owned();
        if !["2.10", "2.12", "2.15"].contains(&version.as_str()) || (deployment == "PERSISTENT_2" && version == "2.10")
        {
            return Err(bad_request(format!("FileSystemTypeVersion {version} is not supported with {deployment}.")));
        }
        let subnets: Vec<&str> =
            body["SubnetIds"].as_array().map(|a| a.iter().filter_map(Value::as_str).collect()).unwrap_or_default();
        let [subnet_id] = subnets.as_slice() else {
            return Err(bad_request("Lustre file systems take exactly one subnet in SubnetIds."));
        };
        let Some(subnet) = self.subnet_in(region, subnet_id).cloned() else {
            return Err(refuse("InvalidNetworkSettings", format!("The subnet ID '{subnet_id}' does not exist"))
                .with("InvalidSubnetId", *subnet_id));
        };
        let mut groups: Vec<String> = body["SecurityGroupIds"]
            .as_array()
            .map(|a| a.iter().filter_map(Value::as_str).map(str::to_owned).collect())
            .unwrap_or_default();
        if groups.is_empty() {
            groups.extend(self.groups.iter().filter(|g| g.vpc == subnet.vpc && g.default).map(|g| g.id.clone()));
        }
        if let Some(missing) = groups.iter().find(|g| !self.groups.iter().any(|r| &&r.id == g && r.vpc == subnet.vpc)) {
            return Err(refuse(
                "InvalidNetworkSettings",
                format!("The security group '{missing}' does not exist in VPC '{}'", subnet.vpc),
            )
            .with("InvalidSecurityGroupId", missing.clone()));
        }
        let records: Vec<&GroupRecord> = self.groups.iter().filter(|g| groups.contains(&g.id)).collect();
        if !admits(&records, (988, 988)) || !admits(&records, (1018, 1023)) {
            return Err(refuse(
                "InvalidNetworkSettings",
                "The file system cannot be created because the default security group in the subnet provided or the provided security groups do not permit Lustre LNET network traffic on port 988",
            ));
        }
        let tags: Vec<(String, String)> = body["Tags"]
            .as_array()
            .map(|a| {
                a.iter()
                    .map(|t| {
                        (
                            t["Key"].as_str().unwrap_or_default().to_owned(),
                            t["Value"].as_str().unwrap_or_default().to_owned(),
                        )
                    })
                    .collect()
            })
            .unwrap_or_default();
        if tags.len() > 50 || tags.iter().any(|(k, _)| k.is_empty() || k.len() > 128) {
            return Err(bad_request("Tags: at most 50, each key 1 to 128 characters."));
        }
        let record = LustreRecord {
            id: new_id("fs"),
            region: region.to_owned(),
            token,
            request,
            mount_name: if deployment == "SCRATCH_1" { "fsx".to_owned() } else { mount_name() },
            kms_key: if persistent {
                Some(kms_key.unwrap_or_else(|| format!("arn:aws:kms:{region}:{ACCOUNT}:key/{}", super::request_id())))
            } else {
                None
            },
            deployment,
            capacity: capacity.unwrap_or_default(),
            storage_type,
            per_unit,
            version,
            subnet: subnet.id.clone(),
            vpc: subnet.vpc.clone(),
            groups,
            tags,
            state: "CREATING",
            failure: None,
            created: epoch_now(),
            interface: new_id("eni"),
        };
        let json = record.json();
        self.later(Change::FsxAvailable(record.id.clone()));
        self.lustres.push(record);
        Ok((json, true))
    }

    fn lustre_describe(&self, region: &str, body: &Value) -> Result<Value, Refusal> {
        let ids: Option<Vec<&str>> =
            body.get("FileSystemIds").and_then(Value::as_array).map(|a| a.iter().filter_map(Value::as_str).collect());
        if let Some(ids) = &ids
            && let Some(missing) =
                ids.iter().find(|id| !self.lustres.iter().any(|l| l.region == region && l.id == **id))
        {
            return Err(not_found(missing));
        }
        let found: Vec<Value> = self
            .lustres
            .iter()
            .filter(|l| l.region == region && ids.as_ref().is_none_or(|ids| ids.contains(&l.id.as_str())))
            .map(LustreRecord::json)
            .collect();
        let start: usize = match body.get("NextToken").and_then(Value::as_str) {
            Some(t) => t.parse().map_err(|_| bad_request("Invalid NextToken"))?,
            None => 0,
        };
        let max = match body.get("MaxResults") {
            None => usize::MAX,
            Some(v) => {
                v.as_u64().filter(|n| *n >= 1).ok_or_else(|| bad_request("MaxResults must be at least 1"))? as usize
            }
        };
        let max = max.min(self.page_limit.unwrap_or(usize::MAX)).max(1);
        let total = found.len();
        let page: Vec<Value> = found.into_iter().skip(start).take(max).collect();
        let mut answer = json!({ "FileSystems": page });
        if start.saturating_add(max) < total {
            answer["NextToken"] = json!((start + max).to_string());
        }
        Ok(answer)
    }

    fn lustre_delete(&mut self, region: &str, body: &Value) -> Result<Value, Refusal> {
        let id = body
            .get("FileSystemId")
            .and_then(Value::as_str)
            .ok_or_else(|| bad_request("FileSystemId is required."))?
            .to_owned();
        let skip = body.pointer("/LustreConfiguration/SkipFinalBackup").and_then(Value::as_bool).unwrap_or(true);
        let record =
            self.lustres.iter_mut().find(|l| l.region == region && l.id == id).ok_or_else(|| not_found(&id))?;
        let mut response = json!({});
        if !skip {
            if !record.deployment.starts_with("PERSISTENT") {
                return Err(bad_request("Final backups are not supported on scratch file systems."));
            }
            response["FinalBackupId"] = json!(new_id("backup"));
            if let Some(tags) = body.pointer("/LustreConfiguration/FinalBackupTags") {
                response["FinalBackupTags"] = tags.clone();
            }
        }
        if record.state != "DELETING" {
            record.state = "DELETING";
            self.pending.retain(|(_, c)| !matches!(c, Change::FsxAvailable(l) if *l == id));
            self.later(Change::FsxGone(id.clone()));
        }
        Ok(json!({ "FileSystemId": id, "Lifecycle": "DELETING", "LustreResponse": response }))
    }

    pub(super) fn lustre_available(&mut self, id: &str) {
        if let Some(l) = self.lustres.iter_mut().find(|l| l.id == id && l.state == "CREATING") {
            l.state = "AVAILABLE";
        }
    }
}

impl Sim {
    /// Puts an FSx file system in `FAILED` with `FailureDetails.Message` (as a create that could
    /// not finish), its pending change dropped; false if there is no such file system.
    pub fn aws_fail_fsx(&self, id: &str, message: &str) -> bool {
        self.with_aws(|model| {
            model.pending.retain(|(_, c)| !matches!(c, Change::FsxAvailable(l) if l == id));
            let Some(record) = model.lustres.iter_mut().find(|l| l.id == id) else { return false };
            record.state = "FAILED";
            record.failure = Some(message.to_owned());
            true
        })
    }

    /// Plants an `AVAILABLE` SCRATCH_2 file system the service did not make, in `subnet` of
    /// `region`, with `tags` (e.g. our `Name`, none of our ownership tags) and no security groups;
    /// returns its id, or None if the subnet does not exist.
    pub fn aws_plant_foreign_fsx(&self, region: &str, subnet: &str, tags: &[(&str, &str)]) -> Option<String> {
        self.with_aws(|model| {
            let subnet = model.subnet_in(region, subnet)?.clone();
            let record = LustreRecord {
                id: new_id("fs"),
                region: region.to_owned(),
                token: None,
                request: json!({}),
                deployment: "SCRATCH_2".to_owned(),
                capacity: 1200,
                storage_type: "SSD".to_owned(),
                per_unit: None,
                kms_key: None,
                version: "2.15".to_owned(),
                subnet: subnet.id,
                vpc: subnet.vpc,
                groups: Vec::new(),
                tags: tags.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect(),
                state: "AVAILABLE",
                failure: None,
                created: epoch_now(),
                mount_name: mount_name(),
                interface: new_id("eni"),
            };
            let id = record.id.clone();
            model.lustres.push(record);
            Some(id)
        })
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::super::testing::{Aws, REGION};

    /// A VPC, a subnet and a group that admits Lustre from itself; the subnet's and group's ids.
    async fn network(aws: &Aws) -> (String, String) {
        let vpc = aws.vpc("10.0.0.0/16").await;
        let subnet = aws.subnet(&vpc, "10.0.1.0/24", "us-east-1a").await;
        let group = aws.group(&vpc, "bc-lustre").await;
        aws.ec2_ok(
            "AuthorizeSecurityGroupIngress",
            &[
                ("GroupId", &group),
                ("IpPermissions.1.IpProtocol", "tcp"),
                ("IpPermissions.1.FromPort", "988"),
                ("IpPermissions.1.ToPort", "988"),
                ("IpPermissions.1.Groups.1.GroupId", &group),
                ("IpPermissions.2.IpProtocol", "tcp"),
                ("IpPermissions.2.FromPort", "1018"),
                ("IpPermissions.2.ToPort", "1023"),
                ("IpPermissions.2.Groups.1.GroupId", &group),
            ],
        )
        .await;
        (subnet, group)
    }

    /// The captured create (section 7.4 of the reference).
    fn create(subnet: &str, group: &str) -> Value {
        json!({
            "ClientRequestToken": "bc-tenant1", "FileSystemType": "LUSTRE", "StorageCapacity": 1200,
            "SubnetIds": [subnet], "SecurityGroupIds": [group], "Tags": [{ "Key": "Name", "Value": "bc-tenant1" }],
            "LustreConfiguration": { "DeploymentType": "SCRATCH_2" },
        })
    }

    #[tokio::test]
    async fn a_file_system_is_creating_then_available_with_its_dns_and_mount_names() {
        let aws = Aws::start().await;
        let (subnet, group) = network(&aws).await;
        let (status, body) = aws.fsx("CreateFileSystem", create(&subnet, &group)).await;
        assert_eq!(status, 200, "{body}");
        let fs = &body["FileSystem"];
        assert_eq!(fs["Lifecycle"], "CREATING");
        assert!(fs.get("DNSName").is_none() && fs["LustreConfiguration"].get("MountName").is_none(), "{fs}");
        assert!(fs.get("SecurityGroupIds").is_none());
        assert!(fs["CreationTime"].is_number());
        let id = fs["FileSystemId"].as_str().unwrap().to_owned();
        assert!(id.starts_with("fs-") && id.len() == 20, "{id}");
        aws.later().await;
        let (_, body) = aws.fsx("DescribeFileSystems", json!({ "FileSystemIds": [id] })).await;
        let fs = &body["FileSystems"][0];
        assert_eq!(fs["Lifecycle"], "AVAILABLE");
        assert_eq!(fs["DNSName"], format!("{id}.fsx.{REGION}.amazonaws.com"));
        let mount = fs["LustreConfiguration"]["MountName"].as_str().unwrap();
        assert!(mount.len() == 8 && mount.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit()), "{mount}");
        assert_eq!(fs["SubnetIds"], json!([subnet]));
        assert!(fs["VpcId"].as_str().unwrap().starts_with("vpc-"));
        assert_eq!(aws.sim.name_calls("fsx.made", "bc-tenant1"), 1);
    }

    #[tokio::test]
    async fn the_same_token_and_request_answers_the_earlier_file_system_and_other_parameters_are_incompatible() {
        let aws = Aws::start().await;
        let (subnet, group) = network(&aws).await;
        let (_, first) = aws.fsx("CreateFileSystem", create(&subnet, &group)).await;
        let (status, again) = aws.fsx("CreateFileSystem", create(&subnet, &group)).await;
        assert_eq!(status, 200);
        assert_eq!(again["FileSystem"]["FileSystemId"], first["FileSystem"]["FileSystemId"]);
        let mut other = create(&subnet, &group);
        other["StorageCapacity"] = json!(2400);
        let (status, body) = aws.fsx("CreateFileSystem", other).await;
        assert_eq!((status, body["__type"].as_str()), (400, Some("IncompatibleParameterError")));
        assert_eq!(body["Parameter"], "StorageCapacity");
        let (_, body) = aws.fsx("DescribeFileSystems", json!({})).await;
        assert_eq!(body["FileSystems"].as_array().unwrap().len(), 1);
        assert_eq!(aws.sim.name_calls("fsx.made", "bc-tenant1"), 1);
    }

    #[tokio::test]
    async fn capacity_throughput_and_type_are_checked() {
        let aws = Aws::start().await;
        let (subnet, group) = network(&aws).await;
        for (capacity, deployment, per_unit, code) in [
            (1800, "SCRATCH_2", None, "BadRequest"),
            (4800, "SCRATCH_2", None, ""),
            (3600, "PERSISTENT_2", Some(125), "BadRequest"),
            (2400, "PERSISTENT_2", None, "BadRequest"),
            (2400, "PERSISTENT_2", Some(100), "InvalidPerUnitStorageThroughput"),
            (2400, "PERSISTENT_2", Some(250), ""),
        ] {
            let mut body = create(&subnet, &group);
            body.as_object_mut().unwrap().remove("ClientRequestToken");
            body["StorageCapacity"] = json!(capacity);
            body["LustreConfiguration"]["DeploymentType"] = json!(deployment);
            if let Some(n) = per_unit {
                body["LustreConfiguration"]["PerUnitStorageThroughput"] = json!(n);
            }
            let (status, answer) = aws.fsx("CreateFileSystem", body).await;
            if code.is_empty() {
                assert_eq!(status, 200, "{capacity} {deployment}: {answer}");
            } else {
                assert_eq!((status, answer["__type"].as_str()), (400, Some(code)), "{capacity} {deployment}: {answer}");
            }
        }
        let mut scratch_with_key = create(&subnet, &group);
        scratch_with_key["KmsKeyId"] = json!("alias/mine");
        let (_, body) = aws.fsx("CreateFileSystem", scratch_with_key).await;
        assert_eq!(body["__type"], "BadRequest");
        let mut two = create(&subnet, &group);
        two["SubnetIds"] = json!([subnet, subnet]);
        let (_, body) = aws.fsx("CreateFileSystem", two).await;
        assert_eq!(body["__type"], "BadRequest");
    }

    #[tokio::test]
    async fn unknown_networks_and_groups_without_lustre_ports_are_invalid_network_settings() {
        let aws = Aws::start().await;
        let (subnet, group) = network(&aws).await;
        let (status, body) = aws.fsx("CreateFileSystem", create("subnet-0000000000000000f", &group)).await;
        assert_eq!((status, body["__type"].as_str()), (400, Some("InvalidNetworkSettings")));
        assert_eq!(body["InvalidSubnetId"], "subnet-0000000000000000f");
        let (_, body) = aws.fsx("CreateFileSystem", create(&subnet, "sg-0000000000000000f")).await;
        assert_eq!(body["InvalidSecurityGroupId"], "sg-0000000000000000f");
        let vpc = aws.vpc("10.5.0.0/16").await;
        let subnet = aws.subnet(&vpc, "10.5.1.0/24", "us-east-1a").await;
        let closed = aws.group(&vpc, "closed").await;
        let (_, body) = aws.fsx("CreateFileSystem", create(&subnet, &closed)).await;
        assert_eq!(body["__type"], "InvalidNetworkSettings");
        assert!(body["Message"].as_str().unwrap().contains("port 988"), "{body}");
    }

    #[tokio::test]
    async fn delete_is_deleting_then_not_found_and_holds_the_group_until_gone() {
        let aws = Aws::start().await;
        let (subnet, group) = network(&aws).await;
        let (_, body) = aws.fsx("CreateFileSystem", create(&subnet, &group)).await;
        let id = body["FileSystem"]["FileSystemId"].as_str().unwrap().to_owned();
        aws.later().await;
        let (_, text) = aws.ec2("DeleteSecurityGroup", &[("GroupId", &group)]).await;
        assert!(text.contains("<Code>DependencyViolation</Code>"), "{text}");
        let (_, text) = aws.ec2("DeleteSubnet", &[("SubnetId", &subnet)]).await;
        assert!(text.contains("<Code>DependencyViolation</Code>"), "{text}");
        // The captured delete, with the SDK's auto-filled token.
        let delete = json!({
            "FileSystemId": id, "ClientRequestToken": "0b4a7a4e-3f7b-4c1e-9a57-5d7e3c2b1a00",
            "LustreConfiguration": { "SkipFinalBackup": true },
        });
        let (status, body) = aws.fsx("DeleteFileSystem", delete.clone()).await;
        assert_eq!(status, 200, "{body}");
        assert_eq!(body, json!({ "FileSystemId": id, "Lifecycle": "DELETING", "LustreResponse": {} }));
        let (_, body) = aws.fsx("DescribeFileSystems", json!({ "FileSystemIds": [id] })).await;
        assert_eq!(body["FileSystems"][0]["Lifecycle"], "DELETING");
        assert_eq!(aws.fsx("DeleteFileSystem", delete.clone()).await.0, 200);
        aws.later().await;
        let (status, body) = aws.fsx("DescribeFileSystems", json!({ "FileSystemIds": [id] })).await;
        assert_eq!((status, body["__type"].as_str()), (400, Some("FileSystemNotFound")));
        let (_, body) = aws.fsx("DeleteFileSystem", delete).await;
        assert_eq!(body["__type"], "FileSystemNotFound");
        aws.ec2_ok("DeleteSecurityGroup", &[("GroupId", &group)]).await;
    }

    #[tokio::test]
    async fn planted_foreign_file_systems_may_share_our_name() {
        let aws = Aws::start().await;
        let (subnet, group) = network(&aws).await;
        let foreign = aws.sim.aws_plant_foreign_fsx(REGION, &subnet, &[("Name", "bc-tenant1")]).unwrap();
        let (status, body) = aws.fsx("CreateFileSystem", create(&subnet, &group)).await;
        assert_eq!(status, 200);
        assert_ne!(body["FileSystem"]["FileSystemId"], foreign.as_str());
        let (_, body) = aws.fsx("DescribeFileSystems", json!({ "MaxResults": 1 })).await;
        assert_eq!(body["FileSystems"].as_array().unwrap().len(), 1);
        let next = body["NextToken"].as_str().unwrap().to_owned();
        let (_, body) = aws.fsx("DescribeFileSystems", json!({ "MaxResults": 1, "NextToken": next })).await;
        assert_eq!(body["FileSystems"][0]["Tags"][0]["Value"], "bc-tenant1");
        assert!(body.get("NextToken").is_none());
    }

    #[tokio::test]
    async fn a_failed_file_system_says_why() {
        let aws = Aws::start().await;
        let (subnet, group) = network(&aws).await;
        let (_, body) = aws.fsx("CreateFileSystem", create(&subnet, &group)).await;
        let id = body["FileSystem"]["FileSystemId"].as_str().unwrap().to_owned();
        assert!(aws.sim.aws_fail_fsx(&id, "no capacity"));
        aws.later().await;
        let (_, body) = aws.fsx("DescribeFileSystems", json!({ "FileSystemIds": [id] })).await;
        assert_eq!(body["FileSystems"][0]["Lifecycle"], "FAILED");
        assert_eq!(body["FileSystems"][0]["FailureDetails"]["Message"], "no capacity");
    }

    #[tokio::test]
    async fn an_unknown_operation_is_refused() {
        let aws = Aws::start().await;
        let (status, body) = aws.fsx("CreateBackup", json!({})).await;
        assert_eq!((status, body["__type"].as_str()), (400, Some("UnknownOperationException")));
    }
}
