//! EC2's query face (`POST /`, `Action=…&Version=2016-11-15`): the dispatch to every EC2
//! operation, the filter rules they share, and VPCs and subnets. A VPC gets its `default` security
//! group when made and loses it when deleted; it cannot be deleted while it has subnets or other
//! groups, nor a subnet while an instance, an EFS mount target or an FSx file system is in it.
//! Everything is regional: a call sees only its credential scope's region.
use axum::response::{IntoResponse, Response};

use super::xml::{Params, answer, el, escape, items, tag_set};
use super::{ACCOUNT, Caller, Flow, Model, Refusal, Service, new_id};
use crate::sim::Sim;

pub(super) type Tags = Vec<(String, String)>;

#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub(super) struct VpcRecord {
    pub(super) id: String,
    pub(super) region: String,
    pub(super) cidr: (u32, u8),
    pub(super) tags: Tags,
    pub(super) dns_support: bool,
    pub(super) dns_hostnames: bool,
}

impl VpcRecord {
    fn xml(&self) -> String {
        format!(
            "{}{}{}{}{}{}{}{}",
            el("vpcId", &self.id),
            el("ownerId", ACCOUNT),
            el("state", "available"),
            el("cidrBlock", &crate::cidr::text(self.cidr)),
            el("dhcpOptionsId", "default"),
            el("instanceTenancy", "default"),
            el("isDefault", "false"),
            tag_set(&self.tags)
        )
    }
}

#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub(super) struct SubnetRecord {
    pub(super) id: String,
    pub(super) region: String,
    pub(super) vpc: String,
    pub(super) cidr: (u32, u8),
    pub(super) zone: String,
    pub(super) tags: Tags,
}

impl SubnetRecord {
    fn xml(&self) -> String {
        let free = (u32::MAX >> self.cidr.1).saturating_sub(4);
        format!(
            "{}{}{}{}{}{}{}{}{}{}{}",
            el("subnetId", &self.id),
            el("subnetArn", &format!("arn:aws:ec2:{}:{ACCOUNT}:subnet/{}", self.region, self.id)),
            el("state", "available"),
            el("vpcId", &self.vpc),
            el("cidrBlock", &crate::cidr::text(self.cidr)),
            el("availableIpAddressCount", &free.to_string()),
            el("availabilityZone", &self.zone),
            el("defaultForAz", "false"),
            el("mapPublicIpOnLaunch", "false"),
            el("ownerId", ACCOUNT),
            tag_set(&self.tags)
        )
    }
}

/// Every EC2 operation, by its `Action`.
pub(super) fn handle(sim: &Sim, caller: &Caller, action: &str, body: &[u8]) -> Response {
    let params = Params::parse(body);
    let region = caller.region.as_str();
    if params.get("DryRun") == Some("true") {
        let refusal =
            Refusal::new(Service::Ec2, 412, "DryRunOperation", "Request would have succeeded, but DryRun flag is set.");
        return refusal.into_response();
    }
    let result = sim.with_aws(|model| match action {
        "CreateVpc" => model.vpc_create(region, &params),
        "DescribeVpcs" => model.vpc_describe(region, &params),
        "DeleteVpc" => model.vpc_delete(region, &params),
        "ModifyVpcAttribute" => model.vpc_modify_attribute(region, &params),
        "DescribeVpcAttribute" => model.vpc_describe_attribute(region, &params),
        "CreateSubnet" => model.subnet_create(region, &params),
        "DescribeSubnets" => model.subnet_describe(region, &params),
        "DeleteSubnet" => model.subnet_delete(region, &params),
        "CreateSecurityGroup" => model.group_create(region, &params),
        "AuthorizeSecurityGroupIngress" => model.group_authorize(region, &params, Flow::Ingress),
        "AuthorizeSecurityGroupEgress" => model.group_authorize(region, &params, Flow::Egress),
        "RevokeSecurityGroupIngress" => model.group_revoke(region, &params, Flow::Ingress),
        "RevokeSecurityGroupEgress" => model.group_revoke(region, &params, Flow::Egress),
        "DescribeSecurityGroups" => model.group_describe(region, &params),
        "DeleteSecurityGroup" => model.group_delete(region, &params),
        "RunInstances" => model.instance_run(region, &params),
        "DescribeInstances" => model.instance_describe(region, &params),
        "DescribeInstanceAttribute" => model.instance_attribute(region, &params),
        "ModifyInstanceAttribute" => model.instance_modify_attribute(region, &params),
        "TerminateInstances" => model.instance_terminate(region, &params),
        other => Err(refuse("InvalidAction", format!("The action {other} is not valid for this web service."))),
    });
    match result {
        Ok(inner) => answer(action, &inner),
        Err(refusal) => refusal.into_response(),
    }
}

