//! A stand-in for the NVIDIA driver library (`libcuda.so.1`, and NVML's `libnvidia-ml.so.1`)
//! for the CUDA backend's tests on machines without a GPU: the 34 driver calls and 7 NVML calls
//! the backend makes, with the driver's semantics where the backend depends on them (a context
//! current per thread, streams that run in order and asynchronously to the host, events timed
//! on the GPU's clock, errors that stick to the context), and a GPU that runs the PTX module's
//! kernels by name. It checks what a GPU would fault on: every pointer a kernel or a copy
//! touches must lie in memory the driver handed out or mapped (device allocations, pinned and
//! mapped host memory), every kernel argument is read with the type the PTX text declares, and
//! a call that needs a context fails without one.
//!
//! Its GPU is a model with round figures for a Gen5 x16 link (as NVML reports it), so a test
//! can compute what the host must report: a 1980 MHz SM clock beside a 32 ns global timer,
//! latency samples of `LAT_NS + size / LAT_GBPS` (LAT_WRRD: `WRRD_NS`) plus the loop's
//! `LOOP_NS`, threads moving `SM_READ_GBPS` and `SM_WRITE_GBPS` (under the link's model), copy
//! engines `CE_SETUP_NS + bytes / CE_GBPS` a copy. Its time is virtual: each operation advances
//! the GPU's clock by its modelled duration, and events read that clock. Its PCI domain is one
//! no host has, so sysfs never answers for it and the link comes from NVML.
//!
//! Built by the tests with `rustc --crate-type cdylib` (std only). Environment: `FAKE_CUDA_DEVICES`
//! (devices, default 1), `FAKE_CUDA_FAIL=CALL:CODE[:AFTER]` (that call, a driver or an NVML one,
//! returns the error CODE, after AFTER calls that succeed), `FAKE_CUDA_BUSY_LINK=FILE` (a
//! fixture tree's `current_link_speed` of the GPU: a copy raises it to 32 GT/s, as a GPU leaves
//! its idle link speed under load, and releasing the context drops it back to 2.5 GT/s),
//! `FAKE_CUDA_SPEED=K` (threads and copy engines move data K times as fast: a slow path at
//! K < 1, a measurement above the link at K > 1.12), `FAKE_CUDA_NAME` (the GPU's name, to pose
//! as a GPU with committed runs), `FAKE_GPU_PCIE_BYTES=FILE` (every copy's bytes added to FILE,
//! which the stand-in NVML's PCIe byte counters read).
#![allow(non_snake_case, clippy::missing_safety_doc)]

use std::cell::Cell;
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::ffi::{c_char, c_int, c_uint, c_void, CStr};
use std::sync::{Condvar, Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

type CUresult = c_int;
const SUCCESS: CUresult = 0;
const INVALID_VALUE: CUresult = 1;
const NOT_INITIALIZED: CUresult = 3;
const INVALID_DEVICE: CUresult = 101;
const INVALID_IMAGE: CUresult = 200;
const INVALID_CONTEXT: CUresult = 201;
const INVALID_HANDLE: CUresult = 400;
const NOT_FOUND: CUresult = 500;
const NOT_READY: CUresult = 600;
const ILLEGAL_ADDRESS: CUresult = 700;

/// The GPU's model (see the crate comment).
pub const SM_MHZ: f64 = 1980.0;
pub const GLOBALTIMER_STEP_NS: u64 = 32;
pub const LOOP_NS: f64 = 120.0;
pub const LAT_NS: f64 = 800.0;
pub const WRRD_NS: f64 = 1000.0;
pub const LAT_GBPS: f64 = 100.0;
pub const SM_READ_GBPS: f64 = 400.0;
pub const SM_WRITE_GBPS: f64 = 420.0;
pub const CE_SETUP_NS: f64 = 1000.0;
pub const CE_GBPS: f64 = 430.0;
/// `FAKE_CUDA_SPEED`: the factor on every bandwidth of the model (1 unless set).
fn speed() -> f64 {
    static SPEED: OnceLock<f64> = OnceLock::new();
    *SPEED.get_or_init(|| std::env::var("FAKE_CUDA_SPEED").ok().and_then(|v| v.parse().ok()).unwrap_or(1.0))
}
/// The link NVML reports: Gen5 x16, current and maximum.
const LINK_GEN: c_uint = 5;
const LINK_WIDTH: c_uint = 16;
const SMS: c_int = 132;
const PCI_BUS: c_int = 0xc1;
const PCI_DOMAIN: c_int = 0xc0de;

#[derive(Clone, Copy, PartialEq, Debug)]
enum Memory {
    Device,
    /// cuMemHostAlloc with DEVICEMAP, or cuMemHostRegister with DEVICEMAP: the GPU may touch it.
    MappedHost,
}

#[derive(Clone, Copy, PartialEq)]
enum Event {
    Created,
    /// Recorded on a stream the GPU has not yet run up to it.
    Queued,
    /// The GPU's clock when its stream reached it.
    Reached(f64),
}

#[derive(Clone)]
enum Op {
    Kernel { name: String, args: Vec<u64> },
    Copy { dst: u64, src: u64, bytes: u64, to_device: bool },
    Record(usize),
}

#[derive(Default)]
struct State {
    initialised: bool,
    /// Start address -> (bytes, kind): device pointers are the process's own addresses.
    memory: BTreeMap<u64, (u64, Option<Memory>)>,
    /// Module handle -> entry name -> parameter types ("u32", "u64").
    modules: HashMap<usize, HashMap<String, Vec<String>>>,
    functions: HashMap<usize, (usize, String)>,
    events: HashMap<usize, Event>,
    streams: Vec<usize>,
    queue: VecDeque<Op>,
    running: bool,
    clock_ns: f64,
    /// A kernel's fault: every later synchronising call returns it, as a context's does.
    sticky: Option<(CUresult, String)>,
    next_handle: usize,
}

struct Driver {
    state: Mutex<State>,
    changed: Condvar,
}

fn driver() -> &'static Driver {
    static D: OnceLock<Driver> = OnceLock::new();
    D.get_or_init(|| Driver {
        state: Mutex::new(State {
            next_handle: 0x1000,
            ..State::default()
        }),
        changed: Condvar::new(),
    })
}

