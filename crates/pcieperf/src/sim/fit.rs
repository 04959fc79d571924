//! `pcieperf sim fit`: parses the options, shows the fit's progress, prints its errors before
//! and after, and writes the fitted profile (`pcie_fit` does the work).

use crate::error::CliError;
use crate::output::{check_files, json, write_file, Cell, Format, Table};
use clap::Args;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use pcie_bench::compare::ErrorStats;
use pcie_fit::{fit, FitError, FitOptions, FitReport};
use pcie_sim::{DeviceProfile, HostProfile};
use std::path::PathBuf;

#[derive(Debug, Args)]
pub struct FitArgs {
    /// Result directories: pcie-bench data directories or `pcieperf bench run` output, at
    /// most one per IOMMU mode (read from run.json or pcie-bench's sys-kernel-cmdline.txt)
    #[arg(required = true)]
    results: Vec<PathBuf>,
    /// The measured device's profile (built-in name or path): it is not fitted
    #[arg(long)]
    device: String,
    /// Host profile the search starts from (built-in name or path); keys the data cannot
    /// identify keep its values. auto: the built-in host whose simulation is closest to the
    /// measurements
    #[arg(long, default_value = "auto")]
    base: String,
    /// Use only these groups (result table names, comma-separated)
    #[arg(long, value_delimiter = ',')]
    only: Vec<String>,
    /// Leave these groups out of the fit and report how well it predicts them
    #[arg(long, value_delimiter = ',')]
    holdout: Vec<String>,
    /// Seed of every simulation
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Threads running simulations [default: all cores]
    #[arg(long)]
    threads: Option<usize>,
    /// Samples (or DMAs) per test while searching
    #[arg(long, default_value_t = 20_000)]
    search_samples: u64,
    /// Samples (or DMAs) per test in the before/after comparison
    #[arg(long, default_value_t = 200_000)]
    samples: u64,
    /// Output: table, csv (the error table) or json (everything)
    #[arg(long, value_enum, default_value_t)]
    format: Format,
    /// Where to write the fitted host profile (TOML)
    #[arg(short, long)]
    output: PathBuf,
}

const MAX_THREADS: usize = 256;
const COUNTS: (u64, u64) = (100, 16 << 20);

pub fn run(a: &FitArgs) -> Result<String, CliError> {
    let usage = CliError::Usage;
    if let Some(n) = a.threads.filter(|n| !(1..=MAX_THREADS).contains(n)) {
        return Err(usage(format!("--threads {n}: must be from 1 to {MAX_THREADS}")));
    }
    for (name, n) in [("--search-samples", a.search_samples), ("--samples", a.samples)] {
        if !(COUNTS.0..=COUNTS.1).contains(&n) {
            return Err(usage(format!("{name} {n}: must be from {} to {}", COUNTS.0, COUNTS.1)));
        }
    }
    check_files(&[("-o", Some(a.output.as_path()))])?;
    let device = DeviceProfile::load(&a.device).map_err(|e| usage(format!("--device {e}")))?;
    let names = if a.base == "auto" {
        pcie_sim::builtin_hosts()
    } else {
        vec![a.base.as_str()]
    };
    let bases = names
        .into_iter()
        .map(HostProfile::load)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| usage(format!("--base {e}")))?;
    let name: String = a
        .output
        .file_stem()
        .map(|s| s.to_string_lossy().chars().take(64).collect())
        .filter(|s: &String| !s.is_empty())
        .ok_or_else(|| usage(format!("-o {}: not a file name", a.output.display())))?;
    let opts = FitOptions {
        dirs: a.results.clone(),
        device,
        bases,
        name,
        only: a.only.clone(),
        holdout: a.holdout.clone(),
        seed: a.seed,
        threads: a
            .threads
            .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get())),
        search_count: a.search_samples,
        final_count: a.samples,
    };
    let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
    bar.set_style(
        ProgressStyle::with_template("[{bar:30}] {pos}/{len} simulations  {elapsed_precise}  {wide_msg}")
            .expect("the template is valid")
            .progress_chars("=> "),
    );
    let report = fit(&opts, &mut |p| {
        bar.set_length(p.planned);
        bar.set_position(p.simulations);
        bar.set_message(p.stage.clone());
    });
    bar.finish_and_clear();
    let report = report.map_err(|e| match e {
        FitError::Input(m) => CliError::Usage(m),
        FitError::Run(m) => CliError::Runtime(m),
    })?;
    write_file(&a.output, &report.profile_toml)?;
    Ok(match a.format {
        Format::Json => json(&report),
        Format::Csv => errors_table(&report).to_csv(),
        Format::Table => human(&report, &a.output),
    })
}

