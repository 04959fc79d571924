//! How far one run is from another, point by point: the statistics `pcieperf bench report
//! --compare` tabulates and the simulator's calibration check applies.
//!
//! Points are matched by file and the seven key columns (`Test,PAT,Cache,HO,DO,WinSZ,SZ`), so a
//! simulator run and a pcie-bench data directory of the same suite line up. Differences are
//! `(other − first) / first`; the mean absolute percentage error per file, test, cache state and
//! metric is [`ErrorStats`], and CDFs are compared by their Kolmogorov–Smirnov distance.
//! Runs whose rows mean different things are not compared at all: a GPU's copy-engine run
//! (`--engine ce`: one copy per transfer, queued by the driver) against DMAs a device issues.

use crate::params::{CacheState, TestKind};
use crate::results::{ResultData, RowKey, RunData};
use crate::stats::ks_distance;
use serde::Serialize;

/// What a difference is measured on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Metric {
    Gbps,
    MedianNs,
    MinNs,
    P95Ns,
}

impl Metric {
    /// The metric as a table heading names it.
    pub fn label(self) -> &'static str {
        match self {
            Metric::Gbps => "BW (Gb/s)",
            Metric::MedianNs => "median (ns)",
            Metric::MinNs => "min (ns)",
            Metric::P95Ns => "p95 (ns)",
        }
    }
}

/// One matched point.
#[derive(Debug, Clone, Serialize)]
pub struct Difference {
    pub file: String,
    #[serde(flatten)]
    pub key: RowKey,
    pub metric: Metric,
    pub first: f64,
    pub other: f64,
    /// `(other − first) / first × 100`.
    pub diff_pct: f64,
}

/// Mean and largest absolute percentage difference over a set of points (MAPE and worst case).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct ErrorStats {
    pub points: usize,
    pub mape_pct: f64,
    pub max_abs_pct: f64,
}

impl ErrorStats {
    /// Adds one point's difference, in percent (its sign is ignored).
    pub fn add(&mut self, diff_pct: f64) {
        let abs = diff_pct.abs();
        // Running mean, so the summary needs no second pass.
        self.points += 1;
        self.mape_pct += (abs - self.mape_pct) / self.points as f64;
        self.max_abs_pct = self.max_abs_pct.max(abs);
    }

    /// Adds another set's points, as if each had been added here.
    pub fn merge(&mut self, other: &ErrorStats) {
        let points = self.points + other.points;
        if points > 0 {
            self.mape_pct = (self.mape_pct * self.points as f64 + other.mape_pct * other.points as f64) / points as f64;
        }
        self.points = points;
        self.max_abs_pct = self.max_abs_pct.max(other.max_abs_pct);
    }
}

/// `(other − first) / first × 100`.
pub fn diff_pct(first: f64, other: f64) -> f64 {
    (other - first) / first * 100.0
}

/// The differences of one file, test, cache state and metric.
#[derive(Debug, Clone, Serialize)]
pub struct GroupError {
    pub file: String,
    pub test: TestKind,
    pub cache: CacheState,
    pub metric: Metric,
    #[serde(flatten)]
    pub error: ErrorStats,
}

/// Kolmogorov–Smirnov distance between the two runs' CDFs of one test.
#[derive(Debug, Clone, Serialize)]
pub struct CdfDistance {
    pub file: String,
    /// The test the section belongs to, when the matching latency file names it.
    pub key: Option<RowKey>,
    pub section: usize,
    pub ks: f64,
}

/// Everything `--compare` reports for one other run.
#[derive(Debug, Clone, Serialize)]
pub struct RunComparison {
    pub first: String,
    pub other: String,
    pub summary: Vec<GroupError>,
    pub cdfs: Vec<CdfDistance>,
    /// Largest absolute difference first.
    pub differences: Vec<Difference>,
    /// Points of the first run with no counterpart in the other, plus the reverse.
    pub unmatched: usize,
    /// Why the runs were not compared (their rows measure different transfers); then there
    /// are no differences.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub refused: Option<String>,
}

/// What a run's rows measure: copies by a GPU's copy engines (`--engine ce`, recorded in
/// `run.json` as the device's `engine`) or DMAs a device issues (pcie-bench's devices, the
/// simulator, a GPU's threads with `--engine sm`).
pub fn transfers(run: &RunData) -> &'static str {
    match run.gpu_engine() {
        Some(crate::Engine::Ce) => "copies by a GPU's copy engines (--engine ce)",
        _ => "DMAs a device issues",
    }
}

