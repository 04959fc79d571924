//! `pcieperf pmu serve`: Prometheus text exposition (0.0.4) on `/metrics`, a live page on `/`
//! polling `/api/targets`. The counters are sampled on the main thread every `-I`; each
//! connection is answered on its own thread (at most [`MAX_CLIENTS`] at once) from the last
//! published snapshot, so a slow scrape never delays a read and a silent client never delays
//! another (publishing swaps an `Arc` under a lock held for a pointer copy).

use super::monitor::{
    self, add_interval, cancel_on_signals, check_duration, Monitor, Row, Schedule, Sink, Target, Trend, WatchArgs,
};
use crate::error::CliError;
use clap::Args;
use serde::Serialize;
use std::fmt::Write as _;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

#[derive(Debug, Args)]
pub struct ServeArgs {
    #[command(flatten)]
    watch: WatchArgs,
    /// Address to listen on (port 0 picks a free port; the address is printed on stderr)
    #[arg(long, value_name = "ADDR:PORT", default_value = "127.0.0.1:9464")]
    listen: String,
    /// Stop after S seconds (default: until Ctrl-C)
    #[arg(long, value_name = "S", allow_negative_numbers = true)]
    duration: Option<f64>,
}

/// One event's totals since start and its last interval.
#[derive(Debug, Clone, Serialize)]
struct EventState {
    pmu: String,
    root_port: Option<String>,
    event: String,
    metric: Option<String>,
    raw_total: u64,
    scaled_total: f64,
    bytes_total: Option<f64>,
    gbps: Option<f64>,
    running_pct: f64,
}

/// What a scrape sees: the state after the last closed interval.
#[derive(Debug, Clone, Default, Serialize)]
struct Snapshot {
    time_s: f64,
    interval_s: f64,
    intervals: u64,
    events: Vec<EventState>,
    /// Targets with the headline (Rx + Tx Gb/s or count rate) of their last intervals.
    targets: Vec<Trend>,
}

const HISTORY: usize = 120;

type Shared = Arc<Mutex<Arc<Snapshot>>>;

/// Builds snapshots from intervals and publishes them.
struct Publisher {
    shared: Shared,
    next: Snapshot,
}

impl Sink for Publisher {
    fn interval(&mut self, mon: &Monitor, rows: &[Row]) -> Result<bool, CliError> {
        let s = &mut self.next;
        s.intervals += 1;
        if let Some(r) = rows.first() {
            s.time_s = r.time_s;
            s.interval_s = r.interval_s;
        }
        for r in rows {
            let key = |e: &EventState| e.pmu == r.pmu && e.event == r.event && e.root_port == r.root_port;
            let i = s.events.iter().position(key).unwrap_or_else(|| {
                s.events.push(EventState {
                    pmu: r.pmu.clone(),
                    root_port: r.root_port.clone(),
                    event: r.event.clone(),
                    metric: r.metric.clone(),
                    raw_total: 0,
                    scaled_total: 0.0,
                    bytes_total: r.bytes.map(|_| 0.0),
                    gbps: None,
                    running_pct: 100.0,
                });
                s.events.len() - 1
            });
            let e = &mut s.events[i];
            e.raw_total = e.raw_total.wrapping_add(r.raw);
            e.scaled_total += r.scaled.unwrap_or(0.0);
            e.bytes_total = e.bytes_total.map(|b| b + r.bytes.unwrap_or(0.0));
            e.gbps = r.gbps;
            e.running_pct = r.running_pct;
        }
        add_interval(&mut s.targets, mon.targets(rows), HISTORY);
        let snap = Arc::new(s.clone());
        *self.shared.lock().unwrap_or_else(|p| p.into_inner()) = snap;
        Ok(true)
    }
}

/// `"` `\` and newlines escaped as the text format requires of label values.
fn label(v: &str) -> String {
    v.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n")
}

