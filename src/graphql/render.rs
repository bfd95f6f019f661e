//! Lists rendered from memory. The executor resolves every field of every object on its own: a
//! boxed future, a context, a field-name match and a map lookup each. A page of 100 volumes with
//! their attachments, instances and snapshots is some 1,800 fields, and that machinery was the
//! larger part of the server's time on it. A list whose items hold everything their selection
//! shows plans that selection once (`Planner::plan`) and builds each item's value from the plan.
//!
//! Only plain selections are planned: fields without arguments or directives, fragments on the
//! type itself, each response key once. Anything else, or an item whose page did not read a child
//! along, goes to the executor for the whole list, so what a client sees never depends on which
//! path answered. The schema's one extension (`limits`) measures documents and resolves nothing,
//! so no per-field hook is skipped.
//!
//! A planned list is written straight to JSON, not built as a tree of values (an ordered map per
//! object, its keys hashed) to be serialized afterwards: that tree and its serialization were a
//! third of the instructions of a page. The JSON travels in the response as `Value::Binary`, which
//! no type of this schema outputs otherwise, and `response_json` writes it as it is; every
//! response that leaves the server is written by it.
use std::borrow::Cow;
use std::collections::HashMap;

use async_graphql::parser::types::{Field, FragmentDefinition, Selection, SelectionSet};
use async_graphql::registry::Registry;
use async_graphql::{ContextSelectionSet, Name, OutputType, Positioned, Response, ServerResult, Value};

use crate::views::fields::View;
use crate::views::json::{write_null, write_text};

/// How one field of `T` is written: its JSON value appended to the output; None when the item
/// does not hold it.
pub type Step<T> = Box<dyn Fn(&T, &mut Vec<u8>) -> Option<()> + Send + Sync>;

/// A type whose fields can be built from the item alone.
pub trait Render: OutputType + Sized + 'static {
    /// The step building `field`, None when it is not plain (it reads more than the item). A
    /// type that keeps the default is always resolved by the executor.
    fn step(_field: &Field, _planner: &Planner<'_>) -> Option<Step<Self>> {
        None
    }
}

/// A selection planned on `T`: its response keys, in order (each written once as `"key":`), and
/// how each value is written.
pub struct Plan<T> {
    fields: Vec<(Vec<u8>, Step<T>)>,
}

impl<T> Plan<T> {
    /// Writes `item` as the JSON object the selection asks for.
    pub fn write(&self, item: &T, out: &mut Vec<u8>) -> Option<()> {
        out.push(b'{');
        for (i, (key, step)) in self.fields.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            out.extend_from_slice(key);
            step(item, out)?;
        }
        out.push(b'}');
        Some(())
    }

    fn write_all<'i>(&self, items: impl IntoIterator<Item = &'i T>, out: &mut Vec<u8>) -> Option<()>
    where
        T: 'i,
    {
        out.push(b'[');
        for (i, item) in items.into_iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            self.write(item, out)?;
        }
        out.push(b']');
        Some(())
    }
}

/// Plans selections against the request's fragments.
pub struct Planner<'a> {
    fragments: &'a HashMap<Name, Positioned<FragmentDefinition>>,
}

