//! `schema.graphql` at the root is the exported SDL; this fails when it is stale.
#[test]
fn schema_graphql_matches_the_code() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("schema.graphql");
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    let current = vps_graph::graphql::sdl();
    assert!(committed == current, "schema.graphql is stale: run `cargo run -- schema > schema.graphql`");
}
