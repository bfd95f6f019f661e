//! The integration tests, built as one binary (one link step, not one per file): each module
//! drives the service end to end over HTTP and WebSocket, on SQLite and, when `TEST_DATABASE_URL`
//! is set, on PostgreSQL too (`common::db_test!`). `tests/aws_credentials.rs` stays a binary of
//! its own: it sets the process's environment, which no other test may share.
#[macro_use]
mod common;

mod addresses;
mod auth;
mod aws;
mod aws_networks;
mod boundaries;
mod budget;
mod coverage;
mod dashboard;
mod dry_run;
mod edge;
mod events_since;
mod filesystems;
mod filesystems_e2e;
mod filesystems_reconcile;
mod firewall_rules;
mod graphiql;
mod hostile;
mod http;
mod idempotency;
mod inventory;
mod inventory_aws;
mod layers;
mod leases;
mod load;
mod metered;
mod metrics;
mod networks;
mod nodes;
mod outbox;
mod protection;
mod queue;
mod quota;
mod replicas;
mod retention;
mod schedules;
mod schema;
mod secrets;
mod sim;
mod sse;
mod status;
mod subscriptions;
mod usage;
mod volumes;
mod volumes_rules;
