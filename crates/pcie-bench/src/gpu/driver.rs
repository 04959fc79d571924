//! The slice of the CUDA driver API the GPU backend uses, loaded at run time (cudarc's
//! dynamically loaded bindings): the binary needs no CUDA toolkit to build, and runs without a
//! driver until `--backend cuda` is asked for. Each call's status becomes an error naming the
//! call and the driver's own message.

use super::plan::Arg;
use cudarc::driver::sys;
use std::ffi::{c_void, CStr, CString};

/// The library the driver installs; probed before any binding is touched (the bindings panic
/// when it is missing).
pub const DRIVER_LIBRARY: &str = "libcuda.so.1";

/// Loads the driver library, or says why it cannot be loaded (dlopen's message).
pub fn probe() -> Result<(), String> {
    let name = CString::new(DRIVER_LIBRARY).expect("no NUL in the name");
    // SAFETY: dlopen/dlerror with a valid C string; the handle is kept open for the process,
    // as the bindings load the same library again by name.
    unsafe {
        if libc::dlopen(name.as_ptr(), libc::RTLD_NOW | libc::RTLD_GLOBAL).is_null() {
            let why = libc::dlerror();
            let why = if why.is_null() {
                "dlopen failed".to_string()
            } else {
                CStr::from_ptr(why).to_string_lossy().into_owned()
            };
            return Err(why);
        }
    }
    Ok(())
}

/// A failed driver call: which call and what the driver said.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DriverError(pub String);

impl std::fmt::Display for DriverError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// `Ok` for CUDA_SUCCESS, else an error naming `call` with the driver's description.
fn check(call: &str, status: sys::CUresult) -> Result<(), DriverError> {
    if status == sys::CUresult::CUDA_SUCCESS {
        return Ok(());
    }
    let mut text: *const std::ffi::c_char = std::ptr::null();
    // SAFETY: cuGetErrorString writes a pointer to a static string or leaves it null.
    let described = unsafe { sys::cuGetErrorString(status, &mut text) } == sys::CUresult::CUDA_SUCCESS;
    let message = if described && !text.is_null() {
        // SAFETY: the driver returned a NUL-terminated static string.
        unsafe { CStr::from_ptr(text) }.to_string_lossy().into_owned()
    } else {
        format!("{status:?}")
    };
    Err(DriverError(format!("{call}: {message}")))
}

/// The driver initialised, the number of devices, and the driver's CUDA version (e.g. 13000).
pub fn init() -> Result<(i32, i32), DriverError> {
    // SAFETY: plain driver calls with out-pointers to locals.
    unsafe {
        check("cuInit", sys::cuInit(0))?;
        let mut count = 0;
        check("cuDeviceGetCount", sys::cuDeviceGetCount(&mut count))?;
        let mut version = 0;
        check("cuDriverGetVersion", sys::cuDriverGetVersion(&mut version))?;
        Ok((count, version))
    }
}

/// One GPU with its primary context made current on the calling thread.
pub struct GpuDevice {
    dev: sys::CUdevice,
    ctx: sys::CUcontext,
}

// SAFETY: the context handle may be made current on any thread (`bind`), and the driver API is
// thread-safe; the backend serialises tests on one device behind a mutex.
unsafe impl Send for GpuDevice {}

impl GpuDevice {
    pub fn open(ordinal: i32) -> Result<GpuDevice, DriverError> {
        let mut dev = 0;
        let mut ctx = std::ptr::null_mut();
        // SAFETY: out-pointers to locals; the context is released in Drop.
        unsafe {
            check("cuDeviceGet", sys::cuDeviceGet(&mut dev, ordinal))?;
            check("cuDevicePrimaryCtxRetain", sys::cuDevicePrimaryCtxRetain(&mut ctx, dev))?;
        }
        let d = GpuDevice { dev, ctx };
        d.bind()?;
        Ok(d)
    }

    /// Makes the context current on the calling thread (tests run on the runner's threads).
    pub fn bind(&self) -> Result<(), DriverError> {
        // SAFETY: a context retained in `open` and not yet released.
        check("cuCtxSetCurrent", unsafe { sys::cuCtxSetCurrent(self.ctx) })
    }

