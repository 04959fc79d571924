//! `pcieperf bench run --backend exec:...` with the reference device program: a whole suite end
//! to end, the host cache steps through the shared buffer, and every way a program can fail —
//! each error names the test, the exit code tells usage from runtime, finished results stay.

use crate::common;
use common::{pcieperf, refused, stderr};

use pcie_bench::{ResultData, RunData};
use std::path::Path;
use std::process::Output;

const REFDEV: &str = env!("CARGO_BIN_EXE_pcieperf-refdev");

fn scratch(name: &str) -> common::Scratch {
    common::fresh_path(&format!("exec-{name}"))
}

/// `bench run` on the reference device with `switches`, the given options and `--out DIR`.
fn run_refdev(switches: &str, out: &Path, more: &[&str]) -> Output {
    let backend = format!("exec:{REFDEV} {switches}");
    let mut args = vec!["bench", "run", "--backend", &backend, "--out", out.to_str().unwrap()];
    args.extend_from_slice(more);
    pcieperf(&args)
}

/// Runs the reference device like `run_refdev` into a fresh scratch directory `name`, expects
/// success, and returns the directory and stderr.
fn succeeded(switches: &str, name: &str, more: &[&str]) -> (common::Scratch, String) {
    let out = scratch(name);
    let o = run_refdev(switches, &out, more);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(0), "{switches} {more:?}: {err}");
    (out, err)
}

fn run_json(out: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(out.join("run.json")).unwrap()).unwrap()
}

/// Rows of a latency base as the shared reader loads them.
fn latency_rows(out: &Path, base: &str) -> usize {
    match RunData::load(out).expect("run directory loads").get(base) {
        Some(ResultData::Latency(rows)) => rows.len(),
        other => panic!("{base}: {other:?}"),
    }
}

#[test]
fn quick_suite_end_to_end_on_the_reference_device() {
    let (out, _) = succeeded("", "quick", &["--suite", "quick", "--samples", "500"]);
    let run = RunData::load(&out).expect("our run directory loads through the shared reader");
    let info = run.info.as_ref().expect("run.json");
    assert_eq!(info.backend.description["device"]["emulated"], true);
    assert!(info.backend.description["device"]["description"]
        .as_str()
        .unwrap()
        .starts_with("EMULATED"));
    assert_eq!(info.backend.max_transfer, 4096);
    assert!(info.end_time.is_some());
    let sim = RunData::load(&{
        let dir = scratch("quick-sim");
        let o = pcieperf(&["bench", "run", "--samples", "500", "--out", dir.to_str().unwrap()]);
        assert!(o.status.success());
        dir
    })
    .unwrap();
    for base in [
        "bw_dma_sz_sweep",
        "lat_dma_sizes",
        "lat_dma_sweep_rd_rnd_64",
        "lat_dma_off_rd",
        "lat_dma_details",
    ] {
        let (ours, theirs) = (run.get(base).unwrap(), sim.get(base).unwrap());
        match (ours, theirs) {
            (ResultData::Latency(a), ResultData::Latency(b)) => {
                assert_eq!(
                    a.iter().map(|r| r.key).collect::<Vec<_>>(),
                    b.iter().map(|r| r.key).collect::<Vec<_>>()
                );
                assert!(
                    a.iter()
                        .all(|r| r.samples == 500 && r.min_ns > 0.0 && r.min_ns <= r.med_ns),
                    "{base}"
                );
            }
            (ResultData::Bandwidth(a), ResultData::Bandwidth(b)) => {
                assert_eq!(a.len(), b.len(), "{base}");
                assert!(
                    a.iter().all(|r| r.bw_gbps > 0.0
                        && r.bytes
                            == 500 * r.key.size as u64
                                / if r.key.test == pcie_bench::TestKind::BwRdWr {
                                    2
                                } else {
                                    1
                                }),
                    "{base}"
                );
            }
            _ => panic!("{base}: result kinds differ"),
        }
    }
    assert!(out.join("lat_dma_details_cdf.csv").exists());
    std::fs::remove_dir_all(&out).unwrap();
}

#[test]
fn host_cache_steps_reach_the_device_through_the_shared_buffer() {
    // With --host-cache the reference device refuses any hwarm test whose window pcieperf did
    // not warm in the buffer they share.
    let (out, _) = succeeded(
        "--host-cache",
        "hostcache",
        &["--only", "lat_dma_sizes", "--samples", "200"],
    );
    assert_eq!(latency_rows(&out, "lat_dma_sizes"), 14);
    let info = run_json(&out);
    assert_eq!(info["backend"]["description"]["host_cache_steps"], true);
    std::fs::remove_dir_all(&out).unwrap();
}

