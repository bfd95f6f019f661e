//! EC2 security groups: create (names unique per VPC regardless of case), inbound and outbound
//! rules authorized and revoked (CIDRs canonicalised; a rule that exists already fails the whole
//! authorize, one that does not the whole revoke), describe by id and by filters, delete. A group
//! cannot be deleted while an EFS mount target, an FSx file system or a live instance uses it, or
//! another group's rule names it; a VPC's `default` group cannot be deleted at all. A new group
//! starts with the one default outbound rule (all traffic to 0.0.0.0/0).
use super::ec2::{Tags, known_filters, passes, refuse, required};
use super::xml::{Params, el, items, tag_set};
use super::{ACCOUNT, Flow, Model, Refusal, new_id};
use crate::sim::Sim;

#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub(super) enum Source {
    Cidr(String),
    Cidr6(String),
    Group(String),
}

#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub(super) struct RuleRecord {
    pub(super) id: String,
    /// `tcp`, `udp`, `icmp`, or `-1` (all).
    pub(super) protocol: String,
    pub(super) ports: Option<(i32, i32)>,
    pub(super) source: Source,
    pub(super) description: Option<String>,
}

impl RuleRecord {
    fn same(&self, other: &RuleRecord) -> bool {
        self.protocol == other.protocol && self.ports == other.ports && self.source == other.source
    }

    /// As one `IpPermission` with its one source.
    fn permission_xml(&self) -> String {
        let ports = self.ports.map_or(String::new(), |(from, to)| {
            format!("{}{}", el("fromPort", &from.to_string()), el("toPort", &to.to_string()))
        });
        let description = self.description.as_deref().map_or(String::new(), |d| el("description", d));
        let (mut groups, mut ranges, mut ranges6) = (Vec::new(), Vec::new(), Vec::new());
        match &self.source {
            Source::Cidr(cidr) => ranges.push(format!("{}{description}", el("cidrIp", cidr))),
            Source::Cidr6(cidr) => ranges6.push(format!("{}{description}", el("cidrIpv6", cidr))),
            Source::Group(id) => groups.push(format!("{}{}{description}", el("userId", ACCOUNT), el("groupId", id))),
        }
        format!(
            "{}{ports}{}{}{}{}",
            el("ipProtocol", &self.protocol),
            items("groups", groups),
            items("ipRanges", ranges),
            items("ipv6Ranges", ranges6),
            items("prefixListIds", Vec::new())
        )
    }

    fn rule_xml(&self, group: &str, flow: Flow) -> String {
        let ports = self.ports.unwrap_or((-1, -1));
        let source = match &self.source {
            Source::Cidr(cidr) => el("cidrIpv4", cidr),
            Source::Cidr6(cidr) => el("cidrIpv6", cidr),
            Source::Group(id) => {
                format!("<referencedGroupInfo>{}{}</referencedGroupInfo>", el("groupId", id), el("userId", ACCOUNT))
            }
        };
        format!(
            "{}{}{}{}{}{}{}{}",
            el("securityGroupRuleId", &self.id),
            el("groupId", group),
            el("groupOwnerId", ACCOUNT),
            el("isEgress", if flow == Flow::Egress { "true" } else { "false" }),
            el("ipProtocol", &self.protocol),
            el("fromPort", &ports.0.to_string()),
            el("toPort", &ports.1.to_string()),
            source
        )
    }
}

#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub(super) struct GroupRecord {
    pub(super) id: String,
    pub(super) region: String,
    pub(super) vpc: String,
    pub(super) name: String,
    pub(super) description: String,
    pub(super) tags: Tags,
    pub(super) ingress: Vec<RuleRecord>,
    pub(super) egress: Vec<RuleRecord>,
    pub(super) default: bool,
}

impl GroupRecord {
    fn arn(&self) -> String {
        format!("arn:aws:ec2:{}:{ACCOUNT}:security-group/{}", self.region, self.id)
    }

    fn rules(&self, flow: Flow) -> &[RuleRecord] {
        match flow {
            Flow::Ingress => &self.ingress,
            Flow::Egress => &self.egress,
        }
    }

