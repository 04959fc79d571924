//! The server: a listener, tokio's single-threaded runtime on a thread of its own (a connection
//! is a task of a few KiB, not a thread) and hyper's HTTP/1.1 on each connection, optionally
//! over rustls, one request per connection.
//!
//! What keeps a scrape answered while other clients misbehave:
//! * every connection has deadlines: its first byte within [`SILENT_TIME`], its whole request
//!   head (the TLS handshake too) within [`HEAD_TIME`] of being accepted, its answer written
//!   within [`ANSWER_TIME`];
//! * at most [`MAX_CONNS`](crate::MAX_CONNS) connections are held, a new one always admitted
//!   (`Conns`);
//! * a page is rendered once by the [`Pages`] and written from its buffers in slices (`Page`).

use crate::auth::BCRYPT_AT_ONCE;
use crate::conns::{Conns, Slot};
use crate::live::Live;
use crate::page::Page;
use crate::web_config::WebConfig;
use bytes::Bytes;
use hyper::header::{HeaderValue, ALLOW, CACHE_CONTROL, CONNECTION, CONTENT_TYPE, WWW_AUTHENTICATE};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use std::convert::Infallible;
use std::future::{poll_fn, Future};
use std::io;
use std::net::SocketAddr;
use std::os::fd::{AsFd, AsRawFd};
use std::pin::pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Notify, Semaphore};
use tokio::time::{sleep_until, Instant};

/// A connection that has sent nothing for this long after it was accepted is closed.
pub const SILENT_TIME: Duration = Duration::from_secs(1);
/// A request's head (after the TLS handshake, when there is one) must be whole this long after
/// the connection was accepted: a client trickling bytes is cut off like a silent one.
pub const HEAD_TIME: Duration = Duration::from_secs(3);
/// An answer must be written whole within this long (an 18 MB page at 10 Mb/s takes 15 s;
/// Prometheus gives a scrape 10 s unless told otherwise). A slow reader holds the page it
/// started on for at most this long.
pub const ANSWER_TIME: Duration = Duration::from_secs(30);
/// After its answer, what a client still sends is read and dropped for at most this long, so
/// the close does not reset the connection before the client has read the answer.
const LINGER_TIME: Duration = Duration::from_millis(100);
const LINGER_BYTES: usize = 1 << 20;
/// The largest request head read (more: 431), and the longest request target (more: 414).
pub const MAX_HEAD: usize = 16 * 1024;
pub const MAX_TARGET: usize = 8 * 1024;
/// Connections the kernel queues before they are accepted.
const BACKLOG: i32 = 4096;

/// What the server answers with: each call returns the page as last rendered, cheaply (shared
/// buffers, a reference count each), so rendering happens once per update, not per request.
pub trait Pages: Send + Sync + 'static {
    /// `/metrics`: Prometheus text exposition 0.0.4, in parts written one after the other.
    fn metrics(&self) -> Vec<Bytes>;
    /// `/`: the live page (HTML).
    fn live_page(&self) -> Bytes;
    /// `/api/targets`: the JSON the live page polls.
    fn targets(&self) -> Bytes;
}

/// A bound socket, not yet served.
pub struct Listener(std::net::TcpListener);

impl Listener {
    /// Listen on `addr`, with a longer queue of connections not yet accepted than std's 128
    /// (the kernel caps it at net.core.somaxconn): a burst of connections beyond it would see
    /// their SYNs dropped and retried after a second, a scrape among them too.
    pub fn bind(addr: SocketAddr) -> io::Result<Listener> {
        let listener = std::net::TcpListener::bind(addr)?;
        // SAFETY: listening again on a listening socket only changes its backlog.
        unsafe { libc::listen(listener.as_raw_fd(), BACKLOG) };
        Ok(Listener(listener))
    }

