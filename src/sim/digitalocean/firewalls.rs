//! Cloud firewalls (`/v2/firewalls`): create (202, at least one rule, every tag it names made
//! before), list, get, replace (PUT: the full representation, what is left out is reset), delete,
//! and the `droplets`, `tags` and `rules` sub-resources (204). Names follow the API's pattern and
//! are not unique, as the spec says nothing of it: a create sent twice makes two. A change is
//! `waiting` for the action time, then `succeeded` (or `failed`, when a `Fail` fault was set on
//! the call). `GET /v2/droplets/{id}/firewalls` lists those that apply to a droplet, by id or tag.
use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Json, Response};
use axum::routing::{get, post};
use serde::Deserialize;
use serde_json::{Value, json};

use super::{Model, Page, Refusal, bad_request, no_content, not_found, now_text, paginate, parse, uuid};
use crate::sim::Sim;

/// One rule: its peers (`sources` or `destinations`), each list as given.
#[derive(Clone, Debug, Default, Deserialize, serde::Serialize)]
struct Peers {
    #[serde(default)]
    addresses: Vec<String>,
    #[serde(default)]
    droplet_ids: Vec<u64>,
    #[serde(default)]
    load_balancer_uids: Vec<String>,
    #[serde(default)]
    kubernetes_ids: Vec<String>,
    #[serde(default)]
    tags: Vec<String>,
}

impl Peers {
    fn is_empty(&self) -> bool {
        self.addresses.is_empty()
            && self.droplet_ids.is_empty()
            && self.load_balancer_uids.is_empty()
            && self.kubernetes_ids.is_empty()
            && self.tags.is_empty()
    }

    /// Only the lists that name something, as the API's examples show them.
    fn json(&self) -> Value {
        let mut peers = serde_json::Map::new();
        let mut put = |key: &str, value: Value, empty: bool| {
            if !empty {
                peers.insert(key.into(), value);
            }
        };
        put("addresses", json!(self.addresses), self.addresses.is_empty());
        put("droplet_ids", json!(self.droplet_ids), self.droplet_ids.is_empty());
        put("load_balancer_uids", json!(self.load_balancer_uids), self.load_balancer_uids.is_empty());
        put("kubernetes_ids", json!(self.kubernetes_ids), self.kubernetes_ids.is_empty());
        put("tags", json!(self.tags), self.tags.is_empty());
        Value::Object(peers)
    }
}

#[derive(Clone, Debug, Deserialize)]
struct RuleAsked {
    protocol: Option<String>,
    ports: Option<String>,
    sources: Option<Peers>,
    destinations: Option<Peers>,
}

#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
struct RuleRecord {
    protocol: String,
    ports: String,
    peers: Peers,
}

impl RuleRecord {
    fn json(&self, peers_key: &str) -> Value {
        json!({ "protocol": self.protocol, "ports": self.ports, peers_key: self.peers.json() })
    }
}

#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub(super) struct FirewallRecord {
    id: String,
    name: String,
    created_at: String,
    droplet_ids: Vec<u64>,
    tags: Vec<String>,
    inbound: Vec<RuleRecord>,
    outbound: Vec<RuleRecord>,
    /// When its last change is applied (the sim clock's milliseconds), and whether it failed.
    applied_at: i64,
    failed: bool,
}

#[derive(Deserialize)]
struct FirewallAsked {
    name: Option<String>,
    #[serde(default)]
    inbound_rules: Option<Vec<RuleAsked>>,
    #[serde(default)]
    outbound_rules: Option<Vec<RuleAsked>>,
    #[serde(default)]
    droplet_ids: Option<Vec<u64>>,
    #[serde(default)]
    tags: Option<Vec<String>>,
}

/// `^[a-zA-Z0-9][a-zA-Z0-9\.-]+$`
fn valid_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphanumeric())
        && name.len() >= 2
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '.' || c == '-')
}

/// `22`, `8000-9000`, or `0` (every port); ICMP's are always `0`.
fn ports(protocol: &str, given: Option<&str>) -> Result<String, Refusal> {
    if protocol == "icmp" {
        return Ok("0".into());
    }
    let given = given.ok_or_else(|| bad_request("ports is required for tcp and udp rules"))?;
    if given == "0" || given == "all" {
        return Ok("0".into());
    }
    let port = |p: &str| p.parse::<u32>().ok().filter(|n| (1..=65535).contains(n));
    let fine = match given.split_once('-') {
        Some((from, to)) => port(from).zip(port(to)).is_some_and(|(f, t)| f < t),
        None => port(given).is_some(),
    };
    if !fine {
        return Err(bad_request(&format!("ports {given:?} must be a port, a range like 8000-9000, or 0")));
    }
    Ok(given.to_owned())
}