impl Planner<'_> {
    /// The plan of `set` on `T`, None when it is not plain.
    pub fn plan<T: Render>(&self, set: &SelectionSet) -> Option<Plan<T>> {
        let type_name = T::type_name();
        let mut selected = Vec::new();
        self.collect(set, &type_name, &mut selected)?;
        // The executor answers an object whose every field was skipped with null, not `{}`.
        if selected.is_empty() {
            return None;
        }
        let mut keys: Vec<&Name> = Vec::with_capacity(selected.len());
        let mut fields: Vec<(Vec<u8>, Step<T>)> = Vec::with_capacity(selected.len());
        for field in selected {
            let key = &field.response_key().node;
            if !field.arguments.is_empty() || !field.directives.is_empty() {
                return None;
            }
            // Validation let the same key through only for the same field: a leaf once selected
            // is done; objects' selections would have to be merged, which is the executor's.
            if keys.contains(&key) {
                if field.selection_set.node.items.is_empty() {
                    continue;
                }
                return None;
            }
            let step = if field.name.node == "__typename" {
                let name = json(type_name.as_ref());
                Box::new(move |_: &T, out: &mut Vec<u8>| {
                    out.extend_from_slice(&name);
                    Some(())
                })
            } else {
                T::step(field, self)?
            };
            let mut written = json(key.as_str());
            written.push(b':');
            keys.push(key);
            fields.push((written, step));
        }
        Some(Plan { fields })
    }

    fn collect<'s>(&self, set: &'s SelectionSet, type_name: &str, out: &mut Vec<&'s Field>) -> Option<()>
    where
        Self: 's,
    {
        for selection in &set.items {
            if !selection.node.directives().is_empty() {
                return None;
            }
            let (condition, inner) = match &selection.node {
                Selection::Field(field) => {
                    out.push(&field.node);
                    continue;
                }
                Selection::FragmentSpread(spread) => {
                    let fragment = &self.fragments.get(&spread.node.fragment_name.node)?.node;
                    (Some(&fragment.type_condition), &fragment.selection_set)
                }
                Selection::InlineFragment(inline) => (inline.node.type_condition.as_ref(), &inline.node.selection_set),
            };
            if condition.is_some_and(|c| c.node.on.node != type_name) {
                return None;
            }
            self.collect(&inner.node, type_name, out)?;
        }
        Some(())
    }

    /// The step of an object field: `child` is None when the item does not hold it, Some(None)
    /// for null.
    pub fn object<T: 'static, C: Render + 'static>(
        &self,
        field: &Field,
        child: impl Fn(&T) -> Option<Option<&C>> + Send + Sync + 'static,
    ) -> Option<Step<T>> {
        let plan = self.plan::<C>(&field.selection_set.node)?;
        Some(Box::new(move |item, out| match child(item)? {
            Some(child) => plan.write(child, out),
            None => write_null(out),
        }))
    }

    /// The step of a list field: `children` is None when the item does not hold them.
    pub fn list<T: 'static, C: Render + 'static>(
        &self,
        field: &Field,
        children: impl Fn(&T) -> Option<&[C]> + Send + Sync + 'static,
    ) -> Option<Step<T>> {
        let plan = self.plan::<C>(&field.selection_set.node)?;
        Some(Box::new(move |item, out| plan.write_all(children(item)?, out)))
    }
}

/// `text` as a JSON string.
fn json(text: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(text.len() + 2);
    write_text(&mut out, text);
    out
}

/// A value as the executor would give it (a scalar or an enum), written as JSON.
fn write_value(out: &mut Vec<u8>, value: &Value) -> Option<()> {
    serde_json::to_writer(out, value).ok()
}

/// A string field, as the executor writes a `String`, `&str` or `ID`.
pub fn text<T: 'static>(get: fn(&T) -> &str) -> Option<Step<T>> {
    Some(Box::new(move |item, out| write_text(out, get(item))))
}

/// The step of a field the view `V` declares (`views::fields`), written from the view `view`
/// finds in the item.
pub fn view_field<T: 'static, V: View>(field: &Field, view: fn(&T) -> &V) -> Option<Step<T>> {
    let write = V::field(field.name.node.as_str())?.write;
    Some(Box::new(move |item, out| write(view(item), out)))
}

/// A list typed as `Vec<T>` in the schema, rendered from its plan when its selection is plain.
pub struct Rendered<T>(pub Vec<T>);

