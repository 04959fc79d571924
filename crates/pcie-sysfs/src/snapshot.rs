//! A copy of exactly the sysfs and procfs files pcieperf reads, laid out as on the host, so
//! every reader runs offline on it with `--sysfs DIR` (a user attaches it to a bug report):
//! each PCI function's [`DEVICE_FILES`], driver link and its ATA links' and USB root hubs'
//! speeds ([`crate::port_files`]), each PMU's own files with its
//! `format/` and `events/`, the block devices' and network interfaces' traffic counters (those
//! of PCI functions), the NUMA nodes' CPU lists, the ASPM policy and `proc/cpuinfo`.
//! The Device Serial Number capability is blanked in every config space copied. Files the
//! host does not let us read are left out and listed.

use crate::config_space::blank_serial;
use crate::device::{DEVICE_FILES, PCI_DEVICES};
use crate::files::list_dir;
use crate::host::{ASPM_POLICY, NUMA_NODES};
use crate::traffic::{BLOCK, NET};
use pcie_output::read::{self, Limit};
use pcie_output::OutDir;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

/// Where PMUs are listed, below a root.
pub const EVENT_SOURCE: &str = "sys/bus/event_source/devices";
/// The PMU subdirectories copied whole.
const PMU_DIRS: [&str; 2] = ["format", "events"];
/// How much of a file below the root is copied: a `/proc` file's, a config space's or a sysfs
/// attribute's limit; a longer file, a FIFO or a device is listed unreadable.
fn limit(rel: &Path) -> Limit {
    if rel.starts_with("proc") {
        Limit::PROC_FILE
    } else if rel.ends_with("config") {
        Limit::CONFIG_SPACE
    } else {
        Limit::ATTRIBUTE
    }
}

/// What a snapshot holds.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SnapshotSummary {
    pub functions: usize,
    pub pmus: usize,
    /// Block devices and network interfaces of PCI functions, with their traffic counters.
    pub devices: usize,
    pub files: usize,
    pub serials_blanked: usize,
    /// Files that exist but could not be read (`path: reason`).
    pub unreadable: Vec<String>,
}

/// Why no snapshot was written.
#[derive(Debug)]
pub enum SnapshotError {
    /// The destination cannot be an output directory: not empty, another user's, a dangling
    /// symlink, not a directory.
    Refused(PathBuf, io::Error),
    Io(PathBuf, io::Error),
}

impl std::fmt::Display for SnapshotError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SnapshotError::Refused(p, e) => write!(f, "{}: {e} (a snapshot goes into a new directory)", p.display()),
            SnapshotError::Io(p, e) => write!(f, "{}: {e}", p.display()),
        }
    }
}

impl std::error::Error for SnapshotError {}

struct Copier {
    root: PathBuf,
    out: OutDir,
    summary: SnapshotSummary,
}

fn io_at(p: &Path) -> impl FnOnce(io::Error) -> SnapshotError + '_ {
    move |e| SnapshotError::Io(p.to_path_buf(), e)
}

/// A path below the output as the `/`-separated text [`OutDir`] takes.
fn rel_text(rel: &Path) -> String {
    rel.to_string_lossy().into_owned()
}

impl Copier {
    /// The output's subdirectory `rel`, made if missing.
    fn mkdir(&self, rel: &Path) -> Result<(), SnapshotError> {
        self.out
            .subdir(&rel_text(rel))
            .map(|_| ())
            .map_err(io_at(&self.out.path().join(rel)))
    }