/// An EC2 client error (HTTP 400).
pub(super) fn refuse(code: &'static str, message: impl Into<String>) -> Refusal {
    Refusal::new(Service::Ec2, 400, code, message)
}

pub(super) fn required<'a>(params: &'a Params, name: &str) -> Result<&'a str, Refusal> {
    params
        .get(name)
        .filter(|v| !v.is_empty())
        .ok_or_else(|| refuse("MissingParameter", format!("The request must contain the parameter {name}")))
}

/// Refuses a filter name a describe does not know, as EC2 does even when nothing would match.
pub(super) fn known_filters(filters: &[(String, Vec<String>)], known: &[&str]) -> Result<(), Refusal> {
    match filters.iter().find(|(n, _)| !(n.starts_with("tag:") || n == "tag-key" || known.contains(&n.as_str()))) {
        Some((name, _)) => Err(refuse("InvalidParameterValue", format!("The filter '{name}' is invalid"))),
        None => Ok(()),
    }
}

/// Whether a resource passes every filter (AND), each filter matching any of its values (OR).
/// `field` gives the resource's values for a filter name, `None` for a name it does not know;
/// `tag:<key>` and `tag-key` are answered from `tags`.
pub(super) fn passes(
    filters: &[(String, Vec<String>)],
    tags: &[(String, String)],
    field: impl Fn(&str) -> Option<Vec<String>>,
) -> Result<bool, Refusal> {
    for (name, values) in filters {
        let have: Vec<String> = if let Some(key) = name.strip_prefix("tag:") {
            tags.iter().filter(|(k, _)| k == key).map(|(_, v)| v.clone()).collect()
        } else if name == "tag-key" {
            tags.iter().map(|(k, _)| k.clone()).collect()
        } else {
            field(name).ok_or_else(|| refuse("InvalidParameterValue", format!("The filter '{name}' is invalid")))?
        };
        if !values.iter().any(|v| have.contains(v)) {
            return Ok(false);
        }
    }
    Ok(true)
}

/// `us-east-1a` and the like: the region and one letter.
fn zone_of(region: &str, zone: Option<&str>) -> Result<String, Refusal> {
    let Some(zone) = zone else { return Ok(format!("{region}a")) };
    let ok = zone
        .strip_prefix(region)
        .is_some_and(|l| l.len() == 1 && ('a'..='f').contains(&l.chars().next().unwrap_or(' ')));
    if ok {
        Ok(zone.to_owned())
    } else {
        Err(refuse(
            "InvalidParameterValue",
            format!(
                "Value ({zone}) for parameter availabilityZone is invalid. Subnets can currently only be created in the following availability zones: {region}a, {region}b, {region}c."
            ),
        ))
    }
}

