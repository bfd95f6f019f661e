use std::time::Duration;

use clap::Parser;
use tracing_subscriber::EnvFilter;
use vps_graph::app::{App, AppConfig};
use vps_graph::cli::{Cli, Command};
use vps_graph::config::{LogFormat, ServeArgs};

// A list page makes and frees tens of thousands of small values (rows, views, GraphQL values);
// glibc's malloc and free took a quarter of the server's CPU on it. Built without transparent
// huge pages (`no_thp`): with them, each 2 MiB page it touched held an idle server's memory (14 MiB
// of its 39 MiB).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[tokio::main]
async fn main() -> std::process::ExitCode {
    vps_graph::init_crypto();
    let cli = Cli::parse();
    let outcome = match cli.command {
        None => serve(cli.serve).await,
        Some(Command::Serve(args)) => serve(args).await,
        Some(Command::Migrate(args)) => migrate(args).await,
        Some(Command::Bench(args)) => vps_graph::bench::run(args).await,
        Some(Command::Sim(args)) => sim(args).await,
        Some(Command::Schema) => {
            print!("{}", vps_graph::graphql::sdl());
            Ok(())
        }
    };
    match outcome {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("vps-graph: {message}");
            std::process::ExitCode::FAILURE
        }
    }
}

fn init_logs(format: LogFormat) {
    let filter = EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| EnvFilter::new("info,sqlx=warn,sea_orm=warn,tower_http=warn"));
    let builder = tracing_subscriber::fmt().with_env_filter(filter);
    match format {
        LogFormat::Pretty => builder.init(),
        LogFormat::Json => builder.json().init(),
    }
}

async fn migrate(args: vps_graph::config::DatabaseArgs) -> Result<(), String> {
    init_logs(LogFormat::Pretty);
    vps_graph::store::connect(&args.database_url, args.db_max_connections).await.map_err(|e| e.describe())?;
    tracing::info!("migrations applied");
    Ok(())
}

async fn sim(args: vps_graph::config::SimArgs) -> Result<(), String> {
    init_logs(LogFormat::Pretty);
    let listener = tokio::net::TcpListener::bind(args.listen)
        .await
        .map_err(|e| format!("cannot listen on {}: {e}", args.listen))?;
    tracing::info!(address = %args.listen, "simulated DigitalOcean at http://{}/v2 , control at /_sim", args.listen);
    vps_graph::sim::Sim::new(args.timing.config()).serve(listener).await.map_err(|e| e.to_string())
}

async fn serve(args: ServeArgs) -> Result<(), String> {
    init_logs(args.log_format);
    let app = App::start(AppConfig::from(&args)).await.map_err(|e| e.describe())?;
    let listener = tokio::net::TcpListener::bind(args.listen)
        .await
        .map_err(|e| format!("cannot listen on {}: {e}", args.listen))?;
    if let Some(first) = &app.first_start {
        println!("\nFirst start: demo tenant `demo` with a project, a DigitalOcean pool and quotas.");
        println!("These tokens are shown once and stored only as hashes:");
        println!("  operator token: {}", first.operator_token);
        println!("  tenant token:   {}  (compute:* on tenant/demo)\n", first.tenant_token);
    }
    vps_graph::http::playground::warm();
    tracing::info!(address = %args.listen, "GraphiQL at http://{}/ , GraphQL at /graphql", args.listen);
    let stop = app.stop.clone();
    tokio::spawn(shutdown_signal(stop.clone()));
    // Open connections are given ten seconds to finish once stopped.
    vps_graph::http::serve(listener, app.router(), args.load, stop).await.map_err(|e| e.to_string())?;
    app.shutdown(Duration::from_secs(30)).await;
    tracing::info!("stopped");
    Ok(())
}

async fn shutdown_signal(stop: tokio_util::sync::CancellationToken) {
    let ctrl_c = tokio::signal::ctrl_c();
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).expect("SIGTERM handler");
    tokio::select! {
        _ = ctrl_c => {}
        _ = term.recv() => {}
    }
    tracing::info!("shutting down");
    stop.cancel();
}
