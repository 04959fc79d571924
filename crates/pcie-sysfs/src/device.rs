//! A PCI function as `sys/bus/pci/devices/<bdf>/` shows it: ids, class, driver, link speed and
//! width, NUMA node, the buses behind a bridge, and (on demand) MPS/MRRS and the device/port type
//! from its config space.
//! Where the function sits in the hierarchy comes from its real directory under `sys/devices`.

use crate::aer::{AerCounts, AerFiles};
use crate::bdf::Bdf;
use crate::config_space::{read_registers, ConfigSpaceError, DeviceControl, PcieCapability, PortType, CONFIG_SPACE};
use crate::error::SysfsError;
use crate::files::{list_dir, parse_u64, Dir};
use crate::link_files::{LinkFiles, LinkSpeed, LinkWidth};
use serde::Serialize;
use std::io::Read;
use std::os::unix::fs::FileExt;
use std::path::{Component, Path, PathBuf};

/// Where the PCI functions are listed, below a root.
pub const PCI_DEVICES: &str = "sys/bus/pci/devices";

/// Every file of a function's directory that this crate reads (besides the `driver` link):
/// a snapshot of a host copies exactly these.
pub const DEVICE_FILES: [&str; 21] = [
    "vendor",
    "device",
    "class",
    "current_link_speed",
    "max_link_speed",
    "current_link_width",
    "max_link_width",
    "numa_node",
    "secondary_bus_number",
    "subordinate_bus_number",
    "local_cpulist",
    "power_state",
    "power/runtime_status",
    "iommu_group/type",
    "aer_dev_correctable",
    "aer_dev_nonfatal",
    "aer_dev_fatal",
    "aer_rootport_total_err_cor",
    "aer_rootport_total_err_nonfatal",
    "aer_rootport_total_err_fatal",
    "config",
];

/// The directory a bus entry (`sys/bus/pci/devices/BDF`) links to, its target taken against the
/// link's own directory and `..` folded lexically: sysfs links point at real directories, so one
/// readlink does what a full canonicalisation does with one per path component. An entry that
/// is no link is its own directory.
pub(crate) fn real_dir(entry: PathBuf) -> PathBuf {
    let Ok(target) = std::fs::read_link(&entry) else {
        return entry;
    };
    let joined = entry.parent().unwrap_or(Path::new("")).join(target);
    let mut out = PathBuf::new();
    for c in joined.components() {
        match c {
            Component::ParentDir if matches!(out.components().next_back(), Some(Component::Normal(_))) => {
                out.pop();
            }
            Component::CurDir => {}
            c => out.push(c),
        }
    }
    out
}

/// Functions a reading thread is given at least (fewer read faster on one thread than the
/// threads take to start), and the most threads (a sysfs read is short: more threads
/// contend in the kernel's path lookups).
const PER_THREAD: usize = 256;
const MAX_THREADS: usize = 8;

/// A PCI function from `sys/bus/pci/devices/<bdf>/`; `None` where sysfs lacks the file.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PciDevice {
    pub bdf: Bdf,
    pub vendor: Option<u16>,
    pub device: Option<u16>,
    /// 24-bit class code (`0x060400` is a PCI-to-PCI bridge / root port).
    pub class: Option<u32>,
    pub driver: Option<String>,
    /// As sysfs writes them, e.g. `8.0 GT/s PCIe`.
    pub current_link_speed: Option<String>,
    pub max_link_speed: Option<String>,
    pub current_link_width: Option<u32>,
    pub max_link_width: Option<u32>,
    /// `None` when the file is missing or reads -1 (no NUMA information).
    pub numa_node: Option<u32>,
    /// Bridges: the bus numbers behind them (`secondary_bus_number`, `subordinate_bus_number`).
    pub secondary_bus: Option<u8>,
    pub subordinate_bus: Option<u8>,
    /// The function's real directory (symbolic links resolved).
    #[serde(skip)]
    path: PathBuf,
    /// The names in that directory, sorted: files that are not there are not opened (a host
    /// may have 10,000 functions, and most lack some of the files).
    #[serde(skip)]
    names: Vec<String>,
    /// The link files' text: current and max speed, current and max width.
    #[serde(skip)]
    link_text: [Option<String>; 4],
}

