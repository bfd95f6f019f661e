//! The GraphQL surface: types, inputs, enums and the schema. Resolvers are thin: take the
//! caller, call one service method, wrap the result. One module per resource group.
mod addresses;
pub mod documents;
pub mod error;
mod events;
mod filesystems;
mod firewall_rules;
mod instances;
mod limits;
pub mod loaders;
mod measure;
mod networks;
mod nodes;
mod pages;
pub mod plans;
mod pools;
mod reads;
pub(crate) mod render;
pub mod resume;
mod schedules;
pub mod shared;
mod snapshots;
mod tenants;
mod tokens;
mod usage;
mod volumes;

use std::sync::Arc;

use async_graphql::{Context, MergedObject, MergedSubscription, Schema};

use crate::authz::Actor;
use crate::error::{Code, Error};
use crate::provider::Providers;
use crate::services::Services;
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
    firewall_rules::FirewallRuleQuery,
    usage::UsageQuery,
    schedules::ScheduleQuery,
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
    schedules::ScheduleMutation,
    addresses::AddressMutation,
    filesystems::FilesystemMutation,
    firewall_rules::FirewallRuleMutation,
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
    firewall_rules::FirewallRuleSubscription,
);

/// The schema twice, over the same types and data. `checked` carries the limits (an extension):
/// it serves WebSocket subscriptions, and checks each HTTP request (parse, limits, validation)
/// without executing it; `fast` executes what passed, with no extension. Any extension sends
/// every field through async-graphql's extension path (a registry lookup, boxed futures, a
/// type name formatted per list item), which cost a list page more than its SQL did.
#[derive(Clone)]
pub struct Schemas {
    checked: AppSchema,
    fast: AppSchema,
    limits: Limits,
    /// The WebSocket subscriptions, on `checked`, shared by the subscribers that ask the same.
    shared: Arc<shared::Shared>,
    /// Parsed documents by their text, for the HTTP requests.
    pub documents: Arc<documents::Documents>,
}

impl Schemas {
    /// Measures `request` against the limits before async-graphql sees it (`Limits::admit`).
    /// Every request passes here first, on every transport. A long text is parsed and measured
    /// on the blocking pool: that is milliseconds of CPU an async worker (and with it `/healthz`
    /// and every socket it serves) must not be held for.
    pub async fn admit(
        &self,
        request: async_graphql::Request,
    ) -> (async_graphql::Request, Result<measure::Measure, async_graphql::ServerError>) {
        self.offloaded(request, |schemas, request| schemas.limits.admit(&schemas.documents, request)).await
    }

    /// Gives `request` its parsed document (`Documents::parse`), on the blocking pool when long.
    pub async fn parse(
        &self,
        request: async_graphql::Request,
    ) -> (async_graphql::Request, Result<(), async_graphql::ServerError>) {
        self.offloaded(request, |schemas, request| schemas.documents.parse(request).map(|_| ())).await
    }

