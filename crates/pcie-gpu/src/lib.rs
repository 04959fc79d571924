//! An NVIDIA GPU as the pcie-bench device: `--backend cuda[:N]`. The GPU reads and writes the
//! host-side DMA buffer (huge pages, NUMA binding, pcie-bench's cache steps) over its real PCIe
//! link, either from its own threads (`sm`: the buffer pinned and mapped into the GPU, kernels
//! in kernels.ptx) or with its copy engines (`ce`: `cuMemcpy*Async` on several streams).
//! Timed work is queued behind a gate kernel, so the GPU's events time the GPU and never the
//! host's submission; latency samples lose the loop's own fixed cost, measured by a dry run;
//! the link is read while the GPU is busy, at open and at the end of the run.
//!
//! The driver API (and NVML, for the link) is loaded at run time, so pcieperf builds and runs
//! without CUDA; without a driver, opening the backend fails with dlopen's reason. Tests on one
//! GPU run one at a time.
//!
//! Owned here: [`CudaBackend`] (a `pcie_bench::Backend`), what `run.json` records of the GPU
//! ([`GpuInfo`]), the mapping of a test onto the GPU (`plan`: addresses, stores, launch
//! geometry, copy batches), the driver calls (`driver`) and the PTX kernels (`ptx`). Left to
//! others: the methodology, seeds and addresses, and the engine vocabulary of run.json
//! (`pcie_bench::Engine`, `SM_MIN_WINDOW`), the GPU's link from sysfs and NVML (pcie-nvml),
//! and choosing the backend from `--backend cuda[:N]` (pcieperf).

mod driver;
mod plan;
mod ptx;
pub mod wake;

pub use pcie_bench::{Engine, SM_MIN_WINDOW};

use driver::{CopyDirection, DeviceBuffer, Function, Gate, GpuDevice, Mapped, Module, Streams};
use pcie_bench::backend::{Backend, BackendError, BackendInfo, BandwidthTotals, LatencySamples, Outcome};
use pcie_bench::host::{node_cpus, CacheSteps, DmaBuffer};
use pcie_bench::params::{sample, CacheState, TestKind, TestParams, BUFFER_BYTES};
use pcie_model::LinkConfig;
use pcie_nvml::link::{self, LinkRecord, Readers};
use pcie_nvml::nvml;
use pcie_sysfs::{Bdf, DeviceRecord};
use plan::{Arg, Buffers};
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

/// Largest DMA the GPU's threads run: pcie-bench's transfers stay within a 4 KB page.
const SM_MAX_TRANSFER: u32 = 4096;
/// Largest copy (and the device memory the copy engines copy to and from): the host buffer,
/// so `--engine ce` also measures the large copies applications and nvbandwidth make.
const CE_MAX_TRANSFER: u32 = BUFFER_BYTES as u32;
/// Dry-run samples that measure the latency loop's fixed cost.
const CALIBRATION_SAMPLES: u64 = 1000;
/// How long the GPU spins before its link is read: long enough for it to leave its idle link
/// speed; the spin ends as soon as the reading is taken.
const LINK_SETTLE: Duration = Duration::from_millis(100);

/// How to open the GPU.
#[derive(Debug, Clone)]
pub struct CudaOptions {
    pub engine: Engine,
    /// Root of sysfs/procfs (for the link state, NUMA and the kernel driver's version).
    pub root: PathBuf,
    /// NUMA node of the host buffer (`--numa mem=`) and of the CPUs that run the cache steps
    /// [default: the GPU's node, where sysfs gives one].
    pub buffer_node: Option<u32>,
    pub cache_node: Option<u32>,
}

/// What `run.json` records about the GPU.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GpuInfo {
    pub name: String,
    pub uuid: String,
    pub ordinal: i32,
    pub engine: Engine,
    /// The CUDA version the driver implements (13000 = 13.0) and the kernel module's version.
    pub cuda_driver_version: i32,
    pub kernel_driver_version: Option<String>,
    pub multiprocessors: u32,
    /// The GPU's PCI function as sysfs shows it (read while the GPU was busy): link speed and
    /// width (current and maximum), MPS/MRRS from its config space, NUMA node.
    pub pci: Option<DeviceRecord>,
    /// The link's readings at open and at the end (sysfs and NVML, the GPU busy), and where
    /// the link in `run.json` comes from or why there is none.
    pub link: LinkRecord,
    pub timer: TimerInfo,
    /// The latency loop's fixed cost, taken off every latency sample.
    pub latency_overhead: LatencyOverhead,
    /// Where the pinned host buffer is: the node asked for, the GPU's node, and the nodes of
    /// a sample of its pages as the kernel placed them.
    pub host_buffer: HostBuffer,
}

