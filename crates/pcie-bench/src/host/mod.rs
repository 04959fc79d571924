//! Host-side services a real device backend needs: the DMA buffer (huge pages, NUMA
//! binding), the host's cache steps and the IOMMU mode its DMAs meet. The host's facts
//! themselves (NUMA nodes, kernel IOMMU settings, the device record) are pcie-sysfs's. Readers
//! take a root directory so tests use fake sysfs/procfs trees.

mod affinity;
mod buffer;
mod cache;
mod iommu;

pub use affinity::{node_cpus, pinned};
pub use buffer::{choose_node, choose_page, DmaBuffer, PagePlacement};
pub use cache::CacheSteps;
pub use iommu::{cmdline_mode, HostIommu};

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
