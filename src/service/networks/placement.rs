//! Where a network goes and what it may hold: the checks of a create or an adoption, the
//! placement of its subnets in the account's regions or zones, and the ranges the account
//! already uses (DigitalOcean refuses an overlap anywhere on the account).
use super::*;
use crate::store::state::{Desired, ProviderKind};

/// The input rules of `networkCreate` that need no database.
pub(super) fn check_create(input: &NetworkCreate) -> Result<()> {
    validate::tenant_id("tenantId", &input.tenant_id)?;
    validate::id("poolId", ids::POOL, &input.pool_id)?;
    if let Some(project_id) = &input.project_id {
        validate::id("projectId", ids::PROJECT, project_id)?;
    }
    validate::name("name", &input.name)?;
    if let Some(description) = &input.description {
        validate::max_len("description", description, 256)?;
    }
    validate::idempotency_key(&input.idempotency_key)
}

/// The input rules of `networkAdopt` that need no database.
pub(super) fn check_adopt(input: &NetworkAdopt) -> Result<()> {
    validate::tenant_id("tenantId", &input.tenant_id)?;
    validate::id("poolId", ids::POOL, &input.pool_id)?;
    if let Some(project_id) = &input.project_id {
        validate::id("projectId", ids::PROJECT, project_id)?;
    }
    validate::name("name", &input.name)?;
    if let Some(description) = &input.description {
        validate::max_len("description", description, 256)?;
    }
    if let Some(region) = &input.region {
        validate::region("region", region)?;
    }
    validate::vpc_id("vpcId", &input.vpc_id)?;
    validate::idempotency_key(&input.idempotency_key)
}

/// A subnet checked and placed: its region, and on AWS its zone.
pub(crate) struct PlacedSubnet {
    pub region: String,
    pub zone: Option<String>,
    pub ip_range: String,
}

/// Where an account puts a network's subnets: on DigitalOcean one VPC per subnet, in its
/// regions; on AWS one VPC in one region (the network's, once known) with a subnet per zone,
/// inside the VPC's CIDR block.
pub(super) struct Place {
    pub(super) aws: bool,
    regions: Vec<String>,
    zones: Vec<String>,
    region: Option<String>,
}

impl Place {
    pub(super) fn of(account: &crate::store::entity::provider_account::Model, region: Option<&str>) -> Self {
        Place {
            aws: account.kind == ProviderKind::Aws,
            regions: crate::views::pools::strings(&account.regions),
            zones: crate::views::pools::strings(&account.zones),
            region: region.map(str::to_owned),
        }
    }

    /// The network's own CIDR block: an AWS network's VPC has one, a DigitalOcean one none.
    pub(super) fn check_vpc(&self, ip_range: Option<&str>) -> Result<Option<(u32, u8)>> {
        match (self.aws, ip_range) {
            (false, None) => Ok(None),
            (false, Some(_)) => Err(Error::invalid_input(
                "ipRange",
                "a DigitalOcean network has no CIDR block of its own: each subnet is a VPC",
            )),
            (true, None) => Err(Error::invalid_input("ipRange", "an AWS network names its VPC's CIDR block")),
            (true, Some(text)) => crate::cidr::parse_private(text).map(Some).ok_or_else(|| {
                Error::invalid_input("ipRange", format!("{text:?} is not a private CIDR block from /16 to /28"))
            }),
        }
    }

    /// The region of an AWS network: its subnets'.
    pub(super) fn vpc_region(&self, subnets: &[PlacedSubnet]) -> Option<String> {
        if !self.aws {
            return None;
        }
        self.region.clone().or_else(|| subnets.first().map(|s| s.region.clone()))
    }

