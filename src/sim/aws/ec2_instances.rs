//! EC2 instances, as tenant machines need them: RunInstances of exactly one instance into a subnet
//! with security groups, base64 user data and a client token (the same token and parameters
//! answer the same instance; other parameters `IdempotentParameterMismatch`), `pending →
//! running`; TerminateInstances `shutting-down → terminated`, a terminated instance still
//! described (the sim never forgets it). The user data stays readable through
//! DescribeInstanceAttribute (`Attribute=userData`) so tests can check what a machine was given.
//! ModifyInstanceAttribute replaces a machine's security groups (`GroupId.N`, of its VPC, at
//! least one and at most five: the per-interface quota).
use super::ec2::{Tags, known_filters, passes, refuse, required};
use super::xml::{Params, el, items, tag_set};
use super::{ACCOUNT, Change, Model, Refusal, new_id};

#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub(super) struct InstanceRecord {
    pub(super) id: String,
    pub(super) reservation: String,
    pub(super) region: String,
    pub(super) subnet: String,
    pub(super) vpc: String,
    pub(super) zone: String,
    pub(super) groups: Vec<String>,
    pub(super) image: String,
    pub(super) instance_type: String,
    /// As given: base64.
    pub(super) user_data: Option<String>,
    pub(super) client_token: Option<String>,
    /// The request's parameters, for the client token's check.
    signature: Vec<(String, String)>,
    pub(super) tags: Tags,
    /// `pending`, `running`, `shutting-down`, `terminated`.
    #[serde(deserialize_with = "crate::sim::word")]
    pub(super) state: crate::sim::Word,
    pub(super) private_ip: String,
    /// The primary network interface, `eni-…`.
    pub(super) interface: String,
    launch_time: String,
}

fn state_code(state: &str) -> u16 {
    match state {
        "pending" => 0,
        "running" => 16,
        "shutting-down" => 32,
        "terminated" => 48,
        "stopping" => 64,
        _ => 80,
    }
}

fn state_xml(name: &str, state: &str) -> String {
    format!("<{name}>{}{}</{name}>", el("code", &state_code(state).to_string()), el("name", state))
}

impl InstanceRecord {
    fn xml(&self, model: &Model) -> String {
        let groups = self.groups.iter().map(|g| {
            let name = model.groups.iter().find(|r| &r.id == g).map_or("", |r| r.name.as_str());
            format!("{}{}", el("groupId", g), el("groupName", name))
        });
        let live = self.state != "terminated";
        let network = if live {
            format!(
                "{}{}{}",
                el("subnetId", &self.subnet),
                el("vpcId", &self.vpc),
                el("privateIpAddress", &self.private_ip)
            )
        } else {
            String::new()
        };
        format!(
            "{}{}{}{}{}{}<placement>{}</placement>{network}{}{}{}{}",
            el("instanceId", &self.id),
            el("imageId", &self.image),
            state_xml("instanceState", self.state),
            el("instanceType", &self.instance_type),
            el("launchTime", &self.launch_time),
            el("amiLaunchIndex", "0"),
            el("availabilityZone", &self.zone),
            items("groupSet", groups),
            el("clientToken", self.client_token.as_deref().unwrap_or_default()),
            el("architecture", "x86_64"),
            tag_set(&self.tags)
        )
    }
}

/// Whether `text` is base64 (standard alphabet, padded).
fn is_base64(text: &str) -> bool {
    let body = text.trim_end_matches('=');
    text.len().is_multiple_of(4)
        && text.len() - body.len() <= 2
        && body.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'+' || b == b'/')
}

/// EC2's default quota of security groups per network interface.
const GROUPS_PER_INTERFACE: usize = 5;

fn too_many_groups() -> Refusal {
    refuse(
        "SecurityGroupsPerInterfaceLimitExceeded",
        "The maximum number of security groups per interface has been reached.",
    )
}

fn not_found(id: &str) -> Refusal {
    refuse("InvalidInstanceID.NotFound", format!("The instance ID '{id}' does not exist"))
}

