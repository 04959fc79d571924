//! `pcieperf pmu validate`: the seed study's accuracy check in one command. A storage workload
//! with fio's options runs behind one root port while that port's PMU counts Rx and/or Tx
//! payload (multiplexed on the port's one time-based counter when both are asked for); the
//! PMU's bytes are compared with the workload's own byte count, and fio's bandwidth, runtime
//! and latency are shown beside them. On `--source perf` the workload is real fio
//! ([`pcie_pmu::accuracy::fio`]) and the PMU the kernel's; on `--source sim` both are simulated, as fast
//! as the simulation runs.

use super::live_options::check_interval;
use crate::error::CliError;
use crate::host_selection::{self as source, Source, SourceArgs};
use crate::output::{json, Cell, Format, Table};
use clap::Args;
use pcie_pmu::accuracy::fio::{self, FioRun, FioStats};
use pcie_pmu::accuracy::{
    measure, port_payload_events, Counted, JobSpec, PayloadDir, PayloadEvent, ValidateError, ValidationRow,
};
use pcie_pmu::sim::workload::{HostWorkload, Rw, StorageJob, WorkloadError};
use pcie_pmu::{PerfEvents, System};
use std::path::{Path, PathBuf};
use std::time::Duration;

#[derive(Debug, Args)]
pub struct ValidateArgs {
    #[command(flatten)]
    source: SourceArgs,
    /// Root port the storage device is behind (00:02.0 or 0000:00:02.0)
    #[arg(long, value_name = "BDF")]
    port: String,
    /// fio's rw: read, write or readwrite (half each)
    #[arg(long, default_value = "read")]
    rw: String,
    /// fio's block size (suffixes k, m)
    #[arg(long, default_value = "1M")]
    bs: String,
    /// I/Os each job keeps in flight
    #[arg(long, default_value = "64")]
    iodepth: String,
    /// Jobs submitting in parallel
    #[arg(long, default_value = "4")]
    numjobs: String,
    /// Run this long, time-based (20s unless --size is given)
    #[arg(long, conflicts_with = "size")]
    runtime: Option<String>,
    /// Bytes each job moves (fio's size, e.g. 2G: 4 jobs move 8G)
    #[arg(long)]
    size: Option<String>,
    /// Payload events to compare: rx, tx, or rx,tx (both share the port's one counter)
    #[arg(long, default_value = "rx,tx")]
    events: String,
    /// File or device fio works on with --source perf (default: the block device below the
    /// port; writes need it given explicitly, they destroy its data)
    #[arg(long, value_name = "PATH")]
    filename: Option<PathBuf>,
    /// Background workloads on other ports of the simulated host (repeatable, same syntax as
    /// `pmu stat --workload`: storage, or NIC traffic)
    #[arg(long = "workload", value_name = "SPEC")]
    workloads: Vec<String>,
    /// Read the counters every MS milliseconds
    #[arg(short = 'I', long = "interval", value_name = "MS", default_value_t = 100)]
    interval: u64,
    /// Seed of the simulated host
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Output format
    #[arg(long, value_enum, default_value_t)]
    format: Format,
}

/// A workload option as the user typed it (`--bs 1000: must be ...`).
fn option_err(e: WorkloadError) -> CliError {
    if e.key.is_empty() {
        CliError::Usage(e.reason)
    } else {
        CliError::Usage(format!("--{} {}: {}", e.key, e.value, e.reason))
    }
}

/// The workload from the options, not yet checked against a host.
fn job_spec(a: &ValidateArgs) -> JobSpec {
    JobSpec {
        port: a.port.clone(),
        rw: a.rw.clone(),
        bs: a.bs.clone(),
        iodepth: a.iodepth.clone(),
        numjobs: a.numjobs.clone(),
        runtime: a.runtime.clone(),
        size: a.size.clone(),
    }
}

/// The port's payload events for `dirs`; a port without a PMU is a usage error.
fn payload_events(sys: &System, port: &str, dirs: &[PayloadDir]) -> Result<Vec<PayloadEvent>, CliError> {
    port_payload_events(sys, port, dirs).map_err(|e| match e {
        ValidateError::Pmu(e) => e.into(),
        ValidateError::NoPmu { .. } => CliError::Usage(format!("--port {e}")),
        ValidateError::NoPayloadEvent { dir, .. } => CliError::Usage(format!("--events {}: {e}", dir.name())),
    })
}

/// What a run counted and what the workload reported.
struct Run {
    measured: Counted,
    fio: FioStats,
}