    pub fn name(&self) -> Result<String, DriverError> {
        let mut buf = [0 as std::ffi::c_char; 256];
        // SAFETY: the driver writes at most `len` bytes, NUL-terminated.
        unsafe {
            check(
                "cuDeviceGetName",
                sys::cuDeviceGetName(buf.as_mut_ptr(), buf.len() as i32, self.dev),
            )?;
            Ok(CStr::from_ptr(buf.as_ptr()).to_string_lossy().into_owned())
        }
    }

    /// The UUID as nvidia-smi prints it: GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx.
    pub fn uuid(&self) -> Result<String, DriverError> {
        let mut u = sys::CUuuid { bytes: [0; 16] };
        // SAFETY: out-pointer to a local.
        check("cuDeviceGetUuid", unsafe { sys::cuDeviceGetUuid_v2(&mut u, self.dev) })?;
        Ok(format_uuid(&u.bytes.map(|b| b as u8)))
    }

    pub fn attribute(&self, attr: sys::CUdevice_attribute) -> Result<i32, DriverError> {
        let mut v = 0;
        // SAFETY: out-pointer to a local.
        check("cuDeviceGetAttribute", unsafe {
            sys::cuDeviceGetAttribute(&mut v, attr, self.dev)
        })?;
        Ok(v)
    }

    /// The PCI address, domain:bus:device.0 as sysfs names it.
    pub fn pci_address(&self) -> Result<String, DriverError> {
        use sys::CUdevice_attribute::*;
        let domain = self.attribute(CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID)?;
        let bus = self.attribute(CU_DEVICE_ATTRIBUTE_PCI_BUS_ID)?;
        let device = self.attribute(CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID)?;
        Ok(format!("{domain:04x}:{bus:02x}:{device:02x}.0"))
    }

    pub fn module(&self, ptx: &str) -> Result<Module, DriverError> {
        let text = CString::new(ptx).map_err(|_| DriverError("PTX text holds a NUL byte".into()))?;
        let mut m = std::ptr::null_mut();
        // SAFETY: a NUL-terminated PTX image; the driver copies what it needs.
        check("cuModuleLoadData", unsafe {
            sys::cuModuleLoadData(&mut m, text.as_ptr().cast())
        })?;
        Ok(Module(m))
    }
}

impl Drop for GpuDevice {
    fn drop(&mut self) {
        // SAFETY: releases the retain made in `open`.
        unsafe {
            sys::cuDevicePrimaryCtxRelease_v2(self.dev);
        }
    }
}

/// nvidia-smi's spelling of a UUID.
pub fn format_uuid(b: &[u8; 16]) -> String {
    let hex: Vec<String> = b.iter().map(|x| format!("{x:02x}")).collect();
    format!(
        "GPU-{}-{}-{}-{}-{}",
        hex[0..4].concat(),
        hex[4..6].concat(),
        hex[6..8].concat(),
        hex[8..10].concat(),
        hex[10..16].concat()
    )
}

/// Loaded kernels.
pub struct Module(sys::CUmodule);

impl Module {
    pub fn function(&self, name: &str) -> Result<Function, DriverError> {
        let c = CString::new(name).expect("kernel names have no NUL");
        let mut f = std::ptr::null_mut();
        // SAFETY: a loaded module and a NUL-terminated name.
        check("cuModuleGetFunction", unsafe {
            sys::cuModuleGetFunction(&mut f, self.0, c.as_ptr())
        })
        .map_err(|e| DriverError(format!("{e} ({name})")))?;
        Ok(Function(f))
    }
}

/// A kernel entry point.
#[derive(Clone, Copy)]
pub struct Function(sys::CUfunction);

impl Function {
    /// Launches on the default stream and waits for the kernel to finish.
    pub fn launch(&self, blocks: u32, threads: u32, args: &[(&str, Arg)]) -> Result<(), DriverError> {
        let mut values: Vec<u64> = args
            .iter()
            .map(|(_, a)| match a {
                Arg::U32(v) => *v as u64,
                Arg::U64(v) => *v,
            })
            .collect();
        // Each parameter points at its value; a u32 parameter reads the low 4 bytes of its
        // slot, which on this little-endian target is the value.
        let mut pointers: Vec<*mut c_void> = values.iter_mut().map(|v| (v as *mut u64).cast()).collect();
        // SAFETY: `pointers` has one valid pointer per PTX parameter, alive across the call.
        unsafe {
            check(
                "cuLaunchKernel",
                sys::cuLaunchKernel(
                    self.0,
                    blocks,
                    1,
                    1,
                    threads,
                    1,
                    1,
                    0,
                    std::ptr::null_mut(),
                    pointers.as_mut_ptr(),
                    std::ptr::null_mut(),
                ),
            )?;
            check("cuCtxSynchronize (kernel)", sys::cuCtxSynchronize())
        }
    }
}