    /// `rel` (a path below the root) read and written to the same place below the output;
    /// `edit` may change the bytes. A missing file is skipped, an unreadable one listed.
    fn copy(&mut self, rel: &Path, edit: impl FnOnce(&mut Vec<u8>)) -> Result<(), SnapshotError> {
        let from = self.root.join(rel);
        let mut bytes = match read::read(&from, limit(rel)) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
            Err(e) => {
                self.summary.unreadable.push(format!("{}: {e}", rel.display()));
                return Ok(());
            }
        };
        edit(&mut bytes);
        self.out
            .write_new(&rel_text(rel), &bytes)
            .map_err(io_at(&self.out.path().join(rel)))?;
        self.summary.files += 1;
        Ok(())
    }

    /// The real directory of a bus entry, relative to the root (`sys/devices/pci0000:00/...`);
    /// `None` for an entry that resolves outside the root.
    fn real(&self, entry: &Path) -> Option<PathBuf> {
        let real = fs::canonicalize(entry).ok()?;
        real.strip_prefix(&self.root).ok().map(Path::to_path_buf)
    }

    /// The bus entry `bus/name` as a link to `real`, as sysfs has it.
    fn link(&self, bus: &str, name: &str, real: &Path) -> Result<(), SnapshotError> {
        let up = "../".repeat(bus.split('/').count());
        let rel = format!("{bus}/{name}");
        self.out
            .symlink(&rel, &format!("{up}{}", real.display()))
            .map_err(io_at(&self.out.path().join(&rel)))
    }

    fn pci_functions(&mut self) -> Result<(), SnapshotError> {
        let bus = self.root.join(PCI_DEVICES);
        for name in list_dir(&bus).map_err(|e| SnapshotError::Io(bus.clone(), io::Error::other(e.to_string())))? {
            let Some(real) = self.real(&bus.join(&name)) else {
                continue;
            };
            for file in DEVICE_FILES {
                let mut blanked = false;
                self.copy(&real.join(file), |b| {
                    if file == "config" {
                        blanked = blank_serial(b);
                    }
                })?;
                self.summary.serials_blanked += usize::from(blanked);
            }
            // Its ATA links' and USB root hubs' speeds: what a controller's ports can carry.
            for file in crate::ports::port_files(&self.root.join(&real)) {
                self.copy(&real.join(file), |_| {})?;
            }
            if let Some(driver) = fs::read_link(self.root.join(&real).join("driver"))
                .ok()
                .and_then(|t| t.file_name().map(|n| n.to_string_lossy().into_owned()))
            {
                self.mkdir(&Path::new("sys/bus/pci/drivers").join(&driver))?;
                let up = "../".repeat(real.components().count());
                let rel = real.join("driver");
                self.out
                    .symlink(&rel_text(&rel), &format!("{up}sys/bus/pci/drivers/{driver}"))
                    .map_err(io_at(&self.out.path().join(&rel)))?;
            }
            self.mkdir(&real)?;
            self.link(PCI_DEVICES, &name, &real)?;
            self.summary.functions += 1;
        }
        Ok(())
    }

    fn pmus(&mut self) -> Result<(), SnapshotError> {
        let bus = self.root.join(EVENT_SOURCE);
        self.mkdir(Path::new(EVENT_SOURCE))?;
        for name in list_dir(&bus).map_err(|e| SnapshotError::Io(bus.clone(), io::Error::other(e.to_string())))? {
            let Some(real) = self.real(&bus.join(&name)) else {
                continue;
            };
            let dir = self.root.join(&real);
            for entry in list_dir(&dir).unwrap_or_default() {
                let p = dir.join(&entry);
                let Ok(meta) = fs::symlink_metadata(&p) else { continue };
                if meta.is_file() {
                    self.copy(&real.join(&entry), |_| {})?;
                } else if meta.is_dir() && PMU_DIRS.contains(&entry.as_str()) {
                    for file in list_dir(&p).unwrap_or_default() {
                        self.copy(&real.join(&entry).join(file), |_| {})?;
                    }
                }
            }
            self.mkdir(&real)?;
            self.link(EVENT_SOURCE, &name, &real)?;
            self.summary.pmus += 1;
        }
        Ok(())
    }

    /// The block devices and network interfaces that live below a PCI function (their class
    /// links, `stat` and `statistics/rx_bytes`, `tx_bytes`, and an interface's `speed`: its line
    /// rate, the function's demand in check); virtual ones (loop, dm, bridges)
    /// are left out.
    fn traffic(&mut self) -> Result<(), SnapshotError> {
        for (class, files) in [
            (BLOCK, &["stat"][..]),
            (NET, &["statistics/rx_bytes", "statistics/tx_bytes", "speed"][..]),
        ] {
            for name in list_dir(&self.root.join(class)).unwrap_or_default() {
                let Some(real) = self.real(&self.root.join(class).join(&name)) else {
                    continue;
                };
                // An NVMe multipath namespace: its subsystem's links to its controllers too.
                let controllers = match class {
                    BLOCK => self.nvme_controllers(&real),
                    _ => Vec::new(),
                };
                if !below_pci(&real) && controllers.is_empty() {
                    continue;
                }
                for (link, target) in &controllers {
                    let up = "../".repeat(link.components().count() - 1);
                    let rel = link.to_string_lossy();
                    self.out
                        .symlink(&rel, &format!("{up}{}", target.display()))
                        .map_err(io_at(&self.out.path().join(link)))?;
                    self.mkdir(target)?;
                }
                for file in files {
                    self.copy(&real.join(file), |_| {})?;
                }
                self.mkdir(&real)?;
                self.link(class, &name, &real)?;
                self.summary.devices += 1;
            }
        }
        Ok(())
    }

    /// For a multipath namespace at `real` whose controllers all live below PCI functions,
    /// each controller link of its subsystem and the controller's directory, both relative to
    /// the root; empty otherwise.
    fn nvme_controllers(&self, real: &Path) -> Vec<(PathBuf, PathBuf)> {
        let subsys = real.parent().unwrap_or(Path::new(""));
        let links: Vec<(PathBuf, PathBuf)> = crate::traffic::nvme_controllers(&self.root.join(real))
            .into_iter()
            .filter_map(|(name, _)| Some((subsys.join(&name), self.real(&self.root.join(subsys).join(name))?)))
            .collect();
        if links.iter().all(|(_, target)| below_pci(target)) {
            links
        } else {
            Vec::new()
        }
    }

    fn host(&mut self) -> Result<(), SnapshotError> {
        self.copy(Path::new("proc/cpuinfo"), |_| {})?;
        self.copy(Path::new(ASPM_POLICY), |_| {})?;
        for node in list_dir(&self.root.join(NUMA_NODES)).unwrap_or_default() {
            if node.strip_prefix("node").is_some_and(|n| n.parse::<u32>().is_ok()) {
                self.copy(&Path::new(NUMA_NODES).join(node).join("cpulist"), |_| {})?;
            }
        }
        Ok(())
    }
}

