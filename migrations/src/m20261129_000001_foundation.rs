//! The foundation: tenancy, provider accounts and pools, quotas and their ledger, API tokens,
//! idempotency records, the outbox and the work queue.
use sea_orm_migration::prelude::*;
use sea_orm_migration::sea_orm::DbBackend;

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum Tenants {
    Table,
    Id,
    Name,
    Version,
    CreatedAt,
    UpdatedAt,
}

#[derive(DeriveIden)]
enum Projects {
    Table,
    Id,
    TenantId,
    Name,
    Description,
    Version,
    CreatedAt,
    UpdatedAt,
}

#[derive(DeriveIden)]
enum ProviderAccounts {
    Table,
    Id,
    TenantId,
    Name,
    Kind,
    ApiUrl,
    CredentialRef,
    Regions,
    Zones,
    Sim,
    Version,
    CreatedAt,
    UpdatedAt,
}

#[derive(DeriveIden)]
enum Pools {
    Table,
    Id,
    Name,
    ProviderAccountId,
    Billing,
    Version,
    CreatedAt,
    UpdatedAt,
}

#[derive(DeriveIden)]
enum PoolOffers {
    Table,
    PoolId,
    TenantId,
    CreatedAt,
}

#[derive(DeriveIden)]
enum Quotas {
    Table,
    TenantId,
    PoolId,
    Resource,
    Max,
    Used,
    Version,
    UpdatedAt,
}

#[derive(DeriveIden)]
enum QuotaLedger {
    Table,
    ResourceId,
    QuotaResource,
    TenantId,
    PoolId,
    Amount,
    UpdatedAt,
}

#[derive(DeriveIden)]
enum ApiTokens {
    Table,
    Id,
    TenantId,
    Name,
    SecretHash,
    CreatedAt,
    RevokedAt,
}

#[derive(DeriveIden)]
enum TokenGrants {
    Table,
    TokenId,
    Permission,
    Scope,
}

#[derive(DeriveIden)]
enum IdempotencyRecords {
    Table,
    TenantId,
    Operation,
    Key,
    RequestHash,
    ResourceId,
    CreatedAt,
}

#[derive(DeriveIden)]
enum WorkItems {
    Table,
    Kind,
    ResourceId,
    DueAt,
    LeaseOwner,
    LeaseUntil,
    LeaseEpoch,
    RunAgain,
    Attempts,
    LastError,
}

#[derive(DeriveIden)]
enum Meta {
    Table,
    Key,
    Value,
}

fn id(col: impl IntoIden) -> ColumnDef {
    ColumnDef::new(col).string_len(64).not_null().primary_key().to_owned()
}

fn text(col: impl IntoIden) -> ColumnDef {
    ColumnDef::new(col).string().not_null().to_owned()
}

fn time(col: impl IntoIden) -> ColumnDef {
    ColumnDef::new(col).timestamp_with_time_zone().not_null().to_owned()
}

fn version(col: impl IntoIden) -> ColumnDef {
    ColumnDef::new(col).big_integer().not_null().default(1).to_owned()
}

fn fk(
    from_table: impl IntoIden,
    from_col: impl IntoIden,
    to: impl IntoIden,
    to_col: impl IntoIden,
) -> ForeignKeyCreateStatement {
    ForeignKey::create().from(from_table, from_col).to(to, to_col).on_delete(ForeignKeyAction::Restrict).to_owned()
}

/// The outbox differs by backend on purpose: PostgreSQL stamps each row with the writing
/// transaction's xid8 so a reader can hold back rows of transactions still running (the cursor is
/// `(txid, id)`); SQLite has one writer at a time, so `txid` stays 0 and the id alone orders rows.
const OUTBOX_POSTGRES: &str = r#"
CREATE TABLE outbox_events (
    id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    txid XID8 NOT NULL DEFAULT pg_current_xact_id(),
    event_id VARCHAR(64) NOT NULL UNIQUE,
    type VARCHAR(128) NOT NULL,
    source VARCHAR(256) NOT NULL,
    subject VARCHAR(128) NOT NULL,
    subject_kind VARCHAR(64) NOT NULL,
    tenant_id VARCHAR(128),
    project_id VARCHAR(64),
    version BIGINT NOT NULL,
    time TIMESTAMPTZ NOT NULL,
    data JSONB NOT NULL
);
CREATE INDEX outbox_events_position ON outbox_events (txid, id);
CREATE INDEX outbox_events_tenant ON outbox_events (tenant_id, txid, id);
CREATE OR REPLACE FUNCTION outbox_notify() RETURNS trigger AS $$
BEGIN PERFORM pg_notify('vps_graph_outbox', ''); RETURN NULL; END;
$$ LANGUAGE plpgsql;
CREATE TRIGGER outbox_events_notify AFTER INSERT ON outbox_events
    FOR EACH STATEMENT EXECUTE FUNCTION outbox_notify();
"#;