    /// Checks new subnets against the account's places and the network's live subnets: one per
    /// region (DigitalOcean) or zone (AWS), none overlapping, each inside the VPC's block.
    pub(super) fn check_subnets(
        &self,
        new: &[SubnetInput],
        existing: &[network_subnet::Model],
        vpc: Option<(u32, u8)>,
    ) -> Result<Vec<PlacedSubnet>> {
        let live = existing.iter().filter(|s| s.desired_state == Desired::Present);
        let mut taken: Vec<(String, (u32, u8))> = live
            .filter_map(|s| {
                let place = if self.aws { s.zone.clone().unwrap_or_default() } else { s.region.clone() };
                crate::cidr::parse_private(&s.ip_range).map(|r| (place, r))
            })
            .collect();
        let mut region = self.region.clone();
        let mut placed = Vec::new();
        for subnet in new {
            let (subnet_region, zone) = self.place(subnet, region.as_deref())?;
            region = Some(subnet_region.clone());
            let place = zone.clone().unwrap_or_else(|| subnet_region.clone());
            let Some(range) = crate::cidr::parse_private(&subnet.ip_range) else {
                return Err(Error::invalid_input(
                    "subnets.ipRange",
                    format!("{:?} is not a private CIDR block from /16 to /28", subnet.ip_range),
                ));
            };
            if vpc.is_some_and(|vpc| !crate::cidr::contains(vpc, range)) {
                return Err(Error::invalid_input(
                    "subnets.ipRange",
                    format!("{} is not inside the network's CIDR block", subnet.ip_range),
                ));
            }
            if taken.iter().any(|(other, _)| *other == place) {
                return Err(Error::invalid_input(
                    if self.aws { "subnets.zone" } else { "subnets.region" },
                    format!("the network has a subnet in {place} already"),
                ));
            }
            if taken.iter().any(|(_, other)| crate::cidr::overlaps(*other, range)) {
                return Err(Error::invalid_input(
                    "subnets.ipRange",
                    format!("{} overlaps another subnet of the network", subnet.ip_range),
                ));
            }
            taken.push((place, range));
            placed.push(PlacedSubnet { region: subnet_region, zone, ip_range: subnet.ip_range.clone() });
        }
        Ok(placed)
    }

    /// The region and zone of one new subnet; on AWS every subnet is in the network's region.
    pub(super) fn place(&self, subnet: &SubnetInput, network_region: Option<&str>) -> Result<(String, Option<String>)> {
        let unknown_region = |region: &str| {
            Error::invalid_input("subnets.region", format!("the pool's account does not use region {region}"))
                .with_details(json!({ "field": "subnets.region", "regions": self.regions }))
        };
        if !self.aws {
            if subnet.zone.is_some() {
                return Err(Error::invalid_input("subnets.zone", "a DigitalOcean subnet is in a region, not a zone"));
            }
            let Some(region) = &subnet.region else {
                return Err(Error::invalid_input("subnets.region", "a DigitalOcean subnet names its region"));
            };
            validate::region("subnets.region", region)?;
            return match self.regions.contains(region) {
                true => Ok((region.clone(), None)),
                false => Err(unknown_region(region)),
            };
        }
        let Some(zone) = &subnet.zone else {
            return Err(Error::invalid_input("subnets.zone", "an AWS subnet names its zone"));
        };
        validate::zone("subnets.zone", zone)?;
        if !self.zones.contains(zone) {
            return Err(Error::invalid_input("subnets.zone", format!("the pool's account does not use zone {zone}"))
                .with_details(json!({ "field": "subnets.zone", "zones": self.zones })));
        }
        let Some(region) = self.regions.iter().filter(|r| zone.starts_with(r.as_str())).max_by_key(|r| r.len()) else {
            return Err(Error::invalid_input(
                "subnets.zone",
                format!("zone {zone} is in none of the account's regions"),
            ));
        };
        if let Some(asked) = &subnet.region
            && asked != region
        {
            return Err(Error::invalid_input("subnets.region", format!("zone {zone} is in {region}, not {asked}")));
        }
        if let Some(network_region) = network_region
            && network_region != region
        {
            return Err(Error::invalid_input(
                "subnets.zone",
                format!("an AWS network is one VPC in one region ({network_region}); zone {zone} is in {region}"),
            ));
        }
        Ok((region.clone(), Some(zone.clone())))
    }
}

/// DigitalOcean refuses a VPC range that overlaps any other VPC of the account, in any region,
/// and each subnet is a VPC there: a new one is checked against every subnet of every network on
/// the account that is not deleted, whichever tenant's, before anything is recorded. The refusal
/// never says whose range it met.
/// INVALID_INPUT (`reason: rangeTaken`) when one of `ranges` overlaps a subnet of the account
/// that is not deleted.
pub(super) async fn check_free_on_account(
    conn: &impl ConnectionTrait,
    account_id: &str,
    ranges: &[&str],
) -> Result<()> {
    let networks = crate::store::networks::live_ids_on_account(conn, account_id).await?;
    let used = crate::store::networks::live_subnet_ranges(conn, networks).await?;
    let used: Vec<(u32, u8)> = used.iter().filter_map(|r| crate::cidr::parse_private(r)).collect();
    for range in ranges {
        let Some(asked) = crate::cidr::parse_private(range) else { continue };
        if used.iter().any(|u| crate::cidr::overlaps(*u, asked)) {
            return Err(Error::invalid_input(
                "subnets.ipRange",
                format!("{range} overlaps a VPC range already in use on the provider account (in any region); choose another"),
            )
            .with_details(json!({ "field": "subnets.ipRange", "reason": "rangeTaken" })));
        }
    }
    Ok(())
}
