//! `pcieperf sim fit`: a small fit on the E5-2637 v3's measurements whose profile loads as a
//! backend, and the refusals (exit 2, nothing written): a directory of the wrong kind, groups
//! that identify nothing, a device profile that does not match, inconsistent runs.

use crate::common;
use common::{ok, reference, refused, scratch_dir};

const OFF: &str = "nfp6000-1.2GHz_hsw-Xeon-E5-2637v3_supermicro";

#[test]
fn a_small_fit_writes_a_profile_the_simulator_loads() {
    let dir = scratch_dir("fit-small");
    let out = dir.join("myhost.toml");
    let data = reference(OFF);
    let json = ok(&[
        "sim",
        "fit",
        data.to_str().unwrap(),
        "--device",
        "nfp6000",
        "--only",
        "lat_dma_sizes",
        "--search-samples",
        "1000",
        "--samples",
        "2000",
        "--format",
        "json",
        "-o",
        out.to_str().unwrap(),
    ]);
    let report: serde_json::Value = serde_json::from_str(&json).unwrap();
    let keys = report["keys"].as_array().unwrap();
    let llc = keys.iter().find(|k| k["name"] == "memory.llc_hit").unwrap();
    assert_eq!(llc["fixed_by"][0], format!("{OFF}/lat_dma_sizes"));
    let dram = keys.iter().find(|k| k["name"] == "memory.dram").unwrap();
    assert!(dram["fitted"].is_null() && dram["note"].as_str().unwrap().starts_with("kept from e5-2637v3"));
    // Before and after carry the errors the table shows, per group.
    assert_eq!(report["before"][0]["base"], "lat_dma_sizes");
    assert!(report["after"][0]["slices"][0]["median"]["mape_pct"].is_f64());
    let text = std::fs::read_to_string(&out).unwrap();
    assert!(
        text.starts_with("# Host profile fitted by `pcieperf sim fit`"),
        "{text}"
    );
    assert!(
        text.lines()
            .any(|l| l.starts_with("llc_hit = {") && l.contains("# fitted (")),
        "{text}"
    );
    assert!(text.contains("name = \"myhost\""));
    // The written profile is a backend.
    let backend = format!("sim:{},nfp6000", out.display());
    let run = ok(&[
        "bench",
        "run",
        "--backend",
        &backend,
        "--test",
        "LAT_RD",
        "--size",
        "64",
        "--samples",
        "1000",
        "--format",
        "json",
        "--out",
        dir.join("run").to_str().unwrap(),
    ]);
    assert!(run.contains("\"median"), "{run}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn refusals_name_the_problem_and_write_nothing() {
    let dir = scratch_dir("fit-refusals");
    let out = dir.join("h.toml");
    let o = out.to_str().unwrap();
    let data = reference(OFF);
    let d = data.to_str().unwrap();
    // A directory without result tables.
    let empty = scratch_dir("fit-empty");
    let e = refused(&["sim", "fit", empty.to_str().unwrap(), "--device", "nfp6000", "-o", o]);
    assert!(e.contains("not a pcie-bench or pcieperf result directory"), "{e}");
    // Groups that identify no host parameter.
    let e = refused(&[
        "sim",
        "fit",
        d,
        "--device",
        "nfp6000",
        "--only",
        "lat_cmd_off_rd",
        "-o",
        o,
    ]);
    assert!(e.contains("too few groups to identify any host parameter"), "{e}");
    // A group the measurements do not have.
    let e = refused(&["sim", "fit", d, "--device", "nfp6000", "--holdout", "lat_nope", "-o", o]);
    assert!(
        e.contains("--holdout lat_nope: no such group") && e.contains("bw_dma_sz_sweep"),
        "{e}"
    );
    // The NetFPGA's 4 ns counter cannot have measured the NFP's 13.33 ns ticks.
    let e = refused(&["sim", "fit", d, "--device", "netfpga-sume", "-o", o]);
    assert!(
        e.contains("device profile netfpga-sume does not match") && e.contains("whole ticks"),
        "{e}"
    );
    // The same run twice.
    let e = refused(&["sim", "fit", d, d, "--device", "nfp6000", "-o", o]);
    assert!(
        e.contains("inconsistent runs") && e.contains("one run per IOMMU mode"),
        "{e}"
    );
    let e = refused(&["sim", "fit", d, "--device", "nfp6000", "--samples", "5", "-o", o]);
    assert!(e.contains("--samples 5: must be from 100"), "{e}");
    let e = refused(&["sim", "fit", d, "--device", "nfp9000", "-o", o]);
    assert!(e.contains("--device nfp9000: unknown device profile"), "{e}");
    assert!(!out.exists());
    std::fs::remove_dir_all(&dir).unwrap();
    std::fs::remove_dir_all(&empty).unwrap();
}