    /// The address bound (the port chosen, when `addr` asked for port 0).
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.0.local_addr()
    }

    /// Serve `pages` from a thread of its own, with the TLS and users of `web`, until the
    /// process ends; a `web` loaded from a file follows the file's changes (`live`).
    pub fn serve(self, web: WebConfig, pages: Arc<dyn Pages>) -> io::Result<()> {
        let listener = self.0;
        listener.set_nonblocking(true)?;
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_io()
            .enable_time()
            .max_blocking_threads(BCRYPT_AT_ONCE)
            .build()?;
        let server = Arc::new(Server {
            pages,
            config: Live::new(web, Arc::new(Semaphore::new(BCRYPT_AT_ONCE))),
            conns: Arc::new(Conns::sized_to_descriptors()),
        });
        std::thread::spawn(move || {
            rt.block_on(async move {
                match TcpListener::from_std(listener) {
                    Ok(l) => server.accept(l).await,
                    Err(e) => eprintln!("warning: the HTTP server stopped: {e}"),
                }
            })
        });
        Ok(())
    }
}

/// `fut`'s output, or `None` when `deadline` passes or `kill` is notified first.
async fn within<F: Future>(fut: F, deadline: Instant, kill: &Notify) -> Option<F::Output> {
    let (mut fut, mut sleep, mut killed) = (pin!(fut), pin!(sleep_until(deadline)), pin!(kill.notified()));
    poll_fn(|cx| {
        if let Poll::Ready(v) = fut.as_mut().poll(cx) {
            return Poll::Ready(Some(v));
        }
        if killed.as_mut().poll(cx).is_ready() || sleep.as_mut().poll(cx).is_ready() {
            return Poll::Ready(None);
        }
        Poll::Pending
    })
    .await
}

struct Server {
    pages: Arc<dyn Pages>,
    config: Live,
    conns: Arc<Conns>,
}

/// How a connection's exchange ended.
#[derive(PartialEq)]
enum Ended {
    /// hyper finished it (an answer, or its own 400/414/431): close in stages.
    ByItself,
    /// A deadline passed or a newer connection took its place: close at once.
    Cut,
}

impl Server {
    /// Accept forever; each connection runs as a task of its own.
    async fn accept(self: Arc<Self>, listener: TcpListener) {
        loop {
            match listener.accept().await {
                Ok((stream, _)) => {
                    let slot = self.conns.admit();
                    tokio::spawn(Arc::clone(&self).connection(stream, slot));
                }
                // Out of descriptors or memory, or a connection reset before it was accepted:
                // pause rather than spin.
                Err(_) => tokio::time::sleep(Duration::from_millis(10)).await,
            }
        }
    }

    async fn connection(self: Arc<Self>, stream: TcpStream, slot: Slot) {
        let accepted = Instant::now();
        // A second descriptor of the socket for the staged close once hyper has let go of it.
        let Ok(keep) = stream.as_fd().try_clone_to_owned() else {
            return;
        };
        let ended = match within(stream.readable(), accepted + SILENT_TIME, &slot.kill).await {
            Some(Ok(())) => {
                let head_by = accepted + HEAD_TIME;
                if !self.config.tls() {
                    self.exchange(TokioIo::new(stream), head_by, &slot).await
                } else {
                    // The certificate in force now; none while the web config is broken: the
                    // handshake is refused.
                    match self.config.current().and_then(|c| c.tls.clone()) {
                        None => Ended::Cut,
                        Some(tls) => match within(tls.accept(stream), head_by, &slot.kill).await {
                            Some(Ok(s)) => self.exchange(TokioIo::new(s), head_by, &slot).await,
                            _ => Ended::Cut,
                        },
                    }
                }
            }
            _ => Ended::Cut,
        };
        if ended == Ended::ByItself {
            slot.answering(false);
            linger(std::net::TcpStream::from(keep), &slot).await;
        }
    }

