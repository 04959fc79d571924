//! pcieperf-refdev: the reference device program of the exec protocol (docs/backends.md).
//!
//! It drives NO real device: it emulates one in host memory. Each "DMA" is a memcpy between
//! an 8 KB device buffer and the host buffer pcieperf shares with it, laid out as the test's
//! window, units and offsets, timed with the monotonic clock. Its numbers describe this CPU's
//! memory system, not PCIe; it exists to test the protocol and as a starting point for real
//! device programs.
//!
//! Test switches (for pcieperf's own tests of failure handling):
//!   --host-cache         ask pcieperf for the host cache steps, and check the warm step happened
//!   --crash-after N      abort (SIGABRT) when test N+1 arrives
//!   --hang-after N       stop answering when test N+1 arrives
//!   --malformed-after N  answer test N+1 with a line that is not JSON
//!   --fail-after N       answer test N+1 with an error reply (and stay in step)
//!   --protocol V         claim protocol version V in the hello
//!   --bdf BDF            report BDF as the device's PCI address

use pcie_bench::exec::protocol::{quote, BufferOffer, DeviceHello, Reply, Request, PROTOCOL_VERSION};
use pcie_bench::host::DmaBuffer;
use pcie_bench::{CacheState, Pattern, TestKind, TestParams, BUFFER_BYTES};
use std::hint::black_box;
use std::io::BufRead;
use std::path::Path;
use std::time::Instant;

/// The emulated device's own buffer, as the NFP-6000's.
const DEVICE_BYTES: usize = 8192;
const LINE: usize = 64;

#[derive(Default)]
struct Switches {
    host_cache: bool,
    crash_after: Option<u64>,
    hang_after: Option<u64>,
    malformed_after: Option<u64>,
    fail_after: Option<u64>,
    protocol: Option<u32>,
    bdf: Option<String>,
}

fn parse_args() -> Result<Switches, String> {
    let mut s = Switches::default();
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut number = || {
            let v = args.next().ok_or(format!("{a} needs a number"))?;
            v.parse::<u64>().map_err(|_| format!("{a} {v}: must be a whole number"))
        };
        match a.as_str() {
            "--host-cache" => s.host_cache = true,
            "--crash-after" => s.crash_after = Some(number()?),
            "--hang-after" => s.hang_after = Some(number()?),
            "--malformed-after" => s.malformed_after = Some(number()?),
            "--fail-after" => s.fail_after = Some(number()?),
            "--protocol" => s.protocol = Some(number()? as u32),
            "--bdf" => s.bdf = Some(args.next().ok_or("--bdf needs a PCI address")?),
            _ => {
                return Err(format!(
                    "{a}: unknown option (allowed: --host-cache, --crash-after N, --hang-after N, --malformed-after N, --fail-after N, --protocol V, --bdf BDF)"
                ))
            }
        }
    }
    Ok(s)
}

fn send(reply: &Reply) {
    println!("{}", serde_json::to_string(reply).expect("replies serialise"));
}

fn main() {
    let switches = parse_args().unwrap_or_else(|e| {
        eprintln!("pcieperf-refdev: {e}");
        std::process::exit(2);
    });
    let mut device = Device::new();
    let mut done = 0u64;
    for line in std::io::stdin().lock().lines() {
        let Ok(line) = line else { break };
        let request: Request = match serde_json::from_str(&line) {
            Ok(r) => r,
            Err(e) => {
                send(&Reply::Error {
                    id: None,
                    message: format!("cannot read request {}: {e}", quote(&line)),
                });
                std::process::exit(1);
            }
        };
        match request {
            Request::Hello { buffer, .. } => {
                if let Err(e) = device.attach(buffer.as_ref()) {
                    send(&Reply::Error { id: None, message: e });
                    std::process::exit(1);
                }
                send(&Reply::Hello(hello(&switches)));
            }
            Request::Test {
                id,
                params,
                seed,
                host_cache_done,
                ..
            } => {
                if switches.crash_after == Some(done) {
                    eprintln!("pcieperf-refdev: crashing on purpose (--crash-after {done})");
                    std::process::abort();
                }
                if switches.hang_after == Some(done) {
                    eprintln!("pcieperf-refdev: hanging on purpose (--hang-after {done})");
                    loop {
                        std::thread::park();
                    }
                }
                if switches.malformed_after == Some(done) {
                    println!("DMA engine 0: {{\"latency\": [1, 2,");
                    done += 1;
                    continue;
                }
                if switches.fail_after == Some(done) {
                    send(&Reply::Error {
                        id: Some(id),
                        message: format!("DMA engine timed out on purpose (--fail-after {done})"),
                    });
                    done += 1;
                    continue;
                }
                let reply = TestParams::try_from(&params)
                    .map_err(|e| e.to_string())
                    .and_then(|t| {
                        if switches.host_cache {
                            device.check_host_warm(&t, host_cache_done)?;
                        }
                        Ok(device.run(id, &t, seed))
                    })
                    .unwrap_or_else(|message| Reply::Error { id: Some(id), message });
                send(&reply);
                done += 1;
            }
            Request::Bye => break,
        }
    }
}

fn hello(s: &Switches) -> DeviceHello {
    DeviceHello {
        protocol: s.protocol.unwrap_or(PROTOCOL_VERSION),
        device: serde_json::json!({
            "name": "pcieperf-refdev",
            "emulated": true,
            "description": "EMULATED device, no PCIe: DMAs are memcpy between an 8 KB device buffer and the \
                            host buffer, timed with the monotonic clock. The numbers describe this CPU's \
                            memory system, not a PCIe link.",
        }),
        max_transfer: 4096,
        cycle_ps: 1000.0,
        link: None,
        bdf: s.bdf.clone(),
        host_cache_steps: s.host_cache,
    }
}

