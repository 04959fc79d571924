//! `pcieperf check`: every PCIe link of the host (or of a snapshot with `--sysfs`), its
//! limiting hop, MPS/MRRS/tags, ASPM, AER, NUMA and power, each finding priced by the model
//! (pcie-health does the work). Exit status 3 when something is at warning or above.
//! `pcieperf snapshot`: the files those readers use, copied for offline use (pcie-sysfs).

use crate::error::CliError;
use crate::output::{json, Cell, Format, Table};
use clap::Args;
use pcie_health::{rate_name, CheckError, FunctionHealth, Options, Report, Sampling};
use std::fmt::Write;
use std::path::PathBuf;
use std::time::Duration;

#[derive(Debug, Args)]
pub struct CheckArgs {
    /// Root of the sysfs/procfs tree to read (ROOT/sys/bus/pci/devices ...): / on this host,
    /// or a directory `pcieperf snapshot` wrote
    #[arg(long, value_name = "ROOT", default_value = "/")]
    pub sysfs: PathBuf,
    /// Output format
    #[arg(long, value_enum, default_value_t)]
    pub format: Format,
    /// Read the AER counters every MS milliseconds for --duration and report each error
    /// type's rate
    #[arg(short = 'I', long = "interval", value_name = "MS", requires = "duration")]
    pub interval: Option<u64>,
    /// Watch the AER counters for S seconds (one interval unless -I is given)
    #[arg(long, value_name = "S", allow_negative_numbers = true)]
    pub duration: Option<f64>,
}

#[derive(Debug, Args)]
pub struct SnapshotArgs {
    /// The new (or empty) directory to write the snapshot into
    #[arg(short = 'o', long = "output", value_name = "DIR")]
    pub output: PathBuf,
    /// Root of the tree to copy (/ on this host)
    #[arg(long, value_name = "ROOT", default_value = "/")]
    pub sysfs: PathBuf,
}

/// Exit status of a check that found something at warning or above.
pub const EXIT_FINDINGS: u8 = 3;

fn sampling(a: &CheckArgs) -> Result<Option<Sampling>, CliError> {
    crate::pmu::watch::check_interval(a.interval)?;
    crate::pmu::watch::check_duration(a.duration)?;
    Ok(a.duration.map(|d| {
        let duration = Duration::from_secs_f64(d);
        Sampling {
            interval: a.interval.map_or(duration, Duration::from_millis),
            duration,
        }
    }))
}

/// The report as text and the exit status (0, or 3 with a finding at warning or above).
pub fn run(a: &CheckArgs) -> Result<(String, u8), CliError> {
    let opts = Options { sampling: sampling(a)? };
    let report = pcie_health::check(&a.sysfs, &opts).map_err(|e| match e {
        CheckError::NoRoot(_) => CliError::Usage(format!("--sysfs {e}")),
        CheckError::Sysfs(_) => CliError::Runtime(e.to_string()),
    })?;
    let text = match a.format {
        Format::Table => human(&report),
        Format::Csv => csv(&report),
        Format::Json => json(&report),
    };
    Ok((text, if report.needs_attention() { EXIT_FINDINGS } else { 0 }))
}

pub fn snapshot(a: &SnapshotArgs) -> Result<String, CliError> {
    use pcie_sysfs::snapshot::SnapshotError;
    let s = pcie_sysfs::snapshot::snapshot(&a.sysfs, &a.output).map_err(|e| match e {
        SnapshotError::NotEmpty(_) => CliError::Usage(format!("-o {e}")),
        SnapshotError::Io(..) => CliError::Runtime(e.to_string()),
    })?;
    for u in &s.unreadable {
        eprintln!("warning: not copied: {u}");
    }
    Ok(format!(
        "{}: {} PCI functions, {} PMUs, {} files ({} serial numbers blanked); read it with --sysfs {}\n",
        a.output.display(),
        s.functions,
        s.pmus,
        s.files,
        s.serials_blanked,
        a.output.display()
    ))
}

fn opt<T: ToString>(v: &Option<T>) -> Cell {
    v.as_ref().map_or(Cell::Empty, |v| Cell::text(v.to_string()))
}

