//! What `check` returns: one record per PCI function (its path of links, settings, power and
//! error state) and the findings, worst first. Serialised as the JSON contract of
//! `pcieperf check --format json`.

use crate::finding::{Finding, Severity};
use pcie_sysfs::Bdf;
use serde::Serialize;

/// One end of a link as one function's files and registers show it. Speeds in GT/s, widths in
/// lanes; `None` where the function does not say or says nothing readable (the reason is in
/// the function's `cannot_tell`).
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub struct LinkEnd {
    pub bdf: Option<Bdf>,
    pub current_gts: Option<f64>,
    pub current_width: Option<u32>,
    pub max_gts: Option<f64>,
    pub max_width: Option<u32>,
    /// Link Control 2's Target Link Speed, where config space shows it: on a port, the rate
    /// its link may train to at most.
    pub target_gts: Option<f64>,
}

/// A link between a port (`upstream`: a root port or a switch's downstream port) and the
/// function below it (`downstream`: a switch's upstream port or the device), both ends as each
/// reports it, and what the link runs at and could run at (the lower of the two ends).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Hop {
    /// The hop's name in findings: its downstream function.
    pub bdf: Bdf,
    /// `its own link`, `the switch's upstream link`, `a link above it`.
    pub role: String,
    pub upstream: LinkEnd,
    pub downstream: LinkEnd,
    pub current_gts: Option<f64>,
    pub current_width: Option<u32>,
    /// The speed the link can reach: what both ends support (LnkCap, or LnkCap2's speeds), and
    /// no more than the port's Target Link Speed.
    pub capable_gts: Option<f64>,
    pub capable_width: Option<u32>,
    /// What both ends support, where the port's Target Link Speed holds the link below it (a
    /// setting: `capable_gts` is the target then); `None` where nothing caps it.
    pub supported_gts: Option<f64>,
    /// The model's 4 KiB DMA write bandwidth at the current and the capable rate and width.
    pub available_gbps: Option<f64>,
    pub capable_gbps: Option<f64>,
}

/// The tag sizes a function uses and could use (5, 8 or 10 bits).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Tags {
    pub enabled_bits: u32,
    pub possible_bits: u32,
}

/// AER counts: totals since boot per class, each type's count, and with sampling each
/// type's peak rate over an interval (per second).
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub struct AerState {
    pub correctable: Option<u64>,
    pub nonfatal: Option<u64>,
    pub fatal: Option<u64>,
    /// Root ports: errors reported to them from below (correctable, non-fatal, fatal).
    pub rootport_correctable: Option<u64>,
    pub rootport_nonfatal: Option<u64>,
    pub rootport_fatal: Option<u64>,
    /// `(type, count)` over all three files, e.g. `("BadDLLP", 212)`.
    pub by_type: Vec<(String, u64)>,
    /// `(type, per second)`: the highest rate over one sampling interval.
    pub rates: Vec<(String, f64)>,
    /// The error types the AER status registers show set (sticky, since they were last
    /// cleared), correctable then uncorrectable; empty where config space does not show them.
    pub status_correctable: Vec<&'static str>,
    pub status_uncorrectable: Vec<&'static str>,
}

/// What a function's block devices and network interfaces moved.
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub struct Traffic {
    /// The devices below the function (`nvme0n1`, `eth0`).
    pub devices: Vec<String>,
    /// Bytes since they appeared, at the end of the check: written into host memory by the
    /// device (block reads, received bytes) and read from it (block writes, sent bytes).
    pub upstream_bytes: u64,
    pub downstream_bytes: u64,
    /// With sampling: payload Gb/s over the whole time and at its busiest interval, by direction.
    pub upstream_gbps: Option<f64>,
    pub upstream_peak_gbps: Option<f64>,
    pub downstream_gbps: Option<f64>,
    pub downstream_peak_gbps: Option<f64>,
    /// What the model gives 4 KiB DMA writes (upstream) and reads (downstream) through the
    /// path as it runs, at the function's MPS, MRRS and tags (256, 512 and 8-bit where config
    /// space is unreadable).
    pub upstream_capacity_gbps: Option<f64>,
    pub downstream_capacity_gbps: Option<f64>,
}

/// One PCI function and the link-health facts about it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FunctionHealth {
    pub bdf: Bdf,
    /// `10de:2330`.
    pub id: Option<String>,
    /// `030200`.
    pub class: Option<String>,
    pub driver: Option<String>,
    pub port_type: Option<String>,
    /// Bridges (root ports, switch ports) are not checked as devices; their links are hops.
    pub is_bridge: bool,
    pub numa_node: Option<u32>,
    pub local_cpus: Option<String>,
    pub power_state: Option<String>,
    pub runtime_status: Option<String>,
    /// Its IOMMU group's type (`DMA`, `DMA-FQ`: translated; `identity`; `None`: no group).
    pub iommu_group_type: Option<String>,
    /// The function's own link files (`None`: it has none).
    pub link: Option<LinkEnd>,
    /// From the root port down to this function; empty when no link leads to it.
    pub path: Vec<Hop>,
    /// The hop that limits the path (the lowest available bandwidth).
    pub limited_by: Option<Bdf>,
    /// The model's 4 KiB DMA write bandwidth through the path now and with every hop at its
    /// capability.
    pub available_gbps: Option<f64>,
    pub capable_gbps: Option<f64>,
    /// What the device can use, Gb/s each way, where known (its network interfaces' line
    /// rate, its SATA links, its USB root hubs, its class: [`crate::Demand`]): findings are
    /// priced against the lesser of this and what the path carries.
    pub demand_gbps: Option<f64>,
    /// The same with its source and basis.
    pub demand: Option<crate::Demand>,
    pub mps: Option<u32>,
    pub mps_supported: Option<u32>,
    /// The largest MPS the function, every hop above it and every device below its root port
    /// support (a hierarchy runs the smallest MPS any device in it supports).
    pub path_mps: Option<u32>,
    pub mrrs: Option<u32>,
    pub tags: Option<Tags>,
    /// ASPM enabled on the function's own link (`L1`, `L0s L1`, `off`).
    pub aspm: Option<String>,
    pub has_aer: Option<bool>,
    pub aer: AerState,
    /// What its block devices and network interfaces moved; `None` where it has none.
    pub traffic: Option<Traffic>,
    /// Values that mean nothing: `"current_link_speed \"fast\": cannot tell"`.
    pub cannot_tell: Vec<String>,
    /// Checks not done for this function, each with its reason.
    pub skipped: Vec<String>,
    /// Endpoints: whether their AtomicOps reach the root complex, and which port stops them.
    pub atomics: Option<AtomicsRoute>,
}

