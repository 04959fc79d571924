//! One running device program: lines to its stdin, lines from its stdout with a deadline, and
//! what became of it when it stops answering (exit status, signal, or killed after a timeout).

use super::ProgramLog;
use std::collections::VecDeque;
use std::io::{self, BufRead, BufReader, Read, Write};
use std::os::unix::process::CommandExt;
use std::process::{ChildStdin, Command, ExitStatus, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Lines of the program's stderr kept for error messages.
const STDERR_TAIL: usize = 5;
/// Longest line a program may write: a latency reply of the most samples a test takes
/// (`MAX_LATENCY_SAMPLES`, 10 digits and a comma each) fits, with room to spare. A longer line
/// is refused without being held in memory.
pub(super) const MAX_LINE_BYTES: usize = 256 << 20;
/// How long a program that closed its stdout gets to exit before it is killed.
const EXIT_GRACE: Duration = Duration::from_secs(2);

pub(super) struct Child {
    process: std::process::Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<std::io::Result<String>>,
    stderr: JoinHandle<()>,
    stderr_tail: Arc<Mutex<VecDeque<String>>>,
}

impl Child {
    /// Starts `argv` with piped stdin/stdout. Its stderr lines go to `log`, prefixed with
    /// `label`, and the last few are kept for error messages.
    pub fn spawn(argv: &[String], label: &str, log: ProgramLog) -> std::io::Result<Child> {
        // Its own process group: Ctrl-C at the terminal reaches pcieperf only, which lets the
        // running test finish and then says bye.
        let mut process = Command::new(&argv[0])
            .args(&argv[1..])
            .process_group(0)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()?;
        let stdout = process.stdout.take().expect("piped stdout");
        let stderr = process.stderr.take().expect("piped stderr");
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            let mut reader = BufReader::new(stdout);
            loop {
                let line = match read_line(&mut reader, MAX_LINE_BYTES) {
                    Ok(None) => return,
                    Ok(Some(line)) => Ok(line),
                    Err(e) => Err(e),
                };
                let failed = line.is_err();
                if tx.send(line).is_err() || failed {
                    return;
                }
            }
        });
        let stderr_tail = Arc::new(Mutex::new(VecDeque::new()));
        let tail = Arc::clone(&stderr_tail);
        let label = label.to_string();
        let stderr = std::thread::spawn(move || {
            let mut reader = BufReader::new(stderr);
            while let Ok(Some(line)) = read_line(&mut reader, MAX_LINE_BYTES) {
                (log.0)(&format!("[{label}] {line}"));
                let mut t = tail.lock().expect("stderr tail");
                if t.len() == STDERR_TAIL {
                    t.pop_front();
                }
                t.push_back(line);
            }
        });
        Ok(Child {
            stdin: process.stdin.take(),
            process,
            lines,
            stderr,
            stderr_tail,
        })
    }

    /// Sends one line. A program that is gone cannot take it; the next `recv` reports that,
    /// after any lines it wrote before it went (they often say why).
    pub fn send(&mut self, line: &str) {
        if let Some(stdin) = self.stdin.as_mut() {
            if writeln!(stdin, "{line}").and_then(|_| stdin.flush()).is_err() {
                self.stdin = None;
            }
        }
    }

    /// The next line within `timeout`. On a timeout the program is killed; when its output
    /// ends, its exit status is collected. The error says which happened.
    pub fn recv(&mut self, timeout: Duration) -> Result<String, String> {
        match self.lines.recv_timeout(timeout) {
            Ok(Ok(line)) => Ok(line),
            Ok(Err(e)) => Err(self.ended(&format!("wrote unreadable output ({e})"))),
            Err(RecvTimeoutError::Disconnected) => Err(self.ended("closed its output")),
            Err(RecvTimeoutError::Timeout) => {
                let _ = self.process.kill();
                let _ = self.process.wait();
                Err(format!(
                    "no reply within {}; the program was killed{}",
                    seconds(timeout),
                    self.stderr_note()
                ))
            }
        }
    }

    /// Kills the program (it broke the protocol); it must not run on unsupervised.
    pub fn kill(&mut self) {
        let _ = self.process.kill();
        let _ = self.process.wait();
    }

    /// Closes stdin and waits a little for the program to exit on its own, then kills it.
    pub fn close(&mut self) {
        self.stdin = None;
        if self.wait_briefly().is_none() {
            self.kill();
        }
    }

    fn wait_briefly(&mut self) -> Option<ExitStatus> {
        let deadline = Instant::now() + EXIT_GRACE;
        loop {
            match self.process.try_wait() {
                Ok(Some(s)) => return Some(s),
                Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(10)),
                _ => return None,
            }
        }
    }

    /// "the program <what> and exited with status 3" (or was killed by a signal), plus its
    /// last stderr lines.
    fn ended(&mut self, what: &str) -> String {
        let how = match self.wait_briefly() {
            Some(s) => describe_status(s),
            None => {
                self.kill();
                "did not exit, and was killed".into()
            }
        };
        // The stderr thread ends with the last writer of the pipe, normally the program: give it
        // a moment so the tail is complete, but do not wait on a child the program left behind.
        let deadline = Instant::now() + Duration::from_millis(300);
        while !self.stderr.is_finished() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
        format!("the program {what} and {how}{}", self.stderr_note())
    }

    fn stderr_note(&self) -> String {
        let tail = self.stderr_tail.lock().expect("stderr tail");
        if tail.is_empty() {
            String::new()
        } else {
            let lines: Vec<&str> = tail.iter().map(String::as_str).collect();
            format!("; its last stderr lines: {}", lines.join(" | "))
        }
    }
}

