//! The latency CDF chart (the paper's Figure 6): a log axis for long tails, a cut linear axis
//! when a few outliers would squash the curves.

use super::labels::{bytes_label, group_count, latency_label};
use super::RunChart;
use crate::results::{CdfSection, LatencyRow};
use pcie_report::{Axis, Chart, Point, Series};

/// The smallest of 1, 2, 2.5, 5 times a power of ten that is at least `v` (> 0).
pub(super) fn nice_ceil(v: f64) -> f64 {
    let p = 10f64.powf(v.log10().floor());
    [1.0, 2.0, 2.5, 5.0, 10.0]
        .into_iter()
        .map(|m| m * p)
        .find(|x| *x >= v)
        .unwrap_or(10.0 * p)
}

/// The first x at which a CDF reaches `q`.
pub(super) fn quantile(points: &[(f64, f64)], q: f64) -> Option<f64> {
    points.iter().find(|p| p.1 >= q).or(points.last()).map(|p| p.0)
}

/// CDFs, one step series per section, named from the matching latency rows (Figure 6).
pub(super) fn cdf_chart(base: &str, sections: &[CdfSection], rows: Option<&[LatencyRow]>) -> Option<RunChart> {
    if sections.is_empty() {
        return None;
    }
    let named = rows.filter(|r| r.len() == sections.len());
    let tests = named.map_or(0, |r| group_count(r, |x| x.key.test.csv_name().to_string()));
    let mut long_tail = false;
    let series = sections
        .iter()
        .enumerate()
        .map(|(i, s)| {
            if let (Some(m), Some(t)) = (quantile(&s.points, 0.5), quantile(&s.points, 0.999)) {
                long_tail |= m > 0.0 && t / m > 3.0;
            }
            let name = match named {
                Some(r) => {
                    let r = &r[i];
                    format!(
                        "{} {} {} B",
                        latency_label(r, tests),
                        bytes_label(r.key.window),
                        r.key.size
                    )
                }
                None => format!("section {}", i + 1),
            };
            Series::step(name, s.points.iter().map(|&(x, y)| Point::new(x, y)).collect())
        })
        .collect();
    let label = "Latency (ns)";
    // On a linear axis, a few outliers far out would squash every curve to the left: end the
    // axis past the largest 99.9th percentile and say so.
    let p999 = sections
        .iter()
        .filter_map(|s| quantile(&s.points, 0.999))
        .fold(0.0_f64, f64::max);
    let largest = sections
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.0))
        .fold(0.0_f64, f64::max);
    let cut = (!long_tail && p999 > 0.0 && largest > nice_ceil(p999 * 1.2)).then(|| nice_ceil(p999 * 1.2));
    let mut notes = Vec::new();
    if long_tail {
        notes.push("Log x axis: the 99.9th percentile is more than 3× the median.".to_string());
    }
    if let Some(end) = cut {
        notes.push(format!(
            "The x axis ends at {end} ns, past every 99.9th percentile; the slowest samples reach {largest:.0} ns."
        ));
    }
    Some(RunChart {
        rank: 2,
        name: base.to_string(),
        heading: "Latency CDF".into(),
        chart: Chart {
            title: format!("Latency CDF ({base})"),
            x: match (long_tail, cut) {
                (true, _) => Axis::log10(label),
                (false, Some(end)) => Axis::linear(label).with_range(0.0, end),
                (false, None) => Axis::linear(label),
            },
            y: Axis::linear("Cumulative fraction").with_range(0.0, 1.0),
            series,
        },
        notes,
    })
}
