//! `pcieperf pmu serve`: Prometheus text exposition (0.0.4) on `/metrics`, a live page on `/`
//! polling `/api/targets`. The counters are sampled on the main thread every `-I`, the host's
//! link health is checked on a thread of its own every `-I` (on every host, with or without
//! PCIe PMUs); each publishes its text once into shared buffers (swapped under a lock held for
//! a pointer copy), and the HTTP server (`pcie_exporter`, its own thread) answers every
//! connection from the last ones, so a slow scrape never delays a read and clients never delay
//! each other.

use super::live_options::{check_duration, usage, WatchArgs};
use crate::error::CliError;
use crate::signals::cancel_on_signals;
use clap::Args;
use pcie_exporter::{web_config, Bytes, Listener, Pages, WebConfig};
use pcie_pmu::exposition::{check_health, exposition, Snapshot};
use pcie_pmu::monitor::{self, Monitor, Row, Schedule, Sink};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::Ordering;
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
    /// TLS and basic authentication, in the Prometheus exporter-toolkit's format (YAML:
    /// tls_server_config: {cert_file, key_file}, basic_auth_users: {NAME: BCRYPT-HASH});
    /// re-read when it or its certificate or key changes
    #[arg(long = "web.config.file", value_name = "FILE")]
    web_config: Option<PathBuf>,
}

const HISTORY: usize = 120;

/// The pages of the last snapshot of the counters (its metrics and its JSON) and the last
/// link-health metrics, each rendered once when published and shared by every answer.
struct Published {
    counters: Mutex<(Bytes, Bytes)>,
    health: Mutex<Bytes>,
}

type Shared = Arc<Published>;

fn last<T: Clone>(m: &Mutex<T>) -> T {
    m.lock().unwrap_or_else(|p| p.into_inner()).clone()
}

fn publish<T>(m: &Mutex<T>, v: T) {
    *m.lock().unwrap_or_else(|p| p.into_inner()) = v;
}

/// A snapshot's metrics and JSON.
fn render(s: &Snapshot) -> (Bytes, Bytes) {
    let json = serde_json::to_vec(s).expect("snapshots serialise");
    (Bytes::from(exposition(s)), Bytes::from(json))
}

impl Published {
    fn new() -> Published {
        Published {
            counters: Mutex::new(render(&Snapshot::default())),
            health: Mutex::default(),
        }
    }
}

impl Pages for Published {
    /// The counters' families, then the link health's.
    fn metrics(&self) -> Vec<Bytes> {
        vec![last(&self.counters).0, last(&self.health)]
    }

    fn live_page(&self) -> Bytes {
        Bytes::from_static(PAGE.as_bytes())
    }

    /// The last snapshot's targets and history, which the live page draws.
    fn targets(&self) -> Bytes {
        last(&self.counters).1
    }
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
        publish(&self.shared.counters, render(&self.next));
        Ok(true)
    }
}

const PAGE: &str = include_str!("serve_page.html");

/// Listen on `listen`; `open` (no users to authenticate) draws a warning off loopback.
fn bind(listen: &str, open: bool) -> Result<Listener, CliError> {
    let addr: SocketAddr = listen.parse().map_err(|_| {
        usage(format!(
            "--listen {listen}: expected ADDRESS:PORT such as 127.0.0.1:9464 or [::1]:9464"
        ))
    })?;
    if open && !addr.ip().is_loopback() {
        eprintln!(
            "warning: --listen {addr} is not a loopback address: anyone who can reach this host can read the counters \
             (basic_auth_users in a --web.config.file restricts them)"
        );
    }
    Listener::bind(addr).map_err(|e| CliError::Runtime(format!("--listen {addr}: cannot listen: {e}")))
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
        publish(&shared.health, Bytes::from(text));
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
    let web = match &a.web_config {
        Some(f) => web_config::load(f).map_err(|e| CliError::Usage(format!("--web.config.file {e}")))?,
        None => WebConfig::none(),
    };
    let listener = bind(&a.listen, !web.authenticates())?;
    // Before the source starts: a signal during setup still ends the run cleanly (and a
    // simulated host's tree is removed).
    let cancel = cancel_on_signals();
    let (mon, mut src, root) = a.watch.open_or_none()?;
    let shared: Shared = Arc::new(Published::new());
    let local = listener
        .local_addr()
        .map_err(|e| CliError::Runtime(format!("--listen {}: {e}", a.listen)))?;
    let every = Duration::from_millis(a.watch.interval);
    let for_health = Arc::clone(&shared);
    let nvml = a.nvml || a.watch.source.is_live_host();
    std::thread::spawn(move || watch_health(root, nvml, every, for_health));
    let scheme = if web.tls() { "https" } else { "http" };
    listener
        .serve(web, Arc::clone(&shared) as Arc<dyn Pages>)
        .map_err(|e| CliError::Runtime(format!("cannot start the HTTP server: {e}")))?;
    eprintln!("pcieperf pmu serve: listening on {scheme}://{local}/ (Prometheus metrics on /metrics)");
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
