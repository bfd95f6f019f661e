//! What a document costs, found before any of it runs: async-graphql's own parse checks,
//! validation and execution walk every fragment again at each spread, so a document of a few
//! hundred bytes whose fragments spread each other can stand for billions of fields. Here each
//! fragment is measured once (memoised, with saturating counts) and each spread adds what its
//! fragment measured, so the walk is linear in the document's text whatever it expands to.
//! Recursion is bounded too: the text's bracket nesting is read before the parser sees it, and the
//! walk refuses what nests deeper than async-graphql's own recursion limit.
use std::collections::{HashMap, HashSet};

use async_graphql::parser::types::{Directive, ExecutableDocument, Field, Selection, SelectionSet};
use async_graphql::parser::{Positioned, types::VariableDefinition};
use async_graphql::{Name, Variables};
use async_graphql_value::{ConstValue, Value};

/// Selection sets nested below an operation's own, as async-graphql's parse checks count them
/// (a field's set, an inline fragment, a spread's fragment): past it, it refuses the document.
pub const MAX_NESTING: usize = 32;

/// The deepest a document's text may nest brackets: past the parser's own selection-set limit
/// (64), well past what a valid document needs (33 sets, and a few lists in arguments).
pub const MAX_TEXT_NESTING: usize = 64;

/// Characters of a string value that weigh as one selection: a long string is copied wherever
/// its field is spread.
const TEXT_PER_SELECTION: usize = 64;

/// The introspection fields that answer lists (of types, fields, arguments…).
const INTROSPECTION_LISTS: [&str; 8] =
    ["types", "directives", "fields", "args", "interfaces", "possibleTypes", "enumValues", "inputFields"];

/// What one document costs, fragments expanded. Introspection is measured apart.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Measure {
    /// Every selection, directive, variable definition and input value that validation and
    /// execution visit: fragments counted at each spread, and each definition once more.
    pub selections: usize,
    /// Selection sets below the operation's own, fragments and inline fragments included.
    pub nesting: usize,
    pub depth: usize,
    pub aliases: usize,
    /// Fields under `__schema` / `__type`, themselves included and `__typename` not: what
    /// validation's complexity counted for them.
    pub introspection_fields: usize,
    pub introspection_depth: usize,
    /// Lists of introspection nested in one another (`types { fields { args } }` is three).
    pub introspection_lists: usize,
    /// The most fields one introspection selection set asks (fragments flattened into it): no
    /// introspection type has more than a dozen, and each one more is resolved for every object
    /// of every list above it.
    pub introspection_breadth: usize,
    /// Fields at this selection set's own level, its fragments flattened into it.
    fields: usize,
    pub introspection_aliases: usize,
    pub schema_fields: usize,
    pub type_fields: usize,
}

impl Measure {
    /// `other` beside this one: counts add up, depths keep the deeper.
    fn beside(&mut self, other: &Measure) {
        let add = |a: &mut usize, b: usize| *a = a.saturating_add(b);
        add(&mut self.selections, other.selections);
        add(&mut self.aliases, other.aliases);
        add(&mut self.introspection_fields, other.introspection_fields);
        add(&mut self.introspection_aliases, other.introspection_aliases);
        add(&mut self.schema_fields, other.schema_fields);
        add(&mut self.type_fields, other.type_fields);
        add(&mut self.fields, other.fields);
        self.introspection_breadth = self.introspection_breadth.max(other.introspection_breadth);
        self.nesting = self.nesting.max(other.nesting);
        self.depth = self.depth.max(other.depth);
        self.introspection_depth = self.introspection_depth.max(other.introspection_depth);
        self.introspection_lists = self.introspection_lists.max(other.introspection_lists);
    }
}

/// Why a document is refused before it is measured whole.
#[derive(Debug, PartialEq, Eq)]
pub enum Refusal {
    /// A fragment spreads itself, directly or through others.
    Cycle(String),
    /// Selection sets nest deeper than `MAX_NESTING`.
    Nesting,
}

