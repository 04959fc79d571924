//! `pcieperf pmu stat`: count events like `perf stat -a`, with the multiplexing share and, for
//! payload events, bytes and Gb/s. Counts for `--duration`, until `-- COMMAND` exits, or until
//! Ctrl-C; `-I MS` prints one row per event per interval as it goes.

use super::live_options::{check_duration, check_interval, warn_command, warn_wraps};
use super::rows::{csv_lines, json_lines};
use crate::error::CliError;
use crate::host_selection::{self as source, SimArgs, SourceArgs};
use crate::output::{json, Cell, Format, Table};
use crate::signals::cancel_on_signals;
use clap::Args;
use pcie_pmu::monitor::{self, resolve_events, Monitor, Plan, Row, Schedule, Sink};
use pcie_pmu::CounterSource;
use std::io::Write;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

#[derive(Debug, Args)]
pub struct StatArgs {
    /// Events to count: PMU/EVENT[,TERM=VALUE...]/ specs separated by commas (commas between
    /// the slashes belong to the event); may be repeated. A PMU name without its instance
    /// suffix (dwc_rootport) counts every instance.
    #[arg(short = 'e', long = "events", value_name = "EVENTS", required = true)]
    events: Vec<String>,
    #[command(flatten)]
    source: SourceArgs,
    #[command(flatten)]
    sim: SimArgs,
    /// Print counts every MS milliseconds (one row per event per interval)
    #[arg(short = 'I', long = "interval", value_name = "MS")]
    interval: Option<u64>,
    /// Count for S seconds (default: until COMMAND exits, or until Ctrl-C)
    #[arg(long, value_name = "S", conflicts_with = "command", allow_negative_numbers = true)]
    duration: Option<f64>,
    /// Output format
    #[arg(long, value_enum, default_value_t)]
    format: Format,
    /// Count while this command runs
    #[arg(last = true, value_name = "COMMAND")]
    command: Vec<String>,
}

/// The table for people: the run's totals, one row per event.
fn human_totals(rows: &[Row], elapsed: f64) -> String {
    let mut t = Table::new(&[
        ("pmu", "PMU"),
        ("event", "Event"),
        ("raw", "Count"),
        ("scaled", "Scaled"),
        ("running_pct", "Running %"),
        ("bytes", "Bytes"),
        ("gbps", "Gb/s"),
    ]);
    for r in rows {
        t.push(vec![
            Cell::text(r.pmu.as_str()),
            Cell::text(r.event.as_str()),
            Cell::Int(r.raw),
            r.scaled.map_or(Cell::text("not counted"), |s| Cell::num(s, 0)),
            Cell::num(r.running_pct, 2),
            r.bytes.map_or(Cell::Empty, |b| Cell::num(b, 0)),
            r.gbps.map_or(Cell::Empty, Cell::gbps),
        ]);
    }
    let mut groups: Vec<&str> = rows.iter().filter_map(|r| r.group.as_deref()).collect();
    groups.dedup();
    let notes: String = groups
        .iter()
        .map(|g| format!("{g}: counted as one perf event group\n"))
        .collect();
    format!("{}\n{notes}{elapsed:.3} s elapsed\n", t.to_human())
}

/// Fixed-width lines for interval mode, so rows printed as they come stay aligned.
struct Live {
    pmu_w: usize,
    event_w: usize,
}

impl Live {
    fn header(&self) -> String {
        format!(
            "{:>10}  {:<pw$}  {:<ew$}  {:>16}  {:>18}  {:>9}  {:>16}  {:>9}\n",
            "Time (s)",
            "PMU",
            "Event",
            "Count",
            "Scaled",
            "Running %",
            "Bytes",
            "Gb/s",
            pw = self.pmu_w,
            ew = self.event_w
        )
    }

    fn line(&self, r: &Row) -> String {
        let scaled = r.scaled.map_or("not counted".to_string(), |s| format!("{s:.0}"));
        let bytes = r.bytes.map_or("-".to_string(), |b| format!("{b:.0}"));
        let g = r.gbps.map_or("-".to_string(), |g| format!("{g:.2}"));
        format!(
            "{:>10.3}  {:<pw$}  {:<ew$}  {:>16}  {:>18}  {:>9.2}  {:>16}  {:>9}\n",
            r.time_s,
            r.pmu,
            r.event,
            r.raw,
            scaled,
            r.running_pct,
            bytes,
            g,
            pw = self.pmu_w,
            ew = self.event_w
        )
    }
}