impl Function {
    /// Launches and returns the kernel's run time in milliseconds, from events recorded on the
    /// GPU just before and after it (the GPU's own clock, 0.5 us resolution).
    pub fn launch_timed(&self, blocks: u32, threads: u32, args: &[(&str, Arg)]) -> Result<f64, DriverError> {
        let mut events = [std::ptr::null_mut(); 2];
        // SAFETY: events created here and destroyed below; the null stream is the default one.
        unsafe {
            for e in &mut events {
                check("cuEventCreate", sys::cuEventCreate(e, 0))?;
            }
            let timed = (|| {
                check("cuEventRecord", sys::cuEventRecord(events[0], std::ptr::null_mut()))?;
                self.launch(blocks, threads, args)?;
                check("cuEventRecord", sys::cuEventRecord(events[1], std::ptr::null_mut()))?;
                check("cuEventSynchronize", sys::cuEventSynchronize(events[1]))?;
                let mut ms = 0f32;
                check(
                    "cuEventElapsedTime",
                    sys::cuEventElapsedTime(&mut ms, events[0], events[1]),
                )?;
                Ok(ms as f64)
            })();
            for e in events {
                sys::cuEventDestroy_v2(e);
            }
            timed
        }
    }
}

/// Device memory, freed on drop.
pub struct DeviceBuffer {
    pub ptr: sys::CUdeviceptr,
    pub bytes: usize,
}

impl DeviceBuffer {
    pub fn new(bytes: usize) -> Result<DeviceBuffer, DriverError> {
        let mut ptr = 0;
        // SAFETY: out-pointer to a local; freed in Drop.
        check("cuMemAlloc", unsafe { sys::cuMemAlloc_v2(&mut ptr, bytes.max(1)) })?;
        Ok(DeviceBuffer { ptr, bytes })
    }

    pub fn upload<T: Copy>(&self, data: &[T]) -> Result<(), DriverError> {
        let bytes = std::mem::size_of_val(data);
        assert!(bytes <= self.bytes, "upload larger than the buffer");
        // SAFETY: copies `bytes` from a live slice into an allocation at least that large.
        check("cuMemcpyHtoD", unsafe {
            sys::cuMemcpyHtoD_v2(self.ptr, data.as_ptr().cast(), bytes)
        })
    }

    pub fn download<T: Copy>(&self, out: &mut [T]) -> Result<(), DriverError> {
        let bytes = std::mem::size_of_val(out);
        assert!(bytes <= self.bytes, "download larger than the buffer");
        // SAFETY: copies `bytes` into a live mutable slice from an allocation at least that large.
        check("cuMemcpyDtoH", unsafe {
            sys::cuMemcpyDtoH_v2(out.as_mut_ptr().cast(), self.ptr, bytes)
        })
    }
}

impl Drop for DeviceBuffer {
    fn drop(&mut self) {
        // SAFETY: frees the allocation made in `new`.
        unsafe {
            sys::cuMemFree_v2(self.ptr);
        }
    }
}

/// Host memory pinned and mapped into the GPU's address space, unregistered on drop.
pub struct Mapped {
    host: *mut c_void,
    pub device: sys::CUdeviceptr,
}

impl Mapped {
    /// # Safety
    /// `host..host + bytes` must stay allocated while the mapping lives.
    pub unsafe fn new(host: *mut u8, bytes: usize) -> Result<Mapped, DriverError> {
        let flags = sys::CU_MEMHOSTREGISTER_DEVICEMAP | sys::CU_MEMHOSTREGISTER_PORTABLE;
        check(
            "cuMemHostRegister",
            sys::cuMemHostRegister_v2(host.cast(), bytes, flags),
        )?;
        let mut device = 0;
        if let Err(e) = check(
            "cuMemHostGetDevicePointer",
            sys::cuMemHostGetDevicePointer_v2(&mut device, host.cast(), 0),
        ) {
            sys::cuMemHostUnregister(host.cast());
            return Err(e);
        }
        Ok(Mapped {
            host: host.cast(),
            device,
        })
    }
}

