//! A stand-in for NVML (`libnvidia-ml.so.1`) for `check`'s and the exporter's GPU facts on
//! machines without a GPU: the 13 calls pcie-nvml makes, with NVML's signatures and structure
//! layouts (nvml.h: `nvmlPciInfo_t` v3, `nvmlFieldValue_t`), answering for GPUs whose counters
//! grow with the time since the library was loaded, so a sampled check sees rates.
//!
//! Built by the tests with `rustc --crate-type cdylib` (std only). Environment:
//! `FAKE_NVML_GPUS` (PCI addresses, comma-separated; default `0000:65:00.0`),
//! `FAKE_NVML_LINK` (`GEN,WIDTH,MAXGEN,MAXWIDTH`, default `5,16,5,16`),
//! `FAKE_NVML_RATES` (`REPLAYS_PER_S,TX_BYTES_PER_S,RX_BYTES_PER_S`, default `0,0,0`) on top of
//! the counters' starting values [`REPLAYS`], [`TX_BYTES`], [`RX_BYTES`], and
//! `FAKE_NVML_FAIL=CALL:CODE` (that call returns the error CODE), `FAKE_GPU_PCIE_BYTES=FILE`
//! (`TX RX` bytes the stand-in CUDA driver's copies moved, added to the byte counters).
#![allow(non_snake_case, clippy::missing_safety_doc)]

use std::ffi::{c_char, c_int, c_uint, CStr};
use std::sync::OnceLock;
use std::time::Instant;

pub const REPLAYS: u64 = 7;
pub const TX_BYTES: u64 = 1_000_000;
pub const RX_BYTES: u64 = 2_000_000;
const NOT_FOUND: c_int = 6;
const INVALID_ARGUMENT: c_int = 2;

fn loaded() -> Instant {
    static T: OnceLock<Instant> = OnceLock::new();
    *T.get_or_init(Instant::now)
}

fn gpus() -> Vec<String> {
    std::env::var("FAKE_NVML_GPUS")
        .unwrap_or_else(|_| "0000:65:00.0".into())
        .split(',')
        .map(str::to_string)
        .collect()
}

fn numbers(var: &str, default: &str) -> Vec<f64> {
    let text = std::env::var(var).unwrap_or_else(|_| default.into());
    text.split(',').map(|n| n.parse().unwrap_or(0.0)).collect()
}

fn injected(call: &str) -> Option<c_int> {
    let v = std::env::var("FAKE_NVML_FAIL").ok()?;
    let (name, code) = v.split_once(':')?;
    (name == call).then(|| code.parse().unwrap_or(999))
}

/// A device handle: 1 + the GPU's index.
fn index(device: usize) -> Option<usize> {
    device.checked_sub(1).filter(|i| *i < gpus().len())
}

/// A counter's value now: its start plus its rate times the seconds since load, plus (TX, RX)
/// what the stand-in CUDA driver's copies wrote to `FAKE_GPU_PCIE_BYTES`.
fn counter(start: u64, rate_index: usize) -> u64 {
    let rate = numbers("FAKE_NVML_RATES", "0,0,0").get(rate_index).copied().unwrap_or(0.0);
    let copied = std::env::var_os("FAKE_GPU_PCIE_BYTES")
        .and_then(|f| std::fs::read_to_string(f).ok())
        .and_then(|t| t.split_whitespace().nth(rate_index.checked_sub(1)?)?.parse::<u64>().ok())
        .unwrap_or(0);
    start + (rate * loaded().elapsed().as_secs_f64()) as u64 + copied
}

#[no_mangle]
pub extern "C" fn nvmlInit_v2() -> c_int {
    loaded();
    injected("nvmlInit_v2").unwrap_or(0)
}

#[no_mangle]
pub extern "C" fn nvmlShutdown() -> c_int {
    0
}

#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetCount_v2(n: *mut c_uint) -> c_int {
    if let Some(e) = injected("nvmlDeviceGetCount_v2") {
        return e;
    }
    *n = gpus().len() as c_uint;
    0
}

#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetHandleByIndex_v2(i: c_uint, device: *mut usize) -> c_int {
    if i as usize >= gpus().len() {
        return INVALID_ARGUMENT;
    }
    *device = i as usize + 1;
    0
}

#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetHandleByPciBusId_v2(bus: *const c_char, device: *mut usize) -> c_int {
    let bus = CStr::from_ptr(bus).to_string_lossy().to_ascii_lowercase();
    match gpus().iter().position(|g| *g == bus) {
        Some(i) => {
            *device = i + 1;
            0
        }
        None => NOT_FOUND,
    }
}

