//! `pcieperf bench ...`: the pcie-bench methodology on the simulator or a real device.

mod progress;
mod run;

use crate::error::CliError;
use clap::Subcommand;

#[derive(Debug, Subcommand)]
pub enum BenchCmd {
    /// Run a suite or a single test and write a run directory
    Run(Box<run::RunArgs>),
}

pub fn run(cmd: &BenchCmd) -> Result<String, CliError> {
    match cmd {
        BenchCmd::Run(a) => run::run(a),
    }
}
