//! Realistic host trees for tests (here, in pcieperf's CLI tests and the fuzz harness): PCI
//! functions with sysfs attributes, link files and config spaces that agree, as a real host
//! shows them to root. Not part of the product (behind the `fixture` feature).

use pcie_sysfs::tree::{write_config, write_pci_function};
use pcie_sysfs::{Aspm, ConfigBuilder, LinkSetup, LinkSpeed, PortType};
use std::io;
use std::path::{Path, PathBuf};

/// One function to write: attributes, optional config space and driver.
#[derive(Debug, Clone)]
pub struct Func {
    bdf: String,
    attrs: Vec<(String, String)>,
    config: Option<ConfigBuilder>,
    driver: Option<String>,
}

impl Func {
    /// A function in D0, runtime-active, on NUMA node `numa` (-1: none), with the config space
    /// of a PCI Express function of `port_type`.
    pub fn new(bdf: &str, vendor: u16, device: u16, class: u32, port_type: PortType, numa: i32) -> Func {
        let attrs = [
            ("vendor", format!("{vendor:#06x}")),
            ("device", format!("{device:#06x}")),
            ("class", format!("{class:#08x}")),
            ("numa_node", numa.to_string()),
            ("power_state", "D0".into()),
            ("power/runtime_status", "active".into()),
        ];
        Func {
            bdf: bdf.into(),
            attrs: attrs.into_iter().map(|(k, v)| (k.to_string(), v)).collect(),
            config: Some(ConfigBuilder::new(vendor, device, class, port_type)),
            driver: None,
        }
    }

    /// A conventional PCI (or virtual) function: no PCI Express capability, no link files.
    pub fn conventional(bdf: &str, vendor: u16, device: u16, class: u32, numa: i32) -> Func {
        let mut f = Func::new(bdf, vendor, device, class, PortType::Endpoint, numa);
        f.config = Some(ConfigBuilder::conventional(vendor, device, class));
        f
    }

    /// The link: the four sysfs files and the link registers.
    pub fn link(mut self, link: LinkSetup) -> Func {
        for (k, v) in [
            ("current_link_speed", LinkSpeed::kernel_text(link.gts)),
            ("max_link_speed", LinkSpeed::kernel_text(link.max_gts)),
            ("current_link_width", link.width.to_string()),
            ("max_link_width", link.max_width.to_string()),
        ] {
            self.attrs.push((k.into(), v));
        }
        self.config = self.config.map(|c| c.link(link));
        self
    }

    /// Changes the config space (MPS, MRRS, tags, AER ...).
    pub fn config(mut self, f: impl FnOnce(ConfigBuilder) -> ConfigBuilder) -> Func {
        self.config = self.config.map(f);
        self
    }

    /// No `config` file at all.
    pub fn without_config(mut self) -> Func {
        self.config = None;
        self
    }

    /// Any attribute file (written with the newline the kernel prints).
    pub fn attr(mut self, name: &str, value: &str) -> Func {
        self.attrs.retain(|(k, _)| k != name);
        self.attrs.push((name.into(), value.into()));
        self
    }

    pub fn driver(mut self, driver: &str) -> Func {
        self.driver = Some(driver.into());
        self
    }

    /// A bridge's bus range.
    pub fn buses(self, secondary: u8, subordinate: u8) -> Func {
        self.attr("secondary_bus_number", &secondary.to_string())
            .attr("subordinate_bus_number", &subordinate.to_string())
    }

    /// Writes the function below `chain` (its bridges, root port first).
    pub fn write(&self, root: &Path, chain: &[&str]) -> io::Result<()> {
        let attrs: Vec<(&str, &str)> = self.attrs.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        write_pci_function(root, chain, &self.bdf, &attrs, self.driver.as_deref())?;
        if let Some(c) = &self.config {
            write_config(root, &self.bdf, &c.build())?;
        }
        Ok(())
    }
}

