//! What a network's rules mean for its machines, in provider words: the names and tags the
//! networks reconciler writes, which rules apply to an instance, and whether it needs the
//! network's open egress. Plain functions, shared by the calls (which check what a provider can
//! carry before recording) and the reconcilers (which make it so).
use sha2::{Digest, Sha256};

use crate::store::entity::firewall_rule;
use crate::store::firewall_rules::strings;
use crate::store::state::{Desired, Direction};

/// Security groups an AWS machine carries at most (EC2's default quota per network interface):
/// one per rule that applies to it, and the open egress one while no outbound rule does.
pub const MAX_GROUPS_PER_INSTANCE: usize = 5;

/// The provider-side name of a rule's firewall or security group: `bc-` and its id, the `_`
/// made a `-` (a DigitalOcean firewall name takes letters, digits, `.` and `-` only).
pub fn provider_name(rule_id: &str) -> String {
    format!("bc-{}", rule_id.replace('_', "-"))
}

/// The name of the network's open egress firewall or security group.
pub fn egress_name(network_id: &str) -> String {
    format!("bc-{}-egress", network_id.replace('_', "-"))
}

/// `bc-` and 16 hex digits of the SHA-256 of `text`.
fn hashed(text: &str) -> String {
    let digest = Sha256::digest(text.as_bytes());
    let hex: String = digest.iter().take(8).map(|b| format!("{b:02x}")).collect();
    format!("bc-{hex}")
}

/// The tag of one instance's machine (DigitalOcean), which rules naming it target.
pub fn instance_tag(instance_id: &str) -> String {
    hashed(instance_id)
}

/// The tag every machine of the network carries, which rules naming no instance target.
pub fn network_tag(network_id: &str) -> String {
    hashed(network_id)
}

/// The tag of the network's machines that are ruled but have no outbound rule, which the open
/// egress firewall targets.
pub fn egress_tag(network_id: &str) -> String {
    hashed(&format!("{network_id}/egress"))
}

/// What marks a DigitalOcean firewall as this deployment's: a tag among its targets that no
/// machine carries (a firewall has no description or labels of its own).
pub fn marker(deployment: &str) -> String {
    format!("vps-graph:{deployment}:firewall")
}

/// Whether `rule` applies to the instance (`None`: one not made yet, which only the rules
/// naming no instance apply to).
pub fn applies(rule: &firewall_rule::Model, instance_id: Option<&str>) -> bool {
    let named = strings(&rule.applies_to);
    named.is_empty() || instance_id.is_some_and(|id| named.iter().any(|n| n == id))
}

/// The rules of `rules` that are wanted and apply to the instance.
pub fn applying<'a>(rules: &'a [firewall_rule::Model], instance_id: Option<&str>) -> Vec<&'a firewall_rule::Model> {
    rules.iter().filter(|r| r.desired_state == Desired::Present && applies(r, instance_id)).collect()
}

/// Whether a machine these rules apply to needs the network's open egress: once any firewall
/// applies to it, the providers drop what no rule allows, and without an outbound rule of its
/// own it may still send anything.
pub fn needs_egress(applying: &[&firewall_rule::Model]) -> bool {
    !applying.is_empty() && !applying.iter().any(|r| r.direction == Direction::Outbound)
}

/// The security groups an AWS machine with these rules carries.
pub fn groups_needed(applying: &[&firewall_rule::Model]) -> usize {
    applying.len() + usize::from(needs_egress(applying))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_tags_are_derived_from_the_ids() {
        assert_eq!(provider_name("fwr_01jx"), "bc-fwr-01jx");
        assert_eq!(egress_name("net_01jx"), "bc-net-01jx-egress");
        let tag = instance_tag("inst_01jx");
        assert!(tag.starts_with("bc-") && tag.len() == 19, "{tag}");
        assert!(tag[3..].bytes().all(|b| b.is_ascii_hexdigit()));
        assert_eq!(tag, instance_tag("inst_01jx"), "the same id, the same tag");
        assert_ne!(network_tag("net_01jx"), egress_tag("net_01jx"));
        // sha256("inst_01jx"), its first 8 bytes.
        let digest = Sha256::digest(b"inst_01jx");
        assert_eq!(&tag[3..5], format!("{:02x}", digest[0]));
    }
}