fn num(v: Option<f64>) -> Cell {
    v.map_or(Cell::Empty, Cell::gbps)
}

fn link_text(f: &FunctionHealth) -> Option<String> {
    let l = f.link.as_ref()?;
    let now = rate_name(l.current_gts, l.current_width);
    let max = rate_name(l.max_gts, l.max_width);
    Some(if now == max { now } else { format!("{now} of {max}") })
}

fn path_text(f: &FunctionHealth) -> String {
    let hops: Vec<String> = f
        .path
        .iter()
        .map(|h| {
            let now = rate_name(h.current_gts, h.current_width);
            let max = rate_name(h.capable_gts, h.capable_width);
            let rate = if now == max { now } else { format!("{now} of {max}") };
            format!("{} ({}) {rate}", h.bdf, h.role)
        })
        .collect();
    hops.join(" -> ")
}

fn tags_text(f: &FunctionHealth) -> Option<String> {
    f.tags.map(|t| format!("{}/{} bit", t.enabled_bits, t.possible_bits))
}

fn power_text(f: &FunctionHealth) -> Option<String> {
    let parts: Vec<&str> = [&f.power_state, &f.runtime_status]
        .into_iter()
        .flatten()
        .map(String::as_str)
        .collect();
    (!parts.is_empty()).then(|| parts.join(" "))
}

fn aer_text(f: &FunctionHealth) -> Option<String> {
    let a = &f.aer;
    let parts: Vec<String> = [("cor", a.correctable), ("nonfatal", a.nonfatal), ("fatal", a.fatal)]
        .iter()
        .filter_map(|(n, v)| v.map(|v| format!("{n} {v}")))
        .collect();
    (!parts.is_empty()).then(|| parts.join(", "))
}

fn rates_text(f: &FunctionHealth) -> String {
    let r: Vec<String> = f.aer.rates.iter().map(|(n, r)| format!("{n} {r:.2}/s")).collect();
    r.join("; ")
}

fn lost(v: Option<f64>) -> Cell {
    v.map_or(Cell::Empty, |p| Cell::num(p, 1))
}

fn human(r: &Report) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{} PCI functions, {} with a PCIe link; ASPM policy {}; {} NUMA node{}{}",
        r.functions.len(),
        r.links,
        r.aspm_policy.as_deref().unwrap_or("unknown"),
        r.numa_nodes.len(),
        if r.numa_nodes.len() == 1 { "" } else { "s" },
        r.sampled_seconds
            .map_or(String::new(), |s| format!("; AER counters watched for {s:.1} s"))
    );
    if r.links == 0 {
        out.push_str("No PCIe link to check: no function has link files or a PCIe link register (virtual or conventional PCI devices).\n");
    }
    if r.findings.is_empty() {
        out.push_str("No findings.\n");
    } else {
        out.push_str("\nFindings, worst first (lost: % of 4 KiB DMA bandwidth, model):\n");
        let mut t = Table::new(&[
            ("severity", "Severity"),
            ("kind", "Kind"),
            ("lost_pct", "Lost %"),
            ("message", "Finding"),
        ]);
        for f in &r.findings {
            t.push(vec![
                Cell::text(f.severity.name()),
                Cell::text(f.kind.name()),
                lost(f.lost_pct),
                Cell::text(f.message.as_str()),
            ]);
        }
        out.push_str(&t.to_human());
    }
    let devices: Vec<&FunctionHealth> = r.functions.iter().filter(|f| !f.is_bridge).collect();
    if !devices.is_empty() {
        out.push_str("\nDevices (Gb/s: 4 KiB DMA writes through the path now, and with every hop at its best):\n");
        let mut t = Table::new(&[
            ("bdf", "Function"),
            ("id", "Id"),
            ("driver", "Driver"),
            ("link", "Link"),
            ("limited_by", "Limited by"),
            ("available", "Gb/s"),
            ("capable", "of"),
            ("mps", "MPS"),
            ("path_mps", "Path MPS"),
            ("mrrs", "MRRS"),
            ("tags", "Tags"),
            ("aspm", "ASPM"),
            ("numa", "NUMA"),
            ("cpus", "CPUs"),
            ("power", "Power"),
            ("aer", "AER"),
        ]);
        for f in &devices {
            t.push(vec![
                Cell::text(f.bdf.to_string()),
                opt(&f.id),
                opt(&f.driver),
                opt(&link_text(f)),
                opt(&f.limited_by),
                num(f.available_gbps),
                num(f.capable_gbps),
                opt(&f.mps),
                opt(&f.path_mps),
                opt(&f.mrrs),
                opt(&tags_text(f)),
                opt(&f.aspm),
                opt(&f.numa_node),
                opt(&f.local_cpus),
                opt(&power_text(f)),
                opt(&aer_text(f)),
            ]);
        }
        out.push_str(&t.to_human());
        let paths: Vec<&&FunctionHealth> = devices.iter().filter(|f| !f.path.is_empty()).collect();
        if !paths.is_empty() {
            out.push_str("\nPaths from the root port (each link as it runs, of what both its ends can do):\n");
            for f in paths {
                let _ = writeln!(out, "  {}: {}", f.bdf, path_text(f));
            }
        }
        if r.sampled_seconds.is_some() {
            out.push_str("\nAER rates (peak over one interval):\n");
            for f in r.functions.iter().filter(|f| !f.aer.rates.is_empty()) {
                let _ = writeln!(out, "  {}: {}", f.bdf, rates_text(f));
            }
        }
    }
    for s in &r.skipped {
        let _ = writeln!(
            out,
            "\nSkipped on {} functions ({}): {}",
            s.functions.len(),
            s.reason,
            s.checks.join(", ")
        );
    }
    out
}