fn valid_address(text: &str) -> bool {
    let (addr, prefix) = text.split_once('/').map_or((text, None), |(a, p)| (a, Some(p)));
    let Ok(addr) = addr.parse::<std::net::IpAddr>() else { return false };
    let most = if addr.is_ipv4() { 32 } else { 128 };
    prefix.is_none_or(|p| p.parse::<u8>().is_ok_and(|p| p <= most))
}

impl Model {
    fn firewall_status(&self, f: &FirewallRecord) -> &'static str {
        match (f.failed, self.clock.now_ms() < f.applied_at) {
            (true, _) => "failed",
            (false, true) => "waiting",
            (false, false) => "succeeded",
        }
    }

    /// The droplets a firewall applies to: named, or carrying one of its tags.
    fn firewall_droplets(&self, f: &FirewallRecord) -> Vec<u64> {
        self.droplets
            .iter()
            .filter(|d| f.droplet_ids.contains(&d.id) || d.tags.iter().any(|t| f.tags.contains(t)))
            .map(|d| d.id)
            .collect()
    }

    fn firewall_json(&self, f: &FirewallRecord) -> Value {
        let status = self.firewall_status(f);
        let pending: Vec<Value> = match status {
            "waiting" => self
                .firewall_droplets(f)
                .iter()
                .map(|id| json!({ "droplet_id": id, "removing": false, "status": "waiting" }))
                .collect(),
            _ => Vec::new(),
        };
        json!({
            "id": f.id, "name": f.name, "status": status, "created_at": f.created_at,
            "inbound_rules": f.inbound.iter().map(|r| r.json("sources")).collect::<Vec<_>>(),
            "outbound_rules": f.outbound.iter().map(|r| r.json("destinations")).collect::<Vec<_>>(),
            "droplet_ids": f.droplet_ids, "tags": f.tags, "pending_changes": pending,
        })
    }

    /// Every tag in its first spelling, or a 400 naming one that does not exist.
    fn existing_tags(&self, tags: &[String]) -> Result<Vec<String>, Refusal> {
        let mut spelled = Vec::new();
        for tag in tags {
            let found = self.tag_spelled(tag).ok_or_else(|| bad_request(&format!("tag {tag:?} does not exist")))?;
            if !spelled.contains(&found) {
                spelled.push(found);
            }
        }
        Ok(spelled)
    }

    fn existing_droplets(&self, ids: &[u64]) -> Result<(), Refusal> {
        match ids.iter().find(|id| !self.droplets.iter().any(|d| d.id == **id)) {
            Some(missing) => Err(bad_request(&format!("droplet {missing} does not exist"))),
            None => Ok(()),
        }
    }

    /// A rule checked: its protocol, its ports, and peers that exist.
    fn firewall_rule(&self, asked: RuleAsked, peers_key: &str) -> Result<RuleRecord, Refusal> {
        let protocol = asked.protocol.unwrap_or_default();
        if !["tcp", "udp", "icmp"].contains(&protocol.as_str()) {
            return Err(bad_request(&format!("protocol {protocol:?} must be tcp, udp or icmp")));
        }
        let ports = ports(&protocol, asked.ports.as_deref())?;
        let given = if peers_key == "sources" { asked.sources } else { asked.destinations };
        let mut peers = given.ok_or_else(|| bad_request(&format!("a rule needs its {peers_key}")))?;
        if peers.is_empty() {
            return Err(bad_request(&format!("a rule's {peers_key} must name something")));
        }
        if let Some(bad) = peers.addresses.iter().find(|a| !valid_address(a)) {
            return Err(bad_request(&format!("address {bad:?} is not an IP address or CIDR")));
        }
        self.existing_droplets(&peers.droplet_ids)?;
        peers.tags = self.existing_tags(&peers.tags)?;
        Ok(RuleRecord { protocol, ports, peers })
    }

    /// A create's or a replace's body, checked whole: a firewall or nothing.
    fn firewall_from(&self, asked: FirewallAsked, id: String, created_at: String) -> Result<FirewallRecord, Refusal> {
        let name = asked.name.unwrap_or_default();
        if !valid_name(&name) {
            return Err(bad_request(
                "name must begin with a letter or digit and hold only letters, digits, '.' and '-'",
            ));
        }
        let (inbound, outbound) = (asked.inbound_rules.unwrap_or_default(), asked.outbound_rules.unwrap_or_default());
        if inbound.is_empty() && outbound.is_empty() {
            return Err(bad_request("a firewall must contain at least one inbound or outbound access rule"));
        }
        let inbound = inbound.into_iter().map(|r| self.firewall_rule(r, "sources")).collect::<Result<Vec<_>, _>>()?;
        let outbound =
            outbound.into_iter().map(|r| self.firewall_rule(r, "destinations")).collect::<Result<Vec<_>, _>>()?;
        let droplet_ids = asked.droplet_ids.unwrap_or_default();
        self.existing_droplets(&droplet_ids)?;
        let tags = self.existing_tags(&asked.tags.unwrap_or_default())?;
        let applied_at = self.clock.now_ms() + self.action_time.as_millis() as i64;
        let failed = crate::sim::failing().is_some();
        Ok(FirewallRecord { id, name, created_at, droplet_ids, tags, inbound, outbound, applied_at, failed })
    }

    fn firewall_mut(&mut self, id: &str) -> Result<&mut FirewallRecord, Refusal> {
        self.firewalls.iter_mut().find(|f| f.id == id).ok_or_else(not_found)
    }

    /// A sub-resource change: applied again from now.
    fn firewall_touch(&mut self, id: &str) {
        let applied_at = self.clock.now_ms() + self.action_time.as_millis() as i64;
        if let Some(f) = self.firewalls.iter_mut().find(|f| f.id == id) {
            f.applied_at = applied_at;
        }
    }
}