/// A link at `gts` GT/s x`width` of `max_gts` x`max_width`, ASPM L1 supported and off.
pub fn link(gts: f64, width: u32, max_gts: f64, max_width: u32) -> LinkSetup {
    LinkSetup {
        gts,
        width,
        max_gts,
        max_width,
        ..LinkSetup::at_max(gts, width)
    }
}

/// An Intel IIO root port (8086:347a, pcieport, MPS 256 supported, 10-bit tag completer) at
/// `bdf`, running its link as given.
pub fn root_port(bdf: &str, numa: i32, l: LinkSetup, secondary: u8) -> Func {
    Func::new(bdf, 0x8086, 0x347a, 0x060400, PortType::RootPort, numa)
        .link(l)
        .config(|c| c.mps(256, 256).tags(true, true, Some((true, false, false))).aer())
        .buses(secondary, secondary)
        .driver("pcieport")
}

/// The NUMA nodes of the host and their CPU lists.
pub fn numa_nodes(root: &Path, cpulists: &[&str]) -> io::Result<()> {
    for (n, cpus) in cpulists.iter().enumerate() {
        let dir = root.join(format!("sys/devices/system/node/node{n}"));
        std::fs::create_dir_all(&dir)?;
        std::fs::write(dir.join("cpulist"), format!("{cpus}\n"))?;
    }
    Ok(())
}

/// The kernel's ASPM policy file with `policy` selected.
pub fn aspm_policy(root: &Path, policy: &str) -> io::Result<()> {
    let text = ["default", "performance", "powersave", "powersupersave"]
        .map(|p| if p == policy { format!("[{p}]") } else { p.to_string() })
        .join(" ");
    let p = root.join(pcie_sysfs::host::ASPM_POLICY);
    std::fs::create_dir_all(p.parent().expect("the policy file has a directory"))?;
    std::fs::write(p, format!("{text}\n"))
}

/// A block device below the function `bdf` (`.../BDF/nvme/nvme0/NAME/stat`, linked from
/// `sys/block/NAME`) that has read and written these many 512 B sectors; returns its `stat`
/// file, for tests that move the counters.
pub fn block_device(root: &Path, bdf: &str, name: &str, read: u64, written: u64) -> io::Result<PathBuf> {
    let dir = device_dir(root, bdf, &format!("nvme/nvme0/{name}"), &format!("sys/block/{name}"))?;
    let stat = dir.join("stat");
    write_block_stat(&stat, read, written)?;
    Ok(stat)
}

/// A block device's `stat` as the kernel writes it (17 fields), with these sectors.
pub fn write_block_stat(stat: &Path, read: u64, written: u64) -> io::Result<()> {
    std::fs::write(stat, format!("100 0 {read} 50 10 0 {written} 5 0 60 55 0 0 0 0 0 0\n"))
}

/// A network interface below the function `bdf` (`.../BDF/net/NAME`, linked from
/// `sys/class/net/NAME`) that received and sent these many bytes.
pub fn net_interface(root: &Path, bdf: &str, name: &str, rx: u64, tx: u64) -> io::Result<()> {
    let dir = device_dir(root, bdf, &format!("net/{name}"), &format!("sys/class/net/{name}"))?;
    std::fs::create_dir_all(dir.join("statistics"))?;
    std::fs::write(dir.join("statistics/rx_bytes"), format!("{rx}\n"))?;
    std::fs::write(dir.join("statistics/tx_bytes"), format!("{tx}\n"))
}

/// `below` in the function's real directory, created, with the class link `link` to it.
fn device_dir(root: &Path, bdf: &str, below: &str, link: &str) -> io::Result<PathBuf> {
    let bdf = bdf.parse().map_err(io::Error::other)?;
    let func = pcie_sysfs::PciDevice::read(root, bdf).map_err(io::Error::other)?;
    let dir = func.dir().join(below);
    std::fs::create_dir_all(&dir)?;
    let link = root.join(link);
    std::fs::create_dir_all(link.parent().expect("a class directory"))?;
    std::os::unix::fs::symlink(&dir, link)?;
    Ok(dir)
}