impl Drop for Mapped {
    fn drop(&mut self) {
        // SAFETY: undoes the registration made in `new`.
        unsafe {
            sys::cuMemHostUnregister(self.host);
        }
    }
}

/// Streams and timing events for the copy engines.
pub struct Streams {
    streams: Vec<sys::CUstream>,
}

/// Which way a copy goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CopyDirection {
    /// Host to device: the GPU reads host memory (BW_RD).
    HostToDevice,
    /// Device to host: the GPU writes host memory (BW_WR).
    DeviceToHost,
}

impl Streams {
    pub fn new(n: usize) -> Result<Streams, DriverError> {
        let mut streams = Vec::with_capacity(n);
        for _ in 0..n {
            let mut s = std::ptr::null_mut();
            // SAFETY: out-pointer to a local; destroyed in Drop.
            check("cuStreamCreate", unsafe { sys::cuStreamCreate(&mut s, 1) })?; // CU_STREAM_NON_BLOCKING
            streams.push(s);
        }
        Ok(Streams { streams })
    }

    /// Runs `copies` (direction, host pointer, device pointer, bytes) round-robin over the
    /// streams, all released together after a start event, and returns the milliseconds from
    /// that event to the last stream's end event (the GPU's own timestamps).
    ///
    /// # Safety
    /// Every host pointer must be pinned (registered) memory valid for its bytes.
    pub unsafe fn time_copies(
        &self,
        copies: impl Iterator<Item = (CopyDirection, *mut u8, sys::CUdeviceptr, usize)>,
    ) -> Result<f64, DriverError> {
        let event = |flags| -> Result<sys::CUevent, DriverError> {
            let mut e = std::ptr::null_mut();
            check("cuEventCreate", sys::cuEventCreate(&mut e, flags))?;
            Ok(e)
        };
        let start = event(0)?;
        let ends: Vec<sys::CUevent> = (0..self.streams.len()).map(|_| event(0)).collect::<Result<_, _>>()?;
        let result = (|| {
            check("cuEventRecord", sys::cuEventRecord(start, self.streams[0]))?;
            for s in &self.streams[1..] {
                check("cuStreamWaitEvent", sys::cuStreamWaitEvent(*s, start, 0))?;
            }
            for (i, (dir, host, dev, bytes)) in copies.enumerate() {
                let s = self.streams[i % self.streams.len()];
                match dir {
                    CopyDirection::HostToDevice => check(
                        "cuMemcpyHtoDAsync",
                        sys::cuMemcpyHtoDAsync_v2(dev, host.cast(), bytes, s),
                    )?,
                    CopyDirection::DeviceToHost => check(
                        "cuMemcpyDtoHAsync",
                        sys::cuMemcpyDtoHAsync_v2(host.cast(), dev, bytes, s),
                    )?,
                }
            }
            let mut longest = 0f64;
            for (s, e) in self.streams.iter().zip(&ends) {
                check("cuEventRecord", sys::cuEventRecord(*e, *s))?;
            }
            for e in &ends {
                check("cuEventSynchronize", sys::cuEventSynchronize(*e))?;
                let mut ms = 0f32;
                check("cuEventElapsedTime", sys::cuEventElapsedTime(&mut ms, start, *e))?;
                longest = longest.max(ms as f64);
            }
            Ok(longest)
        })();
        sys::cuEventDestroy_v2(start);
        for e in ends {
            sys::cuEventDestroy_v2(e);
        }
        result
    }
}

impl Drop for Streams {
    fn drop(&mut self) {
        for s in &self.streams {
            // SAFETY: streams created in `new`.
            unsafe {
                sys::cuStreamDestroy_v2(*s);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uuids_read_as_nvidia_smi_prints_them() {
        let b: [u8; 16] = [
            0x5e, 0x2a, 0x01, 0x9c, 0x11, 0x22, 0x33, 0x44, 0xab, 0xcd, 0x00, 0x01, 0x02, 0x03, 0x04, 0xff,
        ];
        assert_eq!(format_uuid(&b), "GPU-5e2a019c-1122-3344-abcd-0001020304ff");
    }

    #[test]
    fn a_missing_driver_is_reported_with_dlopen_s_reason() {
        // This machine and CI have no NVIDIA driver; where one is installed the probe succeeds.
        match probe() {
            Ok(()) => eprintln!("an NVIDIA driver is installed here"),
            Err(why) => assert!(why.contains(DRIVER_LIBRARY), "{why}"),
        }
    }
}
