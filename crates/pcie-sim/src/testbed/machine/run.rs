//! The two test loops: latency (one transaction at a time, timed by the device's counter) and
//! bandwidth (DMA threads keeping one DMA each outstanding).

use super::{Dma, Machine};
use crate::queue::Earliest;
use crate::testbed::steady::Steady;
use crate::testbed::workload::{Addresses, TestOp, Workload};
use crate::time::{ps, Ps};

/// What a run measured, in device timestamp terms.
#[derive(Debug, Clone, PartialEq)]
pub enum Measured {
    Latency {
        cycles: Vec<u32>,
        total_cycles: u64,
    },
    Bandwidth {
        bytes: u64,
        transactions: u64,
        time_cycles: u64,
        /// DMAs simulated one by one (of all the test's, reads and writes); the rest were
        /// accounted at the steady state's rate ([`crate::testbed::steady`]).
        simulated: u64,
    },
}

impl Machine<'_> {
    fn cycle_ps(&self) -> f64 {
        1e6 / self.dev.clock.mhz
    }

    fn dma(&self, addr: u64, w: &Workload) -> Dma {
        Dma { addr, size: w.size }
    }

    /// Latency test: one transaction at a time, each timed by the device's timestamp counter.
    pub fn run_latency(&mut self, w: &Workload) -> Measured {
        let tick_ps = self.cycle_ps() * self.dev.clock.tick_cycles as f64;
        let tick_cycles = self.dev.clock.tick_cycles;
        let stamp = |t: Ps| (t as f64 / tick_ps) as u64;
        let command = w.op == TestOp::LatCmdRead || w.op == TestOp::LatCmdWriteRead;
        let loop_ps = ps(if command {
            self.dev.cmd.loop_ns
        } else {
            self.dev.dma.loop_ns
        });
        let mut addrs = Addresses::new(w);
        let mut cycles = Vec::with_capacity(w.count as usize);
        // Start at a random phase of the timestamp counter.
        let first = self.rng.below(tick_ps as u64);
        let mut now = first;
        for i in 0..w.count {
            let addr = addrs.next(&mut self.rng);
            let d = self.dma(addr, w);
            let (before, wait) = if command { self.move_window(addr) } else { (0, 0) };
            let start = now + before;
            let done = self.transaction(w.op, start + wait, d, i);
            cycles.push(((stamp(done) - stamp(start)) * tick_cycles as u64) as u32);
            now = done + loop_ps;
        }
        let total_cycles = (stamp(now) - stamp(first)) * tick_cycles as u64;
        Measured::Latency { cycles, total_cycles }
    }

    /// Bandwidth test: every DMA thread keeps one DMA outstanding; the earliest free thread
    /// claims the next transaction. Unless `every`, the simulation stops at the steady state
    /// and accounts the remaining DMAs at its rate.
    pub fn run_bandwidth(&mut self, w: &Workload, every: bool) -> Measured {
        let worker_ps = ps(self.dev.dma.worker_ns);
        let mut addrs = Addresses::new(w);
        let mut threads = Earliest::new(self.dev.dma.workers as usize);
        let mut steady = (!every).then(|| Steady::new(w));
        let (mut end, mut simulated) = (0, w.count);
        for i in 0..w.count {
            // The earliest free thread claims transaction i.
            threads.take(|free| {
                let addr = addrs.next(&mut self.rng);
                let d = self.dma(addr, w);
                let done = self.transaction(w.op, free + worker_ps, d, i);
                end = end.max(done);
                done
            });
            if let Some(per_dma) = steady.as_mut().and_then(|s| s.observe(i + 1, end)) {
                simulated = i + 1;
                end += ((w.count - simulated) as f64 * per_dma).round() as Ps;
                break;
            }
        }
        let counted = if w.op == TestOp::BwReadWrite {
            w.count / 2
        } else {
            w.count
        };
        Measured::Bandwidth {
            bytes: counted * w.size as u64,
            transactions: counted,
            time_cycles: (end as f64 / self.cycle_ps() + 0.5) as u64,
            simulated,
        }
    }
}
