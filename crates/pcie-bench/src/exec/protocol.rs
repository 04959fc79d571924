//! The exec protocol (version 1): one JSON object per line on the program's stdin (requests)
//! and stdout (replies). `docs/backends.md` is its specification; these types are both sides of
//! it, so the reference device program speaks exactly what the backend expects.

use crate::backend::{BandwidthTotals, LatencySamples, Outcome};
use crate::params::{CacheState, Iommu, Numa, Pattern, TestKind, TestParams};
use serde::{Deserialize, Serialize};

/// Bumped on any change an existing program could misread; optional fields may be added
/// within a version (both sides ignore fields they do not know).
pub const PROTOCOL_VERSION: u32 = 1;

/// pcieperf → program.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Request {
    /// First line: who is asking, and the host DMA buffer the program may use.
    Hello {
        protocol: u32,
        tool: String,
        version: String,
        buffer: Option<BufferOffer>,
    },
    /// Run one test and reply with `latency`, `bandwidth` or `error` carrying the same `id`.
    Test {
        id: u64,
        /// Human-readable name of the test, for the program's own messages.
        name: String,
        params: WireParams,
        seed: u64,
        /// pcieperf thrashed the host caches (and for `hwarm` warmed the window) just now.
        host_cache_done: bool,
    },
    /// Last line: finish and exit with status 0.
    Bye,
}

/// A shared mapping of the host DMA buffer: the program opens `path` read-write and maps
/// `bytes` bytes of it; offset 0 is the start of every test's window.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BufferOffer {
    pub path: String,
    pub bytes: u64,
    /// Page size backing it: 4096, 2097152 or 1073741824.
    pub page_bytes: u64,
    /// NUMA node the memory is bound to, when binding succeeded.
    pub numa_node: Option<u32>,
}

/// A test's parameters with the command-line spellings (`LAT_RD`, `rand`, `hwarm`, `2m`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WireParams {
    pub kind: String,
    pub size: u32,
    pub window: u64,
    pub host_offset: u32,
    pub device_offset: u32,
    pub pattern: String,
    pub cache: String,
    pub count: u64,
    pub numa: Numa,
    pub iommu: String,
}

impl From<&TestParams> for WireParams {
    fn from(t: &TestParams) -> WireParams {
        WireParams {
            kind: t.kind.name().into(),
            size: t.size,
            window: t.window,
            host_offset: t.host_offset,
            device_offset: t.device_offset,
            pattern: t.pattern.csv_name().to_ascii_lowercase(),
            cache: t.cache.csv_name().to_ascii_lowercase(),
            count: t.count,
            numa: t.numa,
            iommu: t.iommu.name().into(),
        }
    }
}

impl TryFrom<&WireParams> for TestParams {
    type Error = crate::params::ParamError;
    fn try_from(w: &WireParams) -> Result<TestParams, Self::Error> {
        Ok(TestParams {
            kind: w.kind.parse::<TestKind>()?,
            size: w.size,
            window: w.window,
            host_offset: w.host_offset,
            device_offset: w.device_offset,
            pattern: w.pattern.parse::<Pattern>()?,
            cache: w.cache.parse::<CacheState>()?,
            count: w.count,
            numa: w.numa,
            iommu: w.iommu.parse::<Iommu>()?,
        })
    }
}

/// Program → pcieperf.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Reply {
    Hello(DeviceHello),
    /// One sample per transaction, in issue order, in units of `cycle_ps`.
    Latency {
        id: u64,
        samples: Vec<u32>,
        /// Cycles of the whole measurement loop; the sum of the samples when absent.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        total_cycles: Option<u64>,
        /// Overrides the hello's `cycle_ps` for this reply.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cycle_ps: Option<f64>,
    },
    /// Payload bytes and transactions per direction, and the time they took.
    Bandwidth {
        id: u64,
        bytes: u64,
        transactions: u64,
        time_cycles: u64,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cycle_ps: Option<f64>,
    },
    /// The test (or, without `id`, the program) failed.
    Error {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        id: Option<u64>,
        message: String,
    },
}

/// What the program says about itself and its device.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DeviceHello {
    pub protocol: u32,
    /// Free-form description of the device (a string or an object), stored in `run.json`.
    pub device: serde_json::Value,
    /// Largest DMA transfer in bytes.
    pub max_transfer: u32,
    /// Length of one timestamp cycle in picoseconds (1000 when reporting nanoseconds).
    pub cycle_ps: f64,
    /// Link configuration, when the program knows it (same keys as pcieperf's link config).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub link: Option<serde_json::Value>,
    /// PCI address of the device (`0000:03:00.0`), to read its link state from sysfs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bdf: Option<String>,
    /// The program wants pcieperf to thrash the host caches and warm the window (host side).
    #[serde(default)]
    pub host_cache_steps: bool,
}

