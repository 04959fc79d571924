//! `pcieperf pmu serve`: Prometheus text exposition (0.0.4) on `/metrics`, a live page on `/`
//! polling `/api/targets`, over hyper's HTTP/1.1 on a single-threaded tokio runtime. The
//! counters are sampled on the main thread every `-I`; connections are answered concurrently
//! on the server thread (at most [`MAX_CLIENTS`] at once, each head within [`HEAD_TIME`]) from
//! the last published snapshot, so a slow scrape never delays a read and a silent client never
//! delays another (publishing swaps an `Arc` under a lock held for a pointer copy).

use super::watch::{check_duration, usage, WatchArgs};
use crate::error::CliError;
use crate::signals::cancel_on_signals;
use clap::Args;
use http_body_util::Full;
use hyper::body::{Bytes, Incoming};
use hyper::header::{HeaderValue, CACHE_CONTROL, CONTENT_TYPE};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use pcie_pmu::exposition::{exposition, Snapshot};
use pcie_pmu::monitor::{self, Monitor, Row, Schedule, Sink};
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;

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

const HISTORY: usize = 120;

type Shared = Arc<Mutex<Arc<Snapshot>>>;

/// Builds snapshots from intervals and publishes them.
struct Publisher {
    shared: Shared,
    next: Snapshot,
}

impl Sink for Publisher {
    type Error = CliError;
    fn interval(&mut self, mon: &Monitor, rows: &[Row]) -> Result<bool, CliError> {
        self.next.add_interval(rows, mon.targets(rows), HISTORY);
        let snap = Arc::new(self.next.clone());
        *self.shared.lock().unwrap_or_else(|p| p.into_inner()) = snap;
        Ok(true)
    }
}

const PAGE: &str = include_str!("serve_page.html");

/// Connections answered at once; more are told to retry (503) rather than queued behind them.
const MAX_CLIENTS: usize = 32;

/// A request's head must arrive whole within this long: a client that sends a byte now and then
/// holds its slot no longer than a silent one.
const HEAD_TIME: Duration = Duration::from_secs(2);

/// After its head, the answer must be written within this long.
const WRITE_TIME: Duration = Duration::from_secs(2);

/// A connection over the limit gets this long for its head and its 503.
const BUSY_TIME: Duration = Duration::from_millis(200);

type Answer = Response<Full<Bytes>>;

/// The answer to one request: GET `/metrics`, `/`, `/api/targets`; 503 when `busy`.
fn answer(method: &Method, path: &str, shared: &Shared, busy: bool) -> Answer {
    let text = |status: StatusCode, ctype: &str, body: String| {
        let mut r = Response::new(Full::new(Bytes::from(body)));
        *r.status_mut() = status;
        let h = r.headers_mut();
        h.insert(
            CONTENT_TYPE,
            HeaderValue::from_str(ctype).expect("our content types are ASCII"),
        );
        h.insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
        r
    };
    if busy {
        return text(
            StatusCode::SERVICE_UNAVAILABLE,
            "text/plain",
            "too many clients; retry\n".into(),
        );
    }
    let snap = Arc::clone(&shared.lock().unwrap_or_else(|p| p.into_inner()));
    match (method, path) {
        (&Method::GET, "/metrics") => text(
            StatusCode::OK,
            "text/plain; version=0.0.4; charset=utf-8",
            exposition(&snap),
        ),
        (&Method::GET, "/") => text(StatusCode::OK, "text/html; charset=utf-8", PAGE.to_string()),
        (&Method::GET, "/api/targets") => text(
            StatusCode::OK,
            "application/json",
            serde_json::to_string(&*snap).expect("snapshots serialise"),
        ),
        (&Method::GET, _) => text(
            StatusCode::NOT_FOUND,
            "text/plain",
            "not found: try /metrics or /\n".into(),
        ),
        _ => text(StatusCode::METHOD_NOT_ALLOWED, "text/plain", "only GET\n".into()),
    }
}

/// One request per connection (`Connection: close`), its head within `head` and the whole
/// exchange within `head` + `write`; a slow or vanished client is dropped, its own problem.
async fn converse(stream: TcpStream, shared: Shared, busy: bool, head: Duration, write: Duration) {
    let service = service_fn(move |req: Request<Incoming>| {
        let r = answer(req.method(), req.uri().path(), &shared, busy);
        async move { Ok::<_, Infallible>(r) }
    });
    let conn = http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(head)
        .keep_alive(false)
        .title_case_headers(true)
        .serve_connection(TokioIo::new(stream), service);
    let _ = tokio::time::timeout(head + write, conn).await;
}

/// Answer every connection concurrently, up to [`MAX_CLIENTS`] at once (more get a quick 503).
async fn listen(listener: TcpListener, shared: Shared) {
    let slots = Arc::new(Semaphore::new(MAX_CLIENTS));
    loop {
        let stream = match listener.accept().await {
            Ok((stream, _)) => stream,
            // Out of descriptors and the like: let connections finish before trying again.
            Err(_) => {
                tokio::time::sleep(Duration::from_millis(10)).await;
                continue;
            }
        };
        let shared = Arc::clone(&shared);
        match Arc::clone(&slots).try_acquire_owned() {
            Ok(slot) => tokio::spawn(async move {
                converse(stream, shared, false, HEAD_TIME, WRITE_TIME).await;
                drop(slot);
            }),
            Err(_) => tokio::spawn(converse(stream, shared, true, BUSY_TIME, BUSY_TIME)),
        };
    }
}

fn bind(listen: &str) -> Result<std::net::TcpListener, CliError> {
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
    std::net::TcpListener::bind(addr).map_err(|e| CliError::Runtime(format!("--listen {addr}: cannot listen: {e}")))
}

pub fn run(a: &ServeArgs) -> Result<String, CliError> {
    check_duration(a.duration)?;
    let listener = bind(&a.listen)?;
    let server = |e: std::io::Error| CliError::Runtime(format!("--listen {}: cannot serve: {e}", a.listen));
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .enable_time()
        .build()
        .map_err(server)?;
    listener.set_nonblocking(true).map_err(server)?;
    // Before the source starts: a signal during setup still ends the run cleanly (and a
    // simulated host's tree is removed).
    let cancel = cancel_on_signals();
    let (mut mon, mut src) = a.watch.open()?;
    let shared: Shared = Arc::default();
    let local = listener
        .local_addr()
        .map_err(|e| CliError::Runtime(format!("--listen {}: {e}", a.listen)))?;
    let for_server = Arc::clone(&shared);
    let listener = {
        let _entered = runtime.enter();
        TcpListener::from_std(listener).map_err(server)?
    };
    std::thread::spawn(move || runtime.block_on(listen(listener, for_server)));
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
