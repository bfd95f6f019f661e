//! Builds the GraphiQL page and the dashboard in `playground/` into `$OUT_DIR/playground`, which
//! the binary embeds with rust-embed. Node.js is optional: without it (or when
//! the build fails) the folder stays empty, `cargo build` still succeeds with a
//! warning, and the server serves a GraphiQL page that loads from a CDN.
//! Set VPS_GRAPH_SKIP_PLAYGROUND to skip the step entirely.

use std::env;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

const NPM: &str = if cfg!(windows) { "npm.cmd" } else { "npm" };

fn main() {
    for input in [
        "playground/package.json",
        "playground/package-lock.json",
        "playground/index.html",
        "playground/dashboard.html",
        "playground/vite.config.js",
        "playground/src",
    ] {
        println!("cargo:rerun-if-changed={input}");
    }
    println!("cargo:rerun-if-env-changed=VPS_GRAPH_SKIP_PLAYGROUND");

    let out = PathBuf::from(env::var_os("OUT_DIR").expect("cargo sets OUT_DIR")).join("playground");
    // Start from an empty folder on every run: rust-embed needs it to exist,
    // and an earlier build must not be served when this one did not happen.
    reset(&out);
    if env::var_os("VPS_GRAPH_SKIP_PLAYGROUND").is_some() {
        return;
    }

    let dir =
        PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR")).join("playground");
    if let Err(why) = build(&dir, &out) {
        reset(&out);
        println!("cargo:warning=GraphiQL will load from a CDN: the offline page was not built.");
        for line in why.lines() {
            println!("cargo:warning={line}");
        }
    }
}

fn reset(out: &Path) {
    let _ = fs::remove_dir_all(out);
    fs::create_dir_all(out).expect("cannot create $OUT_DIR/playground");
}

fn build(dir: &Path, out: &Path) -> Result<(), String> {
    if !Command::new(NPM).arg("--version").output().is_ok_and(|o| o.status.success()) {
        return Err("npm was not found: install Node.js (with npm) and rebuild to embed it.".into());
    }
    // npm ci wipes and reinstalls node_modules, so only run it when the
    // installed tree is older than the lockfile (or missing).
    let modified = |path: PathBuf| fs::metadata(path).and_then(|m| m.modified()).ok();
    let installed = modified(dir.join("node_modules/.package-lock.json"));
    if installed.is_none() || installed < modified(dir.join("package-lock.json")) {
        run(Command::new(NPM).args(["ci", "--no-audit", "--no-fund"]).current_dir(dir))?;
    }
    run(Command::new(NPM).args(["run", "build"]).current_dir(dir).env("PLAYGROUND_OUT_DIR", out))
}

/// Runs an npm command; on failure returns the end of what it printed.
fn run(cmd: &mut Command) -> Result<(), String> {
    let what = cmd.get_args().map(|a| a.to_string_lossy()).collect::<Vec<_>>().join(" ");
    let output = cmd.env("NO_COLOR", "1").output().map_err(|e| format!("`npm {what}`: {e}"))?;
    if output.status.success() {
        return Ok(());
    }
    let text = if output.stderr.is_empty() { &output.stdout } else { &output.stderr };
    let text = strip_ansi(&String::from_utf8_lossy(text));
    // JavaScript stack frames say nothing useful to someone running cargo.
    let is_noise = |line: &str| {
        let line = line.strip_prefix("npm error").unwrap_or(line).trim();
        line.is_empty() || line.starts_with("at ")
    };
    let lines: Vec<&str> = text.lines().filter(|l| !is_noise(l)).collect();
    let tail = lines[lines.len().saturating_sub(15)..].join("\n");
    Err(format!("`npm {what}` failed ({}):\n{tail}", output.status))
}

/// Drops terminal colour codes (ESC [ ... letter), which some tools print
/// even with NO_COLOR set.
fn strip_ansi(text: &str) -> String {
    let mut plain = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c == '\x1b' {
            chars.by_ref().find(|c| c.is_ascii_alphabetic());
        } else {
            plain.push(c);
        }
    }
    plain
}