fn metrics(data: &ResultData, i: usize) -> Vec<(RowKey, Metric, f64)> {
    match data {
        ResultData::Bandwidth(rows) => vec![(rows[i].key, Metric::Gbps, rows[i].bw_gbps)],
        ResultData::Latency(rows) => {
            let r = &rows[i];
            vec![
                (r.key, Metric::MedianNs, r.med_ns),
                (r.key, Metric::MinNs, r.min_ns),
                (r.key, Metric::P95Ns, r.p95_ns),
            ]
        }
        ResultData::Cdf(_) => vec![],
    }
}

fn rows(data: &ResultData) -> usize {
    match data {
        ResultData::Bandwidth(r) => r.len(),
        ResultData::Latency(r) => r.len(),
        ResultData::Cdf(_) => 0,
    }
}

fn points(run: &RunData) -> Vec<(String, RowKey, Metric, f64)> {
    run.files
        .iter()
        .flat_map(|f| {
            (0..rows(&f.data)).flat_map(move |i| {
                metrics(&f.data, i)
                    .into_iter()
                    .map(move |(k, m, v)| (f.base.clone(), k, m, v))
            })
        })
        .collect()
}

/// The latency keys a CDF file's sections belong to (`<base>_cdf` ↔ `<base>`).
fn cdf_keys(run: &RunData, cdf_base: &str) -> Option<Vec<RowKey>> {
    match run.get(cdf_base.strip_suffix("_cdf")?)? {
        ResultData::Latency(rows) => Some(rows.iter().map(|r| r.key).collect()),
        _ => None,
    }
}

fn cdf_distances(first: &RunData, other: &RunData) -> Vec<CdfDistance> {
    let mut out = Vec::new();
    for f in &first.files {
        let (ResultData::Cdf(a), Some(ResultData::Cdf(b))) = (&f.data, other.get(&f.base)) else {
            continue;
        };
        let (ka, kb) = (cdf_keys(first, &f.base), cdf_keys(other, &f.base));
        for (i, sa) in a.iter().enumerate() {
            // Sections pair up by the test they belong to, or by position when neither run says.
            let (j, key) = match (&ka, &kb) {
                (Some(ka), Some(kb)) => match ka.get(i).and_then(|k| kb.iter().position(|x| x == k)) {
                    Some(j) => (j, ka.get(i).copied()),
                    None => continue,
                },
                _ => (i, None),
            };
            if let Some(sb) = b.get(j) {
                out.push(CdfDistance {
                    file: f.base.clone(),
                    key,
                    section: i + 1,
                    ks: ks_distance(&sa.points, &sb.points),
                });
            }
        }
    }
    out
}