/// The Prometheus text exposition format, version 0.0.4.
fn exposition(s: &Snapshot) -> String {
    let mut out = String::new();
    let mut family = |name: &str, kind: &str, help: &str, samples: Vec<(String, String)>| {
        if samples.is_empty() {
            return;
        }
        let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}");
        for (labels, value) in samples {
            if labels.is_empty() {
                let _ = writeln!(out, "{name} {value}");
            } else {
                let _ = writeln!(out, "{name}{{{labels}}} {value}");
            }
        }
    };
    let ev_labels = |e: &EventState| {
        format!(
            "pmu=\"{}\",root_port=\"{}\",event=\"{}\",metric=\"{}\"",
            label(&e.pmu),
            label(e.root_port.as_deref().unwrap_or("")),
            label(&e.event),
            label(e.metric.as_deref().unwrap_or(""))
        )
    };
    let per_event = |f: &dyn Fn(&EventState) -> Option<String>| -> Vec<(String, String)> {
        s.events
            .iter()
            .filter_map(|e| f(e).map(|v| (ev_labels(e), v)))
            .collect()
    };
    family(
        "pcieperf_event_raw_total",
        "counter",
        "Raw counts since pcieperf started (wrap-corrected, not scaled for multiplexing).",
        per_event(&|e| Some(e.raw_total.to_string())),
    );
    family(
        "pcieperf_event_scaled_total",
        "counter",
        "Counts since start, each interval scaled by time enabled / time running.",
        per_event(&|e| Some(e.scaled_total.to_string())),
    );
    family(
        "pcieperf_event_bytes_total",
        "counter",
        "Payload bytes since start (events that measure payload).",
        per_event(&|e| e.bytes_total.map(|b| b.to_string())),
    );
    family(
        "pcieperf_event_gbps",
        "gauge",
        "Payload Gb/s over the last interval (events that measure payload).",
        per_event(&|e| e.gbps.map(|g| g.to_string())),
    );
    family(
        "pcieperf_event_running_ratio",
        "gauge",
        "Share of the last interval the event was counting (below 1 when multiplexed).",
        per_event(&|e| Some((e.running_pct / 100.0).to_string())),
    );
    let per_dir = |f: &dyn Fn(&Target, bool) -> Option<f64>| -> Vec<(String, String)> {
        let mut v = Vec::new();
        for t in s.targets.iter().map(|t| &t.last) {
            for (dir, rx) in [("rx", true), ("tx", false)] {
                if let Some(x) = f(t, rx) {
                    v.push((
                        format!("root_port=\"{}\",direction=\"{dir}\"", label(&t.name)),
                        x.to_string(),
                    ));
                }
            }
        }
        v
    };
    family(
        "pcieperf_root_port_gbps",
        "gauge",
        "Payload Gb/s of a root port over the last interval (rx: device to host, tx: host to device).",
        per_dir(&|t, rx| if rx { t.rx_gbps } else { t.tx_gbps }),
    );
    family(
        "pcieperf_root_port_link_share_ratio",
        "gauge",
        "Payload over the last interval as a share of the link's model bandwidth (pcie-model, 4 KB DMA).",
        per_dir(&|t, rx| if rx { t.rx_pct } else { t.tx_pct }.map(|p| p / 100.0)),
    );
    family(
        "pcieperf_intervals_total",
        "counter",
        "Intervals sampled since start.",
        vec![(String::new(), s.intervals.to_string())],
    );
    family(
        "pcieperf_interval_seconds",
        "gauge",
        "Length of the last interval.",
        vec![(String::new(), s.interval_s.to_string())],
    );
    out
}

const PAGE: &str = include_str!("serve_page.html");

/// Connections answered at once; more are told to retry (503) rather than queued behind them.
const MAX_CLIENTS: usize = 32;

/// A request's head must arrive whole within this long: a client that sends a byte now and then
/// holds its slot no longer than a silent one.
const HEAD_TIME: Duration = Duration::from_secs(2);

/// A connection's reading side that fails with `TimedOut` once `until` has passed, however
/// the bytes trickle in.
struct Deadline {
    stream: TcpStream,
    until: Instant,
}

impl Read for Deadline {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let left = self.until.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(std::io::ErrorKind::TimedOut.into());
        }
        self.stream.set_read_timeout(Some(left))?;
        self.stream.read(buf)
    }
}

/// Read one request's head; answer GET `/metrics`, `/`, `/api/targets`.
fn answer(stream: TcpStream, shared: &Shared) -> std::io::Result<()> {
    stream.set_write_timeout(Some(Duration::from_secs(2)))?;
    let mut reader = BufReader::new(Deadline {
        stream: stream.try_clone()?,
        until: Instant::now() + HEAD_TIME,
    });
    let mut first = String::new();
    reader.by_ref().take(8192).read_line(&mut first)?;
    let mut line = String::new();
    // Skip the headers (bounded).
    for _ in 0..100 {
        line.clear();
        if reader.by_ref().take(8192).read_line(&mut line)? == 0 || line.trim().is_empty() {
            break;
        }
    }
    let mut parts = first.split_whitespace();
    let (method, target) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
    let path = target.split('?').next().unwrap_or("");
    let snap = Arc::clone(&shared.lock().unwrap_or_else(|p| p.into_inner()));
    let (status, ctype, body) = match (method, path) {
        ("GET", "/metrics") => ("200 OK", "text/plain; version=0.0.4; charset=utf-8", exposition(&snap)),
        ("GET", "/") => ("200 OK", "text/html; charset=utf-8", PAGE.to_string()),
        ("GET", "/api/targets") => (
            "200 OK",
            "application/json",
            serde_json::to_string(&*snap).expect("snapshots serialise"),
        ),
        ("GET", _) => (
            "404 Not Found",
            "text/plain",
            "not found: try /metrics or /\n".to_string(),
        ),
        _ => ("405 Method Not Allowed", "text/plain", "only GET\n".to_string()),
    };
    respond(stream, status, ctype, &body)
}