fn table(rows: &[ValidationRow], human: bool) -> Table {
    let mut t = if human {
        Table::new(&[
            ("event", "Event"),
            ("pmu_event", "PMU event"),
            ("workload_mb", "Workload MB"),
            ("pmu_mb", "PMU MB"),
            ("error_pct", "Error %"),
            ("running_pct", "Counted %"),
            ("workload_mib_s", "fio MiB/s"),
            ("runtime_s", "Runtime s"),
            ("clat_avg_ms", "clat avg ms"),
            ("clat_stdev_ms", "clat stdev ms"),
        ])
    } else {
        Table::new(&[
            ("event", "event"),
            ("pmu", "pmu"),
            ("pmu_event", "pmu_event"),
            ("workload_bytes", "workload_bytes"),
            ("pmu_bytes", "pmu_bytes"),
            ("error_pct", "error_pct"),
            ("running_pct", "running_pct"),
            ("raw", "raw"),
            ("enabled_ns", "enabled_ns"),
            ("running_ns", "running_ns"),
            ("workload_mib_s", "workload_mib_s"),
            ("runtime_s", "runtime_s"),
            ("clat_avg_ms", "clat_avg_ms"),
            ("clat_stdev_ms", "clat_stdev_ms"),
        ])
    };
    for r in rows {
        let err = r.error_pct.map_or(Cell::Empty, |e| Cell::num(e, 4));
        t.push(if human {
            vec![
                Cell::text(r.event),
                Cell::text(format!("{}/{}/", r.pmu, r.pmu_event)),
                Cell::num(r.workload_bytes as f64 / 1e6, 3),
                Cell::num(r.pmu_bytes / 1e6, 3),
                err,
                Cell::num(r.running_pct, 2),
                Cell::num(r.workload_mib_s, 1),
                Cell::num(r.runtime_s, 3),
                Cell::num(r.clat_avg_ms, 3),
                Cell::num(r.clat_stdev_ms, 3),
            ]
        } else {
            vec![
                Cell::text(r.event),
                Cell::text(r.pmu.as_str()),
                Cell::text(r.pmu_event.as_str()),
                Cell::Int(r.workload_bytes),
                Cell::num(r.pmu_bytes, 0),
                err,
                Cell::num(r.running_pct, 4),
                Cell::Int(r.raw),
                Cell::Int(r.enabled_ns),
                Cell::Int(r.running_ns),
                // Enough decimals for the simulator's nanoseconds.
                Cell::num(r.workload_mib_s, 6),
                Cell::num(r.runtime_s, 9),
                Cell::num(r.clat_avg_ms, 6),
                Cell::num(r.clat_stdev_ms, 6),
            ]
        });
    }
    t
}

pub fn run(a: &ValidateArgs) -> Result<String, CliError> {
    check_interval(Some(a.interval))?;
    let dirs = PayloadDir::parse_list(&a.events).map_err(|e| CliError::Usage(format!("--events {}: {e}", a.events)))?;
    let spec = job_spec(a);
    let j = spec.job().map_err(option_err)?;
    let interval = Duration::from_millis(a.interval);
    let (run, what) = match Source::parse(&a.source.source)? {
        Source::Sim(p) => {
            if a.filename.is_some() {
                return Err(CliError::Usage("--filename: only with --source perf".into()));
            }
            spec.check_sim(&j).map_err(option_err)?;
            if a.source.sysfs != Path::new("/") {
                return Err(CliError::Usage("--sysfs: only with --source perf".into()));
            }
            let profile = source::load_profile(&p)?;
            let mut jobs = vec![HostWorkload::Storage(
                StorageJob::new(&profile, j.clone()).map_err(option_err)?,
            )];
            for w in &a.workloads {
                let b = HostWorkload::parse(&profile, w).map_err(source::workload_err)?;
                if b.port() == j.port {
                    return Err(CliError::Usage(format!(
                        "--workload {w}: runs on the validated port {}; give background workloads other ports",
                        j.port
                    )));
                }
                jobs.push(b);
            }
            let (sys, mut host) = source::start_sim(profile, &jobs, a.seed, false)?;
            let events = payload_events(&sys, &j.port, &dirs)?;
            // The validated workload is the first; background ones may run on.
            let measured = measure(&mut host, events, interval, |h| -> Result<bool, CliError> {
                Ok(h.host().workload_finished(0))
            })?;
            let stats = host
                .host()
                .storage_stats(0)
                .ok_or_else(|| CliError::Runtime("the validated workload is not a storage workload".into()))?;
            let run = Run {
                measured,
                fio: FioStats::from_sim(&stats),
            };
            (run, "simulated")
        }
        Source::Perf => {
            if let Some(w) = a.workloads.first() {
                return Err(CliError::Usage(format!("--workload {w}: only with --source sim")));
            }
            (perf(a, &j, &dirs, interval)?, "measured")
        }
    };
    let secs = run.measured.secs;
    let rows = run.measured.rows(&run.fio);
    Ok(match a.format {
        Format::Table => format!(
            "{}\n{}; {secs:.3} s {what}\n",
            table(&rows, true).to_human(),
            spec.describe(&j)
        ),
        Format::Csv => table(&rows, false).to_csv(),
        Format::Json => json(&rows),
    })
}

/// Real counting while fio runs on `--filename` (or the block device below the port).
fn perf(a: &ValidateArgs, j: &StorageJob, dirs: &[PayloadDir], interval: Duration) -> Result<Run, CliError> {
    let sys = source::discover_perf(&a.source.sysfs)?;
    let events = payload_events(&sys, &j.port, dirs)?;
    let fio_err = |e: fio::FioError| CliError::Runtime(e.to_string());
    fio::check_installed().map_err(|e| CliError::Runtime(format!("{e} or use --source sim")))?;
    let filename = match &a.filename {
        Some(f) => f.clone(),
        None => {
            let dev = fio::block_device_below(&sys, &j.port)?.ok_or_else(|| {
                CliError::Usage(format!(
                    "--port {}: no block device below this root port; give --filename",
                    j.port
                ))
            })?;
            if j.rw != Rw::Read {
                return Err(CliError::Usage(format!(
                    "--rw {}: writing to {} would destroy its data; give --filename explicitly for write runs",
                    j.rw.name(),
                    dev.display()
                )));
            }
            dev
        }
    };
    let mut src = PerfEvents::new();
    let mut fio_run: Option<FioRun> = None;
    let mut stats = None;
    let measured = measure(&mut src, events, interval, |_| -> Result<bool, CliError> {
        let Some(run) = fio_run.as_mut() else {
            // Started after the counters are open and read, so they see all of it.
            fio_run = Some(FioRun::start(j, &filename).map_err(fio_err)?);
            return Ok(false);
        };
        match run.poll() {
            None => Ok(false),
            Some(r) => {
                stats = Some(r.map_err(fio_err)?);
                Ok(true)
            }
        }
    })?;
    Ok(Run {
        measured,
        fio: stats.ok_or_else(|| CliError::Runtime("fio did not finish".into()))?,
    })
}
