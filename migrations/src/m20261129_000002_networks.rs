//! Tenant networks and their subnets (one provider VPC per subnet on DigitalOcean).
use sea_orm_migration::prelude::*;

use crate::columns::{optional, string, time};

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum Networks {
    Table,
    Id,
    TenantId,
    ProjectId,
    PoolId,
    ProviderAccountId,
    Name,
    Description,
    State,
    DesiredState,
    Message,
    Version,
    Generation,
    CreatedAt,
    UpdatedAt,
    ReadyAt,
    DeletedAt,
}

#[derive(DeriveIden)]
enum NetworkSubnets {
    Table,
    Id,
    NetworkId,
    Region,
    IpRange,
    State,
    DesiredState,
    ProviderId,
    ProviderName,
    CreateAttempts,
    Lost,
    Message,
    Version,
    CreatedAt,
    UpdatedAt,
    ReadyAt,
    DeletedAt,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_table(
                Table::create()
                    .table(Networks::Table)
                    .col(string(Networks::Id, 64).primary_key())
                    .col(string(Networks::TenantId, 128))
                    .col(optional(Networks::ProjectId, 64))
                    .col(string(Networks::PoolId, 64))
                    .col(string(Networks::ProviderAccountId, 64))
                    .col(string(Networks::Name, 64))
                    .col(optional(Networks::Description, 256))
                    .col(string(Networks::State, 16))
                    .col(string(Networks::DesiredState, 16))
                    .col(ColumnDef::new(Networks::Message).text().null())
                    .col(ColumnDef::new(Networks::Version).big_integer().not_null().default(1))
                    .col(ColumnDef::new(Networks::Generation).big_integer().not_null().default(1))
                    .col(time(Networks::CreatedAt, false))
                    .col(time(Networks::UpdatedAt, false))
                    .col(time(Networks::ReadyAt, true))
                    .col(time(Networks::DeletedAt, true))
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("networks_tenant")
                    .table(Networks::Table)
                    .col(Networks::TenantId)
                    .col(Networks::Id)
                    .to_owned(),
            )
            .await?;
        // A name is taken while its network is not deleted (partial index, on both backends).
        manager
            .get_connection()
            .execute_unprepared(
                "CREATE UNIQUE INDEX networks_live_name ON networks (tenant_id, name) WHERE state <> 'deleted'",
            )
            .await?;
        manager
            .create_table(
                Table::create()
                    .table(NetworkSubnets::Table)
                    .col(string(NetworkSubnets::Id, 64).primary_key())
                    .col(string(NetworkSubnets::NetworkId, 64))
                    .col(string(NetworkSubnets::Region, 40))
                    .col(string(NetworkSubnets::IpRange, 32))
                    .col(string(NetworkSubnets::State, 16))
                    .col(string(NetworkSubnets::DesiredState, 16))
                    .col(optional(NetworkSubnets::ProviderId, 128))
                    .col(string(NetworkSubnets::ProviderName, 128))
                    .col(ColumnDef::new(NetworkSubnets::CreateAttempts).integer().not_null().default(0))
                    .col(ColumnDef::new(NetworkSubnets::Lost).boolean().not_null().default(false))
                    .col(ColumnDef::new(NetworkSubnets::Message).text().null())
                    .col(ColumnDef::new(NetworkSubnets::Version).big_integer().not_null().default(1))
                    .col(time(NetworkSubnets::CreatedAt, false))
                    .col(time(NetworkSubnets::UpdatedAt, false))
                    .col(time(NetworkSubnets::ReadyAt, true))
                    .col(time(NetworkSubnets::DeletedAt, true))
                    .foreign_key(
                        ForeignKey::create()
                            .from(NetworkSubnets::Table, NetworkSubnets::NetworkId)
                            .to(Networks::Table, Networks::Id)
                            .on_delete(ForeignKeyAction::Restrict),
                    )
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("network_subnets_network")
                    .table(NetworkSubnets::Table)
                    .col(NetworkSubnets::NetworkId)
                    .to_owned(),
            )
            .await?;
        Ok(())
    }
}
