//! `pcieperf check`: every PCIe link of the host (or of a snapshot with `--sysfs`), its
//! limiting hop, MPS/MRRS/tags, ASPM, AER, NUMA and power, each finding priced by the model
//! (pcie-health does the work); `--wake` hands pcie-health the GPU load (pcie-gpu's copies
//! through the CUDA driver). Exit status 3 when something is at warning or above.

use crate::error::CliError;
use crate::host_selection::{read_lspci, SimArgs, SourceArgs};
use crate::output::{json, Cell, Format, Table};
use clap::Args;
use pcie_health::{
    rate_name, CheckError, FunctionHealth, Options, Report, Sampling, Traffic, WakeOptions, WAKE_SECONDS,
};
use pcie_sysfs::Bdf;
use std::fmt::Write;
use std::path::PathBuf;
use std::time::Duration;

#[derive(Debug, Args)]
pub struct CheckArgs {
    /// perf (or --sysfs ROOT): this host's tree, or a directory `pcieperf snapshot` wrote;
    /// sim[:PROFILE]: a simulated host's (yitian710-degraded carries faults)
    #[command(flatten)]
    pub source: SourceArgs,
    /// Check the host an `lspci -vvv` dump describes (FILE, or - for stdin) instead: add -nn
    /// for ids, -xxxx (as root) for the exact config space (a dump holds no counters to watch)
    #[arg(long, value_name = "FILE", conflicts_with_all = ["source", "sysfs", "interval", "duration", "workloads"])]
    pub lspci: Option<PathBuf>,
    /// With --source sim: a workload on the simulated host (repeatable, as `pmu stat
    /// --workload`), whose traffic its devices' counters show
    #[arg(long = "workload", value_name = "SPEC")]
    pub workloads: Vec<String>,
    /// Output format
    #[arg(long, value_enum, default_value_t)]
    pub format: Format,
    /// Read the AER counters and the block devices' and network interfaces' byte counters
    /// every MS milliseconds for --duration: each error type's rate, each device's payload
    /// against what its path carries
    #[arg(short = 'I', long = "interval", value_name = "MS", requires = "duration")]
    pub interval: Option<u64>,
    /// Watch the AER and traffic counters for S seconds (one interval unless -I is given)
    #[arg(long, value_name = "S", allow_negative_numbers = true)]
    pub duration: Option<f64>,
    /// Read the NVIDIA GPUs through NVML (libnvidia-ml.so.1) even with --sysfs: link as the
    /// GPU sees it, replays, PCIe bytes [default: on the live host only]
    #[arg(long, conflicts_with = "lspci")]
    pub nvml: bool,
    /// Put each device (every one with a slow link when none is named) to work for a second
    /// through its own driver and re-read its links: power saving or a fault. GPUs: copies
    /// through the CUDA driver; NVMe: direct reads of its namespace (read-only); writes nothing
    #[arg(long, value_name = "BDF", num_args = 0.., conflicts_with = "lspci")]
    pub wake: Option<Vec<String>>,
}

/// Exit status of a check that found something at warning or above.
pub const EXIT_FINDINGS: u8 = 3;

