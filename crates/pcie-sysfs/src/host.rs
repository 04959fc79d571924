//! Host-wide files read beside the PCI functions: the kernel's ASPM policy, the NUMA nodes,
//! the kernel's CPU lists, bounded ([`parse_cpu_list`]), and `/proc/cpuinfo` ([`CpuInfo`]:
//! one parser for the PMU catalogs' CPU model and `run.json`'s CPU name and count).

use crate::error::SysfsError;
use crate::files::{list_dir, parse_u64, read_attr, read_text};
use pcie_output::read::Limit;
use std::path::Path;

/// The sysfs files of the ASPM policy and the NUMA nodes, below a root.
pub const ASPM_POLICY: &str = "sys/module/pcie_aspm/parameters/policy";
pub const NUMA_NODES: &str = "sys/devices/system/node";
/// The CPUs' description, below a root.
pub const CPUINFO: &str = "proc/cpuinfo";

/// The ASPM policy in force: the bracketed word of `[default] performance powersave
/// powersupersave`; `None` without the file (a kernel without ASPM support) or a bracket.
pub fn aspm_policy(root: &Path) -> Result<Option<String>, SysfsError> {
    Ok(read_attr(&root.join(ASPM_POLICY))?.and_then(|t| {
        let (_, rest) = t.split_once('[')?;
        let (word, _) = rest.split_once(']')?;
        Some(word.chars().take(40).collect())
    }))
}

/// The NUMA node numbers (`node0`, `node1` ...), sorted; none without the directory.
pub fn numa_nodes(root: &Path) -> Result<Vec<u32>, SysfsError> {
    let mut nodes: Vec<u32> = list_dir(&root.join(NUMA_NODES))?
        .iter()
        .filter_map(|n| n.strip_prefix("node")?.parse().ok())
        .collect();
    nodes.sort_unstable();
    Ok(nodes)
}

/// The most CPUs a list may name (Linux's NR_CPUS is at most 8192; a longer list is corrupt).
const MAX_CPUS: usize = 65536;

/// A CPU list such as `0`, `0,28` or `0-3,8`, naming at most [`MAX_CPUS`] CPUs.
pub fn parse_cpu_list(s: &str) -> Option<Vec<u32>> {
    let mut cpus = Vec::new();
    for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        match part.split_once('-') {
            Some((a, b)) => {
                let (a, b): (u32, u32) = (a.trim().parse().ok()?, b.trim().parse().ok()?);
                if b < a || (b - a) as usize >= MAX_CPUS - cpus.len().min(MAX_CPUS) {
                    return None;
                }
                cpus.extend(a..=b);
            }
            None => cpus.push(part.parse().ok()?),
        }
        if cpus.len() > MAX_CPUS {
            return None;
        }
    }
    Some(cpus)
}

/// What `/proc/cpuinfo` says about the CPUs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CpuInfo {
    /// The first processor's identity.
    pub model: CpuModel,
    /// The `processor` entries: logical CPUs.
    pub processors: usize,
    /// The name a person reads: the first `model name`, else Arm's `Model` or `Hardware` line
    /// (written once, after the processors).
    pub name: Option<String>,
}

impl CpuInfo {
    /// `ROOT/proc/cpuinfo`, at most [`Limit::PROC_FILE`]; `None` when the file does not exist.
    pub fn read(root: &Path) -> Result<Option<CpuInfo>, SysfsError> {
        Ok(read_text(&root.join(CPUINFO), Limit::PROC_FILE)?.map(|t| CpuInfo::parse(&t)))
    }

    /// The facts of a cpuinfo text.
    pub fn parse(cpuinfo: &str) -> CpuInfo {
        let fields = || {
            cpuinfo.lines().filter_map(|l| {
                let (k, v) = l.split_once(':')?;
                Some((k.trim(), v.trim()))
            })
        };
        let field = |name: &str| fields().find(|(k, _)| *k == name).map(|(_, v)| v.to_string());
        CpuInfo {
            model: CpuModel::parse(cpuinfo),
            processors: fields().filter(|(k, _)| *k == "processor").count(),
            name: field("model name")
                .or_else(|| field("Model"))
                .or_else(|| field("Hardware")),
        }
    }
}

/// The CPU model, from `/proc/cpuinfo`: x86 vendor/family/model, or the Arm implementer/part.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct CpuModel {
    pub vendor: Option<String>,
    pub family: Option<u32>,
    pub model: Option<u32>,
    pub model_name: Option<String>,
    pub arm_implementer: Option<u32>,
    pub arm_part: Option<u32>,
}

