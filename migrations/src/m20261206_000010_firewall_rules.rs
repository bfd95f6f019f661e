//! Firewall rules on tenant networks, and what a network keeps of the firewall (DigitalOcean) or
//! security group (AWS) that lets its ruled machines send anything while no outbound rule
//! applies to them (`egress_*`).
use sea_orm_migration::prelude::*;

use crate::columns::{big, flag, index, optional, string, time};

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum Networks {
    Table,
    EgressProviderId,
    EgressAttempts,
}

#[derive(DeriveIden)]
enum FirewallRules {
    Table,
    Id,
    TenantId,
    ProjectId,
    NetworkId,
    PoolId,
    ProviderAccountId,
    Name,
    Direction,
    Action,
    Protocol,
    FromPort,
    ToPort,
    Addresses,
    PeerInstanceIds,
    AppliesTo,
    State,
    DesiredState,
    Message,
    ProviderName,
    ProviderId,
    CreateAttempts,
    Lost,
    Version,
    Generation,
    CreatedAt,
    UpdatedAt,
    ReadyAt,
    DeletedAt,
}

fn json_list(col: FirewallRules) -> ColumnDef {
    ColumnDef::new(col).json_binary().not_null().default("[]").to_owned()
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        // One column a statement: SQLite alters a table one column at a time.
        let alter = |column: ColumnDef| Table::alter().table(Networks::Table).add_column(column).to_owned();
        manager.alter_table(alter(optional(Networks::EgressProviderId, 64))).await?;
        manager
            .alter_table(alter(ColumnDef::new(Networks::EgressAttempts).integer().not_null().default(0).to_owned()))
            .await?;
        manager
            .create_table(
                Table::create()
                    .table(FirewallRules::Table)
                    .col(string(FirewallRules::Id, 64).primary_key())
                    .col(string(FirewallRules::TenantId, 128))
                    .col(optional(FirewallRules::ProjectId, 64))
                    .col(string(FirewallRules::NetworkId, 64))
                    .col(string(FirewallRules::PoolId, 64))
                    .col(string(FirewallRules::ProviderAccountId, 64))
                    .col(string(FirewallRules::Name, 64))
                    .col(string(FirewallRules::Direction, 16))
                    .col(string(FirewallRules::Action, 16))
                    .col(string(FirewallRules::Protocol, 8))
                    .col(ColumnDef::new(FirewallRules::FromPort).integer().null())
                    .col(ColumnDef::new(FirewallRules::ToPort).integer().null())
                    .col(json_list(FirewallRules::Addresses))
                    .col(json_list(FirewallRules::PeerInstanceIds))
                    .col(json_list(FirewallRules::AppliesTo))
                    .col(string(FirewallRules::State, 16))
                    .col(string(FirewallRules::DesiredState, 16))
                    .col(ColumnDef::new(FirewallRules::Message).text().null())
                    .col(string(FirewallRules::ProviderName, 128))
                    .col(optional(FirewallRules::ProviderId, 64))
                    .col(ColumnDef::new(FirewallRules::CreateAttempts).integer().not_null().default(0))
                    .col(flag(FirewallRules::Lost))
                    .col(big(FirewallRules::Version, 1))
                    .col(big(FirewallRules::Generation, 1))
                    .col(time(FirewallRules::CreatedAt, false))
                    .col(time(FirewallRules::UpdatedAt, false))
                    .col(time(FirewallRules::ReadyAt, true))
                    .col(time(FirewallRules::DeletedAt, true))
                    .to_owned(),
            )
            .await?;
        index(
            manager,
            "firewall_rules_tenant",
            FirewallRules::Table,
            vec![FirewallRules::TenantId.into_iden(), FirewallRules::Id.into_iden()],
        )
        .await?;
        index(manager, "firewall_rules_network", FirewallRules::Table, vec![FirewallRules::NetworkId.into_iden()])
            .await?;
        manager
            .get_connection()
            .execute_unprepared(
                "CREATE UNIQUE INDEX firewall_rules_live_name ON firewall_rules (network_id, name) WHERE state <> 'deleted'",
            )
            .await?;
        // Its ids, and the network's egress id, compare bytewise as every id does.
        crate::m20261204_000008_bytewise_ids::ids_bytewise(manager).await
    }
}