/// The deepest nesting of `{`, `[` and `(` in a document's text, strings and comments skipped:
/// how deep the parser would recurse, found without recursing.
pub fn text_nesting(text: &str) -> usize {
    let bytes = text.as_bytes();
    let at = |i: usize, s: &[u8]| bytes[i..].starts_with(s);
    let (mut depth, mut deepest, mut i) = (0usize, 0usize, 0usize);
    while i < bytes.len() {
        match bytes[i] {
            b'{' | b'[' | b'(' => {
                depth += 1;
                deepest = deepest.max(depth);
            }
            b'}' | b']' | b')' => depth = depth.saturating_sub(1),
            b'#' => {
                while i < bytes.len() && bytes[i] != b'\n' && bytes[i] != b'\r' {
                    i += 1;
                }
            }
            b'"' if at(i, b"\"\"\"") => {
                i += 3;
                while i < bytes.len() && !at(i, b"\"\"\"") {
                    i += if at(i, b"\\\"\"\"") { 4 } else { 1 };
                }
                i += 2;
            }
            b'"' => {
                i += 1;
                while i < bytes.len() && bytes[i] != b'"' && bytes[i] != b'\n' {
                    i += if bytes[i] == b'\\' { 2 } else { 1 };
                }
            }
            _ => {}
        }
        i += 1;
    }
    deepest
}

/// Measures every operation of `document` and every fragment it defines, in time linear in
/// its text.
pub fn measure(document: &ExecutableDocument, variables: &Variables) -> Result<Measure, Refusal> {
    let mut walk = Walk {
        document,
        variables,
        variable_weights: HashMap::new(),
        fragments: HashMap::new(),
        open: HashSet::new(),
        level: 0,
    };
    let mut total = Measure::default();
    for (_, operation) in document.operations.iter() {
        let operation = &operation.node;
        let own =
            walk.directives(&operation.directives).saturating_add(walk.definitions(&operation.variable_definitions));
        let measured = walk.set(&operation.selection_set.node, false)?;
        total.beside(&measured);
        total.selections = total.selections.saturating_add(own);
    }
    // Validation visits each definition once more, used or not.
    for (name, fragment) in &document.fragments {
        let measured = walk.fragment(name.as_str(), false)?;
        let own = walk.directives(&fragment.node.directives);
        total.selections = total.selections.saturating_add(measured.selections).saturating_add(own);
    }
    Ok(total)
}

struct Walk<'a> {
    document: &'a ExecutableDocument,
    variables: &'a Variables,
    variable_weights: HashMap<&'a str, usize>,
    /// Each fragment measured once, in and out of introspection.
    fragments: HashMap<(&'a str, bool), Measure>,
    /// The fragments being measured: spreading one of them again is a cycle.
    open: HashSet<&'a str>,
    /// How many selection sets the walk is inside now.
    level: usize,
}

impl<'a> Walk<'a> {
    fn set(&mut self, set: &'a SelectionSet, inside: bool) -> Result<Measure, Refusal> {
        if self.level > MAX_NESTING {
            return Err(Refusal::Nesting);
        }
        self.level += 1;
        let measured = self.items(set, inside);
        self.level -= 1;
        measured
    }

    fn items(&mut self, set: &'a SelectionSet, inside: bool) -> Result<Measure, Refusal> {
        let mut total = Measure::default();
        let mut below = 0;
        for item in &set.items {
            let own = 1usize.saturating_add(self.directives(item.node.directives()));
            let (measured, nested) = match &item.node {
                Selection::Field(field) if field.node.selection_set.node.items.is_empty() => {
                    (Measure { fields: 1, ..self.field(&field.node, Measure::default(), inside) }, 0)
                }
                Selection::Field(field) => {
                    let name = field.node.name.node.as_str();
                    let within = inside || name == "__schema" || name == "__type";
                    let children = self.set(&field.node.selection_set.node, within)?;
                    (Measure { fields: 1, ..self.field(&field.node, children, inside) }, children.nesting + 1)
                }
                Selection::InlineFragment(fragment) => {
                    let children = self.set(&fragment.node.selection_set.node, inside)?;
                    (children, children.nesting + 1)
                }
                Selection::FragmentSpread(spread) => {
                    let measured = self.fragment(spread.node.fragment_name.node.as_str(), inside)?;
                    (measured, measured.nesting + 1)
                }
            };
            if self.level + nested > MAX_NESTING + 1 {
                return Err(Refusal::Nesting);
            }
            below = below.max(nested);
            total.beside(&measured);
            total.selections = total.selections.saturating_add(own);
        }
        total.nesting = below;
        if inside {
            total.introspection_breadth = total.introspection_breadth.max(total.fields);
        }
        Ok(total)
    }