fn lock() -> MutexGuard<'static, State> {
    driver().state.lock().unwrap_or_else(|p| p.into_inner())
}

thread_local! {
    static CURRENT: Cell<usize> = const { Cell::new(0) };
}

const CONTEXT: usize = 0xc0de;

/// The error `FAKE_CUDA_FAIL=CALL:CODE[:AFTER]` asks `call` to return (after AFTER calls that
/// succeed).
fn injected(call: &str) -> Option<CUresult> {
    static CALLS: Mutex<u64> = Mutex::new(0);
    let v = std::env::var("FAKE_CUDA_FAIL").ok()?;
    let mut words = v.split(':');
    let (name, code) = (words.next()?, words.next()?.parse().ok()?);
    let after: u64 = words.next().and_then(|a| a.parse().ok()).unwrap_or(0);
    if name != call {
        return None;
    }
    let mut calls = CALLS.lock().unwrap_or_else(|p| p.into_inner());
    *calls += 1;
    (*calls > after).then_some(code)
}

/// The checks every call makes: an injected failure, an initialised driver, and for calls
/// that work in a context, one current on this thread.
fn enter(call: &str, needs_context: bool) -> Result<MutexGuard<'static, State>, CUresult> {
    if let Some(code) = injected(call) {
        return Err(code);
    }
    let s = lock();
    if !s.initialised && call != "cuInit" {
        return Err(NOT_INITIALIZED);
    }
    if needs_context && CURRENT.with(|c| c.get()) != CONTEXT {
        eprintln!("fake libcuda: {call} without a current context on this thread");
        return Err(INVALID_CONTEXT);
    }
    Ok(s)
}

fn status(r: Result<(), CUresult>) -> CUresult {
    r.err().unwrap_or(SUCCESS)
}

impl State {
    fn handle(&mut self) -> usize {
        self.next_handle += 1;
        self.next_handle
    }

    /// Whether `[at, at + bytes)` lies in one region of memory the GPU may touch (`kind`:
    /// of that kind only).
    fn holds(&self, at: u64, bytes: u64, kind: Option<Memory>) -> bool {
        self.memory.range(..=at).next_back().is_some_and(|(&start, &(len, k))| {
            k.is_some() && (kind.is_none() || k == kind) && at + bytes <= start + len
        })
    }

    fn fault(&mut self, what: String) -> CUresult {
        eprintln!("fake libcuda: illegal address: {what}");
        self.sticky.get_or_insert((ILLEGAL_ADDRESS, what));
        ILLEGAL_ADDRESS
    }

    fn sticky(&self) -> Result<(), CUresult> {
        self.sticky.as_ref().map_or(Ok(()), |(code, _)| Err(*code))
    }
}

/// Waits until the GPU has run everything queued (or faulted).
fn drain(mut s: MutexGuard<'static, State>) -> (MutexGuard<'static, State>, Result<(), CUresult>) {
    while !s.queue.is_empty() || s.running {
        s = driver().changed.wait(s).unwrap_or_else(|p| p.into_inner());
    }
    let r = s.sticky();
    (s, r)
}

fn enqueue(mut s: MutexGuard<'static, State>, op: Op) {
    s.queue.push_back(op);
    drop(s);
    driver().changed.notify_all();
}

/// The GPU: runs the queue in order (the streams' own order and every wait an event makes
/// are kept by running all streams as one sequence).
fn gpu() {
    loop {
        let op = {
            let mut s = lock();
            while s.queue.is_empty() {
                s = driver().changed.wait(s).unwrap_or_else(|p| p.into_inner());
            }
            s.running = true;
            s.queue.pop_front().expect("not empty")
        };
        run(op);
        lock().running = false;
        driver().changed.notify_all();
    }
}