/// The pinned host buffer's NUMA placement as `run.json` records it (`host_buffer`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HostBuffer {
    /// The node it was bound to (`--numa mem=`, else the GPU's); `null` when unbound.
    pub bound_node: Option<u32>,
    /// The GPU's node from sysfs; `null` where the platform gives none.
    pub gpu_node: Option<u32>,
    pub pages: pcie_bench::host::PagePlacement,
}

/// Pages of the host buffer whose node is read: enough to see a split placement.
const PLACEMENT_SAMPLES: usize = 64;

impl GpuInfo {
    /// One line for reports: the GPU, its PCI function and link, the engine and the timer.
    pub fn summary(&self) -> String {
        let link = match &self.pci {
            Some(p) => format!(
                "{}, link {} x{} (max {} x{}), MPS {}, MRRS {}, NUMA node {}",
                p.bdf,
                p.current_link_speed.as_deref().unwrap_or("?"),
                p.current_link_width.map_or("?".into(), |w| w.to_string()),
                p.max_link_speed.as_deref().unwrap_or("?"),
                p.max_link_width.map_or("?".into(), |w| w.to_string()),
                p.mps.map_or("?".into(), |v| v.to_string()),
                p.mrrs.map_or("?".into(), |v| v.to_string()),
                p.numa_node.map_or("?".into(), |v| v.to_string()),
            ),
            None => "PCI function not found in sysfs".into(),
        };
        let o = &self.latency_overhead;
        format!(
            "{} ({}), {link} ({}); engine {}; {} SMs; timer {} ({:.3} ns per tick; %globaltimer step {} ns, SM clock {:.0} MHz); latency loop overhead {} ticks LAT_RD, {} LAT_WRRD, subtracted; CUDA driver {}.{}{}",
            self.name,
            self.uuid,
            self.link.note,
            self.engine,
            self.multiprocessors,
            self.timer.source,
            self.timer.tick_ps / 1000.0,
            self.timer.globaltimer_step_ns,
            self.timer.sm_clock_mhz,
            o.lat_rd_ticks,
            o.lat_wrrd_ticks,
            self.cuda_driver_version / 1000,
            self.cuda_driver_version % 1000 / 10,
            self.kernel_driver_version.as_deref().map_or(String::new(), |v| format!(", kernel module {v}")),
        )
    }
}

/// The latency timer, chosen by measuring both (as pcie-bench records the NFP's 13.33 ns tick).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TimerInfo {
    /// "sm_clock" (%clock64) or "globaltimer" (%globaltimer).
    pub source: String,
    /// Length of one tick of the chosen timer, in ps (the SM clock's from its measured rate).
    pub tick_ps: f64,
    /// The smallest step %globaltimer took in a 2 ms spin, in ns.
    pub globaltimer_step_ns: u64,
    /// The SM clock's rate over the same spin, in MHz.
    pub sm_clock_mhz: f64,
}

/// The fixed cost of one latency sample (address arithmetic, the XOR chain over the loaded
/// data, the lanes' shuffles, the timer reads; for LAT_WRRD the fence), measured by running
/// the latency kernel dry (the same instructions, no host access) when the backend opens. Every
/// sample of a test has its kind's cost taken off, as pcie-bench subtracts its loop overhead;
/// a raw sample is the recorded one plus this.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct LatencyOverhead {
    /// Dry samples per kind.
    pub samples: u64,
    /// Median ticks of the timer (`timer.source`) of a dry LAT_RD and LAT_WRRD sample.
    pub lat_rd_ticks: u32,
    pub lat_wrrd_ticks: u32,
    /// The same in ns, at the clock rate over the dry runs.
    pub lat_rd_ns: f64,
    pub lat_wrrd_ns: f64,
}

/// Kernels, memory and streams of one open GPU. Field order is drop order: mappings and
/// allocations go before the context, the host buffer after its mapping.
struct Gpu {
    latency: Function,
    bandwidth: Function,
    warm: Function,
    gate: Gate,
    _module: Module,
    streams: Streams,
    device_buffer: DeviceBuffer,
    mapped: Mapped,
    device: GpuDevice,
    buffer: DmaBuffer,
    cache: CacheSteps,
    sms: u32,
    use_clock: bool,
    /// Ticks taken off LAT_RD and LAT_WRRD samples.
    overhead: [u32; 2],
}

