//! The `exec:PROGRAM [ARGS]` backend: an external program drives a real device and speaks the
//! line-oriented JSON protocol of `protocol.rs` (specified in `docs/backends.md`) on its stdin
//! and stdout. pcieperf provides the host side: the shared DMA buffer and, when the program
//! asks, the host cache steps before each test.
//!
//! One device, one program: by default a single child runs the tests one after another. With
//! `children` > 1 that many copies run (each with its own buffer), one test each at a time —
//! for programs that drive several devices or DMA engines independently.
//!
//! The program's side lives here too: [`serve`] answers the protocol for any [`Device`], and
//! [`EmulatedDevice`] is the memcpy device `pcieperf-refdev` serves.

mod child;
mod device;
mod emulated;
pub mod protocol;

use crate::backend::{Backend, BackendError, BackendInfo, Outcome};
use crate::host::{node_cpus, CacheSteps, DmaBuffer};
use crate::params::{TestParams, BUFFER_BYTES};
use child::Child;
pub use device::{serve, Device, DeviceTest, ServeError};
pub use emulated::EmulatedDevice;
use protocol::{encode, parse_hello, parse_result, BufferOffer, DeviceHello, ProtocolError, Request, WireParams};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

/// How the backend runs its programs.
#[derive(Debug, Clone)]
pub struct ExecOptions {
    /// For the program's hello.
    pub handshake_timeout: Duration,
    /// Per test; `None`: [`default_test_timeout`] of the test.
    pub test_timeout: Option<Duration>,
    /// Copies of the program running tests in parallel.
    pub children: usize,
    /// NUMA node for the DMA buffer.
    pub buffer_node: Option<u32>,
    /// NUMA node whose CPUs run the host cache steps.
    pub cache_node: Option<u32>,
    /// Where sysfs lives (huge page and NUMA information): `/` except in tests.
    pub root: PathBuf,
    /// Where the programs' stderr lines go.
    pub program_log: ProgramLog,
}

/// Receives each stderr line of a program, prefixed with its name, from the thread copying it:
/// the caller decides how it meets its own output (a progress bar, say). Our stderr by default.
#[derive(Clone)]
pub struct ProgramLog(pub Arc<dyn Fn(&str) + Send + Sync>);

impl Default for ProgramLog {
    fn default() -> ProgramLog {
        ProgramLog(Arc::new(|line| eprintln!("{line}")))
    }
}

impl std::fmt::Debug for ProgramLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ProgramLog")
    }
}

impl Default for ExecOptions {
    fn default() -> ExecOptions {
        ExecOptions {
            handshake_timeout: Duration::from_secs(10),
            test_timeout: None,
            children: 1,
            buffer_node: None,
            cache_node: None,
            root: PathBuf::from("/"),
            program_log: ProgramLog::default(),
        }
    }
}

/// 10 s plus 10 µs per transaction: generous for a device (pcie-bench's transactions take
/// 0.1–2 µs) and for an emulating script, tight enough that a hung program is noticed.
pub fn default_test_timeout(t: &TestParams) -> Duration {
    Duration::from_secs(10) + Duration::from_micros(10).saturating_mul(t.count.min(u32::MAX as u64) as u32)
}

/// Why the backend could not start.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StartError(pub String);

impl std::fmt::Display for StartError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for StartError {}

/// Running device programs and what they said in their hello.
pub struct ExecBackend {
    spec: String,
    argv: Vec<String>,
    hello: DeviceHello,
    buffer: BufferOffer,
    options: ExecOptions,
    idle: Mutex<Vec<Session>>,
    returned: Condvar,
    next_id: AtomicU64,
    warnings: Vec<String>,
}

/// One program with its buffer and host cache steps.
struct Session {
    child: Child,
    buffer: DmaBuffer,
    cache: Option<CacheSteps>,
    /// Set when the program broke down; it gets no further tests.
    broken: Option<String>,
}

