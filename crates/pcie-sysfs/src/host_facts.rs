//! What the host and a device are, as a benchmark run records them (`run.json`) and the GPU
//! readers describe a GPU: the kernel command line and its IOMMU settings, the NUMA layout
//! (CPUs and memory per node), and a device's link state and MPS/MRRS (read through
//! [`PciDevice`]). pcie-bench kept the same facts in its `sys-*.txt` files; results differ
//! with them.

use crate::files::{list_dir, read_attr};
use crate::{Bdf, PciDevice, SysfsError};
use pcie_model::{Generation, LinkConfig, LinkParams};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;

/// The kernel command line and what it says about the IOMMU.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct KernelIommu {
    /// IOMMU-related parameters as given: `intel_iommu`, `amd_iommu`, `iommu`,
    /// `iommu.passthrough`, `iommu.strict`, ...
    pub params: BTreeMap<String, String>,
    /// On (`intel_iommu=on`, `amd_iommu=on`), off (`...=off`, `iommu=off`), or not said.
    pub enabled: Option<bool>,
    /// DMA bypasses translation: `iommu=pt` or `iommu.passthrough=1` (`=0`/`iommu=nopt`: no).
    pub passthrough: Option<bool>,
    /// IOMMU units the kernel registered (`/sys/class/iommu`): translation is live when any.
    pub units: Vec<String>,
}

impl KernelIommu {
    /// Parses a kernel command line; `units` are the names under `sys/class/iommu`.
    pub fn parse(cmdline: &str, units: Vec<String>) -> KernelIommu {
        let mut k = KernelIommu {
            units,
            ..KernelIommu::default()
        };
        // Arguments after "--" go to init, not the kernel.
        for arg in cmdline.split_whitespace().take_while(|a| *a != "--") {
            let (key, value) = arg.split_once('=').unwrap_or((arg, ""));
            if !(key.contains("iommu") || key == "swiotlb") {
                continue;
            }
            k.params.insert(key.to_string(), value.to_string());
            let flags: Vec<&str> = value.split(',').collect();
            match key {
                "intel_iommu" | "amd_iommu" if flags.contains(&"on") => k.enabled = Some(true),
                "intel_iommu" | "amd_iommu" if flags.contains(&"off") => k.enabled = Some(false),
                "iommu" if flags.contains(&"off") => k.enabled = Some(false),
                "iommu" if flags.contains(&"pt") => k.passthrough = Some(true),
                "iommu" if flags.contains(&"nopt") => k.passthrough = Some(false),
                "iommu.passthrough" => k.passthrough = Some(matches!(value, "1" | "on" | "y")),
                _ => {}
            }
        }
        k
    }

    pub fn read(root: &Path) -> KernelIommu {
        let cmdline = read_attr(&root.join("proc/cmdline")).ok().flatten().unwrap_or_default();
        KernelIommu::parse(&cmdline, list_dir(&root.join("sys/class/iommu")).unwrap_or_default())
    }
}

/// One NUMA node: its CPUs and memory.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NumaNode {
    pub id: u32,
    /// CPU list as the kernel writes it, e.g. `0-7,16-23`.
    pub cpus: String,
    /// MemTotal of the node in KiB, when readable.
    pub memory_kib: Option<u64>,
}

/// The machine's NUMA nodes (those [`crate::host::numa_nodes`] lists) with their CPUs and
/// memory, by id; empty when the kernel has no NUMA information.
pub fn numa_layout(root: &Path) -> Vec<NumaNode> {
    let base = root.join(crate::host::NUMA_NODES);
    let ids = crate::host::numa_nodes(root).unwrap_or_default();
    ids.into_iter()
        .map(|id| {
            let dir = base.join(format!("node{id}"));
            let memory_kib = read_attr(&dir.join("meminfo")).ok().flatten().and_then(|m| {
                m.lines().find_map(|l| {
                    let rest = l.split_once("MemTotal:")?.1;
                    rest.split_whitespace().next()?.parse().ok()
                })
            });
            NumaNode {
                id,
                cpus: read_trimmed(&dir.join("cpulist")).unwrap_or_default(),
                memory_kib,
            }
        })
        .collect()
}

