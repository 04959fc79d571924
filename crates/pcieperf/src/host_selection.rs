//! Where PMUs and counts come from: `--source perf` (this host's kernel: PMUs discovered under
//! `--sysfs`, counted with perf_event_open) or `--source sim[:PROFILE]` (a simulated host,
//! `yitian710` by default, with `--workload` storage jobs, paced to wall-clock time unless
//! `--fast`). Every `pmu` command that counts opens its source through [`open`]; `check` and
//! `pmu serve` read the tree of the host chosen ([`tree`]), and `check` and `snapshot` an
//! `lspci -vvv` dump (`--lspci`, [`read_lspci`]).

use crate::error::CliError;
use clap::Args;
use pcie_pmu::sim::{builtin_pmu_hosts, HostWorkload, PmuHostProfile, SimHost, WorkloadError};
use pcie_pmu::{CounterSource, PerfEvents, PmuError, System};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

/// The options that choose a source (flatten into a command's arguments).
#[derive(Debug, Clone, Args)]
pub struct SourceArgs {
    /// perf: this host (its kernel PMUs, its PCI tree); sim[:PROFILE]: a simulated host
    /// (built-in profiles yitian710, yitian710-narrow, yitian710-nvme, yitian710-degraded with
    /// faults, or a .toml file)
    #[arg(long, value_name = "perf|sim[:PROFILE]", default_value = "perf")]
    pub source: String,
    /// Root of the sysfs/procfs tree to read with --source perf (ROOT/sys/..., ROOT/proc/cpuinfo)
    #[arg(long, value_name = "ROOT", default_value = "/")]
    pub sysfs: PathBuf,
}

impl SourceArgs {
    /// This host, live (not a snapshot or a simulated host): where NVML's answers belong.
    pub fn is_live_host(&self) -> bool {
        self.source == "perf" && self.sysfs == std::path::Path::new("/")
    }
}

/// What a simulated host runs (flatten into commands that count).
#[derive(Debug, Clone, Default, Args)]
pub struct SimArgs {
    /// A workload on the simulated host (repeatable): storage with fio's option names,
    /// port=BDF,rw=read|write|readwrite,bs=1M,iodepth=64,numjobs=4[,runtime=20s][,size=2G],
    /// or NIC traffic on an x16 port, port=BDF,rx=GBPS,tx=GBPS[,pkt=1500][,runtime=20s]
    #[arg(long = "workload", value_name = "SPEC")]
    pub workloads: Vec<String>,
    /// Run the simulated host as fast as possible instead of at wall-clock pace
    #[arg(long)]
    pub fast: bool,
    /// Seed of the simulated host (same seed, same counts)
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
}

/// A parsed `--source`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    Perf,
    /// A PMU host profile name or path.
    Sim(String),
}

impl Source {
    pub fn parse(text: &str) -> Result<Source, CliError> {
        match text.split_once(':') {
            None if text == "perf" => Ok(Source::Perf),
            None if text == "sim" => Ok(Source::Sim("yitian710".into())),
            Some(("sim", p)) if !p.is_empty() => Ok(Source::Sim(p.to_string())),
            _ => Err(CliError::Usage(format!(
                "--source {text}: must be perf, sim or sim:PROFILE (built-in profiles: {}, or a .toml file)",
                builtin_pmu_hosts().join(", ")
            ))),
        }
    }
}

/// Load a PMU host profile; an unknown one is a usage error naming the built-in ones.
pub fn load_profile(name: &str) -> Result<PmuHostProfile, CliError> {
    PmuHostProfile::load(name).map_err(|e| CliError::Usage(format!("--source sim:{name}: {e}")))
}

/// A workload problem as the user typed it.
pub fn workload_err(e: WorkloadError) -> CliError {
    CliError::Usage(e.to_string())
}

/// Start a simulated host with `workloads`; returns its PMUs and the concrete source (for callers
/// that also need the simulation's own byte counts, as `pmu validate` does).
pub fn start_sim(
    profile: PmuHostProfile,
    workloads: &[HostWorkload],
    seed: u64,
    paced: bool,
) -> Result<(System, SimHost), CliError> {
    SimHost::start(profile, workloads, seed, paced).map_err(|e| CliError::Runtime(e.to_string()))
}

/// Start the simulated host `profile` running `sim`'s workloads (checked against it) with its
/// seed.
fn start_workloads(profile: &str, sim: &SimArgs, paced: bool) -> Result<(System, SimHost), CliError> {
    let profile = load_profile(profile)?;
    let jobs = sim
        .workloads
        .iter()
        .map(|w| HostWorkload::parse(&profile, w))
        .collect::<Result<Vec<_>, _>>()
        .map_err(workload_err)?;
    start_sim(profile, &jobs, sim.seed, paced)
}

/// This host's PMUs under `--sysfs`; a root that is not a sysfs tree is a usage error.
pub fn discover_perf(root: &std::path::Path) -> Result<System, CliError> {
    System::discover(root).map_err(|e| match e {
        PmuError::NoRoot(_) | PmuError::NoEventSource(_) => {
            CliError::Usage(e.to_string().replacen("sysfs root", "--sysfs", 1))
        }
        e => e.into(),
    })
}

