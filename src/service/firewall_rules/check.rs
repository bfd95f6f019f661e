//! The input rules of a firewall rule that need no database: ports per protocol, address ranges
//! as CIDRs, instance ids as ids, and how many of each a rule names. Each refusal names its
//! field (`fromPort`, `peers.addresses[2]`, `appliesTo[0]` …), and nothing is recorded.
use serde_json::json;

use super::FirewallRuleCreate;
use crate::error::{Error, Result};
use crate::ids;
use crate::service::validate;
use crate::store::state::Protocol;

/// The most peers (address ranges and instances together) a rule names: each is a rule of its
/// own in an AWS security group, which holds 60 a direction.
pub const MAX_PEERS: usize = 50;
/// The most instances a rule applies to by name.
pub const MAX_APPLIES_TO: usize = 50;

/// A create's input as recorded: ports decided, ranges in canonical form, lists without repeats.
#[derive(Debug, PartialEq, Eq)]
pub struct Checked {
    /// None: every port (or, for ICMP, none to name).
    pub ports: Option<(i32, i32)>,
    pub addresses: Vec<String>,
    pub peer_instance_ids: Vec<String>,
    pub applies_to: Vec<String>,
}

pub fn create(input: &FirewallRuleCreate) -> Result<Checked> {
    validate::tenant_id("tenantId", &input.tenant_id)?;
    validate::id("networkId", ids::NETWORK, &input.network_id)?;
    validate::name("name", &input.name)?;
    validate::idempotency_key(&input.idempotency_key)?;
    let ports = ports(input.protocol, input.from_port, input.to_port)?;
    let count = input.peers.addresses.len() + input.peers.instance_ids.len();
    if count > MAX_PEERS {
        return Err(too_many("peers", MAX_PEERS, count));
    }
    if count == 0 {
        return Err(Error::invalid_input(
            "peers",
            "a rule names at least one peer: an address range or an instance of the network",
        ));
    }
    let mut addresses = Vec::new();
    for (n, text) in input.peers.addresses.iter().enumerate() {
        let field = format!("peers.addresses[{n}]");
        validate::max_len(&field, text, 64)?;
        let range = crate::cidr::parse_range(text).map_err(|why| {
            Error::invalid_input(&field, format!("{field}: {why}")).with_details(json!({ "field": field }))
        })?;
        if !addresses.contains(&range) {
            addresses.push(range);
        }
    }
    let peer_instance_ids = instance_ids("peers.instanceIds", &input.peers.instance_ids)?;
    if input.applies_to.len() > MAX_APPLIES_TO {
        return Err(too_many("appliesTo", MAX_APPLIES_TO, input.applies_to.len()));
    }
    let applies_to = instance_ids("appliesTo", &input.applies_to)?;
    Ok(Checked { ports, addresses, peer_instance_ids, applies_to })
}

/// TCP and UDP: `fromPort` alone is one port, with `toPort` a range, neither every port; each
/// 1 to 65535. ICMP has no ports.
fn ports(protocol: Protocol, from: Option<i32>, to: Option<i32>) -> Result<Option<(i32, i32)>> {
    if protocol == Protocol::Icmp {
        if let Some(field) = [("fromPort", from), ("toPort", to)].iter().find(|(_, p)| p.is_some()).map(|(f, _)| f) {
            return Err(Error::invalid_input(field, format!("an icmp rule has no ports: {field} is not taken")));
        }
        return Ok(None);
    }
    let Some(from) = from else {
        return match to {
            Some(_) => Err(Error::invalid_input("toPort", "toPort ends a range that fromPort starts: give fromPort")),
            None => Ok(None),
        };
    };
    validate::range("fromPort", i64::from(from), 1, 65535)?;
    let to = to.unwrap_or(from);
    validate::range("toPort", i64::from(to), 1, 65535)?;
    if to < from {
        return Err(Error::invalid_input("toPort", format!("toPort {to} is below fromPort {from}"))
            .with_details(json!({ "field": "toPort", "min": from, "max": 65535 })));
    }
    Ok(Some((from, to)))
}

/// Instance ids, each checked, without repeats.
fn instance_ids(list: &str, given: &[String]) -> Result<Vec<String>> {
    let mut ids = Vec::new();
    for (n, id) in given.iter().enumerate() {
        validate::id(&format!("{list}[{n}]"), ids::INSTANCE, id)?;
        if !ids.contains(id) {
            ids.push(id.clone());
        }
    }
    Ok(ids)
}

fn too_many(field: &str, max: usize, given: usize) -> Error {
    Error::invalid_input(field, format!("a rule names at most {max} {field}, not {given}"))
        .with_details(json!({ "field": field, "max": max }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ports_per_protocol() {
        assert_eq!(ports(Protocol::Tcp, Some(22), None).unwrap(), Some((22, 22)));
        assert_eq!(ports(Protocol::Udp, Some(8000), Some(9000)).unwrap(), Some((8000, 9000)));
        assert_eq!(ports(Protocol::Tcp, None, None).unwrap(), None, "every port");
        assert_eq!(ports(Protocol::Icmp, None, None).unwrap(), None);
        let field = |r: Result<Option<(i32, i32)>>| r.unwrap_err().details["field"].as_str().unwrap().to_owned();
        assert_eq!(field(ports(Protocol::Icmp, Some(8), None)), "fromPort");
        assert_eq!(field(ports(Protocol::Icmp, None, Some(0))), "toPort");
        assert_eq!(field(ports(Protocol::Tcp, Some(0), None)), "fromPort");
        assert_eq!(field(ports(Protocol::Tcp, Some(65536), None)), "fromPort");
        assert_eq!(field(ports(Protocol::Tcp, Some(22), Some(70000))), "toPort");
        assert_eq!(field(ports(Protocol::Tcp, Some(22), Some(21))), "toPort");
        assert_eq!(field(ports(Protocol::Tcp, None, Some(80))), "toPort");
    }
}
