//! `pmu serve`'s HTTP/1.1 server: hyper on tokio's single-threaded runtime (a connection is a
//! task of a few KiB, not a thread), optionally over rustls with basic authentication.
//!
//! What keeps a scrape answered while other clients misbehave:
//! * every connection has deadlines: its first byte within [`SILENT_TIME`], its whole request
//!   head (the TLS handshake too) within [`HEAD_TIME`] of being accepted, its answer written
//!   within [`ANSWER_TIME`];
//! * at most [`MAX_CONNS`] connections are held; a new one always gets in, by closing the oldest
//!   connection that has not sent its request yet (or, when every one is being answered, the
//!   oldest of those), so the accept loop never writes, waits or refuses;
//! * a page is rendered once per interval into shared buffers and written from them in slices,
//!   so a slow reader holds a reference, never a copy.

use super::web_config::WebConfig;
use super::Published;
use crate::error::CliError;
use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};
use hyper::body::Incoming;
use hyper::header::{HeaderValue, ALLOW, AUTHORIZATION, CACHE_CONTROL, CONNECTION, CONTENT_TYPE, WWW_AUTHENTICATE};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use std::collections::{BTreeMap, HashSet, VecDeque};
use std::convert::Infallible;
use std::future::{poll_fn, Future};
use std::os::fd::{AsFd, AsRawFd};
use std::pin::{pin, Pin};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Notify, Semaphore};
use tokio::time::{sleep_until, Instant};
use tokio_rustls::TlsAcceptor;

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
/// Connections held at once (fewer where the descriptor limit is lower: each takes two).
pub const MAX_CONNS: usize = 1024;
/// The largest request head read (more: 431), and the longest request target (more: 414).
pub const MAX_HEAD: usize = 16 * 1024;
pub const MAX_TARGET: usize = 8 * 1024;
/// Connections the kernel queues before they are accepted.
const BACKLOG: i32 = 4096;
/// A page is handed to the connection in slices of this size.
const CHUNK: usize = 64 * 1024;
/// Password checks (bcrypt, tens of milliseconds of CPU each) run at most this many at once.
const BCRYPT_AT_ONCE: usize = 2;
/// Remembered good credentials (so a scrape does not pay a bcrypt check each time).
const REMEMBERED: usize = 256;

/// A response body: shared buffers, written in [`CHUNK`]-sized slices of them (no copy).
pub struct Page(VecDeque<Bytes>);

impl Page {
    fn of(parts: impl IntoIterator<Item = Bytes>) -> Page {
        Page(parts.into_iter().collect())
    }
    fn text(s: &'static str) -> Page {
        Page::of([Bytes::from_static(s.as_bytes())])
    }
}

impl Body for Page {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(mut self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        while let Some(front) = self.0.front_mut() {
            if front.is_empty() {
                self.0.pop_front();
                continue;
            }
            let n = front.len().min(CHUNK);
            return Poll::Ready(Some(Ok(Frame::data(front.split_to(n)))));
        }
        Poll::Ready(None)
    }

    fn is_end_stream(&self) -> bool {
        self.0.iter().all(Bytes::is_empty)
    }

    fn size_hint(&self) -> SizeHint {
        SizeHint::with_exact(self.0.iter().map(|b| b.len() as u64).sum())
    }
}

/// The connections held, oldest first, by what they are doing: waiting for their request (or
/// lingering after their answer), or being answered.
struct Conns {
    cap: usize,
    inner: Mutex<ConnsInner>,
}

#[derive(Default)]
struct ConnsInner {
    next: u64,
    waiting: BTreeMap<u64, Arc<Notify>>,
    answering: BTreeMap<u64, Arc<Notify>>,
}

/// A held connection; `kill` is notified when a newer one needs its place.
struct Slot {
    id: u64,
    kill: Arc<Notify>,
    conns: Arc<Conns>,
}

impl Conns {
    fn lock(&self) -> std::sync::MutexGuard<'_, ConnsInner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Hold a new connection, closing the oldest waiting one (else the oldest being answered)
    /// when all places are taken.
    fn admit(self: &Arc<Self>) -> Slot {
        let mut c = self.lock();
        if c.waiting.len() + c.answering.len() >= self.cap {
            let victim = c.waiting.pop_first().or_else(|| c.answering.pop_first());
            if let Some((_, kill)) = victim {
                kill.notify_one();
            }
        }
        let id = c.next;
        c.next += 1;
        let kill = Arc::new(Notify::new());
        c.waiting.insert(id, Arc::clone(&kill));
        Slot {
            id,
            kill,
            conns: Arc::clone(self),
        }
    }
}