fn respond(mut w: TcpStream, status: &str, ctype: &str, body: &str) -> std::io::Result<()> {
    write!(
        w,
        "HTTP/1.1 {status}\r\nContent-Type: {ctype}\r\nContent-Length: {}\r\nCache-Control: no-store\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )?;
    w.flush()
}

/// Answer every connection on its own thread, up to [`MAX_CLIENTS`] at once.
fn listen(listener: TcpListener, shared: Shared) {
    let busy = Arc::new(AtomicUsize::new(0));
    for stream in listener.incoming().flatten() {
        if busy.load(Ordering::Acquire) >= MAX_CLIENTS {
            let _ = stream.set_write_timeout(Some(Duration::from_millis(200)));
            let _ = respond(
                stream,
                "503 Service Unavailable",
                "text/plain",
                "too many clients; retry\n",
            );
            continue;
        }
        busy.fetch_add(1, Ordering::AcqRel);
        let (shared, busy) = (Arc::clone(&shared), Arc::clone(&busy));
        std::thread::spawn(move || {
            // A client that goes away mid-answer is its own problem.
            let _ = answer(stream, &shared);
            busy.fetch_sub(1, Ordering::AcqRel);
        });
    }
}

fn bind(listen: &str) -> Result<TcpListener, CliError> {
    let addr: SocketAddr = listen.parse().map_err(|_| {
        monitor::usage(format!(
            "--listen {listen}: expected ADDRESS:PORT such as 127.0.0.1:9464 or [::1]:9464"
        ))
    })?;
    if !addr.ip().is_loopback() {
        eprintln!(
            "warning: --listen {addr} is not a loopback address: anyone who can reach this host can read the counters"
        );
    }
    TcpListener::bind(addr).map_err(|e| CliError::Runtime(format!("--listen {addr}: cannot listen: {e}")))
}

pub fn run(a: &ServeArgs) -> Result<String, CliError> {
    check_duration(a.duration)?;
    let listener = bind(&a.listen)?;
    // Before the source starts: a signal during setup still ends the run cleanly (and a
    // simulated host's tree is removed).
    let cancel = cancel_on_signals();
    let (mut mon, mut src) = a.watch.open()?;
    let shared: Shared = Arc::default();
    let local = listener
        .local_addr()
        .map_err(|e| CliError::Runtime(format!("--listen {}: {e}", a.listen)))?;
    let for_server = Arc::clone(&shared);
    std::thread::spawn(move || listen(listener, for_server));
    eprintln!("pcieperf pmu serve: listening on http://{local}/ (Prometheus metrics on /metrics)");
    let mut publisher = Publisher {
        shared,
        next: Snapshot::default(),
    };
    let sched = Schedule {
        interval: Some(Duration::from_millis(a.watch.interval)),
        duration: a.duration,
        command: &[],
    };
    monitor::run(src.as_mut(), &mut mon, sched, &cancel, &mut publisher)?;
    Ok(String::new())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exposition_escapes_labels_and_skips_empty_families() {
        let s = Snapshot {
            time_s: 1.0,
            interval_s: 0.5,
            intervals: 2,
            events: vec![EventState {
                pmu: "dwc_rootport_3018".into(),
                root_port: Some("0000:30:03.0".into()),
                event: "a\"b\\c".into(),
                metric: Some("rx_bytes".into()),
                raw_total: 10,
                scaled_total: 20.0,
                bytes_total: Some(20.0),
                gbps: Some(0.25),
                running_pct: 50.0,
            }],
            targets: vec![],
        };
        let mut with_port = s.clone();
        let text = exposition(&s);
        assert!(text.contains(
            "pcieperf_event_raw_total{pmu=\"dwc_rootport_3018\",root_port=\"0000:30:03.0\",event=\"a\\\"b\\\\c\",metric=\"rx_bytes\"} 10\n"
        ), "{text}");
        assert!(text.contains("# TYPE pcieperf_event_bytes_total counter\n"), "{text}");
        assert!(
            text.contains("pcieperf_event_running_ratio{") && text.contains("} 0.5\n"),
            "{text}"
        );
        assert!(text.contains("pcieperf_intervals_total 2\n"), "{text}");
        assert!(
            !text.contains("pcieperf_root_port_gbps"),
            "no targets, no family: {text}"
        );

        with_port.targets.push(Trend {
            last: Target {
                name: "0000:30:03.0".into(),
                pmus: "dwc_rootport_3018".into(),
                link: None,
                rx_gbps: Some(12.5),
                tx_gbps: None,
                rx_pct: Some(25.0),
                tx_pct: None,
                rate: None,
                running_pct: 50.0,
            },
            history: [12.5].into(),
        });
        let text = exposition(&with_port);
        assert!(
            text.contains("pcieperf_root_port_gbps{root_port=\"0000:30:03.0\",direction=\"rx\"} 12.5\n"),
            "{text}"
        );
        assert!(
            text.contains("pcieperf_root_port_link_share_ratio{root_port=\"0000:30:03.0\",direction=\"rx\"} 0.25\n"),
            "{text}"
        );
        assert!(!text.contains("direction=\"tx\""), "no Tx event, no Tx sample: {text}");
    }
}
