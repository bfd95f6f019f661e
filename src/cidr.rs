//! Private IPv4 blocks, as DigitalOcean takes them for VPCs: RFC 1918, /16 to /28; and the
//! address ranges firewall rules name, IPv4 or IPv6.

/// `10.10.0.0/24` → (network address, prefix length); None unless private, /16–/28, and with no
/// host bits set.
pub fn parse_private(text: &str) -> Option<(u32, u8)> {
    let (addr, prefix) = text.split_once('/')?;
    let prefix: u8 = prefix.parse().ok()?;
    let addr: std::net::Ipv4Addr = addr.parse().ok()?;
    if !(16..=28).contains(&prefix) || !addr.is_private() {
        return None;
    }
    let bits = u32::from(addr);
    let mask = u32::MAX << (32 - prefix);
    (bits & mask == bits).then_some((bits, prefix))
}

pub fn text((addr, prefix): (u32, u8)) -> String {
    format!("{}/{prefix}", std::net::Ipv4Addr::from(addr))
}

/// Whether `inner` lies wholly inside `outer`.
pub fn contains(outer: (u32, u8), inner: (u32, u8)) -> bool {
    let mask = |prefix: u8| if prefix == 0 { 0 } else { u32::MAX << (32 - u32::from(prefix)) };
    inner.1 >= outer.1 && (inner.0 & mask(outer.1)) == (outer.0 & mask(outer.1))
}

pub fn overlaps(a: (u32, u8), b: (u32, u8)) -> bool {
    let span = |(addr, prefix): (u32, u8)| (addr, addr | (u32::MAX >> prefix));
    let ((a0, a1), (b0, b1)) = (span(a), span(b));
    a0 <= b1 && b0 <= a1
}

/// An address range a firewall rule names: an IPv4 or IPv6 CIDR with no host bits set, or one
/// address (taken as /32 or /128). Its canonical text, or why it is none.
pub fn parse_range(text: &str) -> Result<String, String> {
    let (addr, prefix) = match text.split_once('/') {
        Some((addr, prefix)) => (addr, Some(prefix)),
        None => (text, None),
    };
    let addr: std::net::IpAddr =
        addr.parse().map_err(|_| format!("{text:?} is not an IPv4 or IPv6 address or CIDR"))?;
    let bits: u8 = if addr.is_ipv4() { 32 } else { 128 };
    let prefix = match prefix {
        None => bits,
        Some(p) => Some(p)
            .filter(|p| (1..=3).contains(&p.len()) && p.bytes().all(|b| b.is_ascii_digit()))
            .and_then(|p| p.parse::<u8>().ok())
            .filter(|p| *p <= bits)
            .ok_or_else(|| format!("{text:?} has a prefix length that is not 0 to {bits}"))?,
    };
    let host_bits_clear = match addr {
        std::net::IpAddr::V4(v4) => u32::from(v4).checked_shl(u32::from(prefix)).unwrap_or(0) == 0,
        std::net::IpAddr::V6(v6) => u128::from(v6).checked_shl(u32::from(prefix)).unwrap_or(0) == 0,
    };
    if !host_bits_clear {
        return Err(format!("{text:?} has host bits set beyond its /{prefix}"));
    }
    Ok(format!("{addr}/{prefix}"))
}

/// Whether a canonical range (`parse_range`) is IPv6.
pub fn is_ipv6(range: &str) -> bool {
    range.contains(':')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn private_blocks_follow_the_api_rules() {
        assert_eq!(parse_private("10.10.0.0/24"), Some((0x0A0A_0000, 24)));
        assert_eq!(parse_private("10.10.0.1/24"), None, "host bits set");
        assert_eq!(parse_private("8.8.8.0/24"), None, "not private");
        assert_eq!(parse_private("10.0.0.0/8"), None, "wider than /16");
        assert_eq!(parse_private("192.168.1.0/29"), None, "narrower than /28");
        assert!(overlaps((0x0A0A_0000, 24), (0x0A0A_0000, 16)));
        assert!(!overlaps((0x0A0A_0000, 24), (0x0A0A_0100, 24)));
        assert_eq!(text((0x0A0A_0000, 24)), "10.10.0.0/24");
    }

    #[test]
    fn rule_ranges_are_cidrs_or_single_addresses_in_canonical_form() {
        assert_eq!(parse_range("203.0.113.7").unwrap(), "203.0.113.7/32");
        assert_eq!(parse_range("203.0.113.0/24").unwrap(), "203.0.113.0/24");
        assert_eq!(parse_range("0.0.0.0/0").unwrap(), "0.0.0.0/0");
        assert_eq!(parse_range("2001:db8::/32").unwrap(), "2001:db8::/32");
        assert_eq!(parse_range("::/0").unwrap(), "::/0");
        assert_eq!(parse_range("2001:DB8::1").unwrap(), "2001:db8::1/128");
        for bad in
            ["203.0.113.7/24", "10.0.0.0/33", "10.0.0.0/-1", "10.0.0.0/+8", "10.0.0/8", "example.com", "", "1.2.3.4/"]
        {
            assert!(parse_range(bad).is_err(), "{bad}");
        }
        assert!(is_ipv6("::/0") && !is_ipv6("0.0.0.0/0"));
    }
}
