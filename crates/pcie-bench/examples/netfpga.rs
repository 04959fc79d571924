//! The NetFPGA-SUME against the pcie-bench paper's statements, on the E5-2637 v3 host of the NFP
//! data: bandwidth against the model, LAT_RD medians of both devices and their gap, and the
//! NFP's command path against NetFPGA reads (docs/simulator.md quotes these figures).
//!
//! `cargo run --release -p pcie-bench --example netfpga`. Bandwidth of 1,000,000 DMAs (the
//! paper's count), medians of 20,000 samples, 8 KB random window, seed 1.

use pcie_bench::{
    Backend, BandwidthStats, CacheState, Iommu, Numa, Outcome, Pattern, SimBackend, SortedLatencies, TestKind,
    TestParams,
};
use pcie_model::{stream, Op};

fn params(kind: TestKind, size: u32, cache: CacheState) -> TestParams {
    TestParams {
        kind,
        size,
        window: 8 << 10,
        host_offset: 0,
        device_offset: 0,
        pattern: Pattern::Rand,
        cache,
        count: if kind.is_bandwidth() { 1_000_000 } else { 20_000 },
        numa: Numa::default(),
        iommu: Iommu::Off,
    }
}

/// Median ns of a latency test, Gb/s of a bandwidth test.
fn measure(b: &SimBackend, t: &TestParams) -> f64 {
    match b.run(t, 1).expect("a valid test") {
        Outcome::Latency(s) => SortedLatencies::new(&s).expect("samples").stats().ns.median,
        Outcome::Bandwidth(s) => BandwidthStats::new(&s).expect("a finite rate").gbps,
    }
}

fn main() {
    let fpga = SimBackend::from_spec("sim:e5-2637v3,netfpga-sume").expect("profiles load");
    let nfp = SimBackend::from_spec("sim:e5-2637v3,nfp6000").expect("profiles load");
    let link = &fpga.simulator().link;

    println!("NetFPGA-SUME bandwidth vs `pcieperf model bw` (spec mode, {link})");
    println!("| size | BW_RD | model rd | diff | BW_WR | model wr | diff |");
    println!("|---:|---:|---:|---:|---:|---:|---:|");
    for size in [64, 128, 256, 512, 1024, 1536, 2048] {
        let rd = measure(&fpga, &params(TestKind::BwRd, size, CacheState::HWarm));
        let wr = measure(&fpga, &params(TestKind::BwWr, size, CacheState::HWarm));
        let model = |op| stream(link, op, size, 0).expect("a valid size").payload.0;
        let (mrd, mwr) = (model(Op::Rd), model(Op::Wr));
        let pct = |a: f64, m: f64| (a - m) / m * 100.0;
        println!(
            "| {size} | {rd:.2} | {mrd:.2} | {:+.2} % | {wr:.2} | {mwr:.2} | {:+.2} % |",
            pct(rd, mrd),
            pct(wr, mwr)
        );
    }

    println!("\nLAT_RD median (ns), NFP-6000 minus NetFPGA-SUME");
    println!("| cache | size | NetFPGA | NFP | gap |");
    println!("|---|---:|---:|---:|---:|");
    for cache in [CacheState::Cold, CacheState::HWarm, CacheState::DWarm] {
        for size in [64, 256, 512, 1024, 2048] {
            let a = measure(&fpga, &params(TestKind::LatRd, size, cache));
            let b = measure(&nfp, &params(TestKind::LatRd, size, cache));
            println!("| {} | {size} | {a:.1} | {b:.1} | {:.1} |", cache.csv_name(), b - a);
        }
    }

    // The NFP's command reads carry No Snoop: without the IOMMU a host-warmed line is read from
    // DRAM (as Cold, as measured); with it (VT-d snoop control) they snoop like the NetFPGA's
    // DMA reads. The paper's comparison is between two reads that snoop.
    println!(
        "\nNetFPGA LAT_RD 64 B vs NFP LAT_CMD_RD 64 B, median (ns); NFP with --iommu 4k (snooped) and off (No Snoop)"
    );
    println!("| cache | NetFPGA LAT_RD | NFP LAT_CMD_RD snooped | diff | NFP LAT_CMD_RD IOMMU off |");
    println!("|---|---:|---:|---:|---:|");
    for cache in [CacheState::Cold, CacheState::HWarm, CacheState::DWarm] {
        let a = measure(&fpga, &params(TestKind::LatRd, 64, cache));
        let off = params(TestKind::LatCmdRd, 64, cache);
        let snooped = TestParams {
            iommu: Iommu::Pages4K,
            ..off.clone()
        };
        let (c, o) = (measure(&nfp, &snooped), measure(&nfp, &off));
        println!(
            "| {} | {a:.1} | {c:.1} | {:+.2} % | {o:.1} |",
            cache.csv_name(),
            (a - c) / c * 100.0
        );
    }
}
