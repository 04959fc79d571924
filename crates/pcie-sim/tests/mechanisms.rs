//! Each mechanism moves the numbers the way the hardware does.

use pcie_sim::{CachePrep, Measured, Op, Simulator, Workload};

fn sim() -> Simulator {
    Simulator::load("e5-2637v3", "nfp6000").unwrap()
}

fn workload(op: Op, size: u32, window: u64, prep: CachePrep) -> Workload {
    Workload {
        op,
        size,
        window,
        host_offset: 0,
        device_offset: 0,
        random: true,
        prep,
        count: 20_000,
        remote_memory: false,
        remote_cpu: false,
        iommu_page: None,
    }
}

/// Median latency in ns.
fn median(s: &Simulator, w: &Workload) -> f64 {
    match s.run(w, 1) {
        Measured::Latency { mut cycles, .. } => {
            cycles.sort_unstable();
            cycles[cycles.len() / 2] as f64 * s.cycle_ps() / 1000.0
        }
        Measured::Bandwidth { .. } => panic!("latency expected"),
    }
}

fn gbps(s: &Simulator, w: &Workload) -> f64 {
    match s.run(w, 1) {
        Measured::Bandwidth { bytes, time_cycles, .. } => {
            bytes as f64 * 8.0 / (time_cycles as f64 * s.cycle_ps() / 1000.0)
        }
        Measured::Latency { .. } => panic!("bandwidth expected"),
    }
}

#[test]
fn same_seed_same_result() {
    let s = sim();
    let w = workload(Op::BwReadWrite, 256, 1 << 20, CachePrep::Cold);
    assert_eq!(s.run(&w, 3), s.run(&w, 3));
    assert_ne!(s.run(&w, 3), s.run(&w, 4));
}

#[test]
fn warm_lines_are_faster_than_dram_until_the_window_outgrows_the_llc() {
    let s = sim();
    let warm = median(&s, &workload(Op::LatRead, 64, 8192, CachePrep::HostWarm));
    let cold = median(&s, &workload(Op::LatRead, 64, 8192, CachePrep::Cold));
    assert!(cold - warm > 25.0, "warm {warm} cold {cold}");
    let huge = median(&s, &workload(Op::LatRead, 64, 64 << 20, CachePrep::HostWarm));
    assert!(
        (huge - cold).abs() < 14.0,
        "a 64 MB window cannot stay in a 15 MB LLC: {huge} vs {cold}"
    );
}

#[test]
fn latency_grows_with_transfer_size() {
    let s = sim();
    let small = median(&s, &workload(Op::LatRead, 64, 8192, CachePrep::HostWarm));
    let large = median(&s, &workload(Op::LatRead, 2048, 8192, CachePrep::HostWarm));
    let per_line = (large - small) / 31.0;
    assert!(per_line > 12.0 && per_line < 25.0, "{per_line} ns per extra line");
}

#[test]
fn io_tlb_misses_cost_a_page_walk_and_bandwidth_beyond_its_reach() {
    let s = sim();
    let mut w = workload(Op::LatRead, 64, 64 << 20, CachePrep::Cold);
    let off = median(&s, &w);
    w.iommu_page = Some(4096);
    let on = median(&s, &w);
    assert!(on - off > 200.0, "4 KB pages: {off} -> {on}");
    w.iommu_page = Some(2 << 20);
    assert!(
        median(&s, &w) - off < 14.0,
        "super pages keep the reach above the buffer"
    );
    let mut bw = workload(Op::BwRead, 64, 64 << 20, CachePrep::Cold);
    let fast = gbps(&s, &bw);
    bw.iommu_page = Some(4096);
    assert!(gbps(&s, &bw) < fast * 0.6);
    bw.window = 128 << 10;
    assert!(gbps(&s, &bw) > fast * 0.9, "a 128 KB window fits the IO-TLB");
}

#[test]
fn a_large_write_hides_part_of_its_walk_and_parked_tlps_are_translated_one_by_one() {
    let penalty = |s: &Simulator, size: u32| {
        let mut w = workload(Op::LatWriteRead, size, 64 << 20, CachePrep::Cold);
        let off = median(s, &w);
        w.iommu_page = Some(4096);
        median(s, &w) - off
    };
    let s = sim();
    let (small, large) = (penalty(&s, 64), penalty(&s, 2048));
    assert!(
        small > 200.0,
        "a 64 B write's walk is on the critical path: +{small} ns"
    );
    assert!(
        large > 90.0 && large < small - 60.0,
        "2 KB: the other TLPs arrive during the walk (+{large} ns vs +{small})"
    );
    let mut no_replay = sim();
    no_replay.host.iommu.replay_ns = 0.0;
    let without = penalty(&no_replay, 2048);
    assert!(
        large - without > 100.0,
        "7 parked TLPs are translated again one by one: +{large} ns with replays, +{without} without"
    );
}

#[test]
fn remote_memory_costs_reads_not_writes() {
    let s = sim();
    let mut rd = workload(Op::LatRead, 64, 8192, CachePrep::Cold);
    let local = median(&s, &rd);
    rd.remote_memory = true;
    assert!(median(&s, &rd) - local > 80.0);
    let mut bw = workload(Op::BwRead, 64, 8192, CachePrep::Cold);
    let local_bw = gbps(&s, &bw);
    bw.remote_memory = true;
    assert!(gbps(&s, &bw) < local_bw * 0.9);
    let mut wr = workload(Op::BwWrite, 64, 8192, CachePrep::Cold);
    let local_wr = gbps(&s, &wr);
    wr.remote_memory = true;
    assert!((gbps(&s, &wr) - local_wr).abs() < local_wr * 0.03);
}

#[test]
fn small_writes_hit_the_device_rate_limit_and_large_ones_the_link() {
    let s = sim();
    let small = gbps(&s, &workload(Op::BwWrite, 64, 8192, CachePrep::HostWarm));
    assert!((small - 64.0 * 8.0 / s.device.dma.write_min_ns).abs() < 0.5, "{small}");
    let large = gbps(&s, &workload(Op::BwWrite, 2048, 8192, CachePrep::HostWarm));
    let link = pcie_model::stream(&s.link, pcie_model::Op::Wr, 2048, 0)
        .unwrap()
        .payload
        .0;
    assert!(large <= link * 1.001 && large > link * 0.9, "{large} vs link {link}");
}
