//! The two test loops: latency (one transaction at a time, timed by the device's counter) and
//! bandwidth (DMA threads keeping one DMA each outstanding).

use super::{Dma, Machine};
use crate::queue::Earliest;
use crate::rng::Rng;
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

/// One transaction of a test's operation: `step(machine, start, dma, index)` returns when the
/// device sees it complete. Each test loop is instantiated per operation the speed bench and
/// the paper suite run most (and per [`Machine::bare`] host), with its own step, so that the
/// operation is a constant in it: the loop inlines that transaction's steps and asks nothing of
/// the operation per DMA. The other operations share one instance.
trait Step: FnMut(&mut Machine<'_>, &mut Rng, Ps, Dma, u64) -> Ps {}
impl<F: FnMut(&mut Machine<'_>, &mut Rng, Ps, Dma, u64) -> Ps> Step for F {}

impl Machine<'_> {
    fn cycle_ps(&self) -> f64 {
        1e6 / self.dev.clock.mhz
    }

    fn dma(&self, addr: u64, w: &Workload) -> Dma {
        Dma { addr, size: w.size }
    }

    /// Latency test: one transaction at a time, each timed by the device's timestamp counter.
    pub fn run_latency(&mut self, w: &Workload) -> Measured {
        if self.bare() {
            self.latency_as::<true>(w)
        } else {
            self.latency_as::<false>(w)
        }
    }

    /// [`Machine::run_latency`] with its loop instantiated per operation ([`Step`]).
    fn latency_as<const BARE: bool>(&mut self, w: &Workload) -> Measured {
        match w.op {
            TestOp::LatRead => self.latency_loop(w, |m, rng, t, d, i| {
                m.transaction::<BARE>(rng, TestOp::LatRead, t, d, i)
            }),
            op => self.latency_loop(w, |m, rng, t, d, i| m.transaction::<BARE>(rng, op, t, d, i)),
        }
    }

    /// Out of line: each instance is its own function, with its registers to itself.
    #[inline(never)]
    fn latency_loop(&mut self, w: &Workload, mut step: impl Step) -> Measured {
        let tick_ps = self.cycle_ps() * self.dev.clock.tick_cycles as f64;
        let tick_cycles = self.dev.clock.tick_cycles;
        // A sample takes less than 2^32 ps (the pair's bound, checked by `Simulator::new`), so
        // fewer than 2^30 of them end below 2^62 ps, and their stamps (a tick is at least 10 ps)
        // too: such times convert through the signed types, one instruction each way, to the
        // same values as through the unsigned ones, which take several.
        let signed = w.count < 1 << 30;
        let stamp = |t: Ps| {
            if signed {
                (t as i64 as f64 / tick_ps) as i64 as u64
            } else {
                (t as f64 / tick_ps) as u64
            }
        };
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
        // The loop's draws come from a local copy of the stream, which the compiler may keep
        // in registers (one behind `self` is read and written back at every draw).
        let mut rng = self.rng.clone();
        for i in 0..w.count {
            let addr = addrs.next(&mut rng);
            let d = self.dma(addr, w);
            let (before, wait) = if command { self.move_window(addr) } else { (0, 0) };
            let start = now + before;
            let done = step(self, &mut rng, start + wait, d, i);
            cycles.push(((stamp(done) - stamp(start)) * tick_cycles as u64) as u32);
            now = done + loop_ps;
        }
        self.rng = rng;
        let total_cycles = (stamp(now) - stamp(first)) * tick_cycles as u64;
        Measured::Latency { cycles, total_cycles }
    }

    /// Bandwidth test: every DMA thread keeps one DMA outstanding; the earliest free thread
    /// claims the next transaction. Unless `every`, the simulation stops at the steady state
    /// and accounts the remaining DMAs at its rate.
    pub fn run_bandwidth(&mut self, w: &Workload, every: bool) -> Measured {
        if self.bare() {
            self.bandwidth_as::<true>(w, every)
        } else {
            self.bandwidth_as::<false>(w, every)
        }
    }

    /// [`Machine::run_bandwidth`] with its loop instantiated per operation ([`Step`]).
    fn bandwidth_as<const BARE: bool>(&mut self, w: &Workload, every: bool) -> Measured {
        match w.op {
            TestOp::BwRead => self.bandwidth_loop(w, every, |m, rng, t, d, i| {
                m.transaction::<BARE>(rng, TestOp::BwRead, t, d, i)
            }),
            TestOp::BwWrite => self.bandwidth_loop(w, every, |m, rng, t, d, i| {
                m.transaction::<BARE>(rng, TestOp::BwWrite, t, d, i)
            }),
            op => self.bandwidth_loop(w, every, |m, rng, t, d, i| m.transaction::<BARE>(rng, op, t, d, i)),
        }
    }

    /// Out of line, as [`Machine::latency_loop`].
    #[inline(never)]
    fn bandwidth_loop(&mut self, w: &Workload, every: bool, mut step: impl Step) -> Measured {
        let worker_ps = ps(self.dev.dma.worker_ns);
        let mut addrs = Addresses::new(w);
        let mut threads = Earliest::new(self.dev.dma.workers as usize);
        let mut steady = (!every).then(|| Steady::new(w));
        let (mut end, mut simulated) = (0, w.count);
        // A local copy of the stream, as in the latency loop.
        let mut rng = self.rng.clone();
        for i in 0..w.count {
            // The earliest free thread claims transaction i.
            threads.take(|free| {
                let addr = addrs.next(&mut rng);
                let d = self.dma(addr, w);
                let done = step(self, &mut rng, free + worker_ps, d, i);
                end = end.max(done);
                done
            });
            if let Some(per_dma) = steady.as_mut().and_then(|s| s.observe(i + 1, end)) {
                simulated = i + 1;
                end += ((w.count - simulated) as f64 * per_dma).round() as Ps;
                break;
            }
        }
        self.rng = rng;
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