/// Runs one operation, advancing the GPU's clock by its modelled time.
fn run(op: Op) {
    match op {
        Op::Record(e) => {
            let mut s = lock();
            let now = s.clock_ns;
            if let Some(slot) = s.events.get_mut(&e) {
                *slot = Event::Reached(now);
            }
        }
        Op::Copy { dst, src, bytes, to_device } => {
            let mut s = lock();
            if s.sticky.is_some() {
                return;
            }
            // SAFETY: both ranges were checked against the driver's memory when queued.
            unsafe { std::ptr::copy_nonoverlapping(src as *const u8, dst as *mut u8, bytes as usize) };
            s.clock_ns += CE_SETUP_NS + bytes as f64 * 8.0 / (CE_GBPS * speed());
            count_pcie_bytes(bytes, to_device);
        }
        Op::Kernel { name, args } => {
            if lock().sticky.is_some() {
                return;
            }
            let took = kernel(&name, &args);
            let mut s = lock();
            match took {
                Ok(ns) => s.clock_ns += ns,
                Err(what) => {
                    s.fault(format!("{name}: {what}"));
                }
            }
        }
    }
}

/// Checks that a kernel may touch `[at, at + bytes)` of `kind`.
fn touch(at: u64, bytes: u64, kind: Memory, what: &str) -> Result<(), String> {
    if lock().holds(at, bytes, Some(kind)) {
        Ok(())
    } else {
        Err(format!(
            "{what}: {bytes} bytes at {at:#x} outside every {kind:?} allocation"
        ))
    }
}

/// Reads the `i`-th little-endian word of `T` at device address `at`.
fn word<T: Copy>(at: u64, i: u64) -> T {
    // SAFETY: callers checked the range with `touch`.
    unsafe { std::ptr::read_unaligned((at as *const T).add(i as usize)) }
}

fn put<T: Copy>(at: u64, i: u64, v: T) {
    // SAFETY: callers checked the range with `touch`.
    unsafe { std::ptr::write_unaligned((at as *mut T).add(i as usize), v) }
}

/// Runs kernel `name` of kernels.ptx on its arguments; the GPU time it took, in ns.
fn kernel(name: &str, a: &[u64]) -> Result<f64, String> {
    match name {
        "timer_probe" => {
            touch(a[0], 24, Memory::Device, "out")?;
            put(a[0], 0, GLOBALTIMER_STEP_NS);
            put(a[0], 1, 2_000_000u64);
            put(a[0], 2, (2_000_000.0 * SM_MHZ / 1000.0) as u64);
            Ok(2e6)
        }
        "gate" => {
            let (flag, timeout) = (a[0], a[1]);
            touch(flag, 8, Memory::MappedHost, "flag")?;
            let start = Instant::now();
            loop {
                // SAFETY: checked above; the host writes it from another thread.
                let seen = unsafe { std::ptr::read_volatile(flag as *const u32) };
                if seen != 0 || start.elapsed() >= Duration::from_nanos(timeout) {
                    // SAFETY: as above.
                    unsafe { std::ptr::write_volatile((flag as *mut u32).add(1), seen) };
                    return Ok(0.0);
                }
                std::thread::sleep(Duration::from_micros(20));
            }
        }
        "latency" => latency(a),
        "bandwidth" => bandwidth(a),
        "device_warm" => {
            let (buf, bytes) = (a[0], a[1]);
            touch(buf, bytes, Memory::MappedHost, "buf")?;
            // SAFETY: checked above.
            unsafe { std::ptr::write_bytes(buf as *mut u8, 0x5a, bytes as usize) };
            Ok(bytes as f64 * 8.0 / SM_WRITE_GBPS)
        }
        _ => Err(format!("no such kernel {name}")),
    }
}

/// The stores' split must cover the DMA: head bytes to a 16-byte boundary, whole 16-byte pieces.
fn check_split(at: u64, size: u64, head: u64, body: u64) -> Result<(), String> {
    let want_head = ((16 - at % 16) % 16).min(size);
    if head != want_head || !body.is_multiple_of(16) || head + body > size || size - head - body >= 16 {
        return Err(format!(
            "stores head {head} body {body} do not split {size} bytes at {at:#x}"
        ));
    }
    Ok(())
}

