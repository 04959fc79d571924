//! `pcieperf bench report` as a user runs it: both pcie-bench reference directories and a fresh
//! simulator run, as HTML, SVG files and text; and the refusals.

use crate::common;
use common::{pcieperf, reference};

use std::path::Path;

fn scratch(name: &str) -> common::Scratch {
    common::scratch_dir(&format!("report-{name}"))
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
    std::fs::remove_file(empty.join("notes.csv")).unwrap();
    // Hostile numbers in a pcie-bench file: refused with file, line and column, nothing written.
    let original = std::fs::read_to_string(reference(SUPERMICRO).join("bw_dma_sz_sweep.csv")).unwrap();
    let html = dir.join("hostile.html");
    for (bad, column) in [
        ("NaN", "BW (GB/s)"),
        ("inf", "BW (GB/s)"),
        ("-7.64", "BW (GB/s)"),
        ("1e300", "BW (GB/s)"),
    ] {
        let text = original.replacen(",7.640278531632239,", &format!(",{bad},"), 1);
        assert_ne!(text, original);
        std::fs::write(empty.join("bw_dma_sz_sweep.csv"), text).unwrap();
        let o = pcieperf(&[
            "bench",
            "report",
            empty.to_str().unwrap(),
            "--html",
            html.to_str().unwrap(),
        ]);
        let err = String::from_utf8(o.stderr).unwrap();
        assert_eq!(o.status.code(), Some(2), "{bad}: {err}");
        assert!(
            err.contains(&format!(
                "bw_dma_sz_sweep.csv:2: column \"{column}\": {bad} must be a number from 0 to 1e15"
            )),
            "{bad}: {err}"
        );
        assert!(!html.exists());
    }
    // An HTML file in a directory that does not exist is refused before any work; one that
    // cannot be written is a runtime failure.
    let report = |html: &str| {
        pcieperf(&[
            "bench",
            "report",
            reference(SUPERMICRO).to_str().unwrap(),
            "--html",
            html,
        ])
    };
    let missing = dir.join("no/such/dir/r.html");
    let o = report(missing.to_str().unwrap());
    assert_eq!(o.status.code(), Some(2));
    let o = report("/dev/full");
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8(o.stderr).unwrap();
    assert!(err.contains("cannot write /dev/full: No space left on device"), "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A point's value straight from a result CSV: `column` of the row whose first seven fields are `key`.
fn csv_value(file: &Path, key: &str, column: &str) -> f64 {
    let text = std::fs::read_to_string(file).unwrap();
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let col = header.iter().position(|h| *h == column).unwrap();
    let row = lines.find(|l| l.starts_with(&format!("{key},"))).unwrap();
    row.split(',').nth(col).unwrap().parse().unwrap()
}

#[test]
fn compare_overlays_runs_and_tabulates_differences() {
    let dir = scratch("compare");
    let run = dir.join("run");
    let o = pcieperf(&["bench", "run", "--samples", "2000", "--out", run.to_str().unwrap()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let measured = reference(SUPERMICRO);
    let (m, r) = (measured.to_str().unwrap(), run.to_str().unwrap());
    let compare = |extra: &[&str]| {
        let mut v = vec!["bench", "report", m, "--compare", r];
        v.extend_from_slice(extra);
        pcieperf(&v)
    };

    // JSON: every point difference is (other − first) / first, straight from the two CSVs.
    let o = compare(&["--format", "json"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let c = &v["comparisons"][0];
    let diffs = c["differences"].as_array().unwrap();
    assert!(diffs.len() > 100, "{}", diffs.len());
    let key = "BW_DMA_RD,Rand,HWarm,0,0,8192,64";
    let first = csv_value(&measured.join("bw_dma_sz_sweep.csv"), key, "BW (GB/s)");
    let other = csv_value(&run.join("bw_dma_sz_sweep.csv"), key, "BW (Gb/s)");
    let d = diffs
        .iter()
        .find(|d| d["file"] == "bw_dma_sz_sweep" && d["test"] == "BwRd" && d["size"] == 64)
        .unwrap_or_else(|| panic!("no 64 B BW_DMA_RD point: {}", diffs[0]));
    assert!((d["diff_pct"].as_f64().unwrap() - (other - first) / first * 100.0).abs() < 1e-6);
    // Sorted by absolute difference.
    let abs: Vec<f64> = diffs.iter().map(|d| d["diff_pct"].as_f64().unwrap().abs()).collect();
    assert!(abs.windows(2).all(|w| w[0] >= w[1]));
    // The summary's MAPE is the mean of its points' absolute differences.
    for s in c["summary"].as_array().unwrap() {
        let mine: Vec<f64> = diffs
            .iter()
            .filter(|d| {
                d["file"] == s["file"]
                    && d["test"] == s["test"]
                    && d["cache"] == s["cache"]
                    && d["metric"] == s["metric"]
            })
            .map(|d| d["diff_pct"].as_f64().unwrap().abs())
            .collect();
        assert_eq!(mine.len() as u64, s["points"].as_u64().unwrap());
        let mean = mine.iter().sum::<f64>() / mine.len() as f64;
        assert!((mean - s["mape_pct"].as_f64().unwrap()).abs() < 1e-9, "{s}");
    }
    // The quick run's CDF sections pair with pcie-bench's by test.
    assert_eq!(c["cdfs"].as_array().unwrap().len(), 8);

    // CSV: one row per point, the same count.
    let o = compare(&["--format", "csv"]);
    let csv = String::from_utf8(o.stdout).unwrap();
    assert!(csv.starts_with("file,key,metric,first,other,diff_pct\n"), "{csv}");
    assert_eq!(csv.lines().count(), diffs.len() + 1);

    // HTML: the runs overlaid (A and B measured series, one set of model curves), and the tables.
    let html = dir.join("compare.html");
    let o = compare(&["--html", html.to_str().unwrap()]);
    assert!(o.status.success());
    let text = std::fs::read_to_string(&html).unwrap();
    assert_self_contained(&text);
    assert_eq!(series_in(&text, "bw_dma_sz_sweep"), 3 + 3 + 3 + 1);
    assert!(section(&text, "bw_dma_sz_sweep").contains("data-name=\"B: BW_DMA_WR\""));
    assert_eq!(series_in(&text, "lat_dma_details_cdf"), 16 + 8);
    // Charts only the first run has stay as they were.
    assert_eq!(
        series_in(&text, "lat_cmd_sizes"),
        series_in(&report(&measured, "alone").0, "lat_cmd_sizes")
    );
    for id in ["compare-B-summary", "compare-B-cdf", "compare-B-points"] {
        assert!(text.contains(&format!("<section class=\"table\" id=\"{id}\">")), "{id}");
    }
    assert_eq!(
        text.matches("<tr>").count(),
        1 + c["summary"].as_array().unwrap().len() + 1 + 8 + 1 + diffs.len()
    );

    // Text: the summary and the largest differences.
    let o = compare(&[]);
    let out = String::from_utf8(o.stdout).unwrap();
    assert!(out.contains("Compared: B = run against A = nfp6000"), "{out}");
    assert!(out.contains("Largest differences (15 of"), "{out}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_copy_engine_run_is_not_compared_with_dma_runs() {
    let dir = scratch("engines");
    let (dma, ce) = (dir.join("dma"), dir.join("ce"));
    let args = [
        "bench",
        "run",
        "--only",
        "bw_dma_sz_sweep",
        "--samples",
        "2000",
        "--out",
    ];
    for run in [&dma, &ce] {
        let mut v = args.to_vec();
        v.push(run.to_str().unwrap());
        let o = pcieperf(&v);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    }
    // The second run as a GPU's copy engines would record it.
    let path = ce.join("run.json");
    let mut info: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    info["backend"]["description"] = serde_json::json!({ "device": { "engine": "ce" } });
    std::fs::write(&path, serde_json::to_string_pretty(&info).unwrap()).unwrap();
    let (c, d) = (ce.to_str().unwrap(), dma.to_str().unwrap());

    let o = pcieperf(&["bench", "report", c, "--compare", d]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = String::from_utf8(o.stdout).unwrap();
    assert!(
        text.contains(
            "Not compared: B = dma against A = ce: not compared: ce's rows are copies by a GPU's copy engines \
             (--engine ce), dma's are DMAs a device issues"
        ),
        "{text}"
    );
    assert!(!text.contains("Largest differences"), "{text}");
    let o = pcieperf(&["bench", "report", c, "--compare", d, "--format", "json"]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(v["comparisons"][0]["refused"].is_string());
    assert_eq!(v["comparisons"][0]["differences"].as_array().map(Vec::len), Some(0));
    // Not drawn over A either, and no tables.
    let html = dir.join("r.html");
    let o = pcieperf(&["bench", "report", c, "--compare", d, "--html", html.to_str().unwrap()]);
    assert!(o.status.success());
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(
        !section(&page, "bw_dma_sz_sweep").contains("data-name=\"B: "),
        "B is not overlaid"
    );
    assert!(!page.contains("id=\"compare-B-summary\""));
    assert!(page.contains("B = dma (not compared: "));
    // Two DMA runs are compared as before.
    let o = pcieperf(&["bench", "report", d, "--compare", d, "--format", "json"]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(v["comparisons"][0].get("refused").is_none());
    assert_eq!(v["comparisons"][0]["differences"].as_array().map(Vec::len), Some(36));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn compare_refusals() {
    let measured = reference(SUPERMICRO);
    let m = measured.to_str().unwrap();
    let err = common::refused(&["bench", "report", m, "--format", "csv"]);
    assert!(err.contains("--format csv") && err.contains("--compare"), "{err}");
    let err = common::refused(&["bench", "report", m, "--compare", "/no/such/run"]);
    assert!(err.contains("/no/such/run: not a directory"), "{err}");
}

#[test]
fn figure_6_overlays_the_e3_cdf_on_the_e5_on_a_log_axis() {
    // The paper's Figure 6: LAT_RD 64 B, warm caches, on the Xeon E5 and the Xeon E3.
    let dir = scratch("figure6");
    let suite = dir.join("figure6.toml");
    std::fs::write(
        &suite,
        "name = \"figure6\"\ndescription = \"LAT_RD 64 B HWarm CDF\"\nlatency_count = 100000\nbandwidth_count = 1000\n\
         [[group]]\nbase = \"lat_dma_details\"\ntests = [\"LAT_RD\"]\nsizes = [64]\nwindows = [\"8K\"]\ncaches = [\"hwarm\"]\npattern = \"rand\"\ncdf = true\n",
    )
    .unwrap();
    let run = |host: &str| {
        let out = dir.join(host);
        let o = pcieperf(&[
            "bench",
            "run",
            "--suite",
            suite.to_str().unwrap(),
            "--backend",
            &format!("sim:{host}"),
            "--out",
            out.to_str().unwrap(),
        ]);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        out
    };
    let (e5, e3) = (run("e5-2637v3"), run("e3-1226v3"));
    let alone = report(&e5, "figure6-e5").0;
    let html = dir.join("figure6.html");
    let o = pcieperf(&[
        "bench",
        "report",
        e5.to_str().unwrap(),
        "--compare",
        e3.to_str().unwrap(),
        "--html",
        html.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = std::fs::read_to_string(&html).unwrap();
    let cdf = section(&text, "lat_dma_details_cdf");
    assert_eq!(series_in(&text, "lat_dma_details_cdf"), 2, "{cdf}");
    // The E5 alone: a linear axis ending past its 99.9th percentile. With the E3's tail (99.9th
    // percentile ten times its median) both curves share a log axis, and the note says why.
    assert!(!section(&alone, "lat_dma_details_cdf").contains("Log x axis"));
    assert!(cdf.contains("B: Log x axis"), "{cdf}");
    assert!(!cdf.contains("The x axis ends at"), "{cdf}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn the_h100_runs_kept_in_data_measured_report() {
    // The project's first real PCIe measurements (data/measured/h100-80gb-hbm3-vm): both quick
    // runs read back, with the GPU, its link and the model beside them.
    let measured = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../data/measured/h100-80gb-hbm3-vm");
    for (run, engine) in [("quick-sm", "engine sm"), ("quick-ce", "engine ce")] {
        let o = pcieperf(&["bench", "report", measured.join(run).to_str().unwrap()]);
        assert!(o.status.success(), "{run}: {}", String::from_utf8_lossy(&o.stderr));
        let text = String::from_utf8(o.stdout).unwrap();
        assert!(
            text.contains("backend cuda") && text.contains("NVIDIA H100 80GB HBM3"),
            "{text}"
        );
        assert!(
            text.contains(engine) && text.contains("Link: Gen5 x16, MPS 256"),
            "{text}"
        );
        assert!(text.contains("Charts ("), "{text}");
        // The sm run's bandwidth rows in 4 and 8 KiB windows (the size sweep's 36, the window
        // sweep's 2) do not measure the link; the ce run's copies do.
        let caution = "Caution: 38 bandwidth rows (bw_dma_sz_sweep, bw_dma_win_sweep_rd_rnd_64) ran on the GPU's threads in windows under 256 KiB";
        assert_eq!(text.contains(caution), run == "quick-sm", "{text}");
    }
}

#[test]
fn the_committed_h100_runs_get_their_verdict() {
    let measured = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../data/measured/h100-80gb-hbm3-vm");
    let text = |run: &str, format: &str| {
        let o = pcieperf(&[
            "bench",
            "report",
            measured.join(run).to_str().unwrap(),
            "--format",
            format,
        ]);
        assert!(o.status.success(), "{run}: {}", String::from_utf8_lossy(&o.stderr));
        String::from_utf8(o.stdout).unwrap()
    };
    // quick-ce: not its own reference, and its 2 KiB copies (6.6 Gb/s of 446.9, 1.5 %) are
    // bound by each copy's set-up: nothing to judge by, and the report says why.
    let ce = text("quick-ce", "table");
    assert!(
        ce.contains(
            "Verdict for NVIDIA H100 80GB HBM3 (engine ce, Gen5 x16, MPS 256, MRRS 4096, 8-bit tags): no reference"
        ),
        "{ce}"
    );
    let h2d = ce.lines().find(|l| l.starts_with("H2D")).unwrap();
    assert!(h2d.contains("6.6") && h2d.contains("446.9"), "{h2d}");
    assert!(ce.contains("one copy every 2.49 µs"), "{ce}");
    // quick-sm: its 2 KiB writes in an 8 KiB window read 620.3 Gb/s, 138.8 % of the model
    // (README: the window, not the link) — above the link; reads and latency normal.
    let sm = text("quick-sm", "table");
    assert!(sm.contains("): above the link\n"), "{sm}");
    let d2h = sm.lines().find(|l| l.starts_with("D2H")).unwrap();
    assert!(
        d2h.contains("620.3") && d2h.contains("138.8") && d2h.ends_with("above the link"),
        "{d2h}"
    );
    assert!(
        sm.lines()
            .any(|l| l.starts_with("LAT_RD 64 B") && l.contains("1229.2") && l.ends_with("no reference")),
        "{sm}"
    );
    // The same in CSV (no --compare needed for a GPU run) and JSON.
    let csv = text("quick-sm", "csv");
    assert_eq!(csv.lines().count(), 4, "{csv}");
    assert!(csv.lines().nth(2).unwrap().contains(",above the link,"), "{csv}");
    let json: serde_json::Value = serde_json::from_str(&text("quick-sm", "json")).unwrap();
    assert_eq!(json["verdict"]["word"], "above_link");
    assert_eq!(json["verdict"]["figures"][1]["band"], serde_json::Value::Null);
}
