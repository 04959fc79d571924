//! `bench report --compare`: how far another run is from the first, point by point.
//!
//! Points are matched by file and the seven key columns (`Test,PAT,Cache,HO,DO,WinSZ,SZ`), so a
//! simulator run and a pcie-bench data directory of the same suite line up. Differences are
//! `(other − first) / first`; the summary's mean absolute percentage error per file, test, cache
//! state and metric is the figure the simulator's calibration check prints, and CDFs are compared
//! by their Kolmogorov–Smirnov distance.

use crate::output::{Cell, Table};
use pcie_bench::{ks_distance, CacheState, ResultData, RowKey, RunData, TestKind};
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
    fn label(self) -> &'static str {
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

/// Mean and largest absolute difference over the points of one file, test, cache state and metric.
#[derive(Debug, Clone, Serialize)]
pub struct Summary {
    pub file: String,
    pub test: TestKind,
    pub cache: CacheState,
    pub metric: Metric,
    pub points: usize,
    pub mape_pct: f64,
    pub max_abs_pct: f64,
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
pub struct Comparison {
    pub first: String,
    pub other: String,
    pub summary: Vec<Summary>,
    pub cdfs: Vec<CdfDistance>,
    /// Largest absolute difference first.
    pub differences: Vec<Difference>,
    /// Points of the first run with no counterpart in the other, plus the reverse.
    pub unmatched: usize,
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
pub fn compare(first: &RunData, other: &RunData, names: (&str, &str)) -> Comparison {
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
                diff_pct: (vb - va) / va * 100.0,
            });
        }
    }
    let mut summary: Vec<Summary> = Vec::new();
    for d in &differences {
        let abs = d.diff_pct.abs();
        match summary
            .iter_mut()
            .find(|s| s.file == d.file && s.test == d.key.test && s.cache == d.key.cache && s.metric == d.metric)
        {
            Some(s) => {
                // Running mean, so the summary needs no second pass.
                s.points += 1;
                s.mape_pct += (abs - s.mape_pct) / s.points as f64;
                s.max_abs_pct = s.max_abs_pct.max(abs);
            }
            None => summary.push(Summary {
                file: d.file.clone(),
                test: d.key.test,
                cache: d.key.cache,
                metric: d.metric,
                points: 1,
                mape_pct: abs,
                max_abs_pct: abs,
            }),
        }
    }
    differences.sort_by(|x, y| y.diff_pct.abs().total_cmp(&x.diff_pct.abs()));
    Comparison {
        first: names.0.to_string(),
        other: names.1.to_string(),
        summary,
        cdfs: cdf_distances(first, other),
        differences,
        unmatched,
    }
}

impl Comparison {
    /// MAPE and largest difference per file, test, cache state and metric, in file order.
    pub fn summary_table(&self) -> Table {
        let mut t = Table::new(&[
            ("file", "File"),
            ("test", "Test"),
            ("cache", "Cache"),
            ("metric", "Metric"),
            ("points", "Points"),
            ("mape_pct", "MAPE (%)"),
            ("max_abs_pct", "Max |diff| (%)"),
        ]);
        for s in &self.summary {
            t.push(vec![
                Cell::text(&s.file),
                Cell::text(s.test.csv_name()),
                Cell::text(s.cache.csv_name()),
                Cell::text(s.metric.label()),
                Cell::Int(s.points as u64),
                Cell::num(s.mape_pct, 2),
                Cell::num(s.max_abs_pct, 2),
            ]);
        }
        t
    }

    /// KS distance per CDF section.
    pub fn cdf_table(&self) -> Table {
        let mut t = Table::new(&[("file", "File"), ("section", "Section"), ("test", "Test"), ("ks", "KS")]);
        for c in &self.cdfs {
            t.push(vec![
                Cell::text(&c.file),
                Cell::Int(c.section as u64),
                c.key.map_or(Cell::Empty, |k| Cell::text(k.to_string())),
                Cell::num(c.ks, 3),
            ]);
        }
        t
    }

    /// The first `limit` point differences (all with `None`), largest first.
    pub fn difference_table(&self, limit: Option<usize>) -> Table {
        let mut t = Table::new(&[
            ("file", "File"),
            ("key", "Test,PAT,Cache,HO,DO,WinSZ,SZ"),
            ("metric", "Metric"),
            ("first", "First"),
            ("other", "Other"),
            ("diff_pct", "Diff (%)"),
        ]);
        for d in self.differences.iter().take(limit.unwrap_or(usize::MAX)) {
            t.push(vec![
                Cell::text(&d.file),
                Cell::text(d.key.to_string()),
                Cell::text(d.metric.label()),
                Cell::num(d.first, 2),
                Cell::num(d.other, 2),
                Cell::num(d.diff_pct, 2),
            ]);
        }
        t
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pcie_bench::{BandwidthRow, CdfSection, LatencyRow, Pattern, ResultFile};

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
                .map(|(b, data)| ResultFile { base: b.into(), data })
                .collect(),
        }
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
        assert_eq!(s.points, 2);
        assert!((s.mape_pct - 7.5).abs() < 1e-9);
        assert!((s.max_abs_pct - 10.0).abs() < 1e-9);
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
}
