//! One declaration per field. `view!` declares a view once, and from that declaration come: the
//! struct (its serde shape is the event's `data`, its GraphQL derive the type's fields), the copy
//! from its row (every field is the row's column of the same name), how a rendered page writes
//! each field (`View::FIELDS`), and the name the store reads it by (`Selected`). A field added to
//! the view is added everywhere at once.

/// A field of the view `V`: its name (the row's column it is copied from), its GraphQL name when
/// that is not the camelCase of its name, and how a rendered page writes it.
pub struct ViewField<V> {
    pub name: &'static str,
    graphql: Option<&'static str>,
    pub write: fn(&V, &mut Vec<u8>) -> Option<()>,
}

impl<V> ViewField<V> {
    pub const fn new(
        name: &'static str,
        renamed: &'static [&'static str],
        write: fn(&V, &mut Vec<u8>) -> Option<()>,
    ) -> Self {
        let graphql = match renamed {
            [graphql] => Some(*graphql),
            _ => None,
        };
        ViewField { name, graphql, write }
    }

    /// Whether the GraphQL field `graphql_name` is this one.
    pub fn is_named(&self, graphql_name: &str) -> bool {
        match self.graphql {
            Some(graphql) => graphql == graphql_name,
            None => camel_case_is(self.name, graphql_name),
        }
    }
}

/// Whether `camel` is the camelCase of `snake`, as async-graphql names a field (`ready_at` is
/// `readyAt`), compared without allocating.
fn camel_case_is(snake: &str, camel: &str) -> bool {
    let mut expected = camel.chars();
    let mut upper = false;
    for c in snake.chars() {
        if c == '_' {
            upper = true;
            continue;
        }
        let c = if std::mem::take(&mut upper) { c.to_ascii_uppercase() } else { c };
        if expected.next() != Some(c) {
            return false;
        }
    }
    expected.next().is_none()
}

/// A view declared by `view!`.
pub trait View: Sized + 'static {
    /// Its fields copied from the row, in order.
    const FIELDS: &'static [ViewField<Self>];

    /// The field GraphQL names `graphql_name`.
    fn field(graphql_name: &str) -> Option<&'static ViewField<Self>> {
        Self::FIELDS.iter().find(|f| f.is_named(graphql_name))
    }
}

/// The fields of a view a read must fill (by `ViewField::name`, which is also their column's):
/// what a page shows, so that it reads only that.
#[derive(Clone, Debug, PartialEq)]
pub enum Selected {
    /// Every field: something asked for is not known to be built from named fields alone.
    All,
    Only(Vec<&'static str>),
}

impl Selected {
    /// The names, None for all.
    pub fn names(&self) -> Option<&[&'static str]> {
        match self {
            Selected::All => None,
            Selected::Only(names) => Some(names),
        }
    }
}

/// Declares a view (see the module's comment). Its fields are copied from the row by name; the
/// ones after `also` are not the row's (the caller fills them) and are not GraphQL fields of the
/// view (the GraphQL type that wraps it resolves them). `as "name"` gives a field's GraphQL name
/// when it is not the camelCase of its own.
macro_rules! view {
    (
        $(#[$attr:meta])*
        pub struct $name:ident from $row:path {
            $( $(#[$field_attr:meta])* pub $field:ident : $ty:ty $(as $graphql:literal)? ),* $(,)?
        }
        $( also { $( $(#[$also_attr:meta])* pub $also:ident : $also_ty:ty ),* $(,)? } )?
    ) => {
        $(#[$attr])*
        #[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize, async_graphql::SimpleObject)]
        #[serde(rename_all = "camelCase")]
        pub struct $name {
            $( $(#[$field_attr])* $(#[graphql(name = $graphql)])? pub $field: $ty, )*
            $($( $(#[$also_attr])* #[graphql(skip)] pub $also: $also_ty, )*)?
        }

        impl From<$row> for $name {
            fn from(row: $row) -> Self {
                $name {
                    $( $field: row.$field, )*
                    $($( $also: Default::default(), )*)?
                }
            }
        }

        impl $crate::views::fields::View for $name {
            const FIELDS: &'static [$crate::views::fields::ViewField<Self>] = &[$(
                $crate::views::fields::ViewField::new(
                    stringify!($field),
                    &[$($graphql)?],
                    |view: &$name, out: &mut Vec<u8>| $crate::views::json::WriteJson::write_json(&view.$field, out),
                ),
            )*];
        }
    };
}

pub(crate) use view;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::entity::{instance, provider_snapshot, provider_volume, volume_attachment};
    use crate::views::instances::InstanceView;
    use crate::views::snapshots::SnapshotView;
    use crate::views::volumes::{AttachmentView, VolumeView};

    /// Each field of `V` is read from the column of its name (`store::columns::Columns::named`).
    fn columns_named<V: View, E: sea_orm::EntityTrait>() {
        for field in V::FIELDS {
            assert!(field.name.parse::<E::Column>().is_ok(), "{}: no column of that name", field.name);
        }
    }

    #[test]
    fn every_view_field_is_read_from_the_column_of_its_name() {
        columns_named::<VolumeView, provider_volume::Entity>();
        columns_named::<AttachmentView, volume_attachment::Entity>();
        columns_named::<InstanceView, instance::Entity>();
        columns_named::<SnapshotView, provider_snapshot::Entity>();
    }

    #[test]
    fn a_field_is_named_by_its_camel_case_or_its_rename() {
        assert!(camel_case_is("ready_at", "readyAt"));
        assert!(camel_case_is("id", "id"));
        assert!(!camel_case_is("ready_at", "ready_at"));
        assert!(!camel_case_is("ready_at", "readyAtX"));
        assert!(!camel_case_is("ready_at", "ready"));
        let renamed = ViewField::<()>::new("size_gib", &["sizeGiB"], |_, _| None);
        assert!(renamed.is_named("sizeGiB") && !renamed.is_named("sizeGib"));
    }
}
