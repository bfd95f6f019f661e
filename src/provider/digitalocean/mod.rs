//! The DigitalOcean API v2 client (reqwest). It keeps the account's rate-limit budget from the
//! `ratelimit-*` headers and backs off before the budget is spent, drift reads first
//! (`provider::budget`); 429, 5xx and timeouts become
//! retry-later (or unknown-outcome for a create); error bodies are kept as the message.
//! Droplets and tags live in `droplets`, cloud firewalls in `firewalls`, volumes, shares and snapshots in `volumes`, reserved
//! addresses in `addresses`.
mod addresses;
mod droplets;
mod firewalls;
mod volumes;

use std::sync::Arc;
use std::time::Duration;

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use super::budget::AccountBudget;
use super::{ActionStatus, ProviderError, ProviderResult, Vpc, VpcCreate};
use crate::metrics::Metrics;
use crate::secret::Secret;

const RETRY_AFTER: Duration = Duration::from_secs(30);
const PER_PAGE: u32 = 200;

pub struct DigitalOcean {
    account_id: String,
    base: String,
    token: Result<Secret, String>,
    http: reqwest::Client,
    budget: Arc<AccountBudget>,
    metrics: Arc<Metrics>,
}

pub(super) struct Answer {
    status: StatusCode,
    body: Value,
}

impl DigitalOcean {
    pub fn new(
        account_id: &str,
        base: &str,
        token: Result<Secret, String>,
        timeout: Duration,
        metrics: Arc<Metrics>,
    ) -> Self {
        let http = reqwest::Client::builder()
            .timeout(timeout)
            .connect_timeout(timeout.min(Duration::from_secs(5)))
            .build()
            .unwrap_or_default();
        DigitalOcean {
            account_id: account_id.to_owned(),
            base: base.trim_end_matches('/').to_owned(),
            token,
            http,
            budget: Arc::default(),
            metrics,
        }
    }

    /// One request. `acts` says whether it changes something at the provider (then a lost
    /// answer is `Unknown`, not retry-later).
    pub(super) async fn call(
        &self,
        endpoint: &'static str,
        method: Method,
        path: &str,
        body: Option<Value>,
    ) -> ProviderResult<Answer> {
        let token = self.token.clone().map_err(ProviderError::misconfigured)?;
        if method != Method::GET {
            super::fence::before_change().await?;
        }
        let now_s = chrono::Utc::now().timestamp();
        let purpose = super::fence::purpose();
        if let Some(after) = self.budget.take(now_s, purpose) {
            self.count(endpoint, "budget", Duration::ZERO);
            return Err(ProviderError::RetryLater {
                message: format!("waiting for the account's API budget ({} calls wait first)", purpose.as_str()),
                after,
            });
        }
        self.metrics.provider_calls_last_hour(&self.account_id, &self.budget.view(now_s).by_purpose());
        let acts = method == Method::POST;
        let mut request = self.http.request(method, format!("{}{path}", self.base)).bearer_auth(token.expose());
        if let Some(body) = body {
            request = request.json(&body);
        }
        let started = std::time::Instant::now();
        let response = match request.send().await {
            Ok(response) => response,
            Err(err) => {
                self.count(endpoint, "transport", started.elapsed());
                let message = format!("DigitalOcean did not answer: {err}");
                return Err(if acts && !err.is_connect() {
                    ProviderError::Unknown { message }
                } else {
                    ProviderError::RetryLater { message, after: RETRY_AFTER }
                });
            }
        };
        let status = response.status();
        self.count(endpoint, status.as_str(), started.elapsed());
        // A 429 says `remaining: 0` for a burst over the per-minute limit too, with the hourly
        // reset: learnt, it would hold every call back for up to an hour, and nothing sent means
        // nothing learnt again. Its `retry-after` is the wait; the budget is learnt from the rest.
        if status != StatusCode::TOO_MANY_REQUESTS {
            self.learn_budget(response.headers());
        }
        let retry_after = header_seconds(response.headers(), "retry-after");
        let body: Value = response.json().await.unwrap_or(Value::Null);
        let message = || {
            body.get("message").and_then(Value::as_str).unwrap_or(status.canonical_reason().unwrap_or("")).to_owned()
        };
        match status {
            s if s.is_success() => Ok(Answer { status, body }),
            StatusCode::TOO_MANY_REQUESTS => Err(ProviderError::RetryLater {
                message: format!("rate-limited by DigitalOcean: {}", message()),
                after: retry_after.map(Duration::from_secs).unwrap_or(RETRY_AFTER).max(RETRY_AFTER),
            }),
            s if s.is_server_error() && acts => {
                Err(ProviderError::Unknown { message: format!("DigitalOcean {}: {}", s.as_u16(), message()) })
            }
            s if s.is_server_error() => Err(ProviderError::RetryLater {
                message: format!("DigitalOcean {}: {}", s.as_u16(), message()),
                after: RETRY_AFTER,
            }),
            // Gone, in the API's own words; a bare 404 (a wrong URL, a proxy) says nothing of it.
            StatusCode::NOT_FOUND if body["id"] == "not_found" => Ok(Answer { status, body }),
            s => {
                let message = message();
                Err(ProviderError::Refused {
                    status: s.as_u16(),
                    code: crate::provider::Refusal::of_digitalocean(&message),
                    message,
                })
            }
        }
    }

