//! What clients read of each resource, and the events that carry it: the views built from the
//! store's rows, shared by the service (its answers), the reconcilers (the events of what they
//! learned) and the GraphQL layer (what it renders). One module per resource group.
pub mod addresses;
pub mod fields;
pub mod filesystems;
pub mod firewall_rules;
pub mod instances;
pub mod json;
pub mod networks;
pub mod pools;
pub mod schedules;
pub mod snapshots;
pub mod tenants;
pub mod volumes;
