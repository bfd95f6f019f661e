//! The EC2 forms against the requests aws-sdk-ec2 itself sent (reference section 7.4), the
//! XML answers of section 4, the error table and the credential formats.
use std::time::Duration;

use super::ec2::{self, Element, forms};
use super::{Credentials, classify};
use crate::provider::{Flow, GroupRule, InstanceRun, ProviderError, RuleSource, Tag};
use crate::store::state::ProviderKind;

fn ours(name: &str) -> Vec<Tag> {
    vec![Tag::new("Name", name), Tag::new("bc:managed-by", "svc")]
}

#[test]
fn create_security_group_form_matches_the_sdk_capture() {
    let form = forms::create_security_group("vpc-0a1b", "bc-tenant1", "bc filesystem bc-tenant1", &ours("bc-tenant1"));
    assert_eq!(
        form.encode(),
        "Action=CreateSecurityGroup&Version=2016-11-15&GroupDescription=bc%20filesystem%20bc-tenant1\
         &GroupName=bc-tenant1&VpcId=vpc-0a1b&TagSpecification.1.ResourceType=security-group\
         &TagSpecification.1.Tag.1.Key=Name&TagSpecification.1.Tag.1.Value=bc-tenant1\
         &TagSpecification.1.Tag.2.Key=bc%3Amanaged-by&TagSpecification.1.Tag.2.Value=svc"
    );
}

#[test]
fn authorize_ingress_form_numbers_permissions_and_sources_like_the_sdk() {
    let mut rules = vec![GroupRule {
        description: Some("tenant vpc".into()),
        ..GroupRule::tcp(2049, 2049, RuleSource::Cidr("10.0.0.0/16".into()))
    }];
    rules.extend(GroupRule::lustre(RuleSource::Group("sg-0f".into())));
    assert_eq!(
        forms::authorize("sg-0f", Flow::Ingress, &rules).encode(),
        "Action=AuthorizeSecurityGroupIngress&Version=2016-11-15&GroupId=sg-0f\
         &IpPermissions.1.IpProtocol=tcp&IpPermissions.1.FromPort=2049&IpPermissions.1.ToPort=2049\
         &IpPermissions.1.IpRanges.1.Description=tenant%20vpc&IpPermissions.1.IpRanges.1.CidrIp=10.0.0.0%2F16\
         &IpPermissions.2.IpProtocol=tcp&IpPermissions.2.FromPort=988&IpPermissions.2.ToPort=988\
         &IpPermissions.2.Groups.1.GroupId=sg-0f\
         &IpPermissions.3.IpProtocol=tcp&IpPermissions.3.FromPort=1018&IpPermissions.3.ToPort=1023\
         &IpPermissions.3.Groups.1.GroupId=sg-0f"
    );
}

#[test]
fn describe_and_delete_security_group_forms_match_the_sdk_capture() {
    assert_eq!(
        forms::describe_security_groups("vpc-0a1b", "bc-tenant1").encode(),
        "Action=DescribeSecurityGroups&Version=2016-11-15&Filter.1.Name=vpc-id&Filter.1.Value.1=vpc-0a1b\
         &Filter.2.Name=group-name&Filter.2.Value.1=bc-tenant1"
    );
    assert_eq!(
        forms::delete_security_group("sg-0f").encode(),
        "Action=DeleteSecurityGroup&Version=2016-11-15&GroupId=sg-0f"
    );
}

#[test]
fn nfs_rule_is_tcp_2049_and_lustre_rules_are_988_and_1018_to_1023() {
    let source = RuleSource::Cidr("10.0.0.0/16".into());
    let ports = |rules: Vec<GroupRule>| rules.iter().map(|r| (r.from_port, r.to_port)).collect::<Vec<_>>();
    assert_eq!(ports(GroupRule::nfs(source.clone())), [(2049, 2049)]);
    assert_eq!(ports(GroupRule::lustre(source)), [(988, 988), (1018, 1023)]);
}

