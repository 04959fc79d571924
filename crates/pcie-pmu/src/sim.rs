//! The simulated host as a counter source: a [`pcie_sim::pmu_host::PmuHost`] (by default the
//! Yitian 710 of the seed study) that presents itself through a sysfs tree, as a real host does,
//! and counts through [`CounterSource`].
//!
//! [`SimHost::start`] writes the host's tree ([`pcie_sim::pmu_host::tree`]: PMUs, PCI functions with their
//! links, config space, AER counters and power state, and the profile's faults) into a temporary
//! directory, discovers it with [`System::discover`] like any other root, and keeps the
//! directory while the source lives. Its clock is simulated time: `sleep` runs the simulation,
//! paced to wall-clock time unless the source is fast, and brings the tree's AER counters to
//! the new time.

use crate::counter::{CounterError, CounterId, CounterSource, Reading};
use crate::event_spec::ResolvedEvent;
use crate::{PmuError, System};
pub use pcie_sim::pmu_host::profile::{builtin_pmu_hosts, PmuHostProfile};
pub use pcie_sim::pmu_host::tree::pmu_name;
use pcie_sim::pmu_host::tree::SimTree;
pub use pcie_sim::pmu_host::workload::{self, HostWorkload, StorageJob, WorkloadError};
pub use pcie_sim::pmu_host::PmuHost;
use std::io;
use std::time::{Duration, Instant};

/// `EINVAL`: what the DWC driver answers for an event or lane it does not have.
const EINVAL: i32 = 22;

/// Why a simulated host could not be started.
#[derive(Debug)]
pub enum SimError {
    /// Writing its sysfs tree failed.
    Io(io::Error),
    /// Discovering it failed (a bug: the tree is ours).
    Discover(PmuError),
}

impl std::fmt::Display for SimError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SimError::Io(e) => write!(f, "cannot write the simulated host's sysfs tree: {e}"),
            SimError::Discover(e) => write!(f, "cannot read the simulated host's sysfs tree: {e}"),
        }
    }
}

impl std::error::Error for SimError {}

/// A simulated host with PCIe PMUs, counting through [`CounterSource`].
pub struct SimHost {
    host: PmuHost,
    /// The host's tree: it lives as long as the source, and its AER counters follow the clock.
    tree: SimTree,
    /// PMU name → port index.
    pmus: Vec<(String, usize)>,
    counters: Vec<usize>,
    /// Wall-clock time at simulated time 0, when paced.
    paced: Option<Instant>,
}

impl SimHost {
    /// Start `profile` with `workloads` (already checked against it) and `seed`. With
    /// `paced`, simulated time follows wall-clock time; otherwise it runs as fast as it can.
    pub fn start(
        profile: PmuHostProfile,
        workloads: &[HostWorkload],
        seed: u64,
        paced: bool,
    ) -> Result<(System, SimHost), SimError> {
        let host = PmuHost::new(profile, workloads, seed);
        let tree = SimTree::write(&host).map_err(SimError::Io)?;
        let sys = System::discover(tree.path()).map_err(SimError::Discover)?;
        let driver = host.profile().pmu.driver;
        let pmus = host
            .profile()
            .ports
            .iter()
            .enumerate()
            .filter_map(|(i, p)| Some((pmu_name(driver, &p.bdf)?, i)))
            .collect();
        Ok((
            sys,
            SimHost {
                host,
                tree,
                pmus,
                counters: Vec::new(),
                paced: paced.then(Instant::now),
            },
        ))
    }

    /// The simulation (workload byte counts, profile, links).
    pub fn host(&self) -> &PmuHost {
        &self.host
    }
}

/// What the driver answers an event it does not take: EINVAL.
fn refused(e: &ResolvedEvent) -> CounterError {
    CounterError::Rejected {
        event: crate::counter::event_name(e),
        pmu: e.pmu.clone(),
        cpu: crate::counter::target_cpu(e),
        errno: EINVAL,
    }
}

