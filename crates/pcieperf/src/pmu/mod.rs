//! `pcieperf pmu ...`: PCIe PMUs on Linux: discovery (`list`), counting (`stat`) and the
//! accuracy check against a storage workload (`validate`), on this host or a simulated one.

mod list;
pub mod source;
mod stat;
mod validate;

use crate::error::CliError;
use clap::Subcommand;
use pcie_pmu::PmuError;

#[derive(Debug, Subcommand)]
pub enum PmuCmd {
    /// PCIe PMUs with their root ports, devices, events and metrics
    List(list::ListArgs),
    /// Count events like `perf stat -a`: multiplexing share, bytes and Gb/s for payload events
    Stat(stat::StatArgs),
    /// PMU payload bytes against a storage workload's own byte count (fio, or simulated)
    Validate(Box<validate::ValidateArgs>),
}

pub fn run(cmd: &PmuCmd) -> Result<String, CliError> {
    match cmd {
        PmuCmd::List(a) => list::run(a),
        PmuCmd::Stat(a) => stat::run(a),
        PmuCmd::Validate(a) => validate::run(a),
    }
}

/// Input problems (a root that is not sysfs, unknown PMU or event, missing `lane=`) are usage
/// errors; an unreadable or corrupt sysfs file is a runtime failure.
impl From<PmuError> for CliError {
    fn from(e: PmuError) -> Self {
        if e.is_input() {
            CliError::Usage(e.to_string())
        } else {
            CliError::Runtime(e.to_string())
        }
    }
}
