//! The host-side cache steps pcie-bench runs before every test: thrash the CPU caches by
//! random writes over a 64 MB array, and for `hwarm` write the test's window (rounded up to
//! 4 KB pages) four times, so the window sits in the cache the way the test expects. Both run
//! on the CPUs of the socket `--numa cpu=` names.

use super::affinity::pinned;
use crate::params::{CacheState, TestParams};

/// pcie-bench's thrash array: 64 MB of 8-byte words.
const THRASH_WORDS: usize = 8 << 20;
/// Writes per thrash: 4 × 8M, as pcie-bench's helper.
const THRASH_WRITES: usize = 4 * THRASH_WORDS;
const WARM_PASSES: usize = 4;
const PAGE: u64 = 4096;

/// The thrash array, kept between tests, and the CPUs the steps run on.
pub struct CacheSteps {
    thrash: Vec<u64>,
    state: u64,
    cpus: Vec<usize>,
}

impl CacheSteps {
    /// Steps that run on `cpus` (the warming socket's; empty: wherever the thread runs).
    pub fn new(cpus: Vec<usize>) -> CacheSteps {
        // Zeroed pages are only mapped when the first thrash touches them, on the warming CPUs:
        // the array lives in their node's memory.
        CacheSteps {
            thrash: vec![0; THRASH_WORDS],
            state: 0x9e37_79b9_7f4a_7c15,
            cpus,
        }
    }

    fn on_cpus(&mut self, f: impl FnOnce(&mut CacheSteps)) {
        if self.cpus.is_empty() {
            f(self)
        } else {
            let cpus = self.cpus.clone();
            pinned(&cpus, || f(self))
        }
    }

    /// Random 8-byte writes over the whole array: evicts the buffer from every cache level.
    pub fn thrash(&mut self) {
        let mask = THRASH_WORDS - 1;
        let mut x = self.state;
        for i in 0..THRASH_WRITES {
            // xorshift64: cheap, and the index sequence defeats the prefetchers.
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            self.thrash[x as usize & mask] = i as u64;
        }
        self.state = x;
        std::hint::black_box(&self.thrash);
    }

    /// Writes the first `window` bytes of `buffer`, rounded up to whole 4 KB pages, 4 times.
    pub fn warm(buffer: &mut [u8], window: u64) {
        let end = (window.next_multiple_of(PAGE) as usize).min(buffer.len());
        for pass in 0..WARM_PASSES {
            buffer[..end].fill(pass as u8);
        }
        std::hint::black_box(&buffer[..end]);
    }

    /// Leaves the host caches as `t.cache` needs before the device starts: always thrashed,
    /// then the window warmed for `hwarm`. The device-side steps (`dwarm`, `dthrash`) are the
    /// device's.
    pub fn prepare(&mut self, buffer: &mut [u8], t: &TestParams) {
        self.on_cpus(|s| {
            s.thrash();
            if t.cache == CacheState::HWarm {
                CacheSteps::warm(buffer, t.window);
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::params::{sample, TestKind};

    #[test]
    fn warm_writes_whole_pages_of_the_window_only() {
        let mut buf = vec![0xffu8; 5 * PAGE as usize];
        let t = TestParams {
            window: PAGE + 64,
            ..sample(TestKind::LatRd, 1)
        };
        CacheSteps::new(vec![0]).prepare(&mut buf, &t);
        let written = 2 * PAGE as usize;
        assert!(buf[..written].iter().all(|&b| b == (WARM_PASSES - 1) as u8));
        assert!(buf[written..].iter().all(|&b| b == 0xff));
        let mut cold = vec![0xffu8; PAGE as usize];
        CacheSteps::new(Vec::new()).prepare(
            &mut cold,
            &TestParams {
                cache: CacheState::Cold,
                ..t
            },
        );
        assert!(cold.iter().all(|&b| b == 0xff), "cold leaves the buffer alone");
    }

    #[test]
    fn thrash_touches_the_array_widely() {
        let mut c = CacheSteps::new(Vec::new());
        c.thrash();
        let touched = c.thrash.iter().filter(|&&w| w != 0).count();
        // 32M random writes into 8M words leave few (e^-4 ≈ 2 %) untouched.
        assert!(touched > THRASH_WORDS * 95 / 100, "{touched}");
    }
}
