//! CDF files (`<base>_cdf.csv`): `cycles,ns,cdf` sections concatenated in test order, each
//! starting with its first value at fraction 0, as pcie-bench writes them.

use super::csv::{self, CsvTable};
use super::ResultsError;
use crate::stats::CdfPoint;
use serde::Serialize;

pub(super) const HEADER: &str = "cycles,ns,cdf";

pub(super) fn format_section(points: &[CdfPoint]) -> String {
    points
        .iter()
        .map(|p| csv::line([p.cycles.to_string(), p.ns.to_string(), p.cdf.to_string()]))
        .collect()
}

/// The CDF of one test: `(ns, cumulative fraction)`, ascending. Sections follow the order of
/// the rows of the matching `<base>.csv`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CdfSection {
    pub points: Vec<(f64, f64)>,
}

/// Splits at the fraction-0 rows that open every section.
pub(super) fn parse(t: &CsvTable) -> Result<Vec<CdfSection>, ResultsError> {
    let ns = t.column(&["ns"])?;
    let cdf = t.column(&["cdf"])?;
    let mut sections: Vec<CdfSection> = Vec::new();
    for r in &t.rows {
        let point = (t.float(r, &ns)?, t.float(r, &cdf)?);
        if point.1 > 1.0 {
            return Err(t.err(r, &cdf, format!("{} is above 1: not a fraction", point.1)));
        }
        match sections.last_mut() {
            Some(s) if point.1 != 0.0 => s.points.push(point),
            _ => sections.push(CdfSection { points: vec![point] }),
        }
    }
    Ok(sections)
}
