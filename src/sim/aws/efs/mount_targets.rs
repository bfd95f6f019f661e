//! EFS mount targets (`/2015-02-01/mount-targets`): at most one per Availability Zone, all of a
//! file system's in one VPC (409 `MountTargetConflict`), only on an `available` file system (409
//! `IncorrectFileSystemLifeCycleState`); the subnet must exist (400 `SubnetNotFound`) and the
//! groups be in its VPC (400 `SecurityGroupNotFound`; none given: the VPC's default group).
//! Made `creating` (200), `available` after the action time; delete (204) `deleting`, then gone
//! (404 `MountTargetNotFound`). Its groups are read at `…/security-groups` and replaced there
//! (PUT, 204) once it is `available` (else 409 `IncorrectMountTargetState`). A mount target holds
//! its file system (`FileSystemInUse`) and its security groups (EC2 `DependencyViolation`) until
//! it is gone.
use std::collections::HashMap;

use axum::body::Bytes;
use axum::extract::{Extension, Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde_json::{Value, json};

use super::{bad_request, file_system_not_found, ok, page, parse, refuse};
use crate::sim::Sim;
use crate::sim::aws::{ACCOUNT, Caller, Change, Model, Refusal, new_id};

#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub(in crate::sim::aws) struct MountTargetRecord {
    pub(in crate::sim::aws) id: String,
    pub(in crate::sim::aws) file_system: String,
    pub(in crate::sim::aws) region: String,
    pub(in crate::sim::aws) subnet: String,
    pub(in crate::sim::aws) vpc: String,
    pub(in crate::sim::aws) zone: String,
    pub(in crate::sim::aws) groups: Vec<String>,
    pub(in crate::sim::aws) ip: String,
    /// The requester-managed network interface, `eni-…`.
    pub(in crate::sim::aws) interface: String,
    /// `creating`, `available`, `deleting`, or `error` (a create that failed).
    #[serde(deserialize_with = "crate::sim::word")]
    pub(in crate::sim::aws) state: crate::sim::Word,
}

fn mount_target_not_found(id: &str) -> Refusal {
    refuse(404, "MountTargetNotFound", format!("Mount target '{id}' does not exist."))
}

/// `us-east-1a` → `use1-az1`, the shape of AWS's zone ids.
pub(in crate::sim::aws) fn zone_id(zone: &str) -> String {
    let (region, letter) = zone.split_at(zone.len().saturating_sub(1));
    let short: String = region
        .split('-')
        .enumerate()
        .map(|(i, p)| if i == 0 || p.chars().all(|c| c.is_ascii_digit()) { p.to_owned() } else { p[..1].to_owned() })
        .collect();
    let n = letter.bytes().next().map_or(1, |b| b.saturating_sub(b'a') + 1);
    format!("{short}-az{n}")
}

