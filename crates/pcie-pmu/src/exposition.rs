//! What a metrics scrape sees of a running monitor: per-event totals since start and the last
//! interval's rates ([`Snapshot`]), and the Prometheus text exposition format of them; and the
//! host's link health ([`health`]: pcie-health's report as metrics, one series set per PCI
//! function, labelled like node_exporter's pcidevice collector, and the NVIDIA GPUs' own view
//! of their links through NVML). The transport (HTTP) is the front end's.

use crate::monitor::{add_interval, Row, Target, Trend};
use crate::PmuMetric;
use pcie_health::{AerState, CheckError, FunctionHealth, GpuHealth, Kind, LinkEnd, Report, Severity, Traffic};
use pcie_sysfs::Bdf;
use serde::Serialize;
use std::fmt::{self, Write as _};
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

/// A label value with `"`, `\` and newlines escaped as the text format requires, written
/// without a copy where there is nothing to escape (ids, classes and driver names).
struct Escaped<'a>(&'a str);

impl fmt::Display for Escaped<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut rest = self.0;
        while let Some(i) = rest.find(['\\', '"', '\n']) {
            f.write_str(&rest[..i])?;
            f.write_str(match rest.as_bytes()[i] {
                b'\\' => "\\\\",
                b'"' => "\\\"",
                _ => "\\n",
            })?;
            rest = &rest[i + 1..];
        }
        f.write_str(rest)
    }
}

/// An optional label value, escaped; empty where there is none.
fn escaped(v: &Option<String>) -> Escaped<'_> {
    Escaped(v.as_deref().unwrap_or(""))
}

/// Text exposition being written, one family after another.
#[derive(Default)]
struct Families(String);

impl Families {
    /// Starts a family: its HELP and TYPE lines come with its first sample, so a family with
    /// none is left out.
    fn family<'a>(&'a mut self, name: &'a str, kind: &'a str, help: &'a str) -> Family<'a> {
        Family {
            out: &mut self.0,
            name,
            kind,
            help,
            started: false,
        }
    }
}

/// One family's samples, written straight into the exposition (a scrape of a 10,000-function
/// host is some 90,000 lines).
struct Family<'a> {
    out: &'a mut String,
    name: &'a str,
    kind: &'a str,
    help: &'a str,
    started: bool,
}

impl Family<'_> {
    fn start(&mut self) {
        if !self.started {
            let _ = writeln!(
                self.out,
                "# HELP {} {}\n# TYPE {} {}",
                self.name, self.help, self.name, self.kind
            );
            self.started = true;
        }
    }

    /// A sample with labels (`a="x",b="y"`, escaped by the caller).
    fn sample(&mut self, labels: impl fmt::Display, value: impl fmt::Display) {
        self.start();
        let _ = writeln!(self.out, "{}{{{labels}}} {value}", self.name);
    }

    /// A sample without labels.
    fn value(&mut self, value: impl fmt::Display) {
        self.start();
        let _ = writeln!(self.out, "{} {value}", self.name);
    }
}

