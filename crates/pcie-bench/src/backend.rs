//! The interface between the methodology and whatever runs the DMAs: the simulator, or an
//! external program driving a real device.

use crate::params::TestParams;
use std::fmt;

/// Latency samples as the device's timestamp counter saw them.
#[derive(Debug, Clone, PartialEq)]
pub struct LatencySamples {
    /// One entry per transaction, in device clock cycles, in issue order.
    pub cycles: Vec<u32>,
    /// Length of one cycle in picoseconds (NFP-6000: 833.33 ps at 1.2 GHz; an external
    /// program reporting nanoseconds uses 1000).
    pub cycle_ps: f64,
    /// Cycles of the whole measurement loop, lookups and overheads included (pcie-bench's
    /// TAvg is this divided by the sample count).
    pub total_cycles: u64,
}

/// Totals of a bandwidth test.
#[derive(Debug, Clone, PartialEq)]
pub struct BandwidthTotals {
    /// Payload bytes moved per direction (for BW_RDWR: of one direction).
    pub bytes: u64,
    /// Transactions counted (for BW_RDWR: half of all DMAs, as pcie-bench counts).
    pub transactions: u64,
    pub time_cycles: u64,
    pub cycle_ps: f64,
}

/// What a test produced.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    Latency(LatencySamples),
    Bandwidth(BandwidthTotals),
}

/// Describes a backend for `run.json`.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct BackendInfo {
    /// As given on the command line, e.g. `sim:e5-2637v3,nfp6000`.
    pub name: String,
    /// Free-form description: profiles and their sources, or the device program.
    pub description: serde_json::Value,
    /// Largest DMA transfer the device supports.
    pub max_transfer: u32,
}

/// A backend failure, always naming the test that caused it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BackendError {
    pub test: String,
    pub message: String,
}

impl fmt::Display for BackendError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.test, self.message)
    }
}

impl std::error::Error for BackendError {}

/// Runs tests. Implementations must be deterministic for a given `seed`, and safe to call from
/// several threads at once (independent tests run in parallel).
pub trait Backend: Sync {
    fn info(&self) -> BackendInfo;
    /// The link configuration, when the backend knows it (for `run.json` and the report's model).
    fn link(&self) -> Option<serde_json::Value> {
        None
    }
    /// Why this backend does not run `test` (a GPU's copy engines run no latency tests), or
    /// `None` when it does. A suite's tests it does not run are left out with the reason, not
    /// failed; the reason does not name the test's kind (the plan lists kinds per reason).
    fn leaves_out(&self, _test: &TestParams) -> Option<String> {
        None
    }
    /// The built-in suite `bench run` runs when none is named: `quick`, or one made for the
    /// device (a GPU's threads measure bandwidth only in larger windows: `gpu`).
    fn default_suite(&self) -> &'static str {
        "quick"
    }
    /// Called once when a run's tests are done, before `run.json` is completed: a backend may
    /// read its device's state again (a GPU its link), which `info` then reports.
    fn finish(&self) {}
    fn run(&self, test: &TestParams, seed: u64) -> Result<Outcome, BackendError>;
}
