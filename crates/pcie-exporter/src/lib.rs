//! The HTTP side of a Prometheus exporter (`pcieperf pmu serve`): a server that keeps answering
//! scrapes while other clients misbehave, serving pages someone else renders. It knows nothing
//! of PMUs or link health: the caller hands it a [`Pages`] (the `/metrics` text, the live page
//! and the JSON it polls, each as last rendered) and publishes new ones as often as it likes.
//!
//! ```text
//!   Listener::bind(addr)  ->  Listener::serve(web config, Arc<dyn Pages>)  ->  its own thread:
//!     accept -> Conns::admit (the cap) -> first byte, TLS, head, answer (each a deadline)
//!            -> route: /metrics, /, /api/targets (GET, HEAD) -> Page (shared buffers, sliced)
//!     (each TLS handshake and request: Live::current, the web config re-read if it changed)
//! ```
//!
//! - [`server`]: the listener, tokio's single-threaded runtime and hyper's HTTP/1.1 connections
//!   (no keep-alive), each with deadlines: its first byte within [`SILENT_TIME`], its request
//!   head (the TLS handshake included) within [`HEAD_TIME`] of being accepted, its answer
//!   within [`ANSWER_TIME`]; the routing and the status codes (400/414/431 from hyper's head
//!   parsing with [`MAX_HEAD`] and [`MAX_TARGET`], 401, 404, 405); the staged close that keeps
//!   an answer from being reset by what the client still sends.
//! - `conns`: the connection cap (at most [`MAX_CONNS`], fewer where the descriptor limit is
//!   lower): a new connection always gets in, by closing the oldest one still waiting for its
//!   request (or, when all are being answered, the oldest of those), so the accept loop never
//!   writes, waits or refuses.
//! - `page`: a response body made of shared buffers written in slices: a slow reader holds a
//!   reference to the page it started on, never a copy.
//! - `auth`: basic authentication against bcrypt hashes, two checks at a time on blocking
//!   threads, good credentials remembered (by digest) so a scrape does not pay bcrypt each time;
//!   an unknown user costs a check against a dummy hash, so timing does not tell names.
//! - [`web_config`]: `--web.config.file` in the exporter-toolkit's YAML (`tls_server_config:
//!   {cert_file, key_file}`, `basic_auth_users: {NAME: BCRYPT-HASH}`), so one file serves
//!   node_exporter and pcieperf; what the toolkit offers beyond that is refused by name.
//! - `live`: the web config in force, re-read when its file, certificate or key changes (a
//!   `stat` each per TLS connection and per request, `versions`), so certificates rotate and
//!   users go without a restart; a file that stops loading fails closed (handshakes refused,
//!   requests 500, one stderr line per change) until it loads again.
//!
//! Errors are `io::Error`s (binding, starting the thread) or a [`web_config::WebConfigError`]
//! naming the file; the command line adds the option that named them.

mod auth;
mod conns;
mod live;
mod page;
pub mod server;
mod versions;
pub mod web_config;

pub use bytes::Bytes;
pub use conns::MAX_CONNS;
pub use server::{Listener, Pages, ANSWER_TIME, HEAD_TIME, MAX_HEAD, MAX_TARGET, SILENT_TIME};
pub use web_config::WebConfig;
