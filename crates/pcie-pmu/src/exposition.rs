//! What a metrics scrape sees of a running monitor: per-event totals since start and the last
//! interval's rates ([`Snapshot`]), and the Prometheus text exposition format of them; and the
//! host's link health ([`health`]: pcie-health's report as metrics, one series set per PCI
//! function, labelled like node_exporter's pcidevice collector). The transport (HTTP) is the
//! front end's.

use crate::monitor::{add_interval, Row, Target, Trend};
use crate::PmuMetric;
use pcie_health::{CheckError, Kind, Report, Severity};
use pcie_sysfs::Bdf;
use serde::Serialize;
use std::fmt::Write as _;
use std::path::Path;
use std::time::Instant;

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

/// Text exposition being written: one family after another, each with its HELP and TYPE.
#[derive(Default)]
struct Families(String);

impl Families {
    /// A family of `(labels, value)` samples; none leaves it out.
    fn add(&mut self, name: &str, kind: &str, help: &str, samples: Vec<(String, String)>) {
        if samples.is_empty() {
            return;
        }
        let out = &mut self.0;
        let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}");
        for (labels, value) in samples {
            if labels.is_empty() {
                let _ = writeln!(out, "{name} {value}");
            } else {
                let _ = writeln!(out, "{name}{{{labels}}} {value}");
            }
        }
    }
}

