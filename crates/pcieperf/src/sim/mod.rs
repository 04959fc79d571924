//! `pcieperf sim ...`: the simulator fitted to the user's host.

mod fit;

use crate::error::CliError;
use clap::Subcommand;

#[derive(Debug, Subcommand)]
pub enum SimCmd {
    /// Fit a host profile to measured result directories (pcie-bench's or pcieperf's)
    Fit(Box<fit::FitArgs>),
}

pub fn run(cmd: &SimCmd) -> Result<String, CliError> {
    match cmd {
        SimCmd::Fit(a) => fit::run(a),
    }
}
