//! What an interval produces: one row per event, the data of `pmu stat` and `pmu record`.

use crate::counter::event_name;
use crate::{PmuMetric, ResolvedEvent};
use serde::Serialize;

/// One event over an interval (or the whole run).
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
    pub metric: Option<PmuMetric>,
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
    /// Index into the monitor's ports.
    #[serde(skip)]
    pub port: Option<usize>,
}

/// The event as rows show it: the alias (`cpu-clock`) or the terms (`config=0x10`).
pub(super) fn short_event(e: &ResolvedEvent) -> String {
    let n = event_name(e);
    n.strip_prefix(&format!("{}/", e.pmu))
        .and_then(|s| s.strip_suffix('/'))
        .map_or(n.clone(), str::to_string)
}
