//! The service layer: one module per resource group with the rules of each call. Every mutation
//! validates, authorizes, then writes its desired state, quota booking, idempotency record and
//! outbox event in one transaction, and returns at once. It knows nothing of GraphQL or HTTP.
pub mod addresses;
pub mod bootstrap;
pub mod events;
pub mod filesystems;
pub mod firewall_rules;
pub mod instances;
pub mod mounts;
pub mod networks;
pub mod nodes;
pub mod plan;
pub mod pools;
pub mod protection;
pub mod rows;
pub mod schedules;
pub mod snapshots;
pub mod tenants;
pub mod tokens;
pub mod usage;
pub mod validate;
pub mod volumes;
