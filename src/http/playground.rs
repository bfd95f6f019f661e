//! GraphiQL at `/` and the dashboard at `/dashboard`: the `playground/` build (by vite, made by
//! build.rs when Node.js is present), embedded in the binary, so neither needs the internet at run
//! time. Without that build, `/` serves the same GraphiQL from a CDN and says how to get the
//! offline one; `/dashboard` says how to build it.
use axum::extract::Path;
use axum::http::{StatusCode, header};
use axum::response::{Html, IntoResponse, Response};
use rust_embed::RustEmbed;

#[derive(RustEmbed)]
#[folder = "$OUT_DIR/playground"]
struct Build;

pub async fn index() -> Response {
    match Build::get("index.html") {
        Some(file) => html(file.data),
        None => Html(CDN_FALLBACK).into_response(),
    }
}

pub async fn dashboard() -> Response {
    match Build::get("dashboard.html") {
        Some(file) => html(file.data),
        None => (StatusCode::NOT_FOUND, Html(NO_DASHBOARD)).into_response(),
    }
}

fn html(page: std::borrow::Cow<'static, [u8]>) -> Response {
    ([(header::CONTENT_TYPE, "text/html; charset=utf-8"), (header::CACHE_CONTROL, "no-cache")], page).into_response()
}

pub async fn asset(Path(path): Path<String>) -> Response {
    let Some(file) = Build::get(&path) else {
        return (StatusCode::NOT_FOUND, "not found\n").into_response();
    };
    // Vite names assets by content hash, so they never change under one name.
    let cache = if path.starts_with("assets/") { "public, max-age=31536000, immutable" } else { "no-cache" };
    ([(header::CONTENT_TYPE, content_type(&path)), (header::CACHE_CONTROL, cache)], file.data).into_response()
}

fn content_type(path: &str) -> &'static str {
    match path.rsplit('.').next().unwrap_or("") {
        "html" => "text/html; charset=utf-8",
        "js" | "mjs" => "text/javascript; charset=utf-8",
        "css" => "text/css; charset=utf-8",
        "json" | "map" => "application/json",
        "svg" => "image/svg+xml",
        "png" => "image/png",
        "ico" => "image/x-icon",
        "woff2" => "font/woff2",
        "woff" => "font/woff",
        "ttf" => "font/ttf",
        "wasm" => "application/wasm",
        _ => "application/octet-stream",
    }
}

const CDN_FALLBACK: &str = r#"<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <title>vps-graph</title>
  <style>body{margin:0;height:100vh;display:flex;flex-direction:column}#graphiql{flex:1}
  .note{font:14px sans-serif;padding:6px 12px;background:#fff3cd}</style>
  <link rel="stylesheet" href="https://esm.sh/graphiql@5.4.0/dist/style.css">
  <script type="importmap">{"imports":{
    "react":"https://esm.sh/react@19.3.1","react/":"https://esm.sh/react@19.3.1/",
    "react-dom":"https://esm.sh/react-dom@19.3.1","react-dom/":"https://esm.sh/react-dom@19.3.1/",
    "graphiql":"https://esm.sh/graphiql@5.4.0?standalone&external=react,react-dom,@graphiql/react,graphql",
    "@graphiql/react":"https://esm.sh/@graphiql/react@0.39.1?standalone&external=react,react-dom,graphql",
    "@graphiql/toolkit":"https://esm.sh/@graphiql/toolkit@0.12.1?standalone&external=graphql",
    "graphql":"https://esm.sh/graphql@16.15.0"}}</script>
</head>
<body>
  <div class="note">This GraphiQL loads from a CDN because the binary was built without Node.js.
  Install Node.js and rebuild for the offline build.</div>
  <div id="graphiql">Loading…</div>
  <script type="module">
    import React from 'react';
    import ReactDOM from 'react-dom/client';
    import { GraphiQL } from 'graphiql';
    import { createGraphiQLFetcher } from '@graphiql/toolkit';
    const fetcher = createGraphiQLFetcher({ url: '/graphql' });
    ReactDOM.createRoot(document.getElementById('graphiql')).render(React.createElement(GraphiQL, { fetcher }));
  </script>
</body>
</html>
"#;

const NO_DASHBOARD: &str = "<!doctype html><html lang=\"en\"><meta charset=\"utf-8\"><title>vps-graph</title>\
<p>The dashboard is built with Node.js when the binary is: install Node.js (with npm) and rebuild.\
 GraphiQL is at <a href=\"/\">/</a>.</p></html>\n";
