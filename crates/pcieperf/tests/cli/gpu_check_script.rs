//! The GPU acceptance script (`scripts/gpu-check.sh`) has one run on a lent GPU machine: its
//! selftest checks the script's control flow and its targets here first, on the debug binary,
//! with the stand-in CUDA driver and NVML. Long (minutes: three suites on the stand-in), so it
//! runs in CI's `--ignored` pass.

use std::process::Command;

#[test]
#[ignore = "minutes: the whole gpu-check.sh four times (CI's --ignored pass runs it)"]
fn the_gpu_check_script_passes_its_selftest() {
    let repo = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("the repository root");
    let o = Command::new("bash")
        .arg(repo.join("scripts/gpu-check-selftest.sh"))
        .env("PCIEPERF", env!("CARGO_BIN_EXE_pcieperf"))
        // A debug build runs the suites on the stand-in about 1.5 times as long as a release one.
        .env("GPU_CHECK_TIME_SCALE", "3")
        .current_dir(&repo)
        .output()
        .expect("bash runs");
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{out}\n{}", String::from_utf8_lossy(&o.stderr));
    for case in ["ok 1:", "ok 3:", "ok 4:"] {
        assert!(out.lines().any(|l| l.starts_with(case)), "{case} missing:\n{out}");
    }
}