/// Compares `other` with `first`.
pub fn compare(first: &RunData, other: &RunData, names: (&str, &str)) -> RunComparison {
    let (ta, tb) = (transfers(first), transfers(other));
    if ta != tb {
        return RunComparison {
            first: names.0.to_string(),
            other: names.1.to_string(),
            summary: Vec::new(),
            cdfs: Vec::new(),
            differences: Vec::new(),
            unmatched: 0,
            refused: Some(format!(
                "not compared: {}'s rows are {ta}, {}'s are {tb}; the same test and size mean different transfers",
                names.0, names.1
            )),
        };
    }
    let a = points(first);
    let b = points(other);
    let key = |(f, k, m, _): &(String, RowKey, Metric, f64)| (f.clone(), *k, *m);
    let index: std::collections::HashMap<_, f64> = b.iter().map(|p| (key(p), p.3)).collect();
    let in_first: std::collections::HashSet<_> = a.iter().map(key).collect();
    // Counted from the keys, so repeated rows in a file cannot make the count go negative.
    let unmatched = a.iter().filter(|p| !index.contains_key(&key(p))).count()
        + b.iter().filter(|p| !in_first.contains(&key(p))).count();
    let mut differences = Vec::new();
    for p in &a {
        let Some(&vb) = index.get(&key(p)) else { continue };
        let (file, key, metric, va) = p;
        if *va != 0.0 && va.is_finite() && vb.is_finite() {
            differences.push(Difference {
                file: file.clone(),
                key: *key,
                metric: *metric,
                first: *va,
                other: vb,
                diff_pct: diff_pct(*va, vb),
            });
        }
    }
    let mut summary: Vec<GroupError> = Vec::new();
    for d in &differences {
        let group = |s: &&mut GroupError| {
            s.file == d.file && s.test == d.key.test && s.cache == d.key.cache && s.metric == d.metric
        };
        match summary.iter_mut().find(group) {
            Some(s) => s.error.add(d.diff_pct),
            None => {
                let mut error = ErrorStats::default();
                error.add(d.diff_pct);
                summary.push(GroupError {
                    file: d.file.clone(),
                    test: d.key.test,
                    cache: d.key.cache,
                    metric: d.metric,
                    error,
                });
            }
        }
    }
    differences.sort_by(|x, y| y.diff_pct.abs().total_cmp(&x.diff_pct.abs()));
    RunComparison {
        first: names.0.to_string(),
        other: names.1.to_string(),
        summary,
        cdfs: cdf_distances(first, other),
        differences,
        unmatched,
        refused: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::params::Pattern;
    use crate::results::{BandwidthRow, CdfSection, LatencyRow, ResultFile};

    fn key(test: TestKind, size: u32) -> RowKey {
        RowKey {
            test,
            pattern: Pattern::Seq,
            cache: CacheState::HWarm,
            host_offset: 0,
            device_offset: 0,
            window: 8192,
            size,
        }
    }

    fn bw(size: u32, gbps: f64) -> BandwidthRow {
        BandwidthRow {
            key: key(TestKind::BwRd, size),
            time_ns: 1.0,
            bytes: 1,
            trans: 1,
            bw_gbps: gbps,
            trans_per_sec: 1.0,
        }
    }

    fn lat(size: u32, med: f64) -> LatencyRow {
        LatencyRow {
            key: key(TestKind::LatRd, size),
            tavg_ns: med,
            avg_ns: med,
            med_ns: med,
            min_ns: med - 10.0,
            max_ns: med * 2.0,
            p95_ns: med + 10.0,
            p99_ns: None,
            p999_ns: med * 1.5,
            outliers: 0,
            samples: 100,
        }
    }

    fn run(files: Vec<(&str, ResultData)>) -> RunData {
        RunData {
            dir: "x".into(),
            info: None,
            files: files
                .into_iter()
                .map(|(b, data)| ResultFile {
                    base: b.into(),
                    data,
                    lines: Vec::new(),
                })
                .collect(),
            netfpga: false,
        }
    }

    /// A run of `backend` whose run.json records `description`.
    fn recorded(files: Vec<(&str, ResultData)>, description: serde_json::Value) -> RunData {
        let mut r = run(files);
        r.info = Some(crate::RunInfo {
            tool: "pcieperf".into(),
            version: "0".into(),
            command_line: vec![],
            suite: "quick".into(),
            seed: 0,
            backend: crate::BackendInfo {
                name: "cuda".into(),
                description,
                max_transfer: 4096,
            },
            link: None,
            numa: Default::default(),
            iommu: Default::default(),
            host: Default::default(),
            start_time: "1970-01-01T00:00:00Z".into(),
            end_time: None,
            left_out: Vec::new(),
        });
        r
    }

    #[test]
    fn copy_engine_rows_are_not_compared_with_dma_rows() {
        let files = || vec![("bw", ResultData::Bandwidth(vec![bw(64, 20.0), bw(128, 40.0)]))];
        let sm = recorded(files(), serde_json::json!({"device": {"engine": "sm"}}));
        let ce = recorded(files(), serde_json::json!({"device": {"engine": "ce"}}));
        let sim = run(files());
        let c = compare(&sm, &ce, ("quick-sm", "quick-ce"));
        assert_eq!(
            c.refused.as_deref(),
            Some(
                "not compared: quick-sm's rows are DMAs a device issues, quick-ce's are copies by a GPU's \
                 copy engines (--engine ce); the same test and size mean different transfers"
            )
        );
        assert!(c.differences.is_empty() && c.summary.is_empty() && c.unmatched == 0);
        assert!(compare(&ce, &sim, ("a", "b")).refused.is_some());
        // Like with like is compared: two ce runs, or a GPU's threads against the simulator.
        assert_eq!(compare(&ce, &ce, ("a", "b")).differences.len(), 2);
        let c = compare(&sim, &sm, ("a", "b"));
        assert!(c.refused.is_none() && c.differences.len() == 2);
        assert!(serde_json::to_value(&c).unwrap().get("refused").is_none());
    }

    #[test]
    fn differences_are_relative_to_the_first_run_and_sorted_by_size() {
        let a = run(vec![
            (
                "bw",
                ResultData::Bandwidth(vec![bw(64, 20.0), bw(128, 40.0), bw(256, 50.0)]),
            ),
            ("lat", ResultData::Latency(vec![lat(64, 500.0)])),
        ]);
        let b = run(vec![
            // 512 B has no counterpart in the first run.
            (
                "bw",
                ResultData::Bandwidth(vec![bw(64, 21.0), bw(128, 36.0), bw(512, 1.0)]),
            ),
            ("lat", ResultData::Latency(vec![lat(64, 550.0)])),
        ]);
        let c = compare(&a, &b, ("a", "b"));
        let pcts: Vec<f64> = c.differences.iter().map(|d| d.diff_pct).collect();
        // lat median +10 %, bw 128 −10 %, bw 64 +5 %, min 490→540, p95 510→560.
        assert_eq!(c.differences[0].metric, Metric::MinNs);
        assert!((pcts[0] - 50.0 / 490.0 * 100.0).abs() < 1e-9);
        assert!(pcts.windows(2).all(|w| w[0].abs() >= w[1].abs()));
        assert!(pcts.iter().any(|p| (p + 10.0).abs() < 1e-9));
        // 256 B of the first and 512 B of the other are unmatched.
        assert_eq!(c.unmatched, 2);
        let s = c.summary.iter().find(|s| s.metric == Metric::Gbps).unwrap();
        assert_eq!(s.error.points, 2);
        assert!((s.error.mape_pct - 7.5).abs() < 1e-9);
        assert!((s.error.max_abs_pct - 10.0).abs() < 1e-9);
        assert_eq!(c.summary.len(), 4);
    }

    #[test]
    fn cdf_sections_pair_by_test() {
        let step = |at: f64| CdfSection {
            points: vec![(at, 0.0), (at, 0.5), (at + 10.0, 1.0)],
        };
        let a = run(vec![
            ("d", ResultData::Latency(vec![lat(64, 500.0), lat(128, 600.0)])),
            ("d_cdf", ResultData::Cdf(vec![step(500.0), step(600.0)])),
        ]);
        // The other run lists the two tests in the opposite order.
        let b = run(vec![
            ("d", ResultData::Latency(vec![lat(128, 600.0), lat(64, 500.0)])),
            ("d_cdf", ResultData::Cdf(vec![step(600.0), step(505.0)])),
        ]);
        let c = compare(&a, &b, ("a", "b"));
        assert_eq!(c.cdfs.len(), 2);
        assert_eq!(c.cdfs[0].key.unwrap().size, 64);
        assert!((c.cdfs[0].ks - 0.5).abs() < 1e-9);
        assert_eq!(c.cdfs[1].ks, 0.0);
    }

    #[test]
    fn error_stats_are_the_mean_and_largest_absolute_difference() {
        // The calibration example's figures: |sim − measured| / measured, averaged and maximised.
        let pairs = [(100.0, 103.0), (50.0, 45.0), (20.0, 20.5), (7.0, 9.0)];
        let mut e = ErrorStats::default();
        for (measured, sim) in pairs {
            e.add(diff_pct(measured, sim));
        }
        let abs: Vec<f64> = pairs.iter().map(|(m, s)| (s - m).abs() / m * 100.0).collect();
        assert_eq!(e.points, 4);
        assert!((e.mape_pct - abs.iter().sum::<f64>() / 4.0).abs() < 1e-12);
        assert_eq!(e.max_abs_pct, abs.iter().copied().fold(0.0, f64::max));
        assert_eq!(diff_pct(50.0, 45.0), -10.0);
        // Merging two halves gives the whole.
        let (mut a, mut b) = (ErrorStats::default(), ErrorStats::default());
        for (i, (measured, sim)) in pairs.into_iter().enumerate() {
            [&mut a, &mut b][i % 2].add(diff_pct(measured, sim));
        }
        a.merge(&b);
        assert_eq!(a.points, 4);
        assert!((a.mape_pct - e.mape_pct).abs() < 1e-12);
        assert_eq!(a.max_abs_pct, e.max_abs_pct);
    }
}