// SAFETY: every handle belongs to the context `device` holds, which `run` makes current on
// its thread before use; the mutex around `Gpu` keeps one thread at a time.
unsafe impl Send for Gpu {}

/// `--backend cuda[:N]`.
pub struct CudaBackend {
    spec: String,
    info: GpuInfo,
    link: Option<LinkConfig>,
    /// The link record with the end-of-run readings, once `finish` took them.
    end_link: Mutex<Option<LinkRecord>>,
    /// Where the link is read again at the end: sysfs's root and the GPU's PCI address.
    root: PathBuf,
    bdf: String,
    engine: Engine,
    warnings: Vec<String>,
    gpu: Mutex<Gpu>,
}

/// The CUDA device index in `cuda` or `cuda:N`.
pub fn parse_spec(spec: &str) -> Result<i32, String> {
    match spec.strip_prefix("cuda") {
        Some("") => Ok(0),
        Some(rest) => rest
            .strip_prefix(':')
            .and_then(|n| n.parse::<i32>().ok())
            .filter(|n| (0..=1023).contains(n))
            .ok_or_else(|| "must be cuda or cuda:N with N a CUDA device index (0-1023)".to_string()),
        None => Err("must be cuda or cuda:N".to_string()),
    }
}

fn err(test: &TestParams, e: impl std::fmt::Display) -> BackendError {
    BackendError {
        test: test.name(),
        message: e.to_string(),
    }
}

impl CudaBackend {
    /// Opens GPU `cuda[:N]`: loads the driver, the kernels and the host buffer, measures the
    /// timers. Fails (a usage error for the CLI) without a driver or without that GPU.
    pub fn open(spec: &str, options: CudaOptions) -> Result<CudaBackend, String> {
        let ordinal = parse_spec(spec)?;
        driver::probe().map_err(|why| format!("no NVIDIA driver found ({}): {why}", driver::DRIVER_LIBRARY))?;
        let (count, cuda_version) = driver::init().map_err(|e| e.to_string())?;
        if ordinal >= count {
            return Err(match count {
                0 => "the driver sees no CUDA device".to_string(),
                1 => "this host has 1 CUDA device (cuda:0)".to_string(),
                _ => format!("this host has {count} CUDA devices (cuda:0 to cuda:{})", count - 1),
            });
        }
        let device = GpuDevice::open(ordinal).map_err(|e| e.to_string())?;
        let module = device.module(ptx::PTX).map_err(|e| e.to_string())?;
        let function = |entry: (&str, &[&str])| module.function(entry.0).map_err(|e| e.to_string());
        let (probe, gate, latency, bandwidth, warm) = (
            function(ptx::TIMER_PROBE)?,
            function(ptx::GATE)?,
            function(ptx::LATENCY)?,
            function(ptx::BANDWIDTH)?,
            function(ptx::DEVICE_WARM)?,
        );
        let bdf = device.pci_address().map_err(|e| e.to_string())?;
        // Unless --numa places them, the buffer and the cache steps go on the GPU's own node.
        let gpu_node = gpu_numa_node(&options.root, &bdf);
        let (buffer_node, cache_node) = (options.buffer_node.or(gpu_node), options.cache_node.or(gpu_node));
        let (mut buffer, warnings) = DmaBuffer::allocate(&options.root, BUFFER_BYTES, buffer_node)?;
        // SAFETY: the buffer outlives the mapping (declared after it in `Gpu`).
        let mapped =
            unsafe { Mapped::new(buffer.as_mut_slice().as_mut_ptr(), buffer.len()) }.map_err(|e| e.to_string())?;
        let host_buffer = HostBuffer {
            bound_node: buffer.numa_node(),
            gpu_node,
            pages: buffer.placement(PLACEMENT_SAMPLES),
        };
        let cpus = match cache_node {
            Some(n) => node_cpus(&options.root, n).unwrap_or_default(),
            None => Vec::new(),
        };
        use cudarc::driver::sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT;
        let sms = device
            .attribute(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)
            .map_err(|e| e.to_string())? as u32;
        let timer = measure_timer(&probe).map_err(|e| e.to_string())?;
        let (name, uuid) = (
            device.name().map_err(|e| e.to_string())?,
            device.uuid().map_err(|e| e.to_string())?,
        );
        let mut gpu = Gpu {
            latency,
            bandwidth,
            warm,
            gate: Gate::new(gate).map_err(|e| e.to_string())?,
            _module: module,
            streams: Streams::new(plan::CE_STREAMS).map_err(|e| e.to_string())?,
            device_buffer: DeviceBuffer::new(CE_MAX_TRANSFER as usize).map_err(|e| e.to_string())?,
            mapped,
            device,
            buffer,
            cache: CacheSteps::new(cpus),
            sms,
            use_clock: timer.source == "sm_clock",
            overhead: [0, 0],
        };
        let latency_overhead = gpu.calibrate().map_err(|e| e.to_string())?;
        let readers = gpu.busy_link(&options.root, &bdf).map_err(|e| e.to_string())?;
        let (link_record, link) = link::at_open(&readers);
        let info = GpuInfo {
            name,
            uuid,
            ordinal,
            engine: options.engine,
            cuda_driver_version: cuda_version,
            kernel_driver_version: kernel_driver_version(&options.root),
            multiprocessors: sms,
            pci: readers.sysfs.ok(),
            link: link_record,
            timer,
            latency_overhead,
            host_buffer,
        };
        Ok(CudaBackend {
            spec: spec.to_string(),
            info,
            link,
            end_link: Mutex::new(None),
            root: options.root,
            bdf,
            engine: options.engine,
            warnings,
            gpu: Mutex::new(gpu),
        })
    }