fn latency(a: &[u64]) -> Result<f64, String> {
    let (buf, offs, table, n, size, head, body, kind, clock, zero, dry, lat, totals) = (
        a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9], a[10], a[11], a[12],
    );
    if table == 0 || !(1..=4096).contains(&size) || kind > 1 || zero != 0 || clock > 1 || dry > 1 {
        return Err(format!(
            "arguments out of range: table {table} size {size} kind {kind} zero {zero}"
        ));
    }
    touch(offs, table * 8, Memory::Device, "offs")?;
    touch(lat, n * 4, Memory::Device, "lat")?;
    touch(totals, 24, Memory::Device, "totals")?;
    let (mut ticks, mut ns_total, mut sink) = (0u64, 0f64, 0u64);
    for i in 0..n {
        let at = buf + word::<u64>(offs, i % table);
        let mut ns = LOOP_NS;
        if dry == 0 {
            check_split(at, size, head, body)?;
            if kind == 0 {
                // The lanes read the 16-byte pieces that cover the DMA.
                let (first, end) = (at / 16 * 16, (at + size).div_ceil(16) * 16);
                touch(first, end - first, Memory::MappedHost, &format!("DMA {i}"))?;
                sink = sink.wrapping_add(word::<u8>(at, 0) as u64);
                ns += LAT_NS + size as f64 * 8.0 / LAT_GBPS;
            } else {
                touch(at, size, Memory::MappedHost, &format!("DMA {i}"))?;
                // SAFETY: checked above.
                unsafe { std::ptr::write_bytes(at as *mut u8, i as u8, size as usize) };
                ns += WRRD_NS + size as f64 * 8.0 / LAT_GBPS;
            }
        }
        let t = if clock == 1 {
            (ns * SM_MHZ / 1000.0).round()
        } else {
            ns.round()
        };
        put(lat, i, t as u32);
        ticks += t as u64;
        ns_total += ns;
    }
    put(totals, 0, ticks);
    put(totals, 1, ns_total.round() as u64);
    put(totals, 2, sink);
    Ok(ns_total)
}

fn bandwidth(a: &[u64]) -> Result<f64, String> {
    let (buf, offs, table, n, size, head, body, lanes, mode, _sink) =
        (a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9]);
    if table == 0 || !(1..=4096).contains(&size) || mode > 2 || !lanes.is_power_of_two() || lanes > 32 {
        return Err(format!(
            "arguments out of range: table {table} size {size} mode {mode} lanes {lanes}"
        ));
    }
    touch(offs, table * 8, Memory::Device, "offs")?;
    let mut ns = 0.0;
    for i in 0..n {
        let at = buf + word::<u64>(offs, i % table);
        let read = mode == 0 || (mode == 2 && i % 2 == 0);
        if i < table {
            // Every address of the table once; later DMAs repeat them.
            check_split(at, size, head, body)?;
            touch(at, size, Memory::MappedHost, &format!("DMA {i}"))?;
        }
        ns += size as f64 * 8.0 / (speed() * if read { SM_READ_GBPS } else { SM_WRITE_GBPS });
    }
    Ok(ns)
}

// ---- The driver API -------------------------------------------------------------------------

#[no_mangle]
pub unsafe extern "C" fn cuGetErrorString(e: CUresult, out: *mut *const c_char) -> CUresult {
    let text: &'static CStr = match e {
        INVALID_VALUE => c"invalid argument",
        NOT_INITIALIZED => c"initialization error",
        INVALID_DEVICE => c"invalid device ordinal",
        INVALID_IMAGE => c"device kernel image is invalid",
        INVALID_CONTEXT => c"invalid device context",
        218 => c"a PTX JIT compilation failed",
        INVALID_HANDLE => c"invalid resource handle",
        NOT_FOUND => c"named symbol not found",
        NOT_READY => c"device not ready",
        ILLEGAL_ADDRESS => c"an illegal memory access was encountered",
        2 => c"out of memory",
        100 => c"no CUDA-capable device is detected",
        _ => return INVALID_VALUE,
    };
    *out = text.as_ptr();
    SUCCESS
}

#[no_mangle]
pub unsafe extern "C" fn cuInit(_flags: c_uint) -> CUresult {
    status((|| {
        let mut s = enter("cuInit", false)?;
        if !s.initialised {
            s.initialised = true;
            std::thread::spawn(gpu);
        }
        Ok(())
    })())
}

