//! The monitor's rows as `pmu stat` and `pmu record` write them: CSV (with or without the
//! header, for output that appends per interval) and JSON lines.

use crate::output::{Cell, Table};
use pcie_pmu::monitor::Row;

const COLUMNS: [(&str, &str); 14] = [
    ("time_s", "Time (s)"),
    ("unix_time", "Unix time"),
    ("interval_s", "Interval (s)"),
    ("pmu", "PMU"),
    ("event", "Event"),
    ("root_port", "Root port"),
    ("metric", "Metric"),
    ("raw", "Count"),
    ("scaled", "Scaled"),
    ("running_pct", "Running %"),
    ("enabled_ns", "Enabled ns"),
    ("running_ns", "Running ns"),
    ("bytes", "Bytes"),
    ("gbps", "Gb/s"),
];

/// Rows as the CSV of `pmu stat` and `pmu record`.
fn csv_table(rows: &[Row]) -> Table {
    let mut t = Table::new(&COLUMNS);
    let opt = |x: Option<f64>, dec: usize| x.map_or(Cell::Empty, |x| Cell::num(x, dec));
    let text = |x: &Option<String>| x.as_deref().map_or(Cell::Empty, Cell::text);
    for r in rows {
        t.push(vec![
            Cell::num(r.time_s, 6),
            Cell::num(r.unix_time, 3),
            Cell::num(r.interval_s, 6),
            Cell::text(r.pmu.as_str()),
            Cell::text(r.event.as_str()),
            text(&r.root_port),
            r.metric.map_or(Cell::Empty, |m| Cell::text(m.as_str())),
            Cell::Int(r.raw),
            opt(r.scaled, 0),
            Cell::num(r.running_pct, 2),
            Cell::Int(r.enabled_ns),
            Cell::Int(r.running_ns),
            opt(r.bytes, 0),
            r.gbps.map_or(Cell::Empty, Cell::gbps),
        ]);
    }
    t
}

/// CSV lines of `rows`, with the header only when asked (interval output appends).
pub fn csv_lines(rows: &[Row], header: bool) -> String {
    strip_header(csv_table(rows).to_csv(), header)
}

/// CSV text without its header line unless `header`.
pub fn strip_header(csv: String, header: bool) -> String {
    if header {
        csv
    } else {
        csv.split_once('\n').map_or(String::new(), |(_, body)| body.to_string())
    }
}

/// One JSON object per row, one per line.
pub fn json_lines(rows: &[Row]) -> String {
    rows.iter()
        .map(|r| serde_json::to_string(r).expect("rows serialise") + "\n")
        .collect()
}