    /// What the host could not provide (huge pages, NUMA binding).
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }

    pub fn gpu_info(&self) -> &GpuInfo {
        &self.info
    }

    /// The pages of the host buffer the GPU reads and writes (4096 without huge pages).
    pub fn buffer_page_bytes(&self) -> u64 {
        self.gpu.lock().map_or(4096, |g| g.buffer.page_bytes())
    }
}

/// Runs the timer probe: %globaltimer's smallest step and the SM clock's rate.
fn measure_timer(probe: &Function) -> Result<TimerInfo, driver::DriverError> {
    let out = DeviceBuffer::new(3 * 8)?;
    probe.launch(1, 1, &[("out", Arg::U64(out.ptr))])?;
    let mut v = [0u64; 3];
    out.download(&mut v)?;
    let (clock, tick_ps) = plan::choose_timer(v[0], v[1], v[2]);
    Ok(TimerInfo {
        source: if clock { "sm_clock" } else { "globaltimer" }.into(),
        tick_ps,
        globaltimer_step_ns: v[0],
        sm_clock_mhz: if v[1] > 0 {
            v[2] as f64 * 1000.0 / v[1] as f64
        } else {
            0.0
        },
    })
}

/// The NUMA node sysfs gives the GPU at `bdf`, when it gives one.
fn gpu_numa_node(root: &Path, bdf: &str) -> Option<u32> {
    let bdf: Bdf = bdf.parse().ok()?;
    DeviceRecord::read(root, bdf).ok()?.numa_node
}

/// The NVIDIA kernel module's version (`/sys/module/nvidia/version`), when loaded.
fn kernel_driver_version(root: &std::path::Path) -> Option<String> {
    pcie_sysfs::files::read_attr(&root.join("sys/module/nvidia/version"))
        .ok()
        .flatten()
}

/// What sysfs and NVML say about the GPU at `bdf` now.
fn read_link(root: &Path, bdf: &str) -> Readers {
    Readers {
        sysfs: bdf
            .parse::<Bdf>()
            .map_err(|_| format!("{bdf}: not a PCI address"))
            .and_then(|b| DeviceRecord::read(root, b).map_err(|e| e.to_string())),
        nvml: nvml::read(bdf),
    }
}

impl Gpu {
    /// Reads the link while the gate keeps the GPU busy.
    fn busy_link(&self, root: &Path, bdf: &str) -> Result<Readers, driver::DriverError> {
        self.gate.busy(plan::GATE_TIMEOUT_NS, || {
            std::thread::sleep(LINK_SETTLE);
            read_link(root, bdf)
        })
    }

