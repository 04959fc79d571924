//! `pcieperf pmu top` in a pseudo-terminal (openpty, the program's controlling terminal): it
//! draws the header and a row per event, re-sorts on a key, fits 80x24 and 200x60 terminals and
//! redraws after a resize, leaves colours out under NO_COLOR, and quits on `q` with exit 0 and the
//! terminal as it found it. The screen is read as a terminal shows it (vt100). Counts the host's
//! software PMU (skipped where perf_event_open is not permitted).

use crate::common;
use common::{can_count_software, pcieperf, refused, software_backed_dwc, stderr, stdout};

use std::io::{Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

struct Pty {
    master: std::fs::File,
    slave: OwnedFd,
}

fn winsize(cols: u16, rows: u16) -> libc::winsize {
    libc::winsize {
        ws_row: rows,
        ws_col: cols,
        ws_xpixel: 0,
        ws_ypixel: 0,
    }
}

fn openpty(cols: u16, rows: u16) -> Pty {
    let (mut m, mut s) = (0, 0);
    let ws = winsize(cols, rows);
    // SAFETY: openpty writes two new descriptors; the termios pointer may be null.
    let r = unsafe { libc::openpty(&mut m, &mut s, std::ptr::null_mut(), std::ptr::null(), &ws) };
    assert_eq!(r, 0, "openpty: {}", std::io::Error::last_os_error());
    // SAFETY: both descriptors are new and owned by nobody else.
    unsafe {
        Pty {
            master: std::fs::File::from_raw_fd(m),
            slave: OwnedFd::from_raw_fd(s),
        }
    }
}

fn lflag(fd: &OwnedFd) -> libc::tcflag_t {
    // SAFETY: tcgetattr fills the struct we pass.
    let mut t: libc::termios = unsafe { std::mem::zeroed() };
    assert_eq!(unsafe { libc::tcgetattr(fd.as_raw_fd(), &mut t) }, 0);
    t.c_lflag
}

/// What the program wrote to the terminal, raw and as a terminal of the pty's size shows it.
struct Output {
    bytes: Vec<u8>,
    screen: vt100::Parser,
}

/// `pcieperf pmu top ARGS` on a new pty of `cols` x `rows`, as the session leader with the pty
/// as its controlling terminal (so a resize sends it SIGWINCH, as in a terminal emulator).
struct Top {
    child: Child,
    pty: Pty,
    out: Arc<Mutex<Output>>,
    /// The terminal's local modes before the program ran.
    initial_lflag: libc::tcflag_t,
}

impl Top {
    fn start(cols: u16, rows: u16, args: &[&str], no_color: bool) -> Top {
        let pty = openpty(cols, rows);
        // Read before the program starts: it may be in raw mode by the time start() returns.
        let initial_lflag = lflag(&pty.slave);
        let io = || Stdio::from(pty.slave.try_clone().unwrap());
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_pcieperf"));
        cmd.args(["pmu", "top"]).args(args).env_remove("NO_COLOR");
        if no_color {
            cmd.env("NO_COLOR", "1");
        }
        // SAFETY: setsid and ioctl are async-signal-safe; stdin (fd 0) is the pty's slave.
        unsafe {
            cmd.pre_exec(|| {
                if libc::setsid() < 0 || libc::ioctl(0, libc::TIOCSCTTY, 0) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let child = cmd.stdin(io()).stdout(io()).stderr(io()).spawn().unwrap();
        let out = Arc::new(Mutex::new(Output {
            bytes: Vec::new(),
            screen: vt100::Parser::new(rows, cols, 0),
        }));
        let mut reader = pty.master.try_clone().unwrap();
        let sink = Arc::clone(&out);
        std::thread::spawn(move || {
            let mut b = [0u8; 4096];
            while let Ok(n) = reader.read(&mut b) {
                if n == 0 {
                    break;
                }
                let mut o = sink.lock().unwrap();
                o.bytes.extend_from_slice(&b[..n]);
                o.screen.process(&b[..n]);
            }
        });
        Top {
            child,
            pty,
            out,
            initial_lflag,
        }
    }

    /// Everything the program wrote to the terminal so far, as text.
    fn raw(&self) -> String {
        String::from_utf8_lossy(&self.out.lock().unwrap().bytes).into_owned()
    }

    /// The screen's rows, trailing blanks removed.
    fn rows(&self) -> Vec<String> {
        let o = self.out.lock().unwrap();
        let (_, cols) = o.screen.screen().size();
        o.screen
            .screen()
            .rows(0, cols)
            .map(|r| r.trim_end().to_string())
            .collect()
    }

    /// The screen as text once `pred` holds for it.
    fn wait_frame(&self, what: &str, pred: impl Fn(&str) -> bool) -> String {
        let start = Instant::now();
        loop {
            let frame = self.rows().join("\n");
            if pred(&frame) {
                return frame;
            }
            assert!(
                start.elapsed() < Duration::from_secs(20),
                "no frame with {what}:\n{frame}\n{:?}",
                self.raw()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn key(&mut self, k: &[u8]) {
        self.pty.master.write_all(k).unwrap();
    }

    /// The terminal becomes `cols` x `rows` (TIOCSWINSZ: the kernel sends SIGWINCH).
    fn resize(&mut self, cols: u16, rows: u16) {
        self.out.lock().unwrap().screen.set_size(rows, cols);
        let ws = winsize(cols, rows);
        // SAFETY: TIOCSWINSZ reads the winsize we pass.
        assert_eq!(
            unsafe { libc::ioctl(self.pty.master.as_raw_fd(), libc::TIOCSWINSZ, &ws) },
            0
        );
    }

    /// `q`, then exit 0 within 5 s.
    fn quit(&mut self) {
        self.key(b"q");
        let start = Instant::now();
        let status = loop {
            if let Some(s) = self.child.try_wait().unwrap() {
                break s;
            }
            assert!(start.elapsed() < Duration::from_secs(5), "did not quit on q");
            std::thread::sleep(Duration::from_millis(20));
        };
        assert_eq!(status.code(), Some(0));
        std::thread::sleep(Duration::from_millis(100));
    }
}

impl Drop for Top {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Line index of the row that names `event`.
fn row_of(frame: &str, event: &str) -> usize {
    frame.lines().position(|l| l.starts_with(event)).unwrap_or(usize::MAX)
}

const TWO_CLOCKS: [&str; 4] = ["-e", "software/cpu-clock/,software/task-clock/", "-I", "100"];

fn ready(f: &str) -> bool {
    f.contains("Rx Gb/s") && f.contains("software/task-clock/") && f.contains("q quit")
}

#[test]
fn live_view_sorts_on_keys_and_quits_on_q_restoring_the_terminal() {
    if !can_count_software() {
        return;
    }
    let mut top = Top::start(160, 30, &[&TWO_CLOCKS[..], &["--sort", "name"]].concat(), false);
    let before = top.initial_lflag;
    assert_ne!(before & libc::ICANON, 0);

    let ready = |f: &str| ready(f) && f.contains("History");
    let frame = top.wait_frame("the header and both rows", ready);
    assert!(top.raw().starts_with("\x1b[?1049h\x1b[?25l"), "alternate screen first");
    assert!(
        frame.contains("Root port / event▼") && frame.contains("sort: Name▼"),
        "{frame}"
    );
    assert!(
        row_of(&frame, "software/cpu-clock/") < row_of(&frame, "software/task-clock/"),
        "{frame}"
    );
    // Rates of about 1e9 ns/s and a sparkline of them.
    let row = frame.lines().find(|l| l.starts_with("software/cpu-clock/")).unwrap();
    assert!(row.contains('▁') || row.contains('█'), "{row}");
    // The help line names every key, on the last row.
    let help = top.rows()[29].clone();
    for k in ["n name", "r Rx", "t Tx", "a total", "c rate", "i reverse", "q quit"] {
        assert!(help.contains(k), "{help}");
    }
    // Colours (SGR 38;5) unless NO_COLOR says otherwise.
    assert!(top.raw().contains("\x1b[38;5;"), "no colours");

    // `i` reverses the name order.
    top.key(b"i");
    let frame = top.wait_frame("the reversed order", |f| ready(f) && f.contains("sort: Name▲"));
    assert!(
        row_of(&frame, "software/task-clock/") < row_of(&frame, "software/cpu-clock/"),
        "{frame}"
    );
    // `c` sorts by rate.
    top.key(b"c");
    let frame = top.wait_frame("the rate sort", |f| ready(f) && f.contains("sort: Rate▲"));
    assert!(frame.contains("Rate/s▲"), "{frame}");

    top.quit();
    assert!(
        top.raw().ends_with("\x1b[?25h\x1b[?1049l"),
        "cursor and screen restored"
    );
    assert_eq!(lflag(&top.pty.slave), before, "terminal modes restored");
}

/// The row of `event` and the help line at the bottom of a `cols` x `rows` screen.
fn check_fits(top: &Top, cols: usize, rows: usize) {
    let screen = top.rows();
    assert_eq!(screen.len(), rows);
    assert!(screen[rows - 1].contains("q quit"), "help line last: {screen:#?}");
    assert!(screen[0].starts_with("pcieperf pmu top  2 targets"), "{screen:#?}");
    assert!(screen.iter().all(|l| l.chars().count() <= cols));
}

#[test]
fn fits_80x24_and_200x60_and_redraws_after_a_resize() {
    if !can_count_software() {
        return;
    }
    let mut top = Top::start(80, 24, &TWO_CLOCKS, false);
    let frame = top.wait_frame("the first rows at 80x24", ready);
    check_fits(&top, 80, 24);
    // Too narrow for the table and its history: the columns that fit, clipped at the edge
    // rather than wrapped onto the next row.
    let (cpu, task) = (
        row_of(&frame, "software/cpu-clock/"),
        row_of(&frame, "software/task-clock/"),
    );
    assert_eq!(cpu.abs_diff(task), 1, "{frame}");

    top.resize(200, 60);
    let wide = |f: &str| {
        ready(f)
            && f.lines().count() == 60
            && f.lines()
                .any(|l| l.starts_with("software/cpu-clock/") && l.chars().count() > 100)
    };
    let frame = top.wait_frame("a 200x60 frame with history", wide);
    check_fits(&top, 200, 60);
    assert!(frame.contains("History"), "{frame}");

    top.resize(80, 24);
    top.wait_frame("an 80x24 frame again", |f| ready(f) && f.lines().count() == 24);
    check_fits(&top, 80, 24);
    top.quit();
}

#[test]
fn no_color_keeps_the_view_without_colours() {
    if !can_count_software() {
        return;
    }
    let mut top = Top::start(200, 60, &TWO_CLOCKS, true);
    top.wait_frame("both rows", |f| ready(f) && f.contains("History"));
    check_fits(&top, 200, 60);
    top.quit();
    let raw = top.raw();
    assert!(
        !raw.contains("\x1b[38;") && !raw.contains("\x1b[48;"),
        "a colour under NO_COLOR"
    );
    assert!(raw.contains("\x1b[1m"), "bold stays (NO_COLOR is about colour)");
}

#[test]
fn without_a_terminal_top_refuses_or_prints_rows() {
    let e = refused(&["pmu", "top", "-e", "software/cpu-clock/"]);
    assert!(e.contains("not a terminal") && e.contains("--format csv|json"), "{e}");
    let e = refused(&["pmu", "top", "-e", "software/cpu-clock/", "--sort", "speed"]);
    assert!(e.contains("speed") && e.contains("total"), "{e}");
    if !can_count_software() {
        return;
    }
    let o = pcieperf(&[
        "pmu",
        "top",
        "-e",
        "software/cpu-clock/",
        "-I",
        "100",
        "--duration",
        "0.35",
        "--format",
        "json",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let rows: Vec<serde_json::Value> = stdout(&o).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert!((3..=5).contains(&rows.len()), "{}", stdout(&o));
    for r in &rows {
        assert_eq!(r["name"], "software/cpu-clock/");
        let rate = r["rate"].as_f64().unwrap();
        // cpu-clock counts nanoseconds: about 1e9 per second.
        assert!((5e8..1.5e9).contains(&rate), "{r}");
    }
}

#[test]
fn rows_sum_rx_and_tx_per_root_port_with_the_link_share() {
    if !can_count_software() {
        return;
    }
    let tree = software_backed_dwc("top-payload");
    let o = pcieperf(&[
        "pmu",
        "top",
        "--sysfs",
        tree.path().to_str().unwrap(),
        "-I",
        "100",
        "--duration",
        "0.25",
        "--format",
        "json",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let rows: Vec<serde_json::Value> = stdout(&o).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert!(!rows.is_empty());
    for r in &rows {
        assert_eq!(r["name"], "0000:30:03.0");
        assert_eq!(r["pmus"], "dwc_rootport_3018");
        assert_eq!(r["link"], "32.0 GT/s PCIe x16");
        for dir in ["rx", "tx"] {
            let g = r[format!("{dir}_gbps")].as_f64().unwrap();
            let pct = r[format!("{dir}_pct")].as_f64().unwrap();
            assert!((4.0..12.0).contains(&g), "{r}");
            // The share is of pcie-model's 4 KB DMA payload rate at Gen5 x16 (about 446.8 Gb/s).
            let model = g * 100.0 / pct;
            assert!((model - 446.8).abs() < 0.2, "{r}");
        }
        assert!(r["rate"].is_null(), "{r}");
    }
}
