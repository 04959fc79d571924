//! pcieperf: PCIe performance on end hosts. The only crate that knows about the terminal.

mod bench;
mod check;
mod check_gpus;
mod error;
mod host_selection;
mod model;
mod output;
mod pmu;
mod shell;
mod signals;
mod sim;
mod snapshot;

use clap::{Parser, Subcommand};
use error::CliError;
use std::io::Write;
use std::process::ExitCode;

#[derive(Debug, Parser)]
#[command(
    name = "pcieperf",
    version = env!("PCIEPERF_VERSION"),
    about = "PCIe performance on end hosts: link model, DMA benchmarks, PMU monitoring"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// What a PCIe link can carry (analytical model)
    #[command(subcommand)]
    Model(model::ModelCmd),
    /// pcie-bench DMA latency and bandwidth tests, on the simulator or a device
    #[command(subcommand)]
    Bench(bench::BenchCmd),
    /// PCIe PMUs on Linux: discovery, root ports, events and metrics
    #[command(subcommand)]
    Pmu(pmu::PmuCmd),
    /// The simulator of your own host: a host profile fitted to your measurements
    #[command(subcommand)]
    Sim(sim::SimCmd),
    /// Is every PCIe link healthy, and what does each problem cost in Gb/s (exit 3: findings
    /// at warning or above)
    Check(check::CheckArgs),
    /// Copy the sysfs/procfs files pcieperf reads into a new directory, for --sysfs DIR
    Snapshot(snapshot::SnapshotArgs),
    /// Print a shell completion script (bash, zsh or fish) on stdout
    Completions(shell::CompletionsArgs),
    /// Print the man page (roff) of pcieperf or of one of its commands on stdout
    Man(shell::ManArgs),
}

/// The text to print and the exit status (0, or 3 from `check`).
fn run(cli: &Cli) -> Result<(String, u8), CliError> {
    let done = |text: String| (text, 0);
    match &cli.command {
        Command::Model(cmd) => model::run(cmd).map(done),
        Command::Bench(cmd) => bench::run(cmd).map(done),
        Command::Pmu(cmd) => pmu::run(cmd).map(done),
        Command::Sim(cmd) => sim::run(cmd).map(done),
        Command::Check(args) => check::run(args),
        Command::Snapshot(args) => snapshot::run(args).map(done),
        Command::Completions(args) => shell::completions(args).map(done),
        Command::Man(args) => shell::man(args).map(done),
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(&cli) {
        Ok((text, status)) => {
            // A closed pipe (e.g. `| head`) is not an error worth reporting. An output file on
            // standard output (`-o -`) keeps it to itself: the text goes to stderr then.
            let _ = if pcie_output::stdout_taken() {
                std::io::stderr().lock().write_all(text.as_bytes())
            } else {
                let mut stdout = std::io::stdout().lock();
                stdout.write_all(text.as_bytes()).and_then(|_| stdout.flush())
            };
            ExitCode::from(status)
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(e.exit_code() as u8)
        }
    }
}
