//! EC2 by hand: the query protocol (a form-encoded `POST /` with `Action` and
//! `Version=2016-11-15`, lists numbered from 1), signed with SigV4 for service `ec2`, sent with
//! the project's reqwest client, answered in XML. Throttling (`RequestLimitExceeded`) is retried
//! here with jittered exponential backoff, and so are 5xx answers to calls that are safe to
//! repeat. VPCs, subnets, security groups and machines; nothing here knows what they are for.
use std::time::{Duration, SystemTime};

use aws_sigv4::http_request::{SignableBody, SignableRequest, SigningSettings, sign};
use aws_sigv4::sign::v4;
use quick_xml::events::Event;

use super::{Aws, classify, lost};
use crate::provider::{
    AwsInstance, AwsSubnet, AwsVpc, Flow, GroupRule, InstanceRun, MachineState, ProviderError, ProviderResult,
    RuleSource, SecurityGroup, Tag,
};

pub(super) const VERSION: &str = "2016-11-15";
const SIGNING_NAME: &str = "ec2";
const CONTENT_TYPE: &str = "application/x-www-form-urlencoded";
const MAX_BACKOFF: Duration = Duration::from_secs(20);
/// The most items a filtered describe asks for per page (EC2 takes 5 to 1000).
const MAX_RESULTS: &str = "1000";

/// What a call does at EC2, which decides what a lost answer means and whether a 5xx may be
/// sent again.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Effect {
    Reads,
    /// Acts, and a repeat could act twice (no idempotency token).
    Acts,
    /// Acts, but a repeat is harmless (a client token, or a delete).
    ActsIdempotently,
}

/// A query-protocol form: `Action` and `Version` first, then the members in the order added.
#[derive(Clone, Debug)]
pub(super) struct Form {
    params: Vec<(String, String)>,
}

impl Form {
    pub(super) fn new(action: &str) -> Self {
        Form { params: vec![("Action".into(), action.into()), ("Version".into(), VERSION.into())] }
    }

    pub(super) fn action(&self) -> &str {
        &self.params[0].1
    }

    pub(super) fn add(&mut self, name: impl Into<String>, value: impl Into<String>) -> &mut Self {
        self.params.push((name.into(), value.into()));
        self
    }

    /// `TagSpecification.1` for a resource of `resource_type`, with each tag numbered.
    pub(super) fn tag_specification(&mut self, resource_type: &str, tags: &[Tag]) -> &mut Self {
        if tags.is_empty() {
            return self;
        }
        self.add("TagSpecification.1.ResourceType", resource_type);
        for (n, tag) in tags.iter().enumerate() {
            self.add(format!("TagSpecification.1.Tag.{}.Key", n + 1), tag.key.as_str());
            self.add(format!("TagSpecification.1.Tag.{}.Value", n + 1), tag.value.as_str());
        }
        self
    }

    /// `Filter.N.Name` with one value, numbered after the filters already added.
    pub(super) fn filter(&mut self, name: &str, value: &str) -> &mut Self {
        let n = self.params.iter().filter(|(k, _)| k.starts_with("Filter.") && k.ends_with(".Name")).count() + 1;
        self.add(format!("Filter.{n}.Name"), name);
        self.add(format!("Filter.{n}.Value.1"), value)
    }

    /// Percent-encoded as the SDK writes it: unreserved characters as they are, the rest `%XX`.
    pub(super) fn encode(&self) -> String {
        self.params.iter().map(|(k, v)| format!("{}={}", encode(k), encode(v))).collect::<Vec<_>>().join("&")
    }
}

fn encode(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for byte in text.bytes() {
        match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => out.push(byte as char),
            _ => out.push_str(&format!("%{byte:02X}")),
        }
    }
    out
}

/// An XML element: its local name, its text, its children in order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(super) struct Element {
    pub name: String,
    pub text: String,
    pub children: Vec<Element>,
}

impl Element {
    pub(super) fn child(&self, name: &str) -> Option<&Element> {
        self.children.iter().find(|c| c.name == name)
    }

