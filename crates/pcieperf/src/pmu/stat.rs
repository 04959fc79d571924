//! `pcieperf pmu stat`: count events like `perf stat -a`, with the multiplexing share and, for
//! payload events, bytes and Gb/s. Counts for `--duration`, until `-- COMMAND` exits, or until
//! Ctrl-C; `-I MS` prints one row per event per interval as it goes.

use super::source::{self, SimArgs, SourceArgs};
use crate::error::CliError;
use crate::output::{json, Cell, Format, Table};
use clap::Args;
use pcie_model::Generation;
use pcie_pmu::accumulate::{gbps, max_interval_secs};
use pcie_pmu::counter::event_name;
use pcie_pmu::{Accumulator, CounterError, CounterId, CounterSource, Delta, PcieView, ResolvedEvent, System};
use serde::Serialize;
use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
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

/// Split `-e` text at the commas that separate events, not those between an event's slashes.
pub fn split_events(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut slashes = 0;
    for c in text.chars() {
        match c {
            '/' => {
                slashes += 1;
                cur.push(c);
            }
            ',' if slashes % 2 == 0 => {
                out.push(std::mem::take(&mut cur));
                slashes = 0;
            }
            _ => cur.push(c),
        }
    }
    out.push(cur);
    out.into_iter().map(|s| s.trim().to_string()).collect()
}

/// One event being counted.
struct Counted {
    ev: ResolvedEvent,
    id: CounterId,
    acc: Accumulator,
    /// Bytes per (scaled) count when the event measures payload.
    bytes_per_count: Option<f64>,
    metric: Option<String>,
}

/// One row of output: an event over an interval (or the whole run).
#[derive(Debug, Serialize)]
struct StatRow {
    /// Seconds since counting started, at the end of the interval.
    time_s: f64,
    /// Length of the interval in seconds.
    interval_s: f64,
    pmu: String,
    event: String,
    metric: Option<String>,
    raw: u64,
    /// Raw × enabled / running; absent when the event never ran.
    scaled: Option<f64>,
    running_pct: f64,
    enabled_ns: u64,
    running_ns: u64,
    bytes: Option<f64>,
    gbps: Option<f64>,
}

fn short_event(e: &ResolvedEvent) -> String {
    let n = event_name(e);
    n.strip_prefix(&format!("{}/", e.pmu))
        .and_then(|s| s.strip_suffix('/'))
        .map_or(n.clone(), str::to_string)
}

fn row(c: &Counted, d: &Delta, time_s: f64, interval_s: f64) -> StatRow {
    let bytes = c.bytes_per_count.and_then(|b| d.bytes(b));
    StatRow {
        time_s,
        interval_s,
        pmu: c.ev.pmu.clone(),
        event: short_event(&c.ev),
        metric: c.metric.clone(),
        raw: d.raw,
        scaled: d.scaled,
        running_pct: d.running_pct(),
        enabled_ns: d.enabled_ns,
        running_ns: d.running_ns,
        bytes,
        gbps: bytes.map(|b| gbps(b, interval_s)),
    }
}

const COLUMNS: [(&str, &str); 12] = [
    ("time_s", "Time (s)"),
    ("interval_s", "Interval (s)"),
    ("pmu", "PMU"),
    ("event", "Event"),
    ("metric", "Metric"),
    ("raw", "Count"),
    ("scaled", "Scaled"),
    ("running_pct", "Running %"),
    ("enabled_ns", "Enabled ns"),
    ("running_ns", "Running ns"),
    ("bytes", "Bytes"),
    ("gbps", "Gb/s"),
];

fn csv_table(rows: &[StatRow]) -> Table {
    let mut t = Table::new(&COLUMNS);
    let opt = |x: Option<f64>, dec: usize| x.map_or(Cell::Empty, |x| Cell::num(x, dec));
    for r in rows {
        t.push(vec![
            Cell::num(r.time_s, 6),
            Cell::num(r.interval_s, 6),
            Cell::text(r.pmu.as_str()),
            Cell::text(r.event.as_str()),
            r.metric.as_deref().map_or(Cell::Empty, Cell::text),
            Cell::Int(r.raw),
            opt(r.scaled, 0),
            Cell::num(r.running_pct, 2),
            Cell::Int(r.enabled_ns),
            Cell::Int(r.running_ns),
            opt(r.bytes, 0),
            r.gbps.map_or(Cell::Empty, Cell::gbps),
        ]);
    }
    t
}