/// The Prometheus text exposition format, version 0.0.4.
pub fn exposition(s: &Snapshot) -> String {
    let mut out = Families::default();
    let mut family = |name: &str, kind: &str, help: &str, samples: Vec<(String, String)>| {
        out.add(name, kind, help, samples);
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
    out.0
}

/// A function's labels as node_exporter's pcidevice collector writes them, so the two join:
/// `segment="0000",bus="b1",device="00",function="0"`.
fn bdf_labels(b: &Bdf) -> String {
    format!(
        "segment=\"{:04x}\",bus=\"{:02x}\",device=\"{:02x}\",function=\"{:x}\"",
        b.domain, b.bus, b.dev, b.func
    )
}

/// Gb/s (pcie-health's model figures) in bytes per second.
fn bytes_per_s(gbps: f64) -> String {
    (gbps * 1e9 / 8.0).to_string()
}

/// Check the link health of the tree below `root` ([`pcie_health::check`], reading only) and
/// write it as metrics ([`health`]); the check's error too, for the front end to tell.
pub fn check_health(root: &Path) -> (String, Option<CheckError>) {
    let start = Instant::now();
    let checked = pcie_health::check(root, &pcie_health::Options::default());
    let text = health(&checked, start.elapsed().as_secs_f64());
    (text, checked.err())
}

/// The host's link health as metrics: `checked` is [`pcie_health::check`]'s answer and
/// `seconds` how long it took. Base units (transfers and bytes per second), `_total` counters,
/// and a count per finding kind and severity that is always there (0 when none), so alert
/// rules and dashboards always find their series.
pub fn health(checked: &Result<Report, CheckError>, seconds: f64) -> String {
    let mut out = Families::default();
    out.add(
        "pcieperf_health_check_success",
        "gauge",
        "1 when the last link-health check read the PCI tree, 0 when it failed.",
        vec![(String::new(), u8::from(checked.is_ok()).to_string())],
    );
    out.add(
        "pcieperf_health_check_seconds",
        "gauge",
        "Time the last link-health check took (reading the tree and pricing its findings).",
        vec![(String::new(), seconds.to_string())],
    );
    let Ok(r) = checked else {
        return out.0;
    };
    let funcs = &r.functions;
    // Each function's labels, written once for all its families.
    let labels: Vec<String> = funcs.iter().map(|x| bdf_labels(&x.bdf)).collect();
    let per = |f: &dyn Fn(&pcie_health::FunctionHealth) -> Option<String>| -> Vec<(String, String)> {
        funcs
            .iter()
            .zip(&labels)
            .filter_map(|(x, l)| f(x).map(|v| (l.clone(), v)))
            .collect()
    };
    out.add(
        "pcieperf_health_functions",
        "gauge",
        "PCI functions read; pcieperf_health_links of them have a PCIe link.",
        vec![(String::new(), funcs.len().to_string())],
    );
    out.add(
        "pcieperf_health_links",
        "gauge",
        "PCI functions with a PCIe link (0: no link to check).",
        vec![(String::new(), r.links.to_string())],
    );
    out.add(
        "pcieperf_pcidevice_info",
        "gauge",
        "A PCI function's ids, driver and PCIe device/port type; always 1.",
        funcs
            .iter()
            .zip(&labels)
            .map(|(x, l)| {
                let labels = format!(
                    "{l},id=\"{}\",class_id=\"{}\",driver=\"{}\",port_type=\"{}\"",
                    label(x.id.as_deref().unwrap_or("")),
                    label(x.class.as_deref().unwrap_or("")),
                    label(x.driver.as_deref().unwrap_or("")),
                    label(x.port_type.as_deref().unwrap_or(""))
                );
                (labels, "1".to_string())
            })
            .collect(),
    );
    let link =
        |f: fn(&pcie_health::LinkEnd) -> Option<f64>| per(&|x| x.link.as_ref().and_then(f).map(|v| v.to_string()));
    out.add(
        "pcieperf_pcidevice_current_link_transfers_per_second",
        "gauge",
        "The function's link's current speed (T/s), as current_link_speed shows it.",
        link(|l| l.current_gts.map(|g| g * 1e9)),
    );
    out.add(
        "pcieperf_pcidevice_max_link_transfers_per_second",
        "gauge",
        "The function's link's maximum speed (T/s), as max_link_speed shows it.",
        link(|l| l.max_gts.map(|g| g * 1e9)),
    );
    out.add(
        "pcieperf_pcidevice_current_link_width",
        "gauge",
        "The function's link's current width (lanes).",
        link(|l| l.current_width.map(f64::from)),
    );
    out.add(
        "pcieperf_pcidevice_max_link_width",
        "gauge",
        "The function's link's maximum width (lanes).",
        link(|l| l.max_width.map(f64::from)),
    );
    out.add(
        "pcieperf_pcidevice_available_bandwidth_bytes_per_second",
        "gauge",
        "The model's 4 KiB DMA write bandwidth through the function's path as it runs (its limiting hop, MPS in force).",
        per(&|x| x.available_gbps.map(bytes_per_s)),
    );
    out.add(
        "pcieperf_pcidevice_capable_bandwidth_bytes_per_second",
        "gauge",
        "The model's 4 KiB DMA write bandwidth through the path with every hop at what both its ends support.",
        per(&|x| x.capable_gbps.map(bytes_per_s)),
    );
    out.add(
        "pcieperf_pcidevice_numa_node",
        "gauge",
        "The function's NUMA node (left out where the kernel gives none).",
        per(&|x| x.numa_node.map(|n| n.to_string())),
    );
    // Samples per function and AER severity from three counts (correctable, non-fatal, fatal).
    let by_severity = |get: fn(&pcie_health::AerState) -> [Option<u64>; 3]| -> Vec<(String, String)> {
        let mut v = Vec::new();
        for (x, l) in funcs.iter().zip(&labels) {
            for (name, n) in ["correctable", "nonfatal", "fatal"].into_iter().zip(get(&x.aer)) {
                if let Some(n) = n {
                    v.push((format!("{l},severity=\"{name}\""), n.to_string()));
                }
            }
        }
        v
    };
    out.add(
        "pcieperf_pcidevice_aer_errors_total",
        "counter",
        "AER errors the function reported since boot (aer_dev_correctable, _nonfatal, _fatal totals).",
        by_severity(|a| [a.correctable, a.nonfatal, a.fatal]),
    );
    out.add(
        "pcieperf_pcidevice_aer_errors_by_type_total",
        "counter",
        "AER errors since boot by the kernel's type name (RxErr, BadDLLP, CmpltTO, ...); a type appears once it has counted.",
        funcs
            .iter()
            .zip(&labels)
            .flat_map(|(x, l)| {
                x.aer
                    .by_type
                    .iter()
                    .map(move |(t, n)| (format!("{l},type=\"{}\"", label(t)), n.to_string()))
            })
            .collect(),
    );
    out.add(
        "pcieperf_pcidevice_aer_rootport_errors_total",
        "counter",
        "Root ports: AER errors reported to them from below since boot (aer_rootport_total_err_*).",
        by_severity(|a| [a.rootport_correctable, a.rootport_nonfatal, a.rootport_fatal]),
    );
    let mut counts = Vec::new();
    for kind in Kind::ALL {
        for sev in [Severity::Info, Severity::Warning, Severity::Error] {
            let n = r
                .findings
                .iter()
                .filter(|f| f.kind == kind && f.severity == sev)
                .count();
            counts.push((
                format!("kind=\"{}\",severity=\"{}\"", kind.name(), sev.name()),
                n.to_string(),
            ));
        }
    }
    out.add(
        "pcieperf_health_findings",
        "gauge",
        "Findings of the last link-health check, per kind and severity (pcieperf check's kinds).",
        counts,
    );
    let finding_labels = |f: &pcie_health::Finding| {
        format!(
            "{},kind=\"{}\",severity=\"{}\",limited_by=\"{}\"",
            bdf_labels(&f.bdf),
            f.kind.name(),
            f.severity.name(),
            f.limited_by.map(|b| b.to_string()).unwrap_or_default()
        )
    };
    out.add(
        "pcieperf_pcidevice_finding",
        "gauge",
        "A finding of the last check on the function (always 1; limited_by names the hop that limits it).",
        r.findings
            .iter()
            .map(|f| (finding_labels(f), "1".to_string()))
            .collect(),
    );
    out.add(
        "pcieperf_pcidevice_finding_lost_ratio",
        "gauge",
        "The model's loss for 4 KiB DMAs in the direction the finding hurts, as a share (0..1) of what the path could do.",
        r.findings
            .iter()
            .filter_map(|f| f.lost_pct.map(|p| (finding_labels(f), (p / 100.0).to_string())))
            .collect(),
    );
    out.0
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
