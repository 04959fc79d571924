//! What to simulate: one pcie-bench-style test, described without depending on the bench crate.

use crate::rng::Rng;

/// The operation each transaction performs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TestOp {
    /// Latency of one DMA read at a time.
    LatRead,
    /// Latency of a DMA write followed by a DMA read of the same address.
    LatWriteRead,
    /// Latency of a command-path read (device BAR window to host memory).
    LatCmdRead,
    /// Command-path write then read.
    LatCmdWriteRead,
    /// Read bandwidth with all DMA workers busy.
    BwRead,
    /// Write bandwidth.
    BwWrite,
    /// Alternating reads (odd transactions) and writes (even ones).
    BwReadWrite,
}

impl TestOp {
    pub fn is_bandwidth(self) -> bool {
        matches!(self, TestOp::BwRead | TestOp::BwWrite | TestOp::BwReadWrite)
    }
}

/// Cache preparation before the test (the host's caches are always thrashed first).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CachePrep {
    Cold,
    /// The device writes random lines over the whole buffer.
    DeviceThrash,
    /// The device writes the window.
    DeviceWarm,
    /// A core writes the window.
    HostWarm,
}

/// One test.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Workload {
    pub op: TestOp,
    pub size: u32,
    pub window: u64,
    pub host_offset: u32,
    pub device_offset: u32,
    pub random: bool,
    pub prep: CachePrep,
    /// Samples (latency) or DMAs (bandwidth).
    pub count: u64,
    /// The buffer's home memory is on another socket than the device: a line in no cache
    /// (or a write's ownership of one) is a socket-link hop away.
    pub remote_memory: bool,
    /// The warming CPU is on another socket than the device: lines it warmed sit in that
    /// socket's LLC, a hop away whatever their home. Lines the device wrote sit in its own.
    pub remote_cpu: bool,
    /// IO page size when the IOMMU translates, `None` when it is off.
    pub iommu_page: Option<u64>,
}

impl Workload {
    /// pcie-bench's usual test: `count` transactions of `op`, `size` bytes each, at random
    /// addresses of a `window` warmed as `prep`, offsets 0, memory and CPU on the device's
    /// socket, no IOMMU. Other shapes set the fields after.
    pub fn new(op: TestOp, size: u32, window: u64, prep: CachePrep, count: u64) -> Workload {
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
}

impl Workload {
    /// pcie-bench's unit: transfer plus host offset, rounded up to 64 B cache lines; the window
    /// holds `window / unit` of them (at least one).
    pub fn units(&self) -> (u64, u64) {
        let unit = (self.size as u64 + self.host_offset as u64).next_multiple_of(64);
        (unit, (self.window / unit).max(1))
    }
}

/// The 64 MB host buffer pcie-bench allocates.
pub const BUFFER_BYTES: u64 = 64 << 20;

/// Addresses a test visits: pcie-bench's units of (size + host offset) rounded up to 64 B,
/// skipping units whose transfer would cross a 4 KB boundary. Every backend that generates
/// addresses on the host (the simulator, the GPU) uses this, so a seed visits the same lines.
pub struct Addresses {
    units: Vec<u32>,
    unit: u64,
    host_offset: u64,
    random: bool,
    next: usize,
}

impl Addresses {
    pub fn new(w: &Workload) -> Addresses {
        let (unit, count) = w.units();
        // Transfers larger than a page (a GPU's copy engines) cross pages by nature.
        let page_bound = w.size as u64 + w.host_offset as u64 <= 4096;
        let crosses = |u: u64| {
            let a = u * unit + w.host_offset as u64;
            page_bound && a / 4096 != (a + w.size as u64 - 1) / 4096
        };
        let units: Vec<u32> = (0..count).filter(|&u| !crosses(u)).map(|u| u as u32).collect();
        Addresses {
            units,
            unit,
            host_offset: w.host_offset as u64,
            random: w.random,
            next: 0,
        }
    }

    /// The next transfer's byte offset in the buffer.
    pub fn next(&mut self, rng: &mut Rng) -> u64 {
        let i = if self.random {
            rng.below(self.units.len() as u64) as usize
        } else {
            let i = self.next;
            // Not a modulo: a division per DMA shows in a latency test's time.
            self.next = if i + 1 == self.units.len() { 0 } else { i + 1 };
            i
        };
        self.units[i] as u64 * self.unit + self.host_offset
    }
}
