//! `pmu validate --source perf` with Debian's real fio, against the fixture DWC PMU that is the
//! software PMU in disguise (so its PMU column means nothing here): fio's side of the report is
//! fio's own figures, and fio's failures reach the user with exit 1. Without fio the tests skip,
//! except under CI (`CI` set), where `.ci/run` installs it.

use crate::common;
use common::{can_count_software, software_backed_dwc, stderr, stdout};

use serde_json::Value;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// True where fio runs; otherwise says why the test skips, or fails under CI.
fn have_fio() -> bool {
    if Command::new("fio").arg("--version").output().is_ok() {
        return true;
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "fio is not installed; CI must run it (.ci/run installs it)"
    );
    eprintln!("skipped: fio is not installed (apt install fio)");
    false
}

/// A fresh directory where fio's O_DIRECT opens work: under the target directory, which is on
/// disk where /tmp may be tmpfs (older kernels refuse O_DIRECT there with EINVAL). `None`,
/// saying so, where even that refuses.
fn direct_io_dir(name: &str) -> Option<PathBuf> {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("fio-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    let probe = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .custom_flags(libc::O_DIRECT)
        .open(d.join("probe"));
    if let Err(e) = probe {
        eprintln!("skipped: {} does not take O_DIRECT ({e})", d.display());
        let _ = std::fs::remove_dir_all(&d);
        return None;
    }
    Some(d)
}

fn validate(root: &Path, extra: &[&str], path: Option<&str>) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_pcieperf"));
    c.args(["pmu", "validate", "--source", "perf", "--sysfs"])
        .arg(root)
        .args(["--port", "30:03.0"])
        .args(extra);
    if let Some(p) = path {
        c.env("PATH", p);
    }
    c.output().expect("runs")
}

fn num(r: &Value, k: &str) -> f64 {
    r[k].as_f64().unwrap_or_else(|| panic!("{k} in {r}"))
}

/// The row of `event` in validate's JSON.
fn row<'a>(rows: &'a Value, event: &str) -> &'a Value {
    rows.as_array()
        .unwrap()
        .iter()
        .find(|r| r["event"] == event)
        .unwrap_or_else(|| panic!("no {event} row in {rows}"))
}

#[test]
fn fio_side_is_what_fio_reported() {
    if !have_fio() || !can_count_software() {
        return;
    }
    let Some(dir) = direct_io_dir("figures") else { return };
    let tree = software_backed_dwc("validate-fio");
    for (rw, event, other) in [("write", "tx", "rx"), ("read", "rx", "tx")] {
        // A colon, as in /dev/disk/by-path names: fio would split the name there unescaped.
        let file = dir.join(format!("{rw}:1M.dat"));
        let args = [
            "--filename",
            file.to_str().unwrap(),
            "--rw",
            rw,
            "--size",
            "64M",
            "--numjobs",
            "2",
            "--bs",
            "1M",
            "--iodepth",
            "4",
            "--format",
            "json",
        ];
        let o = validate(tree.path(), &args, None);
        assert_eq!(o.status.code(), Some(0), "{rw}: {}", stderr(&o));
        assert_eq!(std::fs::metadata(&file).unwrap().len(), 64 << 20, "{}", file.display());
        let rows: Value = serde_json::from_str(&stdout(&o)).unwrap();
        let r = row(&rows, event);
        // --size is per job: two jobs move 128 MiB.
        assert_eq!(r["workload_bytes"], 134217728, "{rw}: {r}");
        let runtime = num(r, "runtime_s");
        // fio reports whole milliseconds.
        assert!(
            runtime > 0.0 && (runtime * 1000.0 - (runtime * 1000.0).round()).abs() < 1e-6,
            "{r}"
        );
        let expected = 134217728.0 / 1048576.0 / runtime;
        assert!(
            (num(r, "workload_mib_s") - expected).abs() < 1e-9 * expected,
            "{rw}: {r}"
        );
        assert!(num(r, "clat_avg_ms") > 0.0 && num(r, "clat_stdev_ms") >= 0.0, "{r}");
        let idle = row(&rows, other);
        assert_eq!(
            (
                num(idle, "workload_bytes"),
                num(idle, "runtime_s"),
                num(idle, "workload_mib_s")
            ),
            (0.0, 0.0, 0.0),
            "{rw}: {idle}"
        );
        assert!(idle["error_pct"].is_null(), "{idle}");
        eprintln!(
            "{rw}: {} MiB/s over {runtime} s, clat {} ± {} ms",
            num(r, "workload_mib_s"),
            num(r, "clat_avg_ms"),
            num(r, "clat_stdev_ms")
        );
    }
    // --runtime runs time-based: the whole second, re-reading the 64 MiB file as needed.
    let file = dir.join("read:1M.dat");
    let o = validate(
        tree.path(),
        &[
            "--filename",
            file.to_str().unwrap(),
            "--runtime",
            "1s",
            "--numjobs",
            "1",
            "--events",
            "rx",
        ],
        None,
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let table = stdout(&o);
    let header = table.lines().next().unwrap();
    for col in [
        "Workload MB",
        "PMU MB",
        "Error %",
        "Counted %",
        "fio MiB/s",
        "Runtime s",
        "clat avg ms",
        "clat stdev ms",
    ] {
        assert!(header.contains(col), "{col}: {table}");
    }
    let runtime: f64 = table
        .lines()
        .nth(1)
        .unwrap()
        .split_whitespace()
        .nth(7)
        .unwrap()
        .parse()
        .unwrap();
    assert!((1.0..1.5).contains(&runtime), "{table}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn without_fio_on_path_exit_1_naming_fio() {
    let tree = software_backed_dwc("validate-nofio");
    let o = validate(
        tree.path(),
        &["--filename", "/dev/null", "--size", "1M"],
        Some("/nonexistent"),
    );
    let e = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{e}");
    assert!(o.stdout.is_empty(), "{}", stdout(&o));
    assert!(e.contains("cannot run fio") && e.contains("install fio"), "{e}");
}

#[test]
fn fio_failures_exit_1_with_fios_own_message() {
    if !have_fio() || !can_count_software() {
        return;
    }
    let Some(dir) = direct_io_dir("failures") else { return };
    let tree = software_backed_dwc("validate-fio-fails");
    // fio creates missing directories itself; one below a plain file it cannot create.
    std::fs::write(dir.join("plain"), "").unwrap();
    let under_file = dir.join("plain/sub/f");
    // With a runtime and no size, a file that does not exist has no size to lay out.
    let missing = dir.join("missing.dat");
    for (file, extra, fio_says) in [
        (&under_file, "--size", "failed to create dir"),
        (&missing, "--runtime", "you need to specify size="),
    ] {
        let value = if extra == "--size" { "1M" } else { "1s" };
        let o = validate(tree.path(), &["--filename", file.to_str().unwrap(), extra, value], None);
        let e = stderr(&o);
        assert_eq!(o.status.code(), Some(1), "{e}");
        assert!(o.stdout.is_empty(), "{}", stdout(&o));
        assert!(e.contains(fio_says) && e.contains("fio failed (exit status:"), "{e}");
    }
    assert!(!missing.exists());
    std::fs::remove_dir_all(&dir).unwrap();
}