    fn xml(&self) -> String {
        format!(
            "{}{}{}{}{}{}{}{}{}",
            el("ownerId", ACCOUNT),
            el("groupId", &self.id),
            el("groupName", &self.name),
            el("groupDescription", &self.description),
            el("vpcId", &self.vpc),
            items("ipPermissions", self.ingress.iter().map(RuleRecord::permission_xml)),
            items("ipPermissionsEgress", self.egress.iter().map(RuleRecord::permission_xml)),
            tag_set(&self.tags),
            el("securityGroupArn", &self.arn())
        )
    }
}

/// The outbound rule every new group starts with.
fn everything_out() -> RuleRecord {
    RuleRecord {
        id: new_id("sgr"),
        protocol: "-1".to_owned(),
        ports: None,
        source: Source::Cidr("0.0.0.0/0".to_owned()),
        description: None,
    }
}

fn not_found(id: &str) -> Refusal {
    refuse("InvalidGroup.NotFound", format!("The security group '{id}' does not exist"))
}

/// Names and descriptions: up to 255 of a-z A-Z 0-9 space and `._-:/()#,@[]+=&;{}!$*`.
fn valid_text(text: &str) -> bool {
    text.len() <= 255 && text.chars().all(|c| c.is_ascii_alphanumeric() || " ._-:/()#,@[]+=&;{}!$*".contains(c))
}

/// `2001:db8::5/32` → `2001:db8::/32`.
fn canonical_cidr6(text: &str) -> Option<String> {
    let (addr, prefix) = text.split_once('/')?;
    let prefix: u8 = prefix.parse().ok().filter(|p| *p <= 128)?;
    let addr: std::net::Ipv6Addr = addr.parse().ok()?;
    let mask = if prefix == 0 { 0 } else { u128::MAX << (128 - prefix) };
    Some(format!("{}/{prefix}", std::net::Ipv6Addr::from(u128::from(addr) & mask)))
}

/// `10.0.1.5/16` → `10.0.0.0/16`.
fn canonical_cidr(text: &str) -> Option<String> {
    let (addr, prefix) = text.split_once('/')?;
    let prefix: u8 = prefix.parse().ok().filter(|p| *p <= 32)?;
    let addr: std::net::Ipv4Addr = addr.parse().ok()?;
    let mask = if prefix == 0 { 0 } else { u32::MAX << (32 - prefix) };
    Some(format!("{}/{prefix}", std::net::Ipv4Addr::from(u32::from(addr) & mask)))
}

fn protocol(text: &str) -> Option<&'static str> {
    match text.to_ascii_lowercase().as_str() {
        "tcp" | "6" => Some("tcp"),
        "udp" | "17" => Some("udp"),
        "icmp" | "1" => Some("icmp"),
        "-1" | "all" => Some("-1"),
        _ => None,
    }
}

impl Model {
    pub(super) fn group_in(&self, region: &str, id: &str) -> Result<&GroupRecord, Refusal> {
        self.groups.iter().find(|g| g.region == region && g.id == id).ok_or_else(|| not_found(id))
    }

    /// A VPC's `default` group: all traffic in from itself.
    pub(super) fn group_default(&mut self, region: &str, vpc: &str) {
        let id = new_id("sg");
        let rule = RuleRecord {
            id: new_id("sgr"),
            protocol: "-1".to_owned(),
            ports: None,
            source: Source::Group(id.clone()),
            description: None,
        };
        self.groups.push(GroupRecord {
            id,
            region: region.to_owned(),
            vpc: vpc.to_owned(),
            name: "default".to_owned(),
            description: "default VPC security group".to_owned(),
            tags: Vec::new(),
            ingress: vec![rule],
            egress: vec![everything_out()],
            default: true,
        });
    }

