//! The NetFPGA-SUME from the command line: `--tags` on the simulated device (checked against
//! its maximum, recorded in run.json, refused where the backend has no such setting), and a
//! pciebench-netfpga data directory as a report of its own and compared with a simulated run.

use crate::common;
use common::{ok, refused};

use std::path::{Path, PathBuf};

const NETFPGA: &str = "sim:e5-2637v3,netfpga-sume";

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../pcie-bench/tests/fixtures/netfpga")
}

#[test]
fn tags_are_checked_against_the_device_and_recorded() {
    let err = refused(&["bench", "run", "--backend", NETFPGA, "--tags", "33", "--test", "BW_RD"]);
    assert!(
        err.contains("--tags 33: must be from 1 to 32 (the read tags of netfpga-sume)"),
        "{err}"
    );
    let err = refused(&["bench", "run", "--tags", "23", "--test", "BW_RD"]);
    assert!(
        err.contains("--tags 23: must be from 1 to 22 (the read tags of nfp6000)"),
        "{err}"
    );
    let err = refused(&[
        "bench",
        "run",
        "--backend",
        "exec:true",
        "--tags",
        "8",
        "--test",
        "BW_RD",
    ]);
    assert!(err.contains("--tags: only for sim backends"), "{err}");

    let dir = common::scratch_dir("netfpga-tags");
    let out = dir.join("run");
    let gbps = |tags: &str| -> f64 {
        let csv = ok(&[
            "bench",
            "run",
            "--backend",
            NETFPGA,
            "--tags",
            tags,
            "--test",
            "BW_RD",
            "--size",
            "512",
            "--samples",
            "20000",
            "--format",
            "csv",
        ]);
        let mut lines = csv.lines().map(|l| l.split(',').collect::<Vec<_>>());
        let header = lines.next().unwrap();
        let column = header.iter().position(|h| *h == "BW (Gb/s)").unwrap();
        lines.next().unwrap()[column].parse().unwrap()
    };
    assert!(gbps("2") < gbps("32") / 3.0, "two tags cannot fill the link");
    ok(&[
        "bench",
        "run",
        "--backend",
        NETFPGA,
        "--tags",
        "8",
        "--test",
        "LAT_RD",
        "--samples",
        "100",
        "--out",
        out.to_str().unwrap(),
    ]);
    let info: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("run.json")).unwrap()).unwrap();
    assert_eq!(info["backend"]["description"]["device"]["read_tags"], 8);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The series of one chart of `bench report --format json`'s output.
fn series(report: &serde_json::Value, chart: &str) -> Vec<String> {
    let c = report["charts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == chart)
        .unwrap();
    c["series"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_str().unwrap().to_string())
        .collect()
}

fn report(args: &[&str]) -> serde_json::Value {
    let mut all = vec!["bench", "report"];
    all.extend(args);
    all.extend(["--format", "json"]);
    serde_json::from_str(&ok(&all)).unwrap()
}

#[test]
fn a_netfpga_directory_reports_and_overlays_a_simulated_run() {
    let fpga = fixture();
    let fpga = fpga.to_str().unwrap();
    // One series per test: a sweep's points differ in their size only.
    let alone = report(&[fpga]);
    assert_eq!(series(&alone, "lat_dma_sizes"), ["LAT_DMA_RD", "LAT_DMA_WRRD"]);
    assert_eq!(
        series(&alone, "bw_dma_sz_sweep")[..3],
        ["BW_DMA_RD", "BW_DMA_WR", "BW_DMA_RW"]
    );
    assert!(ok(&["bench", "report", fpga]).contains("Charts (2):"));

    let dir = common::scratch_dir("netfpga-compare");
    let run = dir.join("run");
    ok(&[
        "bench",
        "run",
        "--backend",
        NETFPGA,
        "--only",
        "bw_dma_sz_sweep,lat_dma_sizes",
        "--samples",
        "2000",
        "--out",
        run.to_str().unwrap(),
    ]);
    let both = report(&[run.to_str().unwrap(), "--compare", fpga]);
    // The NetFPGA tool's series (B) are drawn over the simulated run's (A).
    for name in ["bw_dma_sz_sweep", "lat_dma_sizes"] {
        let s = series(&both, name);
        assert!(
            s.contains(&"A: LAT_DMA_RD".to_string()) || s.contains(&"A: BW_DMA_RD".to_string()),
            "{name}: {s:?}"
        );
        assert!(
            s.contains(&"B: LAT_DMA_RD".to_string()) || s.contains(&"B: BW_DMA_RD".to_string()),
            "{name}: {s:?}"
        );
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
