//! `pcieperf pmu stat`: usage errors on fixture sysfs trees (exit 2, nothing on stdout), and
//! real counting of this host's software PMU (skipped where perf_event_open is not permitted).

use crate::common;
use common::{pcieperf, refused, stderr, stdout};

use pcie_pmu::fixture::{self, DwcVariant, Tree};
use std::process::Command;

fn host() -> Tree {
    let t = Tree::new("stat");
    fixture::common_pmus(&t);
    fixture::dwc_pmu(&t, "dwc_rootport_3018", 27, "0", DwcVariant::Upstream);
    t.root_port("0000:30:03.0", "0");
    t
}

#[test]
fn bad_input_exits_2_and_names_it() {
    let t = host();
    let root = t.path().to_str().unwrap();
    // (arguments after `pmu stat --sysfs ROOT`, what the message must contain)
    let cases: &[(&[&str], &[&str])] = &[
        (
            &["-e", "nope/x/", "--duration", "0.1"],
            &["unknown PMU \"nope\"", "dwc_rootport_3018"],
        ),
        (
            &["-e", "dwc_rootport_3018/no_such_event/", "--duration", "0.1"],
            &["no_such_event", "rx_pcie_tlp_data_payload"],
        ),
        (
            &[
                "-e",
                "software/cpu-clock/,dwc_rootport_3018/rx_memory_read/",
                "--duration",
                "0.1",
            ],
            &["missing lane=N"],
        ),
        (
            &["-e", "dwc_rootport_3018/rx_memory_read,lane=40/", "--duration", "0.1"],
            &["lane=40"],
        ),
        (&["-e", "msr/tsc/", "--duration", "0"], &["--duration 0"]),
        (&["-e", "msr/tsc/", "--duration", "-1"], &["--duration"]),
        (&["-e", "msr/tsc/", "-I", "0", "--duration", "1"], &["-I 0"]),
        (&["-e", "msr/tsc/,,software/cpu-clock/"], &["empty event"]),
        // --duration and a command exclude each other; -e is required.
        (&["-e", "msr/tsc/", "--duration", "1", "--", "true"], &[]),
        (&["--duration", "1"], &[]),
    ];
    for (args, expected) in cases {
        let mut all = vec!["pmu", "stat", "--sysfs", root];
        all.extend_from_slice(args);
        let e = refused(&all);
        assert!(expected.iter().all(|x| e.contains(x)), "{args:?}: {e}");
    }
    let e = refused(&[
        "pmu",
        "stat",
        "--sysfs",
        "/no/such/root",
        "-e",
        "msr/tsc/",
        "--duration",
        "1",
    ]);
    assert!(e.contains("--sysfs /no/such/root"), "{e}");
}

/// Real counting; `None` (with a message) where perf_event_open is refused here.
fn real(args: &[&str]) -> Option<String> {
    let o = pcieperf(args);
    if o.status.code() == Some(2) && stderr(&o).contains("not permitted") {
        eprintln!("skipped: {}", stderr(&o));
        return None;
    }
    if !std::path::Path::new("/sys/bus/event_source/devices/software").exists() {
        eprintln!("skipped: no software PMU");
        return None;
    }
    assert_eq!(o.status.code(), Some(0), "{args:?}: {}", stderr(&o));
    Some(stdout(&o))
}

#[test]
fn counts_software_cpu_clock_for_a_duration() {
    let Some(out) = real(&[
        "pmu",
        "stat",
        "-e",
        "software/cpu-clock/,software/task-clock/",
        "--duration",
        "0.2",
        "--format",
        "json",
    ]) else {
        return;
    };
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let rows = v.as_array().unwrap();
    assert_eq!(rows.len(), 2);
    assert_eq!(rows[0]["pmu"], "software");
    assert_eq!(rows[0]["event"], "cpu-clock");
    assert_eq!(rows[1]["event"], "task-clock");
    for r in rows {
        assert_eq!(r["running_pct"], 100.0, "{r}");
        let raw = r["raw"].as_u64().unwrap();
        // About 0.2 s of CPU-clock nanoseconds.
        assert!((100_000_000..400_000_000).contains(&raw), "{r}");
        assert!(r["bytes"].is_null() && r["gbps"].is_null(), "{r}");
    }
}