/// The AER files of a function that counted `correctable` errors of one type.
pub fn aer_correctable(f: Func, kind: &str, count: u64) -> Func {
    let text = format!(
        "RxErr {}\nBadTLP 0\nBadDLLP {}\nRollover 0\nTimeout 0\nNonFatalErr 0\nCorrIntErr 0\nHeaderOF 0\nTOTAL_ERR_COR {count}",
        if kind == "RxErr" { count } else { 0 },
        if kind == "BadDLLP" { count } else { 0 }
    );
    f.attr("aer_dev_correctable", &text)
        .attr("aer_dev_nonfatal", "Undefined 0\nDLP 0\nSDES 0\nTLP 0\nFCP 0\nCmpltTO 0\nCmpltAbrt 0\nUnxCmplt 0\nRxOF 0\nMalfTLP 0\nECRC 0\nUnsupReq 0\nACSViol 0\nUncorrIntErr 0\nBlockedTLP 0\nAtomicOpBlocked 0\nTLPBlockedErr 0\nTOTAL_ERR_NONFATAL 0")
        .attr("aer_dev_fatal", "Undefined 0\nDLP 0\nSDES 0\nTLP 0\nFCP 0\nCmpltTO 0\nCmpltAbrt 0\nUnxCmplt 0\nRxOF 0\nMalfTLP 0\nECRC 0\nUnsupReq 0\nACSViol 0\nUncorrIntErr 0\nBlockedTLP 0\nAtomicOpBlocked 0\nTLPBlockedErr 0\nTOTAL_ERR_FATAL 0")
}