    /// Measures the latency loop's fixed cost with dry runs, and keeps it for the tests.
    fn calibrate(&mut self) -> Result<LatencyOverhead, driver::DriverError> {
        let mut ticks = [0u32; 2];
        let mut ns = [0f64; 2];
        for (kind, test) in [TestKind::LatRd, TestKind::LatWrRd].into_iter().enumerate() {
            let (samples, cycle_ps) = self.latency_samples(&sample(test, CALIBRATION_SAMPLES), 0, kind as u32, true)?;
            ticks[kind] = plan::overhead_ticks(&samples.cycles);
            ns[kind] = ticks[kind] as f64 * cycle_ps / 1000.0;
        }
        self.overhead = ticks;
        Ok(LatencyOverhead {
            samples: CALIBRATION_SAMPLES,
            lat_rd_ticks: ticks[0],
            lat_wrrd_ticks: ticks[1],
            lat_rd_ns: ns[0],
            lat_wrrd_ns: ns[1],
        })
    }

    /// Leaves the caches as `t.cache` asks: pcie-bench's host steps, then for DWarm the GPU
    /// writes the window, so its lines were last written by the device.
    fn prepare(&mut self, t: &TestParams) -> Result<(), driver::DriverError> {
        self.cache.prepare(self.buffer.as_mut_slice(), t);
        if t.cache == CacheState::DWarm {
            let args = [("buf", Arg::U64(self.mapped.device)), ("bytes", Arg::U64(t.window))];
            self.warm
                .launch(plan::bandwidth_blocks(self.sms), plan::BLOCK_THREADS, &args)?;
        }
        Ok(())
    }

    /// The address table on the device.
    fn table(&self, t: &TestParams, seed: u64) -> Result<(DeviceBuffer, u32), driver::DriverError> {
        let offsets = plan::offsets(t, seed);
        let table = DeviceBuffer::new(offsets.len() * 8)?;
        table.upload(&offsets)?;
        Ok((table, offsets.len() as u32))
    }

    /// Runs the latency kernel (`dry`: without touching host memory): the samples and the
    /// length of a tick in ps.
    fn latency_samples(
        &mut self,
        t: &TestParams,
        seed: u64,
        kind: u32,
        dry: bool,
    ) -> Result<(LatencySamples, f64), driver::DriverError> {
        let (table, entries) = self.table(t, seed)?;
        let n = t.count as usize;
        let samples = DeviceBuffer::new(n * 4)?;
        let totals = DeviceBuffer::new(3 * 8)?;
        let buffers = Buffers {
            host: self.mapped.device,
            table: table.ptr,
            entries,
            out: samples.ptr,
            totals: totals.ptr,
        };
        self.latency
            .launch(1, 32, &plan::latency_args(t, buffers, kind, self.use_clock, dry))?;
        let mut cycles = vec![0u32; n];
        samples.download(&mut cycles)?;
        let mut sums = [0u64; 3];
        totals.download(&mut sums)?;
        // The SM clock's rate over this very test: its ticks against %globaltimer's ns.
        let cycle_ps = if self.use_clock && sums[0] > 0 {
            sums[1] as f64 * 1000.0 / sums[0] as f64
        } else {
            1000.0
        };
        let samples = LatencySamples {
            cycles,
            cycle_ps,
            total_cycles: sums[0],
        };
        Ok((samples, cycle_ps))
    }

    fn latency(&mut self, t: &TestParams, seed: u64, kind: u32) -> Result<Outcome, driver::DriverError> {
        let (mut samples, _) = self.latency_samples(t, seed, kind, false)?;
        plan::subtract_overhead(&mut samples.cycles, self.overhead[kind as usize]);
        Ok(Outcome::Latency(samples))
    }

    fn bandwidth_sm(&mut self, t: &TestParams, seed: u64, mode: u32) -> Result<Outcome, driver::DriverError> {
        let (table, entries) = self.table(t, seed)?;
        let blocks = plan::bandwidth_blocks(self.sms);
        let sink = DeviceBuffer::new((blocks * plan::BLOCK_THREADS) as usize * 4)?;
        let buffers = Buffers {
            host: self.mapped.device,
            table: table.ptr,
            entries,
            out: sink.ptr,
            totals: 0,
        };
        let args = plan::bandwidth_args(t, buffers, mode);
        let ms = self
            .bandwidth
            .launch_timed(&self.gate, blocks, plan::BLOCK_THREADS, &args)?;
        Ok(bandwidth_outcome(t, ms))
    }