#[test]
fn interval_rows_and_a_command() {
    let Some(out) = real(&[
        "pmu",
        "stat",
        "-e",
        "software/cpu-clock/",
        "-I",
        "50",
        "--format",
        "csv",
        "--",
        "sleep",
        "0.22",
    ]) else {
        return;
    };
    let lines: Vec<&str> = out.lines().collect();
    assert!(lines[0].starts_with("time_s,unix_time,interval_s,pmu,event,"), "{out}");
    // About 4 full intervals and a partial one, each a row (more on a loaded machine).
    assert!((4..=12).contains(&(lines.len() - 1)), "{out}");
    let times: Vec<f64> = lines[1..]
        .iter()
        .map(|l| l.split(',').next().unwrap().parse().unwrap())
        .collect();
    assert!(times.windows(2).all(|w| w[0] < w[1]), "{out}");
    assert!(lines[1].contains(",software,cpu-clock,"), "{out}");
}

/// As an unprivileged user (dropped with setpriv when the tests run as root) with
/// `perf_event_paranoid >= 1`, opening a CPU-bound event is refused: exit 2 with an explanation.
#[test]
fn not_permitted_explains_paranoid_and_cap_perfmon() {
    let paranoid: Option<i32> = std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid")
        .ok()
        .and_then(|s| s.trim().parse().ok());
    let root = std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .any(|l| l.starts_with("Uid:") && l.split_whitespace().nth(1) == Some("0"));
    let have_setpriv = Command::new("setpriv").arg("--version").output().is_ok();
    if paranoid.is_none_or(|p| p < 1) || !std::path::Path::new("/sys/bus/event_source/devices/software").exists() {
        eprintln!("skipped: perf_event_paranoid is {paranoid:?}, so an unprivileged user may count");
        return;
    }
    let bin = env!("CARGO_BIN_EXE_pcieperf");
    let args = ["pmu", "stat", "-e", "software/cpu-clock/", "--duration", "0.05"];
    let o = if root {
        if !have_setpriv {
            eprintln!("skipped: running as root without setpriv to drop privileges");
            return;
        }
        Command::new("setpriv")
            .args([
                "--reuid=65534",
                "--regid=65534",
                "--clear-groups",
                "--inh-caps=-all",
                bin,
            ])
            .args(args)
            .output()
            .unwrap()
    } else {
        Command::new(bin).args(args).output().unwrap()
    };
    if o.status.code() == Some(0) {
        eprintln!("skipped: this user may count system-wide (CAP_PERFMON?)");
        return;
    }
    let e = stderr(&o);
    if e.starts_with("setpriv:") {
        eprintln!("skipped: setpriv could not run the binary: {e}");
        return;
    }
    assert_eq!(o.status.code(), Some(2), "{e}");
    assert!(o.stdout.is_empty());
    assert!(
        e.contains("not permitted to open software/cpu-clock/ on PMU software"),
        "{e}"
    );
    assert!(
        e.contains(&format!("perf_event_paranoid is {}", paranoid.unwrap())),
        "{e}"
    );
    assert!(e.contains("CAP_PERFMON"), "{e}");
}

/// HiSilicon's flux/time pairs count as one perf event group: on a fixture HiSilicon PMU that
/// is the software PMU in disguise (every event cpu-clock), the pair opens as a group and the
/// lone latency event does not; the kernel accepts the group, so the pair really counts.
/// A tree with the common PMUs and `hisi_pcie0_core0` whose `events` all count cpu-clock.
fn hisi_tree(name: &str, events: &[&str]) -> Tree {
    let t = Tree::new(name);
    fixture::common_pmus(&t);
    fixture::hisi_pmu(&t, "hisi_pcie0_core0", 1, "0x0", None);
    for e in events {
        t.attr(
            &format!("sys/bus/event_source/devices/hisi_pcie0_core0/events/{e}"),
            "config=0x0",
        );
    }
    t
}

