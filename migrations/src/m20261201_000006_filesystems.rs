//! AWS networks (one VPC with a subnet per zone, or an adopted VPC), instances on AWS with the
//! filesystems they mount, and the filesystems themselves (EFS, FSx for Lustre).
use sea_orm_migration::prelude::*;

use crate::columns::{big, flag, index, optional, string, time};

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum Networks {
    Table,
    Region,
    IpRange,
    ProviderId,
    CreateAttempts,
    Lost,
    Adopted,
}

#[derive(DeriveIden)]
enum NetworkSubnets {
    Table,
    Zone,
}

#[derive(DeriveIden)]
enum Instances {
    Table,
    Zone,
    UserData,
}

#[derive(DeriveIden)]
enum Filesystems {
    Table,
    Id,
    TenantId,
    ProjectId,
    NetworkId,
    PoolId,
    ProviderAccountId,
    Name,
    Kind,
    SizeGib,
    Deployment,
    Zone,
    Region,
    State,
    DesiredState,
    Message,
    ProviderName,
    SecurityGroupId,
    GroupAttempts,
    ProviderId,
    CreateAttempts,
    DnsName,
    MountName,
    Lost,
    Version,
    CreatedAt,
    UpdatedAt,
    ReadyAt,
    DeletedAt,
}

#[derive(DeriveIden)]
enum InstanceFilesystems {
    Table,
    InstanceId,
    FilesystemId,
    Path,
    Position,
}

/// One column per statement: SQLite alters a table one column at a time.
async fn add(manager: &SchemaManager<'_>, table: impl IntoIden, column: ColumnDef) -> Result<(), DbErr> {
    manager.alter_table(Table::alter().table(table).add_column(column).to_owned()).await
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        // On AWS a network is one VPC (its CIDR block `ip_range`, in `region`); DigitalOcean
        // networks leave these empty (one VPC per subnet, on the subnet rows).
        add(manager, Networks::Table, optional(Networks::Region, 40)).await?;
        add(manager, Networks::Table, optional(Networks::IpRange, 32)).await?;
        add(manager, Networks::Table, optional(Networks::ProviderId, 128)).await?;
        add(
            manager,
            Networks::Table,
            ColumnDef::new(Networks::CreateAttempts).integer().not_null().default(0).to_owned(),
        )
        .await?;
        add(manager, Networks::Table, flag(Networks::Lost)).await?;
        add(manager, Networks::Table, flag(Networks::Adopted)).await?;
        // One live network per VPC of an account: a VPC is adopted once, and never one made.
        manager
            .get_connection()
            .execute_unprepared(
                "CREATE UNIQUE INDEX networks_live_vpc ON networks (provider_account_id, provider_id) WHERE state <> 'deleted' AND provider_id IS NOT NULL",
            )
            .await?;
        add(manager, NetworkSubnets::Table, optional(NetworkSubnets::Zone, 64)).await?;
        add(manager, Instances::Table, optional(Instances::Zone, 64)).await?;
        add(manager, Instances::Table, ColumnDef::new(Instances::UserData).text().null().to_owned()).await?;
        manager
            .create_table(
                Table::create()
                    .table(Filesystems::Table)
                    .col(string(Filesystems::Id, 64).primary_key())
                    .col(string(Filesystems::TenantId, 128))
                    .col(optional(Filesystems::ProjectId, 64))
                    .col(string(Filesystems::NetworkId, 64))
                    .col(string(Filesystems::PoolId, 64))
                    .col(string(Filesystems::ProviderAccountId, 64))
                    .col(string(Filesystems::Name, 64))
                    .col(string(Filesystems::Kind, 8))
                    .col(ColumnDef::new(Filesystems::SizeGib).big_integer().null())
                    .col(optional(Filesystems::Deployment, 16))
                    .col(optional(Filesystems::Zone, 64))
                    .col(string(Filesystems::Region, 40))
                    .col(string(Filesystems::State, 16))
                    .col(string(Filesystems::DesiredState, 16))
                    .col(ColumnDef::new(Filesystems::Message).text().null())
                    .col(string(Filesystems::ProviderName, 128))
                    .col(optional(Filesystems::SecurityGroupId, 64))
                    .col(ColumnDef::new(Filesystems::GroupAttempts).integer().not_null().default(0))
                    .col(optional(Filesystems::ProviderId, 64))
                    .col(ColumnDef::new(Filesystems::CreateAttempts).integer().not_null().default(0))
                    .col(optional(Filesystems::DnsName, 256))
                    .col(optional(Filesystems::MountName, 64))
                    .col(flag(Filesystems::Lost))
                    .col(big(Filesystems::Version, 1))
                    .col(time(Filesystems::CreatedAt, false))
                    .col(time(Filesystems::UpdatedAt, false))
                    .col(time(Filesystems::ReadyAt, true))
                    .col(time(Filesystems::DeletedAt, true))
                    .to_owned(),
            )
            .await?;
        index(
            manager,
            "filesystems_tenant",
            Filesystems::Table,
            vec![Filesystems::TenantId.into_iden(), Filesystems::Id.into_iden()],
        )
        .await?;
        index(manager, "filesystems_network", Filesystems::Table, vec![Filesystems::NetworkId.into_iden()]).await?;
        manager
            .get_connection()
            .execute_unprepared(
                "CREATE UNIQUE INDEX filesystems_live_name ON filesystems (network_id, name) WHERE state <> 'deleted'",
            )
            .await?;
        manager
            .create_table(
                Table::create()
                    .table(InstanceFilesystems::Table)
                    .col(string(InstanceFilesystems::InstanceId, 64))
                    .col(string(InstanceFilesystems::FilesystemId, 64))
                    .col(string(InstanceFilesystems::Path, 256))
                    .col(ColumnDef::new(InstanceFilesystems::Position).integer().not_null())
                    .primary_key(
                        Index::create().col(InstanceFilesystems::InstanceId).col(InstanceFilesystems::FilesystemId),
                    )
                    .to_owned(),
            )
            .await?;
        index(
            manager,
            "instance_filesystems_filesystem",
            InstanceFilesystems::Table,
            vec![InstanceFilesystems::FilesystemId.into_iden()],
        )
        .await
    }
}
