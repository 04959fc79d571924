//! `pcieperf pmu ...`: PCIe PMUs on Linux or a simulated host: discovery (`list`), counting
//! (`stat`), the live commands on the same sampling core (`top`, `record`, `serve`) and the
//! accuracy check against a storage workload (`validate`).

mod list;
pub(crate) mod live_options;
mod record;
mod rows;
mod serve;
mod stat;
mod top;
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
    /// Record interval rows to a CSV / JSON-lines file, with optional Gb/s-over-time charts
    Record(record::RecordArgs),
    /// Live view per root port: Rx/Tx Gb/s, share of the link's model bandwidth, sparkline
    Top(top::TopArgs),
    /// Prometheus /metrics and a small live page on 127.0.0.1:9464
    Serve(serve::ServeArgs),
    /// PMU payload bytes against a storage workload's own byte count (fio, or simulated)
    Validate(Box<validate::ValidateArgs>),
}

pub fn run(cmd: &PmuCmd) -> Result<String, CliError> {
    match cmd {
        PmuCmd::List(a) => list::run(a),
        PmuCmd::Stat(a) => stat::run(a),
        PmuCmd::Record(a) => record::run(a),
        PmuCmd::Top(a) => top::run(a),
        PmuCmd::Serve(a) => serve::run(a),
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