impl Model {
    pub(super) fn instance_state(&mut self, id: &str, from: &str, to: &'static str) {
        if let Some(instance) = self.instances.iter_mut().find(|i| i.id == id && i.state == from) {
            instance.state = to;
        }
    }

    fn reservation_xml(&self, instances: &[&InstanceRecord]) -> String {
        let reservation = instances.first().map_or(String::new(), |i| i.reservation.clone());
        format!(
            "{}{}{}{}",
            el("reservationId", &reservation),
            el("ownerId", ACCOUNT),
            items("groupSet", Vec::new()),
            items("instancesSet", instances.iter().map(|i| i.xml(self)))
        )
    }

    pub(super) fn instance_run(&mut self, region: &str, params: &Params) -> Result<String, Refusal> {
        let signature = params.signature();
        if let Some(token) = params.get("ClientToken").filter(|t| !t.is_empty())
            && let Some(earlier) =
                self.instances.iter().find(|i| i.region == region && i.client_token.as_deref() == Some(token))
        {
            if earlier.signature != signature {
                return Err(refuse(
                    "IdempotentParameterMismatch",
                    "The client token you have provided is associated with a resource that is already deleted or has different parameters.",
                ));
            }
            return Ok(self.reservation_xml(&[earlier]));
        }
        let image = required(params, "ImageId")?.to_owned();
        let instance_type = params.get("InstanceType").unwrap_or("m1.small").to_owned();
        let (min, max) = (required(params, "MinCount")?, required(params, "MaxCount")?);
        if min != "1" || max != "1" {
            return Err(refuse(
                "InvalidParameterValue",
                "The sim runs one instance per call: MinCount and MaxCount must be 1",
            ));
        }
        let subnet_id =
            params.get("SubnetId").ok_or_else(|| refuse("VPCIdNotSpecified", "No default VPC for this user"))?;
        let subnet = self
            .subnet_in(region, subnet_id)
            .ok_or_else(|| refuse("InvalidSubnetID.NotFound", format!("The subnet ID '{subnet_id}' does not exist")))?
            .clone();
        let mut groups = params.list("SecurityGroupId");
        for group in &groups {
            if self.groups.iter().all(|g| &g.id != group || g.vpc != subnet.vpc) {
                return Err(refuse(
                    "InvalidGroup.NotFound",
                    format!("The security group '{group}' does not exist in VPC '{}'", subnet.vpc),
                ));
            }
        }
        if groups.is_empty() {
            groups.extend(self.groups.iter().filter(|g| g.vpc == subnet.vpc && g.default).map(|g| g.id.clone()));
        }
        if groups.len() > GROUPS_PER_INTERFACE {
            return Err(too_many_groups());
        }
        let user_data = params.get("UserData").map(str::to_owned);
        if user_data.as_deref().is_some_and(|d| !is_base64(d)) {
            return Err(refuse("InvalidParameterValue", "Invalid BASE64 encoding of user data."));
        }
        let record = InstanceRecord {
            id: new_id("i"),
            reservation: new_id("r"),
            region: region.to_owned(),
            subnet: subnet.id.clone(),
            vpc: subnet.vpc.clone(),
            zone: subnet.zone.clone(),
            groups,
            image,
            instance_type,
            user_data,
            client_token: params.get("ClientToken").filter(|t| !t.is_empty()).map(str::to_owned),
            signature,
            tags: params.tags("instance"),
            state: "pending",
            private_ip: self.next_address(subnet.cidr),
            interface: new_id("eni"),
            launch_time: chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
        };
        let id = record.id.clone();
        self.instances.push(record);
        self.later(Change::InstanceRunning(id));
        let instance = self.instances.last().expect("just pushed");
        Ok(self.reservation_xml(&[instance]))
    }

