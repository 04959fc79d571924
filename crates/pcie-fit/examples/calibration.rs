//! How close the simulator comes to what pcie-bench measured on the Xeon E5-2637 v3 with the
//! NFP-6000, IOMMU off and on with 4 KB pages, test by test of the measured tables.
//!
//! `cargo run --release -p pcie-bench --example calibration [-- --samples N] [--only BASE,...]
//! [--backend sim:HOST.toml,DEVICE.toml] [--rows]` (edited profile files can be tried without
//! rebuilding; `--rows` prints each test's simulated and measured median or bandwidth).
//! Counts default to 200,000 per test (every figure is a median, a percentile or bytes/time,
//! which settle long before pcie-bench's 2-16 M samples); `--samples 0` runs the real counts.
//! Users and reviewers compare real-count runs (`bench run --suite paper`), and state a long
//! test builds up (lines its own writes leave in the LLC) shows only there, so `--samples 0`
//! is the final check of a calibration change. The criteria and the scoring are
//! `pcie_fit::score`'s, which `pcieperf sim fit` reports too.

use pcie_bench::*;
use pcie_fit::measured::MeasuredRun;
use pcie_fit::score::{calibrated, score};
mod common;
use common::{opt, reference_root, DIRS};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let opt = |name: &str| opt(&args, name);
    let samples: u64 = opt("--samples").map_or(200_000, |s| s.parse().expect("--samples N"));
    let only: Vec<String> = opt("--only")
        .map(|s| s.split(',').map(String::from).collect())
        .unwrap_or_default();
    let rows = args.iter().any(|a| a == "--rows");
    let spec = opt("--backend").unwrap_or_else(|| "sim".into());
    let backend = SimBackend::from_spec(&spec).expect("profiles load");
    let root = reference_root();
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mut failures = 0;
    for dir in DIRS {
        let run = MeasuredRun::load(&root.join(dir)).expect("reference data loads");
        let groups = run.groups(0, if samples == 0 { u64::MAX } else { samples });
        let groups: Vec<_> = groups
            .iter()
            .filter(|g| calibrated(&g.base) && (only.is_empty() || only.contains(&g.base)))
            .collect();
        let tests: usize = groups.iter().map(|g| g.tests.len()).sum();
        println!("== {dir} (IOMMU {}), {tests} tests", run.iommu.name());
        let scores = score(&backend, &groups, &[(dir.to_string(), run.iommu)], 0, threads).expect("simulation runs");
        for s in scores {
            if rows {
                for r in &s.rows {
                    println!("    {} sim {:8.2} measured {:8.2}", r.key, r.sim, r.measured);
                }
            }
            for v in s.verdicts() {
                failures += usize::from(!v.met);
                println!(
                    "  {:<28} {:<34} {:7.3} (limit {}) {}",
                    v.base,
                    v.what,
                    v.value,
                    v.limit,
                    if v.met { "ok" } else { "NOT MET" }
                );
            }
            for c in &s.cdfs {
                let q = |x: &[f64; 5]| x.map(|v| format!("{v:.0}")).join("/");
                println!(
                    "    p5/p25/p50/p75/p95 ns of {}: sim {}, measured {}",
                    c.key,
                    q(&c.sim_quantiles_ns),
                    q(&c.measured_quantiles_ns)
                );
            }
        }
    }
    println!("\n{failures} criteria not met");
}
