//! GraphiQL at `/` and the dashboard at `/dashboard`: the `playground/` build (by vite, made by
//! build.rs when Node.js is present), embedded in the binary, so neither needs the internet at run
//! time. Without that build, `/` serves the same GraphiQL from a CDN and says how to get the
//! offline one; `/dashboard` says how to build it.
use std::collections::HashMap;
use std::io::Write;
use std::sync::{LazyLock, Mutex};

use axum::body::Bytes;
use axum::extract::Path;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use rust_embed::RustEmbed;

#[derive(RustEmbed)]
#[folder = "$OUT_DIR/playground"]
struct Build;

/// What the built pages may load: their own scripts, styles and workers (the editor's), and
/// nothing framed, embedded or posted elsewhere.
const PAGE_POLICY: &str = "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; \
img-src 'self' data: blob:; font-src 'self' data:; worker-src 'self' blob:; connect-src 'self'; \
object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

/// The CDN fallback loads only the pinned files below (each by its address and its integrity
/// hash), not anything else unpkg holds.
const FALLBACK_POLICY: &str = "default-src 'self'; script-src 'self' \
https://unpkg.com/react@18.3.1/umd/react.production.min.js \
https://unpkg.com/react-dom@18.3.1/umd/react-dom.production.min.js \
https://unpkg.com/graphiql@3.8.3/graphiql.min.js; \
style-src https://unpkg.com/graphiql@3.8.3/graphiql.min.css 'unsafe-inline'; img-src 'self' data:; font-src data:; \
connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

pub async fn index() -> Response {
    match Build::get("index.html") {
        Some(file) => page(file.data, PAGE_POLICY, StatusCode::OK),
        None => page(CDN_FALLBACK.as_bytes().into(), FALLBACK_POLICY, StatusCode::OK),
    }
}

pub async fn dashboard() -> Response {
    match Build::get("dashboard.html") {
        Some(file) => page(file.data, PAGE_POLICY, StatusCode::OK),
        None => page(NO_DASHBOARD.as_bytes().into(), PAGE_POLICY, StatusCode::NOT_FOUND),
    }
}

/// A page with the headers that keep it from being framed, sniffed, or told where it was read.
fn page(body: std::borrow::Cow<'static, [u8]>, policy: &'static str, status: StatusCode) -> Response {
    let headers = [
        (header::CONTENT_TYPE, "text/html; charset=utf-8"),
        (header::CACHE_CONTROL, "no-cache"),
        (header::CONTENT_SECURITY_POLICY, policy),
        (header::X_FRAME_OPTIONS, "DENY"),
        (header::REFERRER_POLICY, "no-referrer"),
    ];
    (status, headers, body).into_response()
}

/// The fallback page's own script: a file of this server's, so no inline script is allowed.
pub async fn fallback_script() -> Response {
    ([(header::CONTENT_TYPE, "text/javascript; charset=utf-8"), (header::CACHE_CONTROL, "no-cache")], FALLBACK_SCRIPT)
        .into_response()
}

pub async fn asset(Path(path): Path<String>, asked: HeaderMap) -> Response {
    let Some(file) = Build::get(&path) else {
        return (StatusCode::NOT_FOUND, "not found\n").into_response();
    };
    // A page by its file name (`/index.html`) is a page as `/` serves it: with its headers.
    if path.ends_with(".html") {
        return page(file.data, PAGE_POLICY, StatusCode::OK);
    }
    // Vite names assets by content hash, so they never change under one name.
    let cache = if path.starts_with("assets/") { "public, max-age=31536000, immutable" } else { "no-cache" };
    let headers = [
        (header::CONTENT_TYPE, content_type(&path)),
        (header::CACHE_CONTROL, cache),
        (header::VARY, "accept-encoding"),
    ];
    if compressible(&path, file.data.len()) && accepts_gzip(&asked) {
        let body = gzipped(&path, file.data.clone()).await;
        if !body.is_empty() {
            return (headers, [(header::CONTENT_ENCODING, "gzip")], body).into_response();
        }
    }
    (headers, file.data).into_response()
}

/// Text worth compressing (the editor's scripts are most of the page's 5.5 MB).
fn compressible(path: &str, len: usize) -> bool {
    let text = matches!(path.rsplit('.').next(), Some("js" | "mjs" | "css" | "json" | "map" | "svg" | "ttf"));
    text && len > 1024
}

/// Whether the request takes gzip (`Accept-Encoding: gzip`, not at `q=0`).
fn accepts_gzip(asked: &HeaderMap) -> bool {
    let values = asked.get_all(header::ACCEPT_ENCODING).iter().filter_map(|v| v.to_str().ok());
    values.flat_map(|v| v.split(',')).any(|item| {
        let mut parts = item.split(';').map(str::trim);
        let coding = parts.next().unwrap_or_default();
        let refused = parts.any(|p| p.strip_prefix("q=").is_some_and(|q| q.trim().parse::<f32>().ok() == Some(0.0)));
        (coding.eq_ignore_ascii_case("gzip") || coding == "*") && !refused
    })
}

/// Each asset's gzip, made once (off the async threads) on its first request.
static GZIPPED: LazyLock<Mutex<HashMap<String, Bytes>>> = LazyLock::new(Mutex::default);