fn devices() -> c_int {
    std::env::var("FAKE_CUDA_DEVICES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1)
}

#[no_mangle]
pub unsafe extern "C" fn cuDeviceGetCount(count: *mut c_int) -> CUresult {
    status(enter("cuDeviceGetCount", false).map(|_| *count = devices()))
}

#[no_mangle]
pub unsafe extern "C" fn cuDriverGetVersion(v: *mut c_int) -> CUresult {
    status(enter("cuDriverGetVersion", false).map(|_| *v = 13000))
}

#[no_mangle]
pub unsafe extern "C" fn cuDeviceGet(dev: *mut c_int, ordinal: c_int) -> CUresult {
    status(enter("cuDeviceGet", false).and_then(|_| {
        if !(0..devices()).contains(&ordinal) {
            return Err(INVALID_DEVICE);
        }
        *dev = ordinal;
        Ok(())
    }))
}

#[no_mangle]
pub unsafe extern "C" fn cuDevicePrimaryCtxRetain(ctx: *mut usize, _dev: c_int) -> CUresult {
    status(enter("cuDevicePrimaryCtxRetain", false).map(|_| *ctx = CONTEXT))
}

#[no_mangle]
pub unsafe extern "C" fn cuDevicePrimaryCtxRelease_v2(_dev: c_int) -> CUresult {
    busy_link("2.5 GT/s PCIe\n");
    count_pcie_bytes(0, false);
    SUCCESS
}

/// Writes the link speed `FAKE_CUDA_BUSY_LINK` names, whole (renamed into place).
fn busy_link(speed: &str) {
    if let Some(file) = std::env::var_os("FAKE_CUDA_BUSY_LINK") {
        write_whole(std::path::Path::new(&file), speed);
    }
}

/// Writes `text` to `file` whole (a temporary beside it, renamed into place), so a reader in
/// another process never sees half of it; whether it got there.
fn write_whole(file: &std::path::Path, text: &str) -> bool {
    let tmp = file.with_extension("fake-cuda");
    std::fs::write(&tmp, text).is_ok() && std::fs::rename(&tmp, file).is_ok()
}

#[no_mangle]
pub unsafe extern "C" fn cuCtxSetCurrent(ctx: usize) -> CUresult {
    status(enter("cuCtxSetCurrent", false).and_then(|_| {
        if ctx != CONTEXT && ctx != 0 {
            return Err(INVALID_CONTEXT);
        }
        CURRENT.with(|c| c.set(ctx));
        Ok(())
    }))
}

#[no_mangle]
pub unsafe extern "C" fn cuDeviceGetName(name: *mut c_char, len: c_int, _dev: c_int) -> CUresult {
    status(enter("cuDeviceGetName", false).map(|_| {
        let mut text = std::env::var("FAKE_CUDA_NAME").unwrap_or_else(|_| "pcieperf fake GPU (no hardware)".into()).into_bytes();
        text.push(0);
        let n = text.len().min(len.max(1) as usize);
        std::ptr::copy_nonoverlapping(text.as_ptr().cast(), name, n);
        *name.add(n - 1) = 0;
    }))
}

#[no_mangle]
pub unsafe extern "C" fn cuDeviceGetUuid_v2(uuid: *mut [u8; 16], _dev: c_int) -> CUresult {
    status(enter("cuDeviceGetUuid_v2", false).map(|_| *uuid = *b"pcieperf-fakegpu"))
}

#[no_mangle]
pub unsafe extern "C" fn cuDeviceGetAttribute(v: *mut c_int, attr: c_int, _dev: c_int) -> CUresult {
    status(enter("cuDeviceGetAttribute", false).and_then(|_| {
        *v = match attr {
            16 => SMS,
            33 => PCI_BUS,
            34 => 0,
            // A PCI domain no host has, so no sysfs entry answers for the fake GPU.
            50 => PCI_DOMAIN,
            _ => return Err(INVALID_VALUE),
        };
        Ok(())
    }))
}

/// The entry points of a PTX text and their parameters' types.
fn entries(ptx: &str) -> Option<HashMap<String, Vec<String>>> {
    if !ptx.contains(".version ") || !ptx.contains(".target ") {
        return None;
    }
    let mut out = HashMap::new();
    for part in ptx.split(".entry ").skip(1) {
        let (name, rest) = part.split_once('(')?;
        let params = rest.split_once(')')?.0;
        let types = params
            .split(',')
            .filter(|p| !p.trim().is_empty())
            .map(|p| {
                p.split_whitespace()
                    .nth(1)
                    .map(|t| t.trim_start_matches('.').to_string())
            })
            .collect::<Option<Vec<String>>>()?;
        out.insert(name.trim().to_string(), types);
    }
    Some(out)
}

#[no_mangle]
pub unsafe extern "C" fn cuModuleLoadData(module: *mut usize, image: *const c_void) -> CUresult {
    status(enter("cuModuleLoadData", true).and_then(|mut s| {
        let ptx = CStr::from_ptr(image.cast()).to_str().map_err(|_| INVALID_IMAGE)?;
        let e = entries(ptx).ok_or(INVALID_IMAGE)?;
        let h = s.handle();
        s.modules.insert(h, e);
        *module = h;
        Ok(())
    }))
}

#[no_mangle]
pub unsafe extern "C" fn cuModuleGetFunction(f: *mut usize, module: usize, name: *const c_char) -> CUresult {
    status(enter("cuModuleGetFunction", true).and_then(|mut s| {
        let name = CStr::from_ptr(name).to_string_lossy().into_owned();
        let known = s.modules.get(&module).ok_or(INVALID_HANDLE)?.contains_key(&name);
        if !known {
            return Err(NOT_FOUND);
        }
        let h = s.handle();
        s.functions.insert(h, (module, name));
        *f = h;
        Ok(())
    }))
}

#[no_mangle]
pub unsafe extern "C" fn cuLaunchKernel(
    f: usize,
    grid: c_uint,
    _gy: c_uint,
    _gz: c_uint,
    block: c_uint,
    _by: c_uint,
    _bz: c_uint,
    shared: c_uint,
    stream: usize,
    params: *mut *mut c_void,
    extra: *mut *mut c_void,
) -> CUresult {
    status(enter("cuLaunchKernel", true).and_then(|s| {
        let (module, name) = s.functions.get(&f).ok_or(INVALID_HANDLE)?.clone();
        if stream != 0 && !s.streams.contains(&stream) {
            return Err(INVALID_HANDLE);
        }
        if grid == 0 || block == 0 || block > 1024 || shared != 0 || !extra.is_null() || params.is_null() {
            return Err(INVALID_VALUE);
        }
        // Each argument as wide as the PTX declares it: a u32 reads the first 4 bytes.
        let types = &s.modules[&module][&name];
        let args = types
            .iter()
            .enumerate()
            .map(|(i, t)| {
                let p = *params.add(i);
                match t.as_str() {
                    "u32" => *p.cast::<u32>() as u64,
                    _ => *p.cast::<u64>(),
                }
            })
            .collect();
        enqueue(s, Op::Kernel { name, args });
        Ok(())
    }))
}

#[no_mangle]
pub unsafe extern "C" fn cuCtxSynchronize() -> CUresult {
    status(enter("cuCtxSynchronize", true).and_then(|s| drain(s).1))
}

#[no_mangle]
pub unsafe extern "C" fn cuMemAlloc_v2(ptr: *mut u64, bytes: usize) -> CUresult {
    status(enter("cuMemAlloc_v2", true).and_then(|mut s| {
        if bytes == 0 {
            return Err(INVALID_VALUE);
        }
        let p = std::alloc::alloc_zeroed(std::alloc::Layout::from_size_align(bytes, 256).map_err(|_| INVALID_VALUE)?);
        if p.is_null() {
            return Err(2);
        }
        s.memory.insert(p as u64, (bytes as u64, Some(Memory::Device)));
        *ptr = p as u64;
        Ok(())
    }))
}

#[no_mangle]
pub unsafe extern "C" fn cuMemFree_v2(ptr: u64) -> CUresult {
    status(enter("cuMemFree_v2", true).and_then(|s| {
        // Freeing waits for the GPU, as the driver's does.
        let (mut s, _) = drain(s);
        match s.memory.remove(&ptr) {
            Some((bytes, Some(Memory::Device))) => {
                std::alloc::dealloc(
                    ptr as *mut u8,
                    std::alloc::Layout::from_size_align(bytes as usize, 256).expect("allocated so"),
                );
                Ok(())
            }
            _ => Err(INVALID_VALUE),
        }
    }))
}

#[no_mangle]
pub unsafe extern "C" fn cuMemHostAlloc(ptr: *mut *mut c_void, bytes: usize, flags: c_uint) -> CUresult {
    status(enter("cuMemHostAlloc", true).and_then(|mut s| {
        let p = std::alloc::alloc_zeroed(
            std::alloc::Layout::from_size_align(bytes.max(1), 4096).map_err(|_| INVALID_VALUE)?,
        );
        let kind = (flags & 2 != 0).then_some(Memory::MappedHost);
        s.memory.insert(p as u64, (bytes as u64, kind));
        *ptr = p.cast();
        Ok(())
    }))
}

#[no_mangle]
pub unsafe extern "C" fn cuMemFreeHost(ptr: *mut c_void) -> CUresult {
    status(enter("cuMemFreeHost", true).and_then(|s| {
        let (mut s, _) = drain(s);
        let (bytes, _) = s.memory.remove(&(ptr as u64)).ok_or(INVALID_VALUE)?;
        std::alloc::dealloc(
            ptr.cast(),
            std::alloc::Layout::from_size_align(bytes.max(1) as usize, 4096).expect("allocated so"),
        );
        Ok(())
    }))
}

#[no_mangle]
pub unsafe extern "C" fn cuMemHostRegister_v2(ptr: *mut c_void, bytes: usize, flags: c_uint) -> CUresult {
    status(enter("cuMemHostRegister_v2", true).and_then(|mut s| {
        if bytes == 0 || s.holds(ptr as u64, 1, None) {
            return Err(INVALID_VALUE);
        }
        let kind = (flags & 2 != 0).then_some(Memory::MappedHost);
        s.memory.insert(ptr as u64, (bytes as u64, kind));
        Ok(())
    }))
}

#[no_mangle]
pub unsafe extern "C" fn cuMemHostUnregister(ptr: *mut c_void) -> CUresult {
    status(enter("cuMemHostUnregister", true).and_then(|s| {
        let (mut s, _) = drain(s);
        s.memory.remove(&(ptr as u64)).map(|_| ()).ok_or(INVALID_VALUE)
    }))
}

#[no_mangle]
pub unsafe extern "C" fn cuMemHostGetDevicePointer_v2(dptr: *mut u64, ptr: *mut c_void, flags: c_uint) -> CUresult {
    status(enter("cuMemHostGetDevicePointer_v2", true).and_then(|s| {
        if flags != 0 || !s.holds(ptr as u64, 1, Some(Memory::MappedHost)) {
            return Err(INVALID_VALUE);
        }
        *dptr = ptr as u64;
        Ok(())
    }))
}

/// A synchronous copy: the GPU finishes what is queued first (the legacy default stream).
unsafe fn copy_now(call: &str, dst: u64, src: u64, bytes: usize, device_side: u64) -> CUresult {
    status(enter(call, true).and_then(|s| {
        let (s, r) = drain(s);
        r?;
        if !s.holds(device_side, bytes as u64, Some(Memory::Device)) {
            eprintln!("fake libcuda: {call}: {bytes} bytes at {device_side:#x} outside every device allocation");
            return Err(INVALID_VALUE);
        }
        std::ptr::copy_nonoverlapping(src as *const u8, dst as *mut u8, bytes);
        busy_link("32.0 GT/s PCIe\n");
        count_pcie_bytes(bytes as u64, dst == device_side);
        Ok(())
    }))
}

/// Adds a copy's bytes to `FAKE_GPU_PCIE_BYTES`'s file (`TX RX`: the GPU sent, received), where
/// the stand-in NVML of another process reads its PCIe byte counters: kept here and added to
/// the file at most every 10 ms (a suite makes a million copies) and when the context goes.
fn count_pcie_bytes(bytes: u64, to_device: bool) {
    static PENDING: Mutex<(u64, u64, Option<Instant>)> = Mutex::new((0, 0, None));
    let mut p = PENDING.lock().unwrap_or_else(|e| e.into_inner());
    if to_device {
        p.1 += bytes;
    } else {
        p.0 += bytes;
    }
    let due = bytes == 0 || p.2.is_none_or(|t| t.elapsed() >= Duration::from_millis(10));
    if !due || (p.0, p.1) == (0, 0) {
        return;
    }
    let Some(file) = std::env::var_os("FAKE_GPU_PCIE_BYTES") else {
        return;
    };
    let file = std::path::PathBuf::from(file);
    let text = std::fs::read_to_string(&file).unwrap_or_default();
    let mut n = text.split_whitespace().map(|v| v.parse::<u64>().unwrap_or(0));
    let (tx, rx) = (n.next().unwrap_or(0) + p.0, n.next().unwrap_or(0) + p.1);
    if write_whole(&file, &format!("{tx} {rx}\n")) {
        *p = (0, 0, Some(Instant::now()));
    }
}

#[no_mangle]
pub unsafe extern "C" fn cuMemcpyHtoD_v2(dst: u64, src: *const c_void, bytes: usize) -> CUresult {
    copy_now("cuMemcpyHtoD_v2", dst, src as u64, bytes, dst)
}

#[no_mangle]
pub unsafe extern "C" fn cuMemcpyDtoH_v2(dst: *mut c_void, src: u64, bytes: usize) -> CUresult {
    copy_now("cuMemcpyDtoH_v2", dst as u64, src, bytes, src)
}

/// An asynchronous copy: the host side must be pinned (registered or allocated by the driver).
unsafe fn copy_async(
    call: &str,
    dst: u64,
    src: u64,
    bytes: usize,
    device_side: u64,
    host_side: u64,
    stream: usize,
) -> CUresult {
    status(enter(call, true).and_then(|s| {
        if !s.streams.contains(&stream) {
            return Err(INVALID_HANDLE);
        }
        let pinned = s
            .memory
            .range(..=host_side)
            .next_back()
            .is_some_and(|(&start, &(len, _))| host_side + bytes as u64 <= start + len);
        if !pinned || !s.holds(device_side, bytes as u64, Some(Memory::Device)) {
            eprintln!(
                "fake libcuda: {call}: {bytes} bytes: host {host_side:#x} pinned {pinned}, device {device_side:#x}"
            );
            return Err(INVALID_VALUE);
        }
        enqueue(
            s,
            Op::Copy {
                dst,
                src,
                bytes: bytes as u64,
                to_device: dst == device_side,
            },
        );
        Ok(())
    }))
}

#[no_mangle]
pub unsafe extern "C" fn cuMemcpyHtoDAsync_v2(dst: u64, src: *const c_void, bytes: usize, stream: usize) -> CUresult {
    copy_async("cuMemcpyHtoDAsync_v2", dst, src as u64, bytes, dst, src as u64, stream)
}

#[no_mangle]
pub unsafe extern "C" fn cuMemcpyDtoHAsync_v2(dst: *mut c_void, src: u64, bytes: usize, stream: usize) -> CUresult {
    copy_async("cuMemcpyDtoHAsync_v2", dst as u64, src, bytes, src, dst as u64, stream)
}

#[no_mangle]
pub unsafe extern "C" fn cuStreamCreate(stream: *mut usize, _flags: c_uint) -> CUresult {
    status(enter("cuStreamCreate", true).map(|mut s| {
        let h = s.handle();
        s.streams.push(h);
        *stream = h;
    }))
}

#[no_mangle]
pub unsafe extern "C" fn cuStreamDestroy_v2(stream: usize) -> CUresult {
    status(enter("cuStreamDestroy_v2", true).and_then(|mut s| {
        let before = s.streams.len();
        s.streams.retain(|&h| h != stream);
        if s.streams.len() == before {
            Err(INVALID_HANDLE)
        } else {
            Ok(())
        }
    }))
}

#[no_mangle]
pub unsafe extern "C" fn cuEventCreate(event: *mut usize, _flags: c_uint) -> CUresult {
    status(enter("cuEventCreate", true).map(|mut s| {
        let h = s.handle();
        s.events.insert(h, Event::Created);
        *event = h;
    }))
}

#[no_mangle]
pub unsafe extern "C" fn cuEventDestroy_v2(event: usize) -> CUresult {
    status(enter("cuEventDestroy_v2", true).and_then(|mut s| s.events.remove(&event).map(|_| ()).ok_or(INVALID_HANDLE)))
}

#[no_mangle]
pub unsafe extern "C" fn cuEventRecord(event: usize, stream: usize) -> CUresult {
    status(enter("cuEventRecord", true).and_then(|mut s| {
        if stream != 0 && !s.streams.contains(&stream) {
            return Err(INVALID_HANDLE);
        }
        *s.events.get_mut(&event).ok_or(INVALID_HANDLE)? = Event::Queued;
        enqueue(s, Op::Record(event));
        Ok(())
    }))
}

#[no_mangle]
pub unsafe extern "C" fn cuStreamWaitEvent(stream: usize, event: usize, _flags: c_uint) -> CUresult {
    status(enter("cuStreamWaitEvent", true).and_then(|s| {
        // Every stream runs in one sequence, so the wait holds by itself.
        if !s.streams.contains(&stream) || !s.events.contains_key(&event) {
            return Err(INVALID_HANDLE);
        }
        Ok(())
    }))
}

#[no_mangle]
pub unsafe extern "C" fn cuEventSynchronize(event: usize) -> CUresult {
    status(enter("cuEventSynchronize", true).and_then(|mut s| loop {
        s.sticky()?;
        match s.events.get(&event) {
            None => return Err(INVALID_HANDLE),
            Some(Event::Queued) => s = driver().changed.wait(s).unwrap_or_else(|p| p.into_inner()),
            Some(_) => return Ok(()),
        }
    }))
}

#[no_mangle]
pub unsafe extern "C" fn cuEventElapsedTime(ms: *mut f32, start: usize, end: usize) -> CUresult {
    status(
        enter("cuEventElapsedTime", true).and_then(|s| match (s.events.get(&start), s.events.get(&end)) {
            (Some(Event::Reached(a)), Some(Event::Reached(b))) => {
                *ms = ((b - a) / 1e6) as f32;
                Ok(())
            }
            (Some(Event::Created), _) | (_, Some(Event::Created)) | (None, _) | (_, None) => Err(INVALID_HANDLE),
            _ => Err(NOT_READY),
        }),
    )
}

// ---- NVML (the same library answers as libnvidia-ml.so.1) ----------------------------------

/// The fake GPU's PCI address as the backend spells it (cuDeviceGetAttribute's figures).
fn pci_address() -> String {
    format!("{PCI_DOMAIN:04x}:{PCI_BUS:02x}:00.0")
}

#[no_mangle]
pub extern "C" fn nvmlInit_v2() -> c_int {
    injected("nvmlInit_v2").unwrap_or(0)
}

#[no_mangle]
pub extern "C" fn nvmlShutdown() -> c_int {
    0
}

#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetHandleByPciBusId_v2(bus: *const c_char, device: *mut usize) -> c_int {
    if CStr::from_ptr(bus).to_string_lossy() != pci_address() {
        return 6; // NVML_ERROR_NOT_FOUND
    }
    *device = 0x6e766d6c;
    0
}

/// One of NVML's four PCIe link figures of the fake GPU.
unsafe fn link_figure(device: usize, out: *mut c_uint, value: c_uint) -> c_int {
    if device != 0x6e766d6c {
        return 2; // NVML_ERROR_INVALID_ARGUMENT
    }
    *out = value;
    0
}

#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetCurrPcieLinkGeneration(device: usize, out: *mut c_uint) -> c_int {
    link_figure(device, out, LINK_GEN)
}

#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetCurrPcieLinkWidth(device: usize, out: *mut c_uint) -> c_int {
    link_figure(device, out, LINK_WIDTH)
}

#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetMaxPcieLinkGeneration(device: usize, out: *mut c_uint) -> c_int {
    link_figure(device, out, LINK_GEN)
}

#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetMaxPcieLinkWidth(device: usize, out: *mut c_uint) -> c_int {
    link_figure(device, out, LINK_WIDTH)
}