/// A device as `run.json` records it (read through [`PciDevice`]:
/// ids as hex text, MPS/MRRS or why they are missing).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct DeviceRecord {
    /// `0000:03:00.0`.
    pub bdf: String,
    pub vendor: Option<String>,
    pub device: Option<String>,
    /// As sysfs writes them, e.g. `8.0 GT/s PCIe`.
    pub current_link_speed: Option<String>,
    pub current_link_width: Option<u32>,
    pub max_link_speed: Option<String>,
    pub max_link_width: Option<u32>,
    /// NUMA node of the device (`-1` in sysfs: none).
    pub numa_node: Option<u32>,
    /// Max payload size and max read request size in bytes, from the Device Control register.
    pub mps: Option<u32>,
    pub mrrs: Option<u32>,
    /// Largest MPS the device supports (Device Capabilities).
    pub mps_supported: Option<u32>,
    /// Why MPS/MRRS are missing, when they are.
    pub note: Option<String>,
    /// The type of the device's IOMMU group (`DMA`, `DMA-FQ`, `identity`), when it has one.
    pub iommu_group_type: Option<String>,
}

impl DeviceRecord {
    /// Reads `sys/bus/pci/devices/BDF` under `root`. Fails when the device is not there or its
    /// directory cannot be read.
    pub fn read(root: &Path, bdf: Bdf) -> Result<DeviceRecord, SysfsError> {
        let sys = PciDevice::read(root, bdf)?;
        let id = |v: Option<u16>| v.map(|v| format!("{v:#06x}"));
        let control = sys.device_control();
        let mut d = DeviceRecord {
            bdf: bdf.to_string(),
            vendor: id(sys.vendor),
            device: id(sys.device),
            current_link_speed: sys.current_link_speed,
            current_link_width: sys.current_link_width,
            max_link_speed: sys.max_link_speed,
            max_link_width: sys.max_link_width,
            numa_node: sys.numa_node,
            iommu_group_type: read_trimmed(
                &root
                    .join("sys/bus/pci/devices")
                    .join(bdf.to_string())
                    .join("iommu_group/type"),
            ),
            ..DeviceRecord::default()
        };
        match control {
            Ok(c) => (d.mps, d.mrrs, d.mps_supported) = (Some(c.mps), Some(c.mrrs), Some(c.mps_supported)),
            Err(why) => d.note = Some(why.to_string()),
        }
        Ok(d)
    }

    /// The link as the model describes it, when the device's speed, width, MPS and MRRS are
    /// all known (nothing else is guessed: the rest are the model's defaults).
    pub fn link_config(&self) -> Option<LinkConfig> {
        let gen = Generation::from_sysfs_speed(self.current_link_speed.as_deref()?)?;
        LinkConfig::new(&LinkParams {
            gen,
            lanes: self.current_link_width?,
            mps: self.mps?,
            mrrs: self.mrrs?,
            ..LinkParams::default()
        })
        .ok()
    }
}