impl CpuModel {
    /// The first processor's fields of a cpuinfo text.
    pub fn parse(cpuinfo: &str) -> CpuModel {
        let mut m = CpuModel::default();
        for line in cpuinfo.lines() {
            if line.trim().is_empty() && m != CpuModel::default() {
                break; // end of the first processor's block
            }
            let Some((k, v)) = line.split_once(':') else { continue };
            let (k, v) = (k.trim(), v.trim());
            match k {
                "vendor_id" => m.vendor = Some(v.to_string()),
                "cpu family" => m.family = v.parse().ok(),
                "model" => m.model = v.parse().ok(),
                "model name" => m.model_name = Some(v.to_string()),
                "CPU implementer" => m.arm_implementer = parse_u64(v).and_then(|x| u32::try_from(x).ok()),
                "CPU part" => m.arm_part = parse_u64(v).and_then(|x| u32::try_from(x).ok()),
                _ => {}
            }
        }
        m
    }

    /// Intel family 6 model number, when this is an Intel CPU.
    pub fn intel_model(&self) -> Option<u32> {
        (self.vendor.as_deref() == Some("GenuineIntel") && self.family == Some(6))
            .then_some(self.model)
            .flatten()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_lists() {
        assert_eq!(parse_cpu_list("0,28"), Some(vec![0, 28]));
        assert_eq!(parse_cpu_list("0-2,8"), Some(vec![0, 1, 2, 8]));
        assert_eq!(parse_cpu_list(""), Some(vec![]));
        assert_eq!(parse_cpu_list("3-1"), None);
        assert_eq!(parse_cpu_list("0-65535").map(|c| c.len()), Some(65536));
        assert_eq!(parse_cpu_list("0-65535,0"), None, "more CPUs than any kernel has");
        assert_eq!(parse_cpu_list(&vec!["0-4095"; 17].join(",")), None);
        assert_eq!(parse_cpu_list("4294967296"), None);
        assert_eq!(parse_cpu_list("0-4294967295"), None, "refused before it is expanded");
    }

    #[test]
    fn policy_and_nodes() {
        let root = std::env::temp_dir().join(format!("pcie-sysfs-host-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        assert_eq!(aspm_policy(&root), Ok(None));
        assert_eq!(numa_nodes(&root), Ok(vec![]));
        std::fs::create_dir_all(root.join(ASPM_POLICY).parent().unwrap()).unwrap();
        std::fs::write(root.join(ASPM_POLICY), "default [powersave] performance\n").unwrap();
        for n in ["node1", "node0", "possible", "nodex"] {
            std::fs::create_dir_all(root.join(NUMA_NODES).join(n)).unwrap();
        }
        assert_eq!(aspm_policy(&root).unwrap().as_deref(), Some("powersave"));
        assert_eq!(numa_nodes(&root).unwrap(), [0, 1]);
        std::fs::write(root.join(ASPM_POLICY), "no brackets\n").unwrap();
        assert_eq!(aspm_policy(&root), Ok(None));
        std::fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn cpuinfo_first_processor() {
        let x86 = "processor\t: 0\nvendor_id\t: GenuineIntel\ncpu family\t: 6\nmodel\t\t: 143\nmodel name\t: Xeon\n\nprocessor\t: 1\nmodel\t\t: 1\n";
        let m = CpuModel::parse(x86);
        assert_eq!(m.intel_model(), Some(143));
        let arm = "processor\t: 0\nCPU implementer\t: 0x41\nCPU part\t: 0xd49\n";
        let m = CpuModel::parse(arm);
        assert_eq!(
            (m.arm_implementer, m.arm_part, m.intel_model()),
            (Some(0x41), Some(0xd49), None)
        );
        // A value wider than 32 bits is unknown, not truncated to a real part number.
        let wide = CpuModel::parse("CPU implementer\t: 0x100000041\nCPU part\t: 0x100000d49\n");
        assert_eq!((wide.arm_implementer, wide.arm_part), (None, None));
    }

    #[test]
    fn cpuinfo_name_and_count() {
        let x86 = CpuInfo::parse("processor\t: 0\nmodel name\t: Xeon\n\nprocessor\t: 1\nmodel name\t: Xeon\n");
        assert_eq!((x86.processors, x86.name.as_deref()), (2, Some("Xeon")));
        // Arm names the board once, after the processors.
        let arm = CpuInfo::parse("processor\t: 0\nCPU part\t: 0xd08\n\nHardware\t: BCM2835\nModel\t: Pi 4\n");
        assert_eq!((arm.processors, arm.name.as_deref()), (1, Some("Pi 4")));
        assert_eq!(arm.model.arm_part, Some(0xd08));
        let root = std::env::temp_dir().join(format!("pcie-sysfs-cpuinfo-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        assert_eq!(CpuInfo::read(&root), Ok(None));
        std::fs::create_dir_all(root.join("proc")).unwrap();
        std::fs::write(root.join(CPUINFO), "processor\t: 0\nHardware\t: X\n").unwrap();
        assert_eq!(CpuInfo::read(&root).unwrap().and_then(|c| c.name), Some("X".into()));
        std::fs::remove_dir_all(&root).unwrap();
    }
}