#[repr(C)]
pub struct PciInfo {
    bus_id_legacy: [c_char; 16],
    domain: c_uint,
    bus: c_uint,
    device: c_uint,
    pci_device_id: c_uint,
    pci_sub_system_id: c_uint,
    bus_id: [c_char; 32],
}

#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetPciInfo_v3(device: usize, info: *mut PciInfo) -> c_int {
    let Some(i) = index(device) else {
        return INVALID_ARGUMENT;
    };
    let bdf = &gpus()[i];
    let hex = |s: &str| c_uint::from_str_radix(s, 16).unwrap_or(0);
    let (domain, rest) = bdf.split_once(':').unwrap_or(("0", bdf));
    let (bus, rest) = rest.split_once(':').unwrap_or(("0", rest));
    let dev = rest.split('.').next().unwrap_or("0");
    let info = &mut *info;
    (info.domain, info.bus, info.device) = (hex(domain), hex(bus), hex(dev));
    info.pci_device_id = 0x2330_10de;
    // NVML's own spelling: an 8-digit domain, upper case.
    let text = format!("{:08X}:{:02X}:{:02X}.0", info.domain, info.bus, info.device);
    for (d, s) in info.bus_id.iter_mut().zip(text.bytes().chain([0])) {
        *d = s as c_char;
    }
    0
}

#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetName(device: usize, name: *mut c_char, len: c_uint) -> c_int {
    if index(device).is_none() || len < 32 {
        return INVALID_ARGUMENT;
    }
    for (i, b) in b"NVIDIA H100 80GB HBM3\0".iter().enumerate() {
        *name.add(i) = *b as c_char;
    }
    0
}

/// One of the four link figures: `FAKE_NVML_LINK`'s `which`-th number.
unsafe fn link_figure(call: &str, device: usize, out: *mut c_uint, which: usize) -> c_int {
    if let Some(e) = injected(call) {
        return e;
    }
    if index(device).is_none() {
        return INVALID_ARGUMENT;
    }
    *out = numbers("FAKE_NVML_LINK", "5,16,5,16").get(which).copied().unwrap_or(0.0) as c_uint;
    0
}

#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetCurrPcieLinkGeneration(device: usize, out: *mut c_uint) -> c_int {
    link_figure("nvmlDeviceGetCurrPcieLinkGeneration", device, out, 0)
}

#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetCurrPcieLinkWidth(device: usize, out: *mut c_uint) -> c_int {
    link_figure("nvmlDeviceGetCurrPcieLinkWidth", device, out, 1)
}

#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetMaxPcieLinkGeneration(device: usize, out: *mut c_uint) -> c_int {
    link_figure("nvmlDeviceGetMaxPcieLinkGeneration", device, out, 2)
}

#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetMaxPcieLinkWidth(device: usize, out: *mut c_uint) -> c_int {
    link_figure("nvmlDeviceGetMaxPcieLinkWidth", device, out, 3)
}

#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetPcieReplayCounter(device: usize, out: *mut c_uint) -> c_int {
    if let Some(e) = injected("nvmlDeviceGetPcieReplayCounter") {
        return e;
    }
    if index(device).is_none() {
        return INVALID_ARGUMENT;
    }
    *out = counter(REPLAYS, 0) as c_uint;
    0
}

#[repr(C)]
pub struct FieldValue {
    field_id: c_uint,
    scope_id: c_uint,
    timestamp: i64,
    latency_usec: i64,
    value_type: c_uint,
    nvml_return: c_uint,
    value: u64,
}

#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetFieldValues(device: usize, count: c_int, values: *mut FieldValue) -> c_int {
    if let Some(e) = injected("nvmlDeviceGetFieldValues") {
        return e;
    }
    if index(device).is_none() || count < 0 {
        return INVALID_ARGUMENT;
    }
    for i in 0..count as usize {
        let v = &mut *values.add(i);
        // 197, 198: NVML_FI_DEV_PCIE_COUNT_TX_BYTES, _RX_BYTES (unsigned long long, type 3).
        match v.field_id {
            197 => (v.value_type, v.nvml_return, v.value) = (3, 0, counter(TX_BYTES, 1)),
            198 => (v.value_type, v.nvml_return, v.value) = (3, 0, counter(RX_BYTES, 2)),
            _ => v.nvml_return = 3, // NVML_ERROR_NOT_SUPPORTED
        }
    }
    0
}
