//! Resources put straight into the simulated account, as if made long ago and settled: what the
//! drift bench lists (a hundred thousand creates through the API would take longer than the hour
//! it measures, and would spend the account's rate budget). Every record is what the API's own
//! create would have left once its actions were done.
use super::droplets::DropletRecord;
use super::nfs::{ShareRecord, ShareSnapshotRecord};
use super::reserved_ips::{AddressRecord, Family};
use super::volumes::{SnapshotRecord, VolumeRecord};
use super::vpcs::VpcRecord;
use super::{Model, now_text, uuid};
use crate::sim::Sim;

/// How many of each kind to put in `region`; the Droplets carry `tag`.
#[derive(Clone, Debug, Default)]
pub struct Plan {
    pub region: String,
    pub tag: String,
    pub volumes: usize,
    pub shares: usize,
    /// Of the volumes, taken in turn.
    pub volume_snapshots: usize,
    /// Of the shares, taken in turn.
    pub share_snapshots: usize,
    pub ipv4: usize,
    pub ipv6: usize,
    pub droplets: usize,
}

/// What was put there: provider ids (and what a row records beside them).
#[derive(Clone, Debug, Default)]
pub struct Seeded {
    /// (id, name, GiB)
    pub volumes: Vec<(String, String, i64)>,
    /// (id, name, GiB)
    pub shares: Vec<(String, String, i64)>,
    /// (id, the volume's index in `volumes`, GiB)
    pub volume_snapshots: Vec<(String, usize, f64)>,
    /// (id, the share's index in `shares`, GiB)
    pub share_snapshots: Vec<(String, usize, f64)>,
    pub ipv4: Vec<String>,
    pub ipv6: Vec<String>,
    /// (id, name)
    pub droplets: Vec<(String, String)>,
}

impl Sim {
    /// Puts `plan`'s resources into the simulated DigitalOcean account.
    pub fn seed_digitalocean(&self, plan: &Plan) -> Seeded {
        self.with_digitalocean(|model| model.seed(plan))
    }
}

impl Model {
    fn seed(&mut self, plan: &Plan) -> Seeded {
        let created_at = now_text();
        let region = plan.region.clone();
        let vpc = VpcRecord {
            id: uuid(),
            name: "seeded".into(),
            description: String::new(),
            region: region.clone(),
            ip_range: (0x0a64_0000, 16),
            default: false,
            created_at: created_at.clone(),
        };
        let mut seeded = Seeded::default();
        for i in 0..plan.volumes {
            let (id, name) = (uuid(), format!("seeded-volume-{i}"));
            seeded.volumes.push((id.clone(), name.clone(), 10));
            self.volumes.push(VolumeRecord {
                id,
                name,
                description: String::new(),
                size: 10,
                region: region.clone(),
                droplet_ids: Vec::new(),
                filesystem_type: "ext4".into(),
                filesystem_label: String::new(),
                tags: vec![plan.tag.clone()],
                created_at: created_at.clone(),
                last_snapshot: None,
            });
        }
        for i in 0..plan.shares {
            let (id, name) = (uuid(), format!("seeded-share-{i}"));
            seeded.shares.push((id.clone(), name.clone(), 50));
            self.shares.push(ShareRecord {
                id,
                name,
                size_gib: 50,
                region: region.clone(),
                status: "ACTIVE",
                vpc_ids: vec![vpc.id.clone()],
                performance_tier: "standard".into(),
                host: "10.100.0.2".into(),
                mount_path: format!("/seeded-share-{i}"),
                created_at: created_at.clone(),
            });
        }
        let volume_snapshots = if plan.volumes == 0 { 0 } else { plan.volume_snapshots };
        for i in 0..volume_snapshots {
            let of = i % plan.volumes;
            let id = uuid();
            seeded.volume_snapshots.push((id.clone(), of, 1.5));
            self.snapshots.push(SnapshotRecord {
                id,
                name: format!("seeded-snapshot-{i}"),
                region: region.clone(),
                volume: seeded.volumes[of].0.clone(),
                min_disk_size: 10,
                size_gigabytes: 1.5,
                filesystem_type: "ext4".into(),
                filesystem_label: String::new(),
                tags: vec![plan.tag.clone()],
                created_at: created_at.clone(),
            });
        }
        let share_snapshots = if plan.shares == 0 { 0 } else { plan.share_snapshots };
        for i in 0..share_snapshots {
            let of = i % plan.shares;
            let id = uuid();
            seeded.share_snapshots.push((id.clone(), of, 2.0));
            self.share_snapshots.push(ShareSnapshotRecord {
                id,
                name: format!("seeded-share-snapshot-{i}"),
                size_gib: 2,
                region: region.clone(),
                status: "ACTIVE",
                share_id: seeded.shares[of].0.clone(),
                created_at: created_at.clone(),
            });
        }
        for i in 0..plan.ipv4 {
            let ip = std::net::Ipv4Addr::from(0x2d00_0000_u32 + i as u32).to_string();
            seeded.ipv4.push(ip.clone());
            self.seed_address(Family::V4, ip, &region, &created_at);
        }
        for i in 0..plan.ipv6 {
            let ip = std::net::Ipv6Addr::from(0x2604_a880_0400_00d0_0000_0000_0000_0000_u128 + i as u128).to_string();
            seeded.ipv6.push(ip.clone());
            self.seed_address(Family::V6, ip, &region, &created_at);
        }
        for i in 0..plan.droplets {
            self.serial += 1;
            let (id, name) = (self.serial, format!("seeded-droplet-{i}"));
            seeded.droplets.push((id.to_string(), name.clone()));
            self.droplets.push(DropletRecord {
                id,
                name,
                region: region.clone(),
                size: "s-1vcpu-1gb".into(),
                vpc: vpc.id.clone(),
                status: "active",
                deleting: false,
                tags: vec![plan.tag.clone()],
                volume_ids: Vec::new(),
                private_ip: (0x0a64_0000 + 10 + i as u32, 16),
                public_ip: 0x8000_0000 + i as u32,
                created_at: created_at.clone(),
            });
        }
        self.vpcs.push(vpc);
        seeded
    }

    fn seed_address(&mut self, family: Family, ip: String, region: &str, created_at: &str) {
        self.reservations += 1;
        self.addresses.push(AddressRecord {
            id: self.reservations,
            family,
            ip,
            region: region.to_owned(),
            droplet: None,
            project_id: self.project.clone(),
            reserved_at: created_at.to_owned(),
        });
    }
}
