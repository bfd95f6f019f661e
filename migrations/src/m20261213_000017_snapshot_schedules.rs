//! Snapshot schedules: a volume's (or every volume of a project's) snapshots taken every N hours
//! or daily at a UTC time, kept by count and/or age. A snapshot a schedule took names it
//! (`provider_snapshots.schedule_id`), so retention deletes only its own unless told otherwise.
use sea_orm_migration::prelude::*;

use crate::columns::{big, flag, index, optional, string, time};

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum ProviderSnapshots {
    Table,
    ScheduleId,
}

#[derive(DeriveIden)]
enum SnapshotSchedules {
    Table,
    Id,
    TenantId,
    ProjectId,
    VolumeId,
    Name,
    EveryHours,
    DailyAtMinute,
    KeepLast,
    MaxAgeHours,
    PruneManual,
    State,
    NextRunAt,
    LastSlotAt,
    LastRunAt,
    LastOutcome,
    LastError,
    Version,
    CreatedAt,
    UpdatedAt,
    DeletedAt,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        let add = Table::alter()
            .table(ProviderSnapshots::Table)
            .add_column(optional(ProviderSnapshots::ScheduleId, 64))
            .to_owned();
        manager.alter_table(add).await?;
        let int = |col: SnapshotSchedules| ColumnDef::new(col).integer().null().to_owned();
        manager
            .create_table(
                Table::create()
                    .table(SnapshotSchedules::Table)
                    .col(string(SnapshotSchedules::Id, 64).primary_key())
                    .col(string(SnapshotSchedules::TenantId, 128))
                    .col(optional(SnapshotSchedules::ProjectId, 64))
                    .col(optional(SnapshotSchedules::VolumeId, 64))
                    .col(string(SnapshotSchedules::Name, 64))
                    .col(int(SnapshotSchedules::EveryHours))
                    .col(int(SnapshotSchedules::DailyAtMinute))
                    .col(int(SnapshotSchedules::KeepLast))
                    .col(int(SnapshotSchedules::MaxAgeHours))
                    .col(flag(SnapshotSchedules::PruneManual))
                    .col(string(SnapshotSchedules::State, 16))
                    .col(time(SnapshotSchedules::NextRunAt, false))
                    .col(time(SnapshotSchedules::LastSlotAt, true))
                    .col(time(SnapshotSchedules::LastRunAt, true))
                    .col(ColumnDef::new(SnapshotSchedules::LastOutcome).text().null())
                    .col(ColumnDef::new(SnapshotSchedules::LastError).text().null())
                    .col(big(SnapshotSchedules::Version, 1))
                    .col(time(SnapshotSchedules::CreatedAt, false))
                    .col(time(SnapshotSchedules::UpdatedAt, false))
                    .col(time(SnapshotSchedules::DeletedAt, true))
                    .to_owned(),
            )
            .await?;
        index(
            manager,
            "snapshot_schedules_tenant",
            SnapshotSchedules::Table,
            vec![SnapshotSchedules::TenantId.into_iden(), SnapshotSchedules::Id.into_iden()],
        )
        .await?;
        index(
            manager,
            "provider_snapshots_schedule",
            ProviderSnapshots::Table,
            vec![ProviderSnapshots::ScheduleId.into_iden()],
        )
        .await?;
        // A name is its snapshots' prefix: two active schedules of a tenant never share one.
        manager
            .get_connection()
            .execute_unprepared(
                "CREATE UNIQUE INDEX snapshot_schedules_live_name ON snapshot_schedules (tenant_id, name) \
                 WHERE state = 'active'",
            )
            .await?;
        crate::m20261204_000008_bytewise_ids::ids_bytewise(manager).await
    }
}