    /// A field over what its selection set measured.
    fn field(&mut self, field: &'a Field, children: Measure, inside: bool) -> Measure {
        let name = field.name.node.as_str();
        let enters = !inside && (name == "__schema" || name == "__type");
        let aliased = usize::from(field.alias.is_some());
        let mut m = children;
        m.selections = m.selections.saturating_add(self.arguments(field.arguments.as_slice()));
        if inside || enters {
            m.introspection_fields = m.introspection_fields.saturating_add(usize::from(name != "__typename"));
            m.introspection_depth += 1;
            if inside {
                m.introspection_aliases = m.introspection_aliases.saturating_add(aliased);
                let list = INTROSPECTION_LISTS.contains(&name) && !field.selection_set.node.items.is_empty();
                m.introspection_lists += usize::from(list);
            } else if name == "__schema" {
                m.schema_fields += 1;
            } else {
                m.type_fields += 1;
            }
        } else {
            m.depth += 1;
            m.aliases = m.aliases.saturating_add(aliased);
            if m.introspection_depth > 0 {
                m.introspection_depth += 1;
            }
        }
        m
    }

    fn fragment(&mut self, name: &'a str, inside: bool) -> Result<Measure, Refusal> {
        if let Some(known) = self.fragments.get(&(name, inside)) {
            return Ok(*known);
        }
        // A spread of a fragment the document does not define: validation's to refuse.
        let Some((name, definition)) = self.document.fragments.get_key_value(name) else {
            return Ok(Measure::default());
        };
        let name = name.as_str();
        if !self.open.insert(name) {
            return Err(Refusal::Cycle(name.to_owned()));
        }
        let measured = self.set(&definition.node.selection_set.node, inside);
        self.open.remove(name);
        let measured = measured?;
        self.fragments.insert((name, inside), measured);
        Ok(measured)
    }

    fn definitions(&mut self, definitions: &'a [Positioned<VariableDefinition>]) -> usize {
        definitions.iter().fold(0usize, |n, d| {
            let default = d.node.default_value.as_ref().map_or(0, |v| const_weight(&v.node));
            n.saturating_add(1).saturating_add(default).saturating_add(self.directives(&d.node.directives))
        })
    }

    fn directives(&mut self, directives: &'a [Positioned<Directive>]) -> usize {
        directives
            .iter()
            .fold(0usize, |n, d| n.saturating_add(1).saturating_add(self.arguments(d.node.arguments.as_slice())))
    }

    fn arguments(&mut self, arguments: &'a [(Positioned<Name>, Positioned<Value>)]) -> usize {
        arguments.iter().fold(0usize, |n, (_, value)| n.saturating_add(self.value(&value.node)))
    }

    fn value(&mut self, value: &'a Value) -> usize {
        match value {
            Value::Variable(name) => 1usize.saturating_add(self.variable(name.as_str())),
            Value::String(text) => 1 + text.len() / TEXT_PER_SELECTION,
            Value::List(items) => items.iter().fold(1usize, |n, v| n.saturating_add(self.value(v))),
            Value::Object(fields) => fields.values().fold(1usize, |n, v| n.saturating_add(self.value(v))),
            _ => 1,
        }
    }

    /// What a variable's value weighs, wherever it is used (read once).
    fn variable(&mut self, name: &'a str) -> usize {
        if let Some(&weight) = self.variable_weights.get(name) {
            return weight;
        }
        let weight = self.variables.get(name).map_or(0, const_weight);
        self.variable_weights.insert(name, weight);
        weight
    }
}