/// The Prometheus text exposition format, version 0.0.4.
pub fn exposition(s: &Snapshot) -> String {
    let mut out = Families::default();
    let ev_labels = |e: &EventState| {
        format!(
            "pmu=\"{}\",root_port=\"{}\",event=\"{}\",metric=\"{}\"",
            Escaped(&e.pmu),
            Escaped(e.root_port.as_deref().unwrap_or("")),
            Escaped(&e.event),
            Escaped(e.metric.map_or("", PmuMetric::as_str))
        )
    };
    let labels: Vec<String> = s.events.iter().map(ev_labels).collect();
    let mut raw = out.family(
        "pcieperf_event_raw_total",
        "counter",
        "Raw counts since pcieperf started (wrap-corrected, not scaled for multiplexing).",
    );
    for (e, l) in s.events.iter().zip(&labels) {
        raw.sample(l, e.raw_total);
    }
    let mut per_event = |name: &str, kind: &str, help: &str, f: &dyn Fn(&EventState) -> Option<f64>| {
        let mut fam = out.family(name, kind, help);
        for (e, l) in s.events.iter().zip(&labels) {
            if let Some(v) = f(e) {
                fam.sample(l, v);
            }
        }
    };
    per_event(
        "pcieperf_event_scaled_total",
        "counter",
        "Counts since start, each interval scaled by time enabled / time running.",
        &|e| Some(e.scaled_total),
    );
    per_event(
        "pcieperf_event_bytes_total",
        "counter",
        "Payload bytes since start (events that measure payload).",
        &|e| e.bytes_total,
    );
    per_event(
        "pcieperf_event_gbps",
        "gauge",
        "Payload Gb/s over the last interval (events that measure payload).",
        &|e| e.gbps,
    );
    per_event(
        "pcieperf_event_running_ratio",
        "gauge",
        "Share of the last interval the event was counting (below 1 when multiplexed).",
        &|e| Some(e.running_pct / 100.0),
    );
    let mut per_dir = |name: &str, help: &str, f: &dyn Fn(&Target, bool) -> Option<f64>| {
        let mut fam = out.family(name, "gauge", help);
        for t in s.targets.iter().map(|t| &t.last) {
            for (dir, rx) in [("rx", true), ("tx", false)] {
                if let Some(x) = f(t, rx) {
                    fam.sample(
                        format_args!("root_port=\"{}\",direction=\"{dir}\"", Escaped(&t.name)),
                        x,
                    );
                }
            }
        }
    };
    per_dir(
        "pcieperf_root_port_gbps",
        "Payload Gb/s of a root port over the last interval (rx: device to host, tx: host to device).",
        &|t, rx| if rx { t.rx_gbps } else { t.tx_gbps },
    );
    per_dir(
        "pcieperf_root_port_link_share_ratio",
        "Payload over the last interval as a share of the link's model bandwidth (pcie-model, 4 KB DMA).",
        &|t, rx| if rx { t.rx_pct } else { t.tx_pct }.map(|p| p / 100.0),
    );
    out.family("pcieperf_intervals_total", "counter", "Intervals sampled since start.")
        .value(s.intervals);
    out.family("pcieperf_interval_seconds", "gauge", "Length of the last interval.")
        .value(s.interval_s);
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
fn bytes_per_s(gbps: f64) -> f64 {
    gbps * 1e9 / 8.0
}

/// Check the link health of the tree below `root` ([`pcie_health::check`], reading only; the
/// NVIDIA GPUs through NVML too with `nvml`) and write it as metrics ([`health`]); the check's
/// error too, for the front end to tell.
pub fn check_health(root: &Path, nvml: bool) -> (String, Option<CheckError>) {
    let start = Instant::now();
    let opts = pcie_health::Options {
        nvml,
        ..pcie_health::Options::default()
    };
    let checked = pcie_health::check(root, &opts);
    let text = health(&checked, start.elapsed().as_secs_f64());
    (text, checked.err())
}

/// The host's link health as metrics: `checked` is [`pcie_health::check`]'s answer and
/// `seconds` how long it took. Base units (transfers and bytes per second), `_total` counters,
/// and a count per finding kind and severity that is always there (0 when none), so alert
/// rules and dashboards always find their series.
pub fn health(checked: &Result<Report, CheckError>, seconds: f64) -> String {
    let mut out = Families::default();
    out.family(
        "pcieperf_health_check_success",
        "gauge",
        "1 when the last link-health check read the PCI tree, 0 when it failed.",
    )
    .value(u8::from(checked.is_ok()));
    out.family(
        "pcieperf_health_check_seconds",
        "gauge",
        "Time the last link-health check took (reading the tree and pricing its findings).",
    )
    .value(seconds);
    let Ok(r) = checked else {
        return out.0;
    };
    let funcs = &r.functions;
    // Each function's labels, written once for all its families.
    let labels: Vec<String> = funcs.iter().map(|x| bdf_labels(&x.bdf)).collect();
    let per = |out: &mut Families, name: &str, help: &str, f: &dyn Fn(&FunctionHealth) -> Option<f64>| {
        let mut fam = out.family(name, "gauge", help);
        for (x, l) in funcs.iter().zip(&labels) {
            if let Some(v) = f(x) {
                fam.sample(l, v);
            }
        }
    };
    out.family(
        "pcieperf_health_functions",
        "gauge",
        "PCI functions read; pcieperf_health_links of them have a PCIe link.",
    )
    .value(funcs.len());
    out.family(
        "pcieperf_health_links",
        "gauge",
        "PCI functions with a PCIe link (0: no link to check).",
    )
    .value(r.links);
    let mut info = out.family(
        "pcieperf_pcidevice_info",
        "gauge",
        "A PCI function's ids, driver and PCIe device/port type; always 1.",
    );
    for (x, l) in funcs.iter().zip(&labels) {
        info.sample(
            format_args!(
                "{l},id=\"{}\",class_id=\"{}\",driver=\"{}\",port_type=\"{}\"",
                escaped(&x.id),
                escaped(&x.class),
                escaped(&x.driver),
                escaped(&x.port_type)
            ),
            1,
        );
    }
    let link = |f: fn(&LinkEnd) -> Option<f64>| move |x: &FunctionHealth| x.link.as_ref().and_then(f);
    per(
        &mut out,
        "pcieperf_pcidevice_current_link_transfers_per_second",
        "The function's link's current speed (T/s), as current_link_speed shows it.",
        &link(|l| l.current_gts.map(|g| g * 1e9)),
    );
    per(
        &mut out,
        "pcieperf_pcidevice_max_link_transfers_per_second",
        "The function's link's maximum speed (T/s), as max_link_speed shows it.",
        &link(|l| l.max_gts.map(|g| g * 1e9)),
    );
    per(
        &mut out,
        "pcieperf_pcidevice_current_link_width",
        "The function's link's current width (lanes).",
        &link(|l| l.current_width.map(f64::from)),
    );
    per(
        &mut out,
        "pcieperf_pcidevice_max_link_width",
        "The function's link's maximum width (lanes).",
        &link(|l| l.max_width.map(f64::from)),
    );
    per(
        &mut out,
        "pcieperf_pcidevice_available_bandwidth_bytes_per_second",
        "The model's 4 KiB DMA write bandwidth through the function's path as it runs (its limiting hop, MPS in force).",
        &|x| x.available_gbps.map(bytes_per_s),
    );
    per(
        &mut out,
        "pcieperf_pcidevice_capable_bandwidth_bytes_per_second",
        "The model's 4 KiB DMA write bandwidth through the path with every hop at what both its ends support.",
        &|x| x.capable_gbps.map(bytes_per_s),
    );
    per(
        &mut out,
        "pcieperf_pcidevice_numa_node",
        "The function's NUMA node (left out where the kernel gives none).",
        &|x| x.numa_node.map(f64::from),
    );
    // Samples per function and AER severity from three counts (correctable, non-fatal, fatal).
    let by_severity = |out: &mut Families, name: &str, help: &str, get: fn(&AerState) -> [Option<u64>; 3]| {
        let mut fam = out.family(name, "counter", help);
        for (x, l) in funcs.iter().zip(&labels) {
            for (sev, n) in ["correctable", "nonfatal", "fatal"].into_iter().zip(get(&x.aer)) {
                if let Some(n) = n {
                    fam.sample(format_args!("{l},severity=\"{sev}\""), n);
                }
            }
        }
    };
    by_severity(
        &mut out,
        "pcieperf_pcidevice_aer_errors_total",
        "AER errors the function reported since boot (aer_dev_correctable, _nonfatal, _fatal totals).",
        |a| [a.correctable, a.nonfatal, a.fatal],
    );
    let mut by_type = out.family(
        "pcieperf_pcidevice_aer_errors_by_type_total",
        "counter",
        "AER errors since boot by the kernel's type name (RxErr, BadDLLP, CmpltTO, ...); a type appears once it has counted.",
    );
    for (x, l) in funcs.iter().zip(&labels) {
        for (t, n) in &x.aer.by_type {
            by_type.sample(format_args!("{l},type=\"{}\"", Escaped(t)), n);
        }
    }
    by_severity(
        &mut out,
        "pcieperf_pcidevice_aer_rootport_errors_total",
        "Root ports: AER errors reported to them from below since boot (aer_rootport_total_err_*).",
        |a| [a.rootport_correctable, a.rootport_nonfatal, a.rootport_fatal],
    );
    // Payload the block devices and interfaces below each function counted, by direction as
    // the root-port families name it (rx: device to host), and what the path carries.
    let moving: Vec<(&Traffic, &String)> = funcs
        .iter()
        .zip(&labels)
        .filter_map(|(x, l)| Some((x.traffic.as_ref()?, l)))
        .collect();
    let mut payload = out.family(
        "pcieperf_pcidevice_payload_bytes_total",
        "counter",
        "Payload the function's block devices and network interfaces counted since they appeared, or an NVIDIA GPU's PCIe byte counters since its driver loaded (rx: written into host memory, block reads, received bytes, the GPU's TX; tx: read from it).",
    );
    for (t, l) in &moving {
        payload.sample(format_args!("{l},direction=\"rx\""), t.upstream_bytes);
        payload.sample(format_args!("{l},direction=\"tx\""), t.downstream_bytes);
    }
    // A GPU's TX is what it writes upstream (rx here), its RX what it reads (tx).
    let gpu_labels: Vec<(&GpuHealth, String)> = r
        .gpus
        .iter()
        .filter_map(|g| Some((g, bdf_labels(&g.bdf.parse().ok()?))))
        .collect();
    for (g, l) in &gpu_labels {
        if funcs.iter().any(|x| x.traffic.is_some() && bdf_labels(&x.bdf) == *l) {
            continue;
        }
        for (dir, bytes) in [("rx", g.tx_bytes), ("tx", g.rx_bytes)] {
            if let Some(b) = bytes {
                payload.sample(format_args!("{l},direction=\"{dir}\""), b);
            }
        }
    }
    let mut capacity = out.family(
        "pcieperf_pcidevice_payload_capacity_bytes_per_second",
        "gauge",
        "What the model gives 4 KiB DMAs through the function's path as it runs: writes for rx, reads for tx (functions with block devices or interfaces).",
    );
    for (t, l) in &moving {
        let both = [("rx", t.upstream_capacity_gbps), ("tx", t.downstream_capacity_gbps)];
        for (dir, gbps) in both {
            if let Some(g) = gbps {
                capacity.sample(format_args!("{l},direction=\"{dir}\""), bytes_per_s(g));
            }
        }
    }
    let mut counts = out.family(
        "pcieperf_health_findings",
        "gauge",
        "Findings of the last link-health check, per kind and severity (pcieperf check's kinds).",
    );
    for kind in Kind::ALL {
        for sev in [Severity::Info, Severity::Warning, Severity::Error] {
            let n = r
                .findings
                .iter()
                .filter(|f| f.kind == kind && f.severity == sev)
                .count();
            counts.sample(format_args!("kind=\"{}\",severity=\"{}\"", kind.name(), sev.name()), n);
        }
    }
    let finding_labels: Vec<String> = r
        .findings
        .iter()
        .map(|f| {
            format!(
                "{},kind=\"{}\",severity=\"{}\",limited_by=\"{}\"",
                bdf_labels(&f.bdf),
                f.kind.name(),
                f.severity.name(),
                f.limited_by.map(|b| b.to_string()).unwrap_or_default()
            )
        })
        .collect();
    let mut found = out.family(
        "pcieperf_pcidevice_finding",
        "gauge",
        "A finding of the last check on the function (always 1; limited_by names the hop that limits it).",
    );
    for l in &finding_labels {
        found.sample(l, 1);
    }
    let mut lost = out.family(
        "pcieperf_pcidevice_finding_lost_ratio",
        "gauge",
        "The model's loss for 4 KiB DMAs in the direction the finding hurts, as a share (0..1) of what the path could do.",
    );
    for (f, l) in r.findings.iter().zip(&finding_labels) {
        if let Some(p) = f.lost_pct {
            lost.sample(l, p / 100.0);
        }
    }
    gpu_families(&mut out, &gpu_labels);
    out.0
}

/// One figure of a GPU, when known.
type GpuFigure = fn(&GpuHealth) -> Option<f64>;

/// Transfers per second of PCIe generation `gen` (1-7).
fn gts(gen: Option<u32>) -> Option<f64> {
    let g = pcie_model::Generation::ALL.get((gen? as usize).checked_sub(1)?)?;
    Some(g.gt_per_s() * 1e9)
}

/// The NVIDIA GPUs' link as each GPU sees it and its replay counter (NVML; DCGM's
/// DCGM_FI_DEV_PCIE_LINK_GEN/_WIDTH, DCGM_FI_DEV_PCIE_MAX_LINK_GEN/_WIDTH and
/// DCGM_FI_DEV_PCIE_REPLAY_COUNTER), labelled as the PCI functions are.
fn gpu_families(out: &mut Families, gpus: &[(&GpuHealth, String)]) {
    let mut info = out.family(
        "pcieperf_gpu_info",
        "gauge",
        "An NVIDIA GPU NVML reports, with its name; always 1.",
    );
    for (g, l) in gpus {
        info.sample(format_args!("{l},name=\"{}\"", escaped(&g.name)), 1);
    }
    let each: [(&str, &str, GpuFigure); 4] = [
        (
            "pcieperf_gpu_current_link_transfers_per_second",
            "The GPU's link's current speed (T/s) as the GPU reports it (NVML); idle GPUs lower it.",
            |g| gts(g.current_gen),
        ),
        (
            "pcieperf_gpu_max_link_transfers_per_second",
            "The GPU's link's maximum speed (T/s) as the GPU reports it (NVML).",
            |g| gts(g.max_gen),
        ),
        (
            "pcieperf_gpu_current_link_width",
            "The GPU's link's current width (lanes) as the GPU reports it (NVML).",
            |g| g.current_width.map(f64::from),
        ),
        (
            "pcieperf_gpu_max_link_width",
            "The GPU's link's maximum width (lanes) as the GPU reports it (NVML).",
            |g| g.max_width.map(f64::from),
        ),
    ];
    for (name, help, get) in each {
        let mut fam = out.family(name, "gauge", help);
        for (g, l) in gpus {
            if let Some(v) = get(g) {
                fam.sample(l, v);
            }
        }
    }
    let mut replays = out.family(
        "pcieperf_gpu_pcie_replays_total",
        "counter",
        "TLPs the GPU's link layer replayed since its driver loaded (NVML's PCIe replay counter, DCGM_FI_DEV_PCIE_REPLAY_COUNTER).",
    );
    for (g, l) in gpus {
        if let Some(n) = g.replays {
            replays.sample(l, n);
        }
    }
    let mut limit = out.family(
        "pcieperf_gpu_pcie_replay_limit_per_second",
        "gauge",
        "Replays per second above which check warns: what the link at its current generation and width would replay at the PCIe bit error ratio of 1e-12 carrying its full raw rate.",
    );
    for (g, l) in gpus {
        if let Some(v) = g.replay_limit_per_s {
            limit.sample(l, v);
        }
    }
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
        // Counters print exactly, past the integers an f64 holds.
        with_port.events[0].raw_total = u64::MAX;
        let text = exposition(&with_port);
        assert!(text.contains("metric=\"rx_bytes\"} 18446744073709551615\n"), "{text}");
    }
}