impl PciDevice {
    /// Reads `sys/bus/pci/devices/<bdf>` below `root` (`/` on a host). Fails with
    /// [`SysfsError::NoDevice`] when the function is not there.
    pub fn read(root: &Path, bdf: Bdf) -> Result<PciDevice, SysfsError> {
        let devices = root.join(PCI_DEVICES);
        let dir = devices.join(bdf.to_string());
        if !dir.is_dir() {
            return Err(SysfsError::NoDevice {
                bdf: bdf.to_string(),
                dir: devices,
            });
        }
        PciDevice::read_dir(dir, bdf)
    }

    fn read_dir(dir: PathBuf, bdf: Bdf) -> Result<PciDevice, SysfsError> {
        let path = real_dir(dir);
        let names = list_dir(&path)?;
        let dir = Dir::open(&path)?;
        let files = FunctionFiles { names: &names, dir };
        let attr = |f: &str| files.attr(f);
        let num = |f: &str| -> Result<Option<u64>, SysfsError> { Ok(attr(f)?.as_deref().and_then(parse_u64)) };
        let driver = files
            .has("driver")
            .then(|| files.dir.as_ref()?.link_name("driver"))
            .flatten();
        let numa_node = attr("numa_node")?
            .and_then(|s| s.parse::<i64>().ok())
            .and_then(|n| u32::try_from(n).ok());
        let link_text = [
            attr("current_link_speed")?,
            attr("max_link_speed")?,
            attr("current_link_width")?,
            attr("max_link_width")?,
        ];
        let nonempty = |t: &Option<String>| t.clone().filter(|s| !s.is_empty());
        let width = |t: &Option<String>| t.as_deref().and_then(parse_u64).map(|v| v as u32);
        Ok(PciDevice {
            bdf,
            vendor: num("vendor")?.map(|v| v as u16),
            device: num("device")?.map(|v| v as u16),
            class: num("class")?.map(|v| v as u32),
            driver,
            current_link_speed: nonempty(&link_text[0]),
            max_link_speed: nonempty(&link_text[1]),
            current_link_width: width(&link_text[2]),
            max_link_width: width(&link_text[3]),
            numa_node,
            secondary_bus: num("secondary_bus_number")?.and_then(|v| u8::try_from(v).ok()),
            subordinate_bus: num("subordinate_bus_number")?.and_then(|v| u8::try_from(v).ok()),
            link_text,
            path,
            names,
        })
    }

    /// Every PCI function below `root`, sorted by address; entries that are not addresses are
    /// skipped, and no `sys/bus/pci/devices` means no functions.
    pub fn discover(root: &Path) -> Result<Vec<PciDevice>, SysfsError> {
        PciDevice::discover_map(root, Ok)
    }