    pub(super) fn instance_describe(&self, region: &str, params: &Params) -> Result<String, Refusal> {
        let ids = params.list("InstanceId");
        for id in &ids {
            if !self.instances.iter().any(|i| i.region == region && &i.id == id) {
                return Err(not_found(id));
            }
        }
        let filters = params.filters();
        let known = [
            "instance-id",
            "instance-state-name",
            "subnet-id",
            "vpc-id",
            "instance.group-id",
            "availability-zone",
            "client-token",
        ];
        known_filters(&filters, &known)?;
        let mut found = Vec::new();
        for instance in self.instances.iter().filter(|i| i.region == region && (ids.is_empty() || ids.contains(&i.id)))
        {
            let field = |name: &str| match name {
                "instance-id" => Some(vec![instance.id.clone()]),
                "instance-state-name" => Some(vec![instance.state.to_owned()]),
                "subnet-id" => Some(vec![instance.subnet.clone()]),
                "vpc-id" => Some(vec![instance.vpc.clone()]),
                "instance.group-id" => Some(instance.groups.clone()),
                "availability-zone" => Some(vec![instance.zone.clone()]),
                "client-token" => Some(instance.client_token.iter().cloned().collect()),
                _ => None,
            };
            if passes(&filters, &instance.tags, field)? {
                found.push(self.reservation_xml(&[instance]));
            }
        }
        self.ec2_page(params, "reservationSet", found)
    }

    pub(super) fn instance_attribute(&self, region: &str, params: &Params) -> Result<String, Refusal> {
        let id = required(params, "InstanceId")?;
        let instance = self.instances.iter().find(|i| i.region == region && i.id == id).ok_or_else(|| not_found(id))?;
        let value = match required(params, "Attribute")? {
            "userData" => instance
                .user_data
                .as_deref()
                .map_or("<userData/>".to_owned(), |d| format!("<userData>{}</userData>", el("value", d))),
            "instanceType" => format!("<instanceType>{}</instanceType>", el("value", &instance.instance_type)),
            other => {
                return Err(refuse(
                    "InvalidParameterValue",
                    format!("Value ({other}) for parameter attribute is invalid."),
                ));
            }
        };
        Ok(format!("{}{value}", el("instanceId", &instance.id)))
    }

    /// Only `GroupId.N` (the groups, replaced); other attributes are not the sim's.
    pub(super) fn instance_modify_attribute(&mut self, region: &str, params: &Params) -> Result<String, Refusal> {
        let id = required(params, "InstanceId")?;
        let instance = self.instances.iter().find(|i| i.region == region && i.id == id).ok_or_else(|| not_found(id))?;
        let groups = params.list("GroupId");
        if groups.is_empty() {
            return Err(refuse("InvalidParameterCombination", "The sim modifies the groups only: give GroupId.N"));
        }
        if instance.state == "terminated" || instance.state == "shutting-down" {
            let message = format!("The instance '{id}' is not in a state from which it can be modified.");
            return Err(refuse("IncorrectInstanceState", message));
        }
        for group in &groups {
            if !self.groups.iter().any(|g| &g.id == group && g.vpc == instance.vpc) {
                return Err(refuse(
                    "InvalidGroup.NotFound",
                    format!("The security group '{group}' does not exist in VPC '{}'", instance.vpc),
                ));
            }
        }
        if groups.len() > GROUPS_PER_INTERFACE {
            return Err(too_many_groups());
        }
        let mut unique = groups.clone();
        unique.dedup();
        let instance = self.instances.iter_mut().find(|i| i.region == region && i.id == id).expect("found above");
        instance.groups = unique;
        Ok(el("return", "true"))
    }

    pub(super) fn instance_terminate(&mut self, region: &str, params: &Params) -> Result<String, Refusal> {
        let ids = params.list("InstanceId");
        if ids.is_empty() {
            return Err(refuse("MissingParameter", "The request must contain the parameter InstanceId"));
        }
        for id in &ids {
            if !self.instances.iter().any(|i| i.region == region && &i.id == id) {
                return Err(not_found(id));
            }
        }
        let mut changes = Vec::new();
        let due = self.due();
        for id in &ids {
            let instance = self.instances.iter_mut().find(|i| &i.id == id).expect("checked above");
            let previous = instance.state;
            if previous != "terminated" && previous != "shutting-down" {
                instance.state = "shutting-down";
                self.pending.retain(|(_, c)| !matches!(c, Change::InstanceRunning(i) if i == id));
                self.pending.push((due, Change::InstanceTerminated(id.clone())));
            }
            changes.push(format!(
                "{}{}{}",
                el("instanceId", id),
                state_xml("currentState", instance.state),
                state_xml("previousState", previous)
            ));
        }
        Ok(items("instancesSet", changes))
    }
}