    fn group_add(
        &mut self,
        region: &str,
        vpc: &str,
        name: &str,
        description: &str,
        tags: Tags,
    ) -> Result<&GroupRecord, Refusal> {
        self.vpc_in(region, vpc)?;
        if self.groups.iter().any(|g| g.vpc == vpc && g.name.eq_ignore_ascii_case(name)) {
            return Err(refuse(
                "InvalidGroup.Duplicate",
                format!("The security group '{name}' already exists for VPC '{vpc}'"),
            ));
        }
        self.groups.push(GroupRecord {
            id: new_id("sg"),
            region: region.to_owned(),
            vpc: vpc.to_owned(),
            name: name.to_owned(),
            description: description.to_owned(),
            tags,
            ingress: Vec::new(),
            egress: vec![everything_out()],
            default: false,
        });
        Ok(self.groups.last().expect("just pushed"))
    }

    pub(super) fn group_create(&mut self, region: &str, params: &Params) -> Result<String, Refusal> {
        let name = required(params, "GroupName")?;
        let description = required(params, "GroupDescription")?;
        let vpc = params.get("VpcId").ok_or_else(|| refuse("VPCIdNotSpecified", "No default VPC for this user"))?;
        if name.to_ascii_lowercase().starts_with("sg-") {
            return Err(refuse("InvalidParameterValue", "Group names may not be in the format sg-*"));
        }
        if !valid_text(name) {
            return Err(refuse("InvalidParameterValue", format!("Value ({name}) for parameter GroupName is invalid.")));
        }
        if !valid_text(description) {
            return Err(refuse("InvalidParameterValue", "Invalid security group description"));
        }
        let group = self.group_add(region, vpc, name, description, params.tags("security-group"))?;
        Ok(format!(
            "{}{}{}{}",
            el("return", "true"),
            el("groupId", &group.id),
            tag_set(&group.tags),
            el("securityGroupArn", &group.arn())
        ))
    }

    /// The rules of a call's `IpPermissions`, one per source, checked and canonical.
    fn permission_rules(&self, params: &Params, vpc: &str) -> Result<Vec<RuleRecord>, Refusal> {
        let mut rules: Vec<RuleRecord> = Vec::new();
        for permission in params.structs("IpPermissions") {
            let text = required(&permission, "IpProtocol")?;
            let protocol = protocol(text)
                .ok_or_else(|| refuse("InvalidParameterValue", format!("Invalid value '{text}' for IP protocol.")))?;
            let ports = if protocol == "-1" {
                None
            } else {
                let port = |name: &str| -> Result<i32, Refusal> {
                    required(&permission, name)?
                        .parse()
                        .map_err(|_| refuse("InvalidParameterValue", format!("Invalid value for portRange: {name}")))
                };
                let (from, to) = (port("FromPort")?, port("ToPort")?);
                let bad = match protocol {
                    "icmp" => !(-1..=255).contains(&from) || !(-1..=255).contains(&to) || (from == -1 && to != -1),
                    _ => !(0..=65535).contains(&from) || !(0..=65535).contains(&to) || from > to,
                };
                if bad {
                    return Err(refuse("InvalidParameterValue", format!("Invalid port range: {from}-{to}")));
                }
                Some((from, to))
            };
            let mut sources = Vec::new();
            for range in permission.structs("IpRanges") {
                let cidr = required(&range, "CidrIp")?;
                let canonical = canonical_cidr(cidr)
                    .ok_or_else(|| refuse("InvalidParameterValue", format!("CIDR block {cidr} is malformed")))?;
                sources.push((Source::Cidr(canonical), range.get("Description").map(str::to_owned)));
            }
            for range in permission.structs("Ipv6Ranges") {
                let cidr = required(&range, "CidrIpv6")?;
                let canonical = canonical_cidr6(cidr)
                    .ok_or_else(|| refuse("InvalidParameterValue", format!("CIDR block {cidr} is malformed")))?;
                sources.push((Source::Cidr6(canonical), range.get("Description").map(str::to_owned)));
            }
            for pair in permission.structs("Groups") {
                let other = required(&pair, "GroupId")?;
                if !self.groups.iter().any(|g| g.id == other && g.vpc == vpc) {
                    return Err(not_found(other));
                }
                sources.push((Source::Group(other.to_owned()), pair.get("Description").map(str::to_owned)));
            }
            if sources.is_empty() {
                return Err(refuse(
                    "MissingParameter",
                    "The request must contain the parameter ipPermissions.ipRanges or groups",
                ));
            }
            for (source, description) in sources {
                rules.push(RuleRecord { id: new_id("sgr"), protocol: protocol.to_owned(), ports, source, description });
            }
        }
        if rules.is_empty() {
            return Err(refuse("MissingParameter", "The request must contain the parameter ipPermissions"));
        }
        Ok(rules)
    }