    /// The text of the child `name`, when it has any.
    pub(super) fn text_of(&self, name: &str) -> Option<String> {
        self.child(name).map(|c| c.text.trim().to_owned()).filter(|t| !t.is_empty())
    }

    pub(super) fn text_or_empty(&self, name: &str) -> String {
        self.text_of(name).unwrap_or_default()
    }

    /// The `<item>`s of the list element `name` (none when it is absent).
    pub(super) fn items(&self, name: &str) -> impl Iterator<Item = &Element> {
        self.child(name).into_iter().flat_map(|list| list.children.iter().filter(|c| c.name == "item"))
    }

    fn tags(&self) -> Vec<Tag> {
        self.items("tagSet").map(|t| Tag { key: t.text_or_empty("key"), value: t.text_or_empty("value") }).collect()
    }
}

pub(super) fn parse_xml(xml: &str) -> Result<Element, String> {
    let mut reader = quick_xml::Reader::from_str(xml);
    let mut stack: Vec<Element> = vec![Element::default()];
    loop {
        let event = reader.read_event().map_err(|e| format!("unreadable XML from EC2: {e}"))?;
        match event {
            Event::Start(start) => {
                stack.push(Element { name: start.local_name().as_ref().to_owned(), ..Element::default() });
            }
            Event::Empty(start) => {
                let element = Element { name: start.local_name().as_ref().to_owned(), ..Element::default() };
                if let Some(parent) = stack.last_mut() {
                    parent.children.push(element);
                }
            }
            Event::End(_) => {
                let element = stack.pop().filter(|_| !stack.is_empty()).ok_or("unbalanced XML from EC2")?;
                if let Some(parent) = stack.last_mut() {
                    parent.children.push(element);
                }
            }
            Event::Text(text) => {
                if let Some(current) = stack.last_mut() {
                    current.text.push_str(&text.xml10_content());
                }
            }
            Event::CData(data) => {
                if let Some(current) = stack.last_mut() {
                    current.text.push_str(&data.xml10_content());
                }
            }
            Event::GeneralRef(reference) => {
                let resolved = match reference.resolve_char_ref() {
                    Ok(Some(c)) => c,
                    Ok(None) => match reference.xml10_content().as_ref() {
                        "amp" => '&',
                        "lt" => '<',
                        "gt" => '>',
                        "quot" => '"',
                        "apos" => '\'',
                        other => return Err(format!("unknown XML entity &{other}; from EC2")),
                    },
                    Err(e) => return Err(format!("unreadable XML from EC2: {e}")),
                };
                if let Some(current) = stack.last_mut() {
                    current.text.push(resolved);
                }
            }
            Event::Eof => break,
            _ => {}
        }
    }
    let mut document = stack.pop().filter(|_| stack.is_empty()).ok_or("unbalanced XML from EC2")?;
    let root = document.children.pop().filter(|_| document.children.is_empty()).ok_or("no XML root from EC2")?;
    Ok(root)
}

/// The code and message of an EC2 error answer
/// (`<Response><Errors><Error><Code/><Message/></Error></Errors><RequestID/></Response>`).
pub(super) fn parse_error(xml: &str) -> Option<(String, String)> {
    let root = parse_xml(xml).ok()?;
    let error = root.child("Errors")?.child("Error")?;
    Some((error.text_of("Code")?, error.text_or_empty("Message")))
}

/// Full jitter: a random share of `min(initial × 2^attempt, 20 s)`.
pub(super) fn backoff(initial: Duration, attempt: u32, unit: f64) -> Duration {
    let cap = initial.saturating_mul(2u32.saturating_pow(attempt)).min(MAX_BACKOFF);
    cap.mul_f64(unit.clamp(0.0, 1.0))
}

fn random_unit() -> f64 {
    let mut bytes = [0u8; 8];
    if getrandom::fill(&mut bytes).is_err() {
        return 1.0;
    }
    (u64::from_le_bytes(bytes) >> 11) as f64 / (1u64 << 53) as f64
}

fn is_throttling(code: &str) -> bool {
    super::THROTTLING_CODES.contains(&code)
}