    fn bandwidth_ce(&mut self, t: &TestParams, seed: u64) -> Result<Outcome, driver::DriverError> {
        let offsets = plan::offsets(t, seed);
        let host = self.buffer.as_mut_slice().as_mut_ptr();
        let device = self.device_buffer.ptr + t.device_offset as u64;
        let kind = t.kind;
        let copy = |i: u64| {
            let off = offsets[(i % offsets.len() as u64) as usize] as usize;
            let dir = match (kind, i % 2) {
                (TestKind::BwWr, _) | (TestKind::BwRdWr, 1) => CopyDirection::DeviceToHost,
                _ => CopyDirection::HostToDevice,
            };
            // SAFETY: `off + size` is inside the buffer (the offsets stay in the window).
            (dir, unsafe { host.add(off) }, device, t.size as usize)
        };
        // Batch by batch behind the gate: the copy engines' time, never the host's queueing.
        let mut ms = 0.0;
        for (first, n) in plan::ce_batches(t.count) {
            let copies = (first..first + n as u64).map(copy);
            // SAFETY: the host buffer is registered (pinned) for its whole length.
            ms += unsafe { self.streams.time_copies(&self.gate, copies)? };
        }
        Ok(bandwidth_outcome(t, ms))
    }
}

/// pcie-bench's bandwidth totals from the GPU's elapsed milliseconds, in ns ticks.
fn bandwidth_outcome(t: &TestParams, ms: f64) -> Outcome {
    let (bytes, transactions) = plan::bandwidth_totals(t);
    Outcome::Bandwidth(BandwidthTotals {
        bytes,
        transactions,
        time_cycles: (ms * 1e6).round() as u64,
        cycle_ps: 1000.0,
    })
}

impl Backend for CudaBackend {
    fn info(&self) -> BackendInfo {
        // As the simulator's: a role with a one-line description (the report prints it) beside
        // every recorded field; after the run, with the link's end readings.
        let mut info = self.info.clone();
        if let Some(end) = self.end_link.lock().ok().and_then(|l| l.clone()) {
            info.link = end;
        }
        let mut device = serde_json::to_value(&info).unwrap_or_default();
        if let Some(d) = device.as_object_mut() {
            d.insert("description".into(), info.summary().into());
        }
        BackendInfo {
            name: self.spec.clone(),
            description: serde_json::json!({ "device": device }),
            max_transfer: match self.engine {
                Engine::Sm => SM_MAX_TRANSFER,
                Engine::Ce => CE_MAX_TRANSFER,
            },
        }
    }

    fn link(&self) -> Option<serde_json::Value> {
        serde_json::to_value(self.link.as_ref()?).ok()
    }

    /// Reads the link again, the GPU busy, for `run.json`.
    fn finish(&self) {
        let Ok(gpu) = self.gpu.lock() else { return };
        let mut record = self.info.link.clone();
        match gpu.device.bind().and_then(|()| gpu.busy_link(&self.root, &self.bdf)) {
            Ok(readers) => record.at_end(&readers),
            Err(e) => record
                .note
                .push_str(&format!("; at the end: the GPU could not be kept busy: {e}")),
        }
        if let Ok(mut end) = self.end_link.lock() {
            *end = Some(record);
        }
    }

    fn leaves_out(&self, t: &TestParams) -> Option<String> {
        self.engine.leaves_out(t)
    }

