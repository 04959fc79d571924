//! A deterministic simulator of PCIe hosts, links and devices, in two machines:
//!
//! - [`testbed`]: pcie-bench's test bed, a host (root complex, IOMMU, LLC with DDIO, DRAM, NUMA
//!   hops, uncore power states) joined by a link to a DMA device (descriptor-driven engines or a
//!   direct command path). [`Simulator::run`] runs one latency or bandwidth test.
//! - [`pmu_host`]: a whole host seen by its root ports' PCIe PMUs (storage and NIC workloads,
//!   per-port counters the kernel drivers would read), behind `pcie-pmu`'s simulated source.
//!
//! Time is integer picoseconds ([`time`]), resources are first-come-first-served servers
//! ([`queue`]), randomness comes from a seeded generator ([`Rng`]), and every number is produced
//! by a mechanism whose parameters live in a profile (TOML data with the source of every value,
//! checked on load: [`ProfileError`] names file, key and range). One simulation is
//! single-threaded; parallelism is across independent simulations.
//!
//! ```
//! use pcie_sim::{CachePrep, TestOp, Simulator, Workload};
//! let sim = Simulator::load("e5-2637v3", "nfp6000").unwrap();
//! let w = Workload { op: TestOp::LatRead, size: 64, window: 8192, host_offset: 0, device_offset: 0,
//!     random: true, prep: CachePrep::HostWarm, count: 1000, remote_memory: false,
//!     remote_cpu: false, iommu_page: None };
//! assert!(matches!(sim.run(&w, 1), pcie_sim::Measured::Latency { .. }));
//! ```

mod distribution;
pub mod pmu_host;
mod profile_file;
mod queue;
mod rng;
pub mod testbed;
mod time;

pub use profile_file::ProfileError;
pub use rng::{mix_seed, Rng};
pub use testbed::{
    builtin_devices, builtin_hosts, Addresses, CachePrep, DeviceProfile, HostProfile, Measured, Simulator, TestOp,
    Workload, BUFFER_BYTES, MAX_TRANSACTIONS,
};