#[test]
fn network_forms_carry_tags_at_create_and_one_dns_attribute_per_call() {
    let tags = ours("bc-net1");
    assert_eq!(
        forms::create_vpc("10.0.0.0/16", &tags).encode(),
        "Action=CreateVpc&Version=2016-11-15&CidrBlock=10.0.0.0%2F16&TagSpecification.1.ResourceType=vpc\
         &TagSpecification.1.Tag.1.Key=Name&TagSpecification.1.Tag.1.Value=bc-net1\
         &TagSpecification.1.Tag.2.Key=bc%3Amanaged-by&TagSpecification.1.Tag.2.Value=svc"
    );
    assert_eq!(
        forms::modify_vpc_attribute("vpc-1", "EnableDnsHostnames").encode(),
        "Action=ModifyVpcAttribute&Version=2016-11-15&VpcId=vpc-1&EnableDnsHostnames.Value=true"
    );
    assert_eq!(
        forms::create_subnet("vpc-1", "us-east-1a", "10.0.1.0/24", &tags[..1]).encode(),
        "Action=CreateSubnet&Version=2016-11-15&AvailabilityZone=us-east-1a&CidrBlock=10.0.1.0%2F24&VpcId=vpc-1\
         &TagSpecification.1.ResourceType=subnet&TagSpecification.1.Tag.1.Key=Name&TagSpecification.1.Tag.1.Value=bc-net1"
    );
    assert_eq!(
        forms::describe_vpcs_named("bc-net1").encode(),
        "Action=DescribeVpcs&Version=2016-11-15&Filter.1.Name=tag%3AName&Filter.1.Value.1=bc-net1"
    );
    assert_eq!(
        forms::describe_subnets_of("vpc-1").encode(),
        "Action=DescribeSubnets&Version=2016-11-15&Filter.1.Name=vpc-id&Filter.1.Value.1=vpc-1"
    );
}

#[test]
fn run_instances_form_has_token_groups_base64_user_data_and_tags() {
    let groups = vec!["sg-1".to_owned(), "sg-2".to_owned()];
    let tags = [Tag::new("Name", "bc-inst1")];
    let request = InstanceRun {
        image_id: "ami-1",
        instance_type: "t3.micro",
        subnet_id: "subnet-1",
        security_group_ids: &groups,
        user_data: Some("#!/bin/sh\n"),
        client_token: "bc-inst1",
        tags: &tags,
    };
    assert_eq!(
        forms::run_instances(&request).encode(),
        "Action=RunInstances&Version=2016-11-15&ClientToken=bc-inst1&ImageId=ami-1&InstanceType=t3.micro\
         &MaxCount=1&MinCount=1&SecurityGroupId.1=sg-1&SecurityGroupId.2=sg-2&SubnetId=subnet-1\
         &UserData=IyEvYmluL3NoCg%3D%3D&TagSpecification.1.ResourceType=instance\
         &TagSpecification.1.Tag.1.Key=Name&TagSpecification.1.Tag.1.Value=bc-inst1"
    );
    assert_eq!(
        forms::describe_instances_named("bc-inst1").encode(),
        "Action=DescribeInstances&Version=2016-11-15&Filter.1.Name=tag%3AName&Filter.1.Value.1=bc-inst1"
    );
    assert_eq!(
        forms::terminate_instance("i-1").encode(),
        "Action=TerminateInstances&Version=2016-11-15&InstanceId.1=i-1"
    );
}

const DESCRIBE_GROUPS: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<DescribeSecurityGroupsResponse xmlns="http://ec2.amazonaws.com/doc/2016-11-15/">
    <requestId>59dbff89-35bd-4eac-99ed-be587EXAMPLE</requestId>
    <securityGroupInfo>
        <item>
            <ownerId>123456789012</ownerId>
            <groupId>sg-0123456789abcdef0</groupId>
            <groupName>bc-tenant1</groupName>
            <groupDescription>bc filesystem bc-tenant1 &amp; friends</groupDescription>
            <vpcId>vpc-0a1b</vpcId>
            <ipPermissions>
                <item>
                    <ipProtocol>tcp</ipProtocol>
                    <fromPort>988</fromPort>
                    <toPort>988</toPort>
                    <groups>
                        <item><userId>123456789012</userId><groupId>sg-0123456789abcdef0</groupId></item>
                    </groups>
                    <ipRanges>
                        <item><cidrIp>10.0.0.0/16</cidrIp><description>tenant vpc</description></item>
                    </ipRanges>
                    <ipv6Ranges/>
                    <prefixListIds/>
                </item>
            </ipPermissions>
            <ipPermissionsEgress>
                <item><ipProtocol>-1</ipProtocol><groups/><ipRanges><item><cidrIp>0.0.0.0/0</cidrIp></item></ipRanges></item>
            </ipPermissionsEgress>
            <tagSet>
                <item><key>Name</key><value>bc-tenant1</value></item>
                <item><key>bc:managed-by</key><value>svc</value></item>
            </tagSet>
        </item>
    </securityGroupInfo>