/// Per group and test kind, the errors before (base) and after (fitted), in percent.
fn errors_table(r: &FitReport) -> Table {
    let mut t = Table::new(&[
        ("run", "run"),
        ("group", "group"),
        ("held_out", "held out"),
        ("test", "test"),
    ]);
    for (csv, human) in [
        ("median_mape", "median MAPE"),
        ("min_mape", "min MAPE"),
        ("p95_mape", "p95 MAPE"),
        ("bw_mape", "BW MAPE"),
        ("ks_max", "KS max"),
    ] {
        t.add_column(&format!("{csv}_before"), &format!("{human} before"));
        t.add_column(&format!("{csv}_after"), &format!("{human} after"));
    }
    let pct = |e: &ErrorStats| {
        if e.points > 0 {
            Cell::num(e.mape_pct, 1)
        } else {
            Cell::text("")
        }
    };
    for (b, f) in r.before.iter().zip(&r.after) {
        let held_out = r.holdout_groups.iter().any(|h| *h == format!("{}/{}", f.run, f.base));
        for (kb, kf) in b.by_kind().iter().zip(f.by_kind()) {
            let ks = |k: Option<f64>| k.map_or(Cell::text(""), |v| Cell::num(v, 3));
            t.push(vec![
                Cell::text(f.run.clone()),
                Cell::text(f.base.clone()),
                Cell::text(if held_out { "yes" } else { "" }),
                Cell::text(kf.kind.name()),
                pct(&kb.median),
                pct(&kf.median),
                pct(&kb.min),
                pct(&kf.min),
                pct(&kb.p95),
                pct(&kf.p95),
                pct(&kb.bw),
                pct(&kf.bw),
                ks(kb.ks_max),
                ks(kf.ks_max),
            ]);
        }
    }
    t
}

fn human(r: &FitReport, output: &std::path::Path) -> String {
    let mut out = errors_table(r).to_human();
    let mut keys = Table::new(&[
        ("key", "key"),
        ("base", "base"),
        ("fitted", "fitted"),
        ("by", "fixed by / note"),
    ]);
    for k in &r.keys {
        let num = |v: Option<f64>| v.map_or(Cell::text("-"), |x| Cell::text(x.to_string()));
        let by = match k.fitted {
            Some(_) if k.measured => format!("measured: {}", k.fixed_by.join(", ")),
            Some(_) => k.fixed_by.join(", "),
            None => k.note.clone(),
        };
        keys.push(vec![
            Cell::text(k.name.clone()),
            num(k.base),
            num(k.fitted),
            Cell::text(by),
        ]);
    }
    out.push('\n');
    if r.base_scores.is_empty() {
        out.push_str(&format!("base: {}\n", r.base));
    } else {
        let scores: Vec<String> = r
            .base_scores
            .iter()
            .map(|b| format!("{} {:.2}", b.name, b.loss))
            .collect();
        out.push_str(&format!(
            "base: {}, the closest built-in host (loss on the fitting groups: {})\n",
            r.base,
            scores.join(", ")
        ));
    }
    out.push_str(&keys.to_human());
    let met = |v: &[pcie_fit::score::Verdict]| v.iter().filter(|v| v.met).count();
    out.push_str(&format!(
        "\ncriteria met: {} of {} before, {} after; {} simulations ({} samples per test searching, {} comparing)\n",
        met(&r.verdicts_before),
        r.verdicts_before.len(),
        met(&r.verdicts_after),
        r.simulations,
        r.search_count,
        r.final_count
    ));
    for u in &r.unreached {
        out.push_str(&format!(
            "not reached: {}/{} {} {:.3} (limit {}){}: {}\n",
            u.verdict.run,
            u.verdict.base,
            u.verdict.what,
            u.verdict.value,
            u.verdict.limit,
            if u.held_out { ", held out" } else { "" },
            if u.mechanisms.is_empty() {
                "no fitted mechanism moves it".to_string()
            } else {
                format!("mechanisms {}", u.mechanisms.join("; "))
            }
        ));
    }
    for s in r.spread.iter().filter(|s| s.beyond_10pct > 0) {
        out.push_str(&format!(
            "spread not followed: {}/{} {}: measured/fitted {:.2} ({} B) to {:.2} ({} B), median {:.2}; {} of {} rows beyond 10 %, neighbouring rows {:.0} % apart (median)\n",
            s.run,
            s.base,
            s.kind.name(),
            s.lowest.1,
            s.lowest.0,
            s.highest.1,
            s.highest.0,
            s.median_ratio,
            s.beyond_10pct,
            s.rows,
            s.neighbour_pct
        ));
    }
    out.push_str(&format!("wrote {}\n", output.display()));
    out
}
