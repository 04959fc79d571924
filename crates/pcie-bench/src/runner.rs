//! Runs independent tests on several threads and hands the results back in suite order, so
//! files and output do not depend on the number of threads or on timing. Also the methodology
//! every backend shares: a test's seed ([`test_seed`]) and the addresses it visits, as the
//! workload the simulator and the GPU's address tables read ([`workload`]).

use crate::backend::{Backend, BackendError, Outcome};
use crate::params::{CacheState, Iommu, Pattern, TestKind, TestParams};
use pcie_sim::{mix_seed, CachePrep, TestOp, Workload};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// One finished test.
pub struct Finished {
    pub index: usize,
    pub outcome: Result<Outcome, BackendError>,
    pub elapsed: Duration,
}

/// What the caller hears about, on its own thread.
pub enum RunEvent {
    /// A test was handed to a thread.
    Started(usize),
    /// The next test in suite order finished.
    Finished(Finished),
}

/// Tests a thread may run ahead of the oldest unfinished one. Bounds the memory held by
/// finished latency samples waiting for their turn to be written.
const LOOKAHEAD_PER_THREAD: usize = 2;

/// Latency samples (4 bytes each) the tests in flight and those waiting for their turn may hold
/// together, per thread: one of pcie-bench's long tests (16 M samples). Past it a thread waits
/// for the oldest test to be delivered rather than start another long one, so a run of long
/// tests holds one per thread, not two.
const LOOKAHEAD_SAMPLES_PER_THREAD: u64 = 16 << 20;

/// The samples `t` holds until it is written.
fn held_samples(t: &TestParams) -> u64 {
    if t.kind.is_latency() {
        t.count
    } else {
        0
    }
}

/// Run `tests` on `threads` threads, each with its seed derived from `seed` and its parameters.
/// `on_event` sees starts as they happen and finishes in suite order; it returns false to stop
/// the run. Setting `cancel` (e.g. on Ctrl-C) stops threads from taking new tests; tests already
/// running finish and are delivered.
pub fn run_tests(
    backend: &dyn Backend,
    tests: &[TestParams],
    seed: u64,
    threads: usize,
    cancel: &AtomicBool,
    mut on_event: impl FnMut(RunEvent) -> bool,
) {
    let threads = threads.clamp(1, tests.len().max(1));
    let window = threads * LOOKAHEAD_PER_THREAD;
    // (next test to hand out, next test to deliver)
    let state = (Mutex::new((0usize, 0usize)), Condvar::new());
    let (tx, rx) = mpsc::channel::<RunEvent>();
    std::thread::scope(|scope| {
        for _ in 0..threads {
            let tx = tx.clone();
            let state = &state;
            scope.spawn(move || loop {
                let index = {
                    let (lock, cvar) = state;
                    let mut s = lock.lock().expect("runner state");
                    let too_much = |s: &(usize, usize)| {
                        s.0 > s.1
                            && tests[s.1..=s.0].iter().map(held_samples).sum::<u64>()
                                > threads as u64 * LOOKAHEAD_SAMPLES_PER_THREAD
                    };
                    while s.0 < tests.len() && (s.0 >= s.1 + window || too_much(&s)) && !cancel.load(Ordering::Relaxed)
                    {
                        s = cvar.wait(s).expect("runner state");
                    }
                    if s.0 >= tests.len() || cancel.load(Ordering::Relaxed) {
                        return;
                    }
                    s.0 += 1;
                    s.0 - 1
                };
                let _ = tx.send(RunEvent::Started(index));
                let started = Instant::now();
                let outcome = backend.run(&tests[index], test_seed(seed, &tests[index]));
                let done = Finished {
                    index,
                    outcome,
                    elapsed: started.elapsed(),
                };
                if tx.send(RunEvent::Finished(done)).is_err() {
                    return;
                }
            });
        }
        drop(tx);
        let mut pending: BTreeMap<usize, Finished> = BTreeMap::new();
        let mut next = 0;
        let mut stopped = false;
        for event in rx {
            match event {
                RunEvent::Started(i) => {
                    if !stopped && !on_event(RunEvent::Started(i)) {
                        stopped = true;
                        cancel.store(true, Ordering::Relaxed);
                    }
                }
                RunEvent::Finished(f) => {
                    pending.insert(f.index, f);
                    while let Some(f) = pending.remove(&next) {
                        next += 1;
                        {
                            let (lock, cvar) = &state;
                            lock.lock().expect("runner state").1 = next;
                            cvar.notify_all();
                        }
                        if !stopped && !on_event(RunEvent::Finished(f)) {
                            stopped = true;
                            cancel.store(true, Ordering::Relaxed);
                        }
                    }
                }
            }
            if cancel.load(Ordering::Relaxed) {
                state.1.notify_all();
            }
        }
    });
}