    /// The group a rule call names, by id.
    fn group_named(&self, region: &str, params: &Params) -> Result<(String, String), Refusal> {
        let id = required(params, "GroupId")?.to_owned();
        if !id.starts_with("sg-") {
            return Err(refuse("InvalidGroupId.Malformed", format!("Invalid id: \"{id}\" (expecting \"sg-...\")")));
        }
        let vpc = self.group_in(region, &id)?.vpc.clone();
        Ok((id, vpc))
    }

    pub(super) fn group_authorize(&mut self, region: &str, params: &Params, flow: Flow) -> Result<String, Refusal> {
        let (id, vpc) = self.group_named(region, params)?;
        let asked = self.permission_rules(params, &vpc)?;
        let mut added: Vec<RuleRecord> = Vec::new();
        for rule in asked {
            let group = self.group_in(region, &id)?;
            if group.rules(flow).iter().chain(&added).any(|r| r.same(&rule)) {
                let peer = match &rule.source {
                    Source::Cidr(c) | Source::Cidr6(c) | Source::Group(c) => c.clone(),
                };
                let (from, to) = rule.ports.unwrap_or((-1, -1));
                return Err(refuse(
                    "InvalidPermission.Duplicate",
                    format!(
                        "the specified rule \"peer: {peer}, {}, from port: {from}, to port: {to}, ALLOW\" already exists",
                        rule.protocol.to_ascii_uppercase()
                    ),
                ));
            }
            added.push(rule);
        }
        let rules: Vec<String> = added.iter().map(|r| r.rule_xml(&id, flow)).collect();
        let group = self.groups.iter_mut().find(|g| g.id == id).expect("found above");
        match flow {
            Flow::Ingress => group.ingress.extend(added),
            Flow::Egress => group.egress.extend(added),
        }
        Ok(format!("{}{}", el("return", "true"), items("securityGroupRuleSet", rules)))
    }

    /// Takes off every rule named, or none when one is not there (a non-default VPC's
    /// `InvalidPermission.NotFound`).
    pub(super) fn group_revoke(&mut self, region: &str, params: &Params, flow: Flow) -> Result<String, Refusal> {
        let (id, vpc) = self.group_named(region, params)?;
        let asked = self.permission_rules(params, &vpc)?;
        let group = self.group_in(region, &id)?;
        if let Some(missing) = asked.iter().find(|a| !group.rules(flow).iter().any(|r| r.same(a))) {
            return Err(refuse(
                "InvalidPermission.NotFound",
                format!(
                    "The specified rule does not exist in this security group ({} {:?})",
                    missing.protocol, missing.ports
                ),
            ));
        }
        let revoked: Vec<String> = asked.iter().map(|r| r.rule_xml(&id, flow)).collect();
        let group = self.groups.iter_mut().find(|g| g.id == id).expect("found above");
        let list = match flow {
            Flow::Ingress => &mut group.ingress,
            Flow::Egress => &mut group.egress,
        };
        list.retain(|r| !asked.iter().any(|a| a.same(r)));
        Ok(format!("{}{}", el("return", "true"), items("revokedSecurityGroupRuleSet", revoked)))
    }

