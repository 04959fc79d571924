//! NVML (`libnvidia-ml.so.1`, loaded at run time like the CUDA driver): the figures nvidia-smi
//! and DCGM print about a GPU's PCIe link, bound with dlsym, so the build needs neither NVML
//! nor its headers. [`read`] gives one GPU's link (the CUDA backend's `run.json`); [`gpus`]
//! every GPU's link, replay counter and PCIe byte counters (`check`, the exporter).

use super::link::NvmlLink;
use std::ffi::{c_char, c_int, c_uint, c_void, CStr, CString};

/// The library the NVIDIA driver installs beside libcuda.
pub const NVML_LIBRARY: &str = "libnvidia-ml.so.1";
/// `nvmlDeviceGetFieldValues` field ids (nvml.h, NVML 12.x): the bytes the GPU sent (TX) and
/// received (RX) over PCIe since the driver loaded; DCGM serves them as
/// `DCGM_FI_PROF_PCIE_TX_BYTES`'s cumulative counterparts.
pub const FI_PCIE_COUNT_TX_BYTES: c_uint = 197;
pub const FI_PCIE_COUNT_RX_BYTES: c_uint = 198;
/// Most GPUs read (NVML's limit is far below; a bound on what a broken library may claim).
const MAX_GPUS: c_uint = 256;

type Device = *mut c_void;
type Status = c_int;
type Figure = extern "C" fn(Device, *mut c_uint) -> Status;

/// One GPU's PCIe facts as NVML reports them; each figure or why NVML could not give it.
#[derive(Debug, Clone, PartialEq)]
pub struct GpuPcie {
    /// PCI address as sysfs spells it, `0000:19:00.0`.
    pub bdf: String,
    pub name: Option<String>,
    pub link: Result<NvmlLink, String>,
    /// PCIe replays since the driver loaded (`nvmlDeviceGetPcieReplayCounter`; DCGM's
    /// `DCGM_FI_DEV_PCIE_REPLAY_COUNTER`).
    pub replays: Result<u64, String>,
    /// Bytes sent (upstream, into host memory or to peers) and received (downstream) over
    /// PCIe since the driver loaded (field values 197 and 198).
    pub tx_bytes: Result<u64, String>,
    pub rx_bytes: Result<u64, String>,
}

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

/// NVML loaded and initialised; shut down when dropped.
struct Nvml {
    handle: *mut c_void,
    shutdown: extern "C" fn() -> Status,
}

impl Nvml {
    /// Loads the library and calls nvmlInit, or says why not and whether the library is
    /// missing altogether (a host without NVIDIA's driver).
    fn open() -> Result<Nvml, OpenError> {
        let lib = CString::new(NVML_LIBRARY).expect("no NUL in the name");
        // SAFETY: dlopen with a valid C string; the handle stays open for the process (NVML
        // keeps state between init and shutdown).
        let handle = unsafe { libc::dlopen(lib.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL) };
        if handle.is_null() {
            // dlerror's message names the library.
            return Err(OpenError {
                missing: true,
                why: dl_error(),
            });
        }
        let probe = Nvml { handle, shutdown: none };
        let failed = |why| OpenError { missing: false, why };
        // SAFETY: the signatures are NVML's (nvml.h): nvmlReturn_t is an int.
        let (init, shutdown) = unsafe {
            (
                std::mem::transmute::<*mut c_void, extern "C" fn() -> Status>(
                    probe.symbol("nvmlInit_v2").map_err(failed)?,
                ),
                std::mem::transmute::<*mut c_void, extern "C" fn() -> Status>(
                    probe.symbol("nvmlShutdown").map_err(failed)?,
                ),
            )
        };
        let status = init();
        if status != 0 {
            return Err(failed(format!("nvmlInit: error {status}")));
        }
        Ok(Nvml { handle, shutdown })
    }

    fn symbol(&self, name: &str) -> Result<*mut c_void, String> {
        let c = CString::new(name).expect("no NUL in the name");
        // SAFETY: a valid handle and C string.
        let f = unsafe { libc::dlsym(self.handle, c.as_ptr()) };
        if f.is_null() {
            Err(format!("{NVML_LIBRARY}: no {name}"))
        } else {
            Ok(f)
        }
    }

    fn figure(&self, name: &str) -> Result<Figure, String> {
        // SAFETY: every figure call is `nvmlReturn_t f(nvmlDevice_t, unsigned int *)`.
        Ok(unsafe { std::mem::transmute::<*mut c_void, Figure>(self.symbol(name)?) })
    }

