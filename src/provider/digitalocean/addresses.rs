//! Reserved IPv4 (`/v2/reserved_ips`) and reserved IPv6 (`/v2/reserved_ipv6`): reserve, read,
//! release, and the assign and unassign actions (both pollable at `/v2/actions/{id}`).
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use super::{DigitalOcean, id_text};
use crate::provider::{Family, ProviderError, ProviderResult, ReservedAddress};

/// The collection path and the answer's key of each family, and the endpoint names it is
/// counted under.
struct Face {
    path: &'static str,
    key: &'static str,
    /// The list answer's key.
    many: &'static str,
    list: &'static str,
    create: &'static str,
    get: &'static str,
    delete: &'static str,
    action: &'static str,
}

fn face(family: Family) -> Face {
    match family {
        Family::V4 => Face {
            path: "/v2/reserved_ips",
            key: "reserved_ip",
            many: "reserved_ips",
            list: "reserved_ips.list",
            create: "reserved_ips.create",
            get: "reserved_ips.get",
            delete: "reserved_ips.delete",
            action: "reserved_ips.actions.create",
        },
        Family::V6 => Face {
            path: "/v2/reserved_ipv6",
            key: "reserved_ipv6",
            many: "reserved_ipv6s",
            list: "reserved_ipv6.list",
            create: "reserved_ipv6.create",
            get: "reserved_ipv6.get",
            delete: "reserved_ipv6.delete",
            action: "reserved_ipv6.actions.create",
        },
    }
}

/// A reserved IPv4 carries its region as an object, a reserved IPv6 as `region_slug`.
fn address_from(body: &Value) -> ProviderResult<ReservedAddress> {
    let Some(ip) = body["ip"].as_str() else {
        return Err(ProviderError::Unknown { message: "unreadable reserved IP from DigitalOcean".into() });
    };
    let region = body["region"]["slug"].as_str().or_else(|| body["region_slug"].as_str()).unwrap_or_default();
    Ok(ReservedAddress {
        ip: ip.to_owned(),
        region: region.to_owned(),
        droplet_id: body["droplet"].get("id").map(id_text).filter(|id| !id.is_empty()),
        locked: body["locked"].as_bool().unwrap_or(false),
        reserved_at: body["reserved_at"].as_str().map(str::to_owned),
    })
}

/// Droplet ids are integers in request bodies.
fn droplet_number(droplet_id: &str) -> Value {
    droplet_id.parse::<u64>().map(Value::from).unwrap_or_else(|_| Value::from(droplet_id))
}

impl DigitalOcean {
    async fn address_action(&self, family: Family, ip: &str, body: Value) -> ProviderResult<u64> {
        let face = face(family);
        let answer = self.call(face.action, Method::POST, &format!("{}/{ip}/actions", face.path), Some(body)).await?;
        if answer.status == StatusCode::NOT_FOUND {
            return Err(ProviderError::refused(404, format!("reserved IP {ip} is gone")));
        }
        answer.body["action"]["id"]
            .as_u64()
            .ok_or_else(|| ProviderError::Unknown { message: "unreadable action from DigitalOcean".into() })
    }
}

/// Reserved addresses and their assignment to machines. Assign and unassign are actions,
/// looked at through `Actions` until done.
impl DigitalOcean {
    pub async fn address_reserve(&self, family: Family, region: &str) -> ProviderResult<ReservedAddress> {
        let face = face(family);
        let body = match family {
            Family::V4 => json!({ "region": region }),
            Family::V6 => json!({ "region_slug": region }),
        };
        let answer = self.call(face.create, Method::POST, face.path, Some(body)).await?;
        if answer.status == StatusCode::NOT_FOUND {
            return Err(ProviderError::refused(404, "no reserved IPs at this API"));
        }
        address_from(&answer.body[face.key])
    }

    /// None when the provider has no such address.
    pub async fn address_get(&self, family: Family, ip: &str) -> ProviderResult<Option<ReservedAddress>> {
        let face = face(family);
        let answer = self.call(face.get, Method::GET, &format!("{}/{ip}", face.path), None).await?;
        if answer.status == StatusCode::NOT_FOUND {
            return Ok(None);
        }
        address_from(&answer.body[face.key]).map(Some)
    }

    /// Releases it; false when it was already gone.
    pub async fn address_release(&self, family: Family, ip: &str) -> ProviderResult<bool> {
        let face = face(family);
        let answer = self.call(face.delete, Method::DELETE, &format!("{}/{ip}", face.path), None).await?;
        Ok(answer.status != StatusCode::NOT_FOUND)
    }

    /// Starts assigning it to a Droplet; returns the action's id.
    pub async fn address_assign(&self, family: Family, ip: &str, droplet_id: &str) -> ProviderResult<u64> {
        self.address_action(family, ip, json!({ "type": "assign", "droplet_id": droplet_number(droplet_id) })).await
    }

    /// Starts unassigning it; returns the action's id.
    pub async fn address_unassign(&self, family: Family, ip: &str) -> ProviderResult<u64> {
        self.address_action(family, ip, json!({ "type": "unassign" })).await
    }

    /// Every reserved address of `family` of the account, in pages of the API's largest size.
    pub async fn addresses_list(&self, family: Family) -> ProviderResult<Vec<ReservedAddress>> {
        let face = face(family);
        self.list_all(face.list, face.path, face.many).await?.iter().map(address_from).collect()
    }
}
