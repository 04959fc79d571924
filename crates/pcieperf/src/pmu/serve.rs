//! `pcieperf pmu serve`: Prometheus text exposition (0.0.4) on `/metrics`, a live page on `/`
//! polling `/api/targets`. The counters are sampled on the main thread every `-I`, the host's
//! link health is checked on a thread of its own every `-I` (on every host, with or without
//! PCIe PMUs); each connection is answered on its own thread (at most [`MAX_CLIENTS`] at once)
//! from the last published snapshot and health text, so a slow scrape never delays a read and
//! a silent client never delays another (publishing swaps an `Arc` under a lock held for a
//! pointer copy).

use super::watch::{check_duration, usage, WatchArgs};
use crate::error::CliError;
use crate::signals::cancel_on_signals;
use clap::Args;
use pcie_pmu::exposition::{check_health, exposition, Snapshot};
use pcie_pmu::monitor::{self, Monitor, Row, Schedule, Sink};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::path::PathBuf;
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
    /// Serve the NVIDIA GPUs' link, replays and PCIe bytes read through NVML even with
    /// --sysfs [default: on the live host only]
    #[arg(long)]
    nvml: bool,
}

const HISTORY: usize = 120;

/// The last snapshot of the counters and the last link-health text.
#[derive(Default)]
struct Published {
    snapshot: Mutex<Arc<Snapshot>>,
    health: Mutex<Arc<String>>,
}

type Shared = Arc<Published>;

fn last<T>(m: &Mutex<Arc<T>>) -> Arc<T> {
    Arc::clone(&m.lock().unwrap_or_else(|p| p.into_inner()))
}

fn publish<T>(m: &Mutex<Arc<T>>, v: T) {
    *m.lock().unwrap_or_else(|p| p.into_inner()) = Arc::new(v);
}

/// Builds snapshots from intervals and publishes them.
struct Publisher {
    shared: Shared,
    next: Snapshot,
}

impl Sink for Publisher {
    type Error = CliError;
    fn interval(&mut self, mon: &Monitor, rows: &[Row]) -> Result<bool, CliError> {
        self.next.add_interval(rows, mon.targets(rows), HISTORY);
        publish(&self.shared.snapshot, self.next.clone());
        Ok(true)
    }
}

const PAGE: &str = include_str!("serve_page.html");

/// Connections answered at once; more are told to retry (503) rather than queued behind them.
const MAX_CLIENTS: usize = 32;

/// A request's head must arrive whole within this long: a client that sends a byte now and then
/// holds its slot no longer than a silent one.
const HEAD_TIME: Duration = Duration::from_secs(2);

/// What a client still sends after its answer is read for at most this long before the socket
/// closes (so a silent client cannot hold the accepting thread or a slot).
const LINGER_TIME: Duration = Duration::from_millis(50);

/// A connection's reading side that fails with `TimedOut` once `until` has passed, however
/// the bytes trickle in.
struct Deadline<'a> {
    stream: &'a TcpStream,
    until: Instant,
}