impl ExecBackend {
    /// Starts `exec:PROGRAM [ARGS]` (arguments split as a shell would, with quotes) and
    /// completes the handshake with every copy.
    pub fn start(spec: &str, options: ExecOptions) -> Result<ExecBackend, StartError> {
        let command = spec
            .strip_prefix("exec:")
            .ok_or_else(|| StartError(format!("{spec}: must be exec:PROGRAM [ARGS]")))?;
        let argv = split_command(command).map_err(|e| StartError(format!("{spec}: {e}")))?;
        if argv.is_empty() {
            return Err(StartError(format!("{spec}: no program given (exec:PROGRAM [ARGS])")));
        }
        let cache_cpus = options.cache_node.map(|n| node_cpus(&options.root, n)).transpose();
        let mut sessions = Vec::new();
        let mut warnings = Vec::new();
        let mut first: Option<(DeviceHello, BufferOffer)> = None;
        for _ in 0..options.children.max(1) {
            let (buffer, w) = DmaBuffer::allocate(&options.root, BUFFER_BYTES, options.buffer_node)
                .map_err(|e| StartError(format!("{spec}: {e}")))?;
            if warnings.is_empty() {
                warnings = w;
            }
            let offer = BufferOffer {
                path: buffer.path(),
                bytes: buffer.len() as u64,
                page_bytes: buffer.page_bytes(),
                numa_node: buffer.numa_node(),
            };
            let (child, hello) = handshake(&argv, &offer, &options).map_err(|e| StartError(format!("{spec}: {e}")))?;
            let cpus = cache_cpus.clone().unwrap_or_default().unwrap_or_default();
            sessions.push(Session {
                child,
                buffer,
                cache: hello.host_cache_steps.then(|| CacheSteps::new(cpus)),
                broken: None,
            });
            first.get_or_insert((hello, offer));
        }
        let (hello, buffer) = first.expect("at least one program");
        if let (true, Err(why)) = (hello.host_cache_steps, &cache_cpus) {
            warnings.push(format!("NUMA: {why}; the host cache steps run on any CPU"));
        }
        Ok(ExecBackend {
            spec: spec.to_string(),
            argv,
            hello,
            buffer,
            options,
            idle: Mutex::new(sessions),
            returned: Condvar::new(),
            next_id: AtomicU64::new(0),
            warnings,
        })
    }

    /// What the host could not provide (huge pages, NUMA binding), once per run.
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }

    /// What the program said about itself.
    pub fn hello(&self) -> &DeviceHello {
        &self.hello
    }

    /// The pages of the DMA buffers offered to the programs (4096 without huge pages).
    pub fn buffer_page_bytes(&self) -> u64 {
        self.buffer.page_bytes
    }

    fn take(&self) -> Session {
        let mut idle = self.idle.lock().expect("exec sessions");
        loop {
            if let Some(s) = idle.pop() {
                return s;
            }
            idle = self.returned.wait(idle).expect("exec sessions");
        }
    }

    fn give_back(&self, s: Session) {
        self.idle.lock().expect("exec sessions").push(s);
        self.returned.notify_one();
    }
}

/// Starts the program, sends our hello and reads its hello.
fn handshake(argv: &[String], offer: &BufferOffer, options: &ExecOptions) -> Result<(Child, DeviceHello), String> {
    let label = argv[0].rsplit('/').next().unwrap_or(&argv[0]);
    let mut child =
        Child::spawn(argv, label, options.program_log.clone()).map_err(|e| format!("cannot start {}: {e}", argv[0]))?;
    let hello = Request::Hello {
        protocol: protocol::PROTOCOL_VERSION,
        tool: "pcieperf".into(),
        version: env!("CARGO_PKG_VERSION").into(),
        buffer: Some(offer.clone()),
    };
    child.send(&encode(&hello));
    let reply = child
        .recv(options.handshake_timeout)
        .map_err(|e| format!("handshake: {e}"))?;
    match parse_hello(&reply) {
        Ok(h) => Ok((child, h)),
        Err(e) => {
            child.kill();
            Err(format!("handshake: {e}"))
        }
    }
}

impl Session {
    fn run(&mut self, id: u64, t: &TestParams, seed: u64, cycle_ps: f64, timeout: Duration) -> Result<Outcome, String> {
        if let Some(why) = &self.broken {
            return Err(format!("not run: the program failed in an earlier test ({why})"));
        }
        let host_cache_done = match &mut self.cache {
            Some(c) => {
                c.prepare(self.buffer.as_mut_slice(), t);
                true
            }
            None => false,
        };
        let request = Request::Test {
            id,
            name: t.name(),
            params: WireParams::from(t),
            seed,
            host_cache_done,
        };
        self.child.send(&encode(&request));
        let broken = match self.child.recv(timeout) {
            Err(m) => m,
            Ok(line) => match parse_result(&line, id, t, cycle_ps) {
                Ok(o) => return Ok(o),
                Err(ProtocolError::Reported(m)) => return Err(m),
                Err(ProtocolError::Broken(m)) => {
                    self.child.kill();
                    m
                }
            },
        };
        self.broken = Some(broken.clone());
        Err(broken)
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        if self.broken.is_none() {
            self.child.send(&encode(&Request::Bye));
        }
        self.child.close();
    }
}