/// A reply that gives no result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProtocolError {
    /// The program answered with an `error` reply: the test failed, the program is still in step.
    Reported(String),
    /// The line breaks the protocol: the program cannot be trusted with further tests.
    Broken(String),
}

impl std::fmt::Display for ProtocolError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ProtocolError::Reported(m) | ProtocolError::Broken(m) => f.write_str(m),
        }
    }
}

/// Shortest and longest timestamp cycle accepted, in picoseconds (1 fs to 1 ms): outside
/// them a reply's figures would be nonsense (or overflow to infinity).
pub const CYCLE_PS_RANGE: std::ops::RangeInclusive<f64> = 0.001..=1e9;

/// `cycle_ps` checked against [`CYCLE_PS_RANGE`].
fn check_cycle_ps(c: f64) -> Result<f64, String> {
    if CYCLE_PS_RANGE.contains(&c) {
        Ok(c)
    } else {
        Err(format!(
            "cycle_ps {c:?} must be a number of picoseconds from {} to {}",
            CYCLE_PS_RANGE.start(),
            CYCLE_PS_RANGE.end()
        ))
    }
}

/// Longest part of an offending line quoted in an error.
const QUOTE_CHARS: usize = 120;

/// `line` shortened for an error message, with the original length when it was cut.
pub fn quote(line: &str) -> String {
    let mut chars = line.chars();
    let head: String = chars.by_ref().take(QUOTE_CHARS).collect();
    if chars.next().is_none() {
        format!("{head:?}")
    } else {
        format!("{head:?}... ({} bytes)", line.len())
    }
}

/// Parses the program's hello, checking its protocol version first so a program speaking
/// another version is told so whatever else its hello holds.
pub fn parse_hello(line: &str) -> Result<DeviceHello, ProtocolError> {
    let bad = |why: String| ProtocolError::Broken(format!("bad hello {}: {why}", quote(line)));
    let value: serde_json::Value = serde_json::from_str(line).map_err(|e| bad(format!("not JSON ({e})")))?;
    if value.get("type").and_then(|t| t.as_str()) != Some("hello") {
        return Err(bad("the first line must be {\"type\": \"hello\", ...}".into()));
    }
    match value.get("protocol").and_then(|p| p.as_u64()) {
        Some(v) if v == PROTOCOL_VERSION as u64 => {}
        Some(v) => {
            return Err(ProtocolError::Broken(format!(
                "the program speaks protocol version {v}; pcieperf speaks version {PROTOCOL_VERSION}"
            )))
        }
        None => return Err(bad("\"protocol\" must be a version number".into())),
    }
    let hello: DeviceHello = serde_json::from_value(value).map_err(|e| bad(e.to_string()))?;
    if hello.max_transfer == 0 {
        return Err(bad("\"max_transfer\" must be at least 1".into()));
    }
    check_cycle_ps(hello.cycle_ps).map_err(bad)?;
    Ok(hello)
}

