//! What a metrics scrape sees of a running monitor: per-event totals since start and the last
//! interval's rates ([`Snapshot`]), and the Prometheus text exposition format of them. The
//! transport (HTTP) is the front end's.

use crate::monitor::{add_interval, Row, Target, Trend};
use crate::PmuMetric;
use serde::Serialize;
use std::fmt::Write as _;

/// One event's totals since start and its last interval.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EventState {
    pub pmu: String,
    pub root_port: Option<String>,
    pub event: String,
    pub metric: Option<PmuMetric>,
    pub raw_total: u64,
    pub scaled_total: f64,
    pub bytes_total: Option<f64>,
    pub gbps: Option<f64>,
    pub running_pct: f64,
}

/// The state after the last closed interval.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Snapshot {
    pub time_s: f64,
    pub interval_s: f64,
    pub intervals: u64,
    pub events: Vec<EventState>,
    /// Targets with the headline (Rx + Tx Gb/s or count rate) of their last intervals.
    pub targets: Vec<Trend>,
}

impl Snapshot {
    /// Fold in an interval's rows and their per-root-port `targets`, keeping `keep` headlines
    /// of history per target.
    pub fn add_interval(&mut self, rows: &[Row], targets: Vec<Target>, keep: usize) {
        self.intervals += 1;
        if let Some(r) = rows.first() {
            self.time_s = r.time_s;
            self.interval_s = r.interval_s;
        }
        for r in rows {
            let key = |e: &EventState| e.pmu == r.pmu && e.event == r.event && e.root_port == r.root_port;
            let i = self.events.iter().position(key).unwrap_or_else(|| {
                self.events.push(EventState {
                    pmu: r.pmu.clone(),
                    root_port: r.root_port.clone(),
                    event: r.event.clone(),
                    metric: r.metric,
                    raw_total: 0,
                    scaled_total: 0.0,
                    bytes_total: r.bytes.map(|_| 0.0),
                    gbps: None,
                    running_pct: 100.0,
                });
                self.events.len() - 1
            });
            let e = &mut self.events[i];
            e.raw_total = e.raw_total.wrapping_add(r.raw);
            e.scaled_total += r.scaled.unwrap_or(0.0);
            e.bytes_total = e.bytes_total.map(|b| b + r.bytes.unwrap_or(0.0));
            e.gbps = r.gbps;
            e.running_pct = r.running_pct;
        }
        add_interval(&mut self.targets, targets, keep);
    }
}

/// `"` `\` and newlines escaped as the text format requires of label values.
fn label(v: &str) -> String {
    v.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n")
}

