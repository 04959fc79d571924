//! A simulated host fitted to a user's measurements (`pcieperf sim fit`): the host profile's
//! mechanisms (memory latencies, write path, IOMMU, read and write pipelines, tails, power
//! states) searched, key by key, on the result groups that identify each, so that the
//! simulator reproduces the measured host. Calibration made repeatable, not a curve fit: every
//! fitted value is still one mechanism's parameter, within the range the loader allows.
//!
//! The start: the base host, or of several candidates the one whose simulation of the fitting
//! groups is closest to them (its structure, such as power states, is no key), with the link's
//! MPS as the measurements say ([`measured::path_mps`]).
//!
//! The method: for each key of [`keys::KEYS`] in dependency order that the fitting groups
//! identify, a bracketing and golden-section search ([`search::minimise`], at most
//! [`search::MAX_EVALUATIONS`] evaluations) of the mean loss ([`score::GroupScore::loss`]) of
//! its groups, simulated at the reduced count; then a second pass over the same keys from the
//! values found (the keys interact: a walk's cost moves with the DRAM latency). Each evaluation
//! simulates one test per measured row of the key's groups, on the runner's threads. At the
//! end, the base and the fitted host are both scored on every group (the held-out ones too) at
//! the final count.
//!
//! Left to others: reading result directories and running tests (pcie-bench, whose simulator
//! backend runs every candidate), the profiles and the simulator (pcie-sim), and the command
//! line that prints the report and writes the profile (`pcieperf sim fit`). The examples
//! `calibration` and `fit_check` print the hand calibration's and the fit's figures.

pub mod keys;
pub mod measured;
pub mod profile_toml;
pub mod score;
pub mod search;
pub mod spread;

use keys::{FitKey, KEYS};
use measured::{check_consistent, check_device, check_rows, path_mps, Group, MeasuredRun};
use pcie_bench::params::Iommu;
use pcie_bench::sim_backend::SimBackend;
use pcie_sim::{DeviceProfile, HostProfile};
use score::{score, GroupScore, Verdict};
use serde::Serialize;
use serde_json::Value;
use std::fmt;
use std::path::PathBuf;

/// What a fit could not do.
#[derive(Debug, Clone, PartialEq)]
pub enum FitError {
    /// The measurements, profiles or options cannot be fitted (a usage error).
    Input(String),
    /// A simulation failed.
    Run(String),
}

