//! Link health of a host's PCI tree: is every PCIe link as fast as its ends allow, are MPS,
//! MRRS and tags set as the path allows, is ASPM on, are errors counting up, does every device
//! have a NUMA node; and what each problem costs 4 KiB DMAs in Gb/s, from pcie-model.
//! `pcieperf check` prints it and the Prometheus exporter serves it; both only call [`check`].
//!
//! API (stable; other crates build on it):
//! - [`check`]`(root, &`[`Options`]`) -> Result<`[`Report`]`, `[`CheckError`]`>` reads the tree
//!   below `root` (`/` on a host, a snapshot or a simulated host's directory otherwise) through
//!   pcie-sysfs, never writing. With [`Options::sampling`] it watches the AER counters and the
//!   block devices' and network interfaces' byte counters for a while and reports rates.
//! - [`Report`]: `functions` ([`FunctionHealth`]: the path of [`Hop`]s from the root port, the
//!   limiting hop, available and capable Gb/s, MPS/MRRS/tags, ASPM, power, NUMA, [`AerState`],
//!   [`Traffic`]: the payload its block devices and interfaces counted, where no PMU counts it),
//!   `findings` (worst first), `skipped` (checks not done and why, e.g. without root),
//!   `links` (0: no PCIe link to check). [`Report::needs_attention`] is `check`'s exit 3.
//! - [`Finding`]: `severity` ([`Severity`]), `kind` ([`Kind`]), `bdf`, `limited_by`,
//!   `lost_pct` (the model's loss for 4 KiB DMAs in the direction it hurts), `message`,
//!   `demand` ([`Demand`]: what the device can use of its link, from its network interfaces'
//!   line rate, its SATA links, its USB root hubs or its class, with [`DemandSource`]), against
//!   which link, MPS, MRRS and tag findings are priced. Serialised with serde as the JSON contract:
//!   `{"functions": [...], "findings": [{"severity": "warning", "kind": "mps_below_path", ...}]}`.
//!
//! - Routing: each endpoint's [`AtomicsRoute`] (do its AtomicOps reach the root complex, which
//!   port stops them), `Report::p2p` ([`P2pPair`]: GPUs, NICs, NVMe below one switch, inside it
//!   or redirected by ACS through the root complex), and with sampling `Report::link_changes`
//!   ([`LinkChanges`]: links whose speed or width changed).
//! - [`wake`]`(root, &mut report, &`[`WakeOptions`]`)` puts slow-linked devices to work (NVMe:
//!   direct reads; GPUs: the [`GpuLoad`] the caller passes, as this crate loads no GPU driver)
//!   while re-reading their links, and tells power saving from a fault ([`Wake`]).
//! - [`gpu`]: with [`Options::nvml`], every NVIDIA GPU through NVML (pcie-nvml): its link as it
//!   sees it, replays (a [`Kind::GpuReplays`] finding above [`gpu::replay_limit_per_s`]) and
//!   PCIe bytes, in [`Report::gpus`].
//!
//! How each kind is found and priced is in `docs/check.md`; the thresholds are constants here
//! ([`WARN_LOST_PCT`], [`MIN_LOST_PCT`], [`CORRECTABLE_WARN_PER_S`], [`CORRECTABLE_ERROR_PER_S`]).
//! `fixture` (feature) builds realistic host trees for tests.

mod aer;
mod atomics;
mod checks;
mod cost;
mod demand;
mod finding;
#[cfg(any(test, feature = "fixture"))]
pub mod fixture;
pub mod gpu;
mod p2p;
mod path;
mod read;
mod report;
mod stability;
mod traffic;
#[cfg(unix)]
mod wake;

pub use aer::{interval_rates, AerRates, Sampling, CORRECTABLE_ERROR_PER_S, CORRECTABLE_WARN_PER_S};
pub use checks::{CONFIG_CHECKS, MIN_LOST_PCT, NEEDS_ROOT, WARN_LOST_PCT};
pub use cost::{rate_name, read_rtt, DMA_BYTES, RTT_64B_NS, RTT_PER_LINE_NS};
pub use demand::{Demand, DemandSource};
pub use finding::{Finding, Kind, Severity};
pub use gpu::{GpuHealth, REPLAY_BER};
pub use report::{
    AerState, AtomicsRoute, FunctionHealth, Hop, LinkChanges, LinkEnd, P2pPair, Report, Skipped, Tags, Traffic, Wake,
};
pub use stability::{BUSY_DROP_GBPS, UNSTABLE_PER_MIN};
pub use traffic::BUSY_PCT;
#[cfg(unix)]
pub use wake::{wake, GpuLoad, WakeOptions, NVME_MAX_BYTES, WAKE_SECONDS};

use pcie_sysfs::{PciDevice, SysfsError};
use std::fmt;
use std::path::{Path, PathBuf};