/// A dual-socket x86 server as root sees it (the functions every test names):
///
/// - socket 0 (NUMA 0, CPUs 0-31): root port 16:02.0 → PCIe switch (upstream 17:00.0 trained
///   Gen4 x8 of x16, downstream 18:00.0) → GPU 19:00.0 (10de:20b5) at Gen4 x16;
///   root port 30:02.0 → NVMe 31:00.0 (144d:a80a) with MPS 128 where the path allows 256,
///   5 correctable errors; root port 4a:02.0 → NIC 4b:00.0 (15b3:101d) with ASPM L1 on
///   both ends of its link;
/// - socket 1 (NUMA 1, CPUs 32-63): root port 98:02.0 → FPGA 99:00.0 (10ee:903f, Gen3 x16) with
///   8-bit tags supported but off and MRRS 128; root port b0:02.0 → GPU b1:00.0 idle in D3hot at
///   Gen1 of Gen4; an integrated accelerator (RCiEP) 0000:e7:01.0 with no NUMA node;
/// - a host bridge 00:00.0 and a virtual device 00:04.0 (no link files).
pub fn dual_socket_server(root: &Path) -> io::Result<()> {
    numa_nodes(root, &["0-31", "32-63"])?;
    aspm_policy(root, "default")?;
    let g4x16 = link(16.0, 16, 16.0, 16);
    Func::conventional("0000:00:00.0", 0x8086, 0x09a2, 0x060000, 0).write(root, &[])?;
    Func::conventional("0000:00:04.0", 0x1af4, 0x1000, 0x020000, 0)
        .driver("virtio-pci")
        .write(root, &[])?;
    // Socket 0: a GPU behind a switch whose upstream link trained x8.
    root_port("0000:16:02.0", 0, link(16.0, 8, 16.0, 16), 0x17)
        .buses(0x17, 0x19)
        .write(root, &[])?;
    Func::new("0000:17:00.0", 0x1000, 0xc010, 0x060400, PortType::UpstreamPort, 0)
        .link(link(16.0, 8, 16.0, 16))
        .config(|c| c.mps(512, 256))
        .buses(0x18, 0x19)
        .driver("pcieport")
        .write(root, &["0000:16:02.0"])?;
    Func::new("0000:18:00.0", 0x1000, 0xc010, 0x060400, PortType::DownstreamPort, 0)
        .link(g4x16)
        .config(|c| c.mps(512, 256))
        .buses(0x19, 0x19)
        .driver("pcieport")
        .write(root, &["0000:16:02.0", "0000:17:00.0"])?;
    Func::new("0000:19:00.0", 0x10de, 0x20b5, 0x030200, PortType::Endpoint, 0)
        .link(g4x16)
        .config(|c| c.mps(256, 256).aer())
        .attr("local_cpulist", "0-31")
        .driver("nvidia")
        .write(root, &["0000:16:02.0", "0000:17:00.0", "0000:18:00.0"])?;
    // NVMe with MPS 128 where it and its root port support 256 and 512, its DMAs translated
    // by the IOMMU (lazy invalidation).
    root_port("0000:30:02.0", 0, link(16.0, 4, 16.0, 4), 0x31).write(root, &[])?;
    let nvme = Func::new("0000:31:00.0", 0x144d, 0xa80a, 0x010802, PortType::Endpoint, 0)
        .link(link(16.0, 4, 16.0, 4))
        .config(|c| c.mps(256, 128).aer())
        .attr("local_cpulist", "0-31")
        .attr("iommu_group/type", "DMA-FQ")
        .driver("nvme");
    aer_correctable(nvme, "RxErr", 5).write(root, &["0000:30:02.0"])?;
    // A NIC with ASPM L1 enabled on its link.
    let l1 = LinkSetup {
        aspm_supported: Aspm { l0s: true, l1: true },
        aspm_enabled: Aspm { l0s: false, l1: true },
        ..g4x16
    };
    root_port("0000:4a:02.0", 0, l1, 0x4b).write(root, &[])?;
    Func::new("0000:4b:00.0", 0x15b3, 0x101d, 0x020000, PortType::Endpoint, 0)
        .link(l1)
        .config(|c| c.aer())
        .attr("local_cpulist", "0-31")
        .driver("mlx5_core")
        .write(root, &["0000:4a:02.0"])?;
    // Socket 1: an FPGA with 8-bit tags off and MRRS 128, its IOMMU group identity-mapped.
    let g3x16 = link(8.0, 16, 8.0, 16);
    root_port("0000:98:02.0", 1, g3x16, 0x99).write(root, &[])?;
    Func::new("0000:99:00.0", 0x10ee, 0x903f, 0x058000, PortType::Endpoint, 1)
        .link(g3x16)
        .config(|c| c.mps(512, 256).mrrs(128).tags(true, false, None))
        .attr("local_cpulist", "32-63")
        .attr("iommu_group/type", "identity")
        .driver("xdma")
        .write(root, &["0000:98:02.0"])?;
    // An idle GPU in D3hot whose link dropped to Gen1.
    root_port("0000:b0:02.0", 1, link(2.5, 16, 16.0, 16), 0xb1).write(root, &[])?;
    Func::new("0000:b1:00.0", 0x10de, 0x20b5, 0x030200, PortType::Endpoint, 1)
        .link(link(2.5, 16, 16.0, 16))
        .attr("power_state", "D3hot")
        .attr("power/runtime_status", "suspended")
        .attr("local_cpulist", "32-63")
        .driver("nvidia")
        .write(root, &["0000:b0:02.0"])?;
    // An integrated accelerator without a link or a NUMA node.
    Func::new(
        "0000:e7:01.0",
        0x8086,
        0x0b25,
        0x088000,
        PortType::IntegratedEndpoint,
        -1,
    )
    .driver("idxd")
    .write(root, &[])
}

/// Cuts every `config` file below `root` to the 64 bytes Linux shows users other than root.
pub fn as_user(root: &Path) -> io::Result<()> {
    for bdf in pcie_sysfs::files::list_dir(&root.join(pcie_sysfs::PCI_DEVICES)).map_err(io::Error::other)? {
        let p = root.join(pcie_sysfs::PCI_DEVICES).join(bdf).join("config");
        if let Ok(mut bytes) = std::fs::read(&p) {
            bytes.truncate(64);
            std::fs::write(&p, bytes)?;
        }
    }
    Ok(())
}
