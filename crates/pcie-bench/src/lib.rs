//! The pcie-bench methodology: test kinds and parameters, suites, statistics, result files, and
//! the `Backend` interface with the simulator backend.

pub mod backend;
pub mod params;

pub use backend::{Backend, BackendError, BackendInfo, BandwidthTotals, LatencySamples, Outcome};
pub use params::{CacheState, Iommu, Numa, ParamError, Pattern, TestKind, TestParams, BUFFER_BYTES};
