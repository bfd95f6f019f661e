//! The GraphQL surface: types, inputs, enums and the schema. Resolvers are thin: take the
//! caller, call one service method, wrap the result. One module per resource group.
mod addresses;
pub mod error;
mod events;
mod filesystems;
mod instances;
mod limits;
pub mod loaders;
mod networks;
mod nodes;
mod pools;
mod snapshots;
mod tenants;
mod tokens;
mod usage;
mod volumes;

use async_graphql::{Context, MergedObject, MergedSubscription, Schema};

use crate::error::{Code, Error};
use crate::service::Services;
use crate::service::authz::Actor;
pub use limits::Limits;

pub type AppSchema = Schema<Query, Mutation, Subscription>;

#[derive(MergedObject, Default)]
pub struct Query(
    tokens::TokenQuery,
    tenants::TenantQuery,
    pools::PoolQuery,
    networks::NetworkQuery,
    instances::InstanceQuery,
    volumes::VolumeQuery,
    snapshots::SnapshotQuery,
    addresses::AddressQuery,
    filesystems::FilesystemQuery,
    usage::UsageQuery,
    events::EventQuery,
    nodes::NodeQuery,
);

#[derive(MergedObject, Default)]
pub struct Mutation(
    tenants::TenantMutation,
    pools::PoolMutation,
    tokens::TokenMutation,
    networks::NetworkMutation,
    instances::InstanceMutation,
    volumes::VolumeMutation,
    snapshots::SnapshotMutation,
    addresses::AddressMutation,
    filesystems::FilesystemMutation,
);

#[derive(MergedSubscription, Default)]
pub struct Subscription(
    events::EventSubscription,
    networks::NetworkSubscription,
    instances::InstanceSubscription,
    volumes::VolumeSubscription,
    snapshots::SnapshotSubscription,
    addresses::AddressSubscription,
    filesystems::FilesystemSubscription,
);

pub fn build(services: Services, limits: Limits) -> AppSchema {
    let builder =
        Schema::build(Query::default(), Mutation::default(), Subscription::default()).data(services).extension(limits);
    if limits.introspection { builder.finish() } else { builder.disable_introspection().finish() }
}

/// The schema's SDL, as `vps-graph schema` prints it and `schema.graphql` holds it.
pub fn sdl() -> String {
    Schema::build(Query::default(), Mutation::default(), Subscription::default()).finish().sdl()
}

/// Who sent a request, as the HTTP layer found it.
#[derive(Clone, Debug)]
pub enum Caller {
    Anonymous,
    Authenticated(Actor),
    Rejected(Error),
}

pub(crate) fn actor<'a>(ctx: &Context<'a>) -> Result<&'a Actor, Error> {
    match ctx.data_opt::<Caller>() {
        Some(Caller::Authenticated(actor)) => Ok(actor),
        Some(Caller::Rejected(err)) => Err(err.clone()),
        _ => Err(Error::new(Code::Unauthenticated, "send Authorization: Bearer <token>")),
    }
}

pub(crate) fn services<'a>(ctx: &Context<'a>) -> &'a Services {
    ctx.data_unchecked::<Services>()
}
