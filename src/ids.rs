//! Resource ids: a prefix, `_`, and a lower-case ULID, matching the seeds' patterns
//! (`^pool_[0-9a-hjkmnp-tv-z]{26,52}$` …).
use ulid::Ulid;

pub const PROJECT: &str = "prj";
pub const POOL: &str = "pool";
pub const PROVIDER_ACCOUNT: &str = "pacct";
pub const TOKEN: &str = "tok";
pub const EVENT: &str = "evt";
pub const NETWORK: &str = "net";
pub const SUBNET: &str = "sub";
pub const INSTANCE: &str = "inst";
pub const VOLUME: &str = "pvol";
pub const SNAPSHOT: &str = "psnap";
pub const ATTACHMENT: &str = "patt";
pub const ADDRESS: &str = "paddr";
pub const FILESYSTEM: &str = "fs";
pub const FIREWALL_RULE: &str = "fwr";
pub const SNAPSHOT_SCHEDULE: &str = "ssch";

/// Ids made in one millisecond by this process still sort in the order they were made (a
/// network's subnets list in the order asked), since ULIDs of one millisecond are otherwise random.
static GENERATOR: std::sync::Mutex<ulid::Generator> = std::sync::Mutex::new(ulid::Generator::new());

pub fn new_id(prefix: &str) -> String {
    let next = GENERATOR.lock().unwrap_or_else(|e| e.into_inner()).generate().unwrap_or_else(|_| Ulid::generate());
    format!("{prefix}_{}", next.to_string().to_lowercase())
}

/// Whether `id` is `prefix` + `_` + 26 to 52 lower-case Crockford base32 characters.
pub fn is_id(prefix: &str, id: &str) -> bool {
    let Some(rest) = id.strip_prefix(prefix).and_then(|r| r.strip_prefix('_')) else {
        return false;
    };
    (26..=52).contains(&rest.len()) && rest.bytes().all(is_crockford_lower)
}

fn is_crockford_lower(b: u8) -> bool {
    matches!(b, b'0'..=b'9' | b'a'..=b'h' | b'j' | b'k' | b'm' | b'n' | b'p'..=b't' | b'v'..=b'z')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_of_one_process_sort_in_the_order_made() {
        let made: Vec<String> = (0..1000).map(|_| new_id(SUBNET)).collect();
        let mut sorted = made.clone();
        sorted.sort();
        assert_eq!(made, sorted);
    }

    #[test]
    fn new_ids_match_the_seed_pattern() {
        let id = new_id(POOL);
        assert!(is_id(POOL, &id), "{id}");
        assert!(!is_id(PROJECT, &id));
        assert!(!is_id(POOL, "pool_01JZ0000000000000000000000"));
        assert!(!is_id(POOL, "pool_0123"));
        assert!(!is_id(POOL, "pool_0000000000000000000000000i"));
    }
}
