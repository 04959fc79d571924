//! The NetFPGA-SUME device against the paper's statements about it: its bandwidth follows the
//! model, the NFP-6000's DMA latency sits about 100 ns above it at small sizes with the gap
//! growing with size, and the NFP's direct command path is as fast as its DMA reads.

use pcie_model::{stream, Op as ModelOp};

use pcie_sim::{CachePrep, Measured, Simulator, TestOp, Workload};

const HOST: &str = "e5-2637v3";

fn sim(device: &str) -> Simulator {
    Simulator::load(HOST, device).unwrap()
}

fn workload(op: TestOp, size: u32, prep: CachePrep, count: u64) -> Workload {
    Workload::new(op, size, 8192, prep, count)
}

/// Median latency in ns.
fn median_ns(s: &Simulator, op: TestOp, size: u32, prep: CachePrep) -> f64 {
    median_of(s, &workload(op, size, prep, 20_000))
}

fn median_of(s: &Simulator, w: &Workload) -> f64 {
    let Measured::Latency { mut cycles, .. } = s.run(w, 3) else {
        panic!("a latency test measures latencies");
    };
    cycles.sort_unstable();
    cycles[cycles.len() / 2] as f64 * s.cycle_ps() / 1000.0
}

/// Payload bandwidth in Gb/s.
fn gbps(s: &Simulator, op: TestOp, size: u32) -> f64 {
    let Measured::Bandwidth { bytes, time_cycles, .. } = s.run(&workload(op, size, CachePrep::HostWarm, 200_000), 3)
    else {
        panic!("a bandwidth test measures bandwidth");
    };
    bytes as f64 * 8.0 / (time_cycles as f64 * s.cycle_ps() / 1000.0)
}

#[test]
fn bandwidth_follows_the_model_from_256_bytes() {
    let s = sim("netfpga-sume");
    for size in [256, 512, 768, 1024, 1536, 2048] {
        for (op, model_op) in [(TestOp::BwRead, ModelOp::Rd), (TestOp::BwWrite, ModelOp::Wr)] {
            let model = stream(&s.link, model_op, size, 0).unwrap().payload.0;
            let got = gbps(&s, op, size);
            let error = (got - model) / model;
            eprintln!(
                "{op:?} {size} B: {got:.2} Gb/s, model {model:.2} ({:+.1} %)",
                error * 100.0
            );
            assert!(error.abs() < 0.03, "{op:?} {size} B: {got:.2} Gb/s vs model {model:.2}");
        }
    }
}

#[test]
fn the_nfp_lags_by_about_100_ns_and_more_with_size() {
    let (fpga, nfp) = (sim("netfpga-sume"), sim("nfp6000"));
    let mut last = 0.0;
    for size in [64, 256, 512, 1024, 2048] {
        let (a, b) = (
            median_ns(&fpga, TestOp::LatRead, size, CachePrep::HostWarm),
            median_ns(&nfp, TestOp::LatRead, size, CachePrep::HostWarm),
        );
        let gap = b - a;
        eprintln!("LAT_RD {size} B HWarm: NetFPGA {a:.0} ns, NFP {b:.0} ns, gap {gap:.0} ns");
        if size == 64 {
            assert!((80.0..=120.0).contains(&gap), "64 B gap {gap} ns");
        } else {
            assert!(gap > last, "{size} B: gap {gap} ns not above {last} ns");
        }
        last = gap;
    }
}

#[test]
fn the_nfp_command_path_is_as_fast_as_netfpga_dma_reads() {
    let (fpga, nfp) = (sim("netfpga-sume"), sim("nfp6000"));
    for prep in [CachePrep::Cold, CachePrep::HostWarm, CachePrep::DeviceWarm] {
        let dma = median_ns(&fpga, TestOp::LatRead, 64, prep);
        // The NFP's command reads carry No Snoop: they find host-warmed lines in the LLC only
        // where the IOMMU forces snooping (without it they read DRAM, as Cold). Device-warmed
        // lines are in the DDIO share for both devices: one line latency (`memory.io_line`).
        let mut w = workload(TestOp::LatCmdRead, 64, prep, 20_000);
        w.iommu_page = Some(4096);
        let cmd = median_of(&nfp, &w);
        eprintln!("{prep:?}: NetFPGA LAT_RD 64 B {dma:.0} ns, NFP LAT_CMD_RD 64 B {cmd:.0} ns");
        assert!((dma - cmd).abs() / cmd < 0.05, "{prep:?}: {dma} vs {cmd} ns");
    }
}