/// How to check.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Options {
    /// Watch the AER counters for rates (`-I MS --duration S`); `None`: totals only.
    pub sampling: Option<Sampling>,
    /// Also read every NVIDIA GPU through NVML ([`gpu`]): for the live host only, as NVML
    /// answers for the machine it runs on.
    pub nvml: bool,
}

/// Why a host could not be checked at all.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CheckError {
    /// The root is not a directory.
    NoRoot(PathBuf),
    /// A file or directory exists but cannot be read.
    Sysfs(SysfsError),
}

impl fmt::Display for CheckError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CheckError::NoRoot(p) => write!(
                f,
                "{}: not a directory (a sysfs root: ROOT/sys/bus/pci/devices)",
                p.display()
            ),
            CheckError::Sysfs(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for CheckError {}

impl From<SysfsError> for CheckError {
    fn from(e: SysfsError) -> CheckError {
        CheckError::Sysfs(e)
    }
}

/// Checks every PCI function below `root` (see the crate text). Reads only.
pub fn check(root: &Path, opts: &Options) -> Result<Report, CheckError> {
    if !root.is_dir() {
        return Err(CheckError::NoRoot(root.to_path_buf()));
    }
    let funcs = PciDevice::discover_map(root, read::Func::read)?;
    let parents = path::parents(&funcs);
    let mut watch = traffic::Watch::start(root, &funcs, &parents)?;
    let mut links = stability::Links::start(&funcs, &parents);
    let gpus_before = if opts.nvml { Some(pcie_nvml::nvml::gpus()) } else { None };
    let (rates, sampled_seconds) = match opts.sampling {
        Some(s) => {
            let (r, secs) = aer::sample(&funcs, s, |secs| links.interval(&funcs, &watch.interval(secs)?))?;
            (Some(r), Some(secs))
        }
        None => (None, None),
    };
    let (link_changes, unstable) = match sampled_seconds {
        Some(secs) => links.finish(&funcs, secs),
        None => (Vec::new(), Vec::new()),
    };
    let shared = watch.shared(sampled_seconds.is_some());
    let traffic = watch.finish(sampled_seconds);
    let (gpus, nvml) = gpus_after(gpus_before, sampled_seconds);
    let numa_nodes = pcie_sysfs::host::numa_nodes(root)?;
    let mut occupied = vec![false; funcs.len()];
    for p in parents.iter().flatten() {
        occupied[*p] = true;
    }
    let host = checks::Host {
        parents,
        occupied,
        funcs: &funcs,
        aspm_policy: pcie_sysfs::host::aspm_policy(root)?,
        numa_nodes: numa_nodes.len(),
        rates,
        traffic,
        prices: cost::Prices::default(),
    };
    let mut functions = Vec::with_capacity(funcs.len());
    let mut findings = Vec::new();
    for i in 0..funcs.len() {
        let (record, mut found) = checks::function(&host, i);
        functions.push(record);
        findings.append(&mut found);
    }
    findings.extend(gpu::findings(&gpus));
    for (port, s) in shared.iter().enumerate() {
        if let Some(s) = s {
            findings.extend(checks::shared_link(&host, &functions, port, s));
        }
    }
    let (p2p, redirected) = p2p::pairs(&funcs, &host.parents, &functions);
    findings.extend(redirected);
    findings.extend(unstable);
    finding::sort_findings(&mut findings);
    let findings = finding::one_per_link(findings);
    let needs_root: Vec<_> = functions
        .iter()
        .filter(|f| !f.skipped.is_empty())
        .map(|f| f.bdf)
        .collect();
    let skipped = if needs_root.is_empty() {
        Vec::new()
    } else {
        vec![Skipped {
            checks: CONFIG_CHECKS.iter().map(|k| k.name().to_string()).collect(),
            reason: NEEDS_ROOT.to_string(),
            functions: needs_root,
        }]
    };
    Ok(Report {
        links: funcs.iter().filter(|f| f.has_link()).count(),
        functions,
        findings,
        skipped,
        aspm_policy: host.aspm_policy,
        numa_nodes,
        sampled_seconds,
        p2p,
        link_changes,
        wake: Vec::new(),
        gpus,
        nvml,
    })
}

/// The GPUs' health from NVML's readings before and after the sampling (none read: none),
/// and why NVML could not list them, when it could not.
fn gpus_after(
    before: Option<Result<Option<Vec<pcie_nvml::nvml::GpuPcie>>, String>>,
    seconds: Option<f64>,
) -> (Vec<GpuHealth>, Option<String>) {
    let Some(before) = before else {
        return (Vec::new(), None);
    };
    // Without sampling the one reading is the end; with it, a second one closes the window.
    let (start, end) = match seconds {
        Some(_) => (before.ok().flatten(), pcie_nvml::nvml::gpus()),
        None => (None, before),
    };
    match end {
        Ok(Some(end)) => (gpu::health(start.as_deref(), &end, seconds), None),
        Ok(None) => (Vec::new(), None),
        Err(why) => (Vec::new(), Some(format!("NVML: {why}"))),
    }
}