const OUTBOX_SQLITE: &str = r#"
CREATE TABLE outbox_events (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    txid INTEGER NOT NULL DEFAULT 0,
    event_id VARCHAR(64) NOT NULL UNIQUE,
    type VARCHAR(128) NOT NULL,
    source VARCHAR(256) NOT NULL,
    subject VARCHAR(128) NOT NULL,
    subject_kind VARCHAR(64) NOT NULL,
    tenant_id VARCHAR(128),
    project_id VARCHAR(64),
    version BIGINT NOT NULL,
    time TEXT NOT NULL,
    data TEXT NOT NULL
);
CREATE INDEX outbox_events_position ON outbox_events (txid, id);
CREATE INDEX outbox_events_tenant ON outbox_events (tenant_id, txid, id);
"#;

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_table(
                Table::create()
                    .table(Tenants::Table)
                    .col(ColumnDef::new(Tenants::Id).string_len(128).not_null().primary_key())
                    .col(text(Tenants::Name))
                    .col(version(Tenants::Version))
                    .col(time(Tenants::CreatedAt))
                    .col(time(Tenants::UpdatedAt))
                    .to_owned(),
            )
            .await?;
        manager
            .create_table(
                Table::create()
                    .table(Projects::Table)
                    .col(id(Projects::Id))
                    .col(ColumnDef::new(Projects::TenantId).string_len(128).not_null())
                    .col(text(Projects::Name))
                    .col(ColumnDef::new(Projects::Description).string().null())
                    .col(version(Projects::Version))
                    .col(time(Projects::CreatedAt))
                    .col(time(Projects::UpdatedAt))
                    .foreign_key(&mut fk(Projects::Table, Projects::TenantId, Tenants::Table, Tenants::Id))
                    .index(Index::create().unique().col(Projects::TenantId).col(Projects::Name))
                    .to_owned(),
            )
            .await?;
        manager
            .create_table(
                Table::create()
                    .table(ProviderAccounts::Table)
                    .col(id(ProviderAccounts::Id))
                    .col(ColumnDef::new(ProviderAccounts::TenantId).string_len(128).null())
                    .col(ColumnDef::new(ProviderAccounts::Name).string().not_null().unique_key())
                    .col(text(ProviderAccounts::Kind))
                    .col(text(ProviderAccounts::ApiUrl))
                    .col(text(ProviderAccounts::CredentialRef))
                    .col(ColumnDef::new(ProviderAccounts::Regions).json_binary().not_null())
                    .col(ColumnDef::new(ProviderAccounts::Zones).json_binary().not_null())
                    .col(ColumnDef::new(ProviderAccounts::Sim).boolean().not_null().default(false))
                    .col(version(ProviderAccounts::Version))
                    .col(time(ProviderAccounts::CreatedAt))
                    .col(time(ProviderAccounts::UpdatedAt))
                    .foreign_key(&mut fk(
                        ProviderAccounts::Table,
                        ProviderAccounts::TenantId,
                        Tenants::Table,
                        Tenants::Id,
                    ))
                    .to_owned(),
            )
            .await?;
        manager
            .create_table(
                Table::create()
                    .table(Pools::Table)
                    .col(id(Pools::Id))
                    .col(ColumnDef::new(Pools::Name).string().not_null().unique_key())
                    .col(ColumnDef::new(Pools::ProviderAccountId).string_len(64).not_null())
                    .col(text(Pools::Billing))
                    .col(version(Pools::Version))
                    .col(time(Pools::CreatedAt))
                    .col(time(Pools::UpdatedAt))
                    .foreign_key(&mut fk(
                        Pools::Table,
                        Pools::ProviderAccountId,
                        ProviderAccounts::Table,
                        ProviderAccounts::Id,
                    ))
                    .to_owned(),
            )
            .await?;
        manager
            .create_table(
                Table::create()
                    .table(PoolOffers::Table)
                    .col(ColumnDef::new(PoolOffers::PoolId).string_len(64).not_null())
                    .col(ColumnDef::new(PoolOffers::TenantId).string_len(128).not_null())
                    .col(time(PoolOffers::CreatedAt))
                    .primary_key(Index::create().col(PoolOffers::TenantId).col(PoolOffers::PoolId))
                    .foreign_key(&mut fk(PoolOffers::Table, PoolOffers::PoolId, Pools::Table, Pools::Id))
                    .foreign_key(&mut fk(PoolOffers::Table, PoolOffers::TenantId, Tenants::Table, Tenants::Id))
                    .to_owned(),
            )
            .await?;
        manager
            .create_table(
                Table::create()
                    .table(Quotas::Table)
                    .col(ColumnDef::new(Quotas::TenantId).string_len(128).not_null())
                    .col(ColumnDef::new(Quotas::PoolId).string_len(64).not_null())
                    .col(ColumnDef::new(Quotas::Resource).string_len(64).not_null())
                    .col(ColumnDef::new(Quotas::Max).big_integer().not_null())
                    .col(ColumnDef::new(Quotas::Used).big_integer().not_null().default(0))
                    .col(version(Quotas::Version))
                    .col(time(Quotas::UpdatedAt))
                    .primary_key(Index::create().col(Quotas::TenantId).col(Quotas::PoolId).col(Quotas::Resource))
                    .foreign_key(&mut fk(Quotas::Table, Quotas::PoolId, Pools::Table, Pools::Id))
                    .foreign_key(&mut fk(Quotas::Table, Quotas::TenantId, Tenants::Table, Tenants::Id))
                    .to_owned(),
            )
            .await?;
        manager
            .create_table(
                Table::create()
                    .table(QuotaLedger::Table)
                    .col(ColumnDef::new(QuotaLedger::ResourceId).string_len(64).not_null())
                    .col(ColumnDef::new(QuotaLedger::QuotaResource).string_len(64).not_null())
                    .col(ColumnDef::new(QuotaLedger::TenantId).string_len(128).not_null())
                    .col(ColumnDef::new(QuotaLedger::PoolId).string_len(64).not_null())
                    .col(ColumnDef::new(QuotaLedger::Amount).big_integer().not_null())
                    .col(time(QuotaLedger::UpdatedAt))
                    .primary_key(Index::create().col(QuotaLedger::ResourceId).col(QuotaLedger::QuotaResource))
                    .to_owned(),
            )
            .await?;
        manager
            .create_table(
                Table::create()
                    .table(ApiTokens::Table)
                    .col(id(ApiTokens::Id))
                    .col(ColumnDef::new(ApiTokens::TenantId).string_len(128).null())
                    .col(text(ApiTokens::Name))
                    .col(ColumnDef::new(ApiTokens::SecretHash).string_len(64).not_null().unique_key())
                    .col(time(ApiTokens::CreatedAt))
                    .col(ColumnDef::new(ApiTokens::RevokedAt).timestamp_with_time_zone().null())
                    .foreign_key(&mut fk(ApiTokens::Table, ApiTokens::TenantId, Tenants::Table, Tenants::Id))
                    .to_owned(),
            )
            .await?;
        manager
            .create_table(
                Table::create()
                    .table(TokenGrants::Table)
                    .col(ColumnDef::new(TokenGrants::TokenId).string_len(64).not_null())
                    .col(ColumnDef::new(TokenGrants::Permission).string_len(128).not_null())
                    .col(ColumnDef::new(TokenGrants::Scope).string_len(192).not_null())
                    .primary_key(
                        Index::create().col(TokenGrants::TokenId).col(TokenGrants::Permission).col(TokenGrants::Scope),
                    )
                    .foreign_key(&mut fk(TokenGrants::Table, TokenGrants::TokenId, ApiTokens::Table, ApiTokens::Id))
                    .to_owned(),
            )
            .await?;
        manager
            .create_table(
                Table::create()
                    .table(IdempotencyRecords::Table)
                    .col(ColumnDef::new(IdempotencyRecords::TenantId).string_len(128).not_null())
                    .col(ColumnDef::new(IdempotencyRecords::Operation).string_len(64).not_null())
                    .col(ColumnDef::new(IdempotencyRecords::Key).string_len(128).not_null())
                    .col(ColumnDef::new(IdempotencyRecords::RequestHash).string_len(64).not_null())
                    .col(ColumnDef::new(IdempotencyRecords::ResourceId).string_len(64).not_null())
                    .col(time(IdempotencyRecords::CreatedAt))
                    .primary_key(
                        Index::create()
                            .col(IdempotencyRecords::TenantId)
                            .col(IdempotencyRecords::Operation)
                            .col(IdempotencyRecords::Key),
                    )
                    .to_owned(),
            )
            .await?;
        manager
            .create_table(
                Table::create()
                    .table(WorkItems::Table)
                    .col(ColumnDef::new(WorkItems::Kind).string_len(64).not_null())
                    .col(ColumnDef::new(WorkItems::ResourceId).string_len(64).not_null())
                    .col(ColumnDef::new(WorkItems::DueAt).big_integer().not_null())
                    .col(ColumnDef::new(WorkItems::LeaseOwner).string_len(64).null())
                    .col(ColumnDef::new(WorkItems::LeaseUntil).big_integer().null())
                    .col(ColumnDef::new(WorkItems::LeaseEpoch).big_integer().not_null().default(0))
                    .col(ColumnDef::new(WorkItems::RunAgain).boolean().not_null().default(false))
                    .col(ColumnDef::new(WorkItems::Attempts).integer().not_null().default(0))
                    .col(ColumnDef::new(WorkItems::LastError).string().null())
                    .primary_key(Index::create().col(WorkItems::Kind).col(WorkItems::ResourceId))
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create().name("work_items_due").table(WorkItems::Table).col(WorkItems::DueAt).to_owned(),
            )
            .await?;
        manager
            .create_table(
                Table::create()
                    .table(Meta::Table)
                    .col(ColumnDef::new(Meta::Key).string_len(64).not_null().primary_key())
                    .col(text(Meta::Value))
                    .to_owned(),
            )
            .await?;
        let outbox = match manager.get_database_backend() {
            DbBackend::Postgres => OUTBOX_POSTGRES,
            _ => OUTBOX_SQLITE,
        };
        manager.get_connection().execute_unprepared(outbox).await?;
        Ok(())
    }
}