/// A non-empty attribute, or nothing.
fn read_trimmed(path: &Path) -> Option<String> {
    read_attr(path).ok().flatten().filter(|s| !s.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A temporary directory holding `files` (path relative to it, contents).
    fn fake_root(name: &str, files: &[(&str, &str)]) -> std::path::PathBuf {
        let root = std::env::temp_dir().join(format!("pcie-sysfs-facts-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        for (path, contents) in files {
            let p = root.join(path);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, contents).unwrap();
        }
        root
    }

    fn bdf(s: &str) -> Bdf {
        s.parse().unwrap()
    }

    #[test]
    fn iommu_settings_from_the_command_line() {
        let k = KernelIommu::parse(
            "BOOT_IMAGE=/vmlinuz root=/dev/sda1 intel_iommu=on,sm_on iommu=pt quiet -- iommu=off",
            vec!["dmar0".into()],
        );
        assert_eq!((k.enabled, k.passthrough), (Some(true), Some(true)));
        assert_eq!(k.params.get("intel_iommu").map(String::as_str), Some("on,sm_on"));
        assert_eq!(
            k.params.len(),
            2,
            "init's arguments after -- are not the kernel's: {k:?}"
        );
        assert_eq!(k.units, vec!["dmar0".to_string()]);
        let k = KernelIommu::parse("amd_iommu=off iommu.passthrough=0 iommu.strict=1", vec![]);
        assert_eq!((k.enabled, k.passthrough), (Some(false), Some(false)));
        assert_eq!(k.params.get("iommu.strict").map(String::as_str), Some("1"));
        let none = KernelIommu::parse("console=ttyS0 quiet", vec![]);
        assert_eq!(none, KernelIommu::default());
    }

    #[test]
    fn numa_layout_from_sysfs() {
        let root = fake_root(
            "numa",
            &[
                ("sys/devices/system/node/node1/cpulist", "8-15\n"),
                (
                    "sys/devices/system/node/node1/meminfo",
                    "Node 1 MemTotal:       65856064 kB\nNode 1 MemFree: 1 kB\n",
                ),
                ("sys/devices/system/node/node0/cpulist", "0-7\n"),
                ("sys/devices/system/node/online", "0-1\n"),
            ],
        );
        let nodes = numa_layout(&root);
        assert_eq!(
            nodes,
            vec![
                NumaNode {
                    id: 0,
                    cpus: "0-7".into(),
                    memory_kib: None
                },
                NumaNode {
                    id: 1,
                    cpus: "8-15".into(),
                    memory_kib: Some(65_856_064)
                },
            ]
        );
        assert!(numa_layout(&root.join("nothing")).is_empty());
        std::fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn device_link_state_from_sysfs() {
        let dev = "sys/bus/pci/devices/0000:03:00.0";
        let cfg = crate::fixture::config_with_pcie_capability(1, (1 << 5) | (5 << 12), 256);
        let root = fake_root(
            "pcidev",
            &[
                (&format!("{dev}/current_link_speed"), "8.0 GT/s PCIe\n"),
                (&format!("{dev}/current_link_width"), "8\n"),
                (&format!("{dev}/max_link_speed"), "16.0 GT/s PCIe\n"),
                (&format!("{dev}/max_link_width"), "16\n"),
                (&format!("{dev}/numa_node"), "-1\n"),
                (&format!("{dev}/vendor"), "0x19ee\n"),
            ],
        );
        std::fs::write(root.join(dev).join("config"), &cfg).unwrap();
        let d = DeviceRecord::read(&root, bdf("0000:03:00.0")).unwrap();
        assert_eq!(d.current_link_speed.as_deref(), Some("8.0 GT/s PCIe"));
        assert_eq!(
            (d.current_link_width, d.max_link_width, d.numa_node),
            (Some(8), Some(16), None)
        );
        assert_eq!(
            (d.mps, d.mrrs, d.mps_supported, d.note.as_deref()),
            (Some(256), Some(4096), Some(256), None)
        );
        let link = d.link_config().unwrap();
        assert_eq!(
            (link.gen, link.lanes, link.mps, link.mrrs),
            (Generation::Gen3, 8, 256, 4096)
        );
        assert_eq!(d.iommu_group_type, None, "no IOMMU group");
        // The group as sysfs links it: a directory of /sys/kernel/iommu_groups.
        let group = root.join("sys/kernel/iommu_groups/7");
        std::fs::create_dir_all(&group).unwrap();
        std::fs::write(group.join("type"), "DMA-FQ\n").unwrap();
        std::os::unix::fs::symlink("../../../../kernel/iommu_groups/7", root.join(dev).join("iommu_group")).unwrap();
        let grouped = DeviceRecord::read(&root, bdf("0000:03:00.0")).unwrap();
        assert_eq!(grouped.iommu_group_type.as_deref(), Some("DMA-FQ"));
        std::fs::write(root.join(dev).join("config"), &cfg[..64]).unwrap();
        let user = DeviceRecord::read(&root, bdf("0000:03:00.0")).unwrap();
        assert_eq!(user.mps, None);
        assert_eq!(user.link_config(), None, "no link without MPS/MRRS");
        assert!(user.note.unwrap().contains("needs root"));
        let missing = DeviceRecord::read(&root, bdf("0000:04:00.0")).unwrap_err().to_string();
        assert!(missing.starts_with("no PCI device 0000:04:00.0 in "), "{missing}");
        std::fs::remove_dir_all(&root).unwrap();
    }
}
