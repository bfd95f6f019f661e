//! The command line: the subcommands and the flags each takes (those live in `config`, the
//! benchmark's in `bench`), so that neither of them depends on the other.
use clap::{Parser, Subcommand};

use crate::bench::BenchArgs;
use crate::config::{DatabaseArgs, ServeArgs, SimArgs};

#[derive(Parser, Debug)]
#[command(
    name = "vps-graph",
    version,
    about = "Control plane for volumes, snapshots, addresses and filesystems on tenant cloud accounts"
)]
#[command(args_conflicts_with_subcommands = true)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,
    #[command(flatten)]
    pub serve: ServeArgs,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Run the service (the default).
    Serve(ServeArgs),
    /// Apply pending database migrations and exit.
    Migrate(DatabaseArgs),
    /// Print the GraphQL schema (SDL).
    Schema,
    /// Measure throughput, latency and memory against this binary as a server, and print the figures.
    Bench(BenchArgs),
    /// Run the simulated cloud alone (DigitalOcean-shaped API at /v2, control at /_sim).
    Sim(SimArgs),
}