/// The table for people: the run's totals, one row per event.
fn human_totals(rows: &[StatRow], elapsed: f64) -> String {
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
    format!("{}\n{elapsed:.3} s elapsed\n", t.to_human())
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

    fn line(&self, r: &StatRow) -> String {
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

fn usage(m: impl Into<String>) -> CliError {
    CliError::Usage(m.into())
}

fn counter_err(e: CounterError) -> CliError {
    if e.is_input() {
        CliError::Usage(e.to_string())
    } else {
        CliError::Runtime(e.to_string())
    }
}

/// Bytes per count of a payload event: the family catalog's value (which knows each kernel
/// variant's unit), else the kernel's `.scale` with a byte `.unit`. `views` are the system's
/// PCIe PMUs (worked out once: annotating them parses the catalogs).
fn payload(views: &[PcieView], ev: &ResolvedEvent) -> (Option<f64>, Option<String>) {
    if let Some(name) = &ev.event {
        for v in views.iter().filter(|v| v.pmu.name == ev.pmu) {
            if let Some(e) = v.events.iter().find(|e| e.name.eq_ignore_ascii_case(name)) {
                let bpc = if e.unit.as_deref() == Some("bytes") {
                    e.bytes_per_count
                } else {
                    None
                };
                return (bpc, e.metric.clone());
            }
        }
    }
    let mult = match ev.unit.as_deref() {
        Some("MiB") => Some(1048576.0),
        Some("KiB") => Some(1024.0),
        Some("B" | "Bytes" | "bytes") => Some(1.0),
        _ => None,
    };
    (mult.map(|m| m * ev.scale.unwrap_or(1.0)), None)
}

/// Bits of the hardware register behind an event whose driver does not poll it: the
/// pre-upstream DWC driver (`pcie_bdf_*`) reads only the low 32 bits of the payload counter,
/// so its values are accumulated modulo 2^32.
pub(super) fn unpolled_width(ev: &ResolvedEvent) -> Option<u32> {
    ev.pmu.starts_with("pcie_bdf_").then_some(32)
}

/// The link's raw rate from sysfs `current_link_speed` ("32.0 GT/s PCIe") and width.
fn link_gbps(speed: &str, lanes: u32) -> Option<f64> {
    let gt: f64 = speed.split_whitespace().next()?.parse().ok()?;
    let gen = Generation::ALL.into_iter().find(|g| (g.gt_per_s() - gt).abs() < 0.01)?;
    Some(gt * gen.encoding().efficiency() * lanes as f64)
}

/// Events whose narrow, unpolled counter can wrap more than once between two reads when the
/// root port's link runs at its raw rate.
fn wrap_warnings(
    sys: &System,
    events: &[(ResolvedEvent, Option<f64>, Option<String>)],
    read_every: f64,
) -> Vec<String> {
    let views = sys.pcie_pmus().unwrap_or_default();
    let mut out = Vec::new();
    for (ev, bytes_per_count, _) in events {
        let (Some(width), Some(bpc)) = (unpolled_width(ev), bytes_per_count) else {
            continue;
        };
        let port = views
            .iter()
            .filter(|v| v.pmu.name == ev.pmu)
            .flat_map(|v| v.root_ports.iter())
            .find_map(|r| r.port.as_ref());
        let Some(gbps) = port.and_then(|p| link_gbps(p.current_link_speed.as_deref()?, p.current_link_width?)) else {
            continue;
        };
        if let Some(limit) = max_interval_secs(width, *bpc, gbps) {
            if read_every > limit {
                out.push(format!(
                    "{}: a {width}-bit counter of {bpc} B units wraps every {limit:.2} s at the link's {gbps:.1} Gb/s, \
                     and reads every {read_every} s can miss wraps; use -I {} or a kernel whose driver polls the counter",
                    event_name(ev),
                    (limit * 500.0).floor().max(1.0)
                ));
            }
        }
    }
    out
}

fn validate(a: &StatArgs) -> Result<(), CliError> {
    if a.interval == Some(0) {
        return Err(usage("-I 0: the interval must be at least 1 ms"));
    }
    if let Some(d) = a.duration {
        if !(d.is_finite() && d > 0.0) {
            return Err(usage(format!("--duration {d}: must be a positive number of seconds")));
        }
        if d > 1e9 {
            return Err(usage(format!("--duration {d}: too long")));
        }
    }
    Ok(())
}

/// Resolve every event spec (a PMU base name may give several events).
fn resolve(a: &StatArgs, sys: &System) -> Result<Vec<ResolvedEvent>, CliError> {
    let mut events = Vec::new();
    for text in &a.events {
        for spec in split_events(text) {
            if spec.is_empty() {
                return Err(usage(format!("-e {text:?}: empty event between commas")));
            }
            events.extend(sys.resolve_all(&spec)?);
        }
    }
    Ok(events)
}

pub fn run(a: &StatArgs) -> Result<String, CliError> {
    validate(a)?;
    let (sys, mut src) = source::open(&a.source, &a.sim)?;
    let events = resolve(a, &sys)?;
    let views = sys.pcie_pmus()?;
    let mut counted = Vec::new();
    for ev in events {
        let (bytes_per_count, metric) = payload(&views, &ev);
        counted.push((ev, bytes_per_count, metric));
    }
    // Without -I the counters are read every second (see `count`).
    let read_every = a.interval.map_or(1.0, |ms| ms as f64 / 1000.0);
    for w in wrap_warnings(&sys, &counted, read_every) {
        eprintln!("warning: {w}");
    }
    count(&mut *src, counted, a)
}

/// Open, count and print, on any counter source.
fn count<S: CounterSource + ?Sized>(
    src: &mut S,
    events: Vec<(ResolvedEvent, Option<f64>, Option<String>)>,
    a: &StatArgs,
) -> Result<String, CliError> {
    let mut counted = Vec::new();
    for (ev, bytes_per_count, metric) in events {
        let id = src.open(&ev).map_err(counter_err)?;
        counted.push(Counted {
            acc: Accumulator::new(unpolled_width(&ev).unwrap_or(64)),
            ev,
            id,
            bytes_per_count,
            metric,
        });
    }

    let cancel = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        // A second Ctrl-C ends the program at once; the first prints what was counted.
        let _ = signal_hook::flag::register_conditional_shutdown(sig, 130, Arc::clone(&cancel));
        let _ = signal_hook::flag::register(sig, Arc::clone(&cancel));
    }

    let start = src.elapsed();
    for c in counted.iter_mut() {
        c.acc.update(src.read(c.id).map_err(counter_err)?);
    }
    let mut child = match a.command.split_first() {
        Some((prog, args)) => Some(
            std::process::Command::new(prog)
                .args(args)
                .spawn()
                .map_err(|e| CliError::Runtime(format!("cannot run {prog:?}: {e}")))?,
        ),
        None => None,
    };
    let deadline = a.duration.map(|d| start + Duration::from_secs_f64(d));
    let step = a.interval.map(Duration::from_millis);
    let mut next_tick = step.map(|s| start + s);
    let mut last_tick = start;
    // Without -I the counters are still read every second: drivers without a poller update
    // their 64-bit count from a narrow hardware counter only when read, and the multiplexing
    // scale is applied per read interval.
    let refresh = Duration::from_secs(1);
    let mut next_refresh = step.is_none().then_some(start + refresh);
    let live = Live {
        pmu_w: counted.iter().map(|c| c.ev.pmu.len()).max().unwrap_or(3).max(3),
        event_w: counted
            .iter()
            .map(|c| short_event(&c.ev).len())
            .max()
            .unwrap_or(5)
            .max(5),
    };
    let mut printed_header = false;
    let mut out = std::io::stdout();
    // Wake up at least this often to notice the command's exit (10 ms) or Ctrl-C (100 ms).
    let poll = Duration::from_millis(if child.is_some() { 10 } else { 100 });
    let mut status = None;

    loop {
        let now = src.elapsed();
        let wake = [deadline, next_tick, next_refresh, Some(now + poll)]
            .into_iter()
            .flatten()
            .min();
        if let Some(w) = wake.filter(|w| *w > now) {
            src.sleep(w - now).map_err(counter_err)?;
        }
        let now = src.elapsed();
        let mut done = cancel.load(Ordering::Relaxed) || deadline.is_some_and(|d| now >= d);
        if let Some(ch) = child.as_mut() {
            if let Some(s) = ch
                .try_wait()
                .map_err(|e| CliError::Runtime(format!("waiting for the command: {e}")))?
            {
                status = Some(s);
                done = true;
            }
        }
        if let Some(t) = next_refresh.as_mut().filter(|t| !done && now >= **t) {
            for c in counted.iter_mut() {
                c.acc.update(src.read(c.id).map_err(counter_err)?);
            }
            while *t <= now {
                *t += refresh;
            }
        }
        let tick = next_tick.is_some_and(|t| now >= t);
        // In interval mode the end of the run closes a last (partial) interval.
        if step.is_some() && (tick || (done && now > last_tick)) {
            let secs = (now - last_tick).as_secs_f64();
            let time = (now - start).as_secs_f64();
            let mut rows = Vec::new();
            for c in counted.iter_mut() {
                let r = src.read(c.id).map_err(counter_err)?;
                if let Some(d) = c.acc.update(r) {
                    rows.push(row(c, &d, time, secs));
                }
            }
            let text = match a.format {
                Format::Table => {
                    let mut s = String::new();
                    if !printed_header {
                        s.push_str(&live.header());
                    }
                    rows.iter().for_each(|r| s.push_str(&live.line(r)));
                    s
                }
                Format::Csv => {
                    let csv = csv_table(&rows).to_csv();
                    if printed_header {
                        csv.split_once('\n').map_or(String::new(), |(_, body)| body.to_string())
                    } else {
                        csv
                    }
                }
                Format::Json => rows
                    .iter()
                    .map(|r| serde_json::to_string(r).expect("rows serialise") + "\n")
                    .collect(),
            };
            printed_header = true;
            // A closed pipe ends the run like Ctrl-C.
            if out.write_all(text.as_bytes()).and_then(|_| out.flush()).is_err() {
                done = true;
            }
            last_tick = now;
            if let (Some(t), Some(s)) = (next_tick.as_mut(), step) {
                while *t <= now {
                    *t += s;
                }
            }
        }
        if done {
            break;
        }
    }
    if let Some(mut ch) = child {
        let s = match status {
            Some(s) => s,
            None => {
                // Interrupted: the command got the same signal; wait for it.
                ch.wait()
                    .map_err(|e| CliError::Runtime(format!("waiting for the command: {e}")))?
            }
        };
        if !s.success() {
            eprintln!("warning: the command exited with {s}");
        }
    }
    let elapsed = (src.elapsed() - start).as_secs_f64();
    if step.is_some() {
        return Ok(String::new());
    }
    let mut rows = Vec::new();
    for c in counted.iter_mut() {
        c.acc.update(src.read(c.id).map_err(counter_err)?);
        rows.push(row(c, &c.acc.total(), elapsed, elapsed));
    }
    Ok(match a.format {
        Format::Table => human_totals(&rows, elapsed),
        Format::Csv => csv_table(&rows).to_csv(),
        Format::Json => json(&rows),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use pcie_pmu::Reading;

    #[test]
    fn events_split_at_commas_outside_slashes() {
        assert_eq!(
            split_events("dwc_rootport_3018/rx_memory_read,lane=4/,software/cpu-clock/"),
            vec!["dwc_rootport_3018/rx_memory_read,lane=4/", "software/cpu-clock/"]
        );
        assert_eq!(split_events("msr/tsc/"), vec!["msr/tsc/"]);
        assert_eq!(split_events("a/b/,,c/d/"), vec!["a/b/", "", "c/d/"]);
    }

    /// A source whose counters advance by a fixed step per read and run half the time, on a
    /// clock that only moves when the monitor sleeps.
    struct Fake {
        reads: Vec<Reading>,
        now: Duration,
    }

    impl CounterSource for Fake {
        fn open(&mut self, _e: &ResolvedEvent) -> Result<CounterId, CounterError> {
            self.reads.push(Reading::default());
            Ok(CounterId(self.reads.len() - 1))
        }
        fn read(&mut self, id: CounterId) -> Result<Reading, CounterError> {
            let r = &mut self.reads[id.0];
            let now = *r;
            r.value += 1_000_000;
            r.enabled += 100_000_000;
            r.running += 50_000_000;
            Ok(now)
        }
        fn elapsed(&self) -> Duration {
            self.now
        }
        fn sleep(&mut self, d: Duration) -> Result<(), CounterError> {
            self.now += d;
            Ok(())
        }
    }

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
        let mut src = Fake {
            reads: vec![],
            now: Duration::ZERO,
        };
        let out = count(&mut src, vec![(ev, Some(16.0), Some("rx_bytes".into()))], &a).unwrap();
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        let r = &v[0];
        assert_eq!(r["raw"], 1_000_000);
        assert_eq!(r["scaled"], 2_000_000.0);
        assert_eq!(r["running_pct"], 50.0);
        assert_eq!(r["bytes"], 32_000_000.0);
        assert_eq!(r["metric"], "rx_bytes");
        assert!(r["gbps"].as_f64().unwrap() > 0.0);
    }

    #[test]
    fn bytes_per_count_follows_the_catalog_and_the_kernel_scale() {
        use pcie_pmu::fixture::{self, DwcVariant, Tree};
        let t = Tree::new("stat-payload");
        fixture::common_pmus(&t);
        fixture::dwc_pmu(&t, "pcie_bdf_300300", 26, "0", DwcVariant::V1);
        fixture::dwc_pmu(&t, "dwc_rootport_3018", 27, "0", DwcVariant::Upstream);
        t.intel_cpu(143);
        fixture::intel_iio_pmus(&t, 0, 40, "3.0517578125e-5", &["0000:00"]);
        let sys = System::discover(t.path()).unwrap();
        let views = sys.pcie_pmus().unwrap();
        let p = |spec: &str| payload(&views, &sys.resolve(spec).unwrap());
        assert_eq!(
            p("pcie_bdf_300300/Rx_PCIe_TLP_Data_Payload/"),
            (Some(16.0), Some("rx_bytes".into()))
        );
        assert_eq!(
            p("dwc_rootport_3018/tx_pcie_tlp_data_payload/"),
            (Some(1.0), Some("tx_bytes".into()))
        );
        // A counting event has a metric but no bytes.
        let (b, m) = p("dwc_rootport_3018/rx_memory_read,lane=1/");
        assert_eq!(b, None);
        assert!(m.is_some());
        assert_eq!(p("uncore_iio_free_running_0/bw_in_port0/").0, Some(32.0));
        assert_eq!(p("msr/tsc/"), (None, None));
        assert_eq!(p("software/cpu-clock/"), (None, None));
        // Every instance of a PMU base name resolves.
        let all = sys.resolve_all("dwc_rootport/rx_pcie_tlp_data_payload/").unwrap();
        assert_eq!(all.len(), 1);
    }

    #[test]
    fn narrow_unpolled_counters_warn_when_reads_are_too_far_apart() {
        use pcie_pmu::fixture::{self, DwcVariant, Tree};
        let t = Tree::new("stat-wrap");
        fixture::common_pmus(&t);
        fixture::dwc_pmu(&t, "pcie_bdf_300300", 26, "0", DwcVariant::V1);
        fixture::dwc_pmu(&t, "dwc_rootport_3018", 27, "0", DwcVariant::Upstream);
        t.root_port("0000:30:03.0", "0"); // 32 GT/s x16: 504 Gb/s
        let sys = System::discover(t.path()).unwrap();
        let events = |spec: &str| {
            let ev = sys.resolve(spec).unwrap();
            let (b, m) = payload(&sys.pcie_pmus().unwrap(), &ev);
            vec![(ev, b, m)]
        };
        let v1 = events("pcie_bdf_300300/Rx_PCIe_TLP_Data_Payload/");
        // 2^32 x 16 B at 504 Gb/s: a wrap every 1.09 s.
        assert!(wrap_warnings(&sys, &v1, 1.0).is_empty());
        let w = wrap_warnings(&sys, &v1, 2.0);
        assert_eq!(w.len(), 1);
        assert!(
            w[0].contains("wraps every 1.09 s") && w[0].contains("-I 545"),
            "{}",
            w[0]
        );
        // Upstream drivers read 64 bits.
        let upstream = events("dwc_rootport_3018/rx_pcie_tlp_data_payload/");
        assert!(wrap_warnings(&sys, &upstream, 10.0).is_empty());
        assert_eq!(link_gbps("8.0 GT/s PCIe", 8).map(|g| (g * 100.0).round()), Some(6302.0));
        assert_eq!(link_gbps("unknown", 8), None);
    }
}