fn validate(a: &StatArgs) -> Result<(), CliError> {
    check_interval(a.interval)?;
    check_duration(a.duration)
}

pub fn run(a: &StatArgs) -> Result<String, CliError> {
    validate(a)?;
    // Before the source starts: a signal during setup still ends the run cleanly.
    let cancel = cancel_on_signals();
    let (sys, mut src) = source::open(&a.source, &a.sim)?;
    let plan = Plan::new(&sys, resolve_events(&sys, &a.events)?)?;
    // Without -I the counters are read every second (see `monitor::run`).
    warn_wraps(&plan, a.interval.map_or(1.0, |ms| ms as f64 / 1000.0));
    count(src.as_mut(), plan, a, &cancel)
}

/// Interval rows on stdout as they come, in the chosen format.
struct Printer {
    format: Format,
    live: Live,
    printed_header: bool,
}

impl Sink for Printer {
    type Error = CliError;
    fn interval(&mut self, _mon: &Monitor, rows: &[Row]) -> Result<bool, CliError> {
        let text = match self.format {
            Format::Table => {
                let mut s = String::new();
                if !self.printed_header {
                    s.push_str(&self.live.header());
                }
                rows.iter().for_each(|r| s.push_str(&self.live.line(r)));
                s
            }
            Format::Csv => csv_lines(rows, !self.printed_header),
            Format::Json => json_lines(rows),
        };
        self.printed_header = true;
        // A closed pipe ends the run like Ctrl-C.
        let mut out = std::io::stdout();
        Ok(out.write_all(text.as_bytes()).and_then(|_| out.flush()).is_ok())
    }
}

/// Open, count and print, on any counter source.
fn count(src: &mut dyn CounterSource, plan: Plan, a: &StatArgs, cancel: &AtomicBool) -> Result<String, CliError> {
    let mut mon = Monitor::open(src, plan)?;
    let widest = |f: &dyn Fn((&str, &str)) -> usize, min: usize| mon.labels().map(f).max().unwrap_or(min).max(min);
    let mut printer = Printer {
        format: a.format,
        live: Live {
            pmu_w: widest(&|(p, _)| p.len(), 3),
            event_w: widest(&|(_, e)| e.len(), 5),
        },
        printed_header: false,
    };
    let sched = Schedule {
        interval: a.interval.map(Duration::from_millis),
        duration: a.duration,
        command: &a.command,
    };
    let summary = monitor::run(src, &mut mon, sched, cancel, &mut printer)?;
    warn_command(&summary);
    let elapsed = summary.secs;
    if a.interval.is_some() {
        return Ok(String::new());
    }
    let rows = mon.totals(src, elapsed)?;
    Ok(match a.format {
        Format::Table => human_totals(&rows, elapsed),
        Format::Csv => csv_lines(&rows, true),
        Format::Json => json(&rows),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use pcie_pmu::fixture::StepSource;
    use pcie_pmu::monitor::Watch;
    use pcie_pmu::{PmuMetric, ResolvedEvent};

    #[test]
    fn totals_are_scaled_and_payload_gives_bytes() {
        let ev = ResolvedEvent {
            pmu: "dwc_rootport_3018".into(),
            type_id: 27,
            event: Some("rx_pcie_tlp_data_payload".into()),
            config: [0x21, 0, 0, 0],
            scale: None,
            unit: None,
            cpumask: vec![0],
        };
        let a = StatArgs {
            events: vec![],
            source: SourceArgs {
                source: "perf".into(),
                sysfs: "/".into(),
            },
            sim: SimArgs::default(),
            interval: None,
            duration: Some(0.01),
            format: Format::Json,
            command: vec![],
        };
        let plan = Plan {
            watches: vec![Watch {
                ev,
                bytes_per_count: Some(16.0),
                metric: Some(PmuMetric::RxBytes),
                port: None,
                group: None,
                user_group: false,
            }],
            ports: vec![],
        };
        let out = count(&mut StepSource::default(), plan, &a, &AtomicBool::new(false)).unwrap();
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        let r = &v[0];
        assert_eq!(r["raw"], 1_000_000);
        assert_eq!(r["scaled"], 2_000_000.0);
        assert_eq!(r["running_pct"], 50.0);
        assert_eq!(r["bytes"], 32_000_000.0);
        assert_eq!(r["metric"], "rx_bytes");
        assert!(r["gbps"].as_f64().unwrap() > 0.0);
    }
}