impl Read for Deadline<'_> {
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
fn answer(stream: &TcpStream, shared: &Shared) -> std::io::Result<()> {
    stream.set_write_timeout(Some(Duration::from_secs(2)))?;
    let mut reader = BufReader::new(Deadline {
        stream,
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
    let snap = last(&shared.snapshot);
    let (status, ctype, body) = match (method, path) {
        ("GET", "/metrics") => (
            "200 OK",
            "text/plain; version=0.0.4; charset=utf-8",
            exposition(&snap) + &last(&shared.health),
        ),
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

fn respond(mut w: &TcpStream, status: &str, ctype: &str, body: &str) -> std::io::Result<()> {
    write!(
        w,
        "HTTP/1.1 {status}\r\nContent-Type: {ctype}\r\nContent-Length: {}\r\nCache-Control: no-store\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )?;
    w.flush()
}

/// Close an answered connection in stages (RFC 9112 section 9.6): close the writing side, then
/// read what the client still sends until it closes or [`LINGER_TIME`] has passed. A socket
/// closed with unread bytes in it is reset, and the reset can discard the answer before the
/// client reads it (a request pipelined behind the first, a body sent with a GET) or fail the
/// client's next write (a refused request that came in several pieces).
fn close_in_stages(stream: &TcpStream) {
    let _ = stream.shutdown(Shutdown::Write);
    let mut rest = Deadline {
        stream,
        until: Instant::now() + LINGER_TIME,
    };
    let _ = std::io::copy(&mut rest, &mut std::io::sink());
}

/// Tell a client beyond [`MAX_CLIENTS`] to retry, and close in stages.
fn refuse(stream: TcpStream) {
    let _ = stream.set_write_timeout(Some(Duration::from_millis(200)));
    let _ = respond(
        &stream,
        "503 Service Unavailable",
        "text/plain",
        "too many clients; retry\n",
    );
    close_in_stages(&stream);
}

/// Answer every connection on its own thread, up to [`MAX_CLIENTS`] at once.
fn listen(listener: TcpListener, shared: Shared) {
    let busy = Arc::new(AtomicUsize::new(0));
    for stream in listener.incoming().flatten() {
        if busy.load(Ordering::Acquire) >= MAX_CLIENTS {
            refuse(stream);
            continue;
        }
        busy.fetch_add(1, Ordering::AcqRel);
        let (shared, busy) = (Arc::clone(&shared), Arc::clone(&busy));
        std::thread::spawn(move || {
            // A client that goes away mid-answer is its own problem.
            let _ = answer(&stream, &shared);
            // The slot is free before the client sees the connection close: a client that
            // read its answer to the end and connects again finds it free.
            busy.fetch_sub(1, Ordering::AcqRel);
            close_in_stages(&stream);
        });
    }
}

fn bind(listen: &str) -> Result<TcpListener, CliError> {
    let addr: SocketAddr = listen.parse().map_err(|_| {
        usage(format!(
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

/// Check the link health below `root` every `every`, or ten times as long as the check's CPU
/// time when that is longer (a tree of 10,000 functions takes most of a CPU second, read on
/// several threads: checking stays under a tenth of a core), publishing its metrics; a failed
/// check is told once on stderr (its metrics say so each time).
fn watch_health(root: PathBuf, nvml: bool, every: Duration, shared: Shared) {
    let mut told = false;
    loop {
        let (start, cpu) = (Instant::now(), process_cpu());
        let (text, err) = check_health(&root, nvml);
        if let (Some(e), false) = (err, told) {
            eprintln!("warning: link health: {e}");
            told = true;
        }
        publish(&shared.health, text);
        // The whole process's CPU time: the monitor's share of it only lengthens the pause.
        let spent = process_cpu().saturating_sub(cpu);
        std::thread::sleep(every.max(spent * 10).saturating_sub(start.elapsed()));
    }
}

/// CPU time of this process, all its threads.
fn process_cpu() -> Duration {
    let mut t = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `t` is a valid timespec for the call to fill.
    unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut t) };
    Duration::new(
        u64::try_from(t.tv_sec).unwrap_or(0),
        u32::try_from(t.tv_nsec).unwrap_or(0),
    )
}

pub fn run(a: &ServeArgs) -> Result<String, CliError> {
    check_duration(a.duration)?;
    let listener = bind(&a.listen)?;
    // Before the source starts: a signal during setup still ends the run cleanly (and a
    // simulated host's tree is removed).
    let cancel = cancel_on_signals();
    let (mon, mut src, root) = a.watch.open_or_none()?;
    let shared: Shared = Arc::default();
    let local = listener
        .local_addr()
        .map_err(|e| CliError::Runtime(format!("--listen {}: {e}", a.listen)))?;
    let every = Duration::from_millis(a.watch.interval);
    let for_health = Arc::clone(&shared);
    let nvml = a.nvml || a.watch.source.is_live_host();
    std::thread::spawn(move || watch_health(root, nvml, every, for_health));
    let for_server = Arc::clone(&shared);
    std::thread::spawn(move || listen(listener, for_server));
    eprintln!("pcieperf pmu serve: listening on http://{local}/ (Prometheus metrics on /metrics)");
    let sched = Schedule {
        interval: Some(every),
        duration: a.duration,
        command: &[],
    };
    let Some(mut mon) = mon else {
        eprintln!(
            "pcieperf pmu serve: no PCIe PMU on this host: serving link health and the devices' block and network traffic only"
        );
        let end = a.duration.map(|d| Instant::now() + Duration::from_secs_f64(d));
        while !cancel.load(Ordering::Relaxed) && end.is_none_or(|e| Instant::now() < e) {
            std::thread::sleep(Duration::from_millis(50));
        }
        return Ok(String::new());
    };
    let mut publisher = Publisher {
        shared,
        next: Snapshot::default(),
    };
    monitor::run(src.as_mut(), &mut mon, sched, &cancel, &mut publisher)?;
    Ok(String::new())
}
