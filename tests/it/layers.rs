//! The layering rules of the datastore, checked on the source: every query, insert and
//! compare-and-swap lives in `src/store`, and no state, kind or provider word is compared as a
//! string outside the store and the provider's typed phases (`provider/phases.rs`), where a
//! stored or provider word becomes a type.
use std::path::{Path, PathBuf};

/// The layers that call the store and must build no SQL of their own.
const CALLERS: [&str; 5] = ["src/service", "src/reconcile", "src/graphql", "src/http", "src/boot.rs"];

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

/// The lines of the file that are not in its `#[cfg(test)]` tail or a test module file.
fn code_lines(path: &Path) -> Vec<(usize, String)> {
    if path.file_name().is_some_and(|n| n == "tests.rs") {
        return Vec::new();
    }
    let text = std::fs::read_to_string(path).unwrap();
    text.lines()
        .take_while(|line| !line.starts_with("#[cfg(test)]"))
        .enumerate()
        .filter(|(_, line)| !line.trim_start().starts_with("//"))
        .map(|(n, line)| (n + 1, line.to_owned()))
        .collect()
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
            if compared || line.contains("message().contains(") {
                found.push(format!("{relative}:{n}: {}", line.trim()));
            }
        }
    }
    assert!(found.is_empty(), "words compared as strings outside src/store:\n{}", found.join("\n"));
}
