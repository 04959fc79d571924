//! `pcieperf pmu record`: the interval rows of `pmu stat -I` as a CSV or JSON-lines time series
//! in a file, and Gb/s-over-time charts (SVG, HTML) drawn with pcie-report.
//!
//! A bounded run (`--duration`, `-- COMMAND`) is written whole at the end (temporary file and
//! rename); a run until Ctrl-C writes the file as it goes, flushed every interval, so what was
//! recorded survives a kill and a pipe (`-o -`, a FIFO) gets each interval as it ends.

use super::live_options::{check_duration, warn_command, WatchArgs};
use super::rows::{csv_lines, json_lines};
use crate::error::CliError;
use crate::output::{check_files, shown, write_failed, write_file};
use crate::signals::cancel_on_signals;
use clap::{Args, ValueEnum};
use pcie_output::Output;
use pcie_pmu::charts;
use pcie_pmu::history::History;
use pcie_pmu::monitor::{self, Monitor, Row, Schedule, Sink};
use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

#[derive(Debug, Args)]
pub struct RecordArgs {
    /// The time series file
    #[arg(short = 'o', long = "output", value_name = "FILE", required = true)]
    output: PathBuf,
    #[command(flatten)]
    watch: WatchArgs,
    /// Record for S seconds (default: until COMMAND exits, or until Ctrl-C)
    #[arg(long, value_name = "S", conflicts_with = "command", allow_negative_numbers = true)]
    duration: Option<f64>,
    /// Format of FILE: csv (the columns of `pmu stat -I --format csv`) or json (one object per line)
    #[arg(long, value_enum, default_value_t)]
    format: RecordFormat,
    /// Also draw Gb/s over time (all root ports in one chart) as SVG
    #[arg(long, value_name = "FILE")]
    svg: Option<PathBuf>,
    /// Also write a self-contained HTML page with one chart per root port
    #[arg(long, value_name = "FILE")]
    html: Option<PathBuf>,
    /// Record while this command runs
    #[arg(last = true, value_name = "COMMAND")]
    command: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Default)]
enum RecordFormat {
    #[default]
    Csv,
    Json,
}

/// Where rows go: memory (written whole at the end) or the file itself (flushed per interval).
enum Out {
    Buffer(String),
    Live(Output),
}

struct Recorder {
    path: PathBuf,
    format: RecordFormat,
    out: Out,
    header_written: bool,
    intervals: usize,
    rows: usize,
    /// Kept only for `--svg` / `--html` (a long run without charts keeps no per-interval state).
    charts: bool,
    history: Vec<History>,
}

impl Recorder {
    fn text(&mut self, rows: &[Row]) -> String {
        let t = match self.format {
            RecordFormat::Csv => csv_lines(rows, !self.header_written),
            RecordFormat::Json => json_lines(rows),
        };
        self.header_written = true;
        t
    }
}

impl Sink for Recorder {
    type Error = CliError;
    fn interval(&mut self, mon: &Monitor, rows: &[Row]) -> Result<bool, CliError> {
        let text = self.text(rows);
        match &mut self.out {
            Out::Buffer(b) => b.push_str(&text),
            Out::Live(f) => f
                .write_all(text.as_bytes())
                .and_then(|_| f.flush())
                .map_err(|e| write_failed(&self.path, e))?,
        }
        self.intervals += 1;
        self.rows += rows.len();
        if !self.charts {
            return Ok(true);
        }
        let time = rows.first().map_or(0.0, |r| r.time_s);
        History::record(&mut self.history, time, mon.targets(rows));
        Ok(true)
    }
}

pub fn run(a: &RecordArgs) -> Result<String, CliError> {
    check_duration(a.duration)?;
    check_files(&[
        ("-o", Some(&a.output)),
        ("--svg", a.svg.as_deref()),
        ("--html", a.html.as_deref()),
    ])?;
    // Before the source starts: a signal during setup still ends the run cleanly (and a
    // simulated host's tree is removed).
    let cancel = cancel_on_signals();
    let (mut mon, mut src) = a.watch.open()?;
    let bounded = a.duration.is_some() || !a.command.is_empty();
    let out = if bounded {
        Out::Buffer(String::new())
    } else {
        Out::Live(Output::live(&a.output).map_err(|e| write_failed(&a.output, e))?)
    };
    let mut rec = Recorder {
        path: a.output.clone(),
        format: a.format,
        out,
        header_written: false,
        intervals: 0,
        rows: 0,
        charts: a.svg.is_some() || a.html.is_some(),
        history: Vec::new(),
    };
    let sched = Schedule {
        interval: Some(Duration::from_millis(a.watch.interval)),
        duration: a.duration,
        command: &a.command,
    };
    let summary = monitor::run(src.as_mut(), &mut mon, sched, &cancel, &mut rec)?;
    warn_command(&summary);
    let secs = summary.secs;
    match rec.out {
        Out::Buffer(b) => write_file(&a.output, &b)?,
        Out::Live(f) => f.finish().map_err(|e| write_failed(&a.output, e))?,
    }
    if let Some(p) = &a.svg {
        write_file(p, &charts::overview(&rec.history).to_svg())?;
    }
    if let Some(p) = &a.html {
        write_file(p, &charts::report(&rec.history, &mon.ports, secs).to_html())?;
    }
    eprintln!(
        "recorded {} intervals ({} rows, {secs:.3} s) to {}",
        rec.intervals,
        rec.rows,
        shown(&a.output)
    );
    Ok(String::new())
}

#[cfg(test)]
mod tests {
    use super::*;
    use pcie_pmu::monitor::dwc_payload_monitor;

    #[test]
    fn rows_go_to_the_file_and_intervals_to_the_charts_only_when_asked() {
        let (_tree, mut mon, mut src) = dwc_payload_monitor("record-charts");
        let mut rec = Recorder {
            path: "r.csv".into(),
            format: RecordFormat::Json,
            out: Out::Buffer(String::new()),
            header_written: false,
            intervals: 0,
            rows: 0,
            charts: true,
            history: Vec::new(),
        };
        let sched = Schedule {
            interval: Some(Duration::from_millis(100)),
            duration: Some(0.3),
            command: &[],
        };
        let secs = monitor::run(&mut src, &mut mon, sched, &Default::default(), &mut rec)
            .unwrap()
            .secs;
        let Out::Buffer(text) = &rec.out else { panic!() };
        assert_eq!(text.lines().count(), 6, "{text}");
        assert!(text.contains("\"root_port\":\"0000:30:03.0\""), "{text}");

        assert_eq!(rec.history.len(), 1, "one root port's history for the charts");
        assert_eq!(rec.history[0].points.len(), 3);
        let html = charts::report(&rec.history, &mon.ports, secs).to_html();
        assert!(
            html.contains("Rx: mean 0.160 Gb/s, peak 0.160 Gb/s over 3 intervals"),
            "{html}"
        );

        // Without charts nothing is kept per interval: a long run's memory stays flat.
        let mut plain = Recorder {
            charts: false,
            history: Vec::new(),
            out: Out::Buffer(String::new()),
            ..rec
        };
        let rows = mon.sample(&mut src, 0.4, 0.1).unwrap();
        plain.interval(&mon, &rows).unwrap();
        assert_eq!((plain.intervals, plain.history.len()), (4, 0));
    }
}