</DescribeSecurityGroupsResponse>"#;

#[test]
fn describe_security_groups_answer_gives_tags_and_tcp_rules() {
    let root = ec2::parse_xml(DESCRIBE_GROUPS).unwrap();
    assert_eq!(root.name, "DescribeSecurityGroupsResponse");
    let groups: Vec<_> = root.items("securityGroupInfo").map(ec2::security_group_from).collect();
    assert_eq!(groups.len(), 1);
    let group = &groups[0];
    assert_eq!(
        (group.id.as_str(), group.name.as_str(), group.vpc_id.as_str()),
        ("sg-0123456789abcdef0", "bc-tenant1", "vpc-0a1b")
    );
    assert_eq!(group.tags, ours("bc-tenant1"));
    assert_eq!(
        group.ingress,
        vec![
            GroupRule {
                description: Some("tenant vpc".into()),
                ..GroupRule::tcp(988, 988, RuleSource::Cidr("10.0.0.0/16".into()))
            },
            GroupRule::tcp(988, 988, RuleSource::Group("sg-0123456789abcdef0".into())),
        ]
    );
    let item = root.child("securityGroupInfo").unwrap().child("item").unwrap();
    assert_eq!(item.text_of("groupDescription").as_deref(), Some("bc filesystem bc-tenant1 & friends"));
}

#[test]
fn create_answers_and_instance_answers_are_read() {
    let created = ec2::parse_xml(
        r#"<CreateSecurityGroupResponse xmlns="http://ec2.amazonaws.com/doc/2016-11-15/">
           <requestId>r</requestId><return>true</return><groupId>sg-0aa</groupId>
           <tagSet><item><key>Name</key><value>bc-x</value></item></tagSet></CreateSecurityGroupResponse>"#,
    )
    .unwrap();
    assert_eq!(created.text_of("groupId").as_deref(), Some("sg-0aa"));

    let run = ec2::parse_xml(
        r#"<RunInstancesResponse xmlns="http://ec2.amazonaws.com/doc/2016-11-15/"><requestId>r</requestId>
           <reservationId>r-1</reservationId><ownerId>1</ownerId><groupSet/>
           <instancesSet><item><instanceId>i-0abc</instanceId><imageId>ami-1</imageId>
           <instanceState><code>0</code><name>pending</name></instanceState>
           <instanceType>t3.micro</instanceType><placement><availabilityZone>us-east-1a</availabilityZone></placement>
           <subnetId>subnet-1</subnetId><vpcId>vpc-1</vpcId><privateIpAddress>10.0.1.5</privateIpAddress>
           <tagSet><item><key>Name</key><value>bc-inst1</value></item></tagSet></item></instancesSet>
           </RunInstancesResponse>"#,
    )
    .unwrap();
    let instance = ec2::instance_from(run.items("instancesSet").next().unwrap());
    assert_eq!(instance.id, "i-0abc");
    assert_eq!(instance.state, crate::provider::MachineState::Pending);
    assert_eq!(instance.availability_zone.as_deref(), Some("us-east-1a"));
    assert_eq!(instance.private_ip.as_deref(), Some("10.0.1.5"));
    assert_eq!(instance.public_ip, None);
    assert_eq!(instance.tags, vec![Tag::new("Name", "bc-inst1")]);
}

#[test]
fn error_answer_gives_code_and_message() {
    let xml = r#"<?xml version="1.0" encoding="UTF-8"?>
<Response><Errors><Error><Code>InvalidGroup.NotFound</Code><Message>The security group 'sg-1' does not exist</Message></Error></Errors><RequestID>0f3c</RequestID></Response>"#;
    assert_eq!(
        ec2::parse_error(xml),
        Some(("InvalidGroup.NotFound".into(), "The security group 'sg-1' does not exist".into()))
    );
    assert_eq!(ec2::parse_error("<html>bad gateway</html>"), None);
    assert_eq!(ec2::parse_error("not xml at all <"), None);
    assert!(ec2::parse_xml("<a><b></a>").is_err());
    assert_eq!(
        ec2::parse_xml("<a>x&#65;&lt;</a>").unwrap(),
        Element { name: "a".into(), text: "xA<".into(), children: vec![] }
    );
}