    fn learn_budget(&self, headers: &reqwest::header::HeaderMap) {
        let number = |name| header_seconds(headers, name).map(|n| n as i64);
        let (limit, remaining) = (number("ratelimit-limit"), number("ratelimit-remaining"));
        self.budget.learn(limit, remaining, number("ratelimit-reset"));
        let account = crate::metrics::Account { account: self.account_id.clone() };
        if let Some(remaining) = remaining {
            self.metrics.provider_budget_remaining.get_or_create(&account).set(remaining);
        }
        if let Some(limit) = limit {
            self.metrics.provider_budget_limit.get_or_create(&account).set(limit);
        }
    }

    /// The account's budget, shared with the registry that shows it to operators.
    pub fn budget(&self) -> Arc<AccountBudget> {
        self.budget.clone()
    }

    fn count(&self, endpoint: &str, status: &str, took: Duration) {
        self.metrics.provider_call("digitalocean", endpoint, status, took);
    }
}

impl DigitalOcean {
    /// Every item under `key` of a paginated listing at `path` (which may carry a query already),
    /// page after page while the answer links a next one.
    pub(super) async fn list_all(&self, endpoint: &'static str, path: &str, key: &str) -> ProviderResult<Vec<Value>> {
        Ok(self.list_found(endpoint, path, key).await?.unwrap_or_default())
    }

    /// `list_all` of a listing under a resource: None when the resource is gone (404).
    pub(super) async fn list_found(
        &self,
        endpoint: &'static str,
        path: &str,
        key: &str,
    ) -> ProviderResult<Option<Vec<Value>>> {
        let mut items = Vec::new();
        let joiner = if path.contains('?') { '&' } else { '?' };
        for page in 1.. {
            let answer = self
                .call(endpoint, Method::GET, &format!("{path}{joiner}page={page}&per_page={PER_PAGE}"), None)
                .await?;
            if answer.status == StatusCode::NOT_FOUND {
                return Ok(None);
            }
            let found = listed(&answer.body, key)?;
            let more = !found.is_empty() && !answer.body["links"]["pages"]["next"].is_null();
            items.extend(found);
            if !more {
                break;
            }
        }
        Ok(Some(items))
    }
}

/// A string field, or a number written as one (DigitalOcean's ids are either).
pub(super) fn id_text(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        Value::Number(n) => n.to_string(),
        _ => String::new(),
    }
}

/// An answer DigitalOcean would never give: the request's outcome is unknown (it is looked at
/// again, never taken for "not there").
pub(super) fn unreadable(what: &str) -> ProviderError {
    ProviderError::Unknown { message: format!("unreadable {what} from DigitalOcean") }
}

