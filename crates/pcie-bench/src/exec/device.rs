//! The device side of the exec protocol, for device programs written in Rust: [`serve`] reads
//! pcieperf's requests, hands the hello and each test to a [`Device`] and writes its replies.
//! `pcieperf-refdev` is [`serve`] over an [`EmulatedDevice`](super::emulated::EmulatedDevice).

use super::protocol::{quote, BufferOffer, DeviceHello, Reply, Request};
use crate::params::TestParams;
use std::io::{BufRead, Write};

/// A device as a device program drives it.
pub trait Device {
    /// Attaches the host buffer pcieperf offers (with none, the device uses its own) and
    /// describes the device; an error ends the session.
    fn hello(&mut self, buffer: Option<&BufferOffer>) -> Result<DeviceHello, String>;
    /// Runs one test: a `latency` or `bandwidth` reply carrying `test.id`, or why it could not
    /// (sent as an `error` reply; the session goes on).
    fn test(&mut self, test: &DeviceTest) -> Result<Reply, String>;
}

/// One `test` request, its parameters checked.
#[derive(Debug, Clone, PartialEq)]
pub struct DeviceTest {
    pub id: u64,
    pub params: TestParams,
    pub seed: u64,
    /// pcieperf ran the host cache steps just before.
    pub host_cache_done: bool,
}

/// Why a session ended before pcieperf's `bye` or the end of its input.
#[derive(Debug)]
pub enum ServeError {
    /// A line that is not a request; pcieperf has been told in an `error` reply.
    Request(String),
    /// The device refused the hello; pcieperf has been told in an `error` reply.
    Hello(String),
    /// Writing a reply failed.
    Io(std::io::Error),
}

impl std::fmt::Display for ServeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ServeError::Request(m) | ServeError::Hello(m) => f.write_str(m),
            ServeError::Io(e) => write!(f, "cannot write a reply: {e}"),
        }
    }
}

impl std::error::Error for ServeError {}

/// Answers the requests on `input` (pcieperf's lines, normally stdin) on `output` (stdout), one
/// reply line per request, until `bye` or the end of the input.
pub fn serve(device: &mut dyn Device, input: impl BufRead, mut output: impl Write) -> Result<(), ServeError> {
    let mut send = |reply: &Reply| {
        let line = serde_json::to_string(reply).expect("replies serialise") + "\n";
        output
            .write_all(line.as_bytes())
            .and_then(|_| output.flush())
            .map_err(ServeError::Io)
    };
    for line in input.lines() {
        let Ok(line) = line else { break };
        let request: Request = match serde_json::from_str(&line) {
            Ok(r) => r,
            Err(e) => {
                let message = format!("cannot read request {}: {e}", quote(&line));
                send(&Reply::Error {
                    id: None,
                    message: message.clone(),
                })?;
                return Err(ServeError::Request(message));
            }
        };
        let reply = match request {
            Request::Hello { buffer, .. } => match device.hello(buffer.as_ref()) {
                Ok(hello) => Reply::Hello(hello),
                Err(message) => {
                    send(&Reply::Error {
                        id: None,
                        message: message.clone(),
                    })?;
                    return Err(ServeError::Hello(message));
                }
            },
            Request::Test {
                id,
                params,
                seed,
                host_cache_done,
                ..
            } => TestParams::try_from(&params)
                .map_err(|e| e.to_string())
                .and_then(|params| {
                    device.test(&DeviceTest {
                        id,
                        params,
                        seed,
                        host_cache_done,
                    })
                })
                .unwrap_or_else(|message| Reply::Error { id: Some(id), message }),
            Request::Bye => break,
        };
        send(&reply)?;
    }
    Ok(())
}