/// The Prometheus text exposition format, version 0.0.4.
pub fn exposition(s: &Snapshot) -> String {
    let mut out = String::new();
    let mut family = |name: &str, kind: &str, help: &str, samples: Vec<(String, String)>| {
        if samples.is_empty() {
            return;
        }
        let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}");
        for (labels, value) in samples {
            if labels.is_empty() {
                let _ = writeln!(out, "{name} {value}");
            } else {
                let _ = writeln!(out, "{name}{{{labels}}} {value}");
            }
        }
    };
    let ev_labels = |e: &EventState| {
        format!(
            "pmu=\"{}\",root_port=\"{}\",event=\"{}\",metric=\"{}\"",
            label(&e.pmu),
            label(e.root_port.as_deref().unwrap_or("")),
            label(&e.event),
            label(e.metric.map_or("", PmuMetric::as_str))
        )
    };
    let per_event = |f: &dyn Fn(&EventState) -> Option<String>| -> Vec<(String, String)> {
        s.events
            .iter()
            .filter_map(|e| f(e).map(|v| (ev_labels(e), v)))
            .collect()
    };
    family(
        "pcieperf_event_raw_total",
        "counter",
        "Raw counts since pcieperf started (wrap-corrected, not scaled for multiplexing).",
        per_event(&|e| Some(e.raw_total.to_string())),
    );
    family(
        "pcieperf_event_scaled_total",
        "counter",
        "Counts since start, each interval scaled by time enabled / time running.",
        per_event(&|e| Some(e.scaled_total.to_string())),
    );
    family(
        "pcieperf_event_bytes_total",
        "counter",
        "Payload bytes since start (events that measure payload).",
        per_event(&|e| e.bytes_total.map(|b| b.to_string())),
    );
    family(
        "pcieperf_event_gbps",
        "gauge",
        "Payload Gb/s over the last interval (events that measure payload).",
        per_event(&|e| e.gbps.map(|g| g.to_string())),
    );
    family(
        "pcieperf_event_running_ratio",
        "gauge",
        "Share of the last interval the event was counting (below 1 when multiplexed).",
        per_event(&|e| Some((e.running_pct / 100.0).to_string())),
    );
    let per_dir = |f: &dyn Fn(&Target, bool) -> Option<f64>| -> Vec<(String, String)> {
        let mut v = Vec::new();
        for t in s.targets.iter().map(|t| &t.last) {
            for (dir, rx) in [("rx", true), ("tx", false)] {
                if let Some(x) = f(t, rx) {
                    v.push((
                        format!("root_port=\"{}\",direction=\"{dir}\"", label(&t.name)),
                        x.to_string(),
                    ));
                }
            }
        }
        v
    };
    family(
        "pcieperf_root_port_gbps",
        "gauge",
        "Payload Gb/s of a root port over the last interval (rx: device to host, tx: host to device).",
        per_dir(&|t, rx| if rx { t.rx_gbps } else { t.tx_gbps }),
    );
    family(
        "pcieperf_root_port_link_share_ratio",
        "gauge",
        "Payload over the last interval as a share of the link's model bandwidth (pcie-model, 4 KB DMA).",
        per_dir(&|t, rx| if rx { t.rx_pct } else { t.tx_pct }.map(|p| p / 100.0)),
    );
    family(
        "pcieperf_intervals_total",
        "counter",
        "Intervals sampled since start.",
        vec![(String::new(), s.intervals.to_string())],
    );
    family(
        "pcieperf_interval_seconds",
        "gauge",
        "Length of the last interval.",
        vec![(String::new(), s.interval_s.to_string())],
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exposition_escapes_labels_and_skips_empty_families() {
        let s = Snapshot {
            time_s: 1.0,
            interval_s: 0.5,
            intervals: 2,
            events: vec![EventState {
                pmu: "dwc_rootport_3018".into(),
                root_port: Some("0000:30:03.0".into()),
                event: "a\"b\\c".into(),
                metric: Some(PmuMetric::RxBytes),
                raw_total: 10,
                scaled_total: 20.0,
                bytes_total: Some(20.0),
                gbps: Some(0.25),
                running_pct: 50.0,
            }],
            targets: vec![],
        };
        let mut with_port = s.clone();
        let text = exposition(&s);
        assert!(text.contains(
            "pcieperf_event_raw_total{pmu=\"dwc_rootport_3018\",root_port=\"0000:30:03.0\",event=\"a\\\"b\\\\c\",metric=\"rx_bytes\"} 10\n"
        ), "{text}");
        assert!(text.contains("# TYPE pcieperf_event_bytes_total counter\n"), "{text}");
        assert!(
            text.contains("pcieperf_event_running_ratio{") && text.contains("} 0.5\n"),
            "{text}"
        );
        assert!(text.contains("pcieperf_intervals_total 2\n"), "{text}");
        assert!(
            !text.contains("pcieperf_root_port_gbps"),
            "no targets, no family: {text}"
        );

        with_port.targets.push(Trend {
            last: Target {
                name: "0000:30:03.0".into(),
                pmus: "dwc_rootport_3018".into(),
                link: None,
                rx_gbps: Some(12.5),
                tx_gbps: None,
                rx_pct: Some(25.0),
                tx_pct: None,
                rate: None,
                running_pct: 50.0,
            },
            history: [12.5].into(),
        });
        let text = exposition(&with_port);
        assert!(
            text.contains("pcieperf_root_port_gbps{root_port=\"0000:30:03.0\",direction=\"rx\"} 12.5\n"),
            "{text}"
        );
        assert!(
            text.contains("pcieperf_root_port_link_share_ratio{root_port=\"0000:30:03.0\",direction=\"rx\"} 0.25\n"),
            "{text}"
        );
        assert!(!text.contains("direction=\"tx\""), "no Tx event, no Tx sample: {text}");
    }
}
