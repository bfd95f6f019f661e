//! vps-graph: a GraphQL control plane for the cloud resources that outlive a machine.
//! Layers, top to bottom (each uses only those below it): `http` → `graphql` → `service` →
//! `store`. See DESIGN.md in the shared folder for the one flow every call follows.
pub mod app;
pub mod authz;
pub mod bench;
pub mod boot;
pub mod cidr;
pub mod cli;
pub mod clock;
pub mod config;
pub mod error;
pub mod feed;
pub mod graphql;
pub mod http;
pub mod ids;
pub mod metrics;
pub mod plan;
pub mod provider;
pub mod reconcile;
pub mod secret;
pub mod service;
pub mod services;
pub mod sim;
pub mod store;
pub mod views;

/// reqwest is built without a default TLS provider so only ring is compiled; install it once.
pub fn init_crypto() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}
