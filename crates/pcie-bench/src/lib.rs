//! The pcie-bench methodology: test kinds and parameters, suites, statistics, result files, and
//! the `Backend` interface with the simulator and external-program backends, and the host-side
//! services real devices need.

pub mod backend;
pub mod exec;
pub mod gpu;
pub mod host;
pub mod params;
pub mod results;
pub mod runner;
pub mod sim_backend;
pub mod stats;
pub mod suite;

pub use backend::{Backend, BackendError, BackendInfo, BandwidthTotals, LatencySamples, Outcome};
pub use exec::{ExecBackend, ExecOptions, ProgramLog};
pub use gpu::{CudaBackend, CudaOptions, Engine};
pub use params::{
    check_count, check_tags, CacheState, Iommu, Numa, ParamError, Pattern, TestKind, TestParams, BUFFER_BYTES,
    MAX_BANDWIDTH_COUNT, MAX_LATENCY_SAMPLES,
};
pub use results::{
    read_raw, rfc3339, BandwidthRow, CdfSection, HostInfo, LatencyRow, RawSample, ResultData, ResultFile, ResultsError,
    RowKey, RunData, RunInfo, RunWriter,
};
pub use runner::{run_tests, Finished, RunEvent};
pub use sim_backend::{test_seed, workload, SimBackend};
pub use stats::{ks_distance, BandwidthStats, CdfPoint, LatencyStats, Measurement, SortedLatencies, Summary};
pub use suite::{parse_bytes, Axis, Group, OffsetSweep, Suite, SuiteError, MAX_SUITE_TESTS};