impl Aws {
    fn ec2_url(&self, region: &str) -> String {
        match &self.endpoint {
            Some(url) => format!("{}/", url.trim_end_matches('/')),
            None => format!("https://ec2.{region}.{}/", super::dns_suffix(region)),
        }
    }

    /// Every page of a filtered describe: asked at most `MaxResults` at a time, following
    /// `nextToken` until EC2 gives none. (A describe by id takes no `MaxResults`.)
    async fn ec2_pages(&self, region: &str, form: &Form) -> ProviderResult<Vec<Element>> {
        let mut pages = Vec::new();
        let mut token: Option<String> = None;
        loop {
            let mut page = form.clone();
            page.add("MaxResults", MAX_RESULTS);
            if let Some(token) = &token {
                page.add("NextToken", token.as_str());
            }
            let root = self.ec2(region, &page, Effect::Reads).await?;
            token = root.text_of("nextToken");
            pages.push(root);
            if token.is_none() {
                return Ok(pages);
            }
        }
    }

    /// One EC2 call, retried while throttled (and on 5xx unless a repeat could act twice).
    pub(super) async fn ec2(&self, region: &str, form: &Form, effect: Effect) -> ProviderResult<Element> {
        let credentials = self.signing_credentials().await?;
        let action = form.action().to_owned();
        let url = self.ec2_url(region);
        let parsed = reqwest::Url::parse(&url)
            .map_err(|e| ProviderError::misconfigured(format!("bad EC2 endpoint {url}: {e}")))?;
        let host = match (parsed.host_str(), parsed.port()) {
            (Some(host), Some(port)) => format!("{host}:{port}"),
            (Some(host), None) => host.to_owned(),
            _ => return Err(ProviderError::misconfigured(format!("bad EC2 endpoint {url}"))),
        };
        let body = form.encode();
        let acts = effect != Effect::Reads;
        if acts {
            crate::provider::fence::before_change().await?;
        }
        let mut attempt = 0;
        loop {
            attempt += 1;
            let signed = sign_headers(&credentials, region, &url, &host, &body)?;
            let mut request = self.http.post(&url).header("content-type", CONTENT_TYPE).body(body.clone());
            for (name, value) in &signed {
                request = request.header(name.as_str(), value.as_str());
            }
            let started = std::time::Instant::now();
            let retryable = match request.send().await {
                Err(err) => {
                    self.count("ec2", &action, "transport", started);
                    let message = format!("EC2 did not answer: {err}");
                    // Never sent at all, or it only read: safe to send again.
                    if acts && !err.is_connect() {
                        return Err(lost(true, &message));
                    }
                    lost(false, &message)
                }
                Ok(response) => {
                    let status = response.status().as_u16();
                    self.count("ec2", &action, &status.to_string(), started);
                    let text = response.text().await.unwrap_or_default();
                    if (200..300).contains(&status) {
                        return parse_xml(&text).map_err(|message| lost(acts, &message));
                    }
                    let (code, message) = parse_error(&text).unwrap_or_else(|| (String::new(), text.clone()));
                    let err = classify(Some(status), Some(code.as_str()).filter(|c| !c.is_empty()), &message, acts);
                    let again = is_throttling(&code) || (status >= 500 && effect != Effect::Acts);
                    if !again {
                        return Err(err);
                    }
                    err
                }
            };
            if attempt >= self.settings.max_attempts {
                return Err(retryable);
            }
            tokio::time::sleep(backoff(self.settings.initial_backoff, attempt - 1, random_unit())).await;
        }
    }
}