/// Runs `lat_dma_sizes` (LAT_RD over sizes 8, 64, 128, ... first) with a failure switch and
/// returns stderr after checking the exit code and that `kept` tests' rows survived.
fn failing(switches: &str, name: &str, kept: usize, more: &[&str]) -> String {
    let out = scratch(name);
    let mut args = vec!["--only", "lat_dma_sizes", "--samples", "300"];
    args.extend_from_slice(more);
    let o = run_refdev(switches, &out, &args);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(o.stdout.is_empty());
    assert!(
        err.contains(&format!(
            "the {kept} tests that finished before it are in {}",
            out.display()
        )),
        "{err}"
    );
    if kept > 0 {
        assert_eq!(latency_rows(&out, "lat_dma_sizes"), kept);
    } else {
        assert!(!out.join("lat_dma_sizes.csv").exists());
    }
    assert!(out.join("run.json").exists());
    std::fs::remove_dir_all(&out).unwrap();
    err
}

#[test]
fn a_crashing_program_is_reported_with_its_signal_and_the_test() {
    let err = failing("--crash-after 2", "crash", 2, &[]);
    assert!(
        err.contains(&format!("error: lat_dma_sizes: LAT_RD size 128 window 8192 host offset 0 device offset 0 seq hwarm: {REFDEV}: the program closed its output and was killed by signal 6 (SIGABRT)")),
        "{err}"
    );
    assert!(
        err.contains("its last stderr lines: pcieperf-refdev: crashing on purpose"),
        "{err}"
    );
    // The program's stderr is also passed on as it comes, each line naming the program.
    assert!(
        err.lines()
            .any(|l| l == "[pcieperf-refdev] pcieperf-refdev: crashing on purpose (--crash-after 2)"),
        "{err}"
    );
}

#[test]
fn a_hanging_program_is_killed_after_the_timeout() {
    let err = failing("--hang-after 1", "hang", 1, &["--timeout", "0.5"]);
    assert!(
        err.contains(&format!("LAT_RD size 64 window 8192 host offset 0 device offset 0 seq hwarm: {REFDEV}: no reply within 0.5 s; the program was killed")),
        "{err}"
    );
}

