//! Host-wide files the link checks read beside the PCI functions: the kernel's ASPM policy
//! and the NUMA nodes; and the kernel's CPU lists, bounded ([`parse_cpu_list`]).

use crate::error::SysfsError;
use crate::files::{list_dir, read_attr};
use std::path::Path;

/// The sysfs files of the ASPM policy and the NUMA nodes, below a root.
pub const ASPM_POLICY: &str = "sys/module/pcie_aspm/parameters/policy";
pub const NUMA_NODES: &str = "sys/devices/system/node";

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
}