fn check_combination(a: &SourceArgs, source: &Source, sim: Option<&SimArgs>) -> Result<(), CliError> {
    if matches!(source, Source::Sim(_)) && a.sysfs != std::path::Path::new("/") {
        return Err(CliError::Usage(format!(
            "--sysfs {}: only with --source perf (a simulated host has its own tree)",
            a.sysfs.display()
        )));
    }
    if let (Source::Perf, Some(s)) = (source, sim) {
        if let Some(w) = s.workloads.first() {
            return Err(CliError::Usage(format!(
                "--workload {w}: only with --source sim (on a real host, run the workload yourself or after --)"
            )));
        }
    }
    Ok(())
}

/// The PMUs of `--source`, for commands that only describe them (`pmu list`).
pub fn discover(a: &SourceArgs) -> Result<System, CliError> {
    let source = Source::parse(&a.source)?;
    check_combination(a, &source, None)?;
    match source {
        Source::Perf => discover_perf(&a.sysfs),
        // The tree is read into memory; the source (and its directory) can go.
        Source::Sim(p) => Ok(start_sim(load_profile(&p)?, &[], 1, false)?.0),
    }
}

/// A simulated host whose clock runs on a thread of its own, paced to the wall clock, until it
/// is dropped: its tree is read meanwhile as a real host's is, AER counters growing.
pub struct RunningSim {
    stop: Arc<AtomicBool>,
    clock: Option<JoinHandle<()>>,
}

impl Drop for RunningSim {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.clock.take() {
            let _ = t.join();
        }
    }
}

/// The tree `--source` names, for readers of PCI functions (`check`): `--sysfs` with `perf`,
/// or a simulated host's running `sim`'s workloads, paced to the wall clock, until the
/// [`RunningSim`] is dropped (its tree with it).
pub fn tree(a: &SourceArgs, sim: &SimArgs) -> Result<(PathBuf, Option<RunningSim>), CliError> {
    let source = Source::parse(&a.source)?;
    check_combination(a, &source, Some(sim))?;
    let Source::Sim(p) = source else {
        return Ok((a.sysfs.clone(), None));
    };
    let (sys, mut host) = start_workloads(&p, sim, true)?;
    let stop = Arc::new(AtomicBool::new(false));
    let stopped = Arc::clone(&stop);
    let clock = std::thread::spawn(move || {
        while !stopped.load(Ordering::Relaxed) {
            if host.sleep(std::time::Duration::from_millis(20)).is_err() {
                break;
            }
        }
    });
    let running = RunningSim {
        stop,
        clock: Some(clock),
    };
    Ok((sys.root.path().to_path_buf(), Some(running)))
}

/// Open `--source` for counting: the PMUs to resolve events against, and the counter source
/// whose clock the command waits and timestamps on. A simulated host starts its `--workload`s
/// at time 0 and runs paced to wall-clock time unless `--fast`.
pub fn open(a: &SourceArgs, sim: &SimArgs) -> Result<(System, Box<dyn CounterSource>), CliError> {
    let source = Source::parse(&a.source)?;
    check_combination(a, &source, Some(sim))?;
    match source {
        Source::Perf => Ok((discover_perf(&a.sysfs)?, Box::new(PerfEvents::new()))),
        Source::Sim(p) => {
            let (sys, host) = start_workloads(&p, sim, !sim.fast)?;
            Ok((sys, Box::new(host)))
        }
    }
}

/// The functions of the `lspci -vvv` dump in `file` (`-`: stdin).
pub fn read_lspci(file: &Path) -> Result<Vec<pcie_sysfs::lspci::LspciFunction>, CliError> {
    use pcie_output::read::{self, Limit};
    let bytes = if file == Path::new("-") {
        read::read_stream(std::io::stdin().lock(), Limit::LSPCI_DUMP)
    } else {
        read::read(file, Limit::LSPCI_DUMP)
    }
    .map_err(|e| CliError::Usage(format!("--lspci {}: {e}", file.display())))?;
    pcie_sysfs::lspci::parse(&String::from_utf8_lossy(&bytes))
        .map_err(|e| CliError::Usage(format!("--lspci {}: {e}", file.display())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sources_parse() {
        assert_eq!(Source::parse("perf").unwrap(), Source::Perf);
        assert_eq!(Source::parse("sim").unwrap(), Source::Sim("yitian710".into()));
        assert_eq!(
            Source::parse("sim:yitian710-narrow").unwrap(),
            Source::Sim("yitian710-narrow".into())
        );
        let e = Source::parse("simulator").unwrap_err().to_string();
        assert!(e.contains("--source simulator: must be perf, sim or sim:PROFILE") && e.contains("yitian710"));
        let e = load_profile("pentium").unwrap_err().to_string();
        assert!(
            e.contains("--source sim:pentium") && e.contains("yitian710-narrow"),
            "{e}"
        );
    }
}
