//! What an account's listings say of each of its settled resources: as recorded (its own drift
//! read is put off), or absent or changed (its own read confirms before anything is concluded:
//! lists are eventually consistent, and a resource made after its page was read is not on it).
//! A resource none of whose listings was taken is neither: its own hourly read stays as it is.
use std::collections::{HashMap, HashSet};

use crate::provider::{
    AwsInstance, AwsSubnet, AwsVpc, BlockVolume, Droplet, DropletStatus, EfsFileSystem, Family, GroupRule, Lifecycle,
    LustreFileSystem, MachineState, ReservedAddress, SecurityGroup, Share, Snapshot, Vpc,
};
use crate::reconcile::filesystems::missing_rules;

/// What the provider should show of one settled resource.
#[derive(Clone, Debug, PartialEq)]
pub enum Expect {
    /// A block volume at the size last seen.
    Volume {
        id: String,
        size_gib: Option<i64>,
    },
    /// A share at the size last seen, on the VPC of every machine it is attached to.
    Share {
        id: String,
        region: String,
        size_gib: Option<i64>,
        machines: Vec<String>,
    },
    VolumeSnapshot {
        id: String,
        size_gib: Option<f64>,
    },
    ShareSnapshot {
        id: String,
        region: String,
        size_gib: Option<f64>,
    },
    /// A reserved address, still this reservation (its region, and its reservation time where
    /// the provider shows one), on the machine it should be on (none when on no instance).
    Address {
        family: Family,
        ip: String,
        region: String,
        fingerprint: Option<String>,
        on_machine: Option<String>,
    },
    /// A running machine.
    Machine {
        id: String,
    },
    /// A subnet's VPC.
    Vpc {
        id: String,
    },
    /// An AWS network: its VPC and every subnet it should have, available.
    AwsNetwork {
        region: String,
        vpc: String,
        subnets: Vec<String>,
    },
    /// A running EC2 machine.
    AwsMachine {
        region: String,
        id: String,
    },
    /// An available filesystem, behind a security group that still has the rules it was given.
    Filesystem {
        region: String,
        id: String,
        lustre: bool,
        /// How many mount targets EFS should count (one per zone): EFS has no account-wide
        /// listing of mount targets, but each file system's description counts them.
        mount_targets: i64,
        group: Option<(String, Vec<GroupRule>)>,
    },
}

/// A listing of one kind: what the pass reads, each once, in pages of the API's largest size.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Need {
    Volumes,
    Shares(String),
    VolumeSnapshots,
    ShareSnapshots(String),
    Addresses(Family),
    /// The machines this deployment made (by its tag).
    Machines,
    Vpcs,
    /// On AWS, by region: what carries this deployment's ownership tag, and every file system.
    AwsVpcs(String),
    AwsSubnets(String),
    AwsMachines(String),
    SecurityGroups(String),
    EfsFileSystems(String),
    LustreFileSystems(String),
}

impl Expect {
    /// The listings that can confirm it.
    pub fn needs(&self) -> Vec<Need> {
        match self {
            Expect::Volume { .. } => vec![Need::Volumes],
            Expect::Share { region, machines, .. } if machines.is_empty() => vec![Need::Shares(region.clone())],
            Expect::Share { region, .. } => vec![Need::Shares(region.clone()), Need::Machines],
            Expect::VolumeSnapshot { .. } => vec![Need::VolumeSnapshots],
            Expect::ShareSnapshot { region, .. } => vec![Need::ShareSnapshots(region.clone())],
            Expect::Address { family, .. } => vec![Need::Addresses(*family)],
            Expect::Machine { .. } => vec![Need::Machines],
            Expect::Vpc { .. } => vec![Need::Vpcs],
            Expect::AwsNetwork { region, .. } => vec![Need::AwsVpcs(region.clone()), Need::AwsSubnets(region.clone())],
            Expect::AwsMachine { region, .. } => vec![Need::AwsMachines(region.clone())],
            Expect::Filesystem { region, lustre, group, .. } => {
                let own = match lustre {
                    true => Need::LustreFileSystems(region.clone()),
                    false => Need::EfsFileSystems(region.clone()),
                };
                let groups = group.as_ref().map(|_| Need::SecurityGroups(region.clone()));
                std::iter::once(own).chain(groups).collect()
            }
        }
    }
}

