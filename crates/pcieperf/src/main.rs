//! pcieperf: PCIe performance on end hosts. The only crate that knows about the terminal.

mod bench;
mod error;
mod model;
mod output;
mod pmu;
mod shell;
mod signals;
mod sim;

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
    /// Print a shell completion script (bash, zsh or fish) on stdout
    Completions(shell::CompletionsArgs),
    /// Print the man page (roff) of pcieperf or of one of its commands on stdout
    Man(shell::ManArgs),
}

fn run(cli: &Cli) -> Result<String, CliError> {
    match &cli.command {
        Command::Model(cmd) => model::run(cmd),
        Command::Bench(cmd) => bench::run(cmd),
        Command::Pmu(cmd) => pmu::run(cmd),
        Command::Sim(cmd) => sim::run(cmd),
        Command::Completions(args) => shell::completions(args),
        Command::Man(args) => shell::man(args),
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(&cli) {
        Ok(text) => {
            // A closed pipe (e.g. `| head`) is not an error worth reporting. An output file on
            // standard output (`-o -`) keeps it to itself: the text goes to stderr then.
            let _ = if pcie_output::stdout_taken() {
                std::io::stderr().lock().write_all(text.as_bytes())
            } else {
                let mut stdout = std::io::stdout().lock();
                stdout.write_all(text.as_bytes()).and_then(|_| stdout.flush())
            };
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(e.exit_code() as u8)
        }
    }
}