    /// [`PciDevice::discover`], each function passed to `then` (which reads more of its files)
    /// as soon as it is read. A large tree is read on several threads, each a run of addresses:
    /// reading is system calls, one open, read and close per file (a check opens twenty of each
    /// function), and they run in parallel. The answer does not depend on the threads: in
    /// address order, and the first error in that order.
    pub fn discover_map<T: Send>(
        root: &Path,
        then: impl Fn(PciDevice) -> Result<T, SysfsError> + Sync,
    ) -> Result<Vec<T>, SysfsError> {
        let devices = root.join(PCI_DEVICES);
        let mut entries: Vec<(Bdf, String)> = list_dir(&devices)?
            .into_iter()
            .filter_map(|name| Some((name.parse::<Bdf>().ok()?, name)))
            .collect();
        // One function per address: a tree that spells an address twice (`0000:0A:00.0` beside
        // `0000:0a:00.0`, in a hand-made or hostile snapshot) would list it twice, and the
        // exporter would write two series with the same labels. The kernel's spelling wins.
        entries.sort_by_cached_key(|(bdf, name)| (*bdf, *name != bdf.to_string()));
        entries.dedup_by_key(|e| e.0);
        let read = |run: &[(Bdf, String)]| -> Result<Vec<T>, SysfsError> {
            run.iter()
                .map(|(bdf, name)| then(PciDevice::read_dir(devices.join(name), *bdf)?))
                .collect()
        };
        let threads = std::thread::available_parallelism()
            .map_or(1, |n| n.get())
            .min(MAX_THREADS)
            .min(entries.len().div_ceil(PER_THREAD));
        if threads <= 1 {
            return read(&entries);
        }
        let runs: Vec<Result<Vec<T>, SysfsError>> = std::thread::scope(|s| {
            let read = &read;
            let handles: Vec<_> = entries
                .chunks(entries.len().div_ceil(threads))
                .map(|run| s.spawn(move || read(run)))
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
                .collect()
        });
        let mut out = Vec::with_capacity(entries.len());
        for run in runs {
            out.extend(run?);
        }
        Ok(out)
    }

    /// A PCI-to-PCI bridge (root ports and switch ports).
    pub fn is_bridge(&self) -> bool {
        self.class.is_some_and(|c| c >> 8 == 0x0604)
    }

    /// `32.0 GT/s PCIe x16`, with `(max 32.0 GT/s PCIe x16)` when the link runs below its maximum.
    pub fn link_summary(&self) -> Option<String> {
        let show = |s: &Option<String>, w: Option<u32>| match (s, w) {
            (Some(s), Some(w)) => Some(format!("{s} x{w}")),
            (Some(s), None) => Some(s.clone()),
            (None, Some(w)) => Some(format!("x{w}")),
            (None, None) => None,
        };
        let cur = show(&self.current_link_speed, self.current_link_width);
        let max = show(&self.max_link_speed, self.max_link_width);
        match (cur, max) {
            (Some(c), Some(m)) if c != m => Some(format!("{c} (max {m})")),
            (Some(c), _) => Some(c),
            (None, Some(m)) => Some(format!("max {m}")),
            (None, None) => None,
        }
    }

    /// True when this function sits below `port`: its sysfs path nests in the port's
    /// (`/sys/devices/pci0000:30/0000:30:03.0/0000:31:00.0`), or its bus lies in the port's
    /// secondary..subordinate bus range (for trees whose device directories are not nested).
    pub fn is_below(&self, port: &PciDevice) -> bool {
        if self.bdf == port.bdf {
            return false;
        }
        if self.path.starts_with(&port.path) {
            return true;
        }
        match (port.secondary_bus, port.subordinate_bus) {
            (Some(lo), Some(hi)) => {
                self.bdf.domain == port.bdf.domain && (lo..=hi).contains(&self.bdf.bus) && lo > port.bdf.bus
            }
            _ => false,
        }
    }

    /// MPS and MRRS in force, from the function's `config` file (the PCI Express capability is
    /// past the 64 bytes Linux shows without root, so this usually needs root).
    pub fn device_control(&self) -> Result<DeviceControl, ConfigSpaceError> {
        DeviceControl::decode(&self.config_bytes()?)
    }

    /// The device/port type, from the function's `config` file (past the 64 bytes Linux shows
    /// without root, like [`PciDevice::device_control`]).
    pub fn port_type(&self) -> Result<PortType, ConfigSpaceError> {
        PortType::decode(&self.config_bytes()?)
    }

    /// Every register of the PCI Express capability the link checks use (root only, like
    /// [`PciDevice::device_control`]).
    pub fn pcie_capability(&self) -> Result<PcieCapability, ConfigSpaceError> {
        PcieCapability::decode(&self.config_bytes()?)
    }