pub(super) fn routes(router: Router<Sim>) -> Router<Sim> {
    router
        .route("/v2/firewalls", get(list).post(create))
        .route("/v2/firewalls/{id}", get(one).put(replace).delete(remove))
        .route("/v2/firewalls/{id}/droplets", post(add_droplets).delete(remove_droplets))
        .route("/v2/firewalls/{id}/tags", post(add_tags).delete(remove_tags))
        .route("/v2/firewalls/{id}/rules", post(add_rules).delete(remove_rules))
        .route("/v2/droplets/{id}/firewalls", get(of_droplet))
}

async fn create(State(sim): State<Sim>, body: Bytes) -> Result<Response, Refusal> {
    let asked: FirewallAsked = parse(&body)?;
    let name = asked.name.clone().unwrap_or_default();
    sim.count_name("firewalls.create", &name);
    let made = sim.with_digitalocean(|model| {
        let record = model.firewall_from(asked, uuid(), now_text())?;
        let json = model.firewall_json(&record);
        model.firewalls.push(record);
        Ok::<_, Refusal>(json)
    })?;
    // Creates that made something, per name: what "never made twice" is checked against.
    sim.count_name("firewalls.made", &name);
    Ok((StatusCode::ACCEPTED, Json(json!({ "firewall": made }))).into_response())
}

async fn list(State(sim): State<Sim>, page: Page) -> Response {
    let items = sim.with_digitalocean(|model| model.firewalls.iter().map(|f| model.firewall_json(f)).collect());
    paginate("firewalls", "/v2/firewalls", items, &page)
}

async fn one(State(sim): State<Sim>, Path(id): Path<String>) -> Result<Response, Refusal> {
    let found =
        sim.with_digitalocean(|model| model.firewalls.iter().find(|f| f.id == id).map(|f| model.firewall_json(f)));
    Ok(Json(json!({ "firewall": found.ok_or_else(not_found)? })).into_response())
}

async fn replace(State(sim): State<Sim>, Path(id): Path<String>, body: Bytes) -> Result<Response, Refusal> {
    let asked: FirewallAsked = parse(&body)?;
    let replaced = sim.with_digitalocean(|model| {
        let created_at = model.firewall_mut(&id)?.created_at.clone();
        let record = model.firewall_from(asked, id.clone(), created_at)?;
        let json = model.firewall_json(&record);
        *model.firewall_mut(&id)? = record;
        Ok::<_, Refusal>(json)
    })?;
    Ok(Json(json!({ "firewall": replaced })).into_response())
}

async fn remove(State(sim): State<Sim>, Path(id): Path<String>) -> Result<Response, Refusal> {
    sim.with_digitalocean(|model| {
        model.firewall_mut(&id)?;
        model.firewalls.retain(|f| f.id != id);
        Ok::<_, Refusal>(())
    })?;
    Ok(no_content())
}

#[derive(Deserialize)]
struct DropletIds {
    droplet_ids: Vec<u64>,
}

async fn add_droplets(State(sim): State<Sim>, Path(id): Path<String>, body: Bytes) -> Result<Response, Refusal> {
    change_droplets(sim, id, body, true)
}

async fn remove_droplets(State(sim): State<Sim>, Path(id): Path<String>, body: Bytes) -> Result<Response, Refusal> {
    change_droplets(sim, id, body, false)
}

