//! `pcieperf pmu list`: a tree PMU → root port → devices, with events and metrics, then the
//! functions on root buses no PMU watches, for people; for programs the same as one JSON
//! document ([`Listing`]), or one CSV row per PMU event.

use crate::error::CliError;
use crate::host_selection::SourceArgs;
use crate::output::{json, Cell, Format, Table};
use clap::Args;
use pcie_pmu::catalog::Origin;
use pcie_pmu::listing::DeviceInfo;
use pcie_pmu::topology::RootBusKind;
use pcie_pmu::{Bdf, Listing, PmuEvent, PmuMetric};
use std::fmt::Write;

#[derive(Debug, Args)]
pub struct ListArgs {
    #[command(flatten)]
    source: SourceArgs,
    /// Output format
    #[arg(long, value_enum, default_value_t)]
    format: Format,
}

fn opt(s: &Option<String>) -> Cell {
    s.as_ref().map_or(Cell::Empty, |s| Cell::text(s.as_str()))
}

/// CSV is flat, so it keeps one row per event; the topology (devices, links, unwatched
/// functions, which have no events) is in the table and the JSON only.
fn csv(l: &Listing) -> String {
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
    for p in &l.pcie_pmus {
        for r in &p.events {
            let e = &r.event;
            t.push(vec![
                Cell::text(p.name.as_str()),
                Cell::text(p.family),
                join(p.variant.iter().map(|s| s.to_string()).collect()),
                Cell::Int(p.type_id as u64),
                join(p.cpumask.iter().map(|c| c.to_string()).collect()),
                join(p.root_ports.iter().map(|r| r.bdf.to_string()).collect()),
                Cell::text(e.name.as_str()),
                Cell::text(e.encoding.as_str()),
                Cell::text(match e.origin {
                    Origin::Sysfs => "sysfs",
                    Origin::Catalog => "catalog",
                }),
                join(e.required_params.clone()),
                opt(&r.config),
                opt(&r.config1),
                opt(&r.config2),
                e.metric.map_or(Cell::Empty, |m| Cell::text(m.as_str())),
                opt(&e.unit),
                num(e.bytes_per_count),
                opt(&e.group),
                num(e.kernel_scale),
                opt(&e.kernel_unit),
                opt(&e.note),
            ]);
        }
    }
    t.to_csv()
}

fn device_line(bdf: Bdf, d: &DeviceInfo) -> String {
    let mut parts = vec![bdf.to_string(), d.id.as_deref().unwrap_or("?:?").to_string()];
    if let Some(c) = &d.class {
        parts.push(format!("class {c}"));
    }
    parts.push(d.driver.clone().unwrap_or_else(|| "no driver".into()));
    if let Some(l) = &d.link {
        parts.push(l.clone());
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

fn human(root: &std::path::Path, l: &Listing) -> String {
    let mut out = String::new();
    if l.pcie_pmus.is_empty() {
        let _ = writeln!(
            out,
            "No PCIe PMUs under {} ({} other PMUs: {}).",
            root.display(),
            l.other_pmus.len(),
            if l.other_pmus.is_empty() {
                "none".to_string()
            } else {
                l.other_pmus.join(", ")
            }
        );
        return out;
    }
    for (i, v) in l.pcie_pmus.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        let cpus: Vec<String> = v.cpumask.iter().map(|c| c.to_string()).collect();
        let _ = writeln!(
            out,
            "{}  {}{}  type {}  cpu {}",
            v.name,
            v.family_title,
            if v.variant.is_empty() {
                String::new()
            } else {
                format!(" ({})", v.variant.join(", "))
            },
            v.type_id,
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
            if rp.in_sysfs {
                let _ = writeln!(out, "  root port {}", device_line(rp.bdf, &rp.info));
            } else {
                let _ = writeln!(out, "  root port {} (not in sys/bus/pci/devices)", rp.bdf);
            }
            for d in &rp.devices {
                let _ = writeln!(out, "    {}", device_line(d.bdf, &d.info));
            }
        }
        if !v.metrics.is_empty() {
            let _ = writeln!(out, "  metrics:");
            for m in &v.metrics {
                let _ = writeln!(out, "    {:<17} {}", m.metric, m.events.join(" + "));
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
        for e in v.events.iter().map(|r| &r.event) {
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
                Cell::text(e.metric.map_or("-", PmuMetric::as_str)),
                Cell::text(scale_text(e)),
                dash(&e.group),
                Cell::text(note),
            ]);
        }
        out.push_str(&indent(&t.to_human(), "    "));
    }
    if !l.unwatched.is_empty() {
        // A PMU that does not name its ports may watch these after all.
        let heading = if l.pcie_pmus.iter().all(|p| !p.root_ports.is_empty()) {
            "not watched by a PCIe PMU:"
        } else {
            "outside the root ports above (a PMU that does not name its ports may watch them):"
        };
        let _ = writeln!(out, "\n{heading}");
        for u in &l.unwatched {
            let kind = match u.kind {
                RootBusKind::RootPort => "root port",
                RootBusKind::Rciep => "RCiEP",
                RootBusKind::Rcec => "RCEC",
            };
            let _ = writeln!(out, "  {kind} {}", device_line(u.bdf, &u.info));
            for d in &u.devices {
                let _ = writeln!(out, "    {}", device_line(d.bdf, &d.info));
            }
        }
    }
    out
}

pub fn run(a: &ListArgs) -> Result<String, CliError> {
    let sys = crate::host_selection::discover(&a.source)?;
    for p in &sys.problems {
        eprintln!("warning: skipped a PMU: {p}");
    }
    let listing = sys.listing()?;
    Ok(match a.format {
        Format::Table => human(sys.root.path(), &listing),
        Format::Csv => csv(&listing),
        Format::Json => json(&listing),
    })
}
