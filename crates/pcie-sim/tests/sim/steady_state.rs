//! A bandwidth test stops simulating at its steady state and accounts the rest at its rate
//! (`testbed::steady`): its figure stays within a few hundredths of a percent of simulating
//! every DMA, over the shapes whose state settles slowest (large random windows, the IOMMU, a
//! remote socket, reads and writes mixed).

use pcie_sim::{CachePrep, Measured, Simulator, TestOp, Workload};

fn bandwidth(m: Measured) -> (f64, u64) {
    match m {
        Measured::Bandwidth {
            bytes,
            time_cycles,
            simulated,
            ..
        } => (bytes as f64 / time_cycles as f64, simulated),
        Measured::Latency { .. } => panic!("bandwidth expected"),
    }
}

#[test]
fn the_steady_state_keeps_each_bandwidth_figure() {
    let e5 = Simulator::load("e5-2637v3", "nfp6000").unwrap();
    let e3 = Simulator::load("e3-1226v3", "nfp6000").unwrap();
    let count = 1 << 21;
    let mut cases = vec![
        (&e5, Workload::new(TestOp::BwRead, 64, 8192, CachePrep::HostWarm, count)),
        (
            &e5,
            Workload::new(TestOp::BwWrite, 512, 64 << 20, CachePrep::Cold, count),
        ),
        (
            &e5,
            Workload::new(TestOp::BwReadWrite, 1024, 8192, CachePrep::DeviceThrash, count),
        ),
        (
            &e3,
            Workload::new(TestOp::BwRead, 256, 16 << 20, CachePrep::HostWarm, count),
        ),
    ];
    let mut iommu = Workload::new(TestOp::BwRead, 64, 4 << 20, CachePrep::Cold, count);
    iommu.iommu_page = Some(4096);
    let mut remote = Workload::new(TestOp::BwWrite, 2048, 1 << 20, CachePrep::HostWarm, count);
    (remote.remote_memory, remote.remote_cpu) = (true, true);
    remote.host_offset = 7;
    cases.extend([(&e5, iommu), (&e5, remote)]);
    for (sim, w) in cases {
        let (steady, simulated) = bandwidth(sim.run(&w, 5));
        let (every, all) = bandwidth(sim.run_every(&w, 5));
        assert_eq!(all, count, "{w:?}");
        assert!(simulated < count, "{w:?}: simulated every DMA");
        let error = (steady / every - 1.0).abs();
        assert!(
            error < 1e-3,
            "{w:?}: {steady} against {every} bytes per cycle ({error:e})"
        );
    }
}

#[test]
fn a_short_test_is_simulated_whole() {
    let sim = Simulator::load("e5-2637v3", "nfp6000").unwrap();
    let w = Workload::new(TestOp::BwRead, 64, 8192, CachePrep::HostWarm, 100_000);
    assert_eq!(sim.run(&w, 1), sim.run_every(&w, 1));
    assert_eq!(bandwidth(sim.run(&w, 1)).1, 100_000);
}