/// `pmu stat --sysfs ROOT -e SPEC --duration 0.1 --format json` rows; `None` where counting is
/// refused here.
fn json_rows(root: &str, spec: &str) -> Option<(String, Vec<serde_json::Value>)> {
    let out = real(&[
        "pmu",
        "stat",
        "--sysfs",
        root,
        "-e",
        spec,
        "--duration",
        "0.1",
        "--format",
        "json",
    ])?;
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let rows = v.as_array().unwrap().clone();
    Some((out, rows))
}

#[test]
fn flux_and_time_open_as_one_group() {
    let t = hisi_tree("stat-hisi-group", &["rx_mwr_flux", "rx_mwr_time", "rx_mwr_latency"]);
    let root = t.path().to_str().unwrap();
    let pmu = "hisi_pcie0_core0";
    let spec =
        format!("{pmu}/rx_mwr_flux,port=0xffff/,{pmu}/rx_mwr_latency,port=0xffff/,{pmu}/rx_mwr_time,port=0xffff/");
    let Some((out, rows)) = json_rows(root, &spec) else {
        return;
    };
    let group = |event: &str| {
        rows.iter()
            .find(|r| r["event"].as_str().unwrap().starts_with(event))
            .unwrap()["group"]
            .clone()
    };
    let pair = "rx_mwr_bw: rx_mwr_flux, rx_mwr_time";
    assert_eq!(group("rx_mwr_flux"), pair, "{out}");
    assert_eq!(group("rx_mwr_time"), pair, "{out}");
    assert!(group("rx_mwr_latency").is_null(), "{out}");
    assert!(
        rows.iter()
            .all(|r| r["raw"].as_u64().unwrap() > 0 && r["running_pct"] == 100.0),
        "{out}"
    );
    let table = real(&["pmu", "stat", "--sysfs", root, "-e", &spec, "--duration", "0.05"]).unwrap();
    assert!(
        table.contains(&format!("{pair}: counted as one perf event group\n")),
        "{table}"
    );
}

/// `-e '{a,b}'` groups as perf does: the events open as one perf event group even with
/// different filter terms, and a group whose events are on different PMUs is refused.
#[test]
fn braces_make_a_user_group() {
    let t = hisi_tree("stat-user-group", &["rx_mwr_flux", "rx_mwr_latency"]);
    let root = t.path().to_str().unwrap();
    let pmu = "hisi_pcie0_core0";
    let mixed = format!("{{{pmu}/rx_mwr_flux,port=0x1/,software/cpu-clock/}}");
    let e = refused(&["pmu", "stat", "--sysfs", root, "-e", &mixed, "--duration", "0.05"]);
    assert!(
        e.contains("the events of a group must be on the same PMUs: software/cpu-clock/ is on software"),
        "{e}"
    );
    let spec =
        format!("{pmu}/rx_mwr_flux,port=0xffff/,{{{pmu}/rx_mwr_latency,port=0xffff/,{pmu}/rx_mwr_flux,port=0x1/}}");
    let Some((out, rows)) = json_rows(root, &spec) else {
        return;
    };
    let groups: Vec<&serde_json::Value> = rows.iter().map(|r| &r["group"]).collect();
    assert!(groups[0].is_null(), "{out}");
    assert_eq!(groups[1], "{1}: rx_mwr_latency, rx_mwr_flux", "{out}");
    assert_eq!(groups[2], groups[1], "{out}");
    assert!(
        rows.iter()
            .all(|r| r["raw"].as_u64().unwrap() > 0 && r["running_pct"] == 100.0),
        "the group's members count: {out}"
    );
}