    pub(super) fn group_describe(&self, region: &str, params: &Params) -> Result<String, Refusal> {
        let ids = params.list("GroupId");
        for id in &ids {
            self.group_in(region, id)?;
        }
        if let Some(name) = params.list("GroupName").first() {
            // Names alone only work in the default VPC, and this account has none.
            return Err(refuse(
                "InvalidGroup.NotFound",
                format!("The security group '{name}' does not exist in default VPC 'none'"),
            ));
        }
        let filters = params.filters();
        known_filters(
            &filters,
            &[
                "vpc-id",
                "group-name",
                "group-id",
                "description",
                "owner-id",
                "ip-permission.protocol",
                "ip-permission.from-port",
                "ip-permission.to-port",
                "ip-permission.cidr",
                "ip-permission.group-id",
            ],
        )?;
        let mut found = Vec::new();
        for group in self.groups.iter().filter(|g| g.region == region && (ids.is_empty() || ids.contains(&g.id))) {
            let rules = |f: &dyn Fn(&RuleRecord) -> Option<String>| Some(group.ingress.iter().filter_map(f).collect());
            let field = |name: &str| match name {
                "vpc-id" => Some(vec![group.vpc.clone()]),
                "group-name" => Some(vec![group.name.clone()]),
                "group-id" => Some(vec![group.id.clone()]),
                "description" => Some(vec![group.description.clone()]),
                "owner-id" => Some(vec![ACCOUNT.to_owned()]),
                "ip-permission.protocol" => rules(&|r| Some(r.protocol.clone())),
                "ip-permission.from-port" => rules(&|r| r.ports.map(|p| p.0.to_string())),
                "ip-permission.to-port" => rules(&|r| r.ports.map(|p| p.1.to_string())),
                "ip-permission.cidr" => rules(&|r| match &r.source {
                    Source::Cidr(c) => Some(c.clone()),
                    _ => None,
                }),
                "ip-permission.group-id" => rules(&|r| match &r.source {
                    Source::Group(g) => Some(g.clone()),
                    _ => None,
                }),
                _ => None,
            };
            if passes(&filters, &group.tags, field)? {
                found.push(group.xml());
            }
        }
        self.ec2_page(params, "securityGroupInfo", found)
    }

    /// What keeps a group from being deleted, if anything.
    fn group_users(&self, id: &str) -> Option<String> {
        let user = |s: &String| s == id;
        if let Some(m) = self.mount_targets.iter().find(|m| m.groups.iter().any(user)) {
            return Some(m.interface.clone());
        }
        if let Some(l) = self.lustres.iter().find(|l| l.groups.iter().any(user)) {
            return Some(l.interface.clone());
        }
        if let Some(i) = self.instances.iter().find(|i| i.state != "terminated" && i.groups.iter().any(user)) {
            return Some(i.interface.clone());
        }
        self.groups
            .iter()
            .find(|g| g.id != id && g.ingress.iter().chain(&g.egress).any(|r| r.source == Source::Group(id.to_owned())))
            .map(|g| g.id.clone())
    }

    pub(super) fn group_delete(&mut self, region: &str, params: &Params) -> Result<String, Refusal> {
        let Some(id) = params.get("GroupId").map(str::to_owned) else {
            let name = required(params, "GroupName")?;
            return Err(refuse(
                "InvalidGroup.NotFound",
                format!("The security group '{name}' does not exist in default VPC 'none'"),
            ));
        };
        if !id.starts_with("sg-") {
            return Err(refuse("InvalidGroupId.Malformed", format!("Invalid id: \"{id}\" (expecting \"sg-...\")")));
        }
        if self.group_in(region, &id)?.default {
            return Err(refuse(
                "CannotDelete",
                format!("the specified group: \"{id}\" name: \"default\" cannot be deleted by a user"),
            ));
        }
        if let Some(user) = self.group_users(&id) {
            return Err(refuse("DependencyViolation", format!("resource {id} has a dependent object ({user})")));
        }
        self.groups.retain(|g| g.id != id);
        Ok(format!("{}{}", el("return", "true"), el("groupId", &id)))
    }
}

impl Sim {
    /// Plants a security group the service did not make (no ownership tags unless given) in `vpc`
    /// of `region`; returns its id. For tests that prove a foreign group is never adopted or
    /// deleted.
    pub fn aws_plant_foreign_group(
        &self,
        region: &str,
        vpc: &str,
        name: &str,
        tags: &[(&str, &str)],
    ) -> Option<String> {
        let tags = tags.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect();
        self.with_aws(|model| {
            model.group_add(region, vpc, name, "planted foreign group", tags).ok().map(|g| g.id.clone())
        })
    }

