//! The machine sizes each provider offers, with the disk each gives: what an instance books on
//! `diskGiB` (the seeds: "the resource a provider instance's disk books"), known when the
//! instance is asked, before any provider call. A size not listed here is one no instance is
//! made of (INVALID_INPUT): a mistyped or unpriced size never reaches the platform's account.
//!
//! DigitalOcean: a Droplet size's `disk` (GiB) as its size list gives it. AWS: an instance type's
//! instance-store GiB (none for the EBS-only types, whose root volume the AMI decides).
use super::ProviderKind;

/// DigitalOcean size slugs and their disks, GiB.
const DIGITALOCEAN: &[(&str, i64)] = &[
    // Basic (regular SSD)
    ("s-1vcpu-512mb-10gb", 10),
    ("s-1vcpu-1gb", 25),
    ("s-1vcpu-2gb", 50),
    ("s-2vcpu-2gb", 60),
    ("s-2vcpu-4gb", 80),
    ("s-4vcpu-8gb", 160),
    ("s-8vcpu-16gb", 320),
    // Basic, premium AMD and Intel (NVMe SSD)
    ("s-1vcpu-1gb-amd", 25),
    ("s-1vcpu-2gb-amd", 50),
    ("s-2vcpu-2gb-amd", 60),
    ("s-2vcpu-4gb-amd", 80),
    ("s-2vcpu-8gb-amd", 100),
    ("s-4vcpu-8gb-amd", 160),
    ("s-4vcpu-16gb-amd", 200),
    ("s-8vcpu-16gb-amd", 320),
    ("s-8vcpu-32gb-amd", 400),
    ("s-1vcpu-1gb-intel", 25),
    ("s-1vcpu-2gb-intel", 50),
    ("s-2vcpu-2gb-intel", 60),
    ("s-2vcpu-4gb-intel", 80),
    ("s-2vcpu-8gb-intel", 100),
    ("s-4vcpu-8gb-intel", 160),
    ("s-4vcpu-16gb-intel", 200),
    ("s-8vcpu-16gb-intel", 320),
    ("s-8vcpu-32gb-intel", 400),
    // General purpose
    ("g-2vcpu-8gb", 25),
    ("g-4vcpu-16gb", 50),
    ("g-8vcpu-32gb", 100),
    ("g-16vcpu-64gb", 200),
    ("g-32vcpu-128gb", 400),
    ("g-48vcpu-192gb", 600),
    // CPU-optimized
    ("c-2", 25),
    ("c-4", 50),
    ("c-8", 100),
    ("c-16", 200),
    ("c-32", 400),
    ("c-48", 600),
    // Memory-optimized
    ("m-2vcpu-16gb", 50),
    ("m-4vcpu-32gb", 100),
    ("m-8vcpu-64gb", 200),
    ("m-16vcpu-128gb", 400),
    ("m-24vcpu-192gb", 600),
    ("m-32vcpu-256gb", 800),
    // Storage-optimized
    ("so-2vcpu-16gb", 300),
    ("so-4vcpu-32gb", 600),
    ("so-8vcpu-64gb", 1200),
    ("so-16vcpu-128gb", 2400),
    ("so-24vcpu-192gb", 3600),
    ("so-32vcpu-256gb", 4800),
];

/// EC2 instance types and their instance-store GiB (0: EBS only).
const AWS: &[(&str, i64)] = &[
    ("t3.nano", 0),
    ("t3.micro", 0),
    ("t3.small", 0),
    ("t3.medium", 0),
    ("t3.large", 0),
    ("t3.xlarge", 0),
    ("t3.2xlarge", 0),
    ("t3a.micro", 0),
    ("t3a.small", 0),
    ("t3a.medium", 0),
    ("t3a.large", 0),
    ("m5.large", 0),
    ("m5.xlarge", 0),
    ("m5.2xlarge", 0),
    ("m5.4xlarge", 0),
    ("m5d.large", 75),
    ("m5d.xlarge", 150),
    ("m5d.2xlarge", 300),
    ("m6i.large", 0),
    ("m6i.xlarge", 0),
    ("m6i.2xlarge", 0),
    ("c5.large", 0),
    ("c5.xlarge", 0),
    ("c5.2xlarge", 0),
    ("c5d.large", 50),
    ("c5d.xlarge", 100),
    ("c6i.large", 0),
    ("c6i.xlarge", 0),
    ("r5.large", 0),
    ("r5.xlarge", 0),
    ("r6i.large", 0),
    ("i3.large", 475),
    ("i3.xlarge", 950),
    ("g4dn.xlarge", 125),
    ("g5.xlarge", 250),
    ("p4d.24xlarge", 8000),
];

/// The disk a machine of `size` gives on a provider of `kind`, GiB; None for a size it does
/// not offer.
pub fn disk_gib(kind: ProviderKind, size: &str) -> Option<i64> {
    let catalogue = match kind {
        ProviderKind::Digitalocean => DIGITALOCEAN,
        ProviderKind::Aws => AWS,
    };
    catalogue.iter().find(|(slug, _)| *slug == size).map(|(_, disk)| *disk)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_size_books_the_disk_its_provider_gives_and_an_unknown_one_none() {
        assert_eq!(disk_gib(ProviderKind::Digitalocean, "s-1vcpu-1gb"), Some(25));
        assert_eq!(disk_gib(ProviderKind::Digitalocean, "so-2vcpu-16gb"), Some(300));
        assert_eq!(disk_gib(ProviderKind::Aws, "t3.micro"), Some(0));
        assert_eq!(disk_gib(ProviderKind::Aws, "m5d.large"), Some(75));
        assert_eq!(disk_gib(ProviderKind::Aws, "s-1vcpu-1gb"), None, "another provider's");
        assert_eq!(disk_gib(ProviderKind::Digitalocean, "s-64vcpu-1tb"), None);
        assert_eq!(disk_gib(ProviderKind::Aws, "t3.tiny"), None);
    }
}