#[test]
fn a_malformed_line_is_quoted_with_the_test() {
    let err = failing("--malformed-after 3", "malformed", 3, &[]);
    assert!(
        err.contains(&format!(r#"LAT_RD size 256 window 8192 host offset 0 device offset 0 seq hwarm: {REFDEV}: malformed reply (expected value at line 1 column 1): "DMA engine 0: {{\"latency\": [1, 2,""#)),
        "{err}"
    );
    let first = failing("--malformed-after 0", "malformed-first", 0, &[]);
    assert!(first.contains("LAT_RD size 8 window 8192"), "{first}");
}

#[test]
fn an_error_reply_stops_the_run_with_the_program_s_message() {
    let err = failing("--fail-after 1", "fail", 1, &[]);
    assert!(
        err.contains(&format!("LAT_RD size 64 window 8192 host offset 0 device offset 0 seq hwarm: {REFDEV}: the program reported: DMA engine timed out on purpose (--fail-after 1)")),
        "{err}"
    );
}

#[test]
fn start_failures_are_usage_errors_and_write_nothing() {
    let out = scratch("start");
    let o = run_refdev("--protocol 2", &out, &[]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("handshake: the program speaks protocol version 2; pcieperf speaks version 1"),
        "{}",
        stderr(&o)
    );
    assert!(!out.exists(), "nothing written for a program that cannot be used");
    let cases: [(&[&str], &str); 8] = [
        (
            &["--backend", "exec:"],
            "--backend exec:: no program given (exec:PROGRAM [ARGS])",
        ),
        (
            &["--backend", "exec:/nonexistent/devprog --x"],
            "cannot start /nonexistent/devprog: No such file or directory",
        ),
        (&["--backend", "exec:refdev 'x"], "unbalanced single quote"),
        (
            &["--backend", "simulator"],
            "must be sim, sim:HOST, sim:HOST,DEVICE or exec:PROGRAM [ARGS]",
        ),
        (&["--timeout", "5"], "--device and --timeout: only for exec: backends"),
        (
            &["--backend", "exec:true", "--handshake-timeout", "0"],
            "--handshake-timeout 0.0: must be a number of seconds above 0 and at most 604800 (a week)",
        ),
        (
            &["--backend", "exec:true", "--timeout", "nan"],
            "--timeout NaN: must be a number of seconds above 0 and at most 604800",
        ),
        (
            &["--backend", "exec:true", "--timeout", "1e9"],
            "--timeout 1000000000.0: must be",
        ),
    ];
    for (args, want) in cases {
        let mut all = vec!["bench", "run", "--out", out.to_str().unwrap()];
        all.extend_from_slice(args);
        let err = refused(&all);
        assert!(err.contains(want), "{args:?}: {err}");
        assert!(!out.exists());
    }
}

#[test]
fn device_option_is_checked_before_the_program_starts() {
    let out = scratch("device");
    let backend = format!("exec:{REFDEV}");
    let base = [
        "bench",
        "run",
        "--backend",
        backend.as_str(),
        "--out",
        out.to_str().unwrap(),
        "--device",
    ];
    let err = refused(&[&base[..], &["eth0"]].concat());
    assert!(
        err.contains("--device eth0: must be a PCI address like 0000:03:00.0"),
        "{err}"
    );
    let err = refused(&[&base[..], &["ff:1f.7"]].concat());
    assert!(
        err.contains("--device ff:1f.7: no PCI device 0000:ff:1f.7 in /sys/bus/pci/devices"),
        "{err}"
    );
}

#[test]
fn a_missing_numa_node_degrades_to_a_warning() {
    if Path::new("/sys/devices/system/node/node1").exists() {
        eprintln!("skipped: this machine has a NUMA node 1, the test needs a machine without one");
        return;
    }
    let args = ["--test", "LAT_RD", "--samples", "100", "--numa", "dev=0,mem=1,cpu=1"];
    let (out, err) = succeeded("--host-cache", "numa", &args);
    assert_eq!(
        err.matches("warning: NUMA: NUMA node 1 does not exist (the machine has")
            .count(),
        2,
        "one warning for the buffer, one for the cache steps' CPUs: {err}"
    );
    assert!(
        err.contains("the DMA buffer is not bound to a node") && err.contains("the host cache steps run on any CPU"),
        "{err}"
    );
    let info = run_json(&out);
    assert_eq!(
        info["backend"]["description"]["buffer"]["numa_node"],
        serde_json::Value::Null
    );
    assert!(!info["host"]["numa_nodes"].as_array().unwrap().is_empty());
    std::fs::remove_dir_all(&out).unwrap();
}

#[test]
fn the_device_under_test_is_described_from_sysfs() {
    let present = "0000:00:00.0";
    if !Path::new("/sys/bus/pci/devices").join(present).exists() {
        eprintln!("skipped: this machine has no PCI device {present} to describe");
        return;
    }
    let (out, _) = succeeded(
        "",
        "sysfs-device",
        &["--test", "BW_RD", "--samples", "100", "--device", "00:00.0"],
    );
    let info = run_json(&out);
    assert_eq!(info["host"]["device"]["bdf"], present);
    std::fs::remove_dir_all(&out).unwrap();
    // An address the program reports but the host does not have: a warning, not a failure.
    let (out, err) = succeeded(
        "--bdf 0000:ee:1f.7",
        "sysfs-device",
        &["--test", "BW_RD", "--samples", "100"],
    );
    assert!(
        err.contains("warning: the device program reports device 0000:ee:1f.7: no PCI device 0000:ee:1f.7 in /sys/bus/pci/devices; run.json has no link state"),
        "{err}"
    );
    std::fs::remove_dir_all(&out).unwrap();
}

#[test]
fn parallel_programs_give_the_same_tests() {
    let args = [
        "--only",
        "lat_dma_sizes,bw_dma_sz_sweep",
        "--samples",
        "300",
        "--threads",
        "2",
    ];
    let (out, _) = succeeded("", "parallel", &args);
    assert_eq!(latency_rows(&out, "lat_dma_sizes"), 14);
    let info = run_json(&out);
    assert_eq!(info["backend"]["description"]["children"], 2);
    std::fs::remove_dir_all(&out).unwrap();
}

#[test]
fn the_python_example_speaks_the_same_protocol() {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/exec/refdev.py");
    if std::process::Command::new("python3").arg("--version").output().is_err() {
        eprintln!("skipped: python3 is not installed; examples/exec/refdev.py is not tested");
        return;
    }
    let out = scratch("python");
    let backend = format!("exec:python3 {script}");
    let o = pcieperf(&[
        "bench",
        "run",
        "--backend",
        &backend,
        "--only",
        "lat_dma_sizes,bw_dma_sz_sweep",
        "--samples",
        "200",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let run = RunData::load(&out).unwrap();
    assert_eq!(latency_rows(&out, "lat_dma_sizes"), 14);
    match run.get("bw_dma_sz_sweep") {
        Some(ResultData::Bandwidth(rows)) => assert!(rows.len() == 36 && rows.iter().all(|r| r.bw_gbps > 0.0)),
        other => panic!("{other:?}"),
    }
    let device = &run.info.as_ref().unwrap().backend.description["device"];
    assert!(device.to_string().contains("EMULATED"), "{device}");
    std::fs::remove_dir_all(&out).unwrap();
}

#[test]
fn an_emulated_device_takes_iommu_and_numa_as_given() {
    // The reference device says it is emulated: no real DMA, so the options stand, as for the
    // simulator, whatever this host's IOMMU (none here) and NUMA nodes.
    let (out, err) = succeeded(
        "",
        "emulated-iommu",
        &["--test", "LAT_RD", "--samples", "100", "--iommu", "4k"],
    );
    let run = run_json(&out);
    assert_eq!(run["iommu"], "Pages4K", "{err}");
    let _ = std::fs::remove_dir_all(&out);
}