/// The SigV4 headers (`x-amz-date`, `authorization`, and `x-amz-security-token` with a session)
/// for a form POST to `url`.
fn sign_headers(
    credentials: &aws_credential_types::Credentials,
    region: &str,
    url: &str,
    host: &str,
    body: &str,
) -> ProviderResult<Vec<(String, String)>> {
    let failed = |e: &dyn std::fmt::Display| ProviderError::misconfigured(format!("cannot sign for EC2: {e}"));
    let identity = credentials.clone().into();
    let params = v4::SigningParams::builder()
        .identity(&identity)
        .region(region)
        .name(SIGNING_NAME)
        .time(SystemTime::now())
        .settings(SigningSettings::default())
        .build()
        .map_err(|e| failed(&e))?
        .into();
    let headers = [("host", host), ("content-type", CONTENT_TYPE)];
    let request = SignableRequest::new("POST", url, headers.into_iter(), SignableBody::Bytes(body.as_bytes()))
        .map_err(|e| failed(&e))?;
    let (instructions, _signature) = sign(request, &params).map_err(|e| failed(&e))?.into_parts();
    Ok(instructions.headers().map(|(k, v)| (k.to_owned(), v.to_owned())).collect())
}

/// The request forms, one function per call, so tests can hold them against the captures.
pub(super) mod forms;

fn vpc_from(item: &Element) -> AwsVpc {
    AwsVpc {
        id: item.text_or_empty("vpcId"),
        cidr_block: item.text_or_empty("cidrBlock"),
        state: item.text_or_empty("state"),
        tags: item.tags(),
    }
}

fn subnet_from(item: &Element) -> AwsSubnet {
    AwsSubnet {
        id: item.text_or_empty("subnetId"),
        vpc_id: item.text_or_empty("vpcId"),
        availability_zone: item.text_or_empty("availabilityZone"),
        cidr_block: item.text_or_empty("cidrBlock"),
        state: item.text_or_empty("state"),
        tags: item.tags(),
    }
}

/// A permission's rules, one per source (a permission may carry several).
fn rules_of(permission: &Element) -> Vec<GroupRule> {
    let protocol = permission.text_or_empty("ipProtocol");
    let port = |name: &str| permission.text_of(name).and_then(|p| p.parse::<i32>().ok()).unwrap_or(-1);
    let (from_port, to_port) = if protocol == "-1" { (-1, -1) } else { (port("fromPort"), port("toPort")) };
    let rule = |source: RuleSource, description: Option<String>| GroupRule {
        protocol: protocol.clone(),
        from_port,
        to_port,
        source,
        description,
    };
    let mut rules = Vec::new();
    for range in permission.items("ipRanges") {
        rules.push(rule(RuleSource::Cidr(range.text_or_empty("cidrIp")), range.text_of("description")));
    }
    for range in permission.items("ipv6Ranges") {
        rules.push(rule(RuleSource::Cidr6(range.text_or_empty("cidrIpv6")), range.text_of("description")));
    }
    for pair in permission.items("groups") {
        rules.push(rule(RuleSource::Group(pair.text_or_empty("groupId")), pair.text_of("description")));
    }
    rules
}

pub(super) fn security_group_from(item: &Element) -> SecurityGroup {
    SecurityGroup {
        id: item.text_or_empty("groupId"),
        name: item.text_or_empty("groupName"),
        vpc_id: item.text_or_empty("vpcId"),
        tags: item.tags(),
        ingress: item.items("ipPermissions").flat_map(rules_of).collect(),
        egress: item.items("ipPermissionsEgress").flat_map(rules_of).collect(),
    }
}

pub(super) fn instance_from(item: &Element) -> AwsInstance {
    AwsInstance {
        id: item.text_or_empty("instanceId"),
        state: MachineState::parse(&item.child("instanceState").map(|s| s.text_or_empty("name")).unwrap_or_default()),
        image_id: item.text_or_empty("imageId"),
        instance_type: item.text_or_empty("instanceType"),
        subnet_id: item.text_of("subnetId"),
        vpc_id: item.text_of("vpcId"),
        availability_zone: item.child("placement").and_then(|p| p.text_of("availabilityZone")),
        private_ip: item.text_of("privateIpAddress"),
        public_ip: item.text_of("ipAddress"),
        tags: item.tags(),
        security_group_ids: item.items("groupSet").map(|g| g.text_or_empty("groupId")).collect(),
    }
}

fn instances_in(root: &Element) -> Vec<AwsInstance> {
    root.items("reservationSet").flat_map(|r| r.items("instancesSet")).map(instance_from).collect()
}