    /// The GPU at `bdf`.
    fn by_bus(&self, bdf: &str) -> Result<Device, String> {
        // SAFETY: nvmlDeviceGetHandleByPciBusId_v2(const char *, nvmlDevice_t *).
        let by_bus: extern "C" fn(*const c_char, *mut Device) -> Status =
            unsafe { std::mem::transmute(self.symbol("nvmlDeviceGetHandleByPciBusId_v2")?) };
        let bus = CString::new(bdf).map_err(|_| format!("{bdf}: not a PCI address"))?;
        let mut device: Device = std::ptr::null_mut();
        match by_bus(bus.as_ptr(), &mut device) {
            0 => Ok(device),
            status => Err(format!("nvmlDeviceGetHandleByPciBusId({bdf}): error {status}")),
        }
    }

    /// Current and maximum link generation and width.
    fn link(&self, device: Device) -> Result<NvmlLink, String> {
        let calls = [
            self.figure("nvmlDeviceGetCurrPcieLinkGeneration")?,
            self.figure("nvmlDeviceGetCurrPcieLinkWidth")?,
            self.figure("nvmlDeviceGetMaxPcieLinkGeneration")?,
            self.figure("nvmlDeviceGetMaxPcieLinkWidth")?,
        ];
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
    }

    fn replays(&self, device: Device) -> Result<u64, String> {
        let call = self.figure("nvmlDeviceGetPcieReplayCounter")?;
        let mut n: c_uint = 0;
        match call(device, &mut n) {
            0 => Ok(u64::from(n)),
            status => Err(format!("nvmlDeviceGetPcieReplayCounter: error {status}")),
        }
    }

    /// The PCIe TX and RX byte counters, from one nvmlDeviceGetFieldValues call.
    fn pcie_bytes(&self, device: Device) -> [Result<u64, String>; 2] {
        let call = match self.symbol("nvmlDeviceGetFieldValues") {
            // SAFETY: nvmlDeviceGetFieldValues(nvmlDevice_t, int, nvmlFieldValue_t *).
            Ok(f) => unsafe {
                std::mem::transmute::<*mut c_void, extern "C" fn(Device, c_int, *mut FieldValue) -> Status>(f)
            },
            Err(e) => return [Err(e.clone()), Err(e)],
        };
        let mut values = [FI_PCIE_COUNT_TX_BYTES, FI_PCIE_COUNT_RX_BYTES].map(FieldValue::asking);
        let status = call(device, values.len() as c_int, values.as_mut_ptr());
        values.map(|v| {
            if status != 0 {
                Err(format!("nvmlDeviceGetFieldValues: error {status}"))
            } else {
                v.counter()
            }
        })
    }

    fn name(&self, device: Device) -> Option<String> {
        // SAFETY: nvmlDeviceGetName(nvmlDevice_t, char *, unsigned int).
        let call: extern "C" fn(Device, *mut c_char, c_uint) -> Status =
            unsafe { std::mem::transmute(self.symbol("nvmlDeviceGetName").ok()?) };
        let mut buf = [0 as c_char; 96];
        if call(device, buf.as_mut_ptr(), buf.len() as c_uint) != 0 {
            return None;
        }
        buf[buf.len() - 1] = 0;
        // SAFETY: NUL-terminated within the buffer (its last byte is NUL).
        let s = unsafe { CStr::from_ptr(buf.as_ptr()) }
            .to_string_lossy()
            .trim()
            .to_string();
        (!s.is_empty()).then_some(s)
    }

    /// Every GPU's PCI address and handle.
    fn devices(&self) -> Result<Vec<(String, Device)>, String> {
        // SAFETY: nvmlDeviceGetCount_v2(unsigned int *), nvmlDeviceGetHandleByIndex_v2(unsigned
        // int, nvmlDevice_t *), nvmlDeviceGetPciInfo_v3(nvmlDevice_t, nvmlPciInfo_t *).
        let (count, by_index, pci) = unsafe {
            (
                std::mem::transmute::<*mut c_void, extern "C" fn(*mut c_uint) -> Status>(
                    self.symbol("nvmlDeviceGetCount_v2")?,
                ),
                std::mem::transmute::<*mut c_void, extern "C" fn(c_uint, *mut Device) -> Status>(
                    self.symbol("nvmlDeviceGetHandleByIndex_v2")?,
                ),
                std::mem::transmute::<*mut c_void, extern "C" fn(Device, *mut PciInfo) -> Status>(
                    self.symbol("nvmlDeviceGetPciInfo_v3")?,
                ),
            )
        };
        let mut n: c_uint = 0;
        let status = count(&mut n);
        if status != 0 {
            return Err(format!("nvmlDeviceGetCount: error {status}"));
        }
        let mut out = Vec::new();
        for i in 0..n.min(MAX_GPUS) {
            let mut device: Device = std::ptr::null_mut();
            let status = by_index(i, &mut device);
            if status != 0 {
                return Err(format!("nvmlDeviceGetHandleByIndex({i}): error {status}"));
            }
            let mut info = PciInfo::default();
            let status = pci(device, &mut info);
            if status != 0 {
                return Err(format!("nvmlDeviceGetPciInfo(GPU {i}): error {status}"));
            }
            out.push((info.bdf(), device));
        }
        Ok(out)
    }
}