/// Turns the reply to test `id` into its outcome, checking it answers that test with the kind
/// and number of results it asked for.
pub fn parse_result(line: &str, id: u64, t: &TestParams, cycle_ps: f64) -> Result<Outcome, ProtocolError> {
    let bad = |why: String| ProtocolError::Broken(format!("{why}: {}", quote(line)));
    let reply: Reply = serde_json::from_str(line).map_err(|e| bad(format!("malformed reply ({e})")))?;
    let reply_id = match &reply {
        Reply::Hello(_) => return Err(bad("a second hello in place of a result".into())),
        Reply::Error { id: None, message } => {
            return Err(ProtocolError::Broken(format!("the program failed: {message}")))
        }
        Reply::Error { id: Some(i), .. } | Reply::Latency { id: i, .. } | Reply::Bandwidth { id: i, .. } => *i,
    };
    if reply_id != id {
        return Err(bad(format!(
            "reply for test id {reply_id} while test id {id} was running"
        )));
    }
    let cycle = |own: Option<f64>| check_cycle_ps(own.unwrap_or(cycle_ps)).map_err(bad);
    match reply {
        Reply::Error { message, .. } => Err(ProtocolError::Reported(format!("the program reported: {message}"))),
        Reply::Latency {
            samples,
            total_cycles,
            cycle_ps,
            ..
        } if t.kind.is_latency() => {
            if samples.len() as u64 != t.count {
                return Err(bad(format!(
                    "{} latency samples for a test of {}",
                    samples.len(),
                    t.count
                )));
            }
            if total_cycles == Some(0) {
                return Err(bad("total_cycles must be at least 1".into()));
            }
            Ok(Outcome::Latency(LatencySamples {
                total_cycles: total_cycles.unwrap_or_else(|| samples.iter().map(|&s| s as u64).sum()),
                cycles: samples,
                cycle_ps: cycle(cycle_ps)?,
            }))
        }
        Reply::Bandwidth {
            bytes,
            transactions,
            time_cycles,
            cycle_ps,
            ..
        } if t.kind.is_bandwidth() => {
            if time_cycles == 0 {
                return Err(bad("time_cycles must be at least 1".into()));
            }
            if transactions == 0 || transactions > t.count {
                return Err(bad(format!(
                    "transactions {transactions} must be between 1 and the test's {} DMAs",
                    t.count
                )));
            }
            let most = transactions as u128 * t.size as u128;
            if bytes == 0 || bytes as u128 > most {
                return Err(bad(format!(
                    "bytes {bytes} must be between 1 and transactions × size = {most}"
                )));
            }
            Ok(Outcome::Bandwidth(BandwidthTotals {
                bytes,
                transactions,
                time_cycles,
                cycle_ps: cycle(cycle_ps)?,
            }))
        }
        _ => Err(bad(format!(
            "a {} test needs a \"{}\" reply",
            t.kind,
            if t.kind.is_latency() { "latency" } else { "bandwidth" }
        ))),
    }
}

