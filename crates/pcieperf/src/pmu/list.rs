//! `pcieperf pmu list`: a tree PMU → root port → devices, with events and metrics, for people;
//! one CSV row / JSON object per PMU event for programs.

use super::source::SourceArgs;
use crate::error::CliError;
use crate::output::{json, Cell, Format, Table};
use clap::Args;
use pcie_pmu::{event_spec, PciDevice, PcieView, PmuEvent, System};
use serde::Serialize;
use std::fmt::Write;

#[derive(Debug, Args)]
pub struct ListArgs {
    #[command(flatten)]
    source: SourceArgs,
    /// Output format
    #[arg(long, value_enum, default_value_t)]
    format: Format,
}

/// One PMU event, as CSV and JSON print it.
#[derive(Debug, Serialize)]
struct EventRow {
    pmu: String,
    family: &'static str,
    variant: Vec<&'static str>,
    #[serde(rename = "type")]
    type_id: u32,
    cpumask: Vec<u32>,
    root_ports: Vec<String>,
    event: String,
    encoding: String,
    origin: &'static str,
    required_params: Vec<String>,
    /// `perf_event_attr.config..config2` in hex; absent while required parameters are missing.
    config: Option<String>,
    config1: Option<String>,
    config2: Option<String>,
    metric: Option<String>,
    unit: Option<String>,
    bytes_per_count: Option<f64>,
    group: Option<String>,
    kernel_scale: Option<f64>,
    kernel_unit: Option<String>,
    note: Option<String>,
}

fn rows(sys: &System, views: &[PcieView]) -> Vec<EventRow> {
    let mut out = Vec::new();
    for v in views {
        for e in &v.events {
            let spec = match e.origin {
                pcie_pmu::catalog::Origin::Sysfs => format!("{}/{}/", v.pmu.name, e.name),
                pcie_pmu::catalog::Origin::Catalog => format!("{}/{}/", v.pmu.name, e.encoding),
            };
            let cfg = if e.required_params.is_empty() {
                event_spec::resolve(&spec, &sys.pmus).ok().map(|r| r.config)
            } else {
                None
            };
            let hex = |i: usize| cfg.map(|c| format!("{:#x}", c[i]));
            out.push(EventRow {
                pmu: v.pmu.name.clone(),
                family: v.family.family.key(),
                variant: v.family.variant.clone(),
                type_id: v.pmu.type_id,
                cpumask: v.pmu.cpumask.clone(),
                root_ports: v.root_ports.iter().map(|r| r.bdf.to_string()).collect(),
                event: e.name.clone(),
                encoding: e.encoding.clone(),
                origin: match e.origin {
                    pcie_pmu::catalog::Origin::Sysfs => "sysfs",
                    pcie_pmu::catalog::Origin::Catalog => "catalog",
                },
                required_params: e.required_params.clone(),
                config: hex(0),
                config1: hex(1),
                config2: hex(2),
                metric: e.metric.clone(),
                unit: e.unit.clone(),
                bytes_per_count: e.bytes_per_count,
                group: e.group.clone(),
                kernel_scale: e.kernel_scale,
                kernel_unit: e.kernel_unit.clone(),
                note: e.note.clone(),
            });
        }
    }
    out
}

fn opt(s: &Option<String>) -> Cell {
    s.as_ref().map_or(Cell::Empty, |s| Cell::text(s.as_str()))
}

fn csv(rows: &[EventRow]) -> String {
    let cols = [
        "pmu",
        "family",
        "variant",
        "type",
        "cpumask",
        "root_ports",
        "event",
        "encoding",
        "origin",
        "required_params",
        "config",
        "config1",
        "config2",
        "metric",
        "unit",
        "bytes_per_count",
        "group",
        "kernel_scale",
        "kernel_unit",
        "note",
    ];
    let pairs: Vec<(&str, &str)> = cols.iter().map(|c| (*c, *c)).collect();
    let mut t = Table::new(&pairs);
    let join = |v: Vec<String>| Cell::text(v.join(";"));
    let num = |x: Option<f64>| x.map_or(Cell::Empty, |x| Cell::text(x.to_string()));
    for r in rows {
        t.push(vec![
            Cell::text(r.pmu.as_str()),
            Cell::text(r.family),
            join(r.variant.iter().map(|s| s.to_string()).collect()),
            Cell::Int(r.type_id as u64),
            join(r.cpumask.iter().map(|c| c.to_string()).collect()),
            join(r.root_ports.clone()),
            Cell::text(r.event.as_str()),
            Cell::text(r.encoding.as_str()),
            Cell::text(r.origin),
            join(r.required_params.clone()),
            opt(&r.config),
            opt(&r.config1),
            opt(&r.config2),
            opt(&r.metric),
            opt(&r.unit),
            num(r.bytes_per_count),
            opt(&r.group),
            num(r.kernel_scale),
            opt(&r.kernel_unit),
            opt(&r.note),
        ]);
    }
    t.to_csv()
}

