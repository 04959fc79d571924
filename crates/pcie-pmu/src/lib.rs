//! PCIe PMU discovery and description on Linux.
//!
//! Reads a sysfs tree rooted at a directory (`/` on a host, a temporary directory in tests):
//! every PMU in `sys/bus/event_source/devices` with its type, cpumask, format terms and events;
//! PCI functions in `sys/bus/pci/devices` (read by pcie-sysfs: [`PciDevice`], [`Bdf`]); the CPU
//! model in `proc/cpuinfo`. PCIe-related PMUs
//! are recognised by family and kernel variant ([`family`]), mapped to the root ports they watch
//! and the devices below ([`topology`]), and their events annotated with normalised metrics and
//! units from per-family catalogs ([`catalog`]). perf's `pmu/event,term=val/` syntax resolves
//! against any PMU into `perf_event_attr` config values ([`event_spec`]).
//!
//! Counting goes through [`counter::CounterSource`] (Linux `perf_event_open` in
//! [`counter::PerfEvents`]); [`accumulate`] turns successive reads into wrap-safe, multiplexing-scaled
//! deltas and bytes into Gb/s. [`listing`] is what `pmu list` shows, for people and programs.
//! `pmu validate`'s study — running fio and comparing its bytes with a payload event's — is
//! [`accuracy`] (with [`accuracy::fio`] running fio).
//!
//! The sampling core of live monitoring is [`monitor`]: a [`monitor::Plan`] of events with
//! their bytes per count, metric and root port (and its link model), a [`monitor::Monitor`]
//! that opens them on a source and turns each interval into [`monitor::Row`]s and per-root-port
//! [`monitor::Target`]s, and [`monitor::run`], the loop (interval, duration, command, cancel
//! flag) that hands intervals to a front end's [`monitor::Sink`]. [`exposition`] keeps the
//! totals a scrape sees and writes them in Prometheus' text format; [`history`] keeps a run per
//! root port and [`charts`] draws it (pcie-report). Nothing here prints:
//! warnings and a command's exit status are returned for the front end to show.
//!
//! ```no_run
//! use pcie_pmu::monitor::{payload_events, Monitor, Plan};
//! use pcie_pmu::{CounterSource, PerfEvents, System};
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let sys = System::discover("/")?;
//! let plan = Plan::new(&sys, payload_events(&sys)?)?;
//! let mut src = PerfEvents::new();
//! let mut mon = Monitor::open(&mut src, plan)?;
//! mon.refresh(&mut src)?;
//! src.sleep(std::time::Duration::from_secs(1))?;
//! let rows = mon.sample(&mut src, 1.0, 1.0)?;
//! for t in mon.targets(&rows) {
//!     println!("{}: rx {:?} Gb/s, tx {:?} Gb/s", t.name, t.rx_gbps, t.tx_gbps);
//! }
//! # Ok(())
//! # }
//! ```

pub mod accumulate;
#[cfg(unix)]
pub mod accuracy;
pub mod catalog;
pub mod charts;
pub mod counter;
mod error;
pub mod event_sources;
pub mod event_spec;
pub mod exposition;
pub mod family;
/// Fixture sysfs trees for tests (here and in the CLI's tests), not part of the product.
#[cfg(all(unix, any(test, feature = "fixture")))]
pub mod fixture;
pub mod history;
pub mod listing;
pub mod metric;
pub mod monitor;
pub mod pmu;
#[cfg(unix)]
pub mod sim;
pub mod software;
pub mod topology;

pub use accumulate::{Accumulator, Delta};
pub use catalog::{Catalog, PmuEvent};
pub use counter::{CounterError, CounterId, CounterSource, PerfEvents, Reading};
pub use error::PmuError;
pub use event_sources::{CpuModel, SysfsRoot};
pub use event_spec::{resolve, split_event_list, EventSpec, ListItem, ResolvedEvent};
pub use family::{Family, FamilyMatch};
pub use listing::Listing;
pub use metric::PmuMetric;
pub use pcie_sysfs::{Bdf, PciDevice};
pub use pmu::{ConfigField, EventAlias, FormatTerm, Pmu, TermValue};
pub use topology::RootPort;

use serde::Serialize;