impl Slot {
    /// Move to the answered connections (`true`) or back to the waiting ones.
    fn answering(&self, yes: bool) {
        let mut c = self.conns.lock();
        let (from, to) = if yes {
            let c = &mut *c;
            (&mut c.waiting, &mut c.answering)
        } else {
            let c = &mut *c;
            (&mut c.answering, &mut c.waiting)
        };
        if let Some(k) = from.remove(&self.id) {
            to.insert(self.id, k);
        }
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut c = self.conns.lock();
        c.waiting.remove(&self.id);
        c.answering.remove(&self.id);
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
    pages: Arc<Published>,
    tls: Option<TlsAcceptor>,
    users: BTreeMap<String, String>,
    /// Digests of credentials that passed their bcrypt check.
    remembered: Mutex<HashSet<Vec<u8>>>,
    bcrypt: Semaphore,
    conns: Arc<Conns>,
}

/// Serve `pages` on `listener` from a thread of its own, with the TLS and users of `web`.
pub fn spawn(listener: std::net::TcpListener, web: WebConfig, pages: Arc<Published>) -> Result<(), CliError> {
    let failed = |e: std::io::Error| CliError::Runtime(format!("cannot start the HTTP server: {e}"));
    listener.set_nonblocking(true).map_err(failed)?;
    // A longer queue of connections not yet accepted than std's 128 (the kernel caps it at
    // net.core.somaxconn): a burst of connections beyond it would see their SYNs dropped and
    // retried after a second, a scrape among them too.
    // SAFETY: listening again on a listening socket only changes its backlog.
    unsafe { libc::listen(listener.as_raw_fd(), BACKLOG) };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .enable_time()
        .max_blocking_threads(BCRYPT_AT_ONCE)
        .build()
        .map_err(failed)?;
    let server = Arc::new(Server {
        pages,
        tls: web.tls.map(TlsAcceptor::from),
        users: web.users,
        remembered: Mutex::default(),
        bcrypt: Semaphore::new(BCRYPT_AT_ONCE),
        conns: Arc::new(Conns {
            cap: (descriptors().saturating_sub(64) / 2).clamp(8, MAX_CONNS),
            inner: Mutex::default(),
        }),
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

/// The open-descriptor limit, raised to its hard limit first (as Go servers do at start).
fn descriptors() -> usize {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `lim` is a valid rlimit for the calls to read and write.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) != 0 {
            return 1024;
        }
        if lim.rlim_cur < lim.rlim_max {
            let raised = libc::rlimit {
                rlim_cur: lim.rlim_max,
                rlim_max: lim.rlim_max,
            };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &raised) == 0 {
                lim = raised;
            }
        }
    }
    usize::try_from(lim.rlim_cur).unwrap_or(usize::MAX)
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
                match &self.tls {
                    None => self.exchange(TokioIo::new(stream), head_by, &slot).await,
                    Some(tls) => match within(tls.accept(stream), head_by, &slot.kill).await {
                        Some(Ok(s)) => self.exchange(TokioIo::new(s), head_by, &slot).await,
                        _ => Ended::Cut,
                    },
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

    async fn route(&self, req: Request<Incoming>) -> Response<Page> {
        let target = req.uri().path_and_query().map_or(0, |p| p.as_str().len());
        if target > MAX_TARGET {
            return plain(StatusCode::URI_TOO_LONG, "request target longer than 8 KiB\n");
        }
        if !self.authorised(&req).await {
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
            "/" => ("text/html; charset=utf-8", Page::text(super::PAGE)),
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

    /// Whether the request carries the credentials of a configured user (always, when none
    /// is configured).
    async fn authorised(&self, req: &Request<Incoming>) -> bool {
        if self.users.is_empty() {
            return true;
        }
        let Some((user, password)) = req.headers().get(AUTHORIZATION).and_then(basic_credentials) else {
            return false;
        };
        let Some(hash) = self.users.get(&user) else {
            return false;
        };
        let key = {
            let mut d = ring::digest::Context::new(&ring::digest::SHA256);
            for part in [user.as_bytes(), password.as_bytes(), hash.as_bytes()] {
                d.update(&(part.len() as u64).to_le_bytes());
                d.update(part);
            }
            d.finish().as_ref().to_vec()
        };
        let lock = || self.remembered.lock().unwrap_or_else(|p| p.into_inner());
        if lock().contains(&key) {
            return true;
        }
        let Ok(_turn) = self.bcrypt.acquire().await else {
            return false;
        };
        let hash = hash.clone();
        let ok = tokio::task::spawn_blocking(move || bcrypt::verify(password, &hash).unwrap_or(false))
            .await
            .unwrap_or(false);
        if ok {
            let mut m = lock();
            if m.len() >= REMEMBERED {
                m.clear();
            }
            m.insert(key);
        }
        ok
    }
}

/// `Authorization: Basic BASE64(user:password)`'s user and password.
fn basic_credentials(v: &HeaderValue) -> Option<(String, String)> {
    use base64::Engine;
    let (scheme, value) = v.to_str().ok()?.trim().split_once(' ')?;
    if !scheme.eq_ignore_ascii_case("basic") {
        return None;
    }
    let raw = base64::engine::general_purpose::STANDARD.decode(value.trim()).ok()?;
    let (user, password) = String::from_utf8(raw)
        .ok()?
        .split_once(':')
        .map(|(u, p)| (u.to_string(), p.to_string()))?;
    Some((user, password))
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_page_is_sliced_without_copies_and_knows_its_length() {
        let big = Bytes::from(vec![7u8; CHUNK * 2 + 5]);
        let mut page = Page::of([big.clone(), Bytes::new(), Bytes::from_static(b"tail")]);
        assert_eq!(page.size_hint().exact(), Some((CHUNK * 2 + 9) as u64));
        let waker = std::task::Waker::noop();
        let mut cx = Context::from_waker(waker);
        let mut sizes = Vec::new();
        while let Poll::Ready(Some(Ok(f))) = Pin::new(&mut page).poll_frame(&mut cx) {
            let d = f.into_data().unwrap();
            if sizes.is_empty() {
                // A slice of the shared buffer, not a copy of it.
                assert_eq!(d.as_ptr(), big.as_ptr());
            }
            sizes.push(d.len());
        }
        assert_eq!(sizes, [CHUNK, CHUNK, 5, 4]);
        assert!(page.is_end_stream());
    }

    #[test]
    fn a_new_connection_takes_the_place_of_the_oldest_waiting_one() {
        let conns = Arc::new(Conns {
            cap: 3,
            inner: Mutex::default(),
        });
        let a = conns.admit();
        let b = conns.admit();
        let c = conns.admit();
        a.answering(true);
        // Full: b (the oldest still waiting) is told to go, not a (being answered).
        let d = conns.admit();
        let told = |s: &Slot| {
            let n = s.kill.notified();
            let mut n = pin!(n);
            n.as_mut().enable()
        };
        assert!(told(&b) && !told(&a) && !told(&c));
        drop(b);
        // c and d wait, a is answered; with c and d answered too, the oldest answered goes.
        c.answering(true);
        d.answering(true);
        let _e = conns.admit();
        assert!(told(&a) && !told(&c) && !told(&d));
    }

    #[test]
    fn basic_credentials_are_read_as_sent() {
        let h = |s: &str| HeaderValue::from_str(s).unwrap();
        // "prometheus:pa:ss" (a password may hold colons).
        assert_eq!(
            basic_credentials(&h("Basic cHJvbWV0aGV1czpwYTpzcw==")),
            Some(("prometheus".into(), "pa:ss".into()))
        );
        assert_eq!(
            basic_credentials(&h("basic cHJvbWV0aGV1czpwYTpzcw==")).unwrap().0,
            "prometheus"
        );
        assert_eq!(basic_credentials(&h("Bearer cHJvbWV0aGV1czpwYTpzcw==")), None);
        assert_eq!(basic_credentials(&h("Basic !!!")), None);
        assert_eq!(basic_credentials(&h("Basic bm9jb2xvbg==")), None, "no colon");
    }
}
