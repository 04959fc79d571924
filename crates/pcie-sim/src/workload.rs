//! What to simulate: one pcie-bench-style test, described without depending on the bench crate.

/// The operation each transaction performs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Op {
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

impl Op {
    pub fn is_bandwidth(self) -> bool {
        matches!(self, Op::BwRead | Op::BwWrite | Op::BwReadWrite)
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
    pub op: Op,
    pub size: u32,
    pub window: u64,
    pub host_offset: u32,
    pub device_offset: u32,
    pub random: bool,
    pub prep: CachePrep,
    /// Samples (latency) or DMAs (bandwidth).
    pub count: u64,
    /// The buffer is on another socket than the device.
    pub remote_memory: bool,
    /// The warming/thrashing CPU is on another socket than the device: lines it warmed sit in
    /// the other socket's caches and a device read snoops across the interconnect.
    pub remote_cpu: bool,
    /// IO page size when the IOMMU translates, `None` when it is off.
    pub iommu_page: Option<u64>,
}

/// The 64 MB host buffer pcie-bench allocates.
pub const BUFFER_BYTES: u64 = 64 << 20;
