//! Simulated DMA transactions per CPU-second (target: 40 million, issue 23) for the shapes the
//! paper suite runs most: BW_RD, LAT_RD and BW_WR 64 B, BW_RD 2048 B, and their total; then
//! LAT_WRRD 64 B and 2048 B apart, where the paper suite spends most of its CPU time now that
//! bandwidth tests stop at their steady state (lat_dma_off_wrrd and lat_dma_details: 66 of its
//! 187 CPU-s), kept out of the total so that it compares with earlier figures. CPU time
//! of this thread, not wall time: the figure holds on a loaded machine. Every DMA is simulated
//! (`run_every`), not only those up to a bandwidth test's steady state. Run with
//! `cargo bench -p pcie-sim`; prints figures, asserts nothing.

use pcie_sim::{CachePrep, Simulator, TestOp, Workload};

/// CPU time this thread has used, in seconds.
fn cpu_seconds() -> f64 {
    let mut t = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `t` is a valid timespec for the call to fill.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) };
    assert_eq!(rc, 0, "clock_gettime(CLOCK_THREAD_CPUTIME_ID)");
    t.tv_sec as f64 + t.tv_nsec as f64 * 1e-9
}

fn main() {
    let sim = Simulator::load("e5-2637v3", "nfp6000").expect("built-in profiles load");
    let cases = [
        ("BW_RD 64 B", TestOp::BwRead, 64, 8_000_000u64),
        ("LAT_RD 64 B", TestOp::LatRead, 64, 4_000_000),
        ("BW_WR 64 B", TestOp::BwWrite, 64, 8_000_000),
        ("BW_RD 2048 B", TestOp::BwRead, 2048, 2_000_000),
    ];
    let mut total = (0, 0.0);
    for (name, op, size, count) in cases {
        let secs = timed(&sim, op, size, count);
        total = (total.0 + count, total.1 + secs);
        print_rate(name, count, secs);
    }
    print_rate("all", total.0, total.1);
    for (name, size, count) in [("LAT_WRRD 64 B", 64, 4_000_000), ("LAT_WRRD 2048 B", 2048, 1_000_000)] {
        print_rate(name, count, timed(&sim, TestOp::LatWriteRead, size, count));
    }
}

/// CPU-seconds to simulate every one of `count` transactions of `op` at `size`, 8 KB host-warm window.
fn timed(sim: &Simulator, op: TestOp, size: u32, count: u64) -> f64 {
    let w = Workload::new(op, size, 8192, CachePrep::HostWarm, count);
    let t = cpu_seconds();
    std::hint::black_box(sim.run_every(&w, 1));
    cpu_seconds() - t
}

fn print_rate(name: &str, count: u64, secs: f64) {
    println!(
        "{name:>15}: {count} transactions in {secs:.2} CPU-s = {:.2} M transactions per CPU-second",
        count as f64 / secs / 1e6
    );
}
