//! `check --wake`'s load for an NVIDIA GPU: copies to and from it through the CUDA driver
//! (loaded at run time, as the backend loads it) for about the time asked, so that the GPU
//! leaves its idle link speed while pcie-health re-reads its links. The only CUDA-specific part
//! of `check`; pcie-health takes it as a closure.

use super::driver::{self, DeviceBuffer, GpuDevice};
use cudarc::driver::sys;
use std::time::{Duration, Instant};

/// Each copy: large enough to keep the copy engines on the link, small enough for any GPU.
const COPY_BYTES: usize = 64 << 20;

/// Copies host to device and back, `COPY_BYTES` at a time, for about `most` on the GPU at PCI
/// address `bdf` (`dddd:bb:dd.f`); what it moved, or why it could not (no driver, no such GPU).
pub fn busy_copies(bdf: &str, most: Duration) -> Result<String, String> {
    driver::probe().map_err(|why| format!("no NVIDIA driver found ({}): {why}", driver::DRIVER_LIBRARY))?;
    let (count, _) = driver::init().map_err(|e| e.to_string())?;
    let Some(ordinal) = ordinal_at(bdf, count)? else {
        return Err(format!("the CUDA driver has no GPU at {bdf} ({count} devices)"));
    };
    // Its context, current on this thread, outlives the buffer (dropped first).
    let _context = GpuDevice::open(ordinal).map_err(|e| e.to_string())?;
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
    Ok(format!(
        "copied {:.1} GiB to and from cuda:{ordinal} in {secs:.2} s ({:.0} Gb/s, pageable host memory)",
        moved as f64 / (1u64 << 30) as f64,
        moved as f64 * 8.0 / 1e9 / secs.max(1e-9)
    ))
}

/// The ordinal of the GPU at `bdf`, from each device's PCI attributes, which need no context:
/// no other GPU is woken.
fn ordinal_at(bdf: &str, count: i32) -> Result<Option<i32>, String> {
    use sys::CUdevice_attribute::*;
    for ordinal in 0..count {
        let mut dev = 0;
        let mut ids = [0; 3];
        // SAFETY: out-pointers to locals; the driver was initialised by the caller.
        unsafe {
            let mut status = sys::cuDeviceGet(&mut dev, ordinal);
            for (v, a) in ids.iter_mut().zip([
                CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID,
                CU_DEVICE_ATTRIBUTE_PCI_BUS_ID,
                CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID,
            ]) {
                if status == sys::CUresult::CUDA_SUCCESS {
                    status = sys::cuDeviceGetAttribute(v, a, dev);
                }
            }
            if status != sys::CUresult::CUDA_SUCCESS {
                return Err(format!("cuda:{ordinal}: its PCI address: {status:?}"));
            }
        }
        if format!("{:04x}:{:02x}:{:02x}.0", ids[0], ids[1], ids[2]) == bdf {
            return Ok(Some(ordinal));
        }
    }
    Ok(None)
}
