//! Simulated DMA transactions per CPU-second for BW_RD 64 B and LAT_RD 64 B (target: 5 million
//! on one core). Run with `cargo bench -p pcie-sim`; prints figures, asserts nothing.

use pcie_sim::{CachePrep, Simulator, TestOp, Workload};
use std::time::Instant;

fn main() {
    let sim = Simulator::load("e5-2637v3", "nfp6000").expect("built-in profiles load");
    let cases = [
        ("BW_RD 64 B", TestOp::BwRead, 64, 4_000_000u64),
        ("LAT_RD 64 B", TestOp::LatRead, 64, 2_000_000),
        ("BW_WR 64 B", TestOp::BwWrite, 64, 4_000_000),
        ("BW_RD 2048 B", TestOp::BwRead, 2048, 1_000_000),
    ];
    for (name, op, size, count) in cases {
        let w = Workload::new(op, size, 8192, CachePrep::HostWarm, count);
        let t = Instant::now();
        std::hint::black_box(sim.run(&w, 1));
        let secs = t.elapsed().as_secs_f64();
        println!(
            "{name:>13}: {count} transactions in {secs:.2} s = {:.2} M transactions per CPU-second",
            count as f64 / secs / 1e6
        );
    }
}