/// The workload a pcie-bench test describes.
pub fn workload(t: &TestParams) -> Workload {
    Workload {
        op: match t.kind {
            TestKind::LatRd => TestOp::LatRead,
            TestKind::LatWrRd => TestOp::LatWriteRead,
            TestKind::LatCmdRd => TestOp::LatCmdRead,
            TestKind::LatCmdWrRd => TestOp::LatCmdWriteRead,
            TestKind::BwRd => TestOp::BwRead,
            TestKind::BwWr => TestOp::BwWrite,
            TestKind::BwRdWr => TestOp::BwReadWrite,
        },
        size: t.size,
        window: t.window,
        host_offset: t.host_offset,
        device_offset: t.device_offset,
        random: t.pattern == Pattern::Rand,
        prep: match t.cache {
            CacheState::Cold => CachePrep::Cold,
            CacheState::DThrash => CachePrep::DeviceThrash,
            CacheState::DWarm => CachePrep::DeviceWarm,
            CacheState::HWarm => CachePrep::HostWarm,
        },
        count: t.count,
        remote_memory: t.numa.remote_memory(),
        remote_cpu: t.numa.cpu != t.numa.dev,
        iommu_page: t.iommu.page_bytes(),
    }
}

/// A test's seed: the run seed mixed with every parameter, so it does not depend on the test's
/// position, the suite or the number of threads.
pub fn test_seed(run_seed: u64, t: &TestParams) -> u64 {
    let iommu = match t.iommu {
        Iommu::Off => 0,
        Iommu::Super2M => 1,
        Iommu::Pages4K => 2,
    };
    mix_seed(&[
        run_seed,
        t.kind as u64,
        t.size as u64,
        t.window,
        t.host_offset as u64,
        t.device_offset as u64,
        t.pattern as u64,
        t.cache as u64,
        t.count,
        ((t.numa.dev as u64) << 16) | ((t.numa.mem as u64) << 8) | t.numa.cpu as u64,
        iommu,
    ])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::{BackendInfo, LatencySamples};
    use crate::params::{sample, TestKind};

    /// A device whose samples are its seed and the test's size, so every test's outcome is its
    /// own; with `slow_first`, the 64-byte test takes 200 ms.
    struct Fake {
        slow_first: bool,
    }

    impl Backend for Fake {
        fn info(&self) -> BackendInfo {
            BackendInfo {
                name: "fake".into(),
                description: serde_json::Value::Null,
                max_transfer: 4096,
            }
        }

        fn run(&self, t: &TestParams, seed: u64) -> Result<Outcome, BackendError> {
            if self.slow_first && t.size == 64 {
                std::thread::sleep(std::time::Duration::from_millis(200));
            }
            Ok(Outcome::Latency(LatencySamples {
                cycles: vec![seed as u32, t.size],
                cycle_ps: 1000.0,
                total_cycles: seed.wrapping_add(t.size as u64),
            }))
        }
    }

    fn tests() -> Vec<TestParams> {
        [64, 128, 256, 512, 1024, 2048]
            .into_iter()
            .flat_map(|size| {
                [TestKind::LatRd, TestKind::BwRd].map(|kind| TestParams {
                    size,
                    ..sample(kind, 3000)
                })
            })
            .collect()
    }

    fn collect(threads: usize) -> Vec<(usize, Outcome)> {
        let backend = Fake { slow_first: false };
        let mut out = Vec::new();
        run_tests(&backend, &tests(), 5, threads, &AtomicBool::new(false), |e| {
            if let RunEvent::Finished(f) = e {
                out.push((f.index, f.outcome.unwrap()));
            }
            true
        });
        out
    }

    #[test]
    fn results_arrive_in_order_and_do_not_depend_on_threads() {
        let one = collect(1);
        assert_eq!(one.iter().map(|r| r.0).collect::<Vec<_>>(), (0..12).collect::<Vec<_>>());
        assert_eq!(one, collect(3));
    }

    #[test]
    fn stopping_delivers_what_finished_and_nothing_after() {
        let backend = Fake { slow_first: false };
        let mut seen = Vec::new();
        run_tests(&backend, &tests(), 5, 2, &AtomicBool::new(false), |e| {
            if let RunEvent::Finished(f) = e {
                seen.push(f.index);
                return f.index < 3;
            }
            true
        });
        assert_eq!(seen, vec![0, 1, 2, 3]);
    }

    /// Long latency tests whose first is slow: the others may not pile up behind it.
    #[test]
    fn long_latency_tests_run_ahead_one_per_thread() {
        // Eight tests of pcie-bench's long count; the look-ahead by tests alone would start
        // four while the first still runs.
        let long: Vec<TestParams> = (0..8)
            .map(|i| TestParams {
                size: 64 * (i + 1),
                ..sample(TestKind::LatRd, LOOKAHEAD_SAMPLES_PER_THREAD)
            })
            .collect();
        let (mut delivered, mut ahead) = (0, 0);
        run_tests(&Fake { slow_first: true }, &long, 5, 2, &AtomicBool::new(false), |e| {
            match e {
                RunEvent::Started(i) => ahead = ahead.max(i + 1 - delivered),
                RunEvent::Finished(_) => delivered += 1,
            }
            true
        });
        assert_eq!((delivered, ahead), (8, 2), "tests started but not delivered, at most");
    }
}
