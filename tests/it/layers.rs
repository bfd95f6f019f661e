//! The layering rules of the datastore, checked on the source: every query, insert and
//! compare-and-swap lives in `src/store`, and no state, kind or provider word is compared as a
//! string outside the store and the provider's typed phases (`provider/phases.rs`), where a
//! stored or provider word becomes a type.
use std::path::{Path, PathBuf};

/// The layers that call the store and must build no SQL of their own.
const CALLERS: [&str; 5] = ["src/service", "src/reconcile", "src/graphql", "src/http", "src/boot.rs"];

/// SeaORM's query builders: what building a query, an insert or an update imports or names.
const QUERY_BUILDERS: [&str; 12] = [
    "EntityTrait",
    "QueryFilter",
    "QuerySelect",
    "QueryOrder",
    "QueryTrait",
    "ColumnTrait",
    "ActiveModelTrait",
    "ActiveValue",
    "ModelTrait",
    "PaginatorTrait",
    "Condition",
    "sea_query",
];

/// What building a query, an insert or an update with SeaORM looks like.
const QUERY_BUILDING: [&str; 12] = [
    "Entity::find",
    "::find_by_id(",
    "Entity::insert",
    "Entity::update",
    "Entity::delete",
    "update_many()",
    "delete_many()",
    "insert_many(",
    ".into_tuple()",
    "query_all",
    "query_one",
    "Statement::from",
];

/// The words of the stored states, kinds and provider phases.
const WORDS: [&str; 26] = [
    "pending",
    "ready",
    "updating",
    "deleting",
    "deleted",
    "error",
    "present",
    "absent",
    "block",
    "shared",
    "nfs",
    "lustre",
    "ipv4",
    "ipv6",
    "metered",
    "digitalocean",
    "aws",
    "new",
    "active",
    "off",
    "archive",
    "available",
    "creating",
    "failed",
    "running",
    "stopped",
];

fn sources(root: &Path) -> Vec<PathBuf> {
    if root.is_file() {
        return vec![root.to_owned()];
    }
    let mut found = Vec::new();
    for entry in std::fs::read_dir(root).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            found.extend(sources(&path));
        } else if path.extension().is_some_and(|e| e == "rs") {
            found.push(path);
        }
    }
    found
}

/// The lines of the file outside its tests, comments aside: a `#[cfg(test)]` item is skipped
/// (a module to its closing brace, a `mod tests;` line alone), and a test module file entirely.
/// Everything else is read, to the end of the file.
fn code_lines(path: &Path) -> Vec<(usize, String)> {
    if path.file_name().is_some_and(|n| n == "tests.rs") {
        return Vec::new();
    }
    let text = std::fs::read_to_string(path).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let mut kept = Vec::new();
    let mut n = 0;
    while n < lines.len() {
        if lines[n].trim_start().starts_with("#[cfg(test)]") {
            n = after_item(&lines, n + 1);
            continue;
        }
        if !lines[n].trim_start().starts_with("//") {
            kept.push((n + 1, lines[n].to_owned()));
        }
        n += 1;
    }
    kept
}

/// The index of the line after the item that starts at line `start`: its closing brace's line
/// when it opens a block, else the line itself.
fn after_item(lines: &[&str], start: usize) -> usize {
    let mut depth = 0i64;
    for (n, line) in lines.iter().enumerate().skip(start) {
        depth += line.matches('{').count() as i64 - line.matches('}').count() as i64;
        if depth <= 0 && (line.contains('}') || line.trim_end().ends_with(';')) {
            return n + 1;
        }
    }
    lines.len()
}

fn crate_path(relative: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(relative)
}

#[test]
fn every_query_insert_and_update_is_in_the_store() {
    let mut found = Vec::new();
    for layer in CALLERS {
        for path in sources(&crate_path(layer)) {
            for (n, line) in code_lines(&path) {
                if QUERY_BUILDING.iter().any(|pattern| line.contains(pattern)) {
                    found.push(format!("{}:{n}: {}", path.display(), line.trim()));
                }
            }
        }
    }
    assert!(found.is_empty(), "queries built outside src/store:\n{}", found.join("\n"));
}

#[test]
fn outside_the_store_nothing_imports_or_names_seaorms_query_builders() {
    let mut found = Vec::new();
    for path in sources(&crate_path("src")) {
        let relative = path.strip_prefix(crate_path("")).unwrap().to_string_lossy().into_owned();
        // The bench seeds rows as a fixture does; the store is where queries are built.
        if ["src/store", "src/bench"].iter().any(|dir| relative.starts_with(dir)) {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        // A `use sea_orm::{…}` may run over several lines: read each statement whole.
        for (n, line) in code_lines(&path) {
            let statement = if line.trim_start().starts_with("use sea_orm") {
                let rest = &text[text.find(line.trim()).unwrap()..];
                rest[..rest.find(';').unwrap_or(rest.len())].to_owned()
            } else {
                line.clone()
            };
            let names_sea_orm = statement.contains("sea_orm::");
            if names_sea_orm && QUERY_BUILDERS.iter().any(|b| statement.contains(b)) {
                found.push(format!("{relative}:{n}: {}", line.trim()));
            }
        }
    }
    assert!(found.is_empty(), "SeaORM's query builders outside src/store:\n{}", found.join("\n"));
}

#[test]
fn the_reconcilers_use_views_never_the_service() {
    let mut found = Vec::new();
    for path in sources(&crate_path("src/reconcile")) {
        for (n, line) in code_lines(&path) {
            if line.contains("crate::service::") || line.contains("crate::service;") {
                found.push(format!("{}:{n}: {}", path.display(), line.trim()));
            }
        }
    }
    assert!(found.is_empty(), "reconcilers importing the service layer:\n{}", found.join("\n"));
}

#[test]
fn graphql_names_view_fields_never_store_rows_or_columns() {
    let mut found = Vec::new();
    for path in sources(&crate_path("src/graphql")) {
        for (n, line) in code_lines(&path) {
            if line.contains("store::entity") || line.contains("store::columns") || line.contains("Column::") {
                found.push(format!("{}:{n}: {}", path.display(), line.trim()));
            }
        }
    }
    assert!(found.is_empty(), "graphql naming the store's rows or columns:\n{}", found.join("\n"));
}

#[test]
fn no_state_kind_or_provider_word_is_compared_as_a_string_outside_the_store() {
    let phases = crate_path("src/provider/phases.rs");
    let mut found = Vec::new();
    for path in sources(&crate_path("src")) {
        let relative = path.strip_prefix(crate_path("")).unwrap().to_string_lossy().into_owned();
        // The store and the phases are where words become types; the sim is the provider; the
        // bench is a client of the API and reads its words as a dashboard would.
        let exempt = ["src/store", "src/sim", "src/bench"];
        if exempt.iter().any(|dir| relative.starts_with(dir)) || path == phases {
            continue;
        }
        for (n, line) in code_lines(&path) {
            let lower = line.to_lowercase();
            let compared = WORDS.iter().any(|word| {
                let quoted = format!("\"{word}\"");
                [format!("== {quoted}"), format!("!= {quoted}"), format!("{quoted} =>"), format!("{quoted} |")]
                    .iter()
                    .any(|shape| lower.contains(shape))
            });
            // A provider's code is read where its answer is (`Refused::code`), not above it.
            let reads_code = line.contains("aws_code()") && !relative.starts_with("src/provider");
            if compared || reads_code || line.contains("message().contains(") {
                found.push(format!("{relative}:{n}: {}", line.trim()));
            }
        }
    }
    assert!(found.is_empty(), "words compared as strings outside src/store:\n{}", found.join("\n"));
}
