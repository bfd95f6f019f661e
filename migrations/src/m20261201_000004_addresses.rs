//! Reserved public addresses (provider addresses) with the assignment each wants, and what an
//! instance's delete does to its machine (`on_delete`).
use sea_orm_migration::prelude::*;

use crate::columns::{big, flag, index, optional, string, time};

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum ProviderAddresses {
    Table,
    Id,
    TenantId,
    ProjectId,
    PoolId,
    ProviderAccountId,
    Name,
    Region,
    Family,
    State,
    DesiredState,
    Address,
    Fingerprint,
    ReserveAttempts,
    Lost,
    Message,
    InstanceId,
    AssignmentState,
    AssignmentMessage,
    ActionId,
    Version,
    CreatedAt,
    UpdatedAt,
    ReadyAt,
    DeletedAt,
}

#[derive(DeriveIden)]
enum Instances {
    Table,
    OnDelete,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_table(
                Table::create()
                    .table(ProviderAddresses::Table)
                    .col(string(ProviderAddresses::Id, 64).primary_key())
                    .col(string(ProviderAddresses::TenantId, 128))
                    .col(optional(ProviderAddresses::ProjectId, 64))
                    .col(string(ProviderAddresses::PoolId, 64))
                    .col(string(ProviderAddresses::ProviderAccountId, 64))
                    .col(string(ProviderAddresses::Name, 64))
                    .col(string(ProviderAddresses::Region, 40))
                    .col(string(ProviderAddresses::Family, 8))
                    .col(string(ProviderAddresses::State, 16))
                    .col(string(ProviderAddresses::DesiredState, 16))
                    .col(optional(ProviderAddresses::Address, 64))
                    .col(optional(ProviderAddresses::Fingerprint, 64))
                    .col(ColumnDef::new(ProviderAddresses::ReserveAttempts).integer().not_null().default(0))
                    .col(flag(ProviderAddresses::Lost))
                    .col(ColumnDef::new(ProviderAddresses::Message).text().null())
                    .col(optional(ProviderAddresses::InstanceId, 64))
                    .col(string(ProviderAddresses::AssignmentState, 16))
                    .col(ColumnDef::new(ProviderAddresses::AssignmentMessage).text().null())
                    .col(optional(ProviderAddresses::ActionId, 128))
                    .col(big(ProviderAddresses::Version, 1))
                    .col(time(ProviderAddresses::CreatedAt, false))
                    .col(time(ProviderAddresses::UpdatedAt, false))
                    .col(time(ProviderAddresses::ReadyAt, true))
                    .col(time(ProviderAddresses::DeletedAt, true))
                    .to_owned(),
            )
            .await?;
        index(
            manager,
            "provider_addresses_tenant",
            ProviderAddresses::Table,
            vec![ProviderAddresses::TenantId.into_iden(), ProviderAddresses::Id.into_iden()],
        )
        .await?;
        index(
            manager,
            "provider_addresses_instance",
            ProviderAddresses::Table,
            vec![ProviderAddresses::InstanceId.into_iden()],
        )
        .await?;
        let db = manager.get_connection();
        db.execute_unprepared(
            "CREATE UNIQUE INDEX provider_addresses_live_name ON provider_addresses (tenant_id, name) WHERE state <> 'deleted'",
        )
        .await?;
        // A reserved IP carries no tag: the row is the ownership record, so one address of an
        // account is recorded by at most one live row.
        db.execute_unprepared(
            "CREATE UNIQUE INDEX provider_addresses_live_address ON provider_addresses (provider_account_id, address) WHERE state <> 'deleted' AND address IS NOT NULL",
        )
        .await?;
        manager
            .alter_table(
                Table::alter()
                    .table(Instances::Table)
                    .add_column(ColumnDef::new(Instances::OnDelete).string_len(16).not_null().default("delete"))
                    .to_owned(),
            )
            .await
    }
}
