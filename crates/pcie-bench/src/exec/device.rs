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

#[cfg(test)]
mod tests {
    use super::serve;
    use crate::exec::protocol::{encode, DeviceHello, Reply, Request, WireParams, PROTOCOL_VERSION};
    use crate::exec::EmulatedDevice;
    use crate::params::{sample, TestKind};

    fn replies(input: &str) -> (Result<(), super::ServeError>, Vec<Reply>) {
        let mut out = Vec::new();
        let result = serve(&mut EmulatedDevice::new(false), input.as_bytes(), &mut out);
        let lines = String::from_utf8(out).unwrap();
        (
            result,
            lines.lines().map(|l| serde_json::from_str(l).unwrap()).collect(),
        )
    }

    #[test]
    fn answers_hello_and_tests_until_bye() {
        let hello = Request::Hello {
            protocol: PROTOCOL_VERSION,
            tool: "test".into(),
            version: "0".into(),
            buffer: None,
        };
        let test = |id, kind| Request::Test {
            id,
            name: "x".into(),
            params: WireParams::from(&sample(kind, 10)),
            seed: 1,
            host_cache_done: false,
        };
        let input = [
            hello,
            test(1, TestKind::LatRd),
            test(2, TestKind::BwWr),
            Request::Bye,
            test(3, TestKind::LatRd),
        ]
        .iter()
        .map(|r| encode(r) + "\n")
        .collect::<String>();
        let (result, out) = replies(&input);
        assert!(result.is_ok());
        assert_eq!(out.len(), 3, "{out:?}");
        let Reply::Hello(DeviceHello {
            protocol, max_transfer, ..
        }) = &out[0]
        else {
            panic!("{out:?}")
        };
        assert_eq!((*protocol, *max_transfer), (PROTOCOL_VERSION, 4096));
        assert!(
            matches!(&out[1], Reply::Latency { id: 1, samples, .. } if samples.len() == 10),
            "{out:?}"
        );
        assert!(
            matches!(
                &out[2],
                Reply::Bandwidth {
                    id: 2,
                    transactions: 10,
                    ..
                }
            ),
            "{out:?}"
        );
    }

    #[test]
    fn a_line_that_is_no_request_ends_the_session_with_an_error_reply() {
        let (result, out) = replies("DMA please\n");
        assert!(matches!(result, Err(super::ServeError::Request(_))));
        assert!(
            matches!(&out[..], [Reply::Error { id: None, message }] if message.starts_with("cannot read request \"DMA please\"")),
            "{out:?}"
        );
    }
}
