//! The fit's acceptance checks on the E5-2637 v3's measurements (issue 22), too long for the
//! test suite:
//!
//! - `refit`: from a base with every fittable key 30 % off (alternately up and down), fit both
//!   runs (IOMMU off and 4 KB pages) and hold the result to the calibration criteria, beside the
//!   hand-calibrated profile scored the same way;
//! - `score`: score `--base` alone (a name or a TOML file) on both runs and list what it misses;
//! - `scan KEY V1,V2,..`: the loss the fit's search sees for KEY at each value, per group of
//!   the key's and per slice (from `--base`, with `--set K=V,K=V` applied first, at the search
//!   count), and the criteria met on every group;
//! - `cv [--fit GROUPS]`: fit on `bw_dma_sz_sweep` and `lat_dma_sizes` only (or the
//!   comma-separated GROUPS: `--fit bw_dma_sz_sweep` is the one group the E3-1226 v3 was measured
//!   in), from the hand-calibrated profile and from the 30 %-off one, and print each held-out
//!   group's median and bandwidth MAPE.
//!
//! `cargo run --release -p pcie-bench --example fit_check -- [refit|cv|score|scan] [--search-samples N]
//! [--samples N] [--base HOST]` (defaults: both checks, 20,000 and 200,000,
//! e5-2637v3).

use pcie_bench::{Iommu, SimBackend};
use pcie_fit::keys::{self, KEYS};
use pcie_fit::measured::{Group, MeasuredRun};
use pcie_fit::score::{score, GroupScore, Verdict};
use pcie_fit::{fit, FitOptions, FitReport};
use pcie_sim::{DeviceProfile, HostProfile};
mod common;
use common::{opt, reference_root, DIRS};

/// `base` with every fittable key it has moved 30 % up (even keys) or down (odd ones).
fn off_by_30(base: &HostProfile) -> HostProfile {
    let mut v = serde_json::to_value(base).expect("serialises");
    for (i, k) in KEYS.iter().enumerate() {
        if let Some(x) = keys::get(&v, k.name) {
            let f = if i % 2 == 0 { 1.3 } else { 0.7 };
            keys::set(&mut v, k.name, (x * f).clamp(k.lo, k.hi), k.scale);
        }
    }
    pcie_fit::profile_toml::checked(&v).expect("the moved profile loads")
}

fn met(v: &[Verdict]) -> usize {
    v.iter().filter(|v| v.met).count()
}

fn show(what: &str, r: &FitReport, t0: std::time::Instant) {
    println!(
        "\n== {what}: {} simulations, {:.0} s; criteria met {} of {} with the base, {} fitted",
        r.simulations,
        t0.elapsed().as_secs_f64(),
        met(&r.verdicts_before),
        r.verdicts_before.len(),
        met(&r.verdicts_after)
    );
    for k in r.keys.iter().filter(|k| k.fitted.is_some()) {
        println!(
            "  {:<32} {:>10.3} -> {:>10.3}",
            k.name,
            k.base.unwrap_or(f64::NAN),
            k.fitted.unwrap_or(f64::NAN)
        );
    }
}

/// The two measured runs, loaded once, and what scoring on them needs.
struct Reference {
    runs: Vec<MeasuredRun>,
    labels: Vec<(String, Iommu)>,
    threads: usize,
}

impl Reference {
    fn load() -> Reference {
        let root = reference_root();
        let runs: Vec<MeasuredRun> = DIRS
            .iter()
            .map(|d| MeasuredRun::load(&root.join(d)).expect("loads"))
            .collect();
        let labels = runs.iter().map(|r| (r.label.clone(), r.iommu)).collect();
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
        Reference { runs, labels, threads }
    }

    /// Every group of both runs at `count`.
    fn groups(&self, count: u64) -> Vec<Group> {
        self.runs
            .iter()
            .enumerate()
            .flat_map(|(i, r)| r.groups(i, count))
            .collect()
    }

    /// `groups` simulated on `host` with the NFP-6000 and scored.
    fn score(&self, host: &HostProfile, groups: &[Group]) -> Vec<GroupScore> {
        let backend = SimBackend::from_profiles(host.clone(), DeviceProfile::load("nfp6000").expect("device loads"))
            .expect("the pair loads");
        let refs: Vec<&Group> = groups.iter().collect();
        score(&backend, &refs, &self.labels, 1, self.threads).expect("simulates")
    }

    /// `groups` simulated on `host` and held to their criteria.
    fn verdicts(&self, host: &HostProfile, groups: &[Group]) -> Vec<Verdict> {
        self.score(host, groups).iter().flat_map(|g| g.verdicts()).collect()
    }
}