fn hex16(v: Option<u16>) -> String {
    v.map_or("?".into(), |v| format!("{v:04x}"))
}

fn device_line(d: &PciDevice) -> String {
    let mut parts = vec![d.bdf.to_string(), format!("{}:{}", hex16(d.vendor), hex16(d.device))];
    if let Some(c) = d.class {
        parts.push(format!("class {c:06x}"));
    }
    parts.push(d.driver.clone().unwrap_or_else(|| "no driver".into()));
    if let Some(l) = d.link_summary() {
        parts.push(l);
    }
    if let Some(n) = d.numa_node {
        parts.push(format!("NUMA {n}"));
    }
    parts.join("  ")
}

fn scale_text(e: &PmuEvent) -> String {
    match (e.bytes_per_count, e.unit.as_deref()) {
        (Some(b), _) => format!("{b} B/count"),
        (None, Some(u)) => u.to_string(),
        (None, None) => String::new(),
    }
}

fn indent(text: &str, by: &str) -> String {
    text.lines().map(|l| format!("{by}{l}\n")).collect()
}

fn human(sys: &System, views: &[PcieView]) -> String {
    let mut out = String::new();
    if views.is_empty() {
        let others: Vec<&str> = sys.pmus.iter().map(|p| p.name.as_str()).collect();
        let _ = writeln!(
            out,
            "No PCIe PMUs under {} ({} other PMUs: {}).",
            sys.root.path().display(),
            others.len(),
            if others.is_empty() {
                "none".to_string()
            } else {
                others.join(", ")
            }
        );
        return out;
    }
    for (i, v) in views.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        let cpus: Vec<String> = v.pmu.cpumask.iter().map(|c| c.to_string()).collect();
        let _ = writeln!(
            out,
            "{}  {}{}  type {}  cpu {}",
            v.pmu.name,
            v.family.family.title(),
            if v.family.variant.is_empty() {
                String::new()
            } else {
                format!(" ({})", v.family.variant.join(", "))
            },
            v.pmu.type_id,
            if cpus.is_empty() {
                "any".to_string()
            } else {
                cpus.join(",")
            }
        );
        if v.root_ports.is_empty() {
            let _ = writeln!(out, "  root ports: not identified by this PMU family");
        }
        for rp in &v.root_ports {
            match &rp.port {
                Some(p) => {
                    let _ = writeln!(out, "  root port {}", device_line(p));
                }
                None => {
                    let _ = writeln!(out, "  root port {} (not in sys/bus/pci/devices)", rp.bdf);
                }
            }
            for d in &rp.devices {
                let _ = writeln!(out, "    {}", device_line(d));
            }
        }
        // Metrics: which events make up each normalised metric.
        let mut metrics: Vec<(&str, Vec<&str>)> = Vec::new();
        for e in &v.events {
            if let Some(m) = e.metric.as_deref() {
                match metrics.iter_mut().find(|(n, _)| *n == m) {
                    Some((_, evs)) => evs.push(&e.name),
                    None => metrics.push((m, vec![&e.name])),
                }
            }
        }
        if !metrics.is_empty() {
            let _ = writeln!(out, "  metrics:");
            for (m, evs) in &metrics {
                let _ = writeln!(out, "    {m:<17} {}", evs.join(" + "));
            }
        }
        let _ = writeln!(out, "  events ({}):", v.events.len());
        let mut t = Table::new(&[
            ("event", "Event"),
            ("encoding", "Encoding"),
            ("metric", "Metric"),
            ("scale", "Scale"),
            ("group", "Group"),
            ("note", "Note"),
        ]);
        for e in &v.events {
            let mut note = e.note.clone().unwrap_or_default();
            if !e.required_params.is_empty() {
                let need: Vec<String> = e.required_params.iter().map(|p| format!("{p}=N")).collect();
                note = format!(
                    "needs {}{}{note}",
                    need.join(","),
                    if note.is_empty() { "" } else { "; " }
                );
            }
            let dash = |s: &Option<String>| Cell::text(s.clone().unwrap_or_else(|| "-".into()));
            t.push(vec![
                Cell::text(e.name.as_str()),
                Cell::text(e.encoding.as_str()),
                dash(&e.metric),
                Cell::text(scale_text(e)),
                dash(&e.group),
                Cell::text(note),
            ]);
        }
        out.push_str(&indent(&t.to_human(), "    "));
    }
    out
}

pub fn run(a: &ListArgs) -> Result<String, CliError> {
    let sys = super::source::discover(&a.source)?;
    for p in &sys.problems {
        eprintln!("warning: skipped a PMU: {p}");
    }
    let views = sys.pcie_pmus()?;
    Ok(match a.format {
        Format::Table => human(&sys, &views),
        Format::Csv => csv(&rows(&sys, &views)),
        Format::Json => json(&rows(&sys, &views)),
    })
}
