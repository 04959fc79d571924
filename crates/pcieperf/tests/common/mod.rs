//! Running the `pcieperf` binary from the CLI tests.
#![allow(dead_code)] // each test file uses its own subset

use std::process::{Command, Output};

pub fn pcieperf(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_pcieperf"))
        .args(args)
        .output()
        .expect("runs")
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8(o.stdout.clone()).unwrap()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8(o.stderr.clone()).unwrap()
}

/// Runs, expects success, returns stdout.
pub fn ok(args: &[&str]) -> String {
    let o = pcieperf(args);
    assert_eq!(o.status.code(), Some(0), "{args:?}: {}", stderr(&o));
    stdout(&o)
}

/// Runs, expects exit 2 with nothing on stdout, returns stderr.
pub fn refused(args: &[&str]) -> String {
    let o = pcieperf(args);
    assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
    assert!(o.stdout.is_empty(), "{args:?} printed {}", stdout(&o));
    stderr(&o)
}

/// True where this host lets us count its software PMU; otherwise says why (the test skips).
pub fn can_count_software() -> bool {
    let o = pcieperf(&["pmu", "stat", "-e", "software/cpu-clock/", "--duration", "0.01"]);
    if o.status.code() != Some(0) {
        eprintln!("skipped: {}", stderr(&o));
        return false;
    }
    true
}