impl Backend for ExecBackend {
    fn info(&self) -> BackendInfo {
        BackendInfo {
            name: self.spec.clone(),
            description: serde_json::json!({
                "program": self.argv,
                "device": self.hello.device,
                "bdf": self.hello.bdf,
                "protocol": protocol::PROTOCOL_VERSION,
                "cycle_ps": self.hello.cycle_ps,
                "host_cache_steps": self.hello.host_cache_steps,
                "children": self.options.children.max(1),
                "buffer": { "bytes": self.buffer.bytes, "page_bytes": self.buffer.page_bytes, "numa_node": self.buffer.numa_node },
            }),
            max_transfer: self.hello.max_transfer,
        }
    }

    fn link(&self) -> Option<serde_json::Value> {
        self.hello.link.clone()
    }

    fn run(&self, t: &TestParams, seed: u64) -> Result<Outcome, BackendError> {
        let err = |message: String| BackendError {
            test: t.name(),
            message: format!("{}: {message}", self.argv[0]),
        };
        t.check(self.hello.max_transfer).map_err(|e| err(e.to_string()))?;
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let timeout = self.options.test_timeout.unwrap_or_else(|| default_test_timeout(t));
        let mut session = self.take();
        let result = session.run(id, t, seed, self.hello.cycle_ps, timeout);
        self.give_back(session);
        result.map_err(err)
    }
}

/// Splits a command line into words as a POSIX shell would for simple cases: whitespace
/// separates, single quotes keep everything, double quotes keep everything but `\"` and `\\`,
/// a backslash outside quotes escapes the next character.
pub fn split_command(s: &str) -> Result<Vec<String>, String> {
    let mut words = Vec::new();
    let mut word: Option<String> = None;
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        match c {
            c if c.is_whitespace() => words.extend(word.take()),
            '\'' => {
                let w = word.get_or_insert_with(String::new);
                loop {
                    match chars.next() {
                        Some('\'') => break,
                        Some(c) => w.push(c),
                        None => return Err("unbalanced single quote".into()),
                    }
                }
            }
            '"' => {
                let w = word.get_or_insert_with(String::new);
                loop {
                    match chars.next() {
                        Some('"') => break,
                        Some('\\') => match chars.next() {
                            Some(c @ ('"' | '\\')) => w.push(c),
                            Some(c) => {
                                w.push('\\');
                                w.push(c);
                            }
                            None => return Err("unbalanced double quote".into()),
                        },
                        Some(c) => w.push(c),
                        None => return Err("unbalanced double quote".into()),
                    }
                }
            }
            '\\' => match chars.next() {
                Some(c) => word.get_or_insert_with(String::new).push(c),
                None => return Err("a trailing backslash escapes nothing".into()),
            },
            c => word.get_or_insert_with(String::new).push(c),
        }
    }
    words.extend(word);
    Ok(words)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn command_lines_split_like_a_shell() {
        let w = |s: &str| split_command(s).unwrap();
        assert_eq!(
            w("python3 refdev.py --crash-after 2"),
            ["python3", "refdev.py", "--crash-after", "2"]
        );
        assert_eq!(
            w("  a   'b c'  \"d \\\"e\\\"\" f\\ g ''"),
            ["a", "b c", "d \"e\"", "f g", ""]
        );
        assert_eq!(w(""), Vec::<String>::new());
        assert_eq!(split_command("a 'b").unwrap_err(), "unbalanced single quote");
        assert_eq!(split_command("a \"b").unwrap_err(), "unbalanced double quote");
    }

    #[test]
    fn timeouts_scale_with_the_test() {
        let t = crate::params::sample(crate::params::TestKind::LatRd, 2_097_152);
        assert_eq!(default_test_timeout(&t), Duration::from_micros(10_000_000 + 20_971_520));
    }

    #[test]
    fn start_failures_name_the_spec_and_what_went_wrong() {
        let e = |spec: &str| ExecBackend::start(spec, ExecOptions::default()).err().unwrap().0;
        assert_eq!(e("exec:"), "exec:: no program given (exec:PROGRAM [ARGS])");
        assert_eq!(e("exec:a 'b"), "exec:a 'b: unbalanced single quote");
        let missing = e("exec:/nonexistent/device-program");
        assert!(
            missing.starts_with("exec:/nonexistent/device-program: cannot start /nonexistent/device-program: "),
            "{missing}"
        );
        let quiet = e("exec:true");
        assert!(
            quiet.contains("handshake: the program closed its output and exited with status 0"),
            "{quiet}"
        );
        let chatty = e("exec:echo hello");
        assert!(chatty.contains("handshake: bad hello \"hello\": not JSON"), "{chatty}");
    }
}