/// `scan KEY V1,V2,..`: per value, each of the key's groups' loss (what the search minimises)
/// and the criteria met on every group at `final_count`.
fn scan(args: &[String], base: &HostProfile, search_count: u64, final_count: u64) {
    let (Some(name), Some(values)) = (args.get(2), args.get(3)) else {
        panic!("scan KEY V1,V2,..");
    };
    let key = *KEYS.iter().find(|k| k.name == name).expect("a fittable key");
    let reference = Reference::load();
    let groups: Vec<Group> = reference
        .groups(search_count)
        .into_iter()
        .filter_map(|g| g.identifying(&key, reference.runs[g.run].iommu))
        .collect();
    let all = reference.groups(final_count);
    let mut start = serde_json::to_value(base).expect("serialises");
    for kv in opt(args, "--set").iter().flat_map(|s| s.split(',')) {
        let (k, x) = kv.split_once('=').expect("--set KEY=VALUE,..");
        let fk = KEYS.iter().find(|f| f.name == k).expect("a fittable key");
        assert!(keys::set(&mut start, k, x.parse().expect("a number"), fk.scale), "{k}");
    }
    for x in values.split(',').map(|v| v.parse::<f64>().expect("a number")) {
        let mut v = start.clone();
        keys::set(&mut v, key.name, x, key.scale);
        let host = pcie_fit::profile_toml::checked(&v).expect("loads");
        let scores = reference.score(&host, &groups);
        let mean = scores.iter().map(|g| g.loss()).sum::<f64>() / scores.len() as f64;
        let verdicts = reference.verdicts(&host, &all);
        println!(
            "{name} = {x}: loss {mean:.3}, criteria met {} of {}",
            met(&verdicts),
            verdicts.len()
        );
        for g in &scores {
            let slices: Vec<String> = g
                .slices
                .iter()
                .map(|s| format!("{}/{:?} {:.2}", s.kind.name(), s.cache, s.loss()))
                .collect();
            println!(
                "    {:<6} {:<28} {:8.3}  {}",
                if g.iommu == Iommu::Off { "off" } else { "iommu" },
                g.base,
                g.loss(),
                slices.join(", ")
            );
        }
        for v in verdicts.iter().filter(|v| !v.met) {
            println!("    miss {} {} {:.3}", v.base, v.what, v.value);
        }
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let opt = |name: &str| opt(&args, name);
    let which = args.get(1).filter(|a| !a.starts_with("--")).cloned();
    let search_count = opt("--search-samples").map_or(20_000, |s| s.parse().expect("--search-samples N"));
    let final_count = opt("--samples").map_or(200_000, |s| s.parse().expect("--samples N"));
    let hand = HostProfile::load(&opt("--base").unwrap_or_else(|| "e5-2637v3".into())).expect("base loads");
    let root = reference_root();
    let opts = |base: HostProfile, holdout: Vec<String>| FitOptions {
        dirs: DIRS.iter().map(|d| root.join(d)).collect(),
        device: DeviceProfile::load("nfp6000").expect("device loads"),
        bases: vec![base],
        name: "e5-refit".into(),
        only: vec![],
        holdout,
        seed: 1,
        threads: std::thread::available_parallelism().map_or(1, |n| n.get()),
        search_count,
        final_count,
    };
    let quiet = &mut |_: &pcie_fit::FitProgress| {};
    if which.as_deref().is_none_or(|w| w == "refit") {
        let t0 = std::time::Instant::now();
        let r = fit(&opts(off_by_30(&hand), vec![]), quiet).expect("the fit runs");
        show("refit from every key 30 % off", &r, t0);
        // The hand calibration, scored by the same simulations as the fit's final comparison.
        let t0 = std::time::Instant::now();
        let hand_verdicts = {
            let r = Reference::load();
            r.verdicts(&hand, &r.groups(final_count))
        };
        println!(
            "\n== the hand calibration: criteria met {} of {} ({:.0} s)",
            met(&hand_verdicts),
            hand_verdicts.len(),
            t0.elapsed().as_secs_f64()
        );
        println!("\n  criteria not met (hand calibration | refit from 30 % off):");
        for (a, b) in hand_verdicts.iter().zip(&r.verdicts_after) {
            if !a.met || !b.met {
                println!(
                    "  {:<58} {:<30} {:7.3} | {:7.3} (limit {})",
                    a.run,
                    format!("{} {}", a.base, a.what),
                    a.value,
                    b.value,
                    a.limit
                );
            }
        }
        std::fs::write("fit-check-refit.toml", &r.profile_toml).expect("writes");
    }
    if which.as_deref() == Some("scan") {
        scan(&args, &hand, search_count, final_count);
    }
    if which.as_deref() == Some("score") {
        let t0 = std::time::Instant::now();
        let v = {
            let r = Reference::load();
            r.verdicts(&hand, &r.groups(final_count))
        };
        println!(
            "== {}: criteria met {} of {} ({:.0} s)",
            hand.name,
            met(&v),
            v.len(),
            t0.elapsed().as_secs_f64()
        );
        for v in v.iter().filter(|v| !v.met) {
            println!(
                "  {:<58} {:<40} {:7.3} (limit {})",
                v.run,
                format!("{} {}", v.base, v.what),
                v.value,
                v.limit
            );
        }
    }
    if which.as_deref().is_none_or(|w| w == "cv") {
        let fitted = opt("--fit").unwrap_or_else(|| "bw_dma_sz_sweep,lat_dma_sizes".into());
        let fitted: Vec<&str> = fitted.split(',').collect();
        let mut bases: Vec<String> = DIRS
            .iter()
            .flat_map(|d| pcie_bench::RunData::load(&root.join(d)).expect("loads").files)
            .map(|f| f.base)
            .filter(|b| !fitted.contains(&b.as_str()))
            .collect();
        bases.sort();
        bases.dedup();
        for (what, base) in [
            ("hand calibration", hand.clone()),
            ("every key 30 % off", off_by_30(&hand)),
        ] {
            let t0 = std::time::Instant::now();
            let r = fit(&opts(base, bases.clone()), quiet).expect("the fit runs");
            show(&format!("cross-validation from the {what}"), &r, t0);
            let (mut within, mut all) = (0, 0);
            for g in r.after.iter().filter(|g| bases.contains(&g.base)) {
                for k in g.by_kind() {
                    let e = if k.bw.points > 0 {
                        k.bw.mape_pct
                    } else {
                        k.median.mape_pct
                    };
                    all += 1;
                    within += usize::from(e <= 10.0);
                    if e > 10.0 {
                        println!("  held out {}/{} {}: MAPE {e:.1} %", g.run, g.base, k.kind.name());
                    }
                }
            }
            println!("  held-out group/kinds within 10 %: {within} of {all}");
        }
    }
}
