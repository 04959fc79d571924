//! `--compare`: the other runs' measured series on the first run's charts, each named after its
//! run's letter.

use super::RunChart;
use pcie_report::{Axis, Scale, Series, SeriesKind};

/// Runs are named A, B, C, ... in legends; the description says which directory each is.
pub fn run_letter(i: usize) -> String {
    char::from(b'A' + (i % 26) as u8).to_string()
}

/// Adds the compared runs' measured series to the first run's charts of the same name, each
/// series prefixed with its run's letter; model and line-rate curves stay the first run's.
pub(super) fn overlay(drawn: &mut [RunChart], others: &[Vec<RunChart>]) {
    let measured = |s: &Series| s.kind != SeriesKind::Reference;
    for d in drawn.iter_mut() {
        let matches: Vec<(usize, &RunChart)> = others
            .iter()
            .enumerate()
            .filter_map(|(i, o)| {
                o.iter()
                    .find(|x| x.name == d.name && x.heading == d.heading)
                    .map(|x| (i, x))
            })
            .collect();
        if matches.is_empty() {
            continue;
        }
        let (mine, refs): (Vec<Series>, Vec<Series>) =
            std::mem::take(&mut d.chart.series).into_iter().partition(measured);
        let tag = |letter: &str, s: &Series| Series {
            name: format!("{letter}: {}", s.name),
            ..s.clone()
        };
        d.chart.series = mine.iter().map(|s| tag("A", s)).collect();
        for (i, o) in matches {
            let letter = run_letter(i + 1);
            d.chart
                .series
                .extend(o.chart.series.iter().filter(|s| measured(s)).map(|s| tag(&letter, s)));
            // A run with a longer tail (a log axis, or a later end) widens the shared axis, and
            // its notes say why.
            if wider(&o.chart.x, &d.chart.x) {
                d.chart.x = o.chart.x.clone();
                d.notes = o.notes.iter().map(|n| format!("{letter}: {n}")).collect();
            }
        }
        d.chart.series.extend(refs);
    }
}

/// True when axis `a` shows more than `b`: logarithmic against linear, or a linear one that
/// ends later (or not at all).
fn wider(a: &Axis, b: &Axis) -> bool {
    match (a.scale, b.scale) {
        (Scale::Log10, Scale::Linear) => true,
        (Scale::Linear, Scale::Linear) => match (a.max, b.max) {
            (None, Some(_)) => true,
            (Some(x), Some(y)) => x > y,
            _ => false,
        },
        _ => false,
    }
}
