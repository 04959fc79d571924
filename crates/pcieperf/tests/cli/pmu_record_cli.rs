//! `pcieperf pmu record`: time series files (CSV, JSON lines), written whole for bounded runs and
//! as they go until Ctrl-C, charts through pcie-report, and refusals that leave no file. Counts
//! the host's software PMU (skipped where perf_event_open is not permitted).

use crate::common;
use common::{can_count_software, pcieperf, refused, software_backed_dwc, stderr};

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

fn dir(name: &str) -> common::Scratch {
    common::scratch_dir(&format!("record-{name}"))
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[test]
fn bounded_run_writes_csv_and_charts_whole() {
    if !can_count_software() {
        return;
    }
    let d = dir("csv");
    let (csv, svg, html) = (d.join("r.csv"), d.join("r.svg"), d.join("r.html"));
    let o = pcieperf(&[
        "pmu",
        "record",
        "-o",
        s(&csv),
        "-e",
        "software/cpu-clock/,software/task-clock/",
        "-I",
        "100",
        "--duration",
        "0.45",
        "--svg",
        s(&svg),
        "--html",
        s(&html),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    // Four full intervals and a partial one (a late wake-up on a loaded machine can merge the last two).
    let e = stderr(&o);
    assert!(
        e.contains("recorded 5 intervals (10 rows") || e.contains("recorded 4 intervals (8 rows"),
        "{e}"
    );
    let text = std::fs::read_to_string(&csv).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines[0],
        "time_s,unix_time,interval_s,pmu,event,root_port,metric,raw,scaled,running_pct,enabled_ns,running_ns,bytes,gbps"
    );
    assert_eq!(lines.len(), if e.contains("recorded 5") { 11 } else { 9 }, "{text}");
    let times: Vec<f64> = lines[1..]
        .iter()
        .map(|l| l.split(',').next().unwrap().parse().unwrap())
        .collect();
    assert!(times.windows(2).all(|w| w[0] <= w[1]), "{text}");
    assert!(
        (times[times.len() - 1] - 0.45).abs() < 0.05,
        "the last interval ends the run: {text}"
    );
    assert!(lines[1].contains(",software,cpu-clock,,,") && lines[2].contains(",software,task-clock,,,"));
    // Nothing but the three files: no temporary left behind.
    assert_eq!(std::fs::read_dir(&d).unwrap().count(), 3);

    let svg = std::fs::read_to_string(&svg).unwrap();
    assert!(svg.starts_with("<svg") || svg.starts_with("<?xml"), "{svg}");
    assert_eq!(svg.matches("class=\"series\"").count(), 2, "a rate series per event");
    assert!(svg.contains("data-name=\"software/cpu-clock/ count rate\""));
    assert!(svg.contains("Events per second") && svg.contains("Time since start (s)"));
    let html = std::fs::read_to_string(&html).unwrap();
    assert_eq!(html.matches("<section class=\"chart\"").count(), 2);
    assert!(html.contains("Rate: mean"), "notes give the mean rate");
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn json_lines_while_a_command_runs() {
    if !can_count_software() {
        return;
    }
    let d = dir("json");
    let out = d.join("r.jsonl");
    let o = pcieperf(&[
        "pmu",
        "record",
        "-o",
        s(&out),
        "--format",
        "json",
        "-e",
        "software/cpu-clock/",
        "-I",
        "50",
        "--",
        "sleep",
        "0.22",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let text = std::fs::read_to_string(&out).unwrap();
    let rows: Vec<serde_json::Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert!((4..=12).contains(&rows.len()), "{text}");
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64();
    for r in &rows {
        // Wall-clock end of the interval: counting started moments ago.
        let unix = r["unix_time"].as_f64().unwrap();
        let since_start = now - unix + r["time_s"].as_f64().unwrap();
        assert!((0.0..30.0).contains(&since_start), "{r}");
        for k in [
            "time_s",
            "interval_s",
            "pmu",
            "event",
            "root_port",
            "raw",
            "scaled",
            "running_pct",
            "enabled_ns",
        ] {
            assert!(r.get(k).is_some(), "{k} in {r}");
        }
        assert_eq!(r["event"], "cpu-clock");
    }
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn unbounded_run_is_flushed_per_interval_and_ends_on_ctrl_c() {
    if !can_count_software() {
        return;
    }
    let d = dir("live");
    let out = d.join("r.csv");
    let mut child = Command::new(env!("CARGO_BIN_EXE_pcieperf"))
        .args(["pmu", "record", "-o", s(&out), "-e", "software/cpu-clock/", "-I", "50"])
        .spawn()
        .unwrap();
    let start = Instant::now();
    // Rows appear while it runs.
    while std::fs::read_to_string(&out).map_or(0, |t| t.lines().count()) < 3 {
        assert!(start.elapsed() < Duration::from_secs(10), "no rows while running");
        std::thread::sleep(Duration::from_millis(20));
    }
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGINT) };
    assert_eq!(child.wait().unwrap().code(), Some(0));
    let text = std::fs::read_to_string(&out).unwrap();
    assert!(
        text.ends_with('\n') && text.lines().skip(1).all(|l| l.split(',').count() == 14),
        "{text}"
    );
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn bad_input_exits_2_and_writes_nothing() {
    let d = dir("bad");
    let out = d.join("r.csv");
    let o = s(&out);
    let cases: &[(&[&str], &str)] = &[
        (
            &["-o", "/no/such/dir/r.csv", "-e", "software/cpu-clock/"],
            "directory /no/such/dir does not exist",
        ),
        (&["-o", o, "-e", "software/cpu-clock/", "--format", "table"], "table"),
        (
            &["-o", o, "-e", "software/cpu-clock/", "--duration", "0"],
            "--duration 0",
        ),
        (&["-o", o, "-e", "software/cpu-clock/", "-I", "0"], "-I 0"),
        (&["-o", o, "-e", "nope/x/", "--duration", "1"], "unknown PMU \"nope\""),
        (
            &["-o", o, "-e", "software/cpu-clock/", "--svg", "/no/such/dir/r.svg"],
            "--svg /no/such/dir/r.svg",
        ),
        (&["-o", o, "--sysfs", "/no/such/root"], "--sysfs /no/such/root"),
    ];
    for (args, expected) in cases {
        let mut all = vec!["pmu", "record"];
        all.extend_from_slice(args);
        let e = refused(&all);
        assert!(e.contains(expected), "{args:?}: {e}");
        assert!(!out.exists(), "{args:?} left {}", out.display());
    }
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn default_events_are_the_payload_of_every_root_port() {
    if !can_count_software() {
        return;
    }
    let tree = software_backed_dwc("record-payload");
    let d = dir("payload");
    let (out, svg, html) = (d.join("r.jsonl"), d.join("r.svg"), d.join("r.html"));
    let o = pcieperf(&[
        "pmu",
        "record",
        "--sysfs",
        s(tree.path()),
        "-o",
        s(&out),
        "--format",
        "json",
        "-I",
        "100",
        "--duration",
        "0.35",
        "--svg",
        s(&svg),
        "--html",
        s(&html),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let text = std::fs::read_to_string(&out).unwrap();
    let rows: Vec<serde_json::Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert!(rows.len() >= 4, "{text}");
    let metrics: Vec<&str> = rows.iter().map(|r| r["metric"].as_str().unwrap()).collect();
    assert_eq!(&metrics[..2], ["rx_bytes", "tx_bytes"], "{text}");
    for r in &rows {
        assert_eq!(r["pmu"], "dwc_rootport_3018");
        assert_eq!(r["root_port"], "0000:30:03.0");
        // 1 byte per nanosecond counted: 8 Gb/s of "payload".
        let g = r["gbps"].as_f64().unwrap();
        assert!((4.0..12.0).contains(&g), "{r}");
        assert_eq!(r["bytes"].as_f64().unwrap(), r["scaled"].as_f64().unwrap());
    }
    let svg = std::fs::read_to_string(&svg).unwrap();
    assert!(svg.contains("data-name=\"0000:30:03.0 Rx\"") && svg.contains("data-name=\"0000:30:03.0 Tx\""));
    assert!(svg.contains("Payload (Gb/s)"));
    let html = std::fs::read_to_string(&html).unwrap();
    assert!(
        html.contains("model Rx 446.9 Gb/s") && html.contains("32.0 GT/s PCIe x16"),
        "{html}"
    );
    std::fs::remove_dir_all(&d).unwrap();
}