/// Checks skipped on several functions for one reason.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Skipped {
    pub checks: Vec<String>,
    pub reason: String,
    pub functions: Vec<Bdf>,
}

/// The whole answer of `check`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Report {
    pub functions: Vec<FunctionHealth>,
    /// Worst first: severity, then `lost_pct`, then address.
    pub findings: Vec<Finding>,
    pub skipped: Vec<Skipped>,
    /// The kernel's ASPM policy (`default`, `performance`, `powersave`, `powersupersave`).
    pub aspm_policy: Option<String>,
    pub numa_nodes: Vec<u32>,
    /// How many functions have a PCIe link; 0 means there is no link to check.
    pub links: usize,
    /// Seconds the AER counters were sampled over (`None`: totals only).
    pub sampled_seconds: Option<f64>,
    /// Each pair of GPUs, NICs and NVMe drives below one switch, and how they talk peer to peer.
    pub p2p: Vec<P2pPair>,
    /// Watched (`-I`): the links whose speed or width changed, and how often.
    pub link_changes: Vec<LinkChanges>,
    /// With `--wake`: what load did to each woken device's links.
    pub wake: Vec<Wake>,
    /// NVIDIA GPUs as NVML reports them (with [`crate::Options::nvml`] on a host with NVML).
    pub gpus: Vec<crate::GpuHealth>,
    /// Why NVML could not list the GPUs, when it is there and failed.
    pub nvml: Option<String>,
}

impl Report {
    /// The worst severity found, `None` without findings.
    pub fn worst(&self) -> Option<Severity> {
        self.findings.iter().map(|f| f.severity).max()
    }

    /// True when something is at warning or above (`check` exits 3).
    pub fn needs_attention(&self) -> bool {
        self.worst() >= Some(Severity::Warning)
    }
}

/// Where a device's AtomicOps go (JSON: each function's `atomics`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AtomicsRoute {
    /// Whether they reach the root complex; `None`: cannot tell (config space unread, a
    /// port's registers unknown, or the port above is not in the tree, as on a virtual machine).
    pub reach_root: Option<bool>,
    /// The port that stops them (or whose registers are unknown), and why.
    pub port: Option<Bdf>,
    pub reason: Option<String>,
    /// The device's own AtomicOp Requester Enable (Device Control 2 bit 6): on where a driver
    /// enabled them after the walk succeeded.
    pub requester_enabled: Option<bool>,
}

/// One pair of devices below one switch (JSON: the report's `p2p`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct P2pPair {
    pub a: Bdf,
    pub b: Bdf,
    /// The switch's upstream port, below which both sit.
    pub switch: Bdf,
    /// `switch` (inside it), `root_complex` (ACS redirects requests up), `unknown` (the
    /// downstream ports' extended capabilities are unread: without root).
    pub route: &'static str,
    /// The downstream ports whose ACS P2P Request Redirect is enabled.
    pub redirected_by: Vec<Bdf>,
    /// The model's 4 KiB DMA write Gb/s each way with both ways at once: inside the switch
    /// (the slower of the two devices' links below it) and through the root complex (also half
    /// the upstream link, which carries both ways up and both ways down).
    pub switch_gbps: Option<f64>,
    pub root_complex_gbps: Option<f64>,
}

/// What one watched link did (JSON: the report's `link_changes`, links that changed only).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LinkChanges {
    /// The link's downstream function (the hop's name), and both ends as text.
    pub bdf: Bdf,
    pub link: String,
    pub readings: u32,
    pub changes: u32,
    pub per_minute: f64,
    /// The slowest and fastest (speed, width) read.
    pub lowest: (Option<f64>, Option<u32>),
    pub highest: (Option<f64>, Option<u32>),
    /// Drops in speed or width in an interval its devices moved [`crate::BUSY_DROP_GBPS`] or more.
    pub drops_while_busy: u32,
    /// The worst such drop, in words.
    pub busy_drop: Option<String>,
}

/// What load did to one device's path (JSON: the report's `wake`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Wake {
    pub bdf: Bdf,
    /// `cuda` (copies through the driver), `nvme` (direct reads), `none`.
    pub load: &'static str,
    /// What the load did, or why it did not run.
    pub done: Option<String>,
    pub error: Option<String>,
    /// The path's slowest link idle (as checked), at its best while loaded, and capable.
    pub idle_gts: Option<f64>,
    pub idle_width: Option<u32>,
    pub loaded_gts: Option<f64>,
    pub loaded_width: Option<u32>,
    pub capable_gts: Option<f64>,
    pub capable_width: Option<u32>,
    /// Whether every link of the path reached what its ends can do; `None`: not loaded.
    pub trains: Option<bool>,
    pub verdict: String,
}