impl Drop for Child {
    fn drop(&mut self) {
        if matches!(self.process.try_wait(), Ok(None)) {
            self.close();
        }
    }
}

/// "exited with status 3", "was killed by signal 6 (SIGABRT)".
/// The next line without its line end, `None` at the end of the output. A line longer than
/// `max` bytes is an error, read no further than `max` + 1 bytes.
fn read_line(r: &mut impl BufRead, max: usize) -> io::Result<Option<String>> {
    let mut buf = Vec::new();
    if r.by_ref().take(max as u64 + 1).read_until(b'\n', &mut buf)? == 0 {
        return Ok(None);
    }
    if buf.last() == Some(&b'\n') {
        buf.pop();
        if buf.last() == Some(&b'\r') {
            buf.pop();
        }
    } else if buf.len() > max {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("a line longer than {max} bytes"),
        ));
    }
    String::from_utf8(buf)
        .map(Some)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "a line that is not UTF-8"))
}

fn describe_status(s: ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    match (s.code(), s.signal()) {
        (Some(code), _) => format!("exited with status {code}"),
        (None, Some(sig)) => format!("was killed by signal {sig}{}", signal_name(sig)),
        _ => format!("ended ({s})"),
    }
}

fn signal_name(sig: i32) -> &'static str {
    match sig {
        libc::SIGABRT => " (SIGABRT)",
        libc::SIGSEGV => " (SIGSEGV)",
        libc::SIGBUS => " (SIGBUS)",
        libc::SIGKILL => " (SIGKILL)",
        libc::SIGTERM => " (SIGTERM)",
        libc::SIGILL => " (SIGILL)",
        libc::SIGFPE => " (SIGFPE)",
        libc::SIGPIPE => " (SIGPIPE)",
        _ => "",
    }
}

/// `2 s`, `0.5 s`.
fn seconds(d: Duration) -> String {
    format!("{} s", d.as_secs_f64())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_bounded_and_line_ends_stripped() {
        let mut r = io::Cursor::new(b"one\r\ntwo\nthree".to_vec());
        assert_eq!(read_line(&mut r, 8).unwrap().as_deref(), Some("one"));
        assert_eq!(read_line(&mut r, 8).unwrap().as_deref(), Some("two"));
        assert_eq!(read_line(&mut r, 8).unwrap().as_deref(), Some("three"));
        assert_eq!(read_line(&mut r, 8).unwrap(), None);
        // 8 bytes and its newline fit; 9 do not, and the reader stops after 9 bytes.
        let mut r = io::Cursor::new(b"12345678\n123456789abc\n".to_vec());
        assert_eq!(read_line(&mut r, 8).unwrap().as_deref(), Some("12345678"));
        let e = read_line(&mut r, 8).unwrap_err();
        assert_eq!(e.to_string(), "a line longer than 8 bytes");
        assert_eq!(r.position(), 18);
        let e = read_line(&mut io::Cursor::new(vec![0xff, b'\n']), 8).unwrap_err();
        assert!(e.to_string().contains("not UTF-8"), "{e}");
    }
}