/// One CSV: a row per finding (`record` = finding), then a row per function (`record` =
/// function), so it carries everything the table shows.
fn csv(r: &Report) -> String {
    let cols = [
        "record",
        "severity",
        "kind",
        "bdf",
        "limited_by",
        "lost_pct",
        "message",
        "id",
        "class",
        "driver",
        "port_type",
        "link",
        "path",
        "available_gbps",
        "capable_gbps",
        "mps",
        "mps_supported",
        "path_mps",
        "mrrs",
        "tags",
        "aspm",
        "numa_node",
        "local_cpus",
        "power",
        "aer",
        "aer_rates",
        "cannot_tell",
        "skipped",
    ];
    let pairs: Vec<(&str, &str)> = cols.iter().map(|c| (*c, *c)).collect();
    let mut t = Table::new(&pairs);
    let blank = |n: usize| vec![Cell::Empty; n];
    for f in &r.findings {
        let mut row = vec![
            Cell::text("finding"),
            Cell::text(f.severity.name()),
            Cell::text(f.kind.name()),
            Cell::text(f.bdf.to_string()),
            opt(&f.limited_by),
            f.lost_pct.map_or(Cell::Empty, |p| Cell::num(p, 4)),
            Cell::text(f.message.as_str()),
        ];
        row.extend(blank(cols.len() - row.len()));
        t.push(row);
    }
    for f in &r.functions {
        let mut row = vec![
            Cell::text("function"),
            Cell::Empty,
            Cell::Empty,
            Cell::text(f.bdf.to_string()),
            opt(&f.limited_by),
            Cell::Empty,
            Cell::Empty,
        ];
        row.extend([
            opt(&f.id),
            opt(&f.class),
            opt(&f.driver),
            opt(&f.port_type),
            opt(&link_text(f)),
            Cell::text(path_text(f)),
            num(f.available_gbps),
            num(f.capable_gbps),
            opt(&f.mps),
            opt(&f.mps_supported),
            opt(&f.path_mps),
            opt(&f.mrrs),
            opt(&tags_text(f)),
            opt(&f.aspm),
            opt(&f.numa_node),
            opt(&f.local_cpus),
            opt(&power_text(f)),
            opt(&aer_text(f)),
            Cell::text(rates_text(f)),
            Cell::text(f.cannot_tell.join("; ")),
            Cell::text(f.skipped.join(";")),
        ]);
        t.push(row);
    }
    t.to_csv()
}
