//! What a list reads, from its selection (the query's look-ahead): the columns its fields are
//! built from, so that a page reads only what it shows. Each type keeps its fields' columns
//! beside its resolvers (`columns_of`), and a test holds that map to the schema.
use async_graphql::Lookahead;

/// The names of the fields selected under `selections`: what a page shows, for the store to
/// read the columns of (`Columns::for_fields`).
pub fn fields<'a>(selections: &[Lookahead<'a>]) -> Vec<&'a str> {
    let mut names = Vec::new();
    for field in selections.iter().flat_map(Lookahead::selection_fields) {
        names.extend(field.selection_set().map(|child| child.name()));
    }
    names
}

#[cfg(test)]
mod tests {
    use async_graphql::Schema;

    use super::super::{Mutation, Query, Subscription};
    use super::super::{instances, snapshots, volumes};

    /// The fields of `type_name`, from the schema's own introspection.
    async fn fields_of(type_name: &str) -> Vec<String> {
        let schema = Schema::build(Query::default(), Mutation::default(), Subscription::default()).finish();
        let query = format!("{{ __type(name: \"{type_name}\") {{ fields {{ name }} }} }}");
        let found = schema.execute(query).await.data.into_json().unwrap();
        found["__type"]["fields"].as_array().unwrap().iter().map(|f| f["name"].as_str().unwrap().to_owned()).collect()
    }

    #[tokio::test]
    async fn every_field_of_a_type_a_page_reads_names_the_columns_it_is_built_from() {
        type Known = fn(&str) -> bool;
        let types: [(&str, Known); 4] = [
            ("ProviderVolume", |f| volumes::volume_columns(f).is_some()),
            ("Attachment", |f| volumes::attachment_columns(f).is_some()),
            ("Instance", |f| instances::instance_columns(f).is_some()),
            ("ProviderSnapshot", |f| snapshots::snapshot_columns(f).is_some()),
        ];
        for (type_name, known) in types {
            let fields = fields_of(type_name).await;
            assert!(fields.len() > 5, "{type_name}: {fields:?}");
            for field in fields {
                assert!(known(&field), "{type_name}.{field} names no columns: a page would read them all");
            }
        }
    }
}
