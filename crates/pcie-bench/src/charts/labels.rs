//! Labels and grouping shared by the chart builders: series named after what varies, sizes as
//! people read them.

use crate::results::LatencyRow;
use pcie_report::Point;

/// Groups items by a label, keeping the order in which labels first appear.
pub(super) fn group_by<T, F: Fn(&T) -> String>(items: &[T], label: F) -> Vec<(String, Vec<&T>)> {
    let mut groups: Vec<(String, Vec<&T>)> = Vec::new();
    for it in items {
        let l = label(it);
        match groups.iter_mut().find(|(g, _)| *g == l) {
            Some((_, v)) => v.push(it),
            None => groups.push((l, vec![it])),
        }
    }
    groups
}

pub(super) fn group_count<T, F: Fn(&T) -> String>(items: &[T], label: F) -> usize {
    group_by(items, label).len()
}

pub(super) fn sorted(mut pts: Vec<Point>) -> Vec<Point> {
    pts.sort_by(|a, b| a.x.total_cmp(&b.x));
    pts
}

/// "8 KB", "64 MB", "1.5 MB": a window size as people read it.
pub(super) fn bytes_label(b: u64) -> String {
    const UNITS: [(u64, &str); 3] = [(1 << 30, "GB"), (1 << 20, "MB"), (1 << 10, "KB")];
    for (scale, unit) in UNITS {
        if b >= scale {
            let v = b as f64 / scale as f64;
            return if v.fract() == 0.0 {
                format!("{v:.0} {unit}")
            } else {
                format!("{v:.1} {unit}")
            };
        }
    }
    format!("{b} B")
}

pub(super) fn latency_label(r: &LatencyRow, tests: usize) -> String {
    if tests > 1 {
        format!("{} {}", r.key.test.csv_name(), r.key.cache.csv_name())
    } else {
        r.key.cache.csv_name().to_string()
    }
}
