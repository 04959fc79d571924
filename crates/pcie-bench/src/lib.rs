//! The pcie-bench methodology: test kinds and parameters ([`TestParams`]), suites ([`Suite`],
//! TOML data), the [`Backend`] interface with the simulator ([`SimBackend`]), external-program
//! ([`ExecBackend`]) and NVIDIA GPU ([`CudaBackend`]) backends, one opened from its spec and a
//! run's options ([`OpenOptions::open`]), the host-side services real devices need, statistics
//! ([`LatencyStats`], [`BandwidthStats`], [`ks_distance`]), run directories ([`RunWriter`], [`RunData`], `run.json` as [`RunInfo`] with a typed link),
//! how far one run is from another ([`compare`], [`ErrorStats`]) and the chart set of a run
//! ([`ChartSet`], drawn with `pcie-report`), and a simulated host fitted to measurements
//! ([`fit::fit`], `pcieperf sim fit`).
//!
//! Also here, for programs built on it: a suite planned for a backend ([`suite::SuitePlan`], with
//! each test's relative cost and the per-base summary `bench run` prints) and the device side
//! of the exec protocol ([`exec::serve`] over an [`exec::Device`]; `pcieperf-refdev` serves
//! [`exec::EmulatedDevice`]).
//!
//! ```no_run
//! use pcie_bench::{ChartSet, RunData};
//! use std::path::Path;
//!
//! // An original pcie-bench data directory and one of our runs load through the same reader.
//! let measured = RunData::load(Path::new("data/reference/pcie-bench/nfp6000-1.2GHz_hsw-Xeon-E5-2637v3_supermicro"))?;
//! let ours = RunData::load(Path::new("runs/paper"))?;
//! let set = ChartSet::new(&measured, &[ours]);
//! for g in &set.comparisons[0].summary {
//!     println!("{} {} {:?}: MAPE {:.1} %", g.file, g.test, g.metric, g.error.mape_pct);
//! }
//! pcie_output::write_file(Path::new("report.html"), set.to_html(vec![]).as_bytes())?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub mod backend;
pub mod charts;
pub mod compare;
pub mod exec;
pub mod host;
pub mod params;
pub mod results;
pub mod runner;
pub mod sim_backend;
pub mod stats;
pub mod suite;

pub use backend::{Backend, BackendError, BackendInfo, BandwidthTotals, LatencySamples, Outcome};
pub use charts::{run_letter, ChartSet, RunChart};
pub use compare::{compare, diff_pct, CdfDistance, Difference, ErrorStats, GroupError, Metric, RunComparison};
pub use exec::{ExecBackend, ExecOptions, ProgramLog};
pub use params::{
    check_count, check_tags, CacheState, Iommu, Numa, ParamError, Pattern, TestKind, TestParams, BUFFER_BYTES,
    MAX_BANDWIDTH_COUNT, MAX_LATENCY_SAMPLES,
};
pub use results::{
    read_raw, rfc3339, BandwidthRow, CdfSection, Engine, HostInfo, LatencyRow, RawSample, ResultData, ResultFile,
    ResultsError, RowKey, RunData, RunInfo, RunWriter, SM_MIN_WINDOW,
};
pub use runner::{run_tests, Finished, RunEvent};
pub use runner::{test_seed, workload};
pub use sim_backend::SimBackend;
pub use stats::{ks_distance, BandwidthStats, CdfPoint, LatencyStats, Measurement, SortedLatencies, Summary};
pub use suite::{parse_bytes, Group, OffsetSweep, Suite, SuiteError, SweepAxis, MAX_SUITE_TESTS};