impl Drop for Nvml {
    fn drop(&mut self) {
        (self.shutdown)();
    }
}

/// Why NVML could not be opened; `missing`: there is no library at all.
struct OpenError {
    missing: bool,
    why: String,
}

/// The shutdown of an NVML not yet initialised.
extern "C" fn none() -> Status {
    0
}

/// `nvmlFieldValue_t` (nvml.h): 40 bytes, the value a union of 8.
#[repr(C)]
#[derive(Clone, Copy)]
struct FieldValue {
    field_id: c_uint,
    scope_id: c_uint,
    timestamp: i64,
    latency_usec: i64,
    value_type: c_uint,
    nvml_return: c_uint,
    value: u64,
}

impl FieldValue {
    fn asking(field_id: c_uint) -> FieldValue {
        FieldValue {
            field_id,
            scope_id: 0,
            timestamp: 0,
            latency_usec: 0,
            value_type: 0,
            nvml_return: 0,
            value: 0,
        }
    }

    /// The value as a counter: unsigned int (1), unsigned long (2), unsigned long long (3) or
    /// signed long long (4, not negative); anything else is refused.
    fn counter(self) -> Result<u64, String> {
        let field = self.field_id;
        if self.nvml_return != 0 {
            return Err(format!("field {field}: error {}", self.nvml_return));
        }
        match self.value_type {
            1 => Ok(self.value & u64::from(u32::MAX)),
            2 | 3 => Ok(self.value),
            4 if (self.value as i64) >= 0 => Ok(self.value),
            t => Err(format!("field {field}: value type {t} is no counter")),
        }
    }
}

/// `nvmlPciInfo_t` (nvml.h, the v3 layout).
#[repr(C)]
#[derive(Default)]
struct PciInfo {
    bus_id_legacy: [c_char; 16],
    domain: c_uint,
    bus: c_uint,
    device: c_uint,
    pci_device_id: c_uint,
    pci_sub_system_id: c_uint,
    bus_id: [c_char; 32],
}

impl PciInfo {
    /// The address as sysfs spells it (NVML's busId has an 8-digit domain, upper case).
    fn bdf(&self) -> String {
        format!(
            "{:04x}:{:02x}:{:02x}.0",
            self.domain & 0xffff,
            self.bus & 0xff,
            self.device & 0x1f
        )
    }
}

/// Reads the current and maximum link generation and width of the GPU at PCI address `bdf`
/// (`0000:19:00.0`), or says why it cannot.
pub fn read(bdf: &str) -> Result<NvmlLink, String> {
    let nvml = Nvml::open().map_err(|e| e.why)?;
    let device = nvml.by_bus(bdf)?;
    nvml.link(device)
}

/// Every GPU NVML sees, with its PCIe facts. `Ok(None)`: no NVML on this host (no NVIDIA
/// driver); `Err`: NVML is there but could not list the GPUs.
pub fn gpus() -> Result<Option<Vec<GpuPcie>>, String> {
    let nvml = match Nvml::open() {
        Ok(n) => n,
        Err(e) if e.missing => return Ok(None),
        Err(e) => return Err(e.why),
    };
    let devices = nvml.devices()?;
    Ok(Some(
        devices
            .into_iter()
            .map(|(bdf, device)| {
                let [tx_bytes, rx_bytes] = nvml.pcie_bytes(device);
                GpuPcie {
                    name: nvml.name(device),
                    link: nvml.link(device),
                    replays: nvml.replays(device),
                    tx_bytes,
                    rx_bytes,
                    bdf,
                }
            })
            .collect(),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn field_values_are_read_by_their_type() {
        let v = |value_type, nvml_return, value| FieldValue {
            value_type,
            nvml_return,
            value,
            ..FieldValue::asking(FI_PCIE_COUNT_TX_BYTES)
        };
        assert_eq!(v(3, 0, 1 << 40).counter(), Ok(1 << 40));
        assert_eq!(
            v(1, 0, (7 << 32) | 5).counter(),
            Ok(5),
            "an unsigned int is the low word"
        );
        assert_eq!(
            v(4, 0, u64::MAX).counter(),
            Err("field 197: value type 4 is no counter".into())
        );
        assert_eq!(
            v(0, 0, 1).counter(),
            Err("field 197: value type 0 is no counter".into())
        );
        assert_eq!(v(3, 3, 1).counter(), Err("field 197: error 3".into()));
        assert_eq!(std::mem::size_of::<FieldValue>(), 40);
        assert_eq!(std::mem::size_of::<PciInfo>(), 68);
    }

    #[test]
    fn nvml_s_address_is_spelled_as_sysfs_does() {
        let info = PciInfo {
            domain: 0xc0de,
            bus: 0xc1,
            device: 3,
            ..PciInfo::default()
        };
        assert_eq!(info.bdf(), "c0de:c1:03.0");
    }
}
