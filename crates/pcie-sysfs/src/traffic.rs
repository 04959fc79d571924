//! What the drivers of a host's PCIe devices counted moving: a block device's sectors read and
//! written (`sys/block/<name>/stat`) and a network interface's bytes received and sent
//! (`sys/class/net/<name>/statistics/rx_bytes`, `tx_bytes`), each with the directory it really
//! lives in, which lies below its PCI function's (`.../0000:31:00.0/nvme/nvme0/nvme0n1`). On
//! a host without a PCIe PMU these are the payload its links carry, by direction: a block read
//! and a received packet are DMA writes of the device into host memory (upstream, `rx` as the
//! PCIe PMUs say), a block write and a sent packet DMA reads of it (downstream, `tx`).
//!
//! What they leave out: descriptors, completions, doorbells and interrupts (a few percent at
//! 4 KiB transfers), and traffic no block or network counter sees (RDMA, peer-to-peer, GPU
//! copies). Virtual devices (loop, dm, bridges, `lo`) live below no PCI function.
//!
//! NVMe native multipath (on by default where the kernel has CONFIG_NVME_MULTIPATH) puts a
//! namespace's block device below its subsystem, `sys/devices/virtual/nvme-subsystem/
//! nvme-subsys0/nvme0n1`, not below a PCI function; the subsystem's directory links each
//! controller (`nvme-subsys0/nvme0 -> ../../../pci0000:30/.../0000:31:00.0/nvme/nvme0`). A
//! namespace whose subsystem has one controller is counted at that controller; with several
//! (a dual-ported drive) its counts cannot be split between them, and it stays unattributed.

use crate::device::real_dir;
use crate::error::SysfsError;
use crate::files::{list_dir, parse_u64, read_attr};
use serde::Serialize;
use std::path::{Path, PathBuf};

/// Where block devices and network interfaces are listed, below a root.
pub const BLOCK: &str = "sys/block";
pub const NET: &str = "sys/class/net";

/// Bytes in a sector of `sys/block/<name>/stat`, whatever the device's own sector size.
const SECTOR: u64 = 512;

/// A block device or a network interface.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum CounterKind {
    Block,
    Net,
}

/// One device's counts since it appeared, and where it lives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceTraffic {
    /// `nvme0n1`, `eth0`.
    pub name: String,
    pub kind: CounterKind,
    /// Its real directory (symbolic links resolved), below its PCI function's; for an NVMe
    /// multipath namespace with one controller, that controller's.
    pub dir: PathBuf,
    /// Bytes the device wrote into host memory (block reads, received bytes).
    pub upstream_bytes: u64,
    /// Bytes the device read from host memory (block writes, sent bytes).
    pub downstream_bytes: u64,
}

/// Every block device and network interface below `root` whose counters read; a device whose
/// files say nothing readable is left out (it may have gone since it was listed).
pub fn read_traffic(root: &Path) -> Result<Vec<DeviceTraffic>, SysfsError> {
    let mut out = Vec::new();
    let block = root.join(BLOCK);
    let names = list_dir(&block)?;
    for name in &names {
        let mut dir = real_dir(block.join(name));
        let Some(stat) = read_attr(&dir.join("stat"))? else {
            continue;
        };
        // A multipath namespace: at its one controller, unless its paths are listed themselves.
        if let [(_, controller)] = &nvme_controllers(&dir)[..] {
            if !names.iter().any(|n| is_nvme_path_of(n, name)) {
                dir = controller.clone();
            }
        }
        let name = name.clone();
        let Some((read, written)) = block_sectors(&stat) else {
            continue;
        };
        out.push(DeviceTraffic {
            name,
            kind: CounterKind::Block,
            dir,
            upstream_bytes: read.saturating_mul(SECTOR),
            downstream_bytes: written.saturating_mul(SECTOR),
        });
    }
    let net = root.join(NET);
    for name in list_dir(&net)? {
        let dir = real_dir(net.join(&name));
        let count = |f: &str| -> Result<Option<u64>, SysfsError> {
            Ok(read_attr(&dir.join("statistics").join(f))?
                .as_deref()
                .and_then(parse_u64))
        };
        let (Some(rx), Some(tx)) = (count("rx_bytes")?, count("tx_bytes")?) else {
            continue;
        };
        out.push(DeviceTraffic {
            name,
            kind: CounterKind::Net,
            dir,
            upstream_bytes: rx,
            downstream_bytes: tx,
        });
    }
    Ok(out)
}

