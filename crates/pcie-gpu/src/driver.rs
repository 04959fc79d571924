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
        self.enqueue(std::ptr::null_mut(), blocks, threads, args)?;
        // SAFETY: a plain driver call.
        check("cuCtxSynchronize (kernel)", unsafe { sys::cuCtxSynchronize() })
    }

    /// Queues the kernel on `stream` and returns at once.
    pub fn enqueue(
        &self,
        stream: sys::CUstream,
        blocks: u32,
        threads: u32,
        args: &[(&str, Arg)],
    ) -> Result<(), DriverError> {
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
                    stream,
                    pointers.as_mut_ptr(),
                    std::ptr::null_mut(),
                ),
            )
        }
    }
}

impl Function {
    /// Launches and returns the kernel's run time in milliseconds, from events recorded on the
    /// GPU right before and after it, queued behind `gate` (the GPU's own clock, 0.5 us
    /// resolution; neither the launch's submission nor a host round trip is in the figure).
    pub fn launch_timed(
        &self,
        gate: &Gate,
        blocks: u32,
        threads: u32,
        args: &[(&str, Arg)],
    ) -> Result<f64, DriverError> {
        let null = [std::ptr::null_mut()];
        gate.time(&null, || self.enqueue(null[0], blocks, threads, args))
    }
}

/// A word pair in pinned host memory mapped into the GPU: the host opens the gate by writing
/// word 0, the gate kernel writes what it saw into word 1.
struct HostFlag {
    host: *mut u32,
    device: sys::CUdeviceptr,
}

impl HostFlag {
    fn new() -> Result<HostFlag, DriverError> {
        let mut host = std::ptr::null_mut();
        let flags = sys::CU_MEMHOSTALLOC_DEVICEMAP | sys::CU_MEMHOSTALLOC_PORTABLE;
        // SAFETY: out-pointers to locals; freed in Drop.
        unsafe {
            check("cuMemHostAlloc", sys::cuMemHostAlloc(&mut host, 8, flags))?;
            let mut device = 0;
            if let Err(e) = check(
                "cuMemHostGetDevicePointer",
                sys::cuMemHostGetDevicePointer_v2(&mut device, host, 0),
            ) {
                sys::cuMemFreeHost(host);
                return Err(e);
            }
            Ok(HostFlag {
                host: host.cast(),
                device,
            })
        }
    }

    fn word(&self, i: usize) -> &std::sync::atomic::AtomicU32 {
        // SAFETY: an 8-byte, 4-aligned allocation alive while `self` is; the GPU reads and
        // writes it with system-scope volatile accesses.
        unsafe { &*self.host.add(i).cast::<std::sync::atomic::AtomicU32>() }
    }
}

impl Drop for HostFlag {
    fn drop(&mut self) {
        // SAFETY: frees the allocation made in `new`.
        unsafe {
            sys::cuMemFreeHost(self.host.cast());
        }
    }
}

/// Holds a stream with the gate kernel while the host queues work behind it, then opens it:
/// the work then runs back to back on the GPU, and events around it time the GPU alone.
pub struct Gate {
    kernel: Function,
    flag: HostFlag,
}

impl Gate {
    pub fn new(kernel: Function) -> Result<Gate, DriverError> {
        Ok(Gate {
            kernel,
            flag: HostFlag::new()?,
        })
    }

    /// Queues the gate on `stream`, closed; it opens by itself after `timeout_ns`.
    fn hold(&self, stream: sys::CUstream, timeout_ns: u64) -> Result<(), DriverError> {
        use std::sync::atomic::Ordering::SeqCst;
        self.flag.word(0).store(0, SeqCst);
        self.flag.word(1).store(0, SeqCst);
        let args = [("flag", Arg::U64(self.flag.device)), ("timeout", Arg::U64(timeout_ns))];
        self.kernel.enqueue(stream, 1, 1, &args)
    }

    fn open(&self) {
        self.flag.word(0).store(1, std::sync::atomic::Ordering::SeqCst);
    }

