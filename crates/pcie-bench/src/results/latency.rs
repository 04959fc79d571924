//! Latency tables: pcie-bench's 23 columns plus the 99th percentile in cycles and ns.

use super::csv::{self, CsvTable};
use super::key::{self, KeyColumns, RowKey};
use super::ResultsError;
use crate::params::TestParams;
use crate::stats::{LatencyStats, Summary};
use serde::Serialize;

pub(super) fn header() -> String {
    format!(
        "{},TAvg,Avg,Med,Min,Max,95%,99%,99.9%,TAvg(ns),Avg(ns),Med(ns),Min(ns),Max(ns),95%(ns),99%(ns),99.9%(ns),#outliers,#samples",
        key::HEADER
    )
}

/// One CSV line, with its line end.
pub(super) fn format_row(p: &TestParams, s: &LatencyStats) -> String {
    let figures = |m: &Summary| [m.tavg, m.avg, m.median, m.min, m.max, m.p95, m.p99, m.p999].map(|v| v.to_string());
    let key = RowKey::from(p).fields();
    let counts = [s.outliers.to_string(), s.samples.to_string()];
    csv::line(
        key.iter()
            .chain(&figures(&s.cycles))
            .chain(&figures(&s.ns))
            .chain(&counts),
    )
}

/// One latency result, in ns. pcie-bench files have no 99th percentile.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LatencyRow {
    #[serde(flatten)]
    pub key: RowKey,
    pub tavg_ns: f64,
    pub avg_ns: f64,
    pub med_ns: f64,
    pub min_ns: f64,
    pub max_ns: f64,
    pub p95_ns: f64,
    pub p99_ns: Option<f64>,
    pub p999_ns: f64,
    pub outliers: u64,
    pub samples: u64,
}

/// Reads the ns columns; the cycle columns are not needed and may be absent.
pub(super) fn parse(t: &CsvTable) -> Result<Vec<LatencyRow>, ResultsError> {
    let keys = KeyColumns::locate(t)?;
    let col = |n: &str| t.column(&[n]);
    let (tavg, avg, med, min, max) = (
        col("TAvg(ns)")?,
        col("Avg(ns)")?,
        col("Med(ns)")?,
        col("Min(ns)")?,
        col("Max(ns)")?,
    );
    let (p95, p999, outliers, samples) = (col("95%(ns)")?, col("99.9%(ns)")?, col("#outliers")?, col("#samples")?);
    let p99 = t.optional(&["99%(ns)"]);
    t.rows
        .iter()
        .map(|r| {
            let k = keys.read(t, r)?;
            let (n, out) = (t.uint(r, &samples)?, t.uint(r, &outliers)?);
            if n == 0 {
                return Err(t.err(r, &samples, "0: a latency row needs at least 1 sample".into()));
            }
            if out > n {
                return Err(t.err(r, &outliers, format!("{out} outliers of {n} samples")));
            }
            Ok(LatencyRow {
                key: k,
                tavg_ns: t.float(r, &tavg)?,
                avg_ns: t.float(r, &avg)?,
                med_ns: t.float(r, &med)?,
                min_ns: t.float(r, &min)?,
                max_ns: t.float(r, &max)?,
                p95_ns: t.float(r, &p95)?,
                p99_ns: p99.as_ref().map(|c| t.float(r, c)).transpose()?,
                p999_ns: t.float(r, &p999)?,
                outliers: out,
                samples: n,
            })
        })
        .collect()
}