    /// Runs `work` on `request`, on the blocking pool when its text is long.
    async fn offloaded<T: Send + 'static>(
        &self,
        mut request: async_graphql::Request,
        work: fn(&Schemas, &mut async_graphql::Request) -> Result<T, async_graphql::ServerError>,
    ) -> (async_graphql::Request, Result<T, async_graphql::ServerError>) {
        if request.query.len() < OFFLOAD_BYTES {
            let done = work(self, &mut request);
            return (request, done);
        }
        let schemas = self.clone();
        let offloaded = tokio::task::spawn_blocking(move || {
            let done = work(&schemas, &mut request);
            (request, done)
        });
        match offloaded.await {
            Ok(done) => done,
            Err(err) => {
                let failed = error::server_error(Error::internal(format!("a document's check did not finish: {err}")));
                (async_graphql::Request::new(""), Err(failed))
            }
        }
    }

    pub async fn execute(&self, request: async_graphql::Request) -> async_graphql::Response {
        self.execute_within(request, self.limits.complexity).await.0
    }

    /// Executes `request` if it is admitted and its complexity fits `complexity_left`; the
    /// response, and the complexity it spent.
    async fn execute_within(
        &self,
        request: async_graphql::Request,
        complexity_left: usize,
    ) -> (async_graphql::Response, usize) {
        let (mut request, measured) = self.admit(request).await;
        let measured = match measured {
            Ok(measured) => measured,
            Err(refused) => return (limits::with_codes(async_graphql::Response::from_errors(vec![refused])), 0),
        };
        let mut check = async_graphql::Request::new(request.query.clone())
            .variables(request.variables.clone())
            .data(limits::CheckOnly { complexity_left })
            .data(measured);
        check.operation_name = request.operation_name.clone();
        if let Ok(document) = request.parsed_query() {
            check.set_parsed_query(document.clone());
        }
        let checked = self.checked.execute(check).await;
        let Some(spent) = limits::passed(&checked) else { return (checked, 0) };
        let plans = plans::Plans::default();
        let mut response = self.fast.execute(request.data(plans.clone())).await;
        if let Some(plan) = plans.extension() {
            response.extensions.insert("plan".to_owned(), plan);
        }
        (limits::with_codes(response), spent)
    }

    /// Each request of a batch in turn, as async-graphql does; the batch is one request, whose
    /// operations share one complexity (past it, each one more is LIMIT_EXCEEDED).
    pub async fn execute_batch(&self, batch: async_graphql::BatchRequest) -> async_graphql::BatchResponse {
        match batch {
            async_graphql::BatchRequest::Single(request) => {
                async_graphql::BatchResponse::Single(self.execute(request).await)
            }
            async_graphql::BatchRequest::Batch(requests) => {
                let mut responses = Vec::with_capacity(requests.len());
                let mut left = self.limits.complexity;
                for request in requests {
                    let (response, spent) = self.execute_within(request, left).await;
                    left = left.saturating_sub(spent);
                    responses.push(response);
                }
                async_graphql::BatchResponse::Batch(responses)
            }
        }
    }

    /// The answers of `request` of `caller` as one stream, once admitted: a subscription's
    /// events as they come (resumed after `resume`'s cursor, marking each), for GraphQL over SSE.
    pub async fn stream(
        &self,
        request: async_graphql::Request,
        caller: &Caller,
        resume: resume::Resume,
    ) -> Result<futures_util::stream::BoxStream<'static, async_graphql::Response>, async_graphql::ServerError> {
        use futures_util::StreamExt;
        let (request, measured) = self.admit(request).await;
        let request = request.data(measured?).data(caller.clone()).data(resume);
        Ok(self.checked.execute_stream(request).map(limits::with_codes).boxed())
    }

    /// Answers `request` of `caller` as subscription `id` on `link`, once admitted. `place`
    /// (among the requests in flight) is held until a query or mutation is answered.
    pub async fn subscribe(
        &self,
        request: async_graphql::Request,
        caller: &Caller,
        id: &str,
        link: shared::Link,
        place: tokio::sync::OwnedSemaphorePermit,
    ) -> Result<shared::Membership, async_graphql::ServerError> {
        let (request, measured) = self.admit(request).await;
        let measured = measured?;
        let once = shared::Once { deadline: self.limits.deadline, place };
        Ok(self.shared.subscribe(request.data(measured), caller, id, link, once))
    }
}

/// A document's text from which its parse and measure leave the async workers.
const OFFLOAD_BYTES: usize = 8 * 1024;

pub fn build(services: Services, providers: Arc<Providers>, limits: Limits) -> Schemas {
    let schema = || {
        Schema::build(Query::default(), Mutation::default(), Subscription::default())
            .data(services.clone())
            .data(providers.clone())
    };
    let checked = schema().extension(limits);
    // What `checked` validated is only measured again (complexity, depth), not re-validated;
    // with bounds of its own past anything an admitted request reaches, a floor should a
    // measure ever be wrong.
    let (complexity, depth) = limits.executing_bounds();
    let fast =
        schema().validation_mode(async_graphql::ValidationMode::Fast).limit_complexity(complexity).limit_depth(depth);
    let metrics = services.metrics.clone();
    let (checked, fast) = if limits.introspection {
        (checked.finish(), fast.finish())
    } else {
        (checked.disable_introspection().finish(), fast.disable_introspection().finish())
    };
    let documents = Arc::default();
    Schemas { shared: shared::Shared::new(checked.clone(), metrics), checked, fast, limits, documents }
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

/// The provider clients (the accounts' request budgets live in them).
pub(crate) fn providers<'a>(ctx: &Context<'a>) -> &'a Providers {
    ctx.data_unchecked::<Arc<Providers>>()
}

/// What a `…Changed` subscription yields: each event of `filter` (from now on), its data read
/// back as the view `V` it was written from, made the GraphQL type by `to`.
pub(crate) async fn changes<V, T>(
    ctx: &Context<'_>,
    feed: &crate::feed::Feed,
    filter: crate::feed::Filter,
    to: fn(V) -> T,
) -> async_graphql::Result<impl futures_util::Stream<Item = async_graphql::Result<T>> + Send + 'static + use<V, T>>
where
    V: serde::de::DeserializeOwned + 'static,
    T: Send + 'static,
{
    use futures_util::StreamExt;
    // Live from now, or, for a stream resumed over SSE, after the last event its client saw.
    let resume = ctx.data_opt::<resume::Resume>().cloned();
    let after = match resume.as_ref().and_then(|r| r.start()) {
        Some(cursor) => {
            let after = feed.parse_cursor(cursor)?;
            feed.check_retained(after).await?;
            Some(after)
        }
        None => None,
    };
    let cursors = feed.clone();
    Ok(feed.subscribe(filter, after).map(move |item| {
        let event = item?;
        if let Some(resume) = &resume {
            resume.mark(&cursors.cursor(event.position));
        }
        let view: V =
            serde_json::from_value(event.data.clone()).map_err(|e| async_graphql::Error::new(e.to_string()))?;
        Ok(to(view))
    }))
}