/// Whether a directory (relative to the root) lives below a PCI host bridge.
fn below_pci(real: &Path) -> bool {
    real.to_string_lossy().starts_with("sys/devices/pci")
}

/// Makes `out` for a snapshot ([`OutDir::create`]): refused unless it is new, or an empty
/// directory of the caller's; a dangling symlink is refused, not followed.
pub(crate) fn new_output(out: &Path) -> Result<OutDir, SnapshotError> {
    pcie_output::check_dir(out).map_err(|e| SnapshotError::Refused(out.to_path_buf(), e))?;
    OutDir::create(out).map_err(io_at(out))
}

/// Copies the files pcieperf reads below `root` (`/` on a host) into `out`, a new or empty
/// directory. Only reads below `root`; writes only below `out`.
pub fn snapshot(root: &Path, out: &Path) -> Result<SnapshotSummary, SnapshotError> {
    let out = new_output(out)?;
    let root = fs::canonicalize(root).map_err(io_at(root))?;
    let mut c = Copier {
        root,
        out,
        summary: SnapshotSummary::default(),
    };
    c.pci_functions()?;
    c.pmus()?;
    c.traffic()?;
    c.host()?;
    Ok(c.summary)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config_builder::ConfigBuilder;
    use crate::tree::{write_config, write_pci_function};
    use crate::PciDevice;

    #[test]
    fn a_snapshot_reads_like_the_host_without_the_serial_number() {
        let base = std::env::temp_dir().join(format!("pcie-sysfs-snap-{}", std::process::id()));
        let _ = fs::remove_dir_all(&base);
        let (root, out) = (base.join("host"), base.join("snap"));
        let port = [
            ("class", "0x060400"),
            ("current_link_speed", "16.0 GT/s PCIe"),
            ("numa_node", "1"),
        ];
        write_pci_function(&root, &[], "0000:30:03.0", &port, Some("pcieport")).unwrap();
        let nic = [
            ("class", "0x020000"),
            ("aer_dev_correctable", "RxErr 2\nTOTAL_ERR_COR 2"),
            ("irq", "33"),
        ];
        write_pci_function(&root, &["0000:30:03.0"], "0000:31:00.0", &nic, Some("mlx5_core")).unwrap();
        let config = ConfigBuilder::endpoint(0x15b3, 0x1017, 0x020000)
            .aer()
            .serial(0xdead_beef)
            .build();
        write_config(&root, "0000:31:00.0", &config).unwrap();
        fs::create_dir_all(root.join("proc")).unwrap();
        fs::write(root.join("proc/cpuinfo"), "processor\t: 0\n").unwrap();
        fs::create_dir_all(root.join(EVENT_SOURCE)).unwrap();
        // The NIC's IOMMU group as sysfs links it, to a directory of sys/kernel/iommu_groups.
        let group = root.join("sys/kernel/iommu_groups/12");
        fs::create_dir_all(&group).unwrap();
        fs::write(group.join("type"), "DMA-FQ\n").unwrap();
        let nic_dir = PciDevice::discover(&root).unwrap()[1].dir().to_path_buf();
        let up = "../".repeat(nic_dir.strip_prefix(&root).unwrap().components().count() - 1);
        std::os::unix::fs::symlink(format!("{up}kernel/iommu_groups/12"), nic_dir.join("iommu_group")).unwrap();
        // The NIC's interface and a virtual one: only the NIC's traffic is copied.
        for (dir, name) in [
            (nic_dir.join("net/eth0"), "eth0"),
            (root.join("sys/devices/virtual/net/lo"), "lo"),
        ] {
            fs::create_dir_all(dir.join("statistics")).unwrap();
            fs::write(dir.join("statistics/rx_bytes"), "1000\n").unwrap();
            fs::write(dir.join("statistics/tx_bytes"), "20\n").unwrap();
            fs::write(dir.join("speed"), "25000\n").unwrap();
            fs::create_dir_all(root.join("sys/class/net")).unwrap();
            std::os::unix::fs::symlink(&dir, root.join("sys/class/net").join(name)).unwrap();
        }

        let s = snapshot(&root, &out).unwrap();
        assert_eq!((s.functions, s.pmus, s.devices, s.serials_blanked), (2, 0, 1, 1));
        assert_eq!(s.files, 11, "{s:?}");
        let traffic = crate::read_traffic(&out).unwrap();
        assert_eq!(traffic.len(), 1);
        assert_eq!(
            (
                traffic[0].name.as_str(),
                traffic[0].upstream_bytes,
                traffic[0].downstream_bytes
            ),
            ("eth0", 1000, 20)
        );
        assert!(traffic[0]
            .dir
            .starts_with(out.join(nic_dir.strip_prefix(&root).unwrap())));
        let (host, copy) = (PciDevice::discover(&root).unwrap(), PciDevice::discover(&out).unwrap());
        assert_eq!(host.len(), copy.len());
        for (h, c) in host.iter().zip(&copy) {
            assert_eq!(
                (h.bdf, h.class, &h.driver, h.numa_node),
                (c.bdf, c.class, &c.driver, c.numa_node)
            );
            assert_eq!(h.upstream_bdf(), c.upstream_bdf());
        }
        // The interface's line rate, check's measure of what the NIC can ask of its link.
        assert_eq!(crate::line_rate_mbps(host[1].dir()), Some(25000));
        assert_eq!(crate::line_rate_mbps(copy[1].dir()), Some(25000));
        let (h, c) = (host[1].files().unwrap(), copy[1].files().unwrap());
        assert_eq!(h.aer_files().unwrap(), c.aer_files().unwrap());
        assert_eq!(h.attr("iommu_group/type").unwrap().as_deref(), Some("DMA-FQ"));
        assert_eq!(c.attr("iommu_group/type").unwrap().as_deref(), Some("DMA-FQ"));
        assert_eq!(host[1].pcie_capability(), copy[1].pcie_capability());
        let copied = copy[1].config_bytes().unwrap();
        assert_eq!(copied.len(), 4096);
        assert_eq!(&copied[0x154..0x15c], &[0; 8]);
        assert_ne!(copied, config);
        // Only the files pcieperf reads.
        assert!(!copy[1].dir().join("irq").exists());
        assert!(out.join("proc/cpuinfo").is_file() && out.join(EVENT_SOURCE).is_dir());
        let again = snapshot(&root, &out).unwrap_err().to_string();
        assert!(again.contains("snap: exists and is not empty"), "{again}");
        fs::remove_dir_all(&base).unwrap();
    }

    /// An AHCI controller's SATA links and an xHCI controller's root hubs read the same from
    /// the snapshot as on the host: what `check` prices their links against.
    #[test]
    fn a_snapshot_keeps_the_sata_links_and_usb_root_hubs() {
        let base = std::env::temp_dir().join(format!("pcie-sysfs-snap-ports-{}", std::process::id()));
        let _ = fs::remove_dir_all(&base);
        let (root, out) = (base.join("host"), base.join("snap"));
        write_pci_function(&root, &[], "0000:00:17.0", &[("class", "0x010601")], Some("ahci")).unwrap();
        write_pci_function(&root, &[], "0000:00:14.0", &[("class", "0x0c0330")], Some("xhci_hcd")).unwrap();
        let host = PciDevice::discover(&root).unwrap();
        let (xhci, ahci) = (host[0].dir(), host[1].dir());
        for (port, spd) in [(1, "6.0 Gbps"), (2, "<unknown>")] {
            let dir = ahci.join(format!("ata{port}/link{port}/ata_link/link{port}"));
            fs::create_dir_all(&dir).unwrap();
            fs::write(dir.join("sata_spd"), format!("{spd}\n")).unwrap();
        }
        for (hub, speed, ports) in [("usb1", "480", "16"), ("usb2", "10000", "10")] {
            fs::create_dir_all(xhci.join(hub)).unwrap();
            fs::write(xhci.join(hub).join("speed"), format!("{speed}\n")).unwrap();
            fs::write(xhci.join(hub).join("maxchild"), format!("{ports}\n")).unwrap();
            fs::write(xhci.join(hub).join("manufacturer"), "Linux xhci-hcd\n").unwrap();
        }
        snapshot(&root, &out).unwrap();
        let copy = PciDevice::discover(&out).unwrap();
        assert_eq!(crate::sata_links(ahci), [Some(6.0), None]);
        assert_eq!(crate::sata_links(copy[1].dir()), crate::sata_links(ahci));
        assert_eq!(crate::usb_root_hubs(xhci).len(), 2);
        assert_eq!(crate::usb_root_hubs(copy[0].dir()), crate::usb_root_hubs(xhci));
        assert!(!copy[0].dir().join("usb1/manufacturer").exists());
        fs::remove_dir_all(&base).unwrap();
    }

    #[test]
    fn nvme_multipath_namespaces_are_copied_with_their_controllers() {
        let base = std::env::temp_dir().join(format!("pcie-sysfs-snap-mpath-{}", std::process::id()));
        let _ = fs::remove_dir_all(&base);
        let (root, out) = (base.join("host"), base.join("snap"));
        crate::fixture::nvme_multipath(&root, 0, &[2]).unwrap();
        crate::fixture::nvme_multipath(&root, 1, &[4, 5]).unwrap();
        // A namespace of a fabrics controller (no PCI function): left out.
        let fabric = crate::fixture::nvme_multipath(&root, 2, &[6]).unwrap();
        let virt = root.join("sys/devices/virtual/nvme-fabrics/ctl/nvme6");
        fs::create_dir_all(&virt).unwrap();
        let link = root.join("sys/devices/virtual/nvme-subsystem/nvme-subsys2/nvme6");
        fs::remove_file(&link).unwrap();
        std::os::unix::fs::symlink("../../nvme-fabrics/ctl/nvme6", &link).unwrap();
        fs::remove_dir_all(&fabric[0]).unwrap();
        let s = snapshot(&root, &out).unwrap();
        assert_eq!(s.devices, 2, "{s:?}");
        let rel = |d: &Path, base: &Path| d.strip_prefix(base).unwrap().to_path_buf();
        let (host, copy) = (crate::read_traffic(&root).unwrap(), crate::read_traffic(&out).unwrap());
        let host: Vec<_> = host
            .iter()
            .filter(|d| d.name != "nvme2n1")
            .map(|d| (d.name.clone(), rel(&d.dir, &root), d.upstream_bytes))
            .collect();
        let copy: Vec<_> = copy
            .iter()
            .map(|d| (d.name.clone(), rel(&d.dir, &out), d.upstream_bytes))
            .collect();
        assert_eq!(host, copy);
        // One controller: counted at it; two: left at the subsystem.
        assert!(copy[0].1.ends_with("0000:32:00.0/nvme/nvme2"), "{copy:?}");
        assert!(copy[1].1.starts_with("sys/devices/virtual/nvme-subsystem"), "{copy:?}");
        fs::remove_dir_all(&base).unwrap();
    }
}