/// What one pass's listings hold, by provider id: only what a comparison reads.
#[derive(Debug, Default)]
pub struct Listing {
    volumes: HashMap<String, i64>,
    /// Size and VPCs.
    shares: HashMap<String, (i64, Vec<String>)>,
    /// Volume and share snapshots (their ids never meet): the GiB the provider bills.
    snapshots: HashMap<String, f64>,
    addresses: HashMap<(Family, String), ReservedAddress>,
    /// Whether each is active, and its VPC.
    machines: HashMap<String, (bool, Option<String>)>,
    vpcs: HashSet<String>,
    /// AWS: the available VPCs and subnets, whether each machine runs, each group's inbound
    /// rules, and each filesystem's availability and (EFS) count of mount targets.
    aws_vpcs: HashSet<String>,
    aws_subnets: HashSet<String>,
    aws_machines: HashMap<String, bool>,
    groups: HashMap<String, Vec<GroupRule>>,
    filesystems: HashMap<String, (bool, Option<i64>)>,
    /// The listings taken whole.
    taken: HashSet<Need>,
    /// The ids and words held, in bytes: the inventory's memory, besides the maps' own.
    text_bytes: usize,
}

impl Listing {
    pub fn volumes(&mut self, listed: Vec<BlockVolume>) {
        for v in listed {
            self.text_bytes += v.id.len();
            self.volumes.insert(v.id, v.size_gib);
        }
        self.taken.insert(Need::Volumes);
    }

    pub fn shares(&mut self, region: &str, listed: Vec<Share>) {
        for s in listed {
            self.text_bytes += s.id.len() + s.vpc_ids.iter().map(String::len).sum::<usize>();
            self.shares.insert(s.id, (s.size_gib, s.vpc_ids));
        }
        self.taken.insert(Need::Shares(region.to_owned()));
    }

    /// Snapshots of volumes (`region` None) or of shares in a region.
    pub fn snapshots(&mut self, region: Option<&str>, listed: Vec<Snapshot>) {
        for s in listed.into_iter().filter(|s| s.ready) {
            self.text_bytes += s.id.len();
            self.snapshots.insert(s.id, s.size_gib);
        }
        self.taken.insert(match region {
            None => Need::VolumeSnapshots,
            Some(region) => Need::ShareSnapshots(region.to_owned()),
        });
    }

    pub fn addresses(&mut self, family: Family, listed: Vec<ReservedAddress>) {
        for a in listed {
            let held = [Some(&a.region), a.droplet_id.as_ref(), a.reserved_at.as_ref()];
            self.text_bytes += a.ip.len() * 2 + held.iter().flatten().map(|t| t.len()).sum::<usize>();
            self.addresses.insert((family, a.ip.clone()), a);
        }
        self.taken.insert(Need::Addresses(family));
    }

    pub fn machines(&mut self, listed: Vec<Droplet>) {
        for d in listed {
            self.text_bytes += d.id.len() + d.vpc_id.as_ref().map_or(0, String::len);
            self.machines.insert(d.id, (d.status == DropletStatus::Active, d.vpc_id));
        }
        self.taken.insert(Need::Machines);
    }

    pub fn vpcs(&mut self, listed: Vec<Vpc>) {
        for v in listed {
            self.text_bytes += v.id.len();
            self.vpcs.insert(v.id);
        }
        self.taken.insert(Need::Vpcs);
    }

    pub fn aws_vpcs(&mut self, region: &str, listed: Vec<AwsVpc>) {
        let available = listed.into_iter().filter(|v| Lifecycle::parse(&v.state) == Lifecycle::Available).map(|v| v.id);
        self.text_bytes += insert_all(&mut self.aws_vpcs, available);
        self.taken.insert(Need::AwsVpcs(region.to_owned()));
    }

    pub fn aws_subnets(&mut self, region: &str, listed: Vec<AwsSubnet>) {
        let available = listed.into_iter().filter(|s| Lifecycle::parse(&s.state) == Lifecycle::Available).map(|s| s.id);
        self.text_bytes += insert_all(&mut self.aws_subnets, available);
        self.taken.insert(Need::AwsSubnets(region.to_owned()));
    }

    pub fn aws_machines(&mut self, region: &str, listed: Vec<AwsInstance>) {
        for m in listed {
            self.text_bytes += m.id.len();
            self.aws_machines.insert(m.id, m.state == MachineState::Running);
        }
        self.taken.insert(Need::AwsMachines(region.to_owned()));
    }