impl CounterSource for SimHost {
    fn open(&mut self, e: &ResolvedEvent) -> Result<CounterId, CounterError> {
        let rejected = || refused(e);
        let port = self
            .pmus
            .iter()
            .find(|(n, _)| *n == e.pmu)
            .map(|(_, i)| *i)
            .ok_or_else(rejected)?;
        let id = self.host.open(port, e.config[0]).map_err(|_| rejected())?;
        self.counters.push(id);
        Ok(CounterId(self.counters.len() - 1))
    }

    /// The DWC driver lets one of its events into a group only under a software leader, so a
    /// group of the simulated ports' events is refused at its first member (EINVAL), as there.
    fn open_group(&mut self, events: &[&ResolvedEvent]) -> Result<Vec<CounterId>, CounterError> {
        match events {
            [] => Ok(Vec::new()),
            [one] => Ok(vec![self.open(one)?]),
            [_, member, ..] => Err(refused(member)),
        }
    }

    fn read(&mut self, id: CounterId) -> Result<Reading, CounterError> {
        let c = *self.counters.get(id.0).ok_or_else(|| CounterError::Os {
            what: format!("read counter {}: no such counter", id.0),
            errno: 9,
        })?;
        let (value, enabled, running) = self.host.read(c);
        Ok(Reading {
            value,
            enabled,
            running,
        })
    }

    fn elapsed(&self) -> Duration {
        Duration::from_nanos(self.host.now_ns())
    }

