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
    /// Its real directory (symbolic links resolved), below its PCI function's.
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
    for name in list_dir(&block)? {
        let dir = real_dir(block.join(&name));
        let Some(stat) = read_attr(&dir.join("stat"))? else {
            continue;
        };
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

/// Sectors read and written: the third and seventh fields of a block device's `stat` (the
/// kernel's Documentation/block/stat.rst); `None` for fewer fields or a field not a number.
fn block_sectors(stat: &str) -> Option<(u64, u64)> {
    let fields: Vec<&str> = stat.split_whitespace().take(7).collect();
    Some((fields.get(2)?.parse().ok()?, fields.get(6)?.parse().ok()?))
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
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
}
