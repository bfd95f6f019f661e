//! The request forms, one function per call, so tests can hold them against the captures.
use super::Form;
use crate::provider::{Flow, GroupRule, InstanceRun, RuleSource, Tag};
use base64::Engine as _;

pub fn create_vpc(cidr_block: &str, tags: &[Tag]) -> Form {
    let mut form = Form::new("CreateVpc");
    form.add("CidrBlock", cidr_block).tag_specification("vpc", tags);
    form
}

/// One attribute per call, as EC2 demands.
pub fn modify_vpc_attribute(vpc_id: &str, attribute: &str) -> Form {
    let mut form = Form::new("ModifyVpcAttribute");
    form.add("VpcId", vpc_id).add(format!("{attribute}.Value"), "true");
    form
}

pub fn describe_vpc(vpc_id: &str) -> Form {
    let mut form = Form::new("DescribeVpcs");
    form.add("VpcId.1", vpc_id);
    form
}

pub fn describe_vpcs_named(name: &str) -> Form {
    let mut form = Form::new("DescribeVpcs");
    form.filter("tag:Name", name);
    form
}

pub fn delete_vpc(vpc_id: &str) -> Form {
    let mut form = Form::new("DeleteVpc");
    form.add("VpcId", vpc_id);
    form
}

pub fn create_subnet(vpc_id: &str, availability_zone: &str, cidr_block: &str, tags: &[Tag]) -> Form {
    let mut form = Form::new("CreateSubnet");
    form.add("AvailabilityZone", availability_zone)
        .add("CidrBlock", cidr_block)
        .add("VpcId", vpc_id)
        .tag_specification("subnet", tags);
    form
}

pub fn describe_subnets_of(vpc_id: &str) -> Form {
    let mut form = Form::new("DescribeSubnets");
    form.filter("vpc-id", vpc_id);
    form
}

pub fn delete_subnet(subnet_id: &str) -> Form {
    let mut form = Form::new("DeleteSubnet");
    form.add("SubnetId", subnet_id);
    form
}

pub fn create_security_group(vpc_id: &str, name: &str, description: &str, tags: &[Tag]) -> Form {
    let mut form = Form::new("CreateSecurityGroup");
    form.add("GroupDescription", description)
        .add("GroupName", name)
        .add("VpcId", vpc_id)
        .tag_specification("security-group", tags);
    form
}

/// One permission per rule, its source as `IpRanges.1`, `Ipv6Ranges.1` or `Groups.1`; every
/// protocol (`-1`) takes no ports.
fn permissions(form: &mut Form, rules: &[GroupRule]) {
    for (n, rule) in rules.iter().enumerate() {
        let p = format!("IpPermissions.{}", n + 1);
        form.add(format!("{p}.IpProtocol"), rule.protocol.as_str());
        if rule.protocol != "-1" {
            form.add(format!("{p}.FromPort"), rule.from_port.to_string())
                .add(format!("{p}.ToPort"), rule.to_port.to_string());
        }
        let (list, key, value) = match &rule.source {
            RuleSource::Cidr(cidr) => ("IpRanges", "CidrIp", cidr),
            RuleSource::Cidr6(cidr) => ("Ipv6Ranges", "CidrIpv6", cidr),
            RuleSource::Group(group) => ("Groups", "GroupId", group),
        };
        if let Some(description) = &rule.description {
            form.add(format!("{p}.{list}.1.Description"), description.as_str());
        }
        form.add(format!("{p}.{list}.1.{key}"), value.as_str());
    }
}

pub fn authorize(group_id: &str, flow: Flow, rules: &[GroupRule]) -> Form {
    let action = match flow {
        Flow::Ingress => "AuthorizeSecurityGroupIngress",
        Flow::Egress => "AuthorizeSecurityGroupEgress",
    };
    let mut form = Form::new(action);
    form.add("GroupId", group_id);
    permissions(&mut form, rules);
    form
}

pub fn revoke(group_id: &str, flow: Flow, rules: &[GroupRule]) -> Form {
    let action = match flow {
        Flow::Ingress => "RevokeSecurityGroupIngress",
        Flow::Egress => "RevokeSecurityGroupEgress",
    };
    let mut form = Form::new(action);
    form.add("GroupId", group_id);
    permissions(&mut form, rules);
    form
}

pub fn describe_security_groups_of(vpc_id: &str) -> Form {
    let mut form = Form::new("DescribeSecurityGroups");
    form.filter("vpc-id", vpc_id);
    form
}

pub fn describe_security_groups(vpc_id: &str, name: &str) -> Form {
    let mut form = Form::new("DescribeSecurityGroups");
    form.filter("vpc-id", vpc_id).filter("group-name", name);
    form
}

pub fn delete_security_group(group_id: &str) -> Form {
    let mut form = Form::new("DeleteSecurityGroup");
    form.add("GroupId", group_id);
    form
}

pub fn run_instances(request: &InstanceRun<'_>) -> Form {
    let mut form = Form::new("RunInstances");
    form.add("ClientToken", request.client_token)
        .add("ImageId", request.image_id)
        .add("InstanceType", request.instance_type)
        .add("MaxCount", "1")
        .add("MinCount", "1");
    for (n, group) in request.security_group_ids.iter().enumerate() {
        form.add(format!("SecurityGroupId.{}", n + 1), group.as_str());
    }
    form.add("SubnetId", request.subnet_id);
    if let Some(user_data) = request.user_data {
        form.add("UserData", base64::engine::general_purpose::STANDARD.encode(user_data));
    }
    form.tag_specification("instance", request.tags);
    form
}

pub fn describe_instance(instance_id: &str) -> Form {
    let mut form = Form::new("DescribeInstances");
    form.add("InstanceId.1", instance_id);
    form
}

pub fn describe_instances_named(name: &str) -> Form {
    let mut form = Form::new("DescribeInstances");
    form.filter("tag:Name", name);
    form
}

pub fn describe_instances_in_vpc(vpc_id: &str) -> Form {
    let mut form = Form::new("DescribeInstances");
    form.filter("vpc-id", vpc_id);
    form
}

/// The machine's groups, replaced: `GroupId.N` (RunInstances says `SecurityGroupId.N`).
pub fn modify_instance_groups(instance_id: &str, group_ids: &[String]) -> Form {
    let mut form = Form::new("ModifyInstanceAttribute");
    form.add("InstanceId", instance_id);
    for (n, group) in group_ids.iter().enumerate() {
        form.add(format!("GroupId.{}", n + 1), group.as_str());
    }
    form
}

pub fn terminate_instance(instance_id: &str) -> Form {
    let mut form = Form::new("TerminateInstances");
    form.add("InstanceId.1", instance_id);
    form
}

/// A describe of everything in the region that carries `deployment`'s ownership tag: how an
/// account's inventory lists security groups and instances.
pub fn describe_owned(action: &str, deployment: &str) -> Form {
    let mut form = Form::new(action);
    form.filter(&format!("tag:{}", crate::provider::AWS_OWNER_TAG), deployment);
    form
}
