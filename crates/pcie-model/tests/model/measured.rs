//! Spec mode against what an NFP-6000 measured on a Gen3 x8 link (MPS 256, MRRS 512) at sizes
//! where the device is not the bottleneck: within 3 %.

use pcie_model::{stream, LinkConfig, LinkParams, Op};

const SWEEPS: [&str; 2] = [
    include_str!("../../../../data/reference/pcie-bench/nfp6000-1.2GHz_hsw-Xeon-E5-2637v3_supermicro/bw_dma_sz_sweep.csv"),
    include_str!("../../../../data/reference/pcie-bench/nfp6000-1.2GHz_hsw-Xeon-E5-2637v3_supermicro-iommu-nosp/bw_dma_sz_sweep.csv"),
];

/// (test, size) -> measured Gb/s (the column says GB/s but holds Gb/s).
fn measured(csv: &str, test: &str, size: u32) -> f64 {
    let mut lines = csv.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let col = |name: &str| header.iter().position(|h| *h == name).unwrap();
    let (t, sz, bw) = (col("Test"), col("SZ"), col("BW (GB/s)"));
    lines
        .map(|l| l.split(',').collect::<Vec<_>>())
        .find(|f| f[t] == test && f[sz].parse::<u32>().unwrap() == size)
        .map(|f| f[bw].parse().unwrap())
        .unwrap()
}

#[test]
fn large_transfers_within_three_percent_of_the_nfp6000() {
    let cfg = LinkConfig::new(&LinkParams::default()).unwrap();
    for csv in SWEEPS {
        for (test, op) in [("BW_DMA_WR", Op::Wr), ("BW_DMA_RD", Op::Rd)] {
            for size in [512, 2048] {
                let model = stream(&cfg, op, size, 0).unwrap().payload.0;
                let meas = measured(csv, test, size);
                let err = (model - meas) / meas * 100.0;
                println!("{test} {size} B: model {model:.2} Gb/s, measured {meas:.2} Gb/s, {err:+.2} %");
                assert!(err.abs() < 3.0, "{test} {size}: {err:.2} %");
            }
        }
    }
}