    /// The readable bytes of the `config` file (64 without root), at most 4 KiB.
    pub fn config_bytes(&self) -> Result<Vec<u8>, ConfigSpaceError> {
        self.files()
            .map_err(|e| ConfigSpaceError::Unreadable(e.to_string()))?
            .config_bytes()
    }

    /// The function's real directory (symbolic links resolved).
    pub fn dir(&self) -> &Path {
        &self.path
    }

    /// The function's directory held open, to read more of its files (one open for all).
    pub fn files(&self) -> Result<FunctionFiles<'_>, SysfsError> {
        Ok(FunctionFiles {
            names: &self.names,
            dir: Dir::open(&self.path)?,
        })
    }

    /// The function directly above this one: its real directory's parent, when that is a PCI
    /// function (`.../0000:16:00.0/0000:17:00.0` is below `0000:16:00.0`).
    pub fn upstream_bdf(&self) -> Option<Bdf> {
        self.path.parent()?.file_name()?.to_str()?.parse().ok()
    }

    /// The link speed and width files, read into values or "cannot tell".
    pub fn link_files(&self) -> LinkFiles {
        let [cs, ms, cw, mw] = &self.link_text;
        let speed = |t: &Option<String>| t.as_deref().map(LinkSpeed::parse);
        let width = |t: &Option<String>| t.as_deref().map(LinkWidth::parse);
        LinkFiles {
            current_speed: speed(cs),
            max_speed: speed(ms),
            current_width: width(cw),
            max_width: width(mw),
        }
    }
}

fn config_unreadable(e: std::io::Error) -> ConfigSpaceError {
    ConfigSpaceError::Unreadable(e.to_string())
}

/// A function's directory held open ([`PciDevice::files`]): its files are opened relative to
/// it, and only those its listing shows (a host may have 10,000 functions, and most lack some
/// of the files).
pub struct FunctionFiles<'a> {
    names: &'a [String],
    /// `None` when the directory has gone (a function removed since it was listed).
    dir: Option<Dir>,
}