#[test]
fn throttling_and_5xx_wait_lost_creates_are_unknown_other_4xx_are_refused_with_the_code() {
    let retry_later = |e: &ProviderError| matches!(e, ProviderError::RetryLater { .. });
    // Throttled: nothing was done, even on a create.
    for code in ["RequestLimitExceeded", "ThrottlingException", "Throttling"] {
        assert!(retry_later(&classify(Some(503), Some(code), "slow down", true)), "{code}");
        assert!(retry_later(&classify(Some(400), Some(code), "slow down", false)), "{code}");
    }
    assert!(retry_later(&classify(Some(429), Some("TooManyRequests"), "", true)));
    // 5xx: wait on a read, unknown on a create.
    assert!(retry_later(&classify(Some(500), Some("InternalServerError"), "", false)));
    assert!(matches!(
        classify(Some(503), Some("InsufficientThroughputCapacity"), "", true),
        ProviderError::Unknown { .. }
    ));
    assert!(matches!(classify(Some(400), Some("RequestTimeout"), "", true), ProviderError::Unknown { .. }));
    // No answer at all.
    assert!(retry_later(&classify(None, None, "connection reset", false)));
    assert!(matches!(classify(None, None, "connection reset", true), ProviderError::Unknown { .. }));
    // Refusals keep status and code.
    for (status, code) in [
        (409, "FileSystemAlreadyExists"),
        (400, "InvalidGroup.Duplicate"),
        (400, "DependencyViolation"),
        (409, "FileSystemInUse"),
        (404, "FileSystemNotFound"),
        (400, "FileSystemNotFound"),
    ] {
        let err = classify(Some(status), Some(code), "words", true);
        assert_eq!(err, ProviderError::aws_refused(status, code, "words"));
        assert_eq!(err.message(), format!("AWS {code}: words"));
        assert_eq!(err.aws_code(), Some(code));
    }
    assert_eq!(classify(None, None, "reset", false).aws_code(), None);
    assert_eq!(ProviderError::refused(422, "name: taken").aws_code(), None);
}

#[test]
fn efs_names_follow_the_partition() {
    assert_eq!(super::efs::efs_dns_name("fs-1", "eu-west-1"), "fs-1.efs.eu-west-1.amazonaws.com");
    assert_eq!(super::efs::efs_dns_name("fs-1", "cn-north-1"), "fs-1.efs.cn-north-1.amazonaws.com.cn");
}

#[test]
fn backoff_is_full_jitter_doubling_up_to_twenty_seconds() {
    let initial = Duration::from_secs(1);
    assert_eq!(ec2::backoff(initial, 0, 1.0), Duration::from_secs(1));
    assert_eq!(ec2::backoff(initial, 3, 1.0), Duration::from_secs(8));
    assert_eq!(ec2::backoff(initial, 10, 1.0), Duration::from_secs(20));
    assert_eq!(ec2::backoff(initial, 3, 0.5), Duration::from_secs(4));
    assert_eq!(ec2::backoff(initial, 3, 0.0), Duration::ZERO);
}

