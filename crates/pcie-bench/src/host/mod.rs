//! Host-side services a real device backend needs: the DMA buffer (huge pages, NUMA
//! binding), the host's cache steps, and system information for `run.json`. Readers take a
//! root directory so tests use fake sysfs/procfs trees.

mod affinity;
mod buffer;
mod cache;
mod iommu;
mod sysinfo;

pub use affinity::{node_cpus, parse_cpulist, pinned};
pub use buffer::{choose_node, choose_page, DmaBuffer};
pub use cache::CacheSteps;
pub use iommu::HostIommu;
/// The address [`DeviceRecord::read`] takes, parsed from text with `str::parse`.
pub use pcie_sysfs::Bdf;
pub use sysinfo::{numa_nodes, DeviceRecord, KernelIommu, NumaNode};

/// A temporary directory holding `files` (path relative to it, contents).
#[cfg(test)]
pub(crate) fn fake_root(name: &str, files: &[(&str, &str)]) -> std::path::PathBuf {
    let root = std::env::temp_dir().join(format!("pcie-bench-root-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    for (path, contents) in files {
        let p = root.join(path);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, contents).unwrap();
    }
    root
}