impl fmt::Display for FitError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FitError::Input(m) | FitError::Run(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for FitError {}

/// What to fit, from what.
#[derive(Debug, Clone)]
pub struct FitOptions {
    pub dirs: Vec<PathBuf>,
    pub device: DeviceProfile,
    /// The hosts the search may start from: with one, that one; with several, the one whose
    /// simulation is closest to the measurements. Keys the data cannot identify keep its
    /// values, and so does its structure (DDIO share, sockets, power states).
    pub bases: Vec<HostProfile>,
    /// The written profile's `name`.
    pub name: String,
    /// Groups (result table bases) to use; empty: all.
    pub only: Vec<String>,
    /// Groups left out of the search and only predicted.
    pub holdout: Vec<String>,
    pub seed: u64,
    pub threads: usize,
    /// Samples (or DMAs) per test during the search ...
    pub search_count: u64,
    /// ... and in the before/after comparison.
    pub final_count: u64,
}

/// Progress of a fit, for a bar: simulations done of an upper bound, and what is being done.
#[derive(Debug, Clone)]
pub struct FitProgress {
    pub simulations: u64,
    pub planned: u64,
    pub stage: String,
}

/// One key of the profile and what the fit did with it.
#[derive(Debug, Clone, Serialize)]
pub struct KeyResult {
    pub name: String,
    pub mechanism: String,
    pub base: Option<f64>,
    /// None: kept from the base.
    pub fitted: Option<f64>,
    /// The groups (`run/base`) that fixed it.
    pub fixed_by: Vec<String>,
    /// Why it was kept, where it was.
    pub note: String,
    /// Read from the measurements (the link's MPS), not searched.
    pub measured: bool,
}

/// A candidate base and its loss on the fitting groups, when the fit chose among several.
#[derive(Debug, Clone, Serialize)]
pub struct BaseScore {
    pub name: String,
    /// The mean loss of the groups ([`GroupScore::loss`]); infinite where it cannot run them.
    pub loss: f64,
}

/// A criterion the fitted host misses, and the mechanisms its group could move.
#[derive(Debug, Clone, Serialize)]
pub struct Unreached {
    #[serde(flatten)]
    pub verdict: Verdict,
    pub held_out: bool,
    pub mechanisms: Vec<String>,
}

/// Everything a fit found.
#[derive(Debug, Clone, Serialize)]
pub struct FitReport {
    pub runs: Vec<String>,
    /// The host the search started from, and each candidate's loss where there were several.
    pub base: String,
    pub base_scores: Vec<BaseScore>,
    pub fit_groups: Vec<String>,
    pub holdout_groups: Vec<String>,
    pub keys: Vec<KeyResult>,
    pub search_count: u64,
    pub final_count: u64,
    /// Tests simulated in all: the search's and the two final comparisons'.
    pub simulations: u64,
    pub before: Vec<GroupScore>,
    pub after: Vec<GroupScore>,
    pub verdicts_before: Vec<Verdict>,
    pub verdicts_after: Vec<Verdict>,
    pub unreached: Vec<Unreached>,
    /// What of the bandwidth groups the fitted host cannot follow ([`spread`]).
    pub spread: Vec<spread::Spread>,
    /// The fitted host profile, as written.
    pub profile_toml: String,
}

/// `run/base`, as reports name a group.
fn label(runs: &[MeasuredRun], g: &Group) -> String {
    format!("{}/{}", runs[g.run].label, g.base)
}

/// The mean of the groups' losses: what the search minimises.
fn mean_loss(scores: &[GroupScore]) -> f64 {
    scores.iter().map(GroupScore::loss).sum::<f64>() / scores.len().max(1) as f64
}

/// Loads and checks the measurements, fits, and scores base and fit.
pub fn fit(opts: &FitOptions, progress: &mut dyn FnMut(&FitProgress)) -> Result<FitReport, FitError> {
    if opts.dirs.is_empty() {
        return Err(FitError::Input("no result directory given".into()));
    }
    let runs: Vec<MeasuredRun> = opts
        .dirs
        .iter()
        .map(|d| MeasuredRun::load(d))
        .collect::<Result<_, _>>()?;
    check_consistent(&runs)?;
    for r in &runs {
        check_rows(r, &opts.device)?;
        check_device(r, &opts.device)?;
    }
    let mps = path_mps(&runs, &opts.device)?;
    let select = |count: u64| -> Vec<Group> {
        runs.iter()
            .enumerate()
            .flat_map(|(i, r)| r.groups(i, count))
            .filter(|g| opts.only.is_empty() || opts.only.contains(&g.base))
            .collect()
    };
    let (search_groups, final_groups) = (select(opts.search_count), select(opts.final_count));
    let bases: Vec<&str> = runs
        .iter()
        .flat_map(|r| r.data.files.iter().map(|f| f.base.as_str()))
        .collect();
    for (what, list) in [("--only", &opts.only), ("--holdout", &opts.holdout)] {
        if let Some(unknown) = list.iter().find(|b| !bases.contains(&b.as_str())) {
            let mut known: Vec<&str> = bases.iter().copied().filter(|b| !b.ends_with("_cdf")).collect();
            known.sort();
            known.dedup();
            return Err(FitError::Input(format!(
                "{what} {unknown}: no such group in the measurements; they hold {}",
                known.join(", ")
            )));
        }
    }
    let fitting: Vec<&Group> = search_groups
        .iter()
        .filter(|g| !opts.holdout.contains(&g.base))
        .collect();
    let run_labels: Vec<(String, Iommu)> = runs.iter().map(|r| (r.label.clone(), r.iommu)).collect();
    // Each candidate base as the measurements configured its link.
    let mut candidates: Vec<(HostProfile, Value)> = Vec::new();
    for b in &opts.bases {
        let mut v = serde_json::to_value(b).map_err(|e| FitError::Run(e.to_string()))?;
        if let Some(m) = &mps {
            v["link"]["max_mps"] = Value::from(m.bytes);
        }
        let host = profile_toml::checked(&v).map_err(|e| FitError::Input(e.to_string()))?;
        candidates.push((host, v));
    }
    let choice_count = (opts.search_count / 4).clamp(1000.min(opts.search_count), opts.search_count);
    let choice_groups: Vec<Group> = if candidates.len() > 1 {
        select(choice_count)
            .into_iter()
            .filter(|g| !opts.holdout.contains(&g.base))
            .collect()
    } else {
        Vec::new()
    };
    let choice_tests: u64 = choice_groups.iter().map(|g| g.tests.len() as u64).sum();
    // The keys the fitting groups identify, each with the tests of its groups that do.
    let identified: Vec<(&FitKey, Vec<Group>)> = KEYS
        .iter()
        .map(|k| {
            let gs: Vec<Group> = fitting
                .iter()
                .filter_map(|g| g.identifying(k, runs[g.run].iommu))
                .collect();
            (k, gs)
        })
        .filter(|(_, gs)| !gs.is_empty())
        .collect();
    let too_few = || {
        let groups: Vec<String> = fitting.iter().map(|g| label(&runs, g)).collect();
        let wanted: Vec<&str> = KEYS.iter().flat_map(|k| k.groups.iter().copied()).collect();
        let mut wanted: Vec<&str> = wanted.into_iter().collect();
        wanted.sort();
        wanted.dedup();
        FitError::Input(format!(
            "too few groups to identify any host parameter: the fit has {}; it needs at least one of {} (by prefix), or a table of another name holding tests like theirs (pcie-bench's paper suite: docs/simulator.md)",
            if groups.is_empty() {
                "none".into()
            } else {
                groups.join(", ")
            },
            wanted.join(", ")
        ))
    };
    if identified.is_empty() {
        return Err(too_few());
    }
    const PASSES: usize = 2;
    // A bound: the chosen base may lack a mechanism (power states) the groups identify.
    let planned_search: u64 = identified
        .iter()
        .map(|(_, gs)| gs.iter().map(|g| g.tests.len() as u64).sum::<u64>())
        .sum::<u64>()
        * (PASSES * search::MAX_EVALUATIONS) as u64;
    let final_tests: u64 = final_groups.iter().map(|g| g.tests.len() as u64).sum();
    let mut state = FitProgress {
        simulations: 0,
        planned: planned_search + 2 * final_tests + choice_tests * candidates.len() as u64,
        stage: String::new(),
    };
    let mut report_progress = |state: &mut FitProgress, tests: usize, stage: String| {
        state.simulations += tests as u64;
        state.stage = stage;
        progress(state);
    };
    let mut base_scores = Vec::new();
    if candidates.len() > 1 {
        let refs: Vec<&Group> = choice_groups.iter().collect();
        for (host, _) in &candidates {
            // A host that cannot run the tests (a single socket for a remote placement) is
            // no candidate.
            let loss = SimBackend::from_profiles(host.clone(), opts.device.clone())
                .ok()
                .and_then(|b| score(&b, &refs, &run_labels, opts.seed, opts.threads).ok())
                .map_or(f64::INFINITY, |s| mean_loss(&s));
            report_progress(
                &mut state,
                choice_tests as usize,
                format!("choosing the base: {} loss {loss:.2}", host.name),
            );
            base_scores.push(BaseScore {
                name: host.name.clone(),
                loss,
            });
        }
    }
    let chosen = (0..candidates.len())
        .min_by(|&a, &b| {
            let l = |i: usize| base_scores.get(i).map_or(0.0, |s: &BaseScore| s.loss);
            l(a).total_cmp(&l(b))
        })
        .ok_or_else(|| FitError::Input("no base host profile to start from".into()))?;
    let (base_host, base_value) = candidates.swap_remove(chosen);
    let plan: Vec<(&FitKey, Vec<Group>)> = identified
        .into_iter()
        .filter(|(k, _)| keys::get(&base_value, k.name).is_some())
        .collect();
    if plan.is_empty() {
        return Err(too_few());
    }
    let mut current = base_value.clone();
    // Keys whose loss was a number at no value tried: kept, never labelled fitted.
    let mut no_loss: Vec<&str> = Vec::new();
    for pass in 0..PASSES {
        let frac = if pass == 0 { 0.3 } else { 0.1 };
        for (key, gs) in &plan {
            let Some(start) = keys::get(&current, key.name) else {
                continue;
            };
            let gs: Vec<&Group> = gs.iter().collect();
            let tests: usize = gs.iter().map(|g| g.tests.len()).sum();
            let mut failure = None;
            let mut finite = false;
            let mut loss = |x: f64| -> f64 {
                let mut candidate = current.clone();
                keys::set(&mut candidate, key.name, x, key.scale);
                let Some(backend) = profile_toml::checked(&candidate)
                    .ok()
                    .and_then(|h| SimBackend::from_profiles(h, opts.device.clone()).ok())
                else {
                    // Outside the loader's ranges or the time base: not a candidate.
                    return f64::INFINITY;
                };
                let scores = match score(&backend, &gs, &run_labels, opts.seed, opts.threads) {
                    Ok(s) => s,
                    Err(e) => {
                        failure = Some(e);
                        return f64::INFINITY;
                    }
                };
                let l = mean_loss(&scores);
                finite |= l.is_finite();
                report_progress(
                    &mut state,
                    tests,
                    format!("pass {} {} = {x:.4}: loss {l:.2}", pass + 1, key.name),
                );
                l
            };
            let (best, _) = search::minimise(key, start, frac, &mut loss);
            if let Some(e) = failure {
                return Err(e);
            }
            no_loss.retain(|n| *n != key.name);
            if !finite {
                no_loss.push(key.name);
                continue;
            }
            keys::set(&mut current, key.name, best, key.scale);
        }
    }
    let fitted = profile_toml::checked(&current).map_err(|e| FitError::Run(e.to_string()))?;
    let final_refs: Vec<&Group> = final_groups.iter().collect();
    let mut compare = |host: &HostProfile, what: &str| -> Result<Vec<GroupScore>, FitError> {
        let backend =
            SimBackend::from_profiles(host.clone(), opts.device.clone()).map_err(|e| FitError::Input(e.to_string()))?;
        let s = score(&backend, &final_refs, &run_labels, opts.seed, opts.threads)?;
        report_progress(&mut state, final_tests as usize, format!("comparing the {what} host"));
        Ok(s)
    };
    let before = compare(&base_host, "base")?;
    let after = compare(&fitted, "fitted")?;
    let verdicts = |s: &[GroupScore]| s.iter().flat_map(GroupScore::verdicts).collect::<Vec<_>>();
    let (verdicts_before, verdicts_after) = (verdicts(&before), verdicts(&after));
    let unreached = verdicts_after
        .iter()
        .filter(|v| !v.met)
        .map(|v| {
            let group = final_groups
                .iter()
                .find(|g| runs[g.run].label == v.run && g.base == v.base);
            Unreached {
                verdict: v.clone(),
                held_out: opts.holdout.contains(&v.base),
                mechanisms: KEYS
                    .iter()
                    .filter(|k| group.is_some_and(|g| g.identifying(k, runs[g.run].iommu).is_some()))
                    .map(|k| format!("{} ({})", k.mechanism, k.name))
                    .collect(),
            }
        })
        .collect();
    let measured_keys = mps.iter().map(|m| KeyResult {
        name: "link.max_mps".into(),
        mechanism: "Max Payload Size of the path, as configured".into(),
        base: Some(f64::from(opts.bases[chosen].link.max_mps)),
        fitted: Some(f64::from(m.bytes)),
        fixed_by: vec![m.source.clone()],
        note: String::new(),
        measured: true,
    });
    let key_results: Vec<KeyResult> = measured_keys
        .chain(KEYS.iter().map(|k| {
            let gs = plan
                .iter()
                .find(|(p, _)| p.name == k.name && !no_loss.contains(&k.name))
                .map(|(_, gs)| gs);
            let base = keys::get(&base_value, k.name);
            let note = match (base, gs) {
                (None, _) => format!("the base host {} has no such mechanism", base_host.name),
                (Some(_), None) if no_loss.contains(&k.name) => format!(
                    "kept from {}: the loss of its groups was not a number at any value tried",
                    base_host.name
                ),
                (Some(_), None) => format!(
                    "kept from {}: no group the fit uses identifies it (it needs {}, or tests like theirs in a table of another name{})",
                    base_host.name,
                    k.groups.join(", "),
                    if k.needs_iommu {
                        ", measured with the IOMMU on"
                    } else {
                        ""
                    }
                ),
                (Some(_), Some(_)) => String::new(),
            };
            KeyResult {
                name: k.name.into(),
                mechanism: k.mechanism.into(),
                base,
                fitted: gs.and_then(|_| keys::get(&current, k.name)),
                fixed_by: gs.map_or_else(Vec::new, |gs| gs.iter().map(|g| label(&runs, g)).collect()),
                note,
                measured: false,
            }
        }))
        .collect();
    let spread = spread::spreads(&after);
    let runs_named: Vec<String> = runs
        .iter()
        .map(|r| format!("{} (IOMMU {})", r.label, r.iommu.name()))
        .collect();
    let profile_toml = write_profile(
        opts,
        &base_host.name,
        &current,
        &key_results,
        &runs_named,
        state.simulations,
    )?;
    Ok(FitReport {
        runs: runs_named,
        base: base_host.name.clone(),
        base_scores,
        fit_groups: fitting.iter().map(|g| label(&runs, g)).collect(),
        holdout_groups: search_groups
            .iter()
            .filter(|g| opts.holdout.contains(&g.base))
            .map(|g| label(&runs, g))
            .collect(),
        keys: key_results,
        search_count: opts.search_count,
        final_count: opts.final_count,
        simulations: state.simulations,
        before,
        after,
        verdicts_before,
        verdicts_after,
        unreached,
        spread,
        profile_toml,
    })
}

/// The fitted profile as commented TOML, checked by loading it back.
fn write_profile(
    opts: &FitOptions,
    base: &str,
    fitted: &Value,
    keys: &[KeyResult],
    runs: &[String],
    simulations: u64,
) -> Result<String, FitError> {
    let mut v = fitted.clone();
    v["name"] = Value::from(opts.name.clone());
    v["description"] = Value::from(format!(
        "{} fitted by pcieperf sim fit to {} with device {}",
        base,
        runs.join(", "),
        opts.device.name
    ));
    if let Some(Value::Array(sources)) = v.get_mut("sources") {
        sources.truncate(31);
        sources.push(Value::from(format!("measurements: {}", runs.join(", "))));
    }
    let header = vec![
        format!(
            "Host profile fitted by `pcieperf sim fit` (seed {}, {simulations} simulations)",
            opts.seed
        ),
        format!("from {} with device profile {},", runs.join(", "), opts.device.name),
        format!(
            "starting from host profile {base}. Keys marked \"fitted\" were searched within the loader's ranges,"
        ),
        "keys marked \"measured\" were read from the runs, every other value is the base's. Load it with --backend sim:THIS.toml,DEVICE.".into(),
    ];
    let comment = |dotted: &str| -> Option<String> {
        let k = keys
            .iter()
            .find(|k| k.name == dotted || k.name.starts_with(&format!("{dotted}.")))?;
        Some(match k.fitted {
            Some(x) if k.measured => format!(
                "measured ({}): {x} from {} by {}",
                k.mechanism,
                k.base.map_or("-".into(), |b| b.to_string()),
                k.fixed_by.join(", ")
            ),
            Some(x) => format!(
                "fitted ({}): {x} from {} by {}",
                k.mechanism,
                k.base.map_or("-".into(), |b| b.to_string()),
                k.fixed_by.join(", ")
            ),
            None if k.base.is_some() => format!("not fitted ({}): {}", k.mechanism, k.note),
            None => return None,
        })
    };
    let text = profile_toml::to_toml(&v, &header, &comment);
    profile_toml::from_toml(&format!("{}.toml", opts.name), &text).map_err(|e| FitError::Input(e.to_string()))?;
    Ok(text)
}
