//! How close the simulator comes to what pcie-bench measured on the Xeon E5-2637 v3 with the
//! NFP-6000, IOMMU off and on with 4 KB pages, with the `paper` suite's parameters.
//!
//! `cargo run --release -p pcie-bench --example calibration [-- --samples N] [--only BASE,...]
//! [--backend sim:HOST.toml,DEVICE.toml] [--rows]` (edited profile files can be tried without
//! rebuilding; `--rows` prints each latency test's simulated and measured median).
//! Counts default to 200,000 per test (every figure is a median, a percentile or bytes/time,
//! which settle long before pcie-bench's 2-16 M samples); `--samples 0` runs the real counts.
//! Users and reviewers compare real-count runs (`bench run --suite paper`), and state a long
//! test builds up (lines its own writes leave in the LLC) shows only there, so `--samples 0`
//! is the final check of a calibration change.

use pcie_bench::*;
use std::path::Path;
use std::sync::atomic::AtomicBool;

const DIRS: [(&str, Iommu); 2] = [
    ("nfp6000-1.2GHz_hsw-Xeon-E5-2637v3_supermicro", Iommu::Off),
    (
        "nfp6000-1.2GHz_hsw-Xeon-E5-2637v3_supermicro-iommu-nosp",
        Iommu::Pages4K,
    ),
];

/// Bases the acceptance criteria name, with their thresholds.
fn checked(base: &str) -> bool {
    base == "bw_dma_sz_sweep"
        || base == "lat_dma_sizes"
        || base.starts_with("bw_dma_win_sweep")
        || base.starts_with("lat_dma_sweep")
        || base.starts_with("bw_dma_off")
        || base == "lat_dma_details"
        || base.starts_with("lat_cmd")
}

/// The median MAPE a latency base may reach: the command path's single reads and writes are
/// held to 5 %, the DMA sweeps to 10 %.
fn median_limit(base: &str) -> f64 {
    if base.starts_with("lat_cmd") {
        5.0
    } else {
        10.0
    }
}

/// p5/p25/p50/p75/p95 of a CDF given as (ns, cumulative fraction) points: the shape KS judges.
fn quantiles(cdf: &[(f64, f64)]) -> String {
    let q = |p: f64| cdf.iter().find(|(_, f)| *f >= p).map_or(f64::NAN, |(ns, _)| *ns);
    let qs: Vec<String> = [0.05, 0.25, 0.5, 0.75, 0.95].map(|p| format!("{:.0}", q(p))).into();
    qs.join("/")
}

/// Adds a simulated figure's difference from the measured one to the group named `key`.
fn add(by: &mut Vec<(String, ErrorStats)>, key: String, sim: f64, measured: f64) {
    let d = diff_pct(measured, sim);
    match by.iter_mut().find(|(k, _)| *k == key) {
        Some((_, e)) => e.add(d),
        None => {
            let mut e = ErrorStats::default();
            e.add(d);
            by.push((key, e));
        }
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let opt = |name: &str| {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1))
            .cloned()
    };
    let samples: u64 = opt("--samples").map_or(200_000, |s| s.parse().expect("--samples N"));
    let only: Vec<String> = opt("--only")
        .map(|s| s.split(',').map(String::from).collect())
        .unwrap_or_default();
    let rows = args.iter().any(|a| a == "--rows");
    let spec = opt("--backend").unwrap_or_else(|| "sim".into());
    let backend = SimBackend::from_spec(&spec).expect("profiles load");
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../data/reference/pcie-bench");
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mut failures = 0;
    for (dir, iommu) in DIRS {
        let measured = RunData::load(&root.join(dir)).expect("reference data loads");
        let paper = Suite::builtin("paper").expect("paper suite");
        let bases: Vec<String> = paper
            .bases()
            .into_iter()
            .filter(|b| checked(b) && (only.is_empty() || only.iter().any(|o| o == b)))
            .map(String::from)
            .collect();
        let mut suite = paper.only(&bases).expect("bases exist").with_iommu(iommu);
        if samples > 0 {
            suite = suite.with_count(samples).expect("count");
        }
        println!("== {dir} (IOMMU {}), {} tests", iommu.name(), suite.test_count());
        for group_base in &bases {
            let groups: Vec<&Group> = suite.groups().iter().filter(|g| &g.base == group_base).collect();
            let tests: Vec<TestParams> = groups.iter().flat_map(|g| g.expand()).collect();
            let mut results = Vec::new();
            run_tests(&backend, &tests, 0, threads, &AtomicBool::new(false), |e| {
                if let RunEvent::Finished(f) = e {
                    results.push(f.outcome.expect("simulation runs"));
                }
                true
            });
            failures += compare(group_base, &tests, &results, &measured, rows);
        }
    }
    println!("\n{failures} criteria not met");
}

