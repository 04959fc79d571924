//! The pcie-bench methodology. The core: test kinds and parameters ([`TestParams`], named by
//! [`TestParams::name`]), suites ([`Suite`], TOML data), the [`Backend`] interface, the runner
//! ([`run_tests`]) with each test's seed and the addresses it visits ([`test_seed`],
//! [`workload`]), statistics ([`LatencyStats`], [`BandwidthStats`], [`ks_distance`]), run
//! directories ([`RunWriter`], [`RunData`], `run.json` as [`RunInfo`] with a typed link and its
//! vocabulary, such as a GPU's [`Engine`]), how far one run is from another ([`compare()`],
//! [`ErrorStats`]), the chart set of a run ([`ChartSet`], drawn with `pcie-report`), and the
//! host-side services real devices need ([`host`]: DMA buffer, cache steps, IOMMU mode).
//!
//! Above the core, in this crate: the simulator backend ([`SimBackend`]) and the external-program
//! backend ([`ExecBackend`]; the device side of its protocol, [`exec::serve`] over an
//! [`exec::Device`], `pcieperf-refdev` serving [`exec::EmulatedDevice`]). The core imports
//! neither (`scripts/import-tree.py`'s layer rule). Also here: a suite planned for a backend
//! ([`suite::SuitePlan`], with each test's relative cost and the per-base summary `bench run`
//! prints).
//!
//! Left to others: the CUDA backend (pcie-gpu), the simulator fit (pcie-fit), opening a backend
//! from a `--backend` string (pcieperf), the simulator itself (pcie-sim) and the host's facts
//! recorded in `run.json` (pcie-sysfs).
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
pub mod verdict;

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
pub use verdict::{committed_runs, verdict, Verdict, Word};
