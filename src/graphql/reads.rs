//! What a list reads, from its selection (the query's look-ahead): the view fields its GraphQL
//! fields are built from, for the store to read only the columns a page shows. A field of the
//! view is named by itself (`views::fields`); each GraphQL type names the view fields of its own
//! other fields (`derived`), and a test holds both to the schema.
use async_graphql::Lookahead;

use crate::views::fields::{Selected, View};

/// The fields of `V` the fields selected under `selections` are built from: a view field by its
/// own name, another by `derived`; every field when one is known to neither, so that a field
/// added without saying what it reads costs speed, never a wrong value.
pub fn selected<V: View>(
    selections: &[Lookahead<'_>],
    derived: fn(&str) -> Option<&'static [&'static str]>,
) -> Selected {
    let mut names = Vec::new();
    for field in selections.iter().flat_map(Lookahead::selection_fields) {
        for child in field.selection_set() {
            let name = child.name();
            if name == "__typename" {
                continue;
            }
            match (V::field(name), derived(name)) {
                (Some(field), _) => names.push(field.name),
                (None, Some(fields)) => names.extend_from_slice(fields),
                (None, None) => return Selected::All,
            }
        }
    }
    Selected::Only(names)
}

#[cfg(test)]
mod tests {
    use async_graphql::Schema;

    use super::super::{Mutation, Query, Subscription};
    use super::super::{instances, snapshots, volumes};
    use super::*;
    use crate::views::instances::InstanceView;
    use crate::views::snapshots::SnapshotView;
    use crate::views::volumes::{AttachmentView, VolumeView};

    /// The fields of `type_name`, from the schema's own introspection.
    async fn fields_of(type_name: &str) -> Vec<String> {
        let schema = Schema::build(Query::default(), Mutation::default(), Subscription::default()).finish();
        let query = format!("{{ __type(name: \"{type_name}\") {{ fields {{ name }} }} }}");
        let found = schema.execute(query).await.data.into_json().unwrap();
        found["__type"]["fields"].as_array().unwrap().iter().map(|f| f["name"].as_str().unwrap().to_owned()).collect()
    }

    /// Every field of `type_name` is its view's or says what it is built from, and every view
    /// field it names is one of `V`.
    async fn known<V: View>(type_name: &str, derived: fn(&str) -> Option<&'static [&'static str]>) {
        let fields = fields_of(type_name).await;
        assert!(fields.len() > 5, "{type_name}: {fields:?}");
        for field in fields {
            let from = match (V::field(&field), derived(&field)) {
                (Some(own), _) => vec![own.name],
                (None, Some(from)) => from.to_vec(),
                (None, None) => panic!("{type_name}.{field} names no view field: a page would read them all"),
            };
            for name in from {
                assert!(V::FIELDS.iter().any(|f| f.name == name), "{type_name}.{field}: {name} is not a view field");
            }
        }
    }

    #[tokio::test]
    async fn every_field_of_a_type_a_page_reads_names_the_view_fields_it_is_built_from() {
        known::<VolumeView>("ProviderVolume", volumes::volume_derived).await;
        known::<AttachmentView>("Attachment", volumes::attachment_derived).await;
        known::<InstanceView>("Instance", instances::derived).await;
        known::<SnapshotView>("ProviderSnapshot", snapshots::derived).await;
    }
}