/// One request as the line sent (without the newline).
pub fn encode(r: &Request) -> String {
    serde_json::to_string(r).expect("requests serialise")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::params::sample;

    const HELLO: &str = r#"{"type":"hello","protocol":1,"device":"emulated","max_transfer":4096,"cycle_ps":1000}"#;

    #[test]
    fn hello_versions_and_required_fields() {
        let h = parse_hello(HELLO).unwrap();
        assert_eq!(
            (h.max_transfer, h.cycle_ps, h.host_cache_steps, h.bdf),
            (4096, 1000.0, false, None)
        );
        let v2 = HELLO.replace("\"protocol\":1", "\"protocol\":2");
        assert_eq!(
            parse_hello(&v2).unwrap_err().to_string(),
            "the program speaks protocol version 2; pcieperf speaks version 1"
        );
        let e = parse_hello("Segmentation fault").unwrap_err().to_string();
        assert!(e.starts_with("bad hello \"Segmentation fault\": not JSON"), "{e}");
        let e = parse_hello(&HELLO.replace("\"max_transfer\":4096,", ""))
            .unwrap_err()
            .to_string();
        assert!(e.contains("missing field `max_transfer`"), "{e}");
        for bad in ["0", "-1", "1e300", "1e-300"] {
            let e = parse_hello(&HELLO.replace("1000}", &format!("{bad}}}")))
                .unwrap_err()
                .to_string();
            assert!(
                e.contains("cycle_ps") && e.contains("from 0.001 to 1000000000"),
                "{bad}: {e}"
            );
        }
        let e = parse_hello(r#"{"type":"latency","id":0}"#).unwrap_err().to_string();
        assert!(e.contains("first line must be"), "{e}");
    }

    #[test]
    fn results_must_answer_the_running_test() {
        let lat = sample(TestKind::LatRd, 3);
        let ok = parse_result(r#"{"type":"latency","id":4,"samples":[500,600,700]}"#, 4, &lat, 1000.0).unwrap();
        assert_eq!(
            ok,
            Outcome::Latency(LatencySamples {
                cycles: vec![500, 600, 700],
                cycle_ps: 1000.0,
                total_cycles: 1800
            })
        );
        let cases = [
            (
                r#"{"type":"latency","id":3,"samples":[1,2,3]}"#,
                "reply for test id 3 while test id 4",
            ),
            (
                r#"{"type":"latency","id":4,"samples":[1,2]}"#,
                "2 latency samples for a test of 3",
            ),
            (
                r#"{"type":"bandwidth","id":4,"bytes":1,"transactions":1,"time_cycles":1}"#,
                "a LAT_RD test needs a \"latency\" reply",
            ),
            (
                r#"{"type":"error","id":4,"message":"DMA engine stuck"}"#,
                "the program reported: DMA engine stuck",
            ),
            (
                r#"{"type":"error","message":"out of memory"}"#,
                "the program failed: out of memory",
            ),
            (
                r#"{"type":"latency","id":4,"samples":[1,2,3],"cycle_ps":-1}"#,
                "cycle_ps -1.0 must be",
            ),
            (
                r#"{"type":"latency","id":4,"samples":[1,2,3],"cycle_ps":1e300}"#,
                "cycle_ps 1e300 must be",
            ),
            (
                r#"{"type":"latency","id":4,"samples":[1,2,3,4]}"#,
                "4 latency samples for a test of 3",
            ),
            (r#"{"type":"latency","id":4,"samples":[1,-2,3]}"#, "malformed reply"),
            (
                r#"{"type":"latency","id":4,"samples":[1,4294967296,3]}"#,
                "malformed reply",
            ),
            (r#"{"type":"latency","id":4,"samples":[1,2.5,3]}"#, "malformed reply"),
            (
                r#"{"type":"latency","id":4,"samples":[1,2,3],"cycle_ps":NaN}"#,
                "malformed reply",
            ),
            (
                r#"{"type":"latency","id":4,"samples":[1,2,3],"total_cycles":0}"#,
                "total_cycles must be at least 1",
            ),
            ("{\"type\":\"latency\",\"id\":4,", "malformed reply"),
            ("DMA done", "malformed reply"),
        ];
        for (line, want) in cases {
            let e = parse_result(line, 4, &lat, 1000.0).unwrap_err().to_string();
            assert!(e.contains(want), "{line}: {e}");
        }
        let bw = sample(TestKind::BwRd, 10);
        let r = r#"{"type":"bandwidth","id":1,"bytes":640,"transactions":10,"time_cycles":80,"cycle_ps":2000}"#;
        assert_eq!(
            parse_result(r, 1, &bw, 1000.0).unwrap(),
            Outcome::Bandwidth(BandwidthTotals {
                bytes: 640,
                transactions: 10,
                time_cycles: 80,
                cycle_ps: 2000.0
            })
        );
        let bad = [
            (
                r#"{"type":"bandwidth","id":1,"bytes":640,"transactions":10,"time_cycles":0}"#,
                "time_cycles must be at least 1",
            ),
            (
                r#"{"type":"bandwidth","id":1,"bytes":640,"transactions":0,"time_cycles":8}"#,
                "transactions 0 must be between 1 and the test's 10 DMAs",
            ),
            (
                r#"{"type":"bandwidth","id":1,"bytes":640,"transactions":11,"time_cycles":8}"#,
                "transactions 11 must be between 1 and the test's 10 DMAs",
            ),
            (
                r#"{"type":"bandwidth","id":1,"bytes":641,"transactions":10,"time_cycles":8}"#,
                "bytes 641 must be between 1 and transactions × size = 640",
            ),
            (
                r#"{"type":"bandwidth","id":1,"bytes":0,"transactions":10,"time_cycles":8}"#,
                "bytes 0 must be",
            ),
            (
                r#"{"type":"bandwidth","id":1,"bytes":-640,"transactions":10,"time_cycles":8}"#,
                "malformed reply",
            ),
            (
                r#"{"type":"bandwidth","id":1,"bytes":640,"transactions":10,"time_cycles":8,"cycle_ps":0}"#,
                "cycle_ps 0.0 must be",
            ),
        ];
        for (line, want) in bad {
            let e = parse_result(line, 1, &bw, 1000.0).unwrap_err().to_string();
            assert!(e.contains(want), "{line}: {e}");
        }
    }

    #[test]
    fn long_lines_are_quoted_truncated() {
        let line = "x".repeat(5000);
        let q = quote(&line);
        assert!(q.ends_with("... (5000 bytes)") && q.len() < 150, "{q}");
        assert_eq!(quote("short"), "\"short\"");
    }

    #[test]
    fn requests_round_trip_with_command_line_spellings() {
        let t = TestParams {
            iommu: Iommu::Super2M,
            ..sample(TestKind::LatWrRd, 20)
        };
        let r = Request::Test {
            id: 7,
            name: "x".into(),
            params: WireParams::from(&t),
            seed: 9,
            host_cache_done: true,
        };
        let line = encode(&r);
        assert!(
            line.contains(r#""kind":"LAT_WRRD""#)
                && line.contains(r#""cache":"hwarm""#)
                && line.contains(r#""iommu":"2m""#),
            "{line}"
        );
        let back: Request = serde_json::from_str(&line).unwrap();
        let Request::Test { params, .. } = &back else {
            panic!("{back:?}")
        };
        assert_eq!(TestParams::try_from(params).unwrap(), t);
        assert_eq!(encode(&Request::Bye), r#"{"type":"bye"}"#);
    }
}