fn change_droplets(sim: Sim, id: String, body: Bytes, add: bool) -> Result<Response, Refusal> {
    let asked: DropletIds = parse(&body)?;
    sim.with_digitalocean(|model| {
        model.existing_droplets(&asked.droplet_ids)?;
        let f = model.firewall_mut(&id)?;
        f.droplet_ids.retain(|d| !asked.droplet_ids.contains(d));
        if add {
            f.droplet_ids.extend(&asked.droplet_ids);
        }
        model.firewall_touch(&id);
        Ok::<_, Refusal>(())
    })?;
    Ok(no_content())
}

#[derive(Deserialize)]
struct Tags {
    tags: Vec<String>,
}

async fn add_tags(State(sim): State<Sim>, Path(id): Path<String>, body: Bytes) -> Result<Response, Refusal> {
    change_tags(sim, id, body, true)
}

async fn remove_tags(State(sim): State<Sim>, Path(id): Path<String>, body: Bytes) -> Result<Response, Refusal> {
    change_tags(sim, id, body, false)
}

fn change_tags(sim: Sim, id: String, body: Bytes, add: bool) -> Result<Response, Refusal> {
    let asked: Tags = parse(&body)?;
    sim.with_digitalocean(|model| {
        let tags = model.existing_tags(&asked.tags)?;
        let f = model.firewall_mut(&id)?;
        f.tags.retain(|t| !tags.contains(t));
        if add {
            f.tags.extend(tags);
        }
        model.firewall_touch(&id);
        Ok::<_, Refusal>(())
    })?;
    Ok(no_content())
}

#[derive(Deserialize)]
struct Rules {
    #[serde(default)]
    inbound_rules: Vec<RuleAsked>,
    #[serde(default)]
    outbound_rules: Vec<RuleAsked>,
}

async fn add_rules(State(sim): State<Sim>, Path(id): Path<String>, body: Bytes) -> Result<Response, Refusal> {
    change_rules(sim, id, body, true)
}

async fn remove_rules(State(sim): State<Sim>, Path(id): Path<String>, body: Bytes) -> Result<Response, Refusal> {
    change_rules(sim, id, body, false)
}

/// Rules are told apart by protocol, ports and their peers' addresses and tags.
fn change_rules(sim: Sim, id: String, body: Bytes, add: bool) -> Result<Response, Refusal> {
    let asked: Rules = parse(&body)?;
    sim.with_digitalocean(|model| {
        let inbound = asked
            .inbound_rules
            .into_iter()
            .map(|r| model.firewall_rule(r, "sources"))
            .collect::<Result<Vec<_>, _>>()?;
        let outbound = asked
            .outbound_rules
            .into_iter()
            .map(|r| model.firewall_rule(r, "destinations"))
            .collect::<Result<Vec<_>, _>>()?;
        let f = model.firewall_mut(&id)?;
        let same = |a: &RuleRecord, b: &RuleRecord| {
            (&a.protocol, &a.ports, &a.peers.addresses, &a.peers.tags)
                == (&b.protocol, &b.ports, &b.peers.addresses, &b.peers.tags)
        };
        f.inbound.retain(|r| !inbound.iter().any(|a| same(a, r)));
        f.outbound.retain(|r| !outbound.iter().any(|a| same(a, r)));
        if add {
            f.inbound.extend(inbound);
            f.outbound.extend(outbound);
        }
        model.firewall_touch(&id);
        Ok::<_, Refusal>(())
    })?;
    Ok(no_content())
}

async fn of_droplet(State(sim): State<Sim>, Path(id): Path<u64>, page: Page) -> Result<Response, Refusal> {
    let items = sim.with_digitalocean(|model| {
        if !model.droplets.iter().any(|d| d.id == id) {
            return Err(not_found());
        }
        Ok(model
            .firewalls
            .iter()
            .filter(|f| model.firewall_droplets(f).contains(&id))
            .map(|f| model.firewall_json(f))
            .collect())
    })?;
    Ok(paginate("firewalls", &format!("/v2/droplets/{id}/firewalls"), items, &page))
}

impl Sim {
    /// The names of the account's firewalls, for tests that count what was made.
    pub fn do_firewall_names(&self) -> Vec<String> {
        self.with_digitalocean(|model| model.firewalls.iter().map(|f| f.name.clone()).collect())
    }

