//! The GPU's link as NVML reports it (`libnvidia-ml.so.1`, loaded at run time like the CUDA
//! driver): the figures nvidia-smi prints, for when sysfs cannot say. Five calls, bound with
//! dlsym, so the build needs neither NVML nor its headers.

use super::link::NvmlLink;
use std::ffi::{c_char, c_int, c_uint, c_void, CStr, CString};

/// The library the NVIDIA driver installs beside libcuda.
pub const NVML_LIBRARY: &str = "libnvidia-ml.so.1";

type Device = *mut c_void;
type Status = c_int;

/// dlopen's or dlsym's last message.
fn dl_error() -> String {
    // SAFETY: dlerror returns null or a NUL-terminated string owned by libc.
    let why = unsafe { libc::dlerror() };
    if why.is_null() {
        "dlopen failed".into()
    } else {
        // SAFETY: non-null, NUL-terminated.
        unsafe { CStr::from_ptr(why) }.to_string_lossy().into_owned()
    }
}

/// Reads the current and maximum link generation and width of the GPU at PCI address `bdf`
/// (`0000:19:00.0`), or says why it cannot.
pub fn read(bdf: &str) -> Result<NvmlLink, String> {
    let lib = CString::new(NVML_LIBRARY).expect("no NUL in the name");
    // SAFETY: dlopen with a valid C string; the handle stays open for the process (NVML keeps
    // state between init and shutdown).
    let handle = unsafe { libc::dlopen(lib.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL) };
    if handle.is_null() {
        // dlerror's message names the library.
        return Err(dl_error());
    }
    let symbol = |name: &str| -> Result<*mut c_void, String> {
        let c = CString::new(name).expect("no NUL in the name");
        // SAFETY: a valid handle and C string.
        let f = unsafe { libc::dlsym(handle, c.as_ptr()) };
        if f.is_null() {
            Err(format!("{NVML_LIBRARY}: no {name}"))
        } else {
            Ok(f)
        }
    };
    // SAFETY: the signatures are NVML's (nvml.h): nvmlReturn_t is an int, nvmlDevice_t a pointer.
    unsafe {
        let init: extern "C" fn() -> Status = std::mem::transmute(symbol("nvmlInit_v2")?);
        let shutdown: extern "C" fn() -> Status = std::mem::transmute(symbol("nvmlShutdown")?);
        let by_bus: extern "C" fn(*const c_char, *mut Device) -> Status =
            std::mem::transmute(symbol("nvmlDeviceGetHandleByPciBusId_v2")?);
        let figure = |name: &str| -> Result<extern "C" fn(Device, *mut c_uint) -> Status, String> {
            Ok(std::mem::transmute::<
                *mut c_void,
                extern "C" fn(Device, *mut c_uint) -> Status,
            >(symbol(name)?))
        };
        let calls = [
            figure("nvmlDeviceGetCurrPcieLinkGeneration")?,
            figure("nvmlDeviceGetCurrPcieLinkWidth")?,
            figure("nvmlDeviceGetMaxPcieLinkGeneration")?,
            figure("nvmlDeviceGetMaxPcieLinkWidth")?,
        ];
        let status = init();
        if status != 0 {
            return Err(format!("nvmlInit: error {status}"));
        }
        let bus = CString::new(bdf).map_err(|_| format!("{bdf}: not a PCI address"))?;
        let mut device: Device = std::ptr::null_mut();
        let read = (|| {
            let status = by_bus(bus.as_ptr(), &mut device);
            if status != 0 {
                return Err(format!("nvmlDeviceGetHandleByPciBusId({bdf}): error {status}"));
            }
            let mut v = [0 as c_uint; 4];
            for (call, out) in calls.iter().zip(&mut v) {
                let status = call(device, out);
                if status != 0 {
                    return Err(format!("an NVML PCIe link query: error {status}"));
                }
            }
            Ok(NvmlLink {
                gen: v[0],
                width: v[1],
                max_gen: v[2],
                max_width: v[3],
            })
        })();
        shutdown();
        read
    }
}
