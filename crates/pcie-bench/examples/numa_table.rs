//! The simulator's eight NUMA placements (device, memory and warming CPU each on socket 0 or 1)
//! on the default host, as the Markdown table in docs/simulator.md.
//!
//! `cargo run --release -p pcie-bench --example numa_table`. LAT_RD and BW_RD read an 8 KB
//! window; LAT_WRRD writes an 8 MB (HWarm: the LLC holds it) or 64 MB (Cold) window, so few of
//! its writes find a line an earlier one left in the LLC. Medians of 20,000 samples, bandwidth
//! of 1,000,000 DMAs, seed 1.

use pcie_bench::*;
use std::sync::atomic::AtomicBool;

/// (test, cache state, window) of each column.
const COLUMNS: [(TestKind, CacheState, u64); 6] = [
    (TestKind::LatRd, CacheState::HWarm, 8 << 10),
    (TestKind::LatRd, CacheState::Cold, 8 << 10),
    (TestKind::LatWrRd, CacheState::HWarm, 8 << 20),
    (TestKind::LatWrRd, CacheState::Cold, 64 << 20),
    (TestKind::BwRd, CacheState::HWarm, 8 << 10),
    (TestKind::BwRd, CacheState::Cold, 8 << 10),
];

fn main() {
    let backend = SimBackend::from_spec("sim").expect("profiles load");
    let mut tests = Vec::new();
    for placement in 0..8u8 {
        let numa = Numa {
            dev: placement >> 2,
            mem: (placement >> 1) & 1,
            cpu: placement & 1,
        };
        for (kind, cache, window) in COLUMNS {
            tests.push(TestParams {
                kind,
                size: 64,
                window,
                host_offset: 0,
                device_offset: 0,
                pattern: Pattern::Rand,
                cache,
                count: if kind.is_bandwidth() { 1_000_000 } else { 20_000 },
                numa,
                iommu: Iommu::Off,
            });
        }
    }
    let mut results = Vec::new();
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    run_tests(&backend, &tests, 1, threads, &AtomicBool::new(false), |e| {
        if let RunEvent::Finished(f) = e {
            results.push(f.outcome.expect("simulation runs"));
        }
        true
    });
    println!(
        "| dev | mem | cpu | LAT_RD HWarm | LAT_RD Cold | LAT_WRRD HWarm | LAT_WRRD Cold | BW_RD HWarm | BW_RD Cold |"
    );
    println!("|---|---|---|---|---|---|---|---|---|");
    for (row, outcomes) in tests.chunks(COLUMNS.len()).zip(results.chunks(COLUMNS.len())) {
        let n = row[0].numa;
        let cells: Vec<String> = outcomes
            .iter()
            .map(|o| match o {
                Outcome::Latency(s) => {
                    format!("{:.0} ns", SortedLatencies::new(s).expect("samples").stats().ns.median)
                }
                Outcome::Bandwidth(b) => format!("{:.2} Gb/s", BandwidthStats::new(b).expect("time").gbps),
            })
            .collect();
        println!("| {} | {} | {} | {} |", n.dev, n.mem, n.cpu, cells.join(" | "));
    }
}