/// The emulated device: its own buffer and the host buffer it "DMAs" to and from.
struct Device {
    local: Vec<u8>,
    host: Option<DmaBuffer>,
    own_host: Vec<u8>,
}

impl Device {
    fn new() -> Device {
        Device {
            local: vec![0; DEVICE_BYTES],
            host: None,
            own_host: Vec::new(),
        }
    }

    /// Maps the buffer pcieperf offers, or allocates one when it offers none.
    fn attach(&mut self, offer: Option<&BufferOffer>) -> Result<(), String> {
        match offer {
            Some(o) => {
                let b = DmaBuffer::open(Path::new(&o.path), o.bytes, o.page_bytes)
                    .map_err(|e| format!("cannot map the host buffer {}: {e}", o.path))?;
                if (b.len() as u64) < BUFFER_BYTES {
                    return Err(format!(
                        "the host buffer has {} bytes, tests need {BUFFER_BYTES}",
                        b.len()
                    ));
                }
                self.host = Some(b);
            }
            None => self.own_host = vec![0; BUFFER_BYTES as usize],
        }
        Ok(())
    }

    fn host(&mut self) -> &mut [u8] {
        match &mut self.host {
            Some(b) => b.as_mut_slice(),
            None => &mut self.own_host,
        }
    }

    /// With `--host-cache`, an `hwarm` test must find the window written by pcieperf's warm
    /// step (its last pass writes 3 into every byte of the window's pages).
    fn check_host_warm(&mut self, t: &TestParams, done: bool) -> Result<(), String> {
        if !done {
            return Err("pcieperf did not run the host cache steps it was asked for".into());
        }
        let end = t.window.next_multiple_of(4096) as usize;
        let host = self.host();
        if t.cache == CacheState::HWarm && (host[0] != 3 || host[end - 1] != 3) {
            return Err(format!("the window of {} bytes was not warmed by the host", t.window));
        }
        Ok(())
    }

    /// The device-side cache steps, then the test.
    fn run(&mut self, id: u64, t: &TestParams, seed: u64) -> Reply {
        let mut rng = Rng(seed | 1);
        match t.cache {
            CacheState::DWarm => {
                for _ in 0..2 {
                    for line in (0..t.window as usize).step_by(LINE) {
                        self.host()[line..line + LINE].fill(0x5a);
                    }
                }
            }
            CacheState::DThrash => {
                let lines = self.host().len() / LINE;
                for _ in 0..2 * lines {
                    let line = rng.below(lines as u64) as usize * LINE;
                    self.host()[line..line + LINE].fill(0xa5);
                }
            }
            CacheState::Cold | CacheState::HWarm => {}
        }
        let units = units(t);
        let size = t.size as usize;
        let dev = t.device_offset as usize..t.device_offset as usize + size;
        let mut next = |i: u64| -> usize {
            let u = match t.pattern {
                Pattern::Seq => i % units.len() as u64,
                Pattern::Rand => rng.below(units.len() as u64),
            };
            units[u as usize] + t.host_offset as usize
        };
        let start = Instant::now();
        if t.kind.is_latency() {
            let mut samples = Vec::with_capacity(t.count as usize);
            for i in 0..t.count {
                let at = next(i);
                let t0 = Instant::now();
                self.dma(t.kind, at, dev.clone(), i);
                samples.push(t0.elapsed().as_nanos().min(u32::MAX as u128) as u32);
            }
            Reply::Latency {
                id,
                samples,
                total_cycles: Some(start.elapsed().as_nanos() as u64),
                cycle_ps: None,
            }
        } else {
            for i in 0..t.count {
                let at = next(i);
                self.dma(t.kind, at, dev.clone(), i);
            }
            let ns = (start.elapsed().as_nanos() as u64).max(1);
            // BW_RDWR alternates reads and writes and counts one direction, as pcie-bench.
            let per_direction = if t.kind == TestKind::BwRdWr {
                t.count / 2
            } else {
                t.count
            };
            Reply::Bandwidth {
                id,
                bytes: per_direction * t.size as u64,
                transactions: per_direction,
                time_cycles: ns,
                cycle_ps: None,
            }
        }
    }

    /// One emulated DMA of `dev.len()` bytes at host address `at`.
    fn dma(&mut self, kind: TestKind, at: usize, dev: std::ops::Range<usize>, i: u64) {
        let n = dev.len();
        let write = match kind {
            TestKind::BwWr => true,
            TestKind::BwRdWr => i % 2 == 1,
            _ => false,
        };
        let local = &mut self.local;
        let host = match &mut self.host {
            Some(b) => b.as_mut_slice(),
            None => &mut self.own_host[..],
        };
        match kind {
            TestKind::LatWrRd | TestKind::LatCmdWrRd => {
                host[at..at + n].copy_from_slice(&local[dev.clone()]);
                local[dev].copy_from_slice(&host[at..at + n]);
            }
            _ if write => host[at..at + n].copy_from_slice(&local[dev]),
            _ => local[dev].copy_from_slice(&host[at..at + n]),
        }
        black_box((&host[at], &local[0]));
    }
}

/// Start addresses of the window's units that do not cross a 4 KB page (pcie-bench skips
/// those).
fn units(t: &TestParams) -> Vec<usize> {
    let unit = t.unit();
    let reach = t.host_offset as u64 + t.size as u64;
    let all: Vec<usize> = (0..t.window / unit)
        .map(|u| u * unit)
        .filter(|start| start / 4096 == (start + reach - 1) / 4096)
        .map(|s| s as usize)
        .collect();
    if all.is_empty() {
        vec![0]
    } else {
        all
    }
}

/// xorshift64: the unit sequence of a test follows from its seed.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}
