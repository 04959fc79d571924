//! A [`Device`] that emulates one in host memory: each "DMA" is a memcpy between an 8 KB device
//! buffer and the host buffer, laid out as the test's window, units and offsets, timed with the
//! monotonic clock. Its numbers describe this CPU's memory system, not PCIe; it exists to test
//! the protocol and as a starting point for real device programs (`pcieperf-refdev` serves it).

use super::device::{Device, DeviceTest};
use super::protocol::{BufferOffer, DeviceHello, Reply, PROTOCOL_VERSION};
use crate::host::DmaBuffer;
use crate::params::{CacheState, Pattern, TestKind, TestParams, BUFFER_BYTES};
use std::hint::black_box;
use std::path::Path;
use std::time::Instant;

/// The emulated device's own buffer, as the NFP-6000's.
const DEVICE_BYTES: usize = 8192;
const LINE: usize = 64;

/// The emulated device: its own buffer and the host buffer it "DMAs" to and from.
pub struct EmulatedDevice {
    local: Vec<u8>,
    host: Option<DmaBuffer>,
    own_host: Vec<u8>,
    host_cache: bool,
}

impl EmulatedDevice {
    /// With `host_cache`, the device asks pcieperf for the host cache steps and refuses a test
    /// whose steps did not happen (an `hwarm` window not warmed).
    pub fn new(host_cache: bool) -> EmulatedDevice {
        EmulatedDevice {
            local: vec![0; DEVICE_BYTES],
            host: None,
            own_host: Vec::new(),
            host_cache,
        }
    }

    fn host(&mut self) -> &mut [u8] {
        match &mut self.host {
            Some(b) => b.as_mut_slice(),
            None => &mut self.own_host,
        }
    }

    /// An `hwarm` test must find the window written by pcieperf's warm step (its last pass
    /// writes 3 into every byte of the window's pages).
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

impl Device for EmulatedDevice {
    /// Maps the buffer pcieperf offers, or allocates one when it offers none.
    fn hello(&mut self, offer: Option<&BufferOffer>) -> Result<DeviceHello, String> {
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
        Ok(DeviceHello {
            protocol: PROTOCOL_VERSION,
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
            bdf: None,
            host_cache_steps: self.host_cache,
        })
    }

    fn test(&mut self, test: &DeviceTest) -> Result<Reply, String> {
        if self.host_cache {
            self.check_host_warm(&test.params, test.host_cache_done)?;
        }
        Ok(self.run(test.id, &test.params, test.seed))
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

#[cfg(test)]
mod tests {
    //! `serve` over the emulated device, as `pcieperf-refdev` runs it.
    use super::super::device::{serve, ServeError};
    use super::super::protocol::{encode, Request, WireParams};
    use super::*;
    use crate::params::sample;

    fn replies(input: &str) -> (Result<(), ServeError>, Vec<Reply>) {
        let mut out = Vec::new();
        let result = serve(&mut EmulatedDevice::new(false), input.as_bytes(), &mut out);
        let lines = String::from_utf8(out).unwrap();
        (
            result,
            lines.lines().map(|l| serde_json::from_str(l).unwrap()).collect(),
        )
    }

    #[test]
    fn answers_hello_and_tests_until_bye() {
        let hello = Request::Hello {
            protocol: PROTOCOL_VERSION,
            tool: "test".into(),
            version: "0".into(),
            buffer: None,
        };
        let test = |id, kind| Request::Test {
            id,
            name: "x".into(),
            params: WireParams::from(&sample(kind, 10)),
            seed: 1,
            host_cache_done: false,
        };
        let input = [
            hello,
            test(1, TestKind::LatRd),
            test(2, TestKind::BwWr),
            Request::Bye,
            test(3, TestKind::LatRd),
        ]
        .iter()
        .map(|r| encode(r) + "\n")
        .collect::<String>();
        let (result, out) = replies(&input);
        assert!(result.is_ok());
        assert_eq!(out.len(), 3, "{out:?}");
        let Reply::Hello(DeviceHello {
            protocol, max_transfer, ..
        }) = &out[0]
        else {
            panic!("{out:?}")
        };
        assert_eq!((*protocol, *max_transfer), (PROTOCOL_VERSION, 4096));
        assert!(
            matches!(&out[1], Reply::Latency { id: 1, samples, .. } if samples.len() == 10),
            "{out:?}"
        );
        assert!(
            matches!(
                &out[2],
                Reply::Bandwidth {
                    id: 2,
                    transactions: 10,
                    ..
                }
            ),
            "{out:?}"
        );
    }

    #[test]
    fn a_line_that_is_no_request_ends_the_session_with_an_error_reply() {
        let (result, out) = replies("DMA please\n");
        assert!(matches!(result, Err(ServeError::Request(_))));
        assert!(
            matches!(&out[..], [Reply::Error { id: None, message }] if message.starts_with("cannot read request \"DMA please\"")),
            "{out:?}"
        );
    }
}