/// The list under `key` of a list answer. Missing is unreadable, never empty: an empty list would
/// say "not there", and a create would follow.
pub(super) fn listed(body: &Value, key: &str) -> ProviderResult<Vec<Value>> {
    body[key].as_array().cloned().ok_or_else(|| unreadable(&format!("list of {key}")))
}

/// A field DigitalOcean always sends: missing is unreadable, never a silent zero or "".
pub(super) fn required(body: &Value, key: &str, what: &str) -> ProviderResult<String> {
    body[key].as_str().map(str::to_owned).ok_or_else(|| unreadable(&format!("{what} {key}")))
}

pub(super) fn strings(value: &Value) -> Vec<String> {
    value.as_array().map(|items| items.iter().map(id_text).collect()).unwrap_or_default()
}

fn header_seconds(headers: &reqwest::header::HeaderMap, name: &str) -> Option<u64> {
    headers.get(name)?.to_str().ok()?.trim().parse().ok()
}

fn vpc_from(body: &Value) -> ProviderResult<Vpc> {
    serde_json::from_value(body.clone())
        .map_err(|e| ProviderError::Unknown { message: format!("unreadable VPC from DigitalOcean: {e}") })
}

/// Tenant networks: one VPC per subnet.
impl DigitalOcean {
    pub async fn vpc_create(&self, request: &VpcCreate<'_>) -> ProviderResult<Vpc> {
        let body = json!({ "name": request.name, "region": request.region, "ip_range": request.ip_range, "description": request.description });
        let answer = self.call("vpcs.create", Method::POST, "/v2/vpcs", Some(body)).await?;
        vpc_from(&answer.body["vpc"])
    }

    /// None when the provider has no such VPC.
    pub async fn vpc_get(&self, id: &str) -> ProviderResult<Option<Vpc>> {
        let answer = self.call("vpcs.get", Method::GET, &format!("/v2/vpcs/{id}"), None).await?;
        if answer.status == StatusCode::NOT_FOUND {
            return Ok(None);
        }
        vpc_from(&answer.body["vpc"]).map(Some)
    }

    pub async fn vpc_find_by_name(&self, name: &str) -> ProviderResult<Option<Vpc>> {
        let mut page = 1;
        loop {
            let answer =
                self.call("vpcs.list", Method::GET, &format!("/v2/vpcs?page={page}&per_page={PER_PAGE}"), None).await?;
            let vpcs = listed(&answer.body, "vpcs")?;
            if let Some(found) = vpcs.iter().find(|v| v["name"] == name) {
                return vpc_from(found).map(Some);
            }
            if answer.body["links"]["pages"]["next"].is_null() || vpcs.is_empty() {
                return Ok(None);
            }
            page += 1;
        }
    }

    /// False when it was already gone.
    pub async fn vpc_delete(&self, id: &str) -> ProviderResult<bool> {
        let answer = self.call("vpcs.delete", Method::DELETE, &format!("/v2/vpcs/{id}"), None).await?;
        Ok(answer.status != StatusCode::NOT_FOUND)
    }

    /// Every VPC of the account, in pages of the API's largest size.
    pub async fn vpcs_list(&self) -> ProviderResult<Vec<Vpc>> {
        self.list_all("vpcs.list", "/v2/vpcs", "vpcs").await?.iter().map(vpc_from).collect()
    }
}

/// Provider actions (attach, detach, resize, snapshot) are started, then looked at through the
/// action endpoints until done; a run never waits on one (it looks again 5 s later).
impl DigitalOcean {
    /// None when the provider knows no such action.
    pub async fn action_get(&self, id: u64) -> ProviderResult<Option<ActionStatus>> {
        let answer = self.call("actions.get", Method::GET, &format!("/v2/actions/{id}"), None).await?;
        if answer.status == StatusCode::NOT_FOUND {
            return Ok(None);
        }
        Ok(Some(match answer.body["action"]["status"].as_str() {
            Some("completed") => ActionStatus::Completed,
            Some("errored") => ActionStatus::Errored,
            _ => ActionStatus::InProgress,
        }))
    }
}