async fn gzipped(path: &str, data: std::borrow::Cow<'static, [u8]>) -> Bytes {
    if let Some(done) = GZIPPED.lock().unwrap_or_else(|e| e.into_inner()).get(path) {
        return done.clone();
    }
    let made = Bytes::from(tokio::task::spawn_blocking(move || gzip(&data)).await.unwrap_or_default());
    GZIPPED.lock().unwrap_or_else(|e| e.into_inner()).insert(path.to_owned(), made.clone());
    made
}

fn gzip(data: &[u8]) -> Vec<u8> {
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    encoder.write_all(data).and_then(|_| encoder.finish()).unwrap_or_default()
}

/// Compresses every asset in the background, so that no first visitor waits for it (the
/// binary's `serve` calls it; tests pay for what they load).
pub fn warm() {
    let Ok(runtime) = tokio::runtime::Handle::try_current() else { return };
    runtime.spawn(async {
        for path in Build::iter() {
            if let Some(file) = Build::get(&path).filter(|f| compressible(&path, f.data.len())) {
                gzipped(&path, file.data).await;
            }
        }
    });
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

/// GraphiQL 3's single-file build (React 18's UMD files and GraphiQL's own), each pinned to the
/// exact bytes its npm package holds: unpkg serves them as published, and the browser refuses
/// any other.
const CDN_FALLBACK: &str = r#"<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <title>vps-graph</title>
  <style>body{margin:0;height:100vh;display:flex;flex-direction:column}#graphiql{flex:1}
  .note{font:14px sans-serif;padding:6px 12px;background:#fff3cd}</style>
  <link rel="stylesheet" href="https://unpkg.com/graphiql@3.8.3/graphiql.min.css"
    integrity="sha384-Mq3vbRBY71jfjQAt/DcjxUIYY33ksal4cgdRt9U/hNPvHBCaT2JfJ/PTRiPKf0aM" crossorigin="anonymous">
  <script src="https://unpkg.com/react@18.3.1/umd/react.production.min.js"
    integrity="sha384-DGyLxAyjq0f9SPpVevD6IgztCFlnMF6oW/XQGmfe+IsZ8TqEiDrcHkMLKI6fiB/Z" crossorigin="anonymous"></script>
  <script src="https://unpkg.com/react-dom@18.3.1/umd/react-dom.production.min.js"
    integrity="sha384-gTGxhz21lVGYNMcdJOyq01Edg0jhn/c22nsx0kyqP0TxaV5WVdsSH1fSDUf5YJj1" crossorigin="anonymous"></script>
  <script src="https://unpkg.com/graphiql@3.8.3/graphiql.min.js"
    integrity="sha384-HbRVEFG0JGJZeAHCJ9Xm2+tpknBQ7QZmNlO/DgZtkZ0aJSypT96YYGRNod99l9Ie" crossorigin="anonymous"></script>
</head>
<body>
  <div class="note">This GraphiQL loads from a CDN because the binary was built without Node.js.
  Install Node.js and rebuild for the offline build.</div>
  <div id="graphiql">Loading…</div>
  <script src="/graphiql-fallback.js"></script>
</body>
</html>
"#;

const FALLBACK_SCRIPT: &str = "const fetcher = GraphiQL.createFetcher({ url: '/graphql' });
ReactDOM.createRoot(document.getElementById('graphiql')).render(React.createElement(GraphiQL, { fetcher }));
";

const NO_DASHBOARD: &str = "<!doctype html><html lang=\"en\"><meta charset=\"utf-8\"><title>vps-graph</title>\
<p>The dashboard is built with Node.js when the binary is: install Node.js (with npm) and rebuild.\
 GraphiQL is at <a href=\"/\">/</a>.</p></html>\n";

#[cfg(test)]
mod tests {
    use axum::http::{HeaderMap, HeaderValue, header};

    use super::{accepts_gzip, compressible, gzip};

    fn asking(value: &str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(header::ACCEPT_ENCODING, HeaderValue::from_str(value).unwrap());
        headers
    }

    #[test]
    fn gzip_is_sent_to_who_takes_it() {
        assert!(accepts_gzip(&asking("gzip, deflate, br, zstd")));
        assert!(accepts_gzip(&asking("br;q=1.0, GZIP;q=0.5")));
        assert!(accepts_gzip(&asking("*")));
        assert!(!accepts_gzip(&asking("gzip;q=0, br")));
        assert!(!accepts_gzip(&asking("identity")));
        assert!(!accepts_gzip(&HeaderMap::new()));
        assert!(compressible("assets/index-abc.js", 5_000) && !compressible("assets/a.png", 5_000));
        assert!(!compressible("assets/tiny.css", 100));
    }

    #[test]
    fn what_is_gzipped_reads_back_the_same() {
        let text = "const editor = 'monaco';\n".repeat(1000);
        let packed = gzip(text.as_bytes());
        assert!(packed.len() * 10 < text.len(), "{} of {}", packed.len(), text.len());
        let mut unpacked = String::new();
        std::io::Read::read_to_string(&mut flate2::read::GzDecoder::new(&packed[..]), &mut unpacked).unwrap();
        assert_eq!(unpacked, text);
    }
}
