//! SIGINT and SIGTERM during `pmu record` and `pmu serve` on a simulated host: the run ends as
//! if its time were up (exit 0), the output file is whole (complete CSV rows or JSON lines, the
//! bounded run's file written once by rename, no temporary left) or absent, serve writes
//! nothing, and the simulated host's sysfs tree is removed.

use crate::common;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const SIGNALS: [(libc::c_int, &str); 2] = [(libc::SIGINT, "int"), (libc::SIGTERM, "term")];

/// The simulated host's trees of process `pid` (`pcie-pmu-sim-<profile>-<pid>-<n>` in /dev/shm or
/// the temporary directory).
fn sim_trees(pid: u32) -> Vec<PathBuf> {
    [Path::new("/dev/shm").to_path_buf(), std::env::temp_dir()]
        .iter()
        .filter_map(|base| std::fs::read_dir(base).ok())
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            let name = p.file_name().unwrap_or_default().to_string_lossy().into_owned();
            name.starts_with("pcie-pmu-sim-") && name.contains(&format!("-{pid}-"))
        })
        .collect()
}

fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let start = Instant::now();
    while !done() {
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "timed out waiting for {what}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Signal the child and wait (at most 10 s) for its exit code.
fn stop(child: &mut Child, sig: libc::c_int) -> Option<i32> {
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as libc::pid_t, sig) };
    let start = Instant::now();
    loop {
        if let Some(s) = child.try_wait().unwrap() {
            return s.code();
        }
        if start.elapsed() > Duration::from_secs(10) {
            let _ = child.kill();
            panic!("did not stop within 10 s of signal {sig}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn record(out: &Path, extra: &[&str]) -> Child {
    Command::new(env!("CARGO_BIN_EXE_pcieperf"))
        .args(["pmu", "record", "--source", "sim", "-I", "50", "-o"])
        .arg(out)
        .args(extra)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

/// Every line ends and is a whole row: CSV rows have the header's 14 fields, JSON lines parse.
fn assert_whole(text: &str, json: bool) {
    assert!(text.ends_with('\n'), "cut short: {text:?}");
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines.len() >= 2, "{text}");
    if json {
        for l in &lines {
            let v: serde_json::Value = serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}"));
            assert!(v["event"].is_string(), "{l}");
        }
    } else {
        assert!(lines[0].starts_with("time_s,"), "{text}");
        assert!(lines.iter().all(|l| l.split(',').count() == 14), "{text}");
    }
}

#[test]
fn an_unbounded_record_ends_on_a_signal_with_whole_rows() {
    for (sig, name) in SIGNALS {
        for (format, json) in [("csv", false), ("json", true)] {
            let d = common::scratch_dir(&format!("signal-live-{name}-{format}"));
            let out = d.join("r.txt");
            let mut child = record(&out, &["--format", format]);
            let pid = child.id();
            wait_until("rows", || {
                std::fs::read_to_string(&out).map_or(0, |t| t.lines().count()) >= 4
            });
            assert_eq!(stop(&mut child, sig), Some(0), "{name} {format}");
            assert_whole(&std::fs::read_to_string(&out).unwrap(), json);
            assert_eq!(
                sim_trees(pid),
                Vec::<PathBuf>::new(),
                "{name} {format}: tree left behind"
            );
            std::fs::remove_dir_all(&d).unwrap();
        }
    }
}

#[test]
fn a_bounded_record_writes_its_file_whole_on_a_signal() {
    for (sig, name) in SIGNALS {
        let d = common::scratch_dir(&format!("signal-bounded-{name}"));
        let out = d.join("r.csv");
        let mut child = record(&out, &["--duration", "600"]);
        let pid = child.id();
        // The tree appears once the host starts; the run counts a few intervals after that.
        wait_until("the simulated host", || !sim_trees(pid).is_empty());
        std::thread::sleep(Duration::from_millis(300));
        assert!(!out.exists(), "a bounded run writes its file at the end");
        assert_eq!(stop(&mut child, sig), Some(0), "{name}");
        assert_whole(&std::fs::read_to_string(&out).unwrap(), false);
        let left: Vec<_> = std::fs::read_dir(&d)
            .unwrap()
            .flatten()
            .map(|e| e.file_name())
            .collect();
        assert_eq!(left, ["r.csv"], "{name}: only the file, no temporary");
        assert_eq!(sim_trees(pid), Vec::<PathBuf>::new(), "{name}: tree left behind");
        std::fs::remove_dir_all(&d).unwrap();
    }
}

#[test]
fn a_signal_during_setup_still_removes_the_tree() {
    for (sig, name) in SIGNALS {
        let d = common::scratch_dir(&format!("signal-setup-{name}"));
        let out = d.join("r.csv");
        let mut child = record(&out, &[]);
        let pid = child.id();
        wait_until("the simulated host", || !sim_trees(pid).is_empty());
        assert_eq!(stop(&mut child, sig), Some(0), "{name}");
        assert_eq!(sim_trees(pid), Vec::<PathBuf>::new(), "{name}: tree left behind");
        if let Ok(text) = std::fs::read_to_string(&out) {
            assert!(text.is_empty() || text.ends_with('\n'), "{name}: {text:?}");
        }
        std::fs::remove_dir_all(&d).unwrap();
    }
}

#[test]
fn serve_ends_on_a_signal_and_leaves_nothing() {
    for (sig, name) in SIGNALS {
        let d = common::scratch_dir(&format!("signal-serve-{name}"));
        let mut child = Command::new(env!("CARGO_BIN_EXE_pcieperf"))
            .args(["pmu", "serve", "--source", "sim", "-I", "50", "--listen", "127.0.0.1:0"])
            .current_dir(&d)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let pid = child.id();
        let mut line = String::new();
        BufReader::new(child.stderr.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        assert!(line.contains("listening on http://127.0.0.1:"), "{line}");
        assert!(!sim_trees(pid).is_empty(), "the simulated host runs");
        std::thread::sleep(Duration::from_millis(200));
        assert_eq!(stop(&mut child, sig), Some(0), "{name}");
        assert_eq!(sim_trees(pid), Vec::<PathBuf>::new(), "{name}: tree left behind");
        assert_eq!(
            std::fs::read_dir(&d).unwrap().count(),
            0,
            "{name}: serve writes no file"
        );
        std::fs::remove_dir_all(&d).unwrap();
    }
}