/// Everything discovered under one sysfs root.
#[derive(Debug, Clone)]
pub struct System {
    pub root: SysfsRoot,
    /// Every PMU, PCIe-related or not (software, cpu, msr, ...), sorted by name.
    pub pmus: Vec<Pmu>,
    pub pci: Vec<PciDevice>,
    pub cpu: CpuModel,
    /// PMUs that could not be read (a missing `type`, a bad format or event file): skipped, as
    /// perf does, and reported here so a tool can warn.
    pub problems: Vec<PmuError>,
}

/// A PCIe-related PMU with its family, root ports and annotated events.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PcieView {
    pub pmu: Pmu,
    pub family: FamilyMatch,
    pub root_ports: Vec<RootPort>,
    pub events: Vec<PmuEvent>,
}

impl System {
    /// Read the tree. Fails with [`PmuError::NoRoot`] / [`PmuError::NoEventSource`] when `root`
    /// is not a sysfs tree, and with [`PmuError::Sysfs`] when a directory cannot be listed. A PMU
    /// whose files do not parse is skipped and its error kept in `problems`.
    pub fn discover(root: impl AsRef<std::path::Path>) -> Result<System, PmuError> {
        let root = SysfsRoot::open(root)?;
        let mut pmus = Vec::new();
        let mut problems = Vec::new();
        for name in root.pmu_names()? {
            match Pmu::read(&root, &name) {
                Ok(mut p) => {
                    software::add_builtin_events(&mut p);
                    pmus.push(p)
                }
                Err(e) => problems.push(e),
            }
        }
        let pci = PciDevice::discover(root.path())?;
        let cpu = pcie_sysfs::host::CpuInfo::read(root.path())?
            .map(|c| c.model)
            .unwrap_or_default();
        Ok(System {
            root,
            pmus,
            pci,
            cpu,
            problems,
        })
    }

    /// The PCIe-related PMUs, sorted by family, then first root port, then name.
    pub fn pcie_pmus(&self) -> Result<Vec<PcieView>, PmuError> {
        let mut out = Vec::new();
        for pmu in &self.pmus {
            let Some(fm) = family::recognise(pmu) else { continue };
            let catalog = Catalog::builtin(fm.family)?;
            out.push(PcieView {
                root_ports: topology::root_ports(pmu, &fm, &self.pci, &self.pmus),
                events: catalog::annotate(pmu, &fm, &self.cpu, catalog.as_ref()),
                family: fm,
                pmu: pmu.clone(),
            });
        }
        let key = |v: &PcieView| (v.family.family, v.root_ports.first().map(|r| r.bdf), v.pmu.name.clone());
        out.sort_by_key(key);
        Ok(out)
    }

    /// Resolve a `pmu/event,term=val/` string against every PMU of this system. For DWC PMUs a
    /// `lane` beyond the root port's width is refused (the driver rejects it with EINVAL).
    pub fn resolve(&self, spec: &str) -> Result<ResolvedEvent, PmuError> {
        let r = event_spec::resolve(spec, &self.pmus)?;
        self.check_lane(spec, &r)?;
        Ok(r)
    }

    fn check_lane(&self, spec: &str, r: &ResolvedEvent) -> Result<(), PmuError> {
        let Some(pmu) = self.pmus.iter().find(|p| p.name == r.pmu) else {
            return Ok(());
        };
        let (Some(lane), Some((bdf, _))) = (pmu.format("lane"), family::dwc_root_port(&pmu.name)) else {
            return Ok(());
        };
        let width = self.pci.iter().find(|d| d.bdf == bdf).and_then(|d| d.max_link_width);
        let value = lane.unpack(r.config[lane.field.index()]);
        match width {
            Some(w) if value >= w as u64 => Err(PmuError::BadSpec {
                spec: spec.to_string(),
                message: format!(
                    "lane={value}: root port {bdf} has {w} lanes (lane 0 to {})",
                    w.saturating_sub(1)
                ),
            }),
            _ => Ok(()),
        }
    }

    /// Like [`System::resolve`], but a PMU name without its instance suffix (`dwc_rootport`,
    /// `uncore_iio_free_running`) opens every instance, as perf does.
    pub fn resolve_all(&self, spec: &str) -> Result<Vec<ResolvedEvent>, PmuError> {
        let all = EventSpec::parse(spec)?.resolve_all(&self.pmus)?;
        for r in &all {
            self.check_lane(spec, r)?;
        }
        Ok(all)
    }
}
