//! Usage windows: one row per resource, meter and closed UTC hour, written by the
//! `vps.ancillary-usage` pass. The unique key (resource_id, meter, window_start) is what makes a
//! rerun, a crashed pass or two replicas at once write each window once. Also the indexes the
//! pass reads the billable resources through: those ready, by deleted_at then id.
use sea_orm_migration::prelude::*;

use crate::columns::{index, optional, string, time};

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum UsageWindows {
    Table,
    Id,
    TenantId,
    ProjectId,
    PoolId,
    SourceKind,
    ResourceId,
    Meter,
    WindowStart,
    WindowEnd,
    Quantity,
    CreatedAt,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_table(
                Table::create()
                    .table(UsageWindows::Table)
                    .col(string(UsageWindows::Id, 64).primary_key())
                    .col(string(UsageWindows::TenantId, 128))
                    .col(optional(UsageWindows::ProjectId, 64))
                    .col(string(UsageWindows::PoolId, 64))
                    .col(string(UsageWindows::SourceKind, 16))
                    .col(string(UsageWindows::ResourceId, 64))
                    .col(string(UsageWindows::Meter, 64))
                    .col(time(UsageWindows::WindowStart, false))
                    .col(time(UsageWindows::WindowEnd, false))
                    .col(ColumnDef::new(UsageWindows::Quantity).double().not_null())
                    .col(time(UsageWindows::CreatedAt, false))
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("usage_windows_once")
                    .table(UsageWindows::Table)
                    .unique()
                    .col(UsageWindows::ResourceId)
                    .col(UsageWindows::Meter)
                    .col(UsageWindows::WindowStart)
                    .to_owned(),
            )
            .await?;
        // The `usage` query: a tenant's windows on a pool over a range of hours.
        index(
            manager,
            "usage_windows_tenant_pool",
            UsageWindows::Table,
            vec![
                UsageWindows::TenantId.into_iden(),
                UsageWindows::PoolId.into_iden(),
                UsageWindows::WindowStart.into_iden(),
            ],
        )
        .await?;
        // The pass reads the resources that became ready and are live (deleted_at null) or were
        // deleted lately (deleted_at past its horizon), each page in id order.
        let db = manager.get_connection();
        for table in ["provider_volumes", "provider_snapshots", "provider_addresses"] {
            db.execute_unprepared(&format!(
                "CREATE INDEX {table}_billable ON {table} (deleted_at, id) WHERE ready_at IS NOT NULL"
            ))
            .await?;
        }
        Ok(())
    }
}