impl MountTargetRecord {
    fn json(&self) -> Value {
        json!({
            "OwnerId": ACCOUNT, "MountTargetId": self.id, "FileSystemId": self.file_system, "SubnetId": self.subnet,
            "LifeCycleState": self.state, "IpAddress": self.ip, "NetworkInterfaceId": self.interface,
            "AvailabilityZoneId": zone_id(&self.zone), "AvailabilityZoneName": self.zone, "VpcId": self.vpc,
        })
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct MountTargetCreate {
    file_system_id: Option<String>,
    subnet_id: Option<String>,
    security_groups: Option<Vec<String>>,
    ip_address: Option<String>,
}

pub(in crate::sim::aws) async fn mount_create(
    State(sim): State<Sim>,
    Extension(caller): Extension<Caller>,
    body: Bytes,
) -> Result<Response, Refusal> {
    let body: MountTargetCreate = parse(&body)?;
    let (Some(fs_id), Some(subnet_id)) = (body.file_system_id, body.subnet_id) else {
        return Err(bad_request("FileSystemId and SubnetId are required."));
    };
    sim.count_name("efs.CreateMountTarget", &fs_id);
    let region = caller.region;
    let created = sim.with_aws(|model| {
        let fs = model
            .file_systems
            .iter()
            .find(|f| f.region == region && f.id == fs_id)
            .ok_or_else(|| file_system_not_found(&fs_id))?;
        if fs.state != "available" {
            let message = format!("File system '{fs_id}' is in the '{}' state, not 'available'.", fs.state);
            return Err(refuse(409, "IncorrectFileSystemLifeCycleState", message));
        }
        let subnet = model
            .subnet_in(&region, &subnet_id)
            .ok_or_else(|| refuse(400, "SubnetNotFound", format!("The subnet ID '{subnet_id}' does not exist")))?
            .clone();
        let groups = match body.security_groups {
            Some(groups) => groups,
            None => model.groups.iter().filter(|g| g.vpc == subnet.vpc && g.default).map(|g| g.id.clone()).collect(),
        };
        if groups.len() > 5 {
            return Err(refuse(400, "SecurityGroupLimitExceeded", "A mount target takes at most 5 security groups."));
        }
        if let Some(missing) = groups.iter().find(|g| !model.groups.iter().any(|r| &&r.id == g && r.vpc == subnet.vpc))
        {
            let message = format!("The security group '{missing}' does not exist in VPC '{}'", subnet.vpc);
            return Err(refuse(400, "SecurityGroupNotFound", message));
        }
        let siblings: Vec<&MountTargetRecord> = model.mount_targets.iter().filter(|m| m.file_system == fs_id).collect();
        if siblings.iter().any(|m| m.vpc != subnet.vpc) {
            return Err(refuse(409, "MountTargetConflict", "All mount targets of a file system must be in one VPC."));
        }
        if siblings.iter().any(|m| m.zone == subnet.zone) {
            let message =
                format!("File system '{fs_id}' already has a mount target in availability zone '{}'", subnet.zone);
            return Err(refuse(409, "MountTargetConflict", message));
        }
        let ip = match body.ip_address {
            Some(ip) => {
                let inside = ip
                    .parse::<std::net::Ipv4Addr>()
                    .ok()
                    .is_some_and(|a| crate::cidr::overlaps((u32::from(a), 32), subnet.cidr));
                if !inside {
                    return Err(bad_request(format!("IP address {ip} is not in subnet '{subnet_id}'.")));
                }
                if model.mount_targets.iter().any(|m| m.ip == ip) || model.instances.iter().any(|i| i.private_ip == ip)
                {
                    return Err(refuse(409, "IpAddressInUse", format!("IP address {ip} is already in use.")));
                }
                ip
            }
            None => model.next_address(subnet.cidr),
        };
        let record = MountTargetRecord {
            id: new_id("fsmt"),
            file_system: fs_id.clone(),
            region: region.clone(),
            subnet: subnet.id.clone(),
            vpc: subnet.vpc.clone(),
            zone: subnet.zone.clone(),
            groups,
            ip,
            interface: new_id("eni"),
            state: "creating",
        };
        let json = record.json();
        model.later(Change::MountTargetAvailable(record.id.clone()));
        model.mount_targets.push(record);
        Ok(json)
    })?;
    Ok(ok(StatusCode::OK, created))
}

pub(in crate::sim::aws) async fn mount_describe(
    State(sim): State<Sim>,
    Extension(caller): Extension<Caller>,
    Query(query): Query<HashMap<String, String>>,
) -> Result<Response, Refusal> {
    let selectors =
        ["FileSystemId", "MountTargetId", "AccessPointId"].iter().filter(|k| query.contains_key(**k)).count();
    if selectors != 1 {
        return Err(bad_request("Specify exactly one of FileSystemId, MountTargetId or AccessPointId."));
    }
    if let Some(id) = query.get("AccessPointId") {
        return Err(refuse(404, "AccessPointNotFound", format!("Access point '{id}' does not exist.")));
    }
    let items = sim.with_aws(|model| {
        if let Some(id) = query.get("FileSystemId") {
            if !model.file_systems.iter().any(|f| f.region == caller.region && &f.id == id) {
                return Err(file_system_not_found(id));
            }
            return Ok(model
                .mount_targets
                .iter()
                .filter(|m| &m.file_system == id)
                .map(MountTargetRecord::json)
                .collect());
        }
        let id = query.get("MountTargetId").map(String::as_str).unwrap_or_default();
        match model.mount_targets.iter().find(|m| m.region == caller.region && m.id == id) {
            Some(m) => Ok(vec![m.json()]),
            None => Err(mount_target_not_found(id)),
        }
    })?;
    Ok(ok(StatusCode::OK, page(items, &query, "MountTargets", sim.config().page_limit)?))
}

pub(in crate::sim::aws) async fn mount_remove(
    State(sim): State<Sim>,
    Extension(caller): Extension<Caller>,
    Path(id): Path<String>,
) -> Result<Response, Refusal> {
    sim.with_aws(|model| {
        let record = model
            .mount_targets
            .iter_mut()
            .find(|m| m.region == caller.region && m.id == id)
            .ok_or_else(|| mount_target_not_found(&id))?;
        if record.state != "deleting" {
            record.state = "deleting";
            model.pending.retain(|(_, c)| !matches!(c, Change::MountTargetAvailable(m) if *m == id));
            model.later(Change::MountTargetGone(id.clone()));
        }
        Ok(StatusCode::NO_CONTENT.into_response())
    })
}

pub(in crate::sim::aws) async fn mount_groups(
    State(sim): State<Sim>,
    Extension(caller): Extension<Caller>,
    Path(id): Path<String>,
) -> Result<Response, Refusal> {
    let groups = sim.with_aws(|model| {
        model
            .mount_targets
            .iter()
            .find(|m| m.region == caller.region && m.id == id)
            .map(|m| m.groups.clone())
            .ok_or_else(|| mount_target_not_found(&id))
    })?;
    Ok(ok(StatusCode::OK, json!({ "SecurityGroups": groups })))
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct GroupsModify {
    #[serde(default)]
    security_groups: Vec<String>,
}

/// ModifyMountTargetSecurityGroups (204): only on an `available` mount target, with groups of its
/// VPC.
pub(in crate::sim::aws) async fn mount_groups_modify(
    State(sim): State<Sim>,
    Extension(caller): Extension<Caller>,
    Path(id): Path<String>,
    body: Bytes,
) -> Result<Response, Refusal> {
    let body: GroupsModify = parse(&body)?;
    if body.security_groups.len() > 5 {
        return Err(refuse(400, "SecurityGroupLimitExceeded", "A mount target takes at most 5 security groups."));
    }
    sim.with_aws(|model| {
        let target = model
            .mount_targets
            .iter()
            .find(|m| m.region == caller.region && m.id == id)
            .ok_or_else(|| mount_target_not_found(&id))?;
        if target.state != "available" {
            let message = format!("Mount target '{id}' is in the '{}' state, not 'available'.", target.state);
            return Err(refuse(409, "IncorrectMountTargetState", message));
        }
        let vpc = target.vpc.clone();
        if let Some(missing) =
            body.security_groups.iter().find(|g| !model.groups.iter().any(|r| &&r.id == g && r.vpc == vpc))
        {
            let message = format!("The security group '{missing}' does not exist in VPC '{vpc}'");
            return Err(refuse(400, "SecurityGroupNotFound", message));
        }
        let target = model.mount_targets.iter_mut().find(|m| m.id == id).expect("found above");
        target.groups = body.security_groups;
        Ok(StatusCode::NO_CONTENT.into_response())
    })
}

impl Model {
    pub(in crate::sim::aws) fn mount_target_available(&mut self, id: &str) {
        if let Some(m) = self.mount_targets.iter_mut().find(|m| m.id == id && m.state == "creating") {
            m.state = "available";
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::sim::aws::testing::Aws;

    const CREATE: &str = "/2015-02-01/file-systems";

    /// A VPC with subnets in two zones and a group; their ids.
    async fn network(aws: &Aws) -> (String, String, String, String) {
        let vpc = aws.vpc("10.0.0.0/16").await;
        let a = aws.subnet(&vpc, "10.0.1.0/24", "us-east-1a").await;
        let b = aws.subnet(&vpc, "10.0.2.0/24", "us-east-1b").await;
        let group = aws.group(&vpc, "bc-efs").await;
        (vpc, a, b, group)
    }

    #[tokio::test]
    async fn mount_targets_need_an_available_file_system_and_one_per_zone() {
        let aws = Aws::start().await;
        let (vpc, a, b, group) = network(&aws).await;
        let (_, _, fs) = aws.efs_post(CREATE, json!({ "CreationToken": "bc-t" })).await;
        let fs = fs["FileSystemId"].as_str().unwrap().to_owned();
        let mount = json!({ "FileSystemId": fs, "SecurityGroups": [group], "SubnetId": a });
        let (status, _, body) = aws.efs_post("/2015-02-01/mount-targets", mount.clone()).await;
        assert_eq!((status, body["ErrorCode"].as_str()), (409, Some("IncorrectFileSystemLifeCycleState")));
        aws.later().await;
        let (status, _, body) = aws.efs_post("/2015-02-01/mount-targets", mount.clone()).await;
        assert_eq!(status, 200, "{body}");
        assert_eq!(body["LifeCycleState"], "creating");
        assert_eq!(body["VpcId"], vpc.as_str());
        assert_eq!(
            (body["AvailabilityZoneName"].as_str(), body["AvailabilityZoneId"].as_str()),
            (Some("us-east-1a"), Some("use1-az1"))
        );
        assert!(body["MountTargetId"].as_str().unwrap().starts_with("fsmt-"));
        assert!(body["IpAddress"].as_str().unwrap().starts_with("10.0.1."));
        assert!(body["NetworkInterfaceId"].as_str().unwrap().starts_with("eni-"));
        let (status, _, body) = aws.efs_post("/2015-02-01/mount-targets", mount).await;
        assert_eq!((status, body["ErrorCode"].as_str()), (409, Some("MountTargetConflict")));
        let other = json!({ "FileSystemId": fs, "SecurityGroups": [group], "SubnetId": b });
        assert_eq!(aws.efs_post("/2015-02-01/mount-targets", other).await.0, 200);
        let missing = json!({ "FileSystemId": fs, "SecurityGroups": [group], "SubnetId": "subnet-0000000000000000f" });
        let (status, _, body) = aws.efs_post("/2015-02-01/mount-targets", missing).await;
        assert_eq!((status, body["ErrorCode"].as_str()), (400, Some("SubnetNotFound")));
        let wrong = json!({ "FileSystemId": fs, "SecurityGroups": ["sg-0000000000000000f"], "SubnetId": a });
        let (status, _, body) = aws.efs_post("/2015-02-01/mount-targets", wrong).await;
        assert_eq!((status, body["ErrorCode"].as_str()), (400, Some("SecurityGroupNotFound")));
        // A group of another VPC is as unknown.
        let elsewhere = aws.vpc("10.7.0.0/16").await;
        let foreign_group = aws.group(&elsewhere, "g").await;
        let wrong = json!({ "FileSystemId": fs, "SecurityGroups": [foreign_group], "SubnetId": a });
        let (status, _, body) = aws.efs_post("/2015-02-01/mount-targets", wrong).await;
        assert_eq!((status, body["ErrorCode"].as_str()), (400, Some("SecurityGroupNotFound")));
        aws.later().await;
        let (_, _, listed) = aws.efs_get(&format!("/2015-02-01/mount-targets?FileSystemId={fs}")).await;
        let first = listed["MountTargets"][0]["MountTargetId"].as_str().unwrap().to_owned();
        let (status, _, groups) = aws.efs_get(&format!("/2015-02-01/mount-targets/{first}/security-groups")).await;
        assert_eq!((status, groups), (200, json!({ "SecurityGroups": [group] })));
        let (_, _, body) = aws.efs_get(&format!("/2015-02-01/mount-targets?FileSystemId={fs}")).await;
        let targets = body["MountTargets"].as_array().unwrap();
        assert_eq!(targets.len(), 2);
        assert!(targets.iter().all(|t| t["LifeCycleState"] == "available"), "{body}");
        let (_, _, body) = aws.efs_get(&format!("{CREATE}?FileSystemId={fs}")).await;
        assert_eq!(body["FileSystems"][0]["NumberOfMountTargets"], 2);
    }

    #[tokio::test]
    async fn a_file_system_is_in_use_until_its_mount_targets_are_gone_and_so_is_their_group() {
        let aws = Aws::start().await;
        let (_, a, _, group) = network(&aws).await;
        let fs = aws.efs("bc-t").await;
        let mount = json!({ "FileSystemId": fs, "SecurityGroups": [group], "SubnetId": a });
        let (_, _, body) = aws.efs_post("/2015-02-01/mount-targets", mount).await;
        let target = body["MountTargetId"].as_str().unwrap().to_owned();
        let (status, headers, body) = aws.efs_delete(&format!("{CREATE}/{fs}")).await;
        assert_eq!((status, body["ErrorCode"].as_str()), (409, Some("FileSystemInUse")));
        assert_eq!(headers["x-amzn-errortype"], "FileSystemInUse");
        let (_, text) = aws.ec2("DeleteSecurityGroup", &[("GroupId", &group)]).await;
        assert!(text.contains("<Code>DependencyViolation</Code>"), "{text}");
        let (status, _, body) = aws.efs_delete(&format!("/2015-02-01/mount-targets/{target}")).await;
        assert_eq!((status, body), (204, serde_json::Value::Null));
        // A deleting mount target still counts.
        let (_, _, body) = aws.efs_get(&format!("/2015-02-01/mount-targets?MountTargetId={target}")).await;
        assert_eq!(body["MountTargets"][0]["LifeCycleState"], "deleting");
        assert_eq!(aws.efs_delete(&format!("{CREATE}/{fs}")).await.0, 409);
        aws.later().await;
        let (status, _, body) = aws.efs_get(&format!("/2015-02-01/mount-targets?MountTargetId={target}")).await;
        assert_eq!((status, body["ErrorCode"].as_str()), (404, Some("MountTargetNotFound")));
        aws.ec2_ok("DeleteSecurityGroup", &[("GroupId", &group)]).await;
        assert_eq!(aws.efs_delete(&format!("{CREATE}/{fs}")).await.0, 204);
        let (_, _, body) = aws.efs_get(&format!("{CREATE}?FileSystemId={fs}")).await;
        assert_eq!(body["FileSystems"][0]["LifeCycleState"], "deleting");
        aws.later().await;
        let (status, _, _) = aws.efs_get(&format!("{CREATE}?FileSystemId={fs}")).await;
        assert_eq!(status, 404);
        let (status, _, body) = aws.efs_delete(&format!("{CREATE}/{fs}")).await;
        assert_eq!((status, body["ErrorCode"].as_str()), (404, Some("FileSystemNotFound")));
    }

    #[tokio::test]
    async fn a_mount_targets_groups_change_only_once_it_is_available() {
        let aws = Aws::start().await;
        let (vpc, a, _, group) = network(&aws).await;
        let other = aws.group(&vpc, "bc-other").await;
        let fs = aws.efs("bc-t").await;
        let mount = json!({ "FileSystemId": fs, "SecurityGroups": [group], "SubnetId": a });
        let (_, _, body) = aws.efs_post("/2015-02-01/mount-targets", mount).await;
        let target = body["MountTargetId"].as_str().unwrap().to_owned();
        let path = format!("/2015-02-01/mount-targets/{target}/security-groups");
        let (status, _, body) = aws.efs_put(&path, json!({ "SecurityGroups": [other] })).await;
        assert_eq!((status, body["ErrorCode"].as_str()), (409, Some("IncorrectMountTargetState")));
        aws.later().await;
        let (status, _, _) = aws.efs_put(&path, json!({ "SecurityGroups": [other] })).await;
        assert_eq!(status, 204);
        let (_, _, body) = aws.efs_get(&path).await;
        assert_eq!(body, json!({ "SecurityGroups": [other] }));
        // The first group is free again; the second is held.
        aws.ec2_ok("DeleteSecurityGroup", &[("GroupId", &group)]).await;
        let (_, text) = aws.ec2("DeleteSecurityGroup", &[("GroupId", &other)]).await;
        assert!(text.contains("<Code>DependencyViolation</Code>"), "{text}");
    }

    #[tokio::test]
    async fn describe_mount_targets_takes_exactly_one_selector() {
        let aws = Aws::start().await;
        let (status, _, body) = aws.efs_get("/2015-02-01/mount-targets").await;
        assert_eq!((status, body["ErrorCode"].as_str()), (400, Some("BadRequest")));
        let (status, _, body) = aws.efs_get("/2015-02-01/mount-targets?FileSystemId=fs-0123456789abcdef0").await;
        assert_eq!((status, body["ErrorCode"].as_str()), (404, Some("FileSystemNotFound")));
    }
}