/// A refusal whose code says the thing is not there.
fn is_gone(err: &ProviderError, codes: &[&str]) -> bool {
    matches!(err, ProviderError::Refused { .. }) && err.aws_code().is_some_and(|c| codes.contains(&c))
}

fn unreadable(what: &str) -> ProviderError {
    ProviderError::Unknown { message: format!("unreadable {what} from EC2") }
}

const VPC_GONE: &[&str] = &["InvalidVpcID.NotFound"];
const SUBNET_GONE: &[&str] = &["InvalidSubnetID.NotFound"];
const GROUP_GONE: &[&str] = &["InvalidGroup.NotFound"];
const INSTANCE_GONE: &[&str] = &["InvalidInstanceID.NotFound"];

/// AWS networks: a VPC (with DNS support and DNS hostnames, which EFS names need) and one subnet
/// per zone. Tags (a `Name` and the caller's ownership tag) are written in the create call
/// itself. Names are not unique at EC2: a find answers every match, for the caller to check
/// ownership. Every call names its region.
impl Aws {
    /// CreateVpc, then `vpc_enable_dns`. A failure after the create is `Unknown` (the VPC
    /// exists): find it by name and call `vpc_enable_dns` again.
    pub async fn vpc_create(&self, region: &str, cidr_block: &str, tags: &[Tag]) -> ProviderResult<AwsVpc> {
        let root = self.ec2(region, &forms::create_vpc(cidr_block, tags), Effect::Acts).await?;
        let vpc = root.child("vpc").map(vpc_from).filter(|v| !v.id.is_empty()).ok_or_else(|| unreadable("VPC"))?;
        self.vpc_enable_dns(region, &vpc.id).await.map_err(|err| ProviderError::Unknown {
            message: format!("VPC {} made, its DNS attributes not set: {}", vpc.id, err.message()),
        })?;
        Ok(vpc)
    }

    /// Sets EnableDnsSupport and EnableDnsHostnames (idempotent).
    pub async fn vpc_enable_dns(&self, region: &str, vpc_id: &str) -> ProviderResult<()> {
        for attribute in ["EnableDnsSupport", "EnableDnsHostnames"] {
            self.ec2(region, &forms::modify_vpc_attribute(vpc_id, attribute), Effect::ActsIdempotently).await?;
        }
        Ok(())
    }

    /// None when EC2 has no such VPC.
    pub async fn vpc_get(&self, region: &str, vpc_id: &str) -> ProviderResult<Option<AwsVpc>> {
        match self.ec2(region, &forms::describe_vpc(vpc_id), Effect::Reads).await {
            Ok(root) => Ok(root.items("vpcSet").map(vpc_from).find(|v| v.id == vpc_id)),
            Err(err) if is_gone(&err, VPC_GONE) => Ok(None),
            Err(err) => Err(err),
        }
    }

    pub async fn vpcs_find_by_name(&self, region: &str, name: &str) -> ProviderResult<Vec<AwsVpc>> {
        let pages = self.ec2_pages(region, &forms::describe_vpcs_named(name)).await?;
        Ok(pages.iter().flat_map(|root| root.items("vpcSet").map(vpc_from)).collect())
    }

    /// False when it was already gone; `DependencyViolation` while subnets or interfaces remain.
    pub async fn vpc_delete(&self, region: &str, vpc_id: &str) -> ProviderResult<bool> {
        match self.ec2(region, &forms::delete_vpc(vpc_id), Effect::ActsIdempotently).await {
            Ok(_) => Ok(true),
            Err(err) if is_gone(&err, VPC_GONE) => Ok(false),
            Err(err) => Err(err),
        }
    }

    pub async fn subnet_create(
        &self,
        region: &str,
        vpc_id: &str,
        availability_zone: &str,
        cidr_block: &str,
        tags: &[Tag],
    ) -> ProviderResult<AwsSubnet> {
        let form = forms::create_subnet(vpc_id, availability_zone, cidr_block, tags);
        let root = self.ec2(region, &form, Effect::Acts).await?;
        root.child("subnet").map(subnet_from).filter(|s| !s.id.is_empty()).ok_or_else(|| unreadable("subnet"))
    }