/// Prints the figures for one base (with `rows`, each latency test's medians too); returns how
/// many criteria failed.
fn compare(base: &str, tests: &[TestParams], results: &[Outcome], measured: &RunData, print_rows: bool) -> usize {
    let mut failed = 0;
    let mut verdict = |ok: bool| {
        if !ok {
            failed += 1;
        }
        if ok {
            "ok"
        } else {
            "NOT MET"
        }
    };
    match measured.get(base) {
        Some(ResultData::Bandwidth(rows)) => {
            let mut by: Vec<(String, ErrorStats)> = Vec::new();
            for ((t, o), row) in tests.iter().zip(results).zip(rows) {
                let Outcome::Bandwidth(b) = o else { continue };
                let sim = BandwidthStats::new(b).expect("time").gbps;
                let key = if base.starts_with("bw_dma_win") {
                    format!("{:?}", t.cache)
                } else {
                    t.kind.name().into()
                };
                add(&mut by, key, sim, row.bw_gbps);
            }
            let limit = if base == "bw_dma_sz_sweep" { 5.0 } else { 10.0 };
            for (key, errs) in by {
                let m = errs.mape_pct;
                println!(
                    "  {base:<28} {key:<8} MAPE {m:5.1} % (limit {limit} %)  {}",
                    verdict(m <= limit)
                );
            }
        }
        Some(ResultData::Latency(rows)) => {
            let stats: Vec<LatencyStats> = results
                .iter()
                .map(|o| match o {
                    Outcome::Latency(s) => SortedLatencies::new(s).expect("samples").stats(),
                    Outcome::Bandwidth(_) => unreachable!("latency base"),
                })
                .collect();
            if base == "lat_dma_sizes" {
                let (mut med, mut min, mut p95) = (ErrorStats::default(), ErrorStats::default(), ErrorStats::default());
                for (s, r) in stats.iter().zip(rows) {
                    med.add(diff_pct(r.med_ns, s.ns.median));
                    min.add(diff_pct(r.min_ns, s.ns.min));
                    p95.add(diff_pct(r.p95_ns, s.ns.p95));
                }
                let (med, min, p95) = (med.max_abs_pct, min.max_abs_pct, p95.max_abs_pct);
                println!("  {base:<28} worst median {med:4.1} % (5 %) {}, min {min:4.1} % (10 %) {}, p95 {p95:4.1} % (10 %) {}",
                    verdict(med <= 5.0), verdict(min <= 10.0), verdict(p95 <= 10.0));
            } else {
                let mut by: Vec<(String, ErrorStats)> = Vec::new();
                for ((t, s), r) in tests.iter().zip(&stats).zip(rows) {
                    if print_rows {
                        println!(
                            "    {:<12} {:>4} B +{:<3} {:>8} {:<8} median sim {:6.1} measured {:6.1} ns",
                            t.kind.name(),
                            t.size,
                            t.host_offset,
                            t.window,
                            format!("{:?}", t.cache),
                            s.ns.median,
                            r.med_ns
                        );
                    }
                    add(&mut by, format!("{:?}", t.cache), s.ns.median, r.med_ns);
                }
                let limit = median_limit(base);
                for (key, errs) in by {
                    let m = errs.mape_pct;
                    println!(
                        "  {base:<28} {key:<8} median MAPE {m:5.1} % ({limit} %)  {}",
                        verdict(m <= limit)
                    );
                }
            }
            if base.ends_with("_details") {
                if let Some(ResultData::Cdf(sections)) = measured.get(&format!("{base}_cdf")) {
                    for ((t, o), sec) in tests.iter().zip(results).zip(sections) {
                        let Outcome::Latency(s) = o else { continue };
                        let cdf: Vec<(f64, f64)> = SortedLatencies::new(s)
                            .expect("samples")
                            .cdf()
                            .iter()
                            .map(|p| (p.ns, p.cdf))
                            .collect();
                        let ks = ks_distance(&cdf, &sec.points);
                        println!(
                            "  {base}_cdf {:<12} {:>4} B {:>8} {:?}: KS {ks:.3} (0.15) {}  p5/p25/p50/p75/p95 ns: sim {}, measured {}",
                            t.kind.name(),
                            t.size,
                            t.window,
                            t.cache,
                            verdict(ks <= 0.15),
                            quantiles(&cdf),
                            quantiles(&sec.points)
                        );
                    }
                }
            }
        }
        _ => println!("  {base}: no measured data"),
    }
    failed
}