fn const_weight(value: &ConstValue) -> usize {
    match value {
        ConstValue::String(text) => 1 + text.len() / TEXT_PER_SELECTION,
        ConstValue::List(items) => items.iter().fold(1usize, |n, v| n.saturating_add(const_weight(v))),
        ConstValue::Object(fields) => fields.values().fold(1usize, |n, v| n.saturating_add(const_weight(v))),
        _ => 1,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use async_graphql::parser::parse_query;

    fn measured(query: &str) -> Result<Measure, Refusal> {
        measure(&parse_query(query).expect("parses"), &Variables::default())
    }

    /// Ten fragments, each spreading the next `fan` times: `fan`^10 fields once expanded.
    fn fan_out(levels: usize, fan: usize) -> String {
        let mut text = String::from("fragment F0 on Query { __typename }\n");
        for level in 1..=levels {
            let spreads = format!("...F{} ", level - 1).repeat(fan);
            text.push_str(&format!("fragment F{level} on Query {{ {spreads}}}\n"));
        }
        text.push_str(&format!("{{ ...F{levels} }}"));
        text
    }

    #[test]
    fn a_fragment_is_counted_at_each_spread_without_walking_it_again() {
        let small = measured(&fan_out(2, 8)).unwrap();
        // The operation: its spread, F2's 8 spreads, their 64, and F0's field 64 times; then
        // each definition once more: F0 (1), F1 (8 spreads, 8 fields), F2 (8 + 64 + 64).
        assert_eq!(small.selections, (1 + 8 + 64 + 64) + (1 + (8 + 8) + (8 + 64 + 64)));
        let huge = fan_out(10, 8);
        let started = std::time::Instant::now();
        let m = measured(&huge).unwrap();
        assert!(m.selections > 1_000_000_000, "8^10 fields: {m:?}");
        assert!(started.elapsed() < std::time::Duration::from_millis(50), "{:?}", started.elapsed());
        let nested = measured(&fan_out(40, 8)).unwrap_err();
        assert_eq!(nested, Refusal::Nesting, "forty levels of spreads nest past async-graphql's limit");
        let wide = measured(&fan_out(20, 80)).unwrap();
        assert_eq!(wide.selections, usize::MAX, "counts saturate");
    }

    #[test]
    fn a_fragment_that_spreads_itself_is_refused() {
        let cycle = "fragment A on Query { ...B } fragment B on Query { ...A ...A } { ...A }";
        assert_eq!(measured(cycle), Err(Refusal::Cycle("A".into())));
        let unused = "fragment A on Query { ...A } { __typename }";
        assert!(measured(unused).is_err(), "validation visits unused fragments too");
    }

    #[test]
    fn typename_is_not_an_introspection_field_but_counts_as_a_selection() {
        let m = measured("{ __type(name: \"Query\") { name __typename __typename } }").unwrap();
        assert_eq!(m.introspection_fields, 2, "__type and name: what complexity counted");
        assert_eq!(m.type_fields, 1);
        assert_eq!(m.selections, 1 + 1 + 3);
    }

    #[test]
    fn introspection_lists_nesting_and_aliases_are_measured_apart() {
        let m =
            measured("{ __schema { types { fields { args { name } } a: fields { name } } } me { tenantId } }").unwrap();
        assert_eq!((m.introspection_lists, m.introspection_aliases, m.schema_fields), (3, 1, 1));
        assert_eq!((m.depth, m.aliases, m.introspection_depth), (2, 0, 5));
        assert_eq!(m.introspection_breadth, 2, "fields and a: fields");
        let repeated =
            format!("{{ __schema {{ types {{ name ...T }} }} }} fragment T on __Type {{ {} }}", "name ".repeat(30));
        assert_eq!(measured(&repeated).unwrap().introspection_breadth, 31, "a fragment's fields count where spread");
    }

    #[test]
    fn nesting_counts_sets_as_async_graphql_does() {
        let wrapped = |times: usize| (0..times).fold(String::from("a"), |inner, _| format!("a {{ {inner} }}"));
        let deep = wrapped(MAX_NESTING);
        assert_eq!(measured(&format!("{{ {deep} }}")).unwrap().nesting, MAX_NESTING);
        assert_eq!(measured(&format!("{{ x {{ {deep} }} }}")), Err(Refusal::Nesting));
        // Measured first where it fits, then spread one level deeper, from the memo.
        let spread = format!("fragment F on Q {{ {} }} {{ ...F x {{ ...F }} }}", wrapped(MAX_NESTING - 1));
        assert_eq!(measured(&spread), Err(Refusal::Nesting), "a memoised fragment spread deeper");
    }

    #[test]
    fn values_and_variables_weigh_what_they_hold() {
        let query = "query($v: [Int]) { a(x: [1, 2, 3], y: $v, z: \"short\") @skip(if: false) }";
        let variables = Variables::from_json(serde_json::json!({ "v": [1, 2, 3, 4] }));
        let m = measure(&parse_query(query).unwrap(), &variables).unwrap();
        // The field, its directive and `if`, x (4), y (1 + 5), z (1), the variable definition.
        assert_eq!(m.selections, 1 + 2 + 4 + 6 + 1 + 1);
        let long = format!("{{ a(x: \"{}\") }}", "y".repeat(64 * 100));
        assert_eq!(measured(&long).unwrap().selections, 1 + 101);
    }

    #[test]
    fn text_nesting_skips_strings_and_comments() {
        assert_eq!(text_nesting("{ a { b(x: [[1]]) } }"), 5);
        assert_eq!(text_nesting("{ a(x: \"{{{{\\\"{{\") # {{{{\n }"), 2);
        assert_eq!(text_nesting("{ a(x: \"\"\" {{{ \\\"\"\" {{ \"\"\") }"), 2);
        assert_eq!(text_nesting(&"[".repeat(100_000)), 100_000);
        assert_eq!(text_nesting("\"unterminated {{{"), 0);
    }
}
