//! The feed is read from a moment (`events(since:)`): the first event stamped at or after it is
//! found by its time, among a tenant's events for a tenant.
use sea_orm_migration::prelude::*;

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum OutboxEvents {
    Table,
    TenantId,
    Time,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        let all =
            Index::create().name("outbox_events_time").table(OutboxEvents::Table).col(OutboxEvents::Time).to_owned();
        manager.create_index(all).await?;
        // A tenant's `since` is sought in its own events.
        let tenant = Index::create()
            .name("outbox_events_tenant_time")
            .table(OutboxEvents::Table)
            .col(OutboxEvents::TenantId)
            .col(OutboxEvents::Time)
            .to_owned();
        manager.create_index(tenant).await
    }
}
