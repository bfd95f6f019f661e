//! One SeaORM entity per table (see `migrations/`).
pub mod api_token;
pub mod idempotency_record;
pub mod meta;
pub mod network;
pub mod network_subnet;
pub mod pool;
pub mod pool_offer;
pub mod project;
pub mod provider_account;
pub mod quota;
pub mod quota_ledger;
pub mod tenant;
pub mod token_grant;
pub mod work_item;
