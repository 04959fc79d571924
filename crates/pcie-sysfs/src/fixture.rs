//! Test support for this crate and its users: fake sysfs contents that are tedious to build
//! by hand (config space, a root port, a NIC below it). Not part of the product (behind the
//! `fixture` feature).

#[cfg(unix)]
use crate::tree::write_pci_function;
#[cfg(unix)]
use std::{io, path::Path};

/// A type-0 config header with a capability list: power management at 0x40, then the PCIe
/// capability at 0x70 with the given Device Capabilities and Device Control, cut to `len` bytes.
pub fn config_with_pcie_capability(devcap: u32, devctl: u16, len: usize) -> Vec<u8> {
    let mut c = vec![0u8; 256];
    c[0x06] = 0x10;
    c[0x34] = 0x40;
    c[0x40] = 0x01;
    c[0x41] = 0x70;
    c[0x70] = 0x10;
    c[0x74..0x78].copy_from_slice(&devcap.to_le_bytes());
    c[0x78..0x7a].copy_from_slice(&devctl.to_le_bytes());
    c.truncate(len);
    c
}

/// A root port in the tree at `root`: vendor 0x1ded (the DesignWare root ports of the Yitian
/// 710), Gen5 x16, NUMA node `numa`, driver `pcieport`.
#[cfg(unix)]
pub fn root_port(root: &Path, bdf: &str, numa: &str) -> io::Result<()> {
    let attrs = [
        ("vendor", "0x1ded"),
        ("device", "0x8000"),
        ("class", "0x060400"),
        ("current_link_speed", "32.0 GT/s PCIe"),
        ("max_link_speed", "32.0 GT/s PCIe"),
        ("current_link_width", "16"),
        ("max_link_width", "16"),
        ("numa_node", numa),
    ];
    write_pci_function(root, &[], bdf, &attrs, Some("pcieport"))
}

/// An endpoint below a root port: a NIC (mlx5, NUMA node 0) that trained below its maximum
/// (Gen4 x8 of Gen4 x16).
#[cfg(unix)]
pub fn nic_below(root: &Path, root_port: &str, bdf: &str) -> io::Result<()> {
    let attrs = [
        ("vendor", "0x15b3"),
        ("device", "0x1017"),
        ("class", "0x020000"),
        ("current_link_speed", "16.0 GT/s PCIe"),
        ("max_link_speed", "16.0 GT/s PCIe"),
        ("current_link_width", "8"),
        ("max_link_width", "16"),
        ("numa_node", "0"),
    ];
    write_pci_function(root, &[root_port], bdf, &attrs, Some("mlx5_core"))
}

/// An NVMe multipath namespace `nvme{s}n1` of subsystem `s` in the tree at `root`, as the
/// kernel lays it out (below `sys/devices/virtual/nvme-subsystem`, listed in `sys/block`), with
/// the given controllers (0-9), controller `c` below PCI function `0000:3c:00.0`; 4,096 sectors read
/// and 8 written. Returns the controllers' directories.
#[cfg(unix)]
pub fn nvme_multipath(root: &Path, s: u32, controllers: &[u32]) -> io::Result<Vec<std::path::PathBuf>> {
    use crate::tree::symlink;
    let subsys = format!("sys/devices/virtual/nvme-subsystem/nvme-subsys{s}");
    let head = root.join(&subsys).join(format!("nvme{s}n1"));
    std::fs::create_dir_all(&head)?;
    std::fs::write(head.join("stat"), "1 0 4096 1 1 0 8 1 0 1 1\n")?;
    let target = format!("../devices/virtual/nvme-subsystem/nvme-subsys{s}/nvme{s}n1");
    symlink(root, &format!("sys/block/nvme{s}n1"), &target)?;
    controllers
        .iter()
        .map(|&c| {
            let func = format!("pci0000:30/0000:30:0{c}.0/0000:3{c}:00.0");
            let ctrl = root.join("sys/devices").join(&func).join(format!("nvme/nvme{c}"));
            std::fs::create_dir_all(&ctrl)?;
            symlink(
                root,
                &format!("{subsys}/nvme{c}"),
                &format!("../../../{func}/nvme/nvme{c}"),
            )?;
            Ok(ctrl)
        })
        .collect()
}