impl<T: Render> OutputType for Rendered<T> {
    fn type_name() -> Cow<'static, str> {
        <Vec<T> as OutputType>::type_name()
    }

    fn qualified_type_name() -> String {
        <Vec<T> as OutputType>::qualified_type_name()
    }

    fn create_type_info(registry: &mut Registry) -> String {
        <Vec<T> as OutputType>::create_type_info(registry)
    }

    async fn resolve(&self, ctx: &ContextSelectionSet<'_>, field: &Positioned<Field>) -> ServerResult<Value> {
        let planner = Planner { fragments: &ctx.query_env.fragments };
        if let Some(plan) = planner.plan::<T>(&ctx.item.node) {
            // Room for the edges a dashboard's page shows, so that it is rarely grown and copied.
            let mut out = Vec::with_capacity(512 * self.0.len() + 2);
            if plan.write_all(&self.0, &mut out).is_some() {
                return Ok(Value::Binary(out.into()));
            }
        }
        async_graphql::resolver_utils::resolve_list(ctx, field, &self.0, Some(self.0.len())).await
    }
}

/// A response as JSON, as async-graphql serializes it (`data`, then `extensions` and `errors`
/// when there are any), with the lists `Rendered` wrote put in as they are.
pub fn response_json(response: &Response) -> Vec<u8> {
    let mut out = Vec::with_capacity(written_len(&response.data) + 1024);
    write_response(&mut out, response);
    out
}

/// The bytes of the lists written in `value`: most of its JSON, so that the response is written
/// in a buffer sized once.
pub fn written_len(value: &Value) -> usize {
    match value {
        Value::Binary(written) => written.len(),
        Value::List(items) => items.iter().map(written_len).sum(),
        Value::Object(fields) => fields.values().map(written_len).sum(),
        _ => 0,
    }
}

pub fn write_response(out: &mut Vec<u8>, response: &Response) {
    out.extend_from_slice(b"{\"data\":");
    write_data(out, &response.data);
    if !response.extensions.is_empty() {
        out.extend_from_slice(b",\"extensions\":");
        let _ = serde_json::to_writer(&mut *out, &response.extensions);
    }
    if !response.errors.is_empty() {
        out.extend_from_slice(b",\"errors\":");
        let _ = serde_json::to_writer(&mut *out, &response.errors);
    }
    out.push(b'}');
}

fn write_data(out: &mut Vec<u8>, value: &Value) {
    match value {
        Value::Binary(written) => out.extend_from_slice(written),
        Value::List(items) => {
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_data(out, item);
            }
            out.push(b']');
        }
        Value::Object(fields) => {
            out.push(b'{');
            for (i, (key, item)) in fields.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_text(out, key);
                out.push(b':');
                write_data(out, item);
            }
            out.push(b'}');
        }
        other => {
            write_value(out, other);
        }
    }
}

#[cfg(test)]
mod tests {
    use async_graphql::Schema;
    use async_graphql::indexmap::IndexMap;
    use async_graphql::parser::parse_query;
    use async_graphql::parser::types::{DocumentOperations, ExecutableDocument};

    use super::super::pages::Edge;
    use super::super::snapshots::ProviderSnapshot;
    use super::super::volumes::ProviderVolume;
    use super::super::{Mutation, Query, Subscription};
    use super::*;

    /// Plans the (only) operation of `query` on `T`, with the document's fragments.
    fn plans<T: Render>(query: &str) -> bool {
        let document: ExecutableDocument = parse_query(query).unwrap();
        let DocumentOperations::Single(operation) = &document.operations else { panic!("one operation") };
        let planner = Planner { fragments: &document.fragments };
        planner.plan::<T>(&operation.node.selection_set.node).is_some()
    }

    /// A response with data, extensions and errors, `list` its data's `items`.
    fn response(list: Value) -> Response {
        let mut data = IndexMap::new();
        data.insert(Name::new("items"), list);
        data.insert(Name::new("label"), Value::String("a \"quoted\" é".into()));
        let mut response = Response::new(Value::Object(data)).extension("cost", Value::from(3));
        response.errors.push(async_graphql::ServerError::new("refused", None));
        response
    }