impl FunctionFiles<'_> {
    /// Whether the listing shows `name` (its first component).
    fn has(&self, name: &str) -> bool {
        let top = name.split('/').next().unwrap_or(name);
        self.names.binary_search_by(|n| n.as_str().cmp(top)).is_ok()
    }

    /// A file of the function's directory (`power_state`, `power/runtime_status`,
    /// `local_cpulist`, `iommu_group/type`), trimmed; `None` where it does not exist.
    pub fn attr(&self, name: &str) -> Result<Option<String>, SysfsError> {
        match &self.dir {
            Some(d) if self.has(name) => d.attr(name),
            _ => Ok(None),
        }
    }

    /// The readable bytes of the `config` file (64 without root), at most 4 KiB.
    pub fn config_bytes(&self) -> Result<Vec<u8>, ConfigSpaceError> {
        let f = self.config_file()?;
        let mut bytes = Vec::new();
        (&f).take(CONFIG_SPACE as u64)
            .read_to_end(&mut bytes)
            .map_err(config_unreadable)?;
        Ok(bytes)
    }

    /// The `config` file's bytes the link checks decode, zeros elsewhere
    /// ([`crate::config_space::read_registers`]: some 300 bytes of a 4 KiB file, each 4 a
    /// configuration cycle on hardware); 64 without root.
    pub fn config_registers(&self) -> Result<Vec<u8>, ConfigSpaceError> {
        let f = self.config_file()?;
        let len = f.metadata().map_err(config_unreadable)?.len();
        read_registers(usize::try_from(len).unwrap_or(CONFIG_SPACE), |offset, count| {
            let mut buf = vec![0; count];
            let mut got = 0;
            while got < count {
                match f.read_at(&mut buf[got..], (offset + got) as u64) {
                    Ok(0) => break,
                    Ok(n) => got += n,
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                    Err(e) => return Err(e),
                }
            }
            buf.truncate(got);
            Ok(buf)
        })
        .map_err(config_unreadable)
    }

    /// The `config` file, open. Every function has one, so it is opened without a look at the
    /// listing.
    fn config_file(&self) -> Result<std::fs::File, ConfigSpaceError> {
        let unreadable = |e: SysfsError| match e {
            SysfsError::Io { message, .. } => ConfigSpaceError::Unreadable(message),
            e => ConfigSpaceError::Unreadable(e.to_string()),
        };
        let file = match &self.dir {
            Some(d) => d.file("config").map_err(unreadable)?,
            None => None,
        };
        file.ok_or_else(|| config_unreadable(std::io::Error::from_raw_os_error(libc::ENOENT)))
    }

    /// The AER counter files (see [`AerFiles`]).
    pub fn aer_files(&self) -> Result<AerFiles, SysfsError> {
        let counts = |f: &str| Ok::<_, SysfsError>(self.attr(f)?.map(|t| AerCounts::parse(&t)));
        let total = |f: &str| Ok::<_, SysfsError>(self.attr(f)?.map(|t| parse_u64(&t)));
        let rootport = [
            total("aer_rootport_total_err_cor")?,
            total("aer_rootport_total_err_nonfatal")?,
            total("aer_rootport_total_err_fatal")?,
        ];
        Ok(AerFiles {
            correctable: counts("aer_dev_correctable")?,
            nonfatal: counts("aer_dev_nonfatal")?,
            fatal: counts("aer_dev_fatal")?,
            rootport: rootport
                .iter()
                .any(Option::is_some)
                .then(|| rootport.map(Option::flatten)),
        })
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::PciDevice;
    use crate::fixture::{self, config_with_pcie_capability};
    use crate::tree::write_pci_function;
    use crate::{Bdf, PortType, SysfsError};
    use pcie_model::Generation;
    use std::path::PathBuf;

    fn root(tag: &str) -> PathBuf {
        let root = std::env::temp_dir().join(format!("pcie-sysfs-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        root
    }

    fn bdf(s: &str) -> Bdf {
        s.parse().unwrap()
    }

    #[test]
    fn a_port_and_the_functions_below_it() {
        let root = root("below");
        fixture::root_port(&root, "0000:30:03.0", "1").unwrap();
        fixture::nic_below(&root, "0000:30:03.0", "0000:31:00.0").unwrap();
        // Not nested, but on a bus in the bridge's range.
        let ranged = [
            ("class", "0x060400"),
            ("secondary_bus_number", "64"),
            ("subordinate_bus_number", "65"),
        ];
        write_pci_function(&root, &[], "0000:3f:00.0", &ranged, None).unwrap();
        write_pci_function(
            &root,
            &[],
            "0000:41:00.0",
            &[("current_link_speed", ""), ("numa_node", "-1")],
            None,
        )
        .unwrap();
        std::fs::create_dir_all(root.join("sys/bus/pci/devices/not-an-address")).unwrap();
        // The same address spelled in upper case: listed once, as the kernel spells it.
        let other = [("class", "0x010802")];
        write_pci_function(&root, &[], "0000:3F:00.0", &other, None).unwrap();

        let all = PciDevice::discover(&root).unwrap();
        let names: Vec<String> = all.iter().map(|d| d.bdf.to_string()).collect();
        assert_eq!(names, ["0000:30:03.0", "0000:31:00.0", "0000:3f:00.0", "0000:41:00.0"]);
        let (port, nic, ranged, bare) = (&all[0], &all[1], &all[2], &all[3]);
        assert!(port.is_bridge() && !nic.is_bridge() && ranged.is_bridge());
        assert_eq!(
            (nic.vendor, nic.device, nic.class),
            (Some(0x15b3), Some(0x1017), Some(0x020000))
        );
        assert_eq!(
            (port.driver.as_deref(), nic.driver.as_deref()),
            (Some("pcieport"), Some("mlx5_core"))
        );
        assert_eq!(
            (port.numa_node, nic.numa_node, bare.numa_node),
            (Some(1), Some(0), None)
        );
        let gen = nic.current_link_speed.as_deref().and_then(Generation::from_sysfs_speed);
        assert_eq!(gen, Some(Generation::Gen4));
        assert_eq!(
            nic.link_summary().as_deref(),
            Some("16.0 GT/s PCIe x8 (max 16.0 GT/s PCIe x16)")
        );
        assert_eq!(port.link_summary().as_deref(), Some("32.0 GT/s PCIe x16"));
        assert_eq!((bare.current_link_speed.as_deref(), bare.link_summary()), (None, None));
        assert!(nic.is_below(port) && !port.is_below(nic) && !port.is_below(port));
        assert!(bare.is_below(ranged) && !nic.is_below(ranged));
        assert_eq!(&PciDevice::read(&root, bdf("31:00.0")).unwrap(), nic);
        std::fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn a_large_tree_reads_in_address_order_and_fails_at_its_first_error() {
        let root = root("many");
        // More functions than one thread is given, written out of order.
        let n = 3 * super::PER_THREAD + 7;
        for i in (0..n).rev() {
            let bdf = format!(
                "{:04x}:{:02x}:{:02x}.{}",
                i / 2048,
                (i / 8) % 256,
                i % 8 * 4 % 32,
                i % 8
            );
            let class = format!("0x{:06x}", i);
            write_pci_function(&root, &[], &bdf, &[("class", &class)], None).unwrap();
        }
        let all = PciDevice::discover(&root).unwrap();
        assert_eq!(all.len(), n);
        assert!(all.windows(2).all(|w| w[0].bdf < w[1].bdf));
        for d in [&all[0], &all[n / 2], &all[n - 1]] {
            assert_eq!(&PciDevice::read(&root, d.bdf).unwrap(), d);
        }
        let classes = PciDevice::discover_map(&root, |d| Ok(d.class)).unwrap();
        assert_eq!(classes, all.iter().map(|d| d.class).collect::<Vec<_>>());
        // Two functions whose `vendor` cannot be read: the error is the first one's, as one
        // thread reading in order would give.
        for d in [&all[n - 2], &all[n / 3]] {
            std::fs::create_dir(d.dir().join("vendor")).unwrap();
        }
        let e = PciDevice::discover(&root).unwrap_err();
        assert!(
            e.to_string()
                .starts_with(&all[n / 3].dir().join("vendor").display().to_string()),
            "{e}"
        );
        std::fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn a_missing_device_and_config_space() {
        let root = root("config");
        write_pci_function(&root, &[], "0000:03:00.0", &[("vendor", "0x19ee")], None).unwrap();
        let dir = root.join("sys/bus/pci/devices/0000:03:00.0");
        let d = PciDevice::read(&root, bdf("0000:03:00.0")).unwrap();
        let none = d.device_control().unwrap_err().to_string();
        assert!(none.starts_with("config space not readable: "), "{none}");
        std::fs::write(
            dir.join("config"),
            config_with_pcie_capability(1, (1 << 5) | (5 << 12), 256),
        )
        .unwrap();
        let c = d.device_control().unwrap();
        assert_eq!((c.mps, c.mrrs, c.mps_supported), (256, 4096, 256));
        assert_eq!(d.port_type(), Ok(PortType::Endpoint));
        let mut rciep = config_with_pcie_capability(1, 0, 256);
        rciep[0x72] = 9 << 4;
        std::fs::write(dir.join("config"), rciep).unwrap();
        assert_eq!(d.port_type(), Ok(PortType::IntegratedEndpoint));
        let missing = PciDevice::read(&root, bdf("0000:04:00.0")).unwrap_err();
        assert!(matches!(missing, SysfsError::NoDevice { .. }));
        assert_eq!(
            missing.to_string(),
            format!(
                "no PCI device 0000:04:00.0 in {}",
                root.join("sys/bus/pci/devices").display()
            )
        );
        assert!(PciDevice::discover(&root.join("nothing")).unwrap().is_empty());
        std::fs::remove_dir_all(&root).unwrap();
    }
}