    /// The ids of the groups of `region`, for tests that check nothing was deleted.
    pub fn aws_group_ids(&self, region: &str) -> Vec<String> {
        self.with_aws(|model| model.groups.iter().filter(|g| g.region == region).map(|g| g.id.clone()).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::{Aws, REGION, between, count};

    const PERMISSIONS: &[(&str, &str)] = &[
        ("IpPermissions.1.IpProtocol", "tcp"),
        ("IpPermissions.1.FromPort", "2049"),
        ("IpPermissions.1.ToPort", "2049"),
        ("IpPermissions.1.IpRanges.1.Description", "tenant vpc"),
        ("IpPermissions.1.IpRanges.1.CidrIp", "10.0.1.5/16"),
    ];

    #[tokio::test]
    async fn a_group_is_made_with_its_tags_and_the_default_egress_rule() {
        let aws = Aws::start().await;
        let vpc = aws.vpc("10.0.0.0/16").await;
        // The captured request (section 7.4 of the reference).
        let text = aws
            .ec2_ok(
                "CreateSecurityGroup",
                &[
                    ("GroupDescription", "bc filesystem bc-tenant1"),
                    ("GroupName", "bc-tenant1"),
                    ("VpcId", &vpc),
                    ("TagSpecification.1.ResourceType", "security-group"),
                    ("TagSpecification.1.Tag.1.Key", "Name"),
                    ("TagSpecification.1.Tag.1.Value", "bc-tenant1"),
                    ("TagSpecification.1.Tag.2.Key", "bc:managed-by"),
                    ("TagSpecification.1.Tag.2.Value", "svc"),
                ],
            )
            .await;
        assert!(text.contains("<return>true</return>"), "{text}");
        let id = between(&text, "<groupId>", "</groupId>");
        assert!(id.starts_with("sg-") && id.len() == 20, "{id}");
        assert!(text.contains("<item><key>bc:managed-by</key><value>svc</value></item>"), "{text}");
        let text = aws
            .ec2_ok(
                "DescribeSecurityGroups",
                &[
                    ("Filter.1.Name", "vpc-id"),
                    ("Filter.1.Value.1", &vpc),
                    ("Filter.2.Name", "group-name"),
                    ("Filter.2.Value.1", "bc-tenant1"),
                ],
            )
            .await;
        assert_eq!(count(&text, "<groupId>"), 1, "{text}");
        assert!(text.contains("<ipPermissions></ipPermissions>"), "{text}");
        assert!(text.contains("<ipPermissionsEgress><item><ipProtocol>-1</ipProtocol>"), "{text}");
        assert!(text.contains("<cidrIp>0.0.0.0/0</cidrIp>"), "{text}");
        let text = aws
            .ec2_ok("DescribeSecurityGroups", &[("Filter.1.Name", "tag:bc:managed-by"), ("Filter.1.Value.1", "svc")])
            .await;
        assert_eq!(count(&text, "<groupId>"), 1, "{text}");
        assert_eq!(aws.sim.calls("ec2.CreateSecurityGroup"), 1);
    }

    #[tokio::test]
    async fn names_are_unique_per_vpc_regardless_of_case_and_never_sg_prefixed() {
        let aws = Aws::start().await;
        let vpc = aws.vpc("10.0.0.0/16").await;
        let other = aws.vpc("10.9.0.0/16").await;
        aws.group(&vpc, "bc-x").await;
        let (status, text) =
            aws.ec2("CreateSecurityGroup", &[("VpcId", &vpc), ("GroupName", "BC-X"), ("GroupDescription", "d")]).await;
        assert_eq!(status, 400);
        assert!(text.contains("<Code>InvalidGroup.Duplicate</Code>") && text.contains("<RequestID>"), "{text}");
        aws.group(&other, "bc-x").await;
        let (_, text) =
            aws.ec2("CreateSecurityGroup", &[("VpcId", &vpc), ("GroupName", "sg-1"), ("GroupDescription", "d")]).await;
        assert!(text.contains("<Code>InvalidParameterValue</Code>"), "{text}");
        let (_, text) = aws.ec2("CreateSecurityGroup", &[("VpcId", &vpc), ("GroupName", "y")]).await;
        assert!(text.contains("<Code>MissingParameter</Code>"), "{text}");
        let (_, text) = aws
            .ec2(
                "CreateSecurityGroup",
                &[("VpcId", "vpc-0000000000000000f"), ("GroupName", "y"), ("GroupDescription", "d")],
            )
            .await;
        assert!(text.contains("<Code>InvalidVpcID.NotFound</Code>"), "{text}");
    }

    #[tokio::test]
    async fn ingress_rules_are_canonical_and_a_duplicate_fails_the_call() {
        let aws = Aws::start().await;
        let vpc = aws.vpc("10.0.0.0/16").await;
        let group = aws.group(&vpc, "bc-fsx").await;
        let mut params = vec![("GroupId", group.as_str())];
        params.extend_from_slice(PERMISSIONS);
        params.extend_from_slice(&[
            ("IpPermissions.2.IpProtocol", "tcp"),
            ("IpPermissions.2.FromPort", "988"),
            ("IpPermissions.2.ToPort", "988"),
            ("IpPermissions.2.Groups.1.GroupId", group.as_str()),
        ]);
        let text = aws.ec2_ok("AuthorizeSecurityGroupIngress", &params).await;
        assert_eq!(count(&text, "<securityGroupRuleId>sgr-"), 2, "{text}");
        assert!(text.contains("<cidrIpv4>10.0.0.0/16</cidrIpv4>"), "{text}");
        let text = aws.ec2_ok("DescribeSecurityGroups", &[("GroupId.1", &group)]).await;
        assert!(text.contains("<cidrIp>10.0.0.0/16</cidrIp><description>tenant vpc</description>"), "{text}");
        assert!(text.contains(&format!("<groupId>{group}</groupId>")), "{text}");
        // The same rule again (in its canonical spelling) fails the whole call.
        let (status, text) = aws
            .ec2(
                "AuthorizeSecurityGroupIngress",
                &[
                    ("GroupId", &group),
                    ("IpPermissions.1.IpProtocol", "tcp"),
                    ("IpPermissions.1.FromPort", "2049"),
                    ("IpPermissions.1.ToPort", "2049"),
                    ("IpPermissions.1.IpRanges.1.CidrIp", "10.0.0.0/16"),
                ],
            )
            .await;
        assert_eq!(status, 400);
        assert!(text.contains("<Code>InvalidPermission.Duplicate</Code>"), "{text}");
        let mut params = vec![("GroupId", "sg-00000000000000000")];
        params.extend_from_slice(PERMISSIONS);
        let (_, text) = aws.ec2("AuthorizeSecurityGroupIngress", &params).await;
        assert!(text.contains("<Code>InvalidGroup.NotFound</Code>"), "{text}");
    }

    #[tokio::test]
    async fn describing_an_unknown_id_fails_and_filters_that_match_nothing_do_not() {
        let aws = Aws::start().await;
        let (status, text) = aws.ec2("DescribeSecurityGroups", &[("GroupId.1", "sg-0123456789abcdef0")]).await;
        assert_eq!(status, 400);
        assert!(text.contains("<Code>InvalidGroup.NotFound</Code>"), "{text}");
        let text = aws
            .ec2_ok("DescribeSecurityGroups", &[("Filter.1.Name", "group-name"), ("Filter.1.Value.1", "none")])
            .await;
        assert!(text.contains("<securityGroupInfo></securityGroupInfo>"), "{text}");
    }

    #[tokio::test]
    async fn a_group_named_by_another_groups_rule_or_the_default_cannot_be_deleted() {
        let aws = Aws::start().await;
        let vpc = aws.vpc("10.0.0.0/16").await;
        let a = aws.group(&vpc, "a").await;
        let b = aws.group(&vpc, "b").await;
        let rule = [
            ("GroupId", a.as_str()),
            ("IpPermissions.1.IpProtocol", "tcp"),
            ("IpPermissions.1.FromPort", "988"),
            ("IpPermissions.1.ToPort", "988"),
            ("IpPermissions.1.Groups.1.GroupId", b.as_str()),
        ];
        aws.ec2_ok("AuthorizeSecurityGroupIngress", &rule).await;
        let (status, text) = aws.ec2("DeleteSecurityGroup", &[("GroupId", &b)]).await;
        assert_eq!(status, 400);
        assert!(text.contains("<Code>DependencyViolation</Code>"), "{text}");
        let text = aws.ec2_ok("DeleteSecurityGroup", &[("GroupId", &a)]).await;
        assert!(text.contains(&format!("<groupId>{a}</groupId>")), "{text}");
        aws.ec2_ok("DeleteSecurityGroup", &[("GroupId", &b)]).await;
        let (_, text) = aws.ec2("DeleteSecurityGroup", &[("GroupId", &b)]).await;
        assert!(text.contains("<Code>InvalidGroup.NotFound</Code>"), "{text}");
        let text = aws
            .ec2_ok("DescribeSecurityGroups", &[("Filter.1.Name", "group-name"), ("Filter.1.Value.1", "default")])
            .await;
        let default = between(&text, "<groupId>", "</groupId>");
        let (_, text) = aws.ec2("DeleteSecurityGroup", &[("GroupId", &default)]).await;
        assert!(text.contains("<Code>CannotDelete</Code>"), "{text}");
    }

    #[tokio::test]
    async fn a_planted_foreign_group_blocks_our_name_and_stays() {
        let aws = Aws::start().await;
        let vpc = aws.vpc("10.0.0.0/16").await;
        let foreign = aws.sim.aws_plant_foreign_group(REGION, &vpc, "bc-x", &[("Name", "bc-x")]).unwrap();
        let (_, text) =
            aws.ec2("CreateSecurityGroup", &[("VpcId", &vpc), ("GroupName", "bc-x"), ("GroupDescription", "d")]).await;
        assert!(text.contains("<Code>InvalidGroup.Duplicate</Code>"), "{text}");
        let text = aws
            .ec2_ok("DescribeSecurityGroups", &[("Filter.1.Name", "group-name"), ("Filter.1.Value.1", "bc-x")])
            .await;
        assert!(text.contains(&foreign) && !text.contains("bc:managed-by"), "{text}");
        assert!(aws.sim.aws_group_ids(REGION).contains(&foreign));
    }

    #[tokio::test]
    async fn the_default_egress_rule_is_revoked_like_any_and_revoking_a_missing_one_fails_the_call() {
        let aws = Aws::start().await;
        let vpc = aws.vpc("10.0.0.0/16").await;
        let group = aws.group(&vpc, "bc-rule").await;
        let everything = [
            ("GroupId", group.as_str()),
            ("IpPermissions.1.IpProtocol", "-1"),
            ("IpPermissions.1.IpRanges.1.CidrIp", "0.0.0.0/0"),
        ];
        aws.ec2_ok("RevokeSecurityGroupEgress", &everything).await;
        let text = aws.ec2_ok("DescribeSecurityGroups", &[("GroupId.1", &group)]).await;
        assert!(text.contains("<ipPermissionsEgress></ipPermissionsEgress>"), "{text}");
        let (status, text) = aws.ec2("RevokeSecurityGroupEgress", &everything).await;
        assert_eq!(status, 400);
        assert!(text.contains("<Code>InvalidPermission.NotFound</Code>"), "{text}");
        let out = [
            ("GroupId", group.as_str()),
            ("IpPermissions.1.IpProtocol", "tcp"),
            ("IpPermissions.1.FromPort", "443"),
            ("IpPermissions.1.ToPort", "443"),
            ("IpPermissions.1.Ipv6Ranges.1.CidrIpv6", "::/0"),
        ];
        aws.ec2_ok("AuthorizeSecurityGroupEgress", &out).await;
        let text = aws.ec2_ok("DescribeSecurityGroups", &[("GroupId.1", &group)]).await;
        assert!(text.contains("<cidrIpv6>::/0</cidrIpv6>") && text.contains("<fromPort>443</fromPort>"), "{text}");
        let (_, text) = aws.ec2("AuthorizeSecurityGroupEgress", &out).await;
        assert!(text.contains("<Code>InvalidPermission.Duplicate</Code>"), "{text}");
    }
}
