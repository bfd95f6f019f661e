//! The feed is read from a moment (`events(since:)`): the first event stamped at or after it is
//! found by its time.
use sea_orm_migration::prelude::*;

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum OutboxEvents {
    Table,
    Time,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        let index =
            Index::create().name("outbox_events_time").table(OutboxEvents::Table).col(OutboxEvents::Time).to_owned();
        manager.create_index(index).await
    }
}
