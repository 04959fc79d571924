//! `pcieperf pmu top` in a pseudo-terminal (openpty): it draws the header and a row per event,
//! re-sorts on a key, and quits on `q` with exit 0 and the terminal as it found it. Counts the
//! host's software PMU (skipped where perf_event_open is not permitted).

mod common;
use common::{can_count_software, pcieperf, refused, software_backed_dwc, stderr, stdout};

use std::io::{Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

struct Pty {
    master: std::fs::File,
    slave: OwnedFd,
}

fn openpty(cols: u16, rows: u16) -> Pty {
    let (mut m, mut s) = (0, 0);
    let ws = libc::winsize {
        ws_row: rows,
        ws_col: cols,
        ws_xpixel: 0,
        ws_ypixel: 0,
    };
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

/// Everything the program wrote to the terminal so far, as text.
fn screen(buf: &Arc<Mutex<Vec<u8>>>) -> String {
    String::from_utf8_lossy(&buf.lock().unwrap()).into_owned()
}

/// The last complete frame (the text after the last clear-screen) once `pred` holds for it.
fn wait_frame(buf: &Arc<Mutex<Vec<u8>>>, what: &str, pred: impl Fn(&str) -> bool) -> String {
    let start = Instant::now();
    loop {
        let all = screen(buf);
        if let Some(frame) = all.rsplit("\x1b[H\x1b[2J").next().filter(|f| pred(f)) {
            return frame.to_string();
        }
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "no frame with {what}:\n{all}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Line index of the row that names `event`.
fn row_of(frame: &str, event: &str) -> usize {
    frame.lines().position(|l| l.starts_with(event)).unwrap_or(usize::MAX)
}

#[test]
fn live_view_sorts_on_keys_and_quits_on_q_restoring_the_terminal() {
    if !can_count_software() {
        return;
    }
    let pty = openpty(160, 30);
    let before = lflag(&pty.slave);
    assert_ne!(before & libc::ICANON, 0);
    let io = || Stdio::from(pty.slave.try_clone().unwrap());
    let mut child = Command::new(env!("CARGO_BIN_EXE_pcieperf"))
        .args([
            "pmu",
            "top",
            "-e",
            "software/cpu-clock/,software/task-clock/",
            "-I",
            "100",
            "--sort",
            "name",
        ])
        .stdin(io())
        .stdout(io())
        .stderr(io())
        .spawn()
        .unwrap();
    let buf = Arc::new(Mutex::new(Vec::new()));
    let mut reader = pty.master.try_clone().unwrap();
    let sink = Arc::clone(&buf);
    std::thread::spawn(move || {
        let mut b = [0u8; 4096];
        while let Ok(n) = reader.read(&mut b) {
            if n == 0 {
                break;
            }
            sink.lock().unwrap().extend_from_slice(&b[..n]);
        }
    });
    let mut master = pty.master;

    let ready = |f: &str| f.contains("Rx Gb/s") && f.contains("software/task-clock/") && f.contains("History");
    let frame = wait_frame(&buf, "the header and both rows", ready);
    assert!(
        screen(&buf).starts_with("\x1b[?1049h\x1b[?25l"),
        "alternate screen first"
    );
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

    // `i` reverses the name order.
    master.write_all(b"i").unwrap();
    let frame = wait_frame(&buf, "the reversed order", |f| ready(f) && f.contains("sort: Name▲"));
    assert!(
        row_of(&frame, "software/task-clock/") < row_of(&frame, "software/cpu-clock/"),
        "{frame}"
    );
    // `c` sorts by rate.
    master.write_all(b"c").unwrap();
    let frame = wait_frame(&buf, "the rate sort", |f| ready(f) && f.contains("sort: Rate▲"));
    assert!(frame.contains("Rate/s▲"), "{frame}");

    master.write_all(b"q").unwrap();
    let start = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        assert!(start.elapsed() < Duration::from_secs(5), "did not quit on q");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(status.code(), Some(0));
    std::thread::sleep(Duration::from_millis(100));
    assert!(
        screen(&buf).ends_with("\x1b[?25h\x1b[?1049l"),
        "cursor and screen restored"
    );
    assert_eq!(lflag(&pty.slave), before, "terminal modes restored");
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