    /// The tags of a droplet, for tests that look at what a machine carries.
    pub fn do_droplet_tags(&self, droplet_id: u64) -> Option<Vec<String>> {
        self.with_digitalocean(|model| model.droplets.iter().find(|d| d.id == droplet_id).map(|d| d.tags.clone()))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::super::testing::Api;

    fn ssh() -> serde_json::Value {
        json!({ "protocol": "tcp", "ports": "22", "sources": { "addresses": ["203.0.113.7/32"] } })
    }

    #[tokio::test]
    async fn a_firewall_is_made_waiting_then_succeeds_and_targets_tagged_droplets() {
        let api = Api::start().await;
        let body = json!({ "name": "bc-fwr-1", "inbound_rules": [ssh()], "tags": ["web"] });
        let (status, refused) = api.post("/v2/firewalls", body.clone()).await;
        assert_eq!((status, refused["id"].as_str()), (400, Some("bad_request")), "the tag must exist: {refused}");
        assert_eq!(api.post("/v2/tags", json!({ "name": "web" })).await.0, 201);
        let (status, made) = api.post("/v2/firewalls", body).await;
        assert_eq!(status, 202, "{made}");
        let firewall = &made["firewall"];
        assert_eq!(firewall["status"], "waiting");
        assert_eq!(
            firewall["inbound_rules"][0],
            json!({ "protocol": "tcp", "ports": "22", "sources": { "addresses": ["203.0.113.7/32"] } })
        );
        let id = firewall["id"].as_str().unwrap().to_owned();
        api.later().await;
        let (_, got) = api.get(&format!("/v2/firewalls/{id}")).await;
        assert_eq!(got["firewall"]["status"], "succeeded");
        assert_eq!(got["firewall"]["pending_changes"], json!([]));

        let droplet = api.droplet("web-1", "nyc3").await;
        assert_eq!(api.get(&format!("/v2/droplets/{droplet}/firewalls")).await.1["firewalls"], json!([]));
        let tag = json!({ "resources": [{ "resource_id": droplet.to_string(), "resource_type": "droplet" }] });
        assert_eq!(api.post("/v2/tags/web/resources", tag).await.0, 204);
        let (_, applied) = api.get(&format!("/v2/droplets/{droplet}/firewalls")).await;
        assert_eq!(applied["firewalls"][0]["id"], id.as_str(), "a tag set later still matches");
        assert_eq!(api.sim.name_calls("firewalls.made", "bc-fwr-1"), 1);
    }

    #[tokio::test]
    async fn a_create_needs_a_rule_a_valid_name_and_ports_and_a_put_resets_what_it_leaves_out() {
        let api = Api::start().await;
        let bad = [
            json!({ "name": "bc-x" }),
            json!({ "name": "bc_x", "inbound_rules": [ssh()] }),
            json!({ "name": "x", "inbound_rules": [ssh()] }),
            json!({ "name": "bc-x", "inbound_rules": [{ "protocol": "tcp", "ports": "70000", "sources": { "addresses": ["0.0.0.0/0"] } }] }),
            json!({ "name": "bc-x", "inbound_rules": [{ "protocol": "tcp", "ports": "22", "sources": {} }] }),
            json!({ "name": "bc-x", "inbound_rules": [{ "protocol": "sctp", "ports": "22", "sources": { "addresses": ["0.0.0.0/0"] } }] }),
            json!({ "name": "bc-x", "outbound_rules": [{ "protocol": "tcp", "ports": "22", "sources": { "addresses": ["0.0.0.0/0"] } }] }),
        ];
        for body in bad {
            assert_eq!(api.post("/v2/firewalls", body.clone()).await.0, 400, "{body}");
        }
        assert!(api.sim.do_firewall_names().is_empty(), "nothing made");
        let icmp = json!({ "protocol": "icmp", "destinations": { "addresses": ["0.0.0.0/0", "::/0"] } });
        let (status, made) = api.post("/v2/firewalls", json!({ "name": "bc-x", "outbound_rules": [icmp] })).await;
        assert_eq!(status, 202, "{made}");
        assert_eq!(made["firewall"]["outbound_rules"][0]["ports"], "0", "ICMP's ports are always 0");
        let id = made["firewall"]["id"].as_str().unwrap();
        let (status, put) =
            api.put(&format!("/v2/firewalls/{id}"), json!({ "name": "bc-x", "inbound_rules": [ssh()] })).await;
        assert_eq!(status, 200, "{put}");
        assert_eq!(put["firewall"]["outbound_rules"], json!([]), "left out: reset");
        assert_eq!(api.delete(&format!("/v2/firewalls/{id}")).await.0, 204);
        assert_eq!(api.delete(&format!("/v2/firewalls/{id}")).await.0, 404);
        assert_eq!(
            api.put(&format!("/v2/firewalls/{id}"), json!({ "name": "bc-x", "inbound_rules": [ssh()] })).await.0,
            404
        );
    }
}
