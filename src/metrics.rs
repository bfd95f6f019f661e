//! Process metrics in the Prometheus text format: labelled counters and gauges kept in memory.
//! Cheap enough for the request path (one short lock per update).
use std::collections::BTreeMap;
use std::fmt::Write;
use std::sync::Mutex;

#[derive(Default)]
pub struct Metrics {
    series: Mutex<BTreeMap<(&'static str, String), f64>>,
}

struct Family {
    name: &'static str,
    kind: &'static str,
    help: &'static str,
}

const FAMILIES: &[Family] = &[
    Family { name: "vps_graph_http_requests_total", kind: "counter", help: "HTTP requests by route and status." },
    Family { name: "vps_graph_graphql_errors_total", kind: "counter", help: "GraphQL errors by extensions.code." },
    Family { name: "vps_graph_subscribers", kind: "gauge", help: "Open GraphQL subscriptions." },
    Family { name: "vps_graph_websocket_connections", kind: "gauge", help: "Open WebSocket connections." },
    Family { name: "vps_graph_events_delivered_total", kind: "counter", help: "Events delivered to subscribers." },
    Family {
        name: "vps_graph_events_tailed_total",
        kind: "counter",
        help: "Events read from the outbox by this process's tailer.",
    },
    Family { name: "vps_graph_reconcile_runs_total", kind: "counter", help: "Reconcile runs by kind and outcome." },
    Family { name: "vps_graph_queue_due", kind: "gauge", help: "Work items due now." },
    Family {
        name: "vps_graph_queue_oldest_due_seconds",
        kind: "gauge",
        help: "How long the oldest due work item has waited.",
    },
    Family { name: "vps_graph_provider_calls_total", kind: "counter", help: "Provider calls by endpoint and status." },
    Family {
        name: "vps_graph_provider_budget_remaining",
        kind: "gauge",
        help: "Provider API requests left in the account's budget.",
    },
];

impl Metrics {
    pub fn add(&self, name: &'static str, labels: &[(&str, &str)], by: f64) {
        let key = (name, render_labels(labels));
        let mut series = self.series.lock().unwrap_or_else(|e| e.into_inner());
        *series.entry(key).or_insert(0.0) += by;
    }

    pub fn inc(&self, name: &'static str, labels: &[(&str, &str)]) {
        self.add(name, labels, 1.0);
    }

    pub fn set(&self, name: &'static str, labels: &[(&str, &str)], value: f64) {
        let key = (name, render_labels(labels));
        self.series.lock().unwrap_or_else(|e| e.into_inner()).insert(key, value);
    }

    pub fn get(&self, name: &'static str, labels: &[(&str, &str)]) -> f64 {
        let key = (name, render_labels(labels));
        self.series.lock().unwrap_or_else(|e| e.into_inner()).get(&key).copied().unwrap_or(0.0)
    }

    pub fn render(&self) -> String {
        let series = self.series.lock().unwrap_or_else(|e| e.into_inner());
        let mut out = String::new();
        for family in FAMILIES {
            let _ = writeln!(out, "# HELP {} {}\n# TYPE {} {}", family.name, family.help, family.name, family.kind);
            let mut any = false;
            for ((name, labels), value) in series.iter() {
                if *name == family.name {
                    any = true;
                    let _ = writeln!(out, "{name}{labels} {value}");
                }
            }
            if !any && family.kind == "gauge" {
                let _ = writeln!(out, "{} 0", family.name);
            }
        }
        out
    }
}

fn render_labels(labels: &[(&str, &str)]) -> String {
    if labels.is_empty() {
        return String::new();
    }
    let inner: Vec<String> = labels
        .iter()
        .map(|(k, v)| format!("{k}=\"{}\"", v.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n")))
        .collect();
    format!("{{{}}}", inner.join(","))
}

/// Keeps a gauge up by one while alive.
pub struct GaugeGuard {
    metrics: std::sync::Arc<Metrics>,
    name: &'static str,
}

impl GaugeGuard {
    pub fn new(metrics: std::sync::Arc<Metrics>, name: &'static str) -> Self {
        metrics.add(name, &[], 1.0);
        GaugeGuard { metrics, name }
    }
}

impl Drop for GaugeGuard {
    fn drop(&mut self) {
        self.metrics.add(self.name, &[], -1.0);
    }
}