impl crate::sim::Sim {
    /// The user data EC2 instance `id` was run with, decoded; for tests of what a machine boots.
    pub fn aws_user_data(&self, id: &str) -> Option<String> {
        use base64::Engine as _;
        let encoded = self.with_aws(|model| model.instances.iter().find(|i| i.id == id)?.user_data.clone())?;
        let bytes = base64::engine::general_purpose::STANDARD.decode(encoded).ok()?;
        String::from_utf8(bytes).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::{Aws, between, count};

    async fn network(aws: &Aws) -> (String, String, String) {
        let vpc = aws.vpc("10.0.0.0/16").await;
        let subnet = aws.subnet(&vpc, "10.0.1.0/24", "us-east-1a").await;
        let group = aws.group(&vpc, "machines").await;
        (vpc, subnet, group)
    }

    fn run<'a>(subnet: &'a str, group: &'a str, token: &'a str) -> Vec<(&'a str, &'a str)> {
        vec![
            ("ImageId", "ami-0123456789abcdef0"),
            ("InstanceType", "t3.micro"),
            ("MinCount", "1"),
            ("MaxCount", "1"),
            ("SubnetId", subnet),
            ("SecurityGroupId.1", group),
            ("UserData", "I2Nsb3VkLWNvbmZpZwo="),
            ("ClientToken", token),
            ("TagSpecification.1.ResourceType", "instance"),
            ("TagSpecification.1.Tag.1.Key", "Name"),
            ("TagSpecification.1.Tag.1.Value", "bc-m1"),
        ]
    }

    #[tokio::test]
    async fn an_instance_runs_after_the_action_time_and_keeps_its_user_data() {
        let aws = Aws::start().await;
        let (_, subnet, group) = network(&aws).await;
        let text = aws.ec2_ok("RunInstances", &run(&subnet, &group, "tok-1")).await;
        let id = between(&text, "<instanceId>", "</instanceId>");
        assert!(id.starts_with("i-") && id.len() == 19, "{id}");
        assert!(text.contains("<instanceState><code>0</code><name>pending</name></instanceState>"), "{text}");
        aws.later().await;
        let text =
            aws.ec2_ok("DescribeInstances", &[("Filter.1.Name", "tag:Name"), ("Filter.1.Value.1", "bc-m1")]).await;
        assert!(text.contains("<name>running</name>") && text.contains("<privateIpAddress>10.0.1."), "{text}");
        let text = aws.ec2_ok("DescribeInstanceAttribute", &[("InstanceId", &id), ("Attribute", "userData")]).await;
        assert!(text.contains("<userData><value>I2Nsb3VkLWNvbmZpZwo=</value></userData>"), "{text}");
        // The group is in use while the instance lives.
        let (_, text) = aws.ec2("DeleteSecurityGroup", &[("GroupId", &group)]).await;
        assert!(text.contains("<Code>DependencyViolation</Code>"), "{text}");
        let (_, text) = aws.ec2("DeleteSubnet", &[("SubnetId", &subnet)]).await;
        assert!(text.contains("<Code>DependencyViolation</Code>"), "{text}");
    }

    #[tokio::test]
    async fn the_same_client_token_answers_the_same_instance() {
        let aws = Aws::start().await;
        let (_, subnet, group) = network(&aws).await;
        let first =
            between(&aws.ec2_ok("RunInstances", &run(&subnet, &group, "tok-1")).await, "<instanceId>", "</instanceId>");
        let again =
            between(&aws.ec2_ok("RunInstances", &run(&subnet, &group, "tok-1")).await, "<instanceId>", "</instanceId>");
        assert_eq!(first, again);
        let mut other = run(&subnet, &group, "tok-1");
        other[1] = ("InstanceType", "t3.large");
        let (status, text) = aws.ec2("RunInstances", &other).await;
        assert_eq!(status, 400);
        assert!(text.contains("<Code>IdempotentParameterMismatch</Code>"), "{text}");
        let text = aws.ec2_ok("DescribeInstances", &[]).await;
        assert_eq!(count(&text, "<instanceId>"), 1, "{text}");
    }

