//! A pciebench-netfpga data directory loads as our result rows: the direction in each file's
//! name picks the test, descriptors of one size are pooled, and bandwidth and latency land in
//! the groups our runs use, so its charts overlay ours.

use pcie_bench::{CacheState, Pattern, ResultData, RunData, TestKind};
use std::path::Path;

fn fixture() -> RunData {
    RunData::load(&Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/netfpga")).unwrap()
}

#[test]
fn bandwidth_rows_by_direction() {
    let run = fixture();
    assert!(run.info.is_none());
    let Some(ResultData::Bandwidth(rows)) = run.get("bw_dma_sz_sweep") else {
        panic!("bandwidth rows: {:?}", run.files)
    };
    assert_eq!(rows.len(), 15);
    let find = |test, size| rows.iter().find(|r| r.key.test == test && r.key.size == size).unwrap();
    // R: the device writes host memory; W: it reads it.
    assert_eq!(find(TestKind::BwWr, 256).bw_gbps, 56.41);
    assert_eq!(find(TestKind::BwRd, 256).bw_gbps, 55.52);
    assert_eq!(find(TestKind::BwRdWr, 2048).bw_gbps, 51.71);
    let r = find(TestKind::BwWr, 64);
    // One descriptor of 262144 one-TLP writes.
    assert_eq!((r.bytes, r.trans), (64 * 262_144, 262_144));
    assert!((r.time_ns - r.bytes as f64 * 8.0 / 42.38).abs() < 1e-6);
    assert_eq!(
        (r.key.pattern, r.key.cache, r.key.window, r.key.host_offset),
        (Pattern::Seq, CacheState::HWarm, 4096, 0)
    );
}

#[test]
fn latency_rows_pool_descriptors() {
    let run = fixture();
    let Some(ResultData::Latency(rows)) = run.get("lat_dma_sizes") else {
        panic!("latency rows")
    };
    assert_eq!(rows.len(), 10);
    let rd = rows
        .iter()
        .find(|r| r.key.test == TestKind::LatRd && r.key.size == 64)
        .unwrap();
    assert_eq!((rd.samples, rd.med_ns, rd.min_ns, rd.max_ns), (3, 512.0, 508.0, 516.0));
    assert_eq!(rd.tavg_ns, rd.avg_ns);
    let wrrd = rows
        .iter()
        .find(|r| r.key.test == TestKind::LatWrRd && r.key.size == 2048)
        .unwrap();
    assert_eq!((wrrd.samples, wrrd.med_ns), (1, 1040.0));
}

#[test]
fn a_latency_file_for_device_writes_is_refused_by_name() {
    let dir = std::env::temp_dir().join(format!("pcie-bench-netfpga-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("real_time_lat_R_1.dat"), "0 0 0 0\nFIX 0 64 500\n").unwrap();
    let e = RunData::load(&dir).unwrap_err().to_string();
    std::fs::remove_dir_all(&dir).unwrap();
    assert!(
        e.contains("real_time_lat_R_1.dat: pciebench-netfpga has no latency test for R"),
        "{e}"
    );
}

#[test]
fn the_report_says_whose_directory_and_link_it_assumes() {
    let run = fixture();
    assert!(run.netfpga);
    let set = pcie_bench::ChartSet::new(&run, &[]);
    assert!(
        set.description[0].starts_with(
            "pciebench-netfpga data directory netfpga (no run.json). The model curves assume the link of \
             pciebench-netfpga's NetFPGA-SUME design, Gen3 x8, MPS 256, MRRS 512: "
        ),
        "{:?}",
        set.description
    );
    let bw = set.charts.iter().find(|c| c.name == "bw_dma_sz_sweep").unwrap();
    let model = bw.notes.iter().find(|n| n.starts_with("Model: ")).unwrap();
    assert!(
        model.ends_with(
            " (assumed: the directory records no link; pciebench-netfpga's NetFPGA-SUME design used Gen3 x8, MPS 256, MRRS 512)."
        ),
        "{model}"
    );
    assert!(!set.description.concat().contains("NFP"), "{:?}", set.description);
}