    /// One request and its answer (no keep-alive), within the deadlines.
    async fn exchange<I>(self: &Arc<Self>, io: I, head_by: Instant, slot: &Slot) -> Ended
    where
        I: hyper::rt::Read + hyper::rt::Write + Unpin + Send + 'static,
    {
        let head = Arc::new(AtomicBool::new(false));
        let service = {
            let (me, head) = (Arc::clone(self), Arc::clone(&head));
            service_fn(move |req| {
                head.store(true, Ordering::Relaxed);
                let me = Arc::clone(&me);
                async move { Ok::<_, Infallible>(me.route(req).await) }
            })
        };
        let conn = http1::Builder::new()
            .keep_alive(false)
            .half_close(true)
            .max_buf_size(MAX_HEAD)
            .serve_connection(io, service);
        let (mut conn, mut sleep, mut killed) = (pin!(conn), pin!(sleep_until(head_by)), pin!(slot.kill.notified()));
        let mut answering = false;
        poll_fn(|cx| {
            if conn.as_mut().poll(cx).is_ready() {
                return Poll::Ready(Ended::ByItself);
            }
            // The head came in while hyper was polled: the answer's deadline from now on.
            if !answering && head.load(Ordering::Relaxed) {
                answering = true;
                slot.answering(true);
                sleep.as_mut().reset(Instant::now() + ANSWER_TIME);
            }
            if killed.as_mut().poll(cx).is_ready() || sleep.as_mut().poll(cx).is_ready() {
                return Poll::Ready(Ended::Cut);
            }
            Poll::Pending
        })
        .await
    }

    async fn route<B>(&self, req: Request<B>) -> Response<Page> {
        let target = req.uri().path_and_query().map_or(0, |p| p.as_str().len());
        if target > MAX_TARGET {
            return plain(StatusCode::URI_TOO_LONG, "request target longer than 8 KiB\n");
        }
        let Some(config) = self.config.current() else {
            return plain(
                StatusCode::INTERNAL_SERVER_ERROR,
                "the server's web config does not load (its stderr says why)\n",
            );
        };
        if !config.users.authorised(&req).await {
            let mut r = plain(StatusCode::UNAUTHORIZED, "unauthorized\n");
            r.headers_mut().insert(
                WWW_AUTHENTICATE,
                HeaderValue::from_static("Basic realm=\"pcieperf\", charset=\"UTF-8\""),
            );
            return r;
        }
        let (ctype, body) = match req.uri().path() {
            "/metrics" => (
                "text/plain; version=0.0.4; charset=utf-8",
                Page::of(self.pages.metrics()),
            ),
            "/" => ("text/html; charset=utf-8", Page::of([self.pages.live_page()])),
            "/api/targets" => ("application/json", Page::of([self.pages.targets()])),
            _ => return plain(StatusCode::NOT_FOUND, "not found: try /metrics or /\n"),
        };
        if req.method() != Method::GET && req.method() != Method::HEAD {
            let mut r = plain(StatusCode::METHOD_NOT_ALLOWED, "only GET and HEAD\n");
            r.headers_mut().insert(ALLOW, HeaderValue::from_static("GET, HEAD"));
            return r;
        }
        response(StatusCode::OK, ctype, body)
    }
}

fn response(status: StatusCode, ctype: &'static str, body: Page) -> Response<Page> {
    let mut r = Response::new(body);
    *r.status_mut() = status;
    let h = r.headers_mut();
    h.insert(CONTENT_TYPE, HeaderValue::from_static(ctype));
    h.insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
    h.insert(CONNECTION, HeaderValue::from_static("close"));
    r
}

fn plain(status: StatusCode, text: &'static str) -> Response<Page> {
    response(status, "text/plain; charset=utf-8", Page::text(text))
}

/// Close an answered connection in stages (RFC 9112 section 9.6): close the writing side, then
/// read what the client still sends until it closes, [`LINGER_TIME`] has passed or
/// [`LINGER_BYTES`] came. A socket closed with unread bytes in it is reset, and the reset can
/// discard the answer before the client reads it (a request pipelined behind the first, the
/// rest of an oversized head).
async fn linger(keep: std::net::TcpStream, slot: &Slot) {
    let _ = keep.shutdown(std::net::Shutdown::Write);
    let Ok(s) = TcpStream::from_std(keep) else {
        return;
    };
    let drain = async {
        let (mut buf, mut read) = ([0u8; 8192], 0);
        while read < LINGER_BYTES {
            if s.readable().await.is_err() {
                return;
            }
            match s.try_read(&mut buf) {
                Ok(0) => return,
                Ok(n) => read += n,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                Err(_) => return,
            }
        }
    };
    within(drain, Instant::now() + LINGER_TIME, &slot.kill).await;
}