    #[test]
    fn a_response_is_written_as_serde_writes_it_with_rendered_lists_put_in_as_they_are() {
        let items = || Value::List(vec![Value::from(1), Value::Null, Value::Boolean(true)]);
        let expected = serde_json::to_string(&response(items())).unwrap();
        assert!(expected.contains(r#""extensions":{"cost":3}"#) && expected.contains(r#""errors":[{"#), "{expected}");
        assert_eq!(String::from_utf8(response_json(&response(items()))).unwrap(), expected);
        let written = Value::Binary(b"[1,null,true]".to_vec().into());
        assert_eq!(String::from_utf8(response_json(&response(written))).unwrap(), expected);
    }

    #[test]
    fn plain_fields_aliases_and_fragments_on_the_type_itself_are_planned() {
        assert!(plans::<ProviderSnapshot>("{ id name label: name __typename }"));
        assert!(plans::<ProviderSnapshot>(
            "{ id ... on ProviderSnapshot { state } ...More } fragment More on ProviderSnapshot { sizeGiB }"
        ));
        assert!(plans::<ProviderSnapshot>("{ id ... { state } }"));
        assert!(plans::<ProviderSnapshot>("{ id name ... on ProviderSnapshot { id } }"), "a leaf selected twice");
    }

    #[test]
    fn what_the_executor_must_answer_is_not_planned() {
        // A fragment on an interface, an object selected twice (merged by the executor), a field
        // unknown to the renderer, a directive the executor applies, and nothing selected.
        assert!(!plans::<ProviderSnapshot>("{ id ... on Node { id } }"));
        assert!(!plans::<Edge<ProviderVolume>>("{ node { id } node { state } }"));
        assert!(!plans::<ProviderSnapshot>("{ id nope }"));
        assert!(!plans::<ProviderSnapshot>("{ id name @custom }"));
        assert!(!plans::<ProviderSnapshot>("{ ... on ProviderSnapshot @custom { id } }"));
        assert!(!plans::<ProviderSnapshot>("{ ... { ... on ProviderVolume { id } } }"));
        assert!(!plans::<ProviderSnapshot>("{ ...Missing }"));
    }

    #[test]
    fn a_field_with_arguments_goes_to_the_executor() {
        assert!(plans::<Edge<ProviderVolume>>("{ node { mount { source type } } }"));
        assert!(!plans::<Edge<ProviderVolume>>("{ node { mount { mountLines(path: \"/mnt/a\") { fstab } } } }"));
    }

    /// A selection of every field of `type_name` that takes no argument, objects in full, from
    /// the schema's own introspection.
    fn every_field(types: &serde_json::Value, type_name: &str) -> String {
        let ty = types.as_array().unwrap().iter().find(|t| t["name"] == type_name).unwrap();
        let mut fields = Vec::new();
        for field in ty["fields"].as_array().unwrap() {
            if !field["args"].as_array().unwrap().is_empty() {
                continue;
            }
            let mut of = &field["type"];
            while of["name"].is_null() {
                of = &of["ofType"];
            }
            let name = field["name"].as_str().unwrap();
            match of["kind"].as_str().unwrap() {
                "OBJECT" => fields.push(format!("{name} {{ {} }}", every_field(types, of["name"].as_str().unwrap()))),
                _ => fields.push(name.to_owned()),
            }
        }
        fields.join(" ")
    }

    #[tokio::test]
    async fn every_field_of_a_page_of_volumes_without_arguments_is_rendered_from_memory_but_instance_filesystems() {
        let schema = Schema::build(Query::default(), Mutation::default(), Subscription::default()).finish();
        let query = "{ __schema { types { name fields { name args { name } type { kind name ofType { kind name ofType { kind name ofType { kind name } } } } } } } }";
        let found = schema.execute(query).await.data.into_json().unwrap();
        let types = &found["__schema"]["types"];
        let every = every_field(types, "ProviderVolumeEdge");
        assert!(every.contains("snapshots {") && every.contains("instance {"), "{every}");
        // An instance's filesystems are read by a loader, not along with the page.
        let every = every.replace("filesystems { filesystemId path }", "");
        assert!(plans::<Edge<ProviderVolume>>(&format!("{{ {every} }}")), "{every}");
    }
}
