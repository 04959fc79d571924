//! What the counting commands share on the command line: the live commands' options
//! ([`WatchArgs`]), the `-I` / `--duration` checks, and the messages the monitor's findings
//! print as (wrap warnings, a failed command, a host without payload events).

use crate::error::CliError;
use crate::host_selection::{self as source, SimArgs, SourceArgs};
use clap::Args;
use pcie_pmu::monitor::{payload_events, resolve_events, Monitor, MonitorError, Plan, Requested, RunSummary};
use pcie_pmu::{CounterError, CounterSource};
use std::path::PathBuf;

/// An opened source: the monitor (`None`: nothing to count), the source, the host's sysfs root.
pub type Opened = (Option<Monitor>, Box<dyn CounterSource>, PathBuf);

/// Options shared by the live commands (`top`, `record`, `serve`).
#[derive(Debug, Args)]
pub struct WatchArgs {
    /// Events: PMU/EVENT[,TERM=VALUE...]/ specs separated by commas, may be repeated [default:
    /// the rx_bytes / tx_bytes payload events of every PCIe PMU]
    #[arg(short = 'e', long = "events", value_name = "EVENTS")]
    pub events: Vec<String>,
    #[command(flatten)]
    pub source: SourceArgs,
    #[command(flatten)]
    pub sim: SimArgs,
    /// Read the counters every MS milliseconds
    #[arg(short = 'I', long = "interval", value_name = "MS", default_value_t = 1000)]
    pub interval: u64,
}

impl WatchArgs {
    /// Discover, resolve the events (or the default payload events), plan and open them.
    pub fn open(&self) -> Result<(Monitor, Box<dyn CounterSource>), CliError> {
        let (mon, src, _) = self.open_on(false)?;
        Ok((mon.expect("a monitor unless allowed none"), src))
    }

    /// As [`WatchArgs::open`], but a host without payload events (no PCIe PMU) and no `-e`
    /// gives no monitor rather than an error; also returns the host's sysfs root.
    pub fn open_or_none(&self) -> Result<Opened, CliError> {
        self.open_on(true)
    }

    fn open_on(&self, none_ok: bool) -> Result<Opened, CliError> {
        check_interval(Some(self.interval))?;
        let (sys, mut src) = source::open(&self.source, &self.sim)?;
        let root = sys.root.path().to_path_buf();
        if none_ok && self.events.is_empty() && matches!(payload_events(&sys), Err(MonitorError::NoPayloadEvents)) {
            return Ok((None, src, root));
        }
        let events = if self.events.is_empty() {
            let place = match self.source.source.as_str() {
                "perf" => format!("--sysfs {}", self.source.sysfs.display()),
                other => format!("--source {other}"),
            };
            payload_events(&sys)
                .map_err(|e| match e {
                    MonitorError::NoPayloadEvents => usage(format!(
                        "{place}: {e}; name events with -e (e.g. -e software/cpu-clock/), see `pcieperf pmu list`; \
                         what each device's block devices and interfaces move: `pcieperf check -I 1000 --duration 10`"
                    )),
                    e => e.into(),
                })?
                .into_iter()
                .map(Requested::from)
                .collect()
        } else {
            resolve_events(&sys, &self.events)?
        };
        let plan = Plan::new(&sys, events)?;
        warn_wraps(&plan, self.interval as f64 / 1000.0);
        let mon = Monitor::open(src.as_mut(), plan)?;
        Ok((Some(mon), src, root))
    }
}

/// Print the plan's wrap warnings for reads `read_every` seconds apart.
pub fn warn_wraps(plan: &Plan, read_every: f64) {
    for w in plan.wrap_warnings(read_every) {
        eprintln!(
            "warning: {}: a {}-bit counter of {} B units wraps every {:.2} s at the link's {:.1} Gb/s, \
             and reads every {} s can miss wraps; use -I {} or a kernel whose driver polls the counter",
            w.event,
            w.width,
            w.bytes_per_count,
            w.wraps_every_s,
            w.link_gbps,
            w.read_every_s,
            w.safe_interval_ms()
        );
    }
}

/// Print a warning when the command counted behind did not succeed.
pub fn warn_command(summary: &RunSummary) {
    if let Some(s) = summary.command_failure() {
        eprintln!("warning: the command exited with {s}");
    }
}

pub fn usage(m: impl Into<String>) -> CliError {
    CliError::Usage(m.into())
}

pub fn counter_err(e: CounterError) -> CliError {
    if e.is_input() {
        CliError::Usage(e.to_string())
    } else {
        CliError::Runtime(e.to_string())
    }
}

/// Event-list problems name `-e`; the rest keep the library's words.
impl From<MonitorError> for CliError {
    fn from(e: MonitorError) -> Self {
        match e {
            MonitorError::Pmu(e) => e.into(),
            MonitorError::Counter(e) => counter_err(e),
            MonitorError::EventList { .. } | MonitorError::GroupAcrossPmus { .. } => usage(format!("-e {e}")),
            MonitorError::TooManyEvents => usage(format!("-e: {e}")),
            e if e.is_input() => usage(e.to_string()),
            e => CliError::Runtime(e.to_string()),
        }
    }
}

/// The longest `-I`: a day, in milliseconds.
pub const MAX_INTERVAL_MS: u64 = 86_400_000;

/// `-I MS`: 1 ms to a day.
pub fn check_interval(ms: Option<u64>) -> Result<(), CliError> {
    match ms {
        Some(0) => Err(usage("-I 0: the interval must be at least 1 ms")),
        Some(ms) if ms > MAX_INTERVAL_MS => Err(usage(format!(
            "-I {ms}: the interval must be at most {MAX_INTERVAL_MS} ms (a day)"
        ))),
        _ => Ok(()),
    }
}

/// The shortest and longest `--duration`, in seconds (1 ms; about 31 years).
pub const DURATION_RANGE: (f64, f64) = (0.001, 1e9);

/// `--duration S`: a finite number of seconds from 1 ms to 1e9 s.
pub fn check_duration(d: Option<f64>) -> Result<(), CliError> {
    let (min, max) = DURATION_RANGE;
    match d {
        Some(d) if !(d.is_finite() && d > 0.0) => {
            Err(usage(format!("--duration {d}: must be a positive number of seconds")))
        }
        Some(d) if !(min..=max).contains(&d) => Err(usage(format!(
            "--duration {d:e}: must be from {min} to {max:e} seconds"
        ))),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pcie_pmu::fixture::{self, dwc_host, Tree};
    use pcie_pmu::System;

    #[test]
    fn a_host_without_payload_events_names_the_place_and_the_way_out() {
        let bare = Tree::new("watch-no-pcie");
        fixture::common_pmus(&bare);
        let a = WatchArgs {
            events: vec![],
            source: SourceArgs {
                source: "perf".into(),
                sysfs: bare.path().to_path_buf(),
            },
            sim: SimArgs::default(),
            interval: 1000,
        };
        let e = a.open().err().unwrap().to_string();
        let place = format!("--sysfs {}: no PCIe PMU", bare.path().display());
        assert!(e.starts_with(&place) && e.contains("-e"), "{e}");
    }

    #[test]
    fn event_list_errors_name_the_option() {
        let t = dwc_host("watch-events");
        let sys = System::discover(t.path()).unwrap();
        let e = CliError::from(resolve_events(&sys, &["{a/b/".into()]).unwrap_err());
        assert!(
            matches!(e, CliError::Usage(_)) && e.to_string().starts_with("-e \"{a/b/\": "),
            "{e}"
        );
    }
}