    fn default_suite(&self) -> &'static str {
        "gpu"
    }

    fn run(&self, t: &TestParams, seed: u64) -> Result<Outcome, BackendError> {
        if t.count > u32::MAX as u64 {
            return Err(err(
                t,
                format!("{} transactions: the GPU kernels count at most {}", t.count, u32::MAX),
            ));
        }
        if let Some(why) = self.engine.leaves_out(t) {
            return Err(err(t, format!("--engine {}: {why}", self.engine)));
        }
        let mut gpu = self
            .gpu
            .lock()
            .map_err(|_| err(t, "an earlier test panicked with the GPU"))?;
        gpu.device.bind().map_err(|e| err(t, e))?;
        gpu.prepare(t).map_err(|e| err(t, e))?;
        let outcome = match (self.engine, plan::latency_kind(t.kind), plan::bandwidth_mode(t.kind)) {
            (Engine::Sm, Some(kind), _) => gpu.latency(t, seed, kind),
            (Engine::Sm, None, Some(mode)) => gpu.bandwidth_sm(t, seed, mode),
            (Engine::Ce, _, Some(_)) => gpu.bandwidth_ce(t, seed),
            _ => return Err(err(t, format!("--engine {}: cannot run {}", self.engine, t.kind))),
        };
        outcome.map_err(|e| err(t, e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_summary_names_gpu_link_engine_timer_and_overhead() {
        let pci = DeviceRecord {
            bdf: "0000:19:00.0".into(),
            current_link_speed: Some("32.0 GT/s PCIe".into()),
            current_link_width: Some(16),
            max_link_speed: Some("32.0 GT/s PCIe".into()),
            max_link_width: Some(16),
            mps: Some(256),
            mrrs: Some(512),
            numa_node: Some(0),
            ..DeviceRecord::default()
        };
        let (link, config) = link::at_open(&Readers {
            sysfs: Ok(pci.clone()),
            nvml: Err("no NVML".into()),
        });
        let info = GpuInfo {
            name: "NVIDIA H100 80GB HBM3".into(),
            uuid: "GPU-5e2a019c-1122-3344-abcd-0001020304ff".into(),
            ordinal: 0,
            engine: Engine::Ce,
            cuda_driver_version: 13000,
            kernel_driver_version: Some("580.95.05".into()),
            multiprocessors: 132,
            pci: Some(pci),
            link,
            timer: TimerInfo {
                source: "sm_clock".into(),
                tick_ps: 505.05,
                globaltimer_step_ns: 32,
                sm_clock_mhz: 1980.0,
            },
            latency_overhead: LatencyOverhead {
                samples: 1000,
                lat_rd_ticks: 251,
                lat_wrrd_ticks: 412,
                lat_rd_ns: 126.8,
                lat_wrrd_ns: 208.1,
            },
            host_buffer: HostBuffer {
                bound_node: Some(0),
                gpu_node: Some(0),
                pages: Default::default(),
            },
        };
        assert_eq!(
            info.summary(),
            "NVIDIA H100 80GB HBM3 (GPU-5e2a019c-1122-3344-abcd-0001020304ff), 0000:19:00.0, link 32.0 GT/s PCIe x16 \
             (max 32.0 GT/s PCIe x16), MPS 256, MRRS 512, NUMA node 0 (Gen5 x16 read from sysfs while the GPU was busy; \
             MPS 256 and MRRS 512 from config space); engine ce; 132 SMs; timer sm_clock (0.505 ns per tick; \
             %globaltimer step 32 ns, SM clock 1980 MHz); latency loop overhead 251 ticks LAT_RD, 412 LAT_WRRD, \
             subtracted; CUDA driver 13.0, kernel module 580.95.05"
        );
        assert_eq!(
            config.expect("a Gen5 x16 link").to_string().split(',').next(),
            Some("Gen5 x16")
        );
        // run.json's device record: the engine, the overhead and the link's source, by name.
        let json = serde_json::to_value(&info).unwrap();
        assert_eq!(json["engine"], "ce");
        assert_eq!(json["latency_overhead"]["lat_rd_ticks"], 251);
        assert_eq!(json["latency_overhead"]["lat_wrrd_ns"], 208.1);
        assert_eq!(json["link"]["readings"][0]["source"], "sysfs");
        assert_eq!(json["link"]["mps_mrrs_read"], true);
        assert!(json["link"]["note"]
            .as_str()
            .unwrap()
            .starts_with("Gen5 x16 read from sysfs"));
    }

    #[test]
    fn calibration_runs_the_kinds_at_64_bytes_within_the_sm_limits() {
        let t = sample(TestKind::LatWrRd, CALIBRATION_SAMPLES);
        assert_eq!((t.kind, t.size, t.count), (TestKind::LatWrRd, 64, CALIBRATION_SAMPLES));
        assert!(t.check(SM_MAX_TRANSFER).is_ok());
    }

    #[test]
    fn specs_name_a_device_index() {
        assert_eq!(parse_spec("cuda"), Ok(0));
        assert_eq!(parse_spec("cuda:3"), Ok(3));
        for bad in ["cuda:", "cuda:-1", "cuda:x", "cuda3", "cuda:1024", "cudа"] {
            assert!(parse_spec(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn without_a_driver_opening_says_so() {
        if driver::probe().is_ok() {
            eprintln!("skipped: an NVIDIA driver is installed here");
            return;
        }
        let options = CudaOptions {
            engine: Engine::Sm,
            root: PathBuf::from("/"),
            buffer_node: None,
            cache_node: None,
        };
        let e = CudaBackend::open("cuda", options).err().expect("no driver here");
        assert!(e.starts_with("no NVIDIA driver found (libcuda.so.1): "), "{e}");
    }
}