    /// Every VPC of the region (an adopted one carries no tag of ours), in pages of 1,000.
    pub async fn vpcs_in(&self, region: &str) -> ProviderResult<Vec<AwsVpc>> {
        let pages = self.ec2_pages(region, &Form::new("DescribeVpcs")).await?;
        Ok(pages.iter().flat_map(|root| root.items("vpcSet")).map(vpc_from).collect())
    }

    /// Every subnet of the region, in pages of 1,000.
    pub async fn subnets_in(&self, region: &str) -> ProviderResult<Vec<AwsSubnet>> {
        let pages = self.ec2_pages(region, &Form::new("DescribeSubnets")).await?;
        Ok(pages.iter().flat_map(|root| root.items("subnetSet")).map(subnet_from).collect())
    }

    pub async fn subnets_of_vpc(&self, region: &str, vpc_id: &str) -> ProviderResult<Vec<AwsSubnet>> {
        let pages = self.ec2_pages(region, &forms::describe_subnets_of(vpc_id)).await?;
        Ok(pages.iter().flat_map(|root| root.items("subnetSet").map(subnet_from)).collect())
    }

    /// False when it was already gone.
    pub async fn subnet_delete(&self, region: &str, subnet_id: &str) -> ProviderResult<bool> {
        match self.ec2(region, &forms::delete_subnet(subnet_id), Effect::ActsIdempotently).await {
            Ok(_) => Ok(true),
            Err(err) if is_gone(&err, SUBNET_GONE) => Ok(false),
            Err(err) => Err(err),
        }
    }
}

/// EC2 security groups. A create has no idempotency token: a create whose answer was lost ends
/// in `InvalidGroup.Duplicate` next time, resolved by `security_group_find` and the tags.
impl Aws {
    /// Answers the new group's id.
    pub async fn security_group_create(
        &self,
        region: &str,
        vpc_id: &str,
        name: &str,
        description: &str,
        tags: &[Tag],
    ) -> ProviderResult<String> {
        let form = forms::create_security_group(vpc_id, name, description, tags);
        let root = self.ec2(region, &form, Effect::Acts).await?;
        root.text_of("groupId").ok_or_else(|| unreadable("security group"))
    }

    /// All rules in one call: one that exists already fails the whole call with
    /// `InvalidPermission.Duplicate` (compare with the group's rules first).
    pub async fn security_group_authorize(
        &self,
        region: &str,
        group_id: &str,
        flow: Flow,
        rules: &[GroupRule],
    ) -> ProviderResult<()> {
        if rules.is_empty() {
            return Ok(());
        }
        // A repeat adds nothing: it fails whole with InvalidPermission.Duplicate.
        self.ec2(region, &forms::authorize(group_id, flow, rules), Effect::ActsIdempotently).await.map(|_| ())
    }

    /// All rules in one call; one the group lacks fails the whole call with
    /// `InvalidPermission.NotFound`.
    pub async fn security_group_revoke(
        &self,
        region: &str,
        group_id: &str,
        flow: Flow,
        rules: &[GroupRule],
    ) -> ProviderResult<()> {
        if rules.is_empty() {
            return Ok(());
        }
        // A repeat takes nothing more: it fails whole with InvalidPermission.NotFound.
        self.ec2(region, &forms::revoke(group_id, flow, rules), Effect::ActsIdempotently).await.map(|_| ())
    }

    /// Every group of the region carrying `deployment`'s ownership tag, in pages of 1,000.
    pub async fn security_groups_owned(&self, region: &str, deployment: &str) -> ProviderResult<Vec<SecurityGroup>> {
        let form = forms::describe_owned("DescribeSecurityGroups", deployment);
        let pages = self.ec2_pages(region, &form).await?;
        Ok(pages.iter().flat_map(|root| root.items("securityGroupInfo")).map(security_group_from).collect())
    }

    /// Every group of the VPC, its `default` one too.
    pub async fn security_groups_of_vpc(&self, region: &str, vpc_id: &str) -> ProviderResult<Vec<SecurityGroup>> {
        let pages = self.ec2_pages(region, &forms::describe_security_groups_of(vpc_id)).await?;
        Ok(pages.iter().flat_map(|root| root.items("securityGroupInfo").map(security_group_from)).collect())
    }