/// The line rate, in Mb/s, of the network interfaces below the PCI function whose directory is
/// `function_dir` (`<dir>/net/<if>/speed`, as ethtool reports it): the most its traffic can
/// ask of its link in each direction. `None` where it has no interface, or one whose speed is
/// unknown (a link down reads -1 or fails with EINVAL): then its demand is not known.
pub fn line_rate_mbps(function_dir: &Path) -> Option<u64> {
    let net = function_dir.join("net");
    let names = list_dir(&net).ok()?;
    let mut total = 0u64;
    for name in &names {
        let speed = read_attr(&net.join(name).join("speed")).ok()??;
        let mbps = speed.parse::<i64>().ok().filter(|&s| s > 0)?;
        total = total.saturating_add(mbps.unsigned_abs());
    }
    (!names.is_empty()).then_some(total)
}

/// The directory NVMe subsystems live in, below `sys/devices/virtual`.
const NVME_SUBSYSTEM: &str = "nvme-subsystem";

/// The controllers of the NVMe subsystem whose multipath namespace lives at `dir` (a real
/// directory): each link's name (`nvme0`) and the controller's real directory; empty for a
/// device that is not such a namespace.
pub(crate) fn nvme_controllers(dir: &Path) -> Vec<(String, PathBuf)> {
    let Some(subsys) = dir.parent().filter(|s| {
        s.parent()
            .and_then(Path::file_name)
            .is_some_and(|n| n == NVME_SUBSYSTEM)
    }) else {
        return Vec::new();
    };
    let controller = |n: &str| {
        n.strip_prefix("nvme")
            .is_some_and(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()))
    };
    list_dir(subsys)
        .unwrap_or_default()
        .into_iter()
        .filter(|n| controller(n))
        .map(|n| {
            let real = real_dir(subsys.join(&n));
            (n, real)
        })
        .filter(|(_, real)| real.is_dir())
        .collect()
}

/// Whether block device `name` is one path (`nvme0c1n2`: subsystem 0, controller 1) of the
/// multipath namespace `head` (`nvme0n2`).
fn is_nvme_path_of(name: &str, head: &str) -> bool {
    let (Some(path), Some(head)) = (name.strip_prefix("nvme"), head.strip_prefix("nvme")) else {
        return false;
    };
    let (Some((subsys, ns)), Some((p_subsys, rest))) = (head.split_once('n'), path.split_once('c')) else {
        return false;
    };
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    match rest.split_once('n') {
        Some((ctrl, p_ns)) => digits(subsys) && subsys == p_subsys && digits(ctrl) && p_ns == ns && digits(ns),
        None => false,
    }
}