    /// Whether the host opened the gate (false: its timeout did), once the stream passed it.
    fn opened_by_host(&self) -> bool {
        self.flag.word(1).load(std::sync::atomic::Ordering::SeqCst) != 0
    }

    /// Keeps the GPU busy (the gate spinning, at most `most_ns`) while `during` runs on the
    /// host, then opens and waits: a GPU lowers its link speed when idle.
    pub fn busy<T>(&self, most_ns: u64, during: impl FnOnce() -> T) -> Result<T, DriverError> {
        self.hold(std::ptr::null_mut(), most_ns)?;
        let out = during();
        self.open();
        // SAFETY: a plain driver call.
        check("cuCtxSynchronize (gate)", unsafe { sys::cuCtxSynchronize() })?;
        Ok(out)
    }

    /// Milliseconds the GPU spends on what `queue` puts on `streams`: the gate holds
    /// streams[0], a start event follows it (the other streams wait for that event), `queue`
    /// runs, each stream records an end event, the gate opens; the figure runs from the start
    /// event to the last end event. Fails when the gate opened by its timeout (the host could
    /// not queue the work ahead of the GPU, so the figure would include the host).
    fn time(
        &self,
        streams: &[sys::CUstream],
        queue: impl FnOnce() -> Result<(), DriverError>,
    ) -> Result<f64, DriverError> {
        let event = || -> Result<sys::CUevent, DriverError> {
            let mut e = std::ptr::null_mut();
            // SAFETY: out-pointer to a local; destroyed below.
            check("cuEventCreate", unsafe { sys::cuEventCreate(&mut e, 0) })?;
            Ok(e)
        };
        let start = event()?;
        let ends: Vec<sys::CUevent> = match streams.iter().map(|_| event()).collect() {
            Ok(e) => e,
            Err(e) => {
                // SAFETY: created above.
                unsafe { sys::cuEventDestroy_v2(start) };
                return Err(e);
            }
        };
        // SAFETY: events and streams are live; the gate's flag outlives the kernel (we wait).
        let result = unsafe {
            (|| {
                self.hold(streams[0], super::plan::GATE_TIMEOUT_NS)?;
                check("cuEventRecord", sys::cuEventRecord(start, streams[0]))?;
                for s in &streams[1..] {
                    check("cuStreamWaitEvent", sys::cuStreamWaitEvent(*s, start, 0))?;
                }
                let queued = queue();
                for (s, e) in streams.iter().zip(&ends) {
                    check("cuEventRecord", sys::cuEventRecord(*e, *s))?;
                }
                self.open();
                let mut longest = 0f64;
                for e in &ends {
                    check("cuEventSynchronize", sys::cuEventSynchronize(*e))?;
                    let mut ms = 0f32;
                    check("cuEventElapsedTime", sys::cuEventElapsedTime(&mut ms, start, *e))?;
                    longest = longest.max(ms as f64);
                }
                queued?;
                if !self.opened_by_host() {
                    return Err(DriverError(format!(
                        "the gate opened after its {} s timeout before the host had queued the work: \
                         the figure would time the host, not the GPU",
                        super::plan::GATE_TIMEOUT_NS as f64 / 1e9
                    )));
                }
                Ok(longest)
            })()
        };
        // SAFETY: created above, no longer used by queued work (synchronised, or the error
        // path, where destroying a pending event is allowed and deferred by the driver).
        unsafe {
            sys::cuEventDestroy_v2(start);
            for e in ends {
                sys::cuEventDestroy_v2(e);
            }
        }
        result
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

    /// Milliseconds the copy engines spend on `copies` (direction, host pointer, device
    /// pointer, bytes), queued round-robin over the streams behind `gate` (at most
    /// [`super::plan::CE_BATCH`] of them, so the driver queues them all while the gate holds).
    ///
    /// # Safety
    /// Every host pointer must be pinned (registered) memory valid for its bytes.
    pub unsafe fn time_copies(
        &self,
        gate: &Gate,
        copies: impl Iterator<Item = (CopyDirection, *mut u8, sys::CUdeviceptr, usize)>,
    ) -> Result<f64, DriverError> {
        gate.time(&self.streams, || {
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
            Ok(())
        })
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