    /// Run the simulation for `d`; when paced, then wait until the wall clock catches up.
    fn sleep(&mut self, d: Duration) -> Result<(), CounterError> {
        let target = self.host.now_ns() + d.as_nanos() as u64;
        self.host.advance_to(target);
        let host = &self.host;
        self.tree
            .refresh(target, |p| host.port_bytes(p))
            .map_err(|e| CounterError::Os {
                what: format!(
                    "update the simulated host's AER and traffic counters in {}",
                    self.tree.path().display()
                ),
                errno: e.raw_os_error().unwrap_or(5),
            })?;
        if let Some(start) = self.paced {
            let due = start + Duration::from_nanos(target);
            if let Some(left) = due.checked_duration_since(Instant::now()) {
                std::thread::sleep(left);
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The study's machine (issue 12): root port, PMU names upstream and pre-upstream, and the
    /// functions below it with their ids and links.
    /// A function below a port: address, `vendor:device`, current link.
    type Function = (&'static str, &'static str, Option<&'static str>);

    const STUDY: [(&str, &str, &str, &[Function]); 18] = [
        (
            "0000:00:00.0",
            "dwc_rootport_0",
            "pcie_bdf_0",
            &[
                ("0000:01:00.0", "1a03:1150", Some("5.0 GT/s PCIe x1")),
                ("0000:02:00.0", "1a03:2000", None),
            ],
        ),
        (
            "0000:00:01.0",
            "dwc_rootport_8",
            "pcie_bdf_100",
            &[("0000:03:00.0", "1912:0014", Some("5.0 GT/s PCIe x1"))],
        ),
        (
            "0000:00:02.0",
            "dwc_rootport_10",
            "pcie_bdf_200",
            &[("0000:04:00.0", "1b4b:9235", Some("5.0 GT/s PCIe x2"))],
        ),
        ("0000:00:03.0", "dwc_rootport_18", "pcie_bdf_300", &[]),
        ("0000:10:00.0", "dwc_rootport_1000", "pcie_bdf_100000", &[]),
        ("0000:10:01.0", "dwc_rootport_1008", "pcie_bdf_100100", &[]),
        ("0000:10:02.0", "dwc_rootport_1010", "pcie_bdf_100200", &[]),
        ("0000:10:03.0", "dwc_rootport_1018", "pcie_bdf_100300", &[]),
        ("0000:30:00.0", "dwc_rootport_3000", "pcie_bdf_300000", &[]),
        ("0000:30:01.0", "dwc_rootport_3008", "pcie_bdf_300100", &[]),
        ("0000:30:02.0", "dwc_rootport_3010", "pcie_bdf_300200", &[]),
        ("0000:30:03.0", "dwc_rootport_3018", "pcie_bdf_300300", &[]),
        ("0000:80:00.0", "dwc_rootport_8000", "pcie_bdf_800000", &[]),
        ("0000:80:01.0", "dwc_rootport_8008", "pcie_bdf_800100", &[]),
        ("0000:80:02.0", "dwc_rootport_8010", "pcie_bdf_800200", &[]),
        ("0000:80:03.0", "dwc_rootport_8018", "pcie_bdf_800300", &[]),
        ("0000:98:00.0", "dwc_rootport_9800", "pcie_bdf_980000", &[]),
        (
            "0000:b0:00.0",
            "dwc_rootport_b000",
            "pcie_bdf_b00000",
            &[
                ("0000:b1:00.0", "15b3:1017", Some("8.0 GT/s PCIe x16")),
                ("0000:b1:00.1", "15b3:1017", Some("8.0 GT/s PCIe x16")),
            ],
        ),
    ];

    #[test]
    fn the_simulated_host_is_the_studys_machine() {
        for (profile, narrow) in [("yitian710", false), ("yitian710-narrow", true)] {
            let p = PmuHostProfile::load(profile).unwrap();
            let (sys, _src) = SimHost::start(p, &[], 1, false).unwrap();
            assert!(sys.problems.is_empty(), "{:?}", sys.problems);
            let views = sys.pcie_pmus().unwrap();
            assert_eq!(views.len(), 18);
            for (port, upstream, old, below) in STUDY {
                let name = if narrow { old } else { upstream };
                let v = views
                    .iter()
                    .find(|v| v.pmu.name == name)
                    .unwrap_or_else(|| panic!("{profile}: no {name}"));
                let [rp] = v.root_ports.as_slice() else {
                    panic!("{name}: {:?}", v.root_ports)
                };
                assert_eq!(rp.bdf.to_string(), port);
                let lanes = if port.starts_with("0000:98") || port.starts_with("0000:b0") {
                    16
                } else {
                    4
                };
                let pd = rp.port.as_ref().unwrap();
                assert_eq!(
                    (pd.max_link_width, pd.numa_node),
                    (Some(lanes), Some(u32::from(rp.bdf.bus >= 0x80)))
                );
                let got: Vec<(String, String, Option<String>)> = rp
                    .devices
                    .iter()
                    .map(|d| {
                        let id = format!("{:04x}:{:04x}", d.vendor.unwrap(), d.device.unwrap());
                        let link = d
                            .current_link_speed
                            .as_ref()
                            .map(|s| format!("{s} x{}", d.current_link_width.unwrap()));
                        (d.bdf.to_string(), id, link)
                    })
                    .collect();
                let want: Vec<(String, String, Option<String>)> = below
                    .iter()
                    .map(|(b, id, l)| (b.to_string(), id.to_string(), l.map(String::from)))
                    .collect();
                assert_eq!(got, want, "{name}");
            }
            // The integrated endpoints and event collectors sit on the root buses, below no port.
            for (bdf, id) in [
                ("0000:7c:00.0", 0x8001),
                ("0000:7c:0a.0", 0x8003),
                ("0000:fc:00.0", 0x8001),
                ("0000:fc:0a.0", 0x8003),
            ] {
                let d = sys.pci.iter().find(|d| d.bdf.to_string() == bdf).unwrap();
                assert_eq!((d.vendor, d.device), (Some(0x1ded), Some(id)));
                assert!(views
                    .iter()
                    .all(|v| v.root_ports.iter().all(|r| r.devices.iter().all(|x| x.bdf != d.bdf))));
            }
        }
        let n = PmuHostProfile::load("yitian710-narrow").unwrap();
        let (sys, _src) = SimHost::start(n, &[], 1, false).unwrap();
        let r = sys.resolve("pcie_bdf_200/Rx_PCIe_TLP_Data_Payload/").unwrap();
        assert_eq!(r.config[0], 0x10021);
    }

    #[test]
    fn counts_through_the_trait_on_simulated_time() {
        let p = PmuHostProfile::load("yitian710").unwrap();
        let job = HostWorkload::parse(&p, "port=00:02.0,rw=read,bs=1M,iodepth=32,size=8M").unwrap();
        let (sys, mut src) = SimHost::start(p, &[job], 3, false).unwrap();
        let ev = sys.resolve("dwc_rootport_10/rx_pcie_tlp_data_payload/").unwrap();
        let id = src.open(&ev).unwrap();
        let wall = Instant::now();
        src.sleep(Duration::from_secs(1)).unwrap();
        assert!(wall.elapsed() < Duration::from_secs(1), "fast sources do not wait");
        assert_eq!(src.elapsed(), Duration::from_secs(1));
        let r = src.read(id).unwrap();
        assert!(src.host().workloads_done());
        // 8 MiB of data, plus an 8 B SDB FIS, a 4 B MSI and two 4 B register reads per I/O.
        assert_eq!(r.value, (8 << 20) + 8 * 20);
        assert_eq!((r.enabled, r.running), (1_000_000_000, 1_000_000_000));
        // Paced, simulated time follows the wall clock.
        let p = PmuHostProfile::load("yitian710").unwrap();
        let wall = Instant::now();
        let (_, mut paced) = SimHost::start(p, &[], 3, true).unwrap();
        paced.sleep(Duration::from_millis(200)).unwrap();
        assert!(wall.elapsed() >= Duration::from_millis(200));
        let bad = sys.resolve("dwc_rootport_10/rx_memory_read,lane=3/").unwrap();
        assert!(src.open(&bad).is_ok());
        let e = src.open(&ResolvedEvent {
            pmu: "msr".into(),
            ..ev
        });
        assert!(matches!(e, Err(CounterError::Rejected { .. })));
    }
}

/// The simulated host's PCI tree (`pcie_sim::pmu_host::tree`) as the link checks read it.
#[cfg(test)]
mod tree_tests {
    use crate::counter::CounterSource;
    use crate::sim::{PmuHostProfile, SimHost};
    use pcie_health::{check, Kind, Options, Severity};
    use pcie_sysfs::{Bdf, PciDevice};
    use std::time::Duration;

    fn bdf(s: &str) -> Bdf {
        s.parse().unwrap()
    }

    #[test]
    fn the_healthy_host_shows_every_link_config_space_and_aer_file() {
        let (sys, _src) = SimHost::start(PmuHostProfile::load("yitian710").unwrap(), &[], 1, false).unwrap();
        let root = sys.root.path();
        let r = check(root, &Options::default()).unwrap();
        assert!(!r.needs_attention(), "{:#?}", r.findings);
        assert_eq!(
            (r.numa_nodes.as_slice(), r.aspm_policy.as_deref()),
            ([0, 1].as_slice(), Some("default"))
        );
        assert!(r.skipped.is_empty(), "root sees all of config space: {:?}", r.skipped);
        let nic = r.functions.iter().find(|f| f.bdf == bdf("0000:b1:00.0")).unwrap();
        let hop = &nic.path[0];
        assert_eq!(hop.upstream.bdf, Some(bdf("0000:b0:00.0")));
        assert_eq!((hop.upstream.max_gts, hop.upstream.max_width), (Some(32.0), Some(16)));
        assert_eq!(
            (hop.downstream.max_gts, hop.downstream.max_width),
            (Some(8.0), Some(16))
        );
        assert_eq!((hop.current_gts, hop.current_width), (Some(8.0), Some(16)));
        assert_eq!(
            (nic.mps, nic.mps_supported, nic.path_mps, nic.mrrs),
            (Some(512), Some(512), Some(512), Some(4096))
        );
        assert_eq!((nic.numa_node, nic.local_cpus.as_deref()), (Some(1), Some("64-127")));
        assert_eq!(
            (nic.power_state.as_deref(), nic.aspm.as_deref()),
            (Some("D0"), Some("off"))
        );
        assert_eq!(
            (nic.has_aer, nic.aer.correctable, nic.aer.fatal),
            (Some(true), Some(0), Some(0))
        );
        let port = PciDevice::read(root, bdf("0000:b0:00.0")).unwrap();
        assert_eq!(
            port.pcie_capability().unwrap().port_type,
            pcie_sysfs::PortType::RootPort
        );
        // The BMC's VGA behind the PCIe-to-PCI bridge is conventional PCI: no link, no AER.
        let vga = r.functions.iter().find(|f| f.bdf == bdf("0000:02:00.0")).unwrap();
        assert_eq!((vga.link.as_ref(), vga.has_aer), (None, Some(false)));
        for (rc, t) in [
            ("0000:7c:00.0", "integrated endpoint"),
            ("0000:7c:0a.0", "event collector"),
        ] {
            let f = r.functions.iter().find(|f| f.bdf == bdf(rc)).unwrap();
            assert_eq!(f.port_type.as_deref(), Some(t), "{rc}");
        }
    }

    #[test]
    fn faults_show_as_findings_and_errors_grow_with_simulated_time() {
        let p = PmuHostProfile::load("yitian710-degraded").unwrap();
        let (sys, mut src) = SimHost::start(p, &[], 1, false).unwrap();
        let root = sys.root.path();
        let r = check(root, &Options::default()).unwrap();
        let found = |kind: Kind, at: &str| {
            r.findings
                .iter()
                .find(|f| f.kind == kind && f.bdf == bdf(at))
                .unwrap_or_else(|| panic!("no {kind:?} on {at}: {:#?}", r.findings))
        };
        let width = found(Kind::LinkWidthDowngraded, "0000:b1:00.0");
        assert_eq!(
            (width.severity, width.limited_by),
            (Severity::Warning, Some(bdf("0000:b1:00.0")))
        );
        assert!(width.lost_pct.unwrap() > 40.0, "x8 of x16: {width:?}");
        assert!(found(Kind::MpsBelowPath, "0000:b1:00.0").lost_pct.unwrap() > 0.0);
        assert_eq!(
            found(Kind::LinkSpeedDowngraded, "0000:04:00.0").severity,
            Severity::Warning
        );
        found(Kind::AspmEnabled, "0000:03:00.0");
        // An hour of 250 BadDLLP a second before the simulation starts.
        let sata = || {
            let f = PciDevice::read(root, bdf("0000:04:00.0"))
                .unwrap()
                .files()
                .unwrap()
                .aer_files()
                .unwrap();
            let c = f.correctable.unwrap().unwrap();
            let port = PciDevice::read(root, bdf("0000:00:02.0"))
                .unwrap()
                .files()
                .unwrap()
                .aer_files()
                .unwrap();
            (c.types[2].clone(), c.total, port.rootport.unwrap()[0])
        };
        assert_eq!(found(Kind::AerCorrectable, "0000:04:00.0").severity, Severity::Info);
        assert_eq!(sata(), (("BadDLLP".to_string(), 900_000), 900_000, Some(900_000)));
        src.sleep(Duration::from_secs(2)).unwrap();
        assert_eq!(sata(), (("BadDLLP".to_string(), 900_500), 900_500, Some(900_500)));
        assert!(
            !r.findings
                .iter()
                .any(|f| f.bdf == bdf("0000:b1:00.1") && f.kind == Kind::MpsBelowPath),
            "the fault is the first function's alone"
        );
    }
}
