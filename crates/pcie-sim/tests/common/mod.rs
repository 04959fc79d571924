//! What the simulator's tests share: pcie-bench's usual test shape (random addresses at offset 0,
//! local memory and CPU, no IOMMU) with the knobs the tests turn.

use pcie_sim::{CachePrep, TestOp, Workload};

/// `count` transactions of `op`, `size` bytes each, over a `window` warmed as `prep`.
pub fn workload(op: TestOp, size: u32, window: u64, prep: CachePrep, count: u64) -> Workload {
    Workload {
        op,
        size,
        window,
        host_offset: 0,
        device_offset: 0,
        random: true,
        prep,
        count,
        remote_memory: false,
        remote_cpu: false,
        iommu_page: None,
    }
}