#[test]
fn credential_is_a_colon_pair_with_optional_token_or_sts_json() {
    let pair = Credentials::parse("AKIDEXAMPLE:wJalr/K7MDENG+bPxRfiCY\n").unwrap();
    assert_eq!(pair.access_key_id, "AKIDEXAMPLE");
    assert_eq!(pair.secret_access_key, "wJalr/K7MDENG+bPxRfiCY");
    assert_eq!(pair.session_token, None);
    let with_token = Credentials::parse("AKID:secret:FwoGZXIvYXdzE//token=").unwrap();
    assert_eq!(with_token.session_token.as_deref(), Some("FwoGZXIvYXdzE//token="));
    let json =
        Credentials::parse(r#"{"Version": 1, "AccessKeyId": "AKID", "SecretAccessKey": "s", "SessionToken": "t"}"#)
            .unwrap();
    assert_eq!((json.access_key_id.as_str(), json.secret_access_key.as_str()), ("AKID", "s"));
    assert_eq!(json.session_token.as_deref(), Some("t"));
    assert!(Credentials::parse("AKID").is_err());
    assert!(Credentials::parse("AKID:").is_err());
    assert!(Credentials::parse(r#"{"AccessKeyId": "AKID"}"#).is_err());
    assert!(!format!("{pair:?}").contains("wJalr"), "the secret never shows in logs");
}

#[test]
fn an_aws_account_gets_the_aws_client_and_a_digitalocean_one_the_digitalocean_client() {
    use crate::provider::{AccountRef, Provider, Providers, supports_filesystems};
    crate::init_crypto();
    let providers =
        Providers::new(None, Duration::from_secs(5), std::sync::Arc::new(crate::metrics::Metrics::default()));
    let aws = providers.for_account(&AccountRef {
        id: "acct-aws",
        kind: ProviderKind::Aws,
        api_url: "http://127.0.0.1:9",
        credential_ref: "env:VPS_GRAPH_TEST_NO_SUCH_VARIABLE",
        sim: false,
    });
    assert!(matches!(aws.as_ref(), Provider::Aws(_)));
    let digitalocean = providers.for_account(&AccountRef {
        id: "acct-do",
        kind: ProviderKind::Digitalocean,
        api_url: "http://127.0.0.1:9",
        credential_ref: "env:VPS_GRAPH_TEST_NO_SUCH_VARIABLE",
        sim: false,
    });
    assert!(matches!(digitalocean.as_ref(), Provider::DigitalOcean(_)));
    assert!(supports_filesystems(ProviderKind::Aws) && !supports_filesystems(ProviderKind::Digitalocean));
}

#[tokio::test]
async fn an_aws_account_without_its_credential_sends_nothing() {
    crate::init_crypto();
    let aws = super::Aws::new(
        Some("http://127.0.0.1:9".into()),
        Err("the credential variable X is not set".into()),
        super::Settings::default(),
        std::sync::Arc::new(crate::metrics::Metrics::default()),
    );
    assert!(matches!(aws.vpc_get("us-east-1", "vpc-1").await, Err(ProviderError::Misconfigured { .. })));
    assert!(matches!(aws.efs_get("us-east-1", "fs-1").await, Err(ProviderError::Misconfigured { .. })));
}

/// A loopback stand-in for AWS: records each request and answers what `answer` says for it
/// (given the request and how many came before it).
mod wire {
    use std::sync::{Arc, Mutex};

    use axum::body::Body;
    use axum::extract::{Request, State};
    use axum::response::Response;

    #[derive(Clone, Debug)]
    pub struct Seen {
        pub method: String,
        pub uri: String,
        pub headers: Vec<(String, String)>,
        pub body: String,
    }

    impl Seen {
        pub fn header(&self, name: &str) -> &str {
            self.headers.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str()).unwrap_or("")
        }
    }

    pub type Answer = (u16, Vec<(&'static str, String)>, String);
    type Answerer = Arc<dyn Fn(&Seen, usize) -> Answer + Send + Sync>;

    pub async fn fake(
        answer: impl Fn(&Seen, usize) -> Answer + Send + Sync + 'static,
    ) -> (String, Arc<Mutex<Vec<Seen>>>) {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let state: (Answerer, Arc<Mutex<Vec<Seen>>>) = (Arc::new(answer), seen.clone());
        let app = axum::Router::new().fallback(handle).with_state(state);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await });
        (url, seen)
    }

    async fn handle(State((answer, seen)): State<(Answerer, Arc<Mutex<Vec<Seen>>>)>, request: Request) -> Response {
        let (parts, body) = request.into_parts();
        let body = axum::body::to_bytes(body, usize::MAX).await.unwrap_or_default();
        let request = Seen {
            method: parts.method.to_string(),
            uri: parts.uri.to_string(),
            headers: parts
                .headers
                .iter()
                .map(|(k, v)| (k.as_str().to_owned(), v.to_str().unwrap_or("").to_owned()))
                .collect(),
            body: String::from_utf8_lossy(&body).into_owned(),
        };
        let before = {
            let mut seen = seen.lock().unwrap();
            seen.push(request.clone());
            seen.len() - 1
        };
        let (status, headers, body) = answer(&request, before);
        let mut response = Response::builder().status(status);
        for (k, v) in headers {
            response = response.header(k, v);
        }
        response.body(Body::from(body)).unwrap()
    }
}

fn client(url: &str) -> super::Aws {
    crate::init_crypto();
    super::Aws::new(
        Some(url.to_owned()),
        Ok(Credentials { access_key_id: "AKIDTEST".into(), secret_access_key: "secret".into(), session_token: None }),
        super::Settings { timeout: Duration::from_secs(5), max_attempts: 3, initial_backoff: Duration::from_millis(5) },
        std::sync::Arc::new(crate::metrics::Metrics::default()),
    )
}

fn xml() -> Vec<(&'static str, String)> {
    vec![("content-type", "text/xml;charset=UTF-8".into())]
}

fn ec2_error(code: &str) -> String {
    format!(
        r#"<?xml version="1.0" encoding="UTF-8"?><Response><Errors><Error><Code>{code}</Code><Message>words</Message></Error></Errors><RequestID>r</RequestID></Response>"#
    )
}

#[tokio::test]
async fn ec2_calls_are_signed_for_ec2_in_the_region_and_throttling_is_retried() {
    let created = r#"<CreateSecurityGroupResponse xmlns="http://ec2.amazonaws.com/doc/2016-11-15/"><requestId>r</requestId><return>true</return><groupId>sg-0aa</groupId></CreateSecurityGroupResponse>"#;
    let (url, seen) = wire::fake(move |_, n| {
        if n == 0 { (503, xml(), ec2_error("RequestLimitExceeded")) } else { (200, xml(), created.to_owned()) }
    })
    .await;
    let aws = client(&url);
    let id = aws.security_group_create("eu-west-1", "vpc-1", "bc-x", "bc filesystem bc-x", &ours("bc-x")).await;
    assert_eq!(id, Ok("sg-0aa".to_owned()));
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 2, "one throttled answer, one retry");
    let first = &seen[0];
    assert_eq!((first.method.as_str(), first.uri.as_str()), ("POST", "/"));
    assert_eq!(first.header("content-type"), "application/x-www-form-urlencoded");
    assert_eq!(first.body, forms::create_security_group("vpc-1", "bc-x", "bc filesystem bc-x", &ours("bc-x")).encode());
    let authorization = first.header("authorization");
    assert!(authorization.starts_with("AWS4-HMAC-SHA256 Credential=AKIDTEST/"), "{authorization}");
    assert!(
        authorization.contains("/eu-west-1/ec2/aws4_request, SignedHeaders=content-type;host;x-amz-date, Signature=")
    );
    assert!(!first.header("x-amz-date").is_empty());
    assert_eq!(seen[1].body, first.body);
}

#[tokio::test]
async fn ec2_refusals_keep_their_code_and_a_5xx_on_a_tokenless_create_is_unknown_at_once() {
    let (url, seen) = wire::fake(|request, _| {
        if request.body.contains("Action=CreateSecurityGroup") {
            (400, xml(), ec2_error("InvalidGroup.Duplicate"))
        } else if request.body.contains("Action=DeleteSecurityGroup") {
            (400, xml(), ec2_error("DependencyViolation"))
        } else if request.body.contains("Action=DescribeVpcs") {
            (400, xml(), ec2_error("InvalidVpcID.NotFound"))
        } else {
            (500, xml(), ec2_error("InternalError"))
        }
    })
    .await;
    let aws = client(&url);
    let duplicate = aws.security_group_create("us-east-1", "vpc-1", "bc-x", "d", &[]).await.unwrap_err();
    assert_eq!(duplicate.aws_code(), Some("InvalidGroup.Duplicate"));
    assert!(matches!(duplicate, ProviderError::Refused { status: 400, .. }));
    let in_use = aws.security_group_delete("us-east-1", "sg-1").await.unwrap_err();
    assert_eq!(in_use.aws_code(), Some("DependencyViolation"));
    assert_eq!(aws.vpc_get("us-east-1", "vpc-gone").await, Ok(None));
    assert_eq!(seen.lock().unwrap().len(), 3, "refusals are not retried");
    let lost = aws.vpc_create("us-east-1", "10.0.0.0/16", &[]).await.unwrap_err();
    assert!(matches!(lost, ProviderError::Unknown { .. }), "{lost:?}");
    assert_eq!(seen.lock().unwrap().len(), 4, "a create without a token is not sent twice");
    // A read is retried on 5xx, then waits.
    let subnets = aws.subnets_of_vpc("us-east-1", "vpc-1").await.unwrap_err();
    assert!(matches!(subnets, ProviderError::RetryLater { .. }), "{subnets:?}");
    assert_eq!(seen.lock().unwrap().len(), 7);
}

fn json(target_type: &str) -> Vec<(&'static str, String)> {
    vec![("content-type", target_type.to_owned())]
}

fn efs_description(id: &str, token: &str, state: &str) -> String {
    format!(
        r#"{{"OwnerId":"123456789012","CreationToken":"{token}","FileSystemId":"{id}","CreationTime":1764590000.5,"LifeCycleState":"{state}","Name":"{token}","NumberOfMountTargets":0,"SizeInBytes":{{"Value":6144}},"PerformanceMode":"generalPurpose","Encrypted":true,"ThroughputMode":"elastic","Tags":[{{"Key":"Name","Value":"{token}"}},{{"Key":"bc:managed-by","Value":"svc"}}]}}"#
    )
}

fn efs_error(status: u16, code: &str, extra: &str) -> wire::Answer {
    (
        status,
        vec![
            ("content-type", "application/json".into()),
            ("x-amzn-ErrorType", format!("{code}:http://internal.amazon.com/")),
        ],
        format!(r#"{{"ErrorCode":"{code}","Message":"words"{extra}}}"#),
    )
}

#[tokio::test]
async fn efs_through_the_sdk_reads_answers_and_tells_its_errors_apart() {
    let (url, seen) = wire::fake(|request, n| match (request.method.as_str(), request.uri.as_str()) {
        ("POST", "/2015-02-01/file-systems") if n == 0 => {
            (201, json("application/json"), efs_description("fs-0123456789abcdef0", "bc-fs1", "creating"))
        }
        ("POST", "/2015-02-01/file-systems") => {
            efs_error(409, "FileSystemAlreadyExists", r#","FileSystemId":"fs-0123456789abcdef0""#)
        }
        ("GET", "/2015-02-01/file-systems?CreationToken=bc-gone") => {
            (200, json("application/json"), r#"{"FileSystems":[]}"#.into())
        }
        ("GET", uri) if uri.contains("FileSystemId=fs-gone") => efs_error(404, "FileSystemNotFound", ""),
        ("GET", _) if n == 4 => efs_error(400, "ThrottlingException", ""),
        ("GET", _) => (
            200,
            json("application/json"),
            format!(r#"{{"FileSystems":[{}]}}"#, efs_description("fs-0123456789abcdef0", "bc-fs1", "available")),
        ),
        ("DELETE", _) => efs_error(409, "FileSystemInUse", ""),
        _ => (404, vec![], String::new()),
    })
    .await;
    let aws = client(&url);
    let created = aws.efs_create("us-east-1", "bc-fs1", &ours("bc-fs1")).await.unwrap();
    assert_eq!(created.id, "fs-0123456789abcdef0");
    assert_eq!(created.life_cycle_state, crate::provider::Lifecycle::Creating);
    assert_eq!(created.dns_name, "fs-0123456789abcdef0.efs.us-east-1.amazonaws.com");
    assert_eq!(created.tags, ours("bc-fs1"));
    {
        let seen = seen.lock().unwrap();
        let body: serde_json::Value = serde_json::from_str(&seen[0].body).unwrap();
        assert_eq!(body["CreationToken"], "bc-fs1");
        assert_eq!(body["Encrypted"], true);
        assert_eq!(body["Tags"][1]["Key"], "bc:managed-by");
        assert!(seen[0].header("authorization").contains("/us-east-1/elasticfilesystem/aws4_request"));
    }
    let again = aws.efs_create("us-east-1", "bc-fs1", &ours("bc-fs1")).await.unwrap_err();
    assert_eq!(again.aws_code(), Some("FileSystemAlreadyExists"));
    assert!(again.message().contains("fs-0123456789abcdef0"), "{again:?}");
    assert_eq!(aws.efs_find_by_token("us-east-1", "bc-gone").await, Ok(None));
    assert_eq!(aws.efs_get("us-east-1", "fs-gone").await, Ok(None));
    // One throttled answer, retried by the SDK.
    let found = aws.efs_get("us-east-1", "fs-0123456789abcdef0").await.unwrap().unwrap();
    assert_eq!(found.life_cycle_state, crate::provider::Lifecycle::Available);
    assert!(seen.lock().unwrap()[5].header("amz-sdk-request").starts_with("attempt=2"));
    let in_use = aws.efs_delete("us-east-1", "fs-0123456789abcdef0").await.unwrap_err();
    assert_eq!(in_use.aws_code(), Some("FileSystemInUse"));
    assert!(matches!(in_use, ProviderError::Refused { status: 409, .. }));
}

#[tokio::test]
async fn fsx_through_the_sdk_sends_lustre_fields_and_reads_dns_and_mount_name() {
    use crate::provider::{LustreCreate, LustreDeployment};
    let file_system = r#"{"OwnerId":"123456789012","CreationTime":1764590000,"FileSystemId":"fs-0fedcba9876543210","FileSystemType":"LUSTRE","Lifecycle":"CREATING","StorageCapacity":1200,"StorageType":"SSD","VpcId":"vpc-1","SubnetIds":["subnet-1"],"DNSName":"fs-0fedcba9876543210.fsx.us-east-1.amazonaws.com","Tags":[{"Key":"Name","Value":"bc-fs2"}],"LustreConfiguration":{"DeploymentType":"PERSISTENT_2","PerUnitStorageThroughput":125,"MountName":"abcd1234"}}"#;
    let (url, seen) = wire::fake(move |request, _| {
        let target = request.header("x-amz-target").to_owned();
        match target.as_str() {
            "AWSSimbaAPIService_v20180301.CreateFileSystem" => {
                (200, json("application/x-amz-json-1.1"), format!(r#"{{"FileSystem":{file_system}}}"#))
            }
            "AWSSimbaAPIService_v20180301.DescribeFileSystems" if request.body.contains("fs-gone") => (
                400,
                json("application/x-amz-json-1.1"),
                r#"{"__type":"com.amazonaws.fsx#FileSystemNotFound","Message":"no"}"#.into(),
            ),
            "AWSSimbaAPIService_v20180301.DescribeFileSystems" => {
                (200, json("application/x-amz-json-1.1"), format!(r#"{{"FileSystems":[{file_system}]}}"#))
            }
            "AWSSimbaAPIService_v20180301.DeleteFileSystem" => (
                200,
                json("application/x-amz-json-1.1"),
                r#"{"FileSystemId":"fs-0fedcba9876543210","Lifecycle":"DELETING","LustreResponse":{}}"#.into(),
            ),
            _ => (400, json("application/x-amz-json-1.1"), r#"{"__type":"BadRequest"}"#.into()),
        }
    })
    .await;
    let aws = client(&url);
    let groups = vec!["sg-1".to_owned()];
    let tags = [Tag::new("Name", "bc-fs2")];
    let request = LustreCreate {
        client_request_token: "bc-fs2",
        storage_capacity_gib: 1200,
        deployment: LustreDeployment::Persistent2 { per_unit_storage_throughput: 125 },
        subnet_id: "subnet-1",
        security_group_ids: &groups,
        tags: &tags,
    };
    let created = aws.lustre_create("us-east-1", &request).await.unwrap();
    assert_eq!(created.lifecycle, crate::provider::Lifecycle::Creating);
    assert_eq!(created.dns_name.as_deref(), Some("fs-0fedcba9876543210.fsx.us-east-1.amazonaws.com"));
    assert_eq!(created.mount_name.as_deref(), Some("abcd1234"));
    assert_eq!(created.deployment_type.as_deref(), Some("PERSISTENT_2"));
    {
        let seen = seen.lock().unwrap();
        let body: serde_json::Value = serde_json::from_str(&seen[0].body).unwrap();
        assert_eq!(body["ClientRequestToken"], "bc-fs2");
        assert_eq!(body["FileSystemType"], "LUSTRE");
        assert_eq!(body["SubnetIds"], serde_json::json!(["subnet-1"]));
        assert_eq!(body["SecurityGroupIds"], serde_json::json!(["sg-1"]));
        assert_eq!(body["LustreConfiguration"]["DeploymentType"], "PERSISTENT_2");
        assert_eq!(body["LustreConfiguration"]["PerUnitStorageThroughput"], 125);
        assert_eq!(seen[0].header("content-type"), "application/x-amz-json-1.1");
        assert!(seen[0].header("authorization").contains("/us-east-1/fsx/aws4_request"));
    }
    assert_eq!(aws.lustre_get("us-east-1", "fs-gone").await, Ok(None));
    assert_eq!(aws.lustre_find_by_name("us-east-1", "bc-fs2").await.unwrap().len(), 1);
    assert!(aws.lustre_find_by_name("us-east-1", "bc-other").await.unwrap().is_empty());
    assert_eq!(aws.lustre_delete("us-east-1", "fs-0fedcba9876543210").await, Ok(true));
    let seen = seen.lock().unwrap();
    let delete: serde_json::Value = serde_json::from_str(&seen.last().unwrap().body).unwrap();
    assert_eq!(delete["LustreConfiguration"]["SkipFinalBackup"], true);
}