fn sampling(a: &CheckArgs) -> Result<Option<Sampling>, CliError> {
    crate::pmu::live_options::check_interval(a.interval)?;
    crate::pmu::live_options::check_duration(a.duration)?;
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
    let opts = Options {
        sampling: sampling(a)?,
        nvml: a.nvml || (a.lspci.is_none() && a.source.is_live_host()),
    };
    let imported = match &a.lspci {
        Some(file) => {
            let functions = read_lspci(file)?;
            let dir = pcie_output::PrivateDir::for_tree("pcieperf-lspci")
                .map_err(|e| CliError::Runtime(format!("a temporary directory: {e}")))?;
            let s = pcie_sysfs::lspci::write_snapshot(&functions, dir.path())
                .map_err(|e| CliError::Runtime(e.to_string()))?;
            if let Some(gaps) = s.gaps() {
                eprintln!("warning: {gaps}");
            }
            Some(dir)
        }
        None => None,
    };
    // A simulated host's clock runs while it is checked, so its AER counters grow.
    let (root, _sim) = match &imported {
        Some(dir) => (dir.path().to_path_buf(), None),
        None => {
            let sim = SimArgs {
                workloads: a.workloads.clone(),
                fast: false,
                seed: 1,
            };
            crate::host_selection::tree(&a.source, &sim)?
        }
    };
    let wake = a.wake.as_ref().map(|names| wake_targets(names)).transpose()?;
    let mut report = pcie_health::check(&root, &opts).map_err(|e| match e {
        CheckError::NoRoot(_) => CliError::Usage(format!("--sysfs {e}")),
        CheckError::Sysfs(_) => CliError::Runtime(e.to_string()),
    })?;
    if let Some(targets) = wake {
        let gpu = |bdf: Bdf, most: Duration| pcie_gpu::wake::busy_copies(&bdf.to_string(), most);
        let opts = WakeOptions {
            targets,
            duration: Duration::from_secs_f64(WAKE_SECONDS),
            gpu: Some(&gpu),
        };
        pcie_health::wake(&root, &mut report, &opts).map_err(|e| CliError::Usage(format!("--wake {e}")))?;
    }
    let text = match a.format {
        Format::Table => human(&report),
        Format::Csv => csv(&report),
        Format::Json => json(&report),
    };
    Ok((text, if report.needs_attention() { EXIT_FINDINGS } else { 0 }))
}