impl Model {
    /// One page of a describe's `found` items under `list`: from `NextToken`, at most
    /// `MaxResults` (5 to 1000) or the sim's page limit, with the next page's `nextToken`.
    pub(super) fn ec2_page(&self, params: &Params, list: &str, found: Vec<String>) -> Result<String, Refusal> {
        let start: usize = match params.get("NextToken") {
            None => 0,
            Some(token) => token.parse().map_err(|_| refuse("InvalidNextToken", "The token is invalid"))?,
        };
        let asked = match params.get("MaxResults").map(str::parse::<usize>) {
            None => usize::MAX,
            Some(Ok(n)) if (5..=1000).contains(&n) => n,
            Some(_) => return Err(refuse("InvalidParameterValue", "MaxResults must be between 5 and 1000")),
        };
        let max = asked.min(self.page_limit.unwrap_or(usize::MAX)).max(1);
        let next = (start.saturating_add(max) < found.len()).then(|| el("nextToken", &(start + max).to_string()));
        let page: Vec<String> = found.into_iter().skip(start).take(max).collect();
        Ok(format!("{}{}", items(list, page), next.unwrap_or_default()))
    }
}

impl Model {
    pub(super) fn vpc_in(&self, region: &str, id: &str) -> Result<&VpcRecord, Refusal> {
        self.vpcs
            .iter()
            .find(|v| v.region == region && v.id == id)
            .ok_or_else(|| refuse("InvalidVpcID.NotFound", format!("The vpc ID '{id}' does not exist")))
    }

    pub(super) fn subnet_in(&self, region: &str, id: &str) -> Option<&SubnetRecord> {
        self.subnets.iter().find(|s| s.region == region && s.id == id)
    }

    fn vpc_create(&mut self, region: &str, params: &Params) -> Result<String, Refusal> {
        let text = required(params, "CidrBlock")?;
        let cidr = crate::cidr::parse_private(text)
            .ok_or_else(|| refuse("InvalidVpc.Range", format!("The CIDR '{text}' is invalid.")))?;
        let record = VpcRecord {
            id: new_id("vpc"),
            region: region.to_owned(),
            cidr,
            tags: params.tags("vpc"),
            dns_support: true,
            dns_hostnames: false,
        };
        let xml = record.xml();
        self.group_default(region, &record.id);
        self.vpcs.push(record);
        Ok(format!("<vpc>{xml}</vpc>"))
    }

    fn vpc_describe(&self, region: &str, params: &Params) -> Result<String, Refusal> {
        let ids = params.list("VpcId");
        for id in &ids {
            self.vpc_in(region, id)?;
        }
        let filters = params.filters();
        known_filters(
            &filters,
            &["vpc-id", "cidr", "cidr-block-association.cidr-block", "state", "owner-id", "is-default"],
        )?;
        let mut found = Vec::new();
        for vpc in self.vpcs.iter().filter(|v| v.region == region && (ids.is_empty() || ids.contains(&v.id))) {
            let field = |name: &str| match name {
                "vpc-id" => Some(vec![vpc.id.clone()]),
                "cidr" | "cidr-block-association.cidr-block" => Some(vec![crate::cidr::text(vpc.cidr)]),
                "state" => Some(vec!["available".to_owned()]),
                "owner-id" => Some(vec![ACCOUNT.to_owned()]),
                "is-default" => Some(vec!["false".to_owned()]),
                _ => None,
            };
            if passes(&filters, &vpc.tags, field)? {
                found.push(vpc.xml());
            }
        }
        self.ec2_page(params, "vpcSet", found)
    }

    fn vpc_delete(&mut self, region: &str, params: &Params) -> Result<String, Refusal> {
        let id = required(params, "VpcId")?.to_owned();
        self.vpc_in(region, &id)?;
        let subnets = self.subnets.iter().any(|s| s.vpc == id);
        let groups = self.groups.iter().any(|g| g.vpc == id && !g.default);
        if subnets || groups {
            return Err(refuse(
                "DependencyViolation",
                format!("The vpc '{id}' has dependencies and cannot be deleted."),
            ));
        }
        self.groups.retain(|g| g.vpc != id);
        self.vpcs.retain(|v| v.id != id);
        Ok(el("return", "true"))
    }

