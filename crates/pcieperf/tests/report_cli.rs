//! `pcieperf bench report` as a user runs it: both pcie-bench reference directories and a fresh
//! simulator run, as HTML, SVG files and text; and the refusals.

mod common;
use common::pcieperf;

use std::path::{Path, PathBuf};

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("pcieperf-report-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn reference(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../data/reference/pcie-bench")
        .join(name)
}

const SUPERMICRO: &str = "nfp6000-1.2GHz_hsw-Xeon-E5-2637v3_supermicro";
const IOMMU_NOSP: &str = "nfp6000-1.2GHz_hsw-Xeon-E5-2637v3_supermicro-iommu-nosp";

/// The HTML of one chart section, by id.
fn section<'a>(html: &'a str, id: &str) -> &'a str {
    let start = html
        .find(&format!("<section class=\"chart\" id=\"{id}\">"))
        .unwrap_or_else(|| panic!("no section {id}"));
    let end = html[start..].find("</section>").expect("section closes") + start;
    &html[start..end]
}

fn series_in(html: &str, id: &str) -> usize {
    section(html, id).matches("class=\"series\"").count()
}

/// Renders DIR to HTML and SVGs; returns the HTML and the SVG file names.
fn report(dir: &Path, name: &str) -> (String, Vec<String>) {
    let out = scratch(name);
    let html = out.join("report.html");
    let svgs = out.join("svg");
    let o = pcieperf(&[
        "bench",
        "report",
        dir.to_str().unwrap(),
        "--html",
        html.to_str().unwrap(),
        "--svg-dir",
        svgs.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = std::fs::read_to_string(&html).unwrap();
    let mut files: Vec<String> = std::fs::read_dir(&svgs)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    files.sort();
    std::fs::remove_dir_all(&out).unwrap();
    (text, files)
}

fn assert_self_contained(html: &str) {
    assert!(html.starts_with("<!DOCTYPE html>"));
    let ns = "http://www.w3.org/2000/svg";
    assert_eq!(
        html.matches("http://").count(),
        html.matches(ns).count(),
        "only the SVG namespace"
    );
    assert!(!html.contains("https://"));
    assert!(!html.contains("<script"));
    assert!(!html.contains("NaN"));
}

#[test]
fn pcie_bench_directories_give_every_chart() {
    for name in [SUPERMICRO, IOMMU_NOSP] {
        let (html, svgs) = report(&reference(name), name);
        assert_self_contained(&html);
        assert!(html.contains("pcie-bench data directory"), "{name}");
        assert!(html.contains("Gen3 x8, MPS 256, MRRS 512"), "{name}");
        // 3 measured + 3 model + the 40GbE line rate.
        assert_eq!(series_in(&html, "bw_dma_sz_sweep"), 7, "{name}");
        assert!(section(&html, "bw_dma_sz_sweep").contains("Explain: fraction of the model reached: BW_DMA_RD"));
        assert!(section(&html, "bw_dma_sz_sweep").contains("Explain (Little&#39;s law): LAT_DMA_RD"));
        // LAT_DMA_RD and LAT_DMA_WRRD, with error bars.
        assert_eq!(series_in(&html, "lat_dma_sizes"), 2, "{name}");
        assert!(section(&html, "lat_dma_sizes").contains("error-bars"));
        // Two tests x two cache states x two windows x two sizes.
        assert_eq!(series_in(&html, "lat_dma_details_cdf"), 16, "{name}");
        // One series per cache state.
        assert_eq!(series_in(&html, "bw_dma_win_sweep_rd_rnd_64"), 4, "{name}");
        assert_eq!(series_in(&html, "lat_dma_sweep_rd_rnd_64"), 4, "{name}");
        // One series per size, host and device offset sweeps.
        assert_eq!(series_in(&html, "bw_dma_off_rd_host"), 7, "{name}");
        assert_eq!(series_in(&html, "bw_dma_off_rd_device"), 7, "{name}");
        assert_eq!(series_in(&html, "lat_dma_off_rd_host"), 7, "{name}");
        let sections = html.matches("<section class=\"chart\"").count();
        assert_eq!(sections, 34, "{name}");
        assert_eq!(svgs.len(), sections, "{name}: {svgs:?}");
        assert!(svgs.contains(&"bw_dma_sz_sweep.svg".to_string()));
    }
}

#[test]
fn simulator_run_reports_with_its_own_link() {
    let dir = scratch("run");
    let run = dir.join("run");
    let o = pcieperf(&["bench", "run", "--samples", "2000", "--out", run.to_str().unwrap()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let (html, svgs) = report(&run, "sim");
    assert_self_contained(&html);
    assert!(html.contains("run of suite &quot;quick&quot;"));
    assert!(html.contains("(from run.json)"));
    assert_eq!(series_in(&html, "bw_dma_sz_sweep"), 7);
    assert_eq!(series_in(&html, "lat_dma_sizes"), 2);
    assert_eq!(series_in(&html, "lat_dma_details_cdf"), 8);
    assert_eq!(series_in(&html, "bw_dma_win_sweep_rd_rnd_64"), 2);
    assert_eq!(series_in(&html, "lat_dma_sweep_rd_rnd_64"), 2);
    assert_eq!(series_in(&html, "lat_dma_off_rd_host"), 2);
    assert_eq!(series_in(&html, "lat_dma_off_rd_device"), 2);
    assert_eq!(svgs.len(), 7, "{svgs:?}");

    // Without --html: a text summary with the explain line, and no files.
    let o = pcieperf(&["bench", "report", run.to_str().unwrap()]);
    assert!(o.status.success());
    let text = String::from_utf8(o.stdout).unwrap();
    assert!(text.contains("Charts (7):"), "{text}");
    assert!(
        text.contains("Explain: fraction of the model reached: BW_DMA_RD"),
        "{text}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn refuses_what_is_not_a_run_directory() {
    let dir = scratch("refuse");
    let empty = dir.join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    let missing = dir.join("missing");
    for d in [&empty, &missing] {
        let o = pcieperf(&["bench", "report", d.to_str().unwrap()]);
        assert_eq!(o.status.code(), Some(2), "{}", d.display());
        let err = String::from_utf8(o.stderr).unwrap();
        assert!(err.contains(d.to_str().unwrap()), "{err}");
    }
    // A CSV that is no result table is named with its file.
    std::fs::write(empty.join("notes.csv"), "a,b\n1,2\n").unwrap();
    let o = pcieperf(&["bench", "report", empty.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8(o.stderr).unwrap().contains("notes.csv"));
    // An HTML file that cannot be written is a runtime failure.
    let o = pcieperf(&[
        "bench",
        "report",
        reference(SUPERMICRO).to_str().unwrap(),
        "--html",
        dir.join("no/such/dir/r.html").to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(1));
    std::fs::remove_dir_all(&dir).unwrap();
}
