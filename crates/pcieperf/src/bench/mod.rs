//! `pcieperf bench ...`: the pcie-bench methodology on the simulator or a real device.

mod compare_tables;
mod open;
mod progress;
mod report;
mod run;
mod verdict;

use crate::error::CliError;
use clap::Subcommand;

#[derive(Debug, Subcommand)]
pub enum BenchCmd {
    /// Run a suite or a single test and write a run directory
    Run(Box<run::RunArgs>),
    /// Draw a run directory or a pcie-bench data directory: charts next to the model
    Report(report::ReportArgs),
}

pub fn run(cmd: &BenchCmd) -> Result<String, CliError> {
    match cmd {
        BenchCmd::Run(a) => run::run(a),
        BenchCmd::Report(a) => report::run(a),
    }
}
