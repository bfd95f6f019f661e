//! The one shape of every list: `{Node}Connection` with its `{Node}Edge`s and a `PageInfo`.
use std::borrow::Cow;

use async_graphql::parser::types::Field;
use async_graphql::{OutputType, SimpleObject, TypeName};

use super::render::{Planner, Render, Rendered, Step, text};
use crate::service::rows::Page;

/// Where a page ends and whether another follows it.
#[derive(SimpleObject)]
pub struct PageInfo {
    /// Pass as `after` for the next page (the events' also to a subscription, to go on live
    /// from here); none for an empty page of a list.
    pub end_cursor: Option<String>,
    pub has_next_page: bool,
}

/// A node of a page and the cursor to read on after it.
// Its fields are read from memory: resolved one after another (`serial`).
#[derive(SimpleObject)]
#[graphql(name_type, serial)]
pub struct Edge<N: OutputType> {
    pub cursor: String,
    pub node: N,
}

impl<N: OutputType> TypeName for Edge<N> {
    fn type_name() -> Cow<'static, str> {
        format!("{}Edge", N::type_name()).into()
    }
}

impl<N: Render> Render for Edge<N> {
    fn step(field: &Field, planner: &Planner<'_>) -> Option<Step<Self>> {
        match field.name.node.as_str() {
            "cursor" => text(|edge: &Edge<N>| &edge.cursor),
            "node" => planner.object(field, |edge: &Edge<N>| Some(Some(&edge.node))),
            _ => None,
        }
    }
}

/// A page of a list.
// Its edges are rendered from memory where their selection allows (`render`).
#[derive(SimpleObject)]
#[graphql(name_type)]
pub struct Connection<N: Render> {
    pub edges: Rendered<Edge<N>>,
    pub page_info: PageInfo,
}

impl<N: Render> TypeName for Connection<N> {
    fn type_name() -> Cow<'static, str> {
        format!("{}Connection", N::type_name()).into()
    }
}

impl<N: Render> Connection<N> {
    pub fn new(edges: Vec<Edge<N>>, end_cursor: Option<String>, has_next_page: bool) -> Self {
        Connection { edges: Rendered(edges), page_info: PageInfo { end_cursor, has_next_page } }
    }

    /// The connection of a page of views, each edge's cursor its node's id.
    pub fn of<V>(page: Page<V>, id: impl Fn(&V) -> &str, mut node: impl FnMut(V) -> N) -> Self {
        let edges =
            page.items.into_iter().map(|view| Edge { cursor: id(&view).to_owned(), node: node(view) }).collect();
        Connection::new(edges, page.end_cursor, page.has_next_page)
    }
}