/// Sectors read and written: the third and seventh fields of a block device's `stat` (the
/// kernel's Documentation/block/stat.rst); `None` for fewer fields or a field not a number.
fn block_sectors(stat: &str) -> Option<(u64, u64)> {
    let fields: Vec<&str> = stat.split_whitespace().take(7).collect();
    Some((fields.get(2)?.parse().ok()?, fields.get(6)?.parse().ok()?))
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use crate::fixture::nvme_multipath;
    use std::os::unix::fs::symlink;

    #[test]
    fn block_devices_and_interfaces_with_their_directories() {
        let root = std::env::temp_dir().join(format!("pcie-sysfs-traffic-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        assert_eq!(read_traffic(&root), Ok(vec![]));
        let func = "sys/devices/pci0000:30/0000:30:02.0/0000:31:00.0";
        let nvme = root.join(func).join("nvme/nvme0/nvme0n1");
        std::fs::create_dir_all(&nvme).unwrap();
        // The kernel's 17 fields: 1,000 reads of 2,048 sectors, 10 writes of 8.
        std::fs::write(
            nvme.join("stat"),
            "    1000        0  2048000     3000       10        0       80        5        0     3000     3005        0        0        0        0        0        0\n",
        )
        .unwrap();
        let eth = root.join(func).join("net/eth0/statistics");
        std::fs::create_dir_all(&eth).unwrap();
        std::fs::write(eth.join("rx_bytes"), "123456789\n").unwrap();
        std::fs::write(eth.join("tx_bytes"), "42\n").unwrap();
        let lo = root.join("sys/devices/virtual/net/lo/statistics");
        std::fs::create_dir_all(&lo).unwrap();
        std::fs::write(lo.join("rx_bytes"), "7\n").unwrap();
        std::fs::write(lo.join("tx_bytes"), "7\n").unwrap();
        // A device whose stat says nothing readable.
        let odd = root.join("sys/devices/virtual/block/odd");
        std::fs::create_dir_all(&odd).unwrap();
        std::fs::write(odd.join("stat"), "1 2\n").unwrap();
        for (link, target) in [
            (
                "sys/block/nvme0n1",
                "../devices/pci0000:30/0000:30:02.0/0000:31:00.0/nvme/nvme0/nvme0n1",
            ),
            ("sys/block/odd", "../devices/virtual/block/odd"),
            (
                "sys/class/net/eth0",
                "../../devices/pci0000:30/0000:30:02.0/0000:31:00.0/net/eth0",
            ),
            ("sys/class/net/lo", "../../devices/virtual/net/lo"),
        ] {
            std::fs::create_dir_all(root.join(link).parent().unwrap()).unwrap();
            symlink(target, root.join(link)).unwrap();
        }
        let t = read_traffic(&root).unwrap();
        let names: Vec<(&str, CounterKind)> = t.iter().map(|d| (d.name.as_str(), d.kind)).collect();
        assert_eq!(
            names,
            [
                ("nvme0n1", CounterKind::Block),
                ("eth0", CounterKind::Net),
                ("lo", CounterKind::Net)
            ]
        );
        assert_eq!(
            (t[0].upstream_bytes, t[0].downstream_bytes),
            (2_048_000 * 512, 80 * 512)
        );
        assert_eq!(t[0].dir, nvme);
        assert!(t[1].dir.starts_with(root.join(func)));
        assert_eq!((t[1].upstream_bytes, t[1].downstream_bytes), (123_456_789, 42));
        assert_eq!(block_sectors("1 2 3 4 5 6 x"), None);
        assert_eq!(block_sectors("1 2 3 4 5 6"), None);
        std::fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn a_multipath_namespace_counts_at_its_one_controller() {
        let root = std::env::temp_dir().join(format!("pcie-sysfs-mpath-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let one = nvme_multipath(&root, 0, &[2]).unwrap();
        let two = nvme_multipath(&root, 1, &[4, 5]).unwrap();
        let t = read_traffic(&root).unwrap();
        let dirs: Vec<(&str, &Path)> = t.iter().map(|d| (d.name.as_str(), d.dir.as_path())).collect();
        let virtual_head = root.join("sys/devices/virtual/nvme-subsystem/nvme-subsys1/nvme1n1");
        assert_eq!(
            dirs,
            [("nvme0n1", one[0].as_path()), ("nvme1n1", virtual_head.as_path())]
        );
        assert_eq!((t[0].upstream_bytes, t[0].downstream_bytes), (4096 * 512, 8 * 512));
        assert_eq!(nvme_controllers(&virtual_head).len(), two.len());
        // Its path listed as a block device of its own: the namespace is not counted twice.
        let path = one[0].join("nvme0c2n1");
        std::fs::create_dir_all(&path).unwrap();
        std::fs::write(path.join("stat"), "1 0 4096 1 1 0 8 1 0 1 1\n").unwrap();
        symlink(
            "../devices/pci0000:30/0000:30:02.0/0000:32:00.0/nvme/nvme2/nvme0c2n1",
            root.join(BLOCK).join("nvme0c2n1"),
        )
        .unwrap();
        let t = read_traffic(&root).unwrap();
        let head = t.iter().find(|d| d.name == "nvme0n1").unwrap();
        assert!(head.dir.starts_with(root.join("sys/devices/virtual")), "{:?}", head.dir);
        std::fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn multipath_path_names() {
        assert!(is_nvme_path_of("nvme0c2n1", "nvme0n1"));
        assert!(is_nvme_path_of("nvme12c0n33", "nvme12n33"));
        for (name, head) in [
            ("nvme1c2n1", "nvme0n1"),
            ("nvme0c2n2", "nvme0n1"),
            ("nvme0n1", "nvme0n1"),
            ("nvme0cn1", "nvme0n1"),
            ("nvme0c2n1p1", "nvme0n1"),
            ("sda", "nvme0n1"),
            ("nvme0c2n1", "sda"),
        ] {
            assert!(!is_nvme_path_of(name, head), "{name} {head}");
        }
    }
}
