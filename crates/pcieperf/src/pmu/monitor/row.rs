//! What an interval produces: one row per event (CSV / JSON lines), and per root port the
//! summary `top` draws and `serve` exports, with a short history for sparklines.

use super::*;

/// One event over an interval (or the whole run): the row of `pmu stat` and `pmu record`.
#[derive(Debug, Clone, Serialize)]
pub struct Row {
    /// Seconds since counting started (on the source's clock), at the end of the interval.
    pub time_s: f64,
    /// The end of the interval as Unix time (seconds since 1970 UTC, ms resolution): the wall
    /// clock when counting started plus `time_s`, so records line up with other time series
    /// (a simulated host's clock starts at the wall-clock time the command started).
    pub unix_time: f64,
    /// Length of the interval in seconds.
    pub interval_s: f64,
    pub pmu: String,
    pub event: String,
    pub root_port: Option<String>,
    pub metric: Option<String>,
    pub raw: u64,
    /// Raw × enabled / running; absent when the event never ran.
    pub scaled: Option<f64>,
    pub running_pct: f64,
    pub enabled_ns: u64,
    pub running_ns: u64,
    pub bytes: Option<f64>,
    pub gbps: Option<f64>,
    /// The perf event group the event was opened in, with its members (JSON only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub group: Option<String>,
    #[serde(skip)]
    pub port: Option<usize>,
}

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
pub fn csv_table(rows: &[Row]) -> Table {
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
            text(&r.metric),
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

/// The event as rows show it: the alias (`cpu-clock`) or the terms (`config=0x10`).
pub(super) fn short_event(e: &ResolvedEvent) -> String {
    let n = event_name(e);
    n.strip_prefix(&format!("{}/", e.pmu))
        .and_then(|s| s.strip_suffix('/'))
        .map_or(n.clone(), str::to_string)
}

/// What one row shows per root port (or, for an event of no root port, per event): the
/// command-independent summary `top` draws and `serve` exports.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Target {
    /// The root port, or `pmu/event/` for events without one.
    pub name: String,
    pub pmus: String,
    pub link: Option<String>,
    pub rx_gbps: Option<f64>,
    pub tx_gbps: Option<f64>,
    /// Rx / Tx as a share of the link's model bandwidth, in percent.
    pub rx_pct: Option<f64>,
    pub tx_pct: Option<f64>,
    /// Scaled counts per second of the target's events that do not measure payload.
    pub rate: Option<f64>,
    /// The lowest running share of the target's events.
    pub running_pct: f64,
}

impl Target {
    /// The one number a sparkline shows: Rx + Tx Gb/s, or the count rate when the target has
    /// no payload event.
    pub fn headline(&self) -> f64 {
        match (self.rx_gbps, self.tx_gbps) {
            (None, None) => self.rate.unwrap_or(0.0),
            (r, x) => r.unwrap_or(0.0) + x.unwrap_or(0.0),
        }
    }
}

/// A target's last interval and the headlines of its recent ones, oldest first.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Trend {
    #[serde(flatten)]
    pub last: Target,
    pub history: VecDeque<f64>,
}

/// Add an interval's targets to `trends`, keeping at most `keep` values each.
pub fn add_interval(trends: &mut Vec<Trend>, targets: Vec<Target>, keep: usize) {
    for t in targets {
        let v = t.headline();
        match trends.iter_mut().find(|x| x.last.name == t.name) {
            Some(x) => {
                x.history.push_back(v);
                if x.history.len() > keep {
                    x.history.pop_front();
                }
                x.last = t;
            }
            None => trends.push(Trend {
                last: t,
                history: VecDeque::from([v]),
            }),
        }
    }
}
