//! Private IPv4 blocks, as DigitalOcean takes them for VPCs: RFC 1918, /16 to /28.

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
}