    fn vpc_modify_attribute(&mut self, region: &str, params: &Params) -> Result<String, Refusal> {
        let id = required(params, "VpcId")?.to_owned();
        let support = params.get("EnableDnsSupport.Value");
        let hostnames = params.get("EnableDnsHostnames.Value");
        let flag = |v: &str| match v {
            "true" => Ok(true),
            "false" => Ok(false),
            other => Err(refuse("InvalidParameterValue", format!("Value ({other}) for parameter value is invalid."))),
        };
        let (support, hostnames) = match (support, hostnames) {
            (Some(_), Some(_)) => {
                return Err(refuse("InvalidParameterCombination", "Only one attribute can be modified at a time"));
            }
            (None, None) => return Err(refuse("MissingParameter", "The request must contain the parameter attribute")),
            (s, h) => (s.map(flag).transpose()?, h.map(flag).transpose()?),
        };
        self.vpc_in(region, &id)?;
        let vpc = self.vpcs.iter_mut().find(|v| v.id == id).expect("found above");
        if let Some(on) = support {
            vpc.dns_support = on;
        }
        if let Some(on) = hostnames {
            if on && !vpc.dns_support {
                return Err(refuse(
                    "InvalidParameterValue",
                    "Cannot enable DNS hostnames unless DNS resolution is enabled for the VPC.",
                ));
            }
            vpc.dns_hostnames = on;
        }
        Ok(el("return", "true"))
    }

    fn vpc_describe_attribute(&self, region: &str, params: &Params) -> Result<String, Refusal> {
        let vpc = self.vpc_in(region, required(params, "VpcId")?)?;
        let (name, on) = match required(params, "Attribute")? {
            "enableDnsSupport" => ("enableDnsSupport", vpc.dns_support),
            "enableDnsHostnames" => ("enableDnsHostnames", vpc.dns_hostnames),
            other => {
                return Err(refuse(
                    "InvalidParameterValue",
                    format!("Value ({other}) for parameter attribute is invalid."),
                ));
            }
        };
        Ok(format!("{}<{name}>{}</{name}>", el("vpcId", &vpc.id), el("value", if on { "true" } else { "false" })))
    }

    fn subnet_create(&mut self, region: &str, params: &Params) -> Result<String, Refusal> {
        let vpc_id = required(params, "VpcId")?;
        let text = required(params, "CidrBlock")?;
        let vpc_cidr = self.vpc_in(region, vpc_id)?.cidr;
        let cidr = crate::cidr::parse_private(text)
            .filter(|c| c.1 >= vpc_cidr.1 && crate::cidr::overlaps(*c, vpc_cidr))
            .ok_or_else(|| refuse("InvalidSubnet.Range", format!("The CIDR '{}' is invalid.", escape(text))))?;
        if self.subnets.iter().any(|s| s.vpc == vpc_id && crate::cidr::overlaps(s.cidr, cidr)) {
            return Err(refuse("InvalidSubnet.Conflict", format!("The CIDR '{text}' conflicts with another subnet")));
        }
        let record = SubnetRecord {
            id: new_id("subnet"),
            region: region.to_owned(),
            vpc: vpc_id.to_owned(),
            cidr,
            zone: zone_of(region, params.get("AvailabilityZone"))?,
            tags: params.tags("subnet"),
        };
        let xml = record.xml();
        self.subnets.push(record);
        Ok(format!("<subnet>{xml}</subnet>"))
    }

    fn subnet_describe(&self, region: &str, params: &Params) -> Result<String, Refusal> {
        let ids = params.list("SubnetId");
        for id in &ids {
            if self.subnet_in(region, id).is_none() {
                return Err(refuse("InvalidSubnetID.NotFound", format!("The subnet ID '{id}' does not exist")));
            }
        }
        let filters = params.filters();
        known_filters(&filters, &["subnet-id", "vpc-id", "cidr-block", "availability-zone", "state"])?;
        let mut found = Vec::new();
        for subnet in self.subnets.iter().filter(|s| s.region == region && (ids.is_empty() || ids.contains(&s.id))) {
            let field = |name: &str| match name {
                "subnet-id" => Some(vec![subnet.id.clone()]),
                "vpc-id" => Some(vec![subnet.vpc.clone()]),
                "cidr-block" => Some(vec![crate::cidr::text(subnet.cidr)]),
                "availability-zone" => Some(vec![subnet.zone.clone()]),
                "state" => Some(vec!["available".to_owned()]),
                _ => None,
            };
            if passes(&filters, &subnet.tags, field)? {
                found.push(subnet.xml());
            }
        }
        self.ec2_page(params, "subnetSet", found)
    }