    #[tokio::test]
    async fn terminate_shuts_down_then_terminates_and_the_instance_is_still_described() {
        let aws = Aws::start().await;
        let (_, subnet, group) = network(&aws).await;
        let id =
            between(&aws.ec2_ok("RunInstances", &run(&subnet, &group, "t")).await, "<instanceId>", "</instanceId>");
        let text = aws.ec2_ok("TerminateInstances", &[("InstanceId.1", &id)]).await;
        assert!(text.contains("<currentState><code>32</code><name>shutting-down</name></currentState>"), "{text}");
        aws.later().await;
        let text = aws
            .ec2_ok(
                "DescribeInstances",
                &[("Filter.1.Name", "instance-state-name"), ("Filter.1.Value.1", "terminated")],
            )
            .await;
        assert!(text.contains(&id), "{text}");
        aws.ec2_ok("DeleteSecurityGroup", &[("GroupId", &group)]).await;
        aws.ec2_ok("DeleteSubnet", &[("SubnetId", &subnet)]).await;
        let (_, text) = aws.ec2("DescribeInstances", &[("InstanceId.1", "i-00000000000000000")]).await;
        assert!(text.contains("<Code>InvalidInstanceID.NotFound</Code>"), "{text}");
    }

    #[tokio::test]
    async fn bad_user_data_and_counts_other_than_one_are_refused() {
        let aws = Aws::start().await;
        let (_, subnet, group) = network(&aws).await;
        let mut params = run(&subnet, &group, "");
        params[6] = ("UserData", "not base64!");
        let (status, text) = aws.ec2("RunInstances", &params).await;
        assert_eq!(status, 400);
        assert!(text.contains("Invalid BASE64 encoding of user data."), "{text}");
        let mut params = run(&subnet, &group, "");
        params[3] = ("MaxCount", "2");
        let (_, text) = aws.ec2("RunInstances", &params).await;
        assert!(text.contains("<Code>InvalidParameterValue</Code>"), "{text}");
    }

    #[tokio::test]
    async fn an_instances_groups_are_replaced_whole_at_most_five_and_never_none() {
        let aws = Aws::start().await;
        let (vpc, subnet, group) = network(&aws).await;
        let text = aws.ec2_ok("RunInstances", &run(&subnet, &group, "g")).await;
        let id = between(&text, "<instanceId>", "</instanceId>");
        let other = aws.group(&vpc, "other").await;
        let set = |groups: Vec<String>| {
            let mut params = vec![("InstanceId".to_owned(), id.clone())];
            params.extend(groups.into_iter().enumerate().map(|(n, g)| (format!("GroupId.{}", n + 1), g)));
            params
        };
        let call = |p: Vec<(String, String)>| {
            let aws = &aws;
            async move {
                let refs: Vec<(&str, &str)> = p.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
                aws.ec2("ModifyInstanceAttribute", &refs).await
            }
        };
        let (status, text) = call(set(vec![other.clone()])).await;
        assert_eq!(status, 200, "{text}");
        let described = aws.ec2_ok("DescribeInstances", &[("InstanceId.1", &id)]).await;
        assert!(
            described.contains(&other) && !described.contains(&format!("<groupId>{group}</groupId>")),
            "{described}"
        );
        let (status, text) = call(set(Vec::new())).await;
        assert_eq!(status, 400, "at least one group: {text}");
        let mut six = Vec::new();
        for n in 0..6 {
            six.push(aws.group(&vpc, &format!("g{n}")).await);
        }
        let (_, text) = call(set(six)).await;
        assert!(text.contains("<Code>SecurityGroupsPerInterfaceLimitExceeded</Code>"), "{text}");
        assert_eq!(count(&aws.ec2_ok("DescribeInstances", &[("InstanceId.1", &id)]).await, "<groupId>"), 1);
    }
}