/// The addresses `--wake` names.
fn wake_targets(names: &[String]) -> Result<Vec<Bdf>, CliError> {
    names
        .iter()
        .map(|n| n.parse().map_err(|e| CliError::Usage(format!("--wake {e}"))))
        .collect()
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
    let mut parts: Vec<String> = [("cor", a.correctable), ("nonfatal", a.nonfatal), ("fatal", a.fatal)]
        .iter()
        .filter_map(|(n, v)| v.map(|v| format!("{n} {v}")))
        .collect();
    if parts.is_empty() {
        // No counters: the status registers' sticky bits, where config space shows them.
        let set: Vec<&str> = a
            .status_correctable
            .iter()
            .chain(&a.status_uncorrectable)
            .copied()
            .collect();
        if !set.is_empty() {
            parts.push(format!("status {}", set.join(" ")));
        }
    }
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
    // Every Linux host lists node0 at least: none listed is a tree that does not say.
    let nodes = match r.numa_nodes.len() {
        0 => "NUMA nodes unknown".to_string(),
        1 => "1 NUMA node".to_string(),
        n => format!("{n} NUMA nodes"),
    };
    let _ = writeln!(
        out,
        "{} PCI functions, {} with a PCIe link; ASPM policy {}; {nodes}{}",
        r.functions.len(),
        r.links,
        r.aspm_policy.as_deref().unwrap_or("unknown"),
        r.sampled_seconds.map_or(String::new(), |s| format!(
            "; AER and traffic counters watched for {s:.1} s"
        ))
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
    // A server lists hundreds of functions with nothing to say (uncore, host bridges,
    // integrated devices): rows for those with a link or a finding, a count of the rest.
    let found: std::collections::BTreeSet<_> = r.findings.iter().map(|x| x.bdf).collect();
    let (devices, quiet): (Vec<&FunctionHealth>, Vec<&FunctionHealth>) = r
        .functions
        .iter()
        .filter(|f| !f.is_bridge)
        .partition(|f| f.link.is_some() || !f.path.is_empty() || found.contains(&f.bdf));
    if !devices.is_empty() {
        out.push_str("\nDevices (Gb/s: 4 KiB DMA writes through the path now, and with every hop at its best):\n");
        out.push_str(&function_table(&COLUMNS, &devices));
        let paths: Vec<&&FunctionHealth> = devices.iter().filter(|f| !f.path.is_empty()).collect();
        if !paths.is_empty() {
            out.push_str("\nPaths from the root port (each link as it runs, of what both its ends can do):\n");
            for f in paths {
                let _ = writeln!(out, "  {}: {}", f.bdf, path_text(f));
            }
        }
        if r.sampled_seconds.is_some() {
            // The error types that occurred; JSON and CSV carry every type's rate, zeros too.
            let watched = r.functions.iter().filter(|f| !f.aer.rates.is_empty()).count();
            let erring: Vec<(&FunctionHealth, String)> = r
                .functions
                .iter()
                .filter_map(|f| {
                    let on: Vec<String> = f
                        .aer
                        .rates
                        .iter()
                        .filter(|(_, r)| *r > 0.0)
                        .map(|(n, r)| format!("{n} {r:.2}/s"))
                        .collect();
                    (!on.is_empty()).then(|| (f, on.join("; ")))
                })
                .collect();
            let functions = if watched == 1 { "function" } else { "functions" };
            if erring.is_empty() {
                let _ = writeln!(
                    out,
                    "\nAER rates: no errors while watched ({watched} {functions} with AER counters)"
                );
            } else {
                let _ = writeln!(
                    out,
                    "\nAER rates (peak over one interval; the types that occurred, on {} of {watched} {functions} with AER counters):",
                    erring.len()
                );
                for (f, text) in erring {
                    let _ = writeln!(out, "  {}: {text}", f.bdf);
                }
            }
        }
    }
    if r.sampled_seconds.is_some() {
        let moving: Vec<&FunctionHealth> = r.functions.iter().filter(|f| f.traffic.is_some()).collect();
        if !moving.is_empty() {
            out.push_str(
                "\nTraffic (Gb/s of payload the block devices and interfaces counted, over the whole time and its \
                 busiest interval, of what the model gives 4 KiB DMA writes up and reads down through the path):\n",
            );
            out.push_str(&function_table(&TRAFFIC, &moving));
        }
    }
    for (_, title, lines) in extra_sections(r) {
        if !lines.is_empty() {
            let _ = writeln!(out, "\n{title}:");
            for (bdf, line) in lines {
                let _ = writeln!(out, "  {bdf}: {line}");
            }
        }
    }
    if !quiet.is_empty() {
        let _ = writeln!(
            out,
            "\n{} functions without a PCIe link or a finding are not listed (host bridges, uncore, \
             integrated or virtual devices): --format json or csv lists every function",
            quiet.len()
        );
    }
    out.push_str(&crate::check_gpus::human(r));
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

/// A section: its CSV record, title and lines.
type Section = (&'static str, &'static str, Vec<(Bdf, String)>);

/// Lines of the sections after the devices (the table's; CSV rows of their `record`): what
/// --wake found, how the devices below each switch reach each other, which links changed
/// while watched. Each: (CSV record, title, [(bdf, text)]).
fn extra_sections(r: &Report) -> [Section; 3] {
    let wake = r
        .wake
        .iter()
        .map(|w| {
            let how = w
                .done
                .as_deref()
                .or(w.error.as_deref())
                .map_or(String::new(), |d| format!(" ({d})"));
            let verdict = if w.error.is_some() {
                w.verdict.clone()
            } else {
                format!("{}{how}", w.verdict)
            };
            (w.bdf, verdict)
        })
        .collect();
    let p2p = r
        .p2p
        .iter()
        .map(|p| {
            let route = match p.route {
                "switch" => "inside the switch".to_string(),
                "root_complex" => {
                    let by: Vec<String> = p.redirected_by.iter().map(|b| b.to_string()).collect();
                    format!("through the root complex (ACS ReqRedir+ at {})", by.join(", "))
                }
                _ => "unknown (ACS unread: run as root)".to_string(),
            };
            let gbps = match (p.switch_gbps, p.root_complex_gbps) {
                (Some(i), Some(rc)) if p.route == "root_complex" => {
                    format!("; 4 KiB writes both ways at once: {rc:.1} Gb/s each way, {i:.1} inside the switch")
                }
                (Some(i), _) => format!("; 4 KiB writes both ways at once: {i:.1} Gb/s each way"),
                _ => String::new(),
            };
            (p.a, format!("with {} below switch {}: {route}{gbps}", p.b, p.switch))
        })
        .collect();
    let changes = r
        .link_changes
        .iter()
        .map(|c| {
            let busy = c.busy_drop.as_deref().map_or(String::new(), |d| format!("; {d}"));
            (
                c.bdf,
                format!(
                    "{} changes in {} readings ({:.1}/min), {} to {}{busy}",
                    c.changes,
                    c.readings,
                    c.per_minute,
                    rate_name(c.lowest.0, c.lowest.1),
                    rate_name(c.highest.0, c.highest.1)
                ),
            )
        })
        .collect();
    [
        (
            "wake",
            "Under load (--wake: each device put to work through its driver, its links re-read)",
            wake,
        ),
        (
            "p2p",
            "Peer to peer below switches (GPUs, NICs, NVMe; the model's 4 KiB DMA writes)",
            p2p,
        ),
        (
            "link_change",
            "Links whose speed or width changed while watched",
            changes,
        ),
    ]
}

fn atomics_text(f: &FunctionHealth) -> Option<String> {
    let a = f.atomics.as_ref()?;
    let port = a.port.map_or(String::new(), |p| format!(" at {p}"));
    Some(match a.reach_root {
        Some(true) => "reach the root complex".to_string(),
        Some(false) => format!("blocked{port}: {}", a.reason.as_deref().unwrap_or("")),
        None => format!("unknown{port}: {}", a.reason.as_deref().unwrap_or("")),
    })
}

/// A function's column: CSV name, heading, shown in the table, value.
type Column = (&'static str, &'static str, bool, fn(&FunctionHealth) -> Cell);

/// A table of `functions`, a row each: the address, then the `columns` marked shown.
fn function_table(columns: &[Column], functions: &[&FunctionHealth]) -> String {
    let shown: Vec<&Column> = columns.iter().filter(|c| c.2).collect();
    let mut heads = vec![("bdf", "Function")];
    heads.extend(shown.iter().map(|c| (c.0, c.1)));
    let mut t = Table::new(&heads);
    for f in functions {
        let mut row = vec![Cell::text(f.bdf.to_string())];
        row.extend(shown.iter().map(|c| (c.3)(f)));
        t.push(row);
    }
    t.to_human()
}

/// A figure of a function's traffic.
fn traffic(f: &FunctionHealth, get: fn(&Traffic) -> Option<f64>) -> Cell {
    num(f.traffic.as_ref().and_then(get))
}

/// The traffic's columns (heading, value): in the table's traffic section and in CSV.
const TRAFFIC: [Column; 9] = [
    ("traffic_devices", "Devices", true, |f| {
        opt(&f.traffic.as_ref().map(|t| t.devices.join(" ")))
    }),
    ("upstream_bytes", "Up bytes", false, |f| {
        opt(&f.traffic.as_ref().map(|t| t.upstream_bytes))
    }),
    ("downstream_bytes", "Down bytes", false, |f| {
        opt(&f.traffic.as_ref().map(|t| t.downstream_bytes))
    }),
    ("upstream_gbps", "Up", true, |f| traffic(f, |t| t.upstream_gbps)),
    ("upstream_peak_gbps", "peak", true, |f| {
        traffic(f, |t| t.upstream_peak_gbps)
    }),
    ("upstream_capacity_gbps", "of", true, |f| {
        traffic(f, |t| t.upstream_capacity_gbps)
    }),
    ("downstream_gbps", "Down", true, |f| traffic(f, |t| t.downstream_gbps)),
    ("downstream_peak_gbps", "peak", true, |f| {
        traffic(f, |t| t.downstream_peak_gbps)
    }),
    ("downstream_capacity_gbps", "of", true, |f| {
        traffic(f, |t| t.downstream_capacity_gbps)
    }),
];

/// The columns of a function, in the table (where marked) and in CSV.
const COLUMNS: [Column; 27] = [
    ("id", "Id", true, |f| opt(&f.id)),
    ("class", "Class", false, |f| opt(&f.class)),
    ("driver", "Driver", true, |f| opt(&f.driver)),
    ("port_type", "Type", false, |f| opt(&f.port_type)),
    ("link", "Link", true, |f| opt(&link_text(f))),
    ("limited_by", "Limited by", true, |f| opt(&f.limited_by)),
    ("path", "Path", false, |f| Cell::text(path_text(f))),
    ("available_gbps", "Gb/s", true, |f| num(f.available_gbps)),
    ("capable_gbps", "of", true, |f| num(f.capable_gbps)),
    ("demand_gbps", "Demand Gb/s", false, |f| num(f.demand_gbps)),
    ("demand_source", "Demand source", false, |f| {
        opt(&f.demand.as_ref().map(|d| d.source.name()))
    }),
    ("mps", "MPS", true, |f| opt(&f.mps)),
    ("mps_supported", "MPS supported", false, |f| opt(&f.mps_supported)),
    ("path_mps", "Path MPS", true, |f| opt(&f.path_mps)),
    ("mrrs", "MRRS", true, |f| opt(&f.mrrs)),
    ("tags", "Tags", true, |f| opt(&tags_text(f))),
    ("aspm", "ASPM", true, |f| opt(&f.aspm)),
    ("numa_node", "NUMA", true, |f| opt(&f.numa_node)),
    ("local_cpus", "CPUs", true, |f| opt(&f.local_cpus)),
    ("power", "Power", true, |f| opt(&power_text(f))),
    ("iommu_group_type", "IOMMU", false, |f| opt(&f.iommu_group_type)),
    ("aer", "AER", true, |f| opt(&aer_text(f))),
    ("aer_rates", "AER rates", false, |f| Cell::text(rates_text(f))),
    ("has_aer", "AER capability", false, |f| opt(&f.has_aer)),
    ("cannot_tell", "Cannot tell", false, |f| {
        Cell::text(f.cannot_tell.join("; "))
    }),
    ("skipped", "Skipped", false, |f| Cell::text(f.skipped.join(";"))),
    ("atomics", "AtomicOps", false, |f| opt(&atomics_text(f))),
];

/// One CSV: a row per finding (`record` = finding), a row per line of the wake, peer-to-peer
/// and link-change sections (`record` = wake, p2p, link_change: the line in `message`), then a
/// row per function (`record` = function) with every column, so it carries everything the
/// table shows.
fn csv(r: &Report) -> String {
    let mut heads = vec![
        ("record", "record"),
        ("severity", "severity"),
        ("kind", "kind"),
        ("lost_pct", "lost_pct"),
        ("message", "message"),
        ("bdf", "bdf"),
    ];
    heads.extend(COLUMNS.iter().chain(&TRAFFIC).map(|c| (c.0, c.0)));
    let gpu_heads = crate::check_gpus::csv_heads(r);
    let gpu_empty = || gpu_heads.iter().map(|_| Cell::Empty);
    heads.extend(&gpu_heads);
    let mut t = Table::new(&heads);
    for f in &r.findings {
        let mut row = vec![
            Cell::text("finding"),
            Cell::text(f.severity.name()),
            Cell::text(f.kind.name()),
            f.lost_pct.map_or(Cell::Empty, |p| Cell::num(p, 4)),
            Cell::text(f.message.as_str()),
            Cell::text(f.bdf.to_string()),
        ];
        row.extend(COLUMNS.iter().chain(&TRAFFIC).map(|c| {
            if c.0 == "limited_by" {
                opt(&f.limited_by)
            } else {
                Cell::Empty
            }
        }));
        row.extend(gpu_empty());
        t.push(row);
    }
    for (record, _, lines) in extra_sections(r) {
        for (bdf, text) in lines {
            let mut row = vec![
                Cell::text(record),
                Cell::Empty,
                Cell::Empty,
                Cell::Empty,
                Cell::text(text),
                Cell::text(bdf.to_string()),
            ];
            row.extend(COLUMNS.iter().chain(&TRAFFIC).map(|_| Cell::Empty));
            t.push(row);
        }
    }
    for f in &r.functions {
        let mut row = vec![
            Cell::text("function"),
            Cell::Empty,
            Cell::Empty,
            Cell::Empty,
            Cell::Empty,
        ];
        row.push(Cell::text(f.bdf.to_string()));
        row.extend(COLUMNS.iter().chain(&TRAFFIC).map(|c| (c.3)(f)));
        row.extend(gpu_empty());
        t.push(row);
    }
    for g in &r.gpus {
        let mut row = vec![Cell::text("gpu"), Cell::Empty, Cell::Empty, Cell::Empty, Cell::Empty];
        row.push(Cell::text(g.bdf.as_str()));
        row.extend(COLUMNS.iter().chain(&TRAFFIC).map(|_| Cell::Empty));
        row.extend(crate::check_gpus::csv_cells(g));
        t.push(row);
    }
    t.to_csv()
}