    fn subnet_delete(&mut self, region: &str, params: &Params) -> Result<String, Refusal> {
        let id = required(params, "SubnetId")?.to_owned();
        if self.subnet_in(region, &id).is_none() {
            return Err(refuse("InvalidSubnetID.NotFound", format!("The subnet ID '{id}' does not exist")));
        }
        let instances = self.instances.iter().any(|i| i.subnet == id && i.state != "terminated");
        let mounts = self.mount_targets.iter().any(|m| m.subnet == id);
        let lustres = self.lustres.iter().any(|l| l.subnet == id);
        if instances || mounts || lustres {
            return Err(refuse(
                "DependencyViolation",
                format!("The subnet '{id}' has dependencies and cannot be deleted."),
            ));
        }
        self.subnets.retain(|s| s.id != id);
        Ok(el("return", "true"))
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::{Aws, between, count};

    #[tokio::test]
    async fn a_vpc_is_made_with_its_tags_and_a_default_group_and_described_by_tag() {
        let aws = Aws::start().await;
        let text = aws
            .ec2_ok(
                "CreateVpc",
                &[
                    ("CidrBlock", "10.1.0.0/16"),
                    ("TagSpecification.1.ResourceType", "vpc"),
                    ("TagSpecification.1.Tag.1.Key", "Name"),
                    ("TagSpecification.1.Tag.1.Value", "bc-net1"),
                ],
            )
            .await;
        assert!(text.contains("<CreateVpcResponse xmlns=\"http://ec2.amazonaws.com/doc/2016-11-15/\">"), "{text}");
        assert!(text.contains("<requestId>"));
        let vpc = between(&text, "<vpcId>", "</vpcId>");
        assert!(vpc.starts_with("vpc-") && vpc.len() == 21, "{vpc}");
        assert!(text.contains("<cidrBlock>10.1.0.0/16</cidrBlock>"));
        let text = aws.ec2_ok("DescribeVpcs", &[("Filter.1.Name", "tag:Name"), ("Filter.1.Value.1", "bc-net1")]).await;
        assert_eq!(count(&text, "<vpcId>"), 1, "{text}");
        let text = aws.ec2_ok("DescribeVpcs", &[("Filter.1.Name", "tag:Name"), ("Filter.1.Value.1", "other")]).await;
        assert_eq!(count(&text, "<vpcId>"), 0, "{text}");
        let text =
            aws.ec2_ok("DescribeSecurityGroups", &[("Filter.1.Name", "vpc-id"), ("Filter.1.Value.1", &vpc)]).await;
        assert!(text.contains("<groupName>default</groupName>"), "{text}");
        // Another region does not see it.
        let (status, text) = aws.ec2_in("eu-west-1", "DescribeVpcs", &[("VpcId.1", &vpc)]).await;
        assert_eq!(status, 400);
        assert!(text.contains("<Code>InvalidVpcID.NotFound</Code>"), "{text}");
    }

    #[tokio::test]
    async fn dns_attributes_are_set_one_at_a_time() {
        let aws = Aws::start().await;
        let vpc = aws.vpc("10.2.0.0/16").await;
        aws.ec2_ok("ModifyVpcAttribute", &[("VpcId", &vpc), ("EnableDnsSupport.Value", "true")]).await;
        aws.ec2_ok("ModifyVpcAttribute", &[("VpcId", &vpc), ("EnableDnsHostnames.Value", "true")]).await;
        let text = aws.ec2_ok("DescribeVpcAttribute", &[("VpcId", &vpc), ("Attribute", "enableDnsHostnames")]).await;
        assert!(text.contains("<enableDnsHostnames><value>true</value></enableDnsHostnames>"), "{text}");
        let (status, text) = aws
            .ec2(
                "ModifyVpcAttribute",
                &[("VpcId", &vpc), ("EnableDnsSupport.Value", "true"), ("EnableDnsHostnames.Value", "true")],
            )
            .await;
        assert_eq!(status, 400);
        assert!(text.contains("InvalidParameterCombination"), "{text}");
    }

    #[tokio::test]
    async fn subnets_must_lie_in_the_vpc_and_not_overlap() {
        let aws = Aws::start().await;
        let vpc = aws.vpc("10.3.0.0/16").await;
        let subnet = aws.subnet(&vpc, "10.3.1.0/24", "us-east-1b").await;
        assert!(subnet.starts_with("subnet-") && subnet.len() == 24, "{subnet}");
        let (status, text) = aws
            .ec2("CreateSubnet", &[("VpcId", &vpc), ("CidrBlock", "10.3.1.128/25"), ("AvailabilityZone", "us-east-1a")])
            .await;
        assert_eq!(status, 400);
        assert!(text.contains("<Code>InvalidSubnet.Conflict</Code>"), "{text}");
        let (status, text) = aws.ec2("CreateSubnet", &[("VpcId", &vpc), ("CidrBlock", "10.4.0.0/24")]).await;
        assert_eq!(status, 400);
        assert!(text.contains("<Code>InvalidSubnet.Range</Code>"), "{text}");
        let text = aws.ec2_ok("DescribeSubnets", &[("Filter.1.Name", "vpc-id"), ("Filter.1.Value.1", &vpc)]).await;
        assert!(text.contains("<availabilityZone>us-east-1b</availabilityZone>"), "{text}");
        // A VPC with a subnet cannot go; without it, it can (its default group goes with it).
        let (status, text) = aws.ec2("DeleteVpc", &[("VpcId", &vpc)]).await;
        assert_eq!(status, 400);
        assert!(text.contains("<Code>DependencyViolation</Code>"), "{text}");
        aws.ec2_ok("DeleteSubnet", &[("SubnetId", &subnet)]).await;
        aws.ec2_ok("DeleteVpc", &[("VpcId", &vpc)]).await;
        let text =
            aws.ec2_ok("DescribeSecurityGroups", &[("Filter.1.Name", "vpc-id"), ("Filter.1.Value.1", &vpc)]).await;
        assert_eq!(count(&text, "<groupId>"), 0, "{text}");
        let (status, text) = aws.ec2("DeleteSubnet", &[("SubnetId", &subnet)]).await;
        assert_eq!(status, 400);
        assert!(text.contains("<Code>InvalidSubnetID.NotFound</Code>"), "{text}");
    }

    #[tokio::test]
    async fn a_dry_run_changes_nothing() {
        let aws = Aws::start().await;
        let (status, text) = aws.ec2("CreateVpc", &[("CidrBlock", "10.1.0.0/16"), ("DryRun", "true")]).await;
        assert_eq!(status, 412);
        assert!(text.contains("<Code>DryRunOperation</Code>"), "{text}");
        assert_eq!(count(&aws.ec2_ok("DescribeVpcs", &[]).await, "<vpcId>"), 0);
    }

    #[tokio::test]
    async fn an_unknown_action_or_filter_is_refused() {
        let aws = Aws::start().await;
        let (status, text) = aws.ec2("DescribeNothing", &[]).await;
        assert_eq!(status, 400);
        assert!(text.contains("<Code>InvalidAction</Code>"), "{text}");
        let (status, text) = aws.ec2("DescribeVpcs", &[("Filter.1.Name", "colour"), ("Filter.1.Value.1", "red")]).await;
        assert_eq!(status, 400);
        assert!(text.contains("<Code>InvalidParameterValue</Code>"), "{text}");
    }
}