    pub fn security_groups(&mut self, region: &str, listed: Vec<SecurityGroup>) {
        for g in listed {
            self.text_bytes += g.id.len() + g.ingress.len() * std::mem::size_of::<GroupRule>();
            self.groups.insert(g.id, g.ingress);
        }
        self.taken.insert(Need::SecurityGroups(region.to_owned()));
    }

    pub fn efs(&mut self, region: &str, listed: Vec<EfsFileSystem>) {
        for f in listed {
            self.text_bytes += f.id.len();
            let available = f.life_cycle_state == Lifecycle::Available;
            self.filesystems.insert(f.id, (available, Some(i64::from(f.number_of_mount_targets))));
        }
        self.taken.insert(Need::EfsFileSystems(region.to_owned()));
    }

    pub fn lustre(&mut self, region: &str, listed: Vec<LustreFileSystem>) {
        for f in listed {
            self.text_bytes += f.id.len();
            self.filesystems.insert(f.id, (f.lifecycle == Lifecycle::Available, None));
        }
        self.taken.insert(Need::LustreFileSystems(region.to_owned()));
    }

    /// Resources listed, of every kind.
    pub fn len(&self) -> usize {
        self.volumes.len()
            + self.shares.len()
            + self.snapshots.len()
            + self.addresses.len()
            + self.machines.len()
            + self.vpcs.len()
            + self.aws_vpcs.len()
            + self.aws_subnets.len()
            + self.aws_machines.len()
            + self.groups.len()
            + self.filesystems.len()
    }

    /// About what the listing holds in memory: its text, and an entry's key, value and slot
    /// in its map.
    pub fn bytes(&self) -> usize {
        const ENTRY: usize = 96;
        self.text_bytes + self.len() * ENTRY
    }

    /// Whether the listings show `expect` as recorded; None when one it needs was not taken.
    pub fn shows(&self, expect: &Expect) -> Option<bool> {
        if !expect.needs().iter().all(|need| self.taken.contains(need)) {
            return None;
        }
        let near = |recorded: Option<f64>, listed: &f64| recorded.is_some_and(|r| (r - listed).abs() < 1e-6);
        Some(match expect {
            Expect::Volume { id, size_gib } => self.volumes.get(id).is_some_and(|size| Some(*size) == *size_gib),
            Expect::Share { id, size_gib, machines, .. } => self.shares.get(id).is_some_and(|(size, vpcs)| {
                Some(*size) == *size_gib
                    && machines.iter().all(|m| self.machine_vpc(m).is_some_and(|v| vpcs.contains(v)))
            }),
            Expect::VolumeSnapshot { id, size_gib } | Expect::ShareSnapshot { id, size_gib, .. } => {
                self.snapshots.get(id).is_some_and(|listed| near(*size_gib, listed))
            }
            Expect::Address { family, ip, region, fingerprint, on_machine } => {
                self.addresses.get(&(*family, ip.clone())).is_some_and(|a| {
                    a.region == *region
                        && (fingerprint.is_none() || a.reserved_at == *fingerprint)
                        && a.droplet_id == *on_machine
                })
            }
            Expect::Machine { id } => self.machines.get(id).is_some_and(|(active, _)| *active),
            Expect::Vpc { id } => self.vpcs.contains(id),
            Expect::AwsNetwork { vpc, subnets, .. } => {
                self.aws_vpcs.contains(vpc) && subnets.iter().all(|s| self.aws_subnets.contains(s))
            }
            Expect::AwsMachine { id, .. } => self.aws_machines.get(id).is_some_and(|running| *running),
            Expect::Filesystem { id, lustre, mount_targets, group, .. } => {
                let shown = self
                    .filesystems
                    .get(id)
                    .is_some_and(|(available, targets)| *available && (*lustre || *targets == Some(*mount_targets)));
                shown
                    && group.as_ref().is_none_or(|(group, rules)| {
                        self.groups.get(group).is_some_and(|has| missing_rules(rules, has).is_empty())
                    })
            }
        })
    }

    fn machine_vpc(&self, machine: &str) -> Option<&String> {
        self.machines.get(machine).and_then(|(_, vpc)| vpc.as_ref())
    }
}

/// Adds each id to `set`: the bytes of text added.
fn insert_all(set: &mut HashSet<String>, ids: impl Iterator<Item = String>) -> usize {
    ids.map(|id| {
        let bytes = id.len();
        set.insert(id);
        bytes
    })
    .sum()
}

