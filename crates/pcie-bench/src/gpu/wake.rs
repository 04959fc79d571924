//! `check --wake`'s load for an NVIDIA GPU: copies to and from it through the CUDA driver
//! (loaded at run time, as the backend loads it) for about the time asked, so that the GPU
//! leaves its idle link speed while pcie-health re-reads its links. The only CUDA-specific part
//! of `check`; pcie-health takes it as a closure.

use super::driver::{self, DeviceBuffer, GpuDevice};
use std::time::{Duration, Instant};

/// Each copy: large enough to keep the copy engines on the link, small enough for any GPU.
const COPY_BYTES: usize = 64 << 20;

/// Copies host to device and back, `COPY_BYTES` at a time, for about `most` on the GPU at PCI
/// address `bdf` (`dddd:bb:dd.f`); what it moved, or why it could not (no driver, no such GPU).
pub fn busy_copies(bdf: &str, most: Duration) -> Result<String, String> {
    driver::probe().map_err(|why| format!("no NVIDIA driver found ({}): {why}", driver::DRIVER_LIBRARY))?;
    let (count, _) = driver::init().map_err(|e| e.to_string())?;
    for ordinal in 0..count {
        let gpu = GpuDevice::open(ordinal).map_err(|e| e.to_string())?;
        if gpu.pci_address().map_err(|e| e.to_string())? != bdf {
            continue;
        }
        let buffer = DeviceBuffer::new(COPY_BYTES).map_err(|e| e.to_string())?;
        let mut host = vec![0x5au8; COPY_BYTES];
        let start = Instant::now();
        let mut moved = 0u64;
        while start.elapsed() < most {
            buffer.upload(&host).map_err(|e| e.to_string())?;
            buffer.download(&mut host).map_err(|e| e.to_string())?;
            moved += 2 * COPY_BYTES as u64;
        }
        let secs = start.elapsed().as_secs_f64();
        return Ok(format!(
            "copied {:.1} GiB to and from cuda:{ordinal} in {secs:.2} s ({:.0} Gb/s, pageable host memory)",
            moved as f64 / (1u64 << 30) as f64,
            moved as f64 * 8.0 / 1e9 / secs.max(1e-9)
        ));
    }
    Err(format!("the CUDA driver has no GPU at {bdf} ({count} devices)"))
}
