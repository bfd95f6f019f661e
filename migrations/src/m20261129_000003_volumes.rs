//! Instances (as far as volumes need them), provider volumes (block and shared), their
//! attachments, and provider snapshots.
use sea_orm_migration::prelude::*;

use crate::columns::{big, flag, index, optional, string, time};

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum Instances {
    Table,
    Id,
    TenantId,
    ProjectId,
    PoolId,
    ProviderAccountId,
    NetworkId,
    Name,
    Region,
    Size,
    Image,
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

#[derive(DeriveIden)]
enum ProviderVolumes {
    Table,
    Id,
    TenantId,
    ProjectId,
    PoolId,
    ProviderAccountId,
    Name,
    Description,
    Region,
    Kind,
    NetworkId,
    Filesystem,
    DeleteWithInstance,
    SourceSnapshotId,
    SizeGib,
    ObservedSizeGib,
    State,
    DesiredState,
    ProviderId,
    ProviderName,
    Device,
    MountSource,
    CreateAttempts,
    Lost,
    ActionId,
    Message,
    Version,
    CreatedAt,
    UpdatedAt,
    ReadyAt,
    DeletedAt,
}

#[derive(DeriveIden)]
enum VolumeAttachments {
    Table,
    Id,
    VolumeId,
    InstanceId,
    State,
    DesiredState,
    ActionId,
    Message,
    Version,
    CreatedAt,
    UpdatedAt,
    ReadyAt,
    DeletedAt,
}

#[derive(DeriveIden)]
enum ProviderSnapshots {
    Table,
    Id,
    TenantId,
    ProjectId,
    PoolId,
    ProviderAccountId,
    VolumeId,
    VolumeKind,
    Region,
    Name,
    State,
    DesiredState,
    ProviderId,
    ProviderName,
    SizeGib,
    MinDiskSize,
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
                    .table(Instances::Table)
                    .col(string(Instances::Id, 64).primary_key())
                    .col(string(Instances::TenantId, 128))
                    .col(optional(Instances::ProjectId, 64))
                    .col(string(Instances::PoolId, 64))
                    .col(string(Instances::ProviderAccountId, 64))
                    .col(optional(Instances::NetworkId, 64))
                    .col(string(Instances::Name, 64))
                    .col(string(Instances::Region, 40))
                    .col(string(Instances::Size, 64))
                    .col(string(Instances::Image, 128))
                    .col(string(Instances::State, 16))
                    .col(string(Instances::DesiredState, 16))
                    .col(optional(Instances::ProviderId, 128))
                    .col(string(Instances::ProviderName, 128))
                    .col(ColumnDef::new(Instances::CreateAttempts).integer().not_null().default(0))
                    .col(flag(Instances::Lost))
                    .col(ColumnDef::new(Instances::Message).text().null())
                    .col(big(Instances::Version, 1))
                    .col(time(Instances::CreatedAt, false))
                    .col(time(Instances::UpdatedAt, false))
                    .col(time(Instances::ReadyAt, true))
                    .col(time(Instances::DeletedAt, true))
                    .to_owned(),
            )
            .await?;
        index(
            manager,
            "instances_tenant",
            Instances::Table,
            vec![Instances::TenantId.into_iden(), Instances::Id.into_iden()],
        )
        .await?;
        let db = manager.get_connection();
        db.execute_unprepared(
            "CREATE UNIQUE INDEX instances_live_name ON instances (tenant_id, name) WHERE state <> 'deleted'",
        )
        .await?;
        manager
            .create_table(
                Table::create()
                    .table(ProviderVolumes::Table)
                    .col(string(ProviderVolumes::Id, 64).primary_key())
                    .col(string(ProviderVolumes::TenantId, 128))
                    .col(optional(ProviderVolumes::ProjectId, 64))
                    .col(string(ProviderVolumes::PoolId, 64))
                    .col(string(ProviderVolumes::ProviderAccountId, 64))
                    .col(string(ProviderVolumes::Name, 64))
                    .col(optional(ProviderVolumes::Description, 256))
                    .col(string(ProviderVolumes::Region, 40))
                    .col(string(ProviderVolumes::Kind, 16))
                    .col(optional(ProviderVolumes::NetworkId, 64))
                    .col(optional(ProviderVolumes::Filesystem, 16))
                    .col(flag(ProviderVolumes::DeleteWithInstance))
                    .col(optional(ProviderVolumes::SourceSnapshotId, 64))
                    .col(big(ProviderVolumes::SizeGib, 0))
                    .col(ColumnDef::new(ProviderVolumes::ObservedSizeGib).big_integer().null())
                    .col(string(ProviderVolumes::State, 16))
                    .col(string(ProviderVolumes::DesiredState, 16))
                    .col(optional(ProviderVolumes::ProviderId, 128))
                    .col(string(ProviderVolumes::ProviderName, 128))
                    .col(optional(ProviderVolumes::Device, 512))
                    .col(optional(ProviderVolumes::MountSource, 512))
                    .col(ColumnDef::new(ProviderVolumes::CreateAttempts).integer().not_null().default(0))
                    .col(flag(ProviderVolumes::Lost))
                    .col(optional(ProviderVolumes::ActionId, 128))
                    .col(ColumnDef::new(ProviderVolumes::Message).text().null())
                    .col(big(ProviderVolumes::Version, 1))
                    .col(time(ProviderVolumes::CreatedAt, false))
                    .col(time(ProviderVolumes::UpdatedAt, false))
                    .col(time(ProviderVolumes::ReadyAt, true))
                    .col(time(ProviderVolumes::DeletedAt, true))
                    .to_owned(),
            )
            .await?;
        index(
            manager,
            "provider_volumes_tenant",
            ProviderVolumes::Table,
            vec![ProviderVolumes::TenantId.into_iden(), ProviderVolumes::Id.into_iden()],
        )
        .await?;
        index(
            manager,
            "provider_volumes_network",
            ProviderVolumes::Table,
            vec![ProviderVolumes::NetworkId.into_iden()],
        )
        .await?;
        db.execute_unprepared(
            "CREATE UNIQUE INDEX provider_volumes_live_name ON provider_volumes (tenant_id, name) WHERE state <> 'deleted'",
        )
        .await?;
        manager
            .create_table(
                Table::create()
                    .table(VolumeAttachments::Table)
                    .col(string(VolumeAttachments::Id, 64).primary_key())
                    .col(string(VolumeAttachments::VolumeId, 64))
                    .col(string(VolumeAttachments::InstanceId, 64))
                    .col(string(VolumeAttachments::State, 16))
                    .col(string(VolumeAttachments::DesiredState, 16))
                    .col(optional(VolumeAttachments::ActionId, 128))
                    .col(ColumnDef::new(VolumeAttachments::Message).text().null())
                    .col(big(VolumeAttachments::Version, 1))
                    .col(time(VolumeAttachments::CreatedAt, false))
                    .col(time(VolumeAttachments::UpdatedAt, false))
                    .col(time(VolumeAttachments::ReadyAt, true))
                    .col(time(VolumeAttachments::DeletedAt, true))
                    .foreign_key(
                        ForeignKey::create()
                            .from(VolumeAttachments::Table, VolumeAttachments::VolumeId)
                            .to(ProviderVolumes::Table, ProviderVolumes::Id)
                            .on_delete(ForeignKeyAction::Restrict),
                    )
                    .foreign_key(
                        ForeignKey::create()
                            .from(VolumeAttachments::Table, VolumeAttachments::InstanceId)
                            .to(Instances::Table, Instances::Id)
                            .on_delete(ForeignKeyAction::Restrict),
                    )
                    .to_owned(),
            )
            .await?;
        index(
            manager,
            "volume_attachments_volume",
            VolumeAttachments::Table,
            vec![VolumeAttachments::VolumeId.into_iden()],
        )
        .await?;
        index(
            manager,
            "volume_attachments_instance",
            VolumeAttachments::Table,
            vec![VolumeAttachments::InstanceId.into_iden()],
        )
        .await?;
        // A volume is on an instance at most once at a time.
        db.execute_unprepared(
            "CREATE UNIQUE INDEX volume_attachments_live ON volume_attachments (volume_id, instance_id) WHERE state <> 'deleted'",
        )
        .await?;
        manager
            .create_table(
                Table::create()
                    .table(ProviderSnapshots::Table)
                    .col(string(ProviderSnapshots::Id, 64).primary_key())
                    .col(string(ProviderSnapshots::TenantId, 128))
                    .col(optional(ProviderSnapshots::ProjectId, 64))
                    .col(string(ProviderSnapshots::PoolId, 64))
                    .col(string(ProviderSnapshots::ProviderAccountId, 64))
                    .col(string(ProviderSnapshots::VolumeId, 64))
                    .col(string(ProviderSnapshots::VolumeKind, 16))
                    .col(string(ProviderSnapshots::Region, 40))
                    .col(string(ProviderSnapshots::Name, 64))
                    .col(string(ProviderSnapshots::State, 16))
                    .col(string(ProviderSnapshots::DesiredState, 16))
                    .col(optional(ProviderSnapshots::ProviderId, 128))
                    .col(string(ProviderSnapshots::ProviderName, 128))
                    .col(ColumnDef::new(ProviderSnapshots::SizeGib).double().null())
                    .col(big(ProviderSnapshots::MinDiskSize, 0))
                    .col(ColumnDef::new(ProviderSnapshots::CreateAttempts).integer().not_null().default(0))
                    .col(flag(ProviderSnapshots::Lost))
                    .col(ColumnDef::new(ProviderSnapshots::Message).text().null())
                    .col(big(ProviderSnapshots::Version, 1))
                    .col(time(ProviderSnapshots::CreatedAt, false))
                    .col(time(ProviderSnapshots::UpdatedAt, false))
                    .col(time(ProviderSnapshots::ReadyAt, true))
                    .col(time(ProviderSnapshots::DeletedAt, true))
                    .to_owned(),
            )
            .await?;
        index(
            manager,
            "provider_snapshots_tenant",
            ProviderSnapshots::Table,
            vec![ProviderSnapshots::TenantId.into_iden(), ProviderSnapshots::Id.into_iden()],
        )
        .await?;
        index(
            manager,
            "provider_snapshots_volume",
            ProviderSnapshots::Table,
            vec![ProviderSnapshots::VolumeId.into_iden()],
        )
        .await?;
        // A snapshot's name is unique among its volume's snapshots that are not deleted.
        db.execute_unprepared(
            "CREATE UNIQUE INDEX provider_snapshots_live_name ON provider_snapshots (volume_id, name) WHERE state <> 'deleted'",
        )
        .await?;
        Ok(())
    }
}