    /// The group of that name in the VPC, with its tags for the ownership check.
    pub async fn security_group_find(
        &self,
        region: &str,
        vpc_id: &str,
        name: &str,
    ) -> ProviderResult<Option<SecurityGroup>> {
        let pages = self.ec2_pages(region, &forms::describe_security_groups(vpc_id, name)).await?;
        let mut groups = pages.iter().flat_map(|root| root.items("securityGroupInfo").map(security_group_from));
        Ok(groups.find(|g| g.name.eq_ignore_ascii_case(name)))
    }

    /// False when it was already gone; `DependencyViolation` while an interface uses it.
    pub async fn security_group_delete(&self, region: &str, group_id: &str) -> ProviderResult<bool> {
        match self.ec2(region, &forms::delete_security_group(group_id), Effect::ActsIdempotently).await {
            Ok(_) => Ok(true),
            Err(err) if is_gone(&err, GROUP_GONE) => Ok(false),
            Err(err) => Err(err),
        }
    }
}

/// EC2 machines, one per RunInstances.
impl Aws {
    pub async fn instance_run(&self, region: &str, request: &InstanceRun<'_>) -> ProviderResult<AwsInstance> {
        let root = self.ec2(region, &forms::run_instances(request), Effect::ActsIdempotently).await?;
        root.items("instancesSet").map(instance_from).find(|i| !i.id.is_empty()).ok_or_else(|| unreadable("instance"))
    }

    /// None when EC2 has no such machine (a terminated one stays visible for a while).
    pub async fn instance_get(&self, region: &str, instance_id: &str) -> ProviderResult<Option<AwsInstance>> {
        match self.ec2(region, &forms::describe_instance(instance_id), Effect::Reads).await {
            Ok(root) => Ok(instances_in(&root).into_iter().find(|i| i.id == instance_id)),
            Err(err) if is_gone(&err, INSTANCE_GONE) => Ok(None),
            Err(err) => Err(err),
        }
    }

    pub async fn instances_find_by_name(&self, region: &str, name: &str) -> ProviderResult<Vec<AwsInstance>> {
        let pages = self.ec2_pages(region, &forms::describe_instances_named(name)).await?;
        Ok(pages.iter().flat_map(instances_in).collect())
    }

    /// False when it was already gone.
    pub async fn instance_terminate(&self, region: &str, instance_id: &str) -> ProviderResult<bool> {
        match self.ec2(region, &forms::terminate_instance(instance_id), Effect::ActsIdempotently).await {
            Ok(_) => Ok(true),
            Err(err) if is_gone(&err, INSTANCE_GONE) => Ok(false),
            Err(err) => Err(err),
        }
    }

    /// Every machine of the region carrying `deployment`'s ownership tag (terminated ones too,
    /// while EC2 still shows them), in pages of 1,000.
    pub async fn instances_owned(&self, region: &str, deployment: &str) -> ProviderResult<Vec<AwsInstance>> {
        let pages = self.ec2_pages(region, &forms::describe_owned("DescribeInstances", deployment)).await?;
        Ok(pages.iter().flat_map(instances_in).collect())
    }

    /// Every machine in the VPC (terminated ones too, while EC2 still shows them).
    pub async fn instances_in_vpc(&self, region: &str, vpc_id: &str) -> ProviderResult<Vec<AwsInstance>> {
        let pages = self.ec2_pages(region, &forms::describe_instances_in_vpc(vpc_id)).await?;
        Ok(pages.iter().flat_map(instances_in).collect())
    }

    /// Replaces the machine's security groups with `group_ids` (at least one).
    pub async fn instance_set_groups(
        &self,
        region: &str,
        instance_id: &str,
        group_ids: &[String],
    ) -> ProviderResult<()> {
        let form = forms::modify_instance_groups(instance_id, group_ids);
        // A replace: sent twice, it leaves the same groups.
        self.ec2(region, &form, Effect::ActsIdempotently).await.map(drop)
    }
}
