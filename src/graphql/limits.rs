//! Query limits with clear errors (`extensions.code = LIMIT_EXCEEDED`, details naming the limit):
//! aliases counted on the parsed document, depth and complexity taken from validation. It also
//! gives GraphQL's own parse and validation errors a code (INVALID_INPUT), so every error has one.
use std::sync::Arc;

use async_graphql::Response;
use async_graphql::extensions::{
    Extension, ExtensionContext, ExtensionFactory, NextParseQuery, NextRequest, NextSubscribe, NextValidation,
};
use async_graphql::futures_util::stream::{BoxStream, StreamExt};
use async_graphql::parser::types::{ExecutableDocument, Selection, SelectionSet};
use async_graphql::{ServerError, ServerResult, ValidationResult, Variables};
use serde_json::json;

use super::error::server_error;
use crate::error::{Code, Error};

#[derive(Clone, Copy, Debug)]
pub struct Limits {
    pub depth: usize,
    pub complexity: usize,
    pub aliases: usize,
}

impl ExtensionFactory for Limits {
    fn create(&self) -> Arc<dyn Extension> {
        Arc::new(*self)
    }
}

fn exceeded(limit: &str, value: usize, max: usize) -> ServerError {
    server_error(
        Error::new(Code::LimitExceeded, format!("the query's {limit} is {value}, more than the limit of {max}"))
            .with_details(json!({ "limit": limit, "value": value, "max": max })),
    )
}

fn with_codes(mut response: Response) -> Response {
    for error in &mut response.errors {
        let extensions = error.extensions.get_or_insert_with(Default::default);
        if extensions.get("code").is_none() {
            extensions.set("code", Code::InvalidInput.as_str());
        }
    }
    response
}

#[async_graphql::async_trait::async_trait]
impl Extension for Limits {
    async fn request(&self, ctx: &ExtensionContext<'_>, next: NextRequest<'_>) -> Response {
        with_codes(next.run(ctx).await)
    }

    fn subscribe<'s>(
        &self,
        ctx: &ExtensionContext<'_>,
        stream: BoxStream<'s, Response>,
        next: NextSubscribe<'_>,
    ) -> BoxStream<'s, Response> {
        next.run(ctx, stream).map(with_codes).boxed()
    }

    async fn parse_query(
        &self,
        ctx: &ExtensionContext<'_>,
        query: &str,
        variables: &Variables,
        next: NextParseQuery<'_>,
    ) -> ServerResult<ExecutableDocument> {
        let document = next.run(ctx, query, variables).await?;
        let aliases = count_aliases(&document);
        if aliases > self.aliases {
            return Err(exceeded("aliases", aliases, self.aliases));
        }
        Ok(document)
    }

    async fn validation(
        &self,
        ctx: &ExtensionContext<'_>,
        next: NextValidation<'_>,
    ) -> Result<ValidationResult, Vec<ServerError>> {
        let result = next.run(ctx).await?;
        if result.depth > self.depth {
            return Err(vec![exceeded("depth", result.depth, self.depth)]);
        }
        if result.complexity > self.complexity {
            return Err(vec![exceeded("complexity", result.complexity, self.complexity)]);
        }
        Ok(result)
    }
}

fn count_aliases(document: &ExecutableDocument) -> usize {
    let operations = document.operations.iter().map(|(_, op)| count_in(&op.node.selection_set.node)).sum::<usize>();
    let fragments = document.fragments.values().map(|f| count_in(&f.node.selection_set.node)).sum::<usize>();
    operations + fragments
}

fn count_in(set: &SelectionSet) -> usize {
    set.items
        .iter()
        .map(|item| match &item.node {
            Selection::Field(field) => {
                usize::from(field.node.alias.is_some()) + count_in(&field.node.selection_set.node)
            }
            Selection::InlineFragment(fragment) => count_in(&fragment.node.selection_set.node),
            Selection::FragmentSpread(_) => 0,
        })
        .sum()
}