/// One settled resource's work item and what the provider should show of it (a network, one
/// work item, has one expectation per subnet).
#[derive(Clone, Debug, PartialEq)]
pub struct Expected {
    pub work_kind: &'static str,
    pub resource_id: String,
    pub expect: Expect,
}

/// The work items a pass sorted: those shown as recorded, and those to read on their own.
#[derive(Debug, Default, PartialEq)]
pub struct Sorted {
    pub as_recorded: Vec<(&'static str, String)>,
    pub to_confirm: Vec<(&'static str, String)>,
}

/// Sorts the work items of `expected` by what `listing` shows: a resource is as recorded only if
/// every one of its expectations is; one with an expectation no listing could check is left out.
pub fn sort(expected: &[Expected], listing: &Listing) -> Sorted {
    let mut verdicts: HashMap<(&'static str, &str), Option<bool>> = HashMap::new();
    let mut order = Vec::new();
    for e in expected {
        let shown = listing.shows(&e.expect);
        let key = (e.work_kind, e.resource_id.as_str());
        match verdicts.get_mut(&key) {
            None => {
                order.push(key);
                verdicts.insert(key, shown);
            }
            Some(verdict) => {
                *verdict = match (*verdict, shown) {
                    (None, _) | (_, None) => None,
                    (Some(a), Some(b)) => Some(a && b),
                }
            }
        }
    }
    let mut sorted = Sorted::default();
    for key in order {
        let item = (key.0, key.1.to_owned());
        match verdicts[&key] {
            Some(true) => sorted.as_recorded.push(item),
            Some(false) => sorted.to_confirm.push(item),
            None => {}
        }
    }
    sorted
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::ShareStatus;

    fn volume(id: &str, size_gib: i64) -> BlockVolume {
        BlockVolume {
            id: id.into(),
            name: format!("n-{id}"),
            region: "nyc3".into(),
            size_gib,
            droplet_ids: vec![],
            tags: vec![],
            description: String::new(),
        }
    }

    fn share(id: &str, size_gib: i64, vpcs: &[&str]) -> Share {
        Share {
            id: id.into(),
            name: format!("n-{id}"),
            region: "nyc3".into(),
            size_gib,
            status: ShareStatus::Active,
            vpc_ids: vpcs.iter().map(|v| v.to_string()).collect(),
            host: None,
            mount_path: None,
        }
    }

    fn droplet(id: &str, vpc: &str) -> Droplet {
        Droplet {
            id: id.into(),
            name: format!("n-{id}"),
            status: DropletStatus::Active,
            region: "nyc3".into(),
            vpc_id: Some(vpc.into()),
            volume_ids: vec![],
            tags: vec![],
        }
    }

    fn snapshot(id: &str, size_gib: f64) -> Snapshot {
        Snapshot { id: id.into(), name: id.into(), size_gib, min_disk_size: Some(1), ready: true, failed: false }
    }

    fn address(family: Family, ip: &str, region: &str, fingerprint: Option<&str>, on: Option<&str>) -> Expect {
        Expect::Address {
            family,
            ip: ip.into(),
            region: region.into(),
            fingerprint: fingerprint.map(str::to_owned),
            on_machine: on.map(str::to_owned),
        }
    }

    fn item(kind: &'static str, id: &str, expect: Expect) -> Expected {
        Expected { work_kind: kind, resource_id: id.into(), expect }
    }

    #[test]
    fn a_resource_listed_as_recorded_is_put_off_one_absent_or_changed_is_read_on_its_own() {
        let mut listing = Listing::default();
        listing.volumes(vec![volume("v1", 10), volume("v2", 20)]);
        listing.snapshots(None, vec![snapshot("s1", 1.5)]);
        listing.addresses(
            Family::V4,
            vec![ReservedAddress {
                ip: "1.2.3.4".into(),
                region: "nyc3".into(),
                droplet_id: Some("d1".into()),
                locked: false,
                reserved_at: None,
            }],
        );
        let expected = vec![
            item("r", "pvol_same", Expect::Volume { id: "v1".into(), size_gib: Some(10) }),
            item("r", "pvol_grown", Expect::Volume { id: "v2".into(), size_gib: Some(10) }),
            item("r", "pvol_gone", Expect::Volume { id: "v3".into(), size_gib: Some(10) }),
            item("r", "psnap_same", Expect::VolumeSnapshot { id: "s1".into(), size_gib: Some(1.5) }),
            item("r", "psnap_unknown_size", Expect::VolumeSnapshot { id: "s1".into(), size_gib: None }),
            item("r", "psnap_gone", Expect::VolumeSnapshot { id: "s2".into(), size_gib: Some(1.0) }),
            item("r", "paddr_on", address(Family::V4, "1.2.3.4", "nyc3", None, Some("d1"))),
            item("r", "paddr_moved", address(Family::V4, "1.2.3.4", "nyc3", None, None)),
            item("r", "paddr_elsewhere", address(Family::V4, "1.2.3.4", "sfo3", None, Some("d1"))),
            item("r", "paddr_gone", address(Family::V4, "5.6.7.8", "nyc3", None, None)),
            // No IPv6 listing was taken: nothing is concluded of it.
            item("r", "paddr_v6", address(Family::V6, "fd00::1", "nyc3", None, None)),
        ];
        let sorted = sort(&expected, &listing);
        let ids = |items: &[(&str, String)]| items.iter().map(|(_, id)| id.clone()).collect::<Vec<_>>();
        assert_eq!(ids(&sorted.as_recorded), ["pvol_same", "psnap_same", "paddr_on"]);
        assert_eq!(
            ids(&sorted.to_confirm),
            [
                "pvol_grown",
                "pvol_gone",
                "psnap_unknown_size",
                "psnap_gone",
                "paddr_moved",
                "paddr_elsewhere",
                "paddr_gone"
            ]
        );
    }

    #[test]
    fn a_share_is_as_recorded_only_while_every_machine_it_is_on_has_its_vpc_on_it() {
        let mut listing = Listing::default();
        listing.shares("nyc3", vec![share("sh1", 50, &["vpc-a"])]);
        listing.machines(vec![droplet("d1", "vpc-a"), droplet("d2", "vpc-b")]);
        let on = |machines: &[&str]| Expect::Share {
            id: "sh1".into(),
            region: "nyc3".into(),
            size_gib: Some(50),
            machines: machines.iter().map(|m| m.to_string()).collect(),
        };
        assert_eq!(listing.shows(&on(&[])), Some(true));
        assert_eq!(listing.shows(&on(&["d1"])), Some(true));
        assert_eq!(listing.shows(&on(&["d1", "d2"])), Some(false), "d2's VPC was taken off the share");
        assert_eq!(listing.shows(&on(&["d9"])), Some(false), "a machine not listed");
        let mut no_machines = Listing::default();
        no_machines.shares("nyc3", vec![share("sh1", 50, &["vpc-a"])]);
        assert_eq!(no_machines.shows(&on(&["d1"])), None, "machines not listed: nothing concluded");
    }

    #[test]
    fn a_network_is_as_recorded_only_if_every_subnet_vpc_is_listed() {
        let mut listing = Listing::default();
        listing.vpcs(vec![Vpc {
            id: "vpc-a".into(),
            name: "a".into(),
            region: "nyc3".into(),
            ip_range: "10.0.0.0/24".into(),
            description: String::new(),
        }]);
        let subnet = |net: &str, vpc: &str| item("n", net, Expect::Vpc { id: vpc.into() });
        let sorted = sort(&[subnet("net_1", "vpc-a"), subnet("net_2", "vpc-a"), subnet("net_2", "vpc-gone")], &listing);
        assert_eq!(sorted.as_recorded, vec![("n", "net_1".to_owned())]);
        assert_eq!(sorted.to_confirm, vec![("n", "net_2".to_owned())]);
    }

    #[test]
    fn an_ipv6_reserved_again_by_someone_else_is_another_reservation() {
        let mut listing = Listing::default();
        listing.addresses(
            Family::V6,
            vec![ReservedAddress {
                ip: "fd00::1".into(),
                region: "nyc3".into(),
                droplet_id: None,
                locked: false,
                reserved_at: Some("2026-12-05T10:00:00Z".into()),
            }],
        );
        let ours = |at: &str| address(Family::V6, "fd00::1", "nyc3", Some(at), None);
        assert_eq!(listing.shows(&ours("2026-12-05T10:00:00Z")), Some(true));
        assert_eq!(listing.shows(&ours("2026-12-01T09:00:00Z")), Some(false));
    }

    fn efs(id: &str, state: Lifecycle, mount_targets: i32) -> EfsFileSystem {
        EfsFileSystem {
            id: id.into(),
            creation_token: format!("t-{id}"),
            life_cycle_state: state,
            number_of_mount_targets: mount_targets,
            encrypted: true,
            dns_name: String::new(),
            tags: vec![],
        }
    }

    fn group(id: &str, ingress: Vec<GroupRule>) -> SecurityGroup {
        SecurityGroup {
            id: id.into(),
            name: format!("n-{id}"),
            vpc_id: "vpc-1".into(),
            tags: vec![],
            ingress,
            egress: vec![],
        }
    }

    fn nfs_filesystem(id: &str, mount_targets: i64) -> Expect {
        let rules = GroupRule::nfs(crate::provider::RuleSource::Cidr("10.0.0.0/16".into()));
        Expect::Filesystem {
            region: "us-east-1".into(),
            id: id.into(),
            lustre: false,
            mount_targets,
            group: Some(("sg-1".into(), rules)),
        }
    }

    #[test]
    fn an_efs_file_system_is_as_recorded_only_available_with_a_mount_target_per_zone_behind_its_rules() {
        let nfs = GroupRule::nfs(crate::provider::RuleSource::Cidr("10.0.0.0/16".into()));
        let mut listing = Listing::default();
        let listed = vec![efs("fs-1", Lifecycle::Available, 2), efs("fs-2", Lifecycle::Updating, 2)];
        listing.efs("us-east-1", listed);
        assert_eq!(listing.shows(&nfs_filesystem("fs-1", 2)), None, "its group's listing not taken");
        listing.security_groups("us-east-1", vec![group("sg-1", nfs.clone())]);
        assert_eq!(listing.shows(&nfs_filesystem("fs-1", 2)), Some(true));
        assert_eq!(listing.shows(&nfs_filesystem("fs-1", 3)), Some(false), "a zone without its mount target");
        assert_eq!(listing.shows(&nfs_filesystem("fs-2", 2)), Some(false), "not available");
        assert_eq!(listing.shows(&nfs_filesystem("fs-9", 2)), Some(false), "not listed");
        let mut revoked = Listing::default();
        revoked.efs("us-east-1", vec![efs("fs-1", Lifecycle::Available, 2)]);
        revoked.security_groups("us-east-1", vec![group("sg-1", vec![])]);
        assert_eq!(revoked.shows(&nfs_filesystem("fs-1", 2)), Some(false), "a rule revoked outside");
    }

    #[test]
    fn an_aws_network_is_as_recorded_only_with_its_vpc_and_every_subnet_available() {
        let vpc = |id: &str, state: &str| AwsVpc {
            id: id.into(),
            cidr_block: String::new(),
            state: state.into(),
            tags: vec![],
        };
        let subnet = |id: &str| AwsSubnet {
            id: id.into(),
            vpc_id: "vpc-1".into(),
            availability_zone: "us-east-1a".into(),
            cidr_block: String::new(),
            state: "available".into(),
            tags: vec![],
        };
        let mut listing = Listing::default();
        listing.aws_vpcs("us-east-1", vec![vpc("vpc-1", "available"), vpc("vpc-2", "pending")]);
        listing.aws_subnets("us-east-1", vec![subnet("subnet-a"), subnet("subnet-b")]);
        let network = |vpc: &str, subnets: &[&str]| Expect::AwsNetwork {
            region: "us-east-1".into(),
            vpc: vpc.into(),
            subnets: subnets.iter().map(|s| s.to_string()).collect(),
        };
        assert_eq!(listing.shows(&network("vpc-1", &["subnet-a", "subnet-b"])), Some(true));
        assert_eq!(listing.shows(&network("vpc-1", &["subnet-a", "subnet-c"])), Some(false), "a subnet gone");
        assert_eq!(listing.shows(&network("vpc-2", &["subnet-a"])), Some(false), "a VPC not available");
        let elsewhere = Expect::AwsNetwork { region: "eu-west-1".into(), vpc: "vpc-1".into(), subnets: vec![] };
        assert_eq!(listing.shows(&elsewhere), None, "another region's listing was not taken");
    }

    #[test]
    fn a_machine_not_active_is_read_on_its_own() {
        let mut listing = Listing::default();
        let mut off = droplet("d2", "vpc-a");
        off.status = DropletStatus::Off;
        listing.machines(vec![droplet("d1", "vpc-a"), off]);
        assert_eq!(listing.shows(&Expect::Machine { id: "d1".into() }), Some(true));
        assert_eq!(listing.shows(&Expect::Machine { id: "d2".into() }), Some(false));
        assert!(listing.bytes() > 0);
    }
}
