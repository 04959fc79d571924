//! `--backend cuda` against a stand-in for the NVIDIA driver (`fake_driver/libcuda.rs`, built
//! here with rustc and found through LD_LIBRARY_PATH): the backend's whole host side runs as it
//! will on a GPU machine (opening, the timer probe, the dry calibration, the gate, streams and
//! events, the link readings, every test kind of both engines, run.json, `bench report`),
//! against a driver that refuses what a GPU would fault on. Its GPU is a model with round
//! figures, so each figure the host reports is checked against what it must be.

use crate::common;
use common::*;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;

/// The fake GPU's model: the constants of fake_driver/libcuda.rs.
const LOOP_NS: f64 = 120.0;
const LAT_NS: f64 = 800.0;
const WRRD_NS: f64 = 1000.0;
const LAT_GBPS: f64 = 100.0;
const SM_READ_GBPS: f64 = 400.0;
const SM_WRITE_GBPS: f64 = 420.0;
const CE_SETUP_NS: f64 = 1000.0;
const CE_GBPS: f64 = 430.0;
const SM_MHZ: f64 = 1980.0;

/// The directory holding the fake `libcuda.so.1`, also as `libnvidia-ml.so.1` (built once per
/// test run).
pub(crate) fn driver_dir() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = crate::common::build_stand_in("libcuda.rs", "fake-cuda", "libcuda.so.1");
        for name in ["libcuda.so", "libnvidia-ml.so.1"] {
            let _ = std::fs::remove_file(dir.join(name));
            std::os::unix::fs::symlink("libcuda.so.1", dir.join(name)).unwrap();
        }
        dir
    })
}

/// pcieperf with the fake driver and `env` (`FAKE_CUDA_DEVICES`, `FAKE_CUDA_FAIL`).
fn with_fake(env: &[(&str, &str)], args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_pcieperf"))
        .args(args)
        .env("LD_LIBRARY_PATH", driver_dir())
        .envs(env.iter().copied())
        .output()
        .expect("runs")
}

/// One test's JSON result on the fake GPU.
fn one(args: &[&str]) -> Value {
    let mut all = vec!["bench", "run", "--backend", "cuda", "--format", "json"];
    all.extend(args);
    let o = with_fake(&[], &all);
    assert_eq!(o.status.code(), Some(0), "{all:?}: {}", stderr(&o));
    serde_json::from_str(&stdout(&o)).unwrap()
}

/// A `bench run --backend cuda ARGS --out DIR` on the fake GPU, DIR a fresh directory removed
/// when the run is dropped: what it printed, and the run.json it wrote.
struct CudaRun {
    out: common::Scratch,
    code: Option<i32>,
    stdout: String,
    stderr: String,
    run: Option<Value>,
}

/// Run `bench run --backend cuda` with `args` and `env` into a fresh directory.
fn cuda_run(env: &[(&str, &str)], args: &[&str]) -> CudaRun {
    static RUNS: AtomicUsize = AtomicUsize::new(0);
    let out = fresh_path(&format!("fake-cuda-run-{}", RUNS.fetch_add(1, Ordering::Relaxed)));
    let dir = out.to_str().unwrap();
    let all = [&["bench", "run", "--backend", "cuda"][..], args, &["--out", dir]].concat();
    let o = with_fake(env, &all);
    let run = std::fs::read_to_string(out.join("run.json"))
        .ok()
        .map(|t| serde_json::from_str(&t).unwrap());
    CudaRun {
        code: o.status.code(),
        stdout: stdout(&o),
        stderr: stderr(&o),
        run,
        out,
    }
}

impl CudaRun {
    /// run.json of a run that must have succeeded.
    fn succeeded(&self) -> &Value {
        assert_eq!(self.code, Some(0), "{}", self.stderr);
        self.run.as_ref().expect("run.json")
    }
}

impl Drop for CudaRun {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.out);
    }
}

/// `bench run --backend cuda --test LAT_RD --samples 100` with `more` options and `env`: the
/// exit code, stderr, and run.json where it ran.
fn lat_rd_run(env: &[(&str, &str)], more: &[&str]) -> (Option<i32>, String, Option<Value>) {
    let r = cuda_run(env, &[&["--test", "LAT_RD", "--samples", "100"][..], more].concat());
    (r.code, r.stderr.clone(), r.run.clone())
}

#[test]
fn latency_samples_are_the_gpu_s_less_the_loop_s_own_cost() {
    for (test, size, want) in [
        ("LAT_RD", 64.0, LAT_NS + 64.0 * 8.0 / LAT_GBPS),
        ("LAT_WRRD", 256.0, WRRD_NS + 256.0 * 8.0 / LAT_GBPS),
        // An odd size at an odd offset: wide stores and a narrow head and tail, in bounds.
        ("LAT_WRRD", 65.0, WRRD_NS + 65.0 * 8.0 / LAT_GBPS),
    ] {
        let s = size.to_string();
        let v = one(&["--test", test, "--size", &s, "--host-offset", "7", "--samples", "3000"]);
        let ns = &v["result"]["ns"];
        // A tick of the 1980 MHz SM clock is 0.505 ns; the sample and the loop's cost (120 ns,
        // measured by the dry run) are each rounded to whole ticks.
        for stat in ["median", "min", "avg"] {
            let got = ns[stat].as_f64().unwrap();
            assert!(
                (got - want).abs() < 1.0,
                "{test} {size}: {stat} {got} ns, the GPU took {want}"
            );
        }
        let raw = v["result"]["cycles"]["tavg"].as_f64().unwrap();
        let whole = ((want + LOOP_NS) * SM_MHZ / 1000.0).round();
        assert_eq!(raw, whole, "{test}: the average with the loop's cost, in ticks");
    }
}

#[test]
fn bandwidths_are_the_bytes_over_the_gpu_s_time() {
    let gbps = |engine: &str, test: &str, size: &str, window: &str, samples: &str| {
        let v = one(&[
            "--engine",
            engine,
            "--test",
            test,
            "--size",
            size,
            "--window",
            window,
            "--samples",
            samples,
        ]);
        v["result"]["gbps"].as_f64().unwrap()
    };
    let close = |got: f64, want: f64, what: &str| {
        assert!((got / want - 1.0).abs() < 1e-5, "{what}: {got} Gb/s, want {want}");
    };
    close(gbps("sm", "BW_RD", "4096", "256k", "20000"), SM_READ_GBPS, "sm BW_RD");
    close(gbps("sm", "BW_WR", "64", "64M", "20000"), SM_WRITE_GBPS, "sm BW_WR");
    // BW_RDWR counts one direction's bytes over the time of both.
    let mixed = 1.0 / (1.0 / SM_READ_GBPS + 1.0 / SM_WRITE_GBPS);
    close(gbps("sm", "BW_RDWR", "4096", "256k", "20000"), mixed, "sm BW_RDWR");
    // The copy engines' time per copy: one batch of the gate (64 copies of 2 MiB), and 129
    // (66,000 copies of 4 KiB).
    let copy = |bytes: f64| bytes * 8.0 / (CE_SETUP_NS + bytes * 8.0 / CE_GBPS);
    close(
        gbps("ce", "BW_RD", "2097152", "64M", "64"),
        copy(2097152.0),
        "ce BW_RD 2 MiB",
    );
    close(
        gbps("ce", "BW_WR", "4096", "8k", "66000"),
        copy(4096.0),
        "ce BW_WR 4 KiB",
    );
}

#[test]
fn a_suite_run_records_the_gpu_and_the_link_its_nvml_reports_and_reads_back() {
    let r = cuda_run(
        &[],
        &[
            "--suite",
            "quick",
            "--only",
            "lat_dma_sizes,bw_dma_win_sweep_rd_rnd_64",
            "--samples",
            "500",
            "-j",
            "2",
        ],
    );
    let (run, out) = (r.succeeded(), &r.out);
    let gpu = &run["backend"]["description"]["device"];
    assert_eq!(gpu["name"], "pcieperf fake GPU (no hardware)");
    assert_eq!(gpu["uuid"], "GPU-70636965-7065-7266-2d66-616b65677075");
    assert_eq!(
        (gpu["multiprocessors"].as_u64(), gpu["engine"].as_str()),
        (Some(132), Some("sm"))
    );
    assert_eq!(gpu["timer"]["source"], "sm_clock");
    assert_eq!(
        gpu["latency_overhead"]["lat_rd_ticks"],
        (LOOP_NS * SM_MHZ / 1000.0).round() as u64
    );
    // The fake GPU is at c0de:c1:00.0, a PCI domain no host has: the link is NVML's, read at
    // open and at the end with the GPU busy, MPS and MRRS assumed (config space unread).
    let link = &run["link"];
    assert_eq!(
        (link["gen"].as_str(), link["lanes"].as_u64()),
        (Some("Gen5"), Some(16)),
        "{link}"
    );
    assert_eq!((link["mps"].as_u64(), link["mrrs"].as_u64()), (Some(256), Some(512)));
    let record = &gpu["link"];
    assert_eq!(record["mps_mrrs_read"], false);
    let note = record["note"].as_str().unwrap();
    assert!(note.starts_with("Gen5 x16 read from nvml while the GPU was busy; MPS 256 and MRRS 512 assumed (config space: no PCI device c0de:c1:00.0"), "{note}");
    let when: Vec<&str> = record["readings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["when"].as_str().unwrap())
        .collect();
    assert_eq!(when, ["open", "end"]);
    for (csv, lines) in [("lat_dma_sizes.csv", 15), ("bw_dma_win_sweep_rd_rnd_64.csv", 11)] {
        let rows = std::fs::read_to_string(out.join(csv)).unwrap().lines().count();
        assert_eq!(rows, lines, "{csv}");
    }
    // The window sweep's 4 KiB tests (cold, hwarm) are too small for the GPU's threads: left
    // out, with the reason on stderr, in run.json and in the report.
    let left_out = run["left_out"].as_array().unwrap();
    assert_eq!(left_out.len(), 1, "{left_out:?}");
    let why = left_out[0].as_str().unwrap();
    assert!(
        why.starts_with("2 BW_RD: windows under 256 KiB on the GPU's threads: "),
        "{why}"
    );
    assert!(
        r.stderr
            .contains(&format!("note: --backend cuda leaves out 2 of 26 tests:\n  {why}\n")),
        "{}",
        r.stderr
    );
    let report = ok(&["bench", "report", out.to_str().unwrap()]);
    assert!(report.contains("pcieperf fake GPU (no hardware)"), "{report}");
    assert!(report.contains(&format!("Left out by the backend: {why}.")), "{report}");
}

#[test]
fn a_gpu_runs_the_gpu_suite_unless_told_and_leaves_nothing_out() {
    let r = cuda_run(&[], &["--only", "bw_dma_win_sweep_rd_rnd_64", "--samples", "300"]);
    let run = r.succeeded();
    assert!(!r.stderr.contains("leaves out"), "{}", r.stderr);
    assert_eq!(run["suite"], "gpu");
    assert!(run.get("left_out").is_none(), "{run}");
    // Five windows from 256 KiB to 64 MiB, cold and host-warm: none the quick suite's 4 KiB.
    let csv = std::fs::read_to_string(r.out.join("bw_dma_win_sweep_rd_rnd_64.csv")).unwrap();
    let windows: Vec<u64> = csv
        .lines()
        .skip(1)
        .map(|l| l.split(',').nth(5).unwrap().parse().unwrap())
        .collect();
    assert_eq!(windows.len(), 10, "{csv}");
    assert_eq!(windows.iter().min(), Some(&(256 << 10)), "{csv}");
}

#[test]
fn driver_failures_name_the_call_and_leave_what_finished() {
    let (code, err, _) = lat_rd_run(&[("FAKE_CUDA_DEVICES", "0")], &[]);
    assert_eq!(code, Some(2));
    assert!(
        err.ends_with("error: --backend cuda: the driver sees no CUDA device\n"),
        "{err}"
    );
    let o = with_fake(&[], &["bench", "run", "--backend", "cuda:3", "--test", "LAT_RD"]);
    let (code, err) = (o.status.code(), stderr(&o));
    assert_eq!(code, Some(2));
    assert!(
        err.ends_with("error: --backend cuda:3: this host has 1 CUDA device (cuda:0)\n"),
        "{err}"
    );
    // NVML failing too: no link, with both reasons, said once for the open and the end.
    let (code, err, run) = lat_rd_run(&[("FAKE_CUDA_FAIL", "nvmlInit_v2:999")], &[]);
    assert_eq!(code, Some(0), "{err}");
    let run = run.unwrap();
    assert!(run["link"].is_null());
    let note = run["backend"]["description"]["device"]["link"]["note"]
        .as_str()
        .unwrap();
    assert_eq!(
        note,
        "no link state: sysfs: no PCI device c0de:c1:00.0 in /sys/bus/pci/devices; NVML: nvmlInit: error 999; \
         at the end: the same"
    );
    // The JIT refusing the module: the driver's own words.
    let (code, err, _) = lat_rd_run(&[("FAKE_CUDA_FAIL", "cuModuleLoadData:218")], &[]);
    assert_eq!(code, Some(2));
    assert!(
        err.ends_with("error: --backend cuda: cuModuleLoadData: a PTX JIT compilation failed\n"),
        "{err}"
    );
    // A launch failing in the fifth test: the error names the test and the call (with the
    // code's name, where the driver has no words for it), the four before it are kept.
    let r = cuda_run(
        &[("FAKE_CUDA_FAIL", "cuLaunchKernel:719:8")],
        &[
            "--suite",
            "quick",
            "--only",
            "lat_dma_sizes",
            "--samples",
            "200",
            "-j",
            "1",
        ],
    );
    let err = &r.stderr;
    assert_eq!(r.code, Some(1), "{err}");
    assert!(err.contains(": cuLaunchKernel: CUDA_ERROR_LAUNCH_FAILED\n"), "{err}");
    assert!(err.contains("the 4 tests that finished before it are in "), "{err}");
    let kept = std::fs::read_to_string(r.out.join("lat_dma_sizes.csv")).unwrap();
    assert_eq!(kept.lines().count(), 5, "{kept}");
}

#[test]
fn what_an_engine_cannot_run_is_named_with_the_reason() {
    for (engine, test, window, why) in [
        ("sm", "LAT_CMD_RD", "8k", "a GPU has no command path"),
        (
            "ce",
            "LAT_RD",
            "8k",
            "the copy engines move bulk data: bandwidth tests only",
        ),
        ("sm", "BW_WR", "128k", "windows under 256 KiB on the GPU's threads: "),
    ] {
        let o = with_fake(
            &[],
            &[
                "bench",
                "run",
                "--backend",
                "cuda",
                "--engine",
                engine,
                "--test",
                test,
                "--window",
                window,
                "--format",
                "json",
            ],
        );
        assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
        let want = format!("error: --backend cuda: runs none of the tests asked for (1 {test}: {why}");
        assert!(stderr(&o).contains(&want), "{}", stderr(&o));
    }
}

#[test]
fn a_real_device_runs_under_the_host_s_iommu() {
    // This host registers no IOMMU unit: its DMAs are not translated, and run.json says so.
    if Path::new("/sys/class/iommu")
        .read_dir()
        .is_ok_and(|mut d| d.next().is_some())
    {
        eprintln!("skipped: this host has IOMMU units");
        return;
    }
    let (code, err, run) = lat_rd_run(&[], &[]);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(run.unwrap()["iommu"], "Off");
    for asked in ["2m", "4k"] {
        let (code, err, run) = lat_rd_run(&[], &["--iommu", asked]);
        assert_eq!((code, run), (Some(2), None), "{err}");
        let want = format!(
            "error: --iommu {asked}: a real device runs under the host's IOMMU, which allows off here \
             (no IOMMU unit is registered in sys/class/iommu)"
        );
        assert!(err.contains(&want), "{err}");
    }
}

/// `bench run --backend cuda --test BW_RD --size 4096 --window 256k` with `env` and the
/// output `format`: the exit code and stdout.
fn bw_rd_verdict(env: &[(&str, &str)], format: &str) -> (Option<i32>, String) {
    let r = cuda_run(
        env,
        &[
            "--test", "BW_RD", "--size", "4096", "--window", "256k", "--format", format,
        ],
    );
    (r.code, r.stdout.clone() + &r.stderr)
}

#[test]
fn a_gpu_run_ends_with_its_verdict_normal_low_or_above_the_link() {
    // The stand-in moves 400 Gb/s of 4 KiB reads; the model of its Gen5 x16 link (MPS 256,
    // MRRS 4096 as NVML and the defaults give) carries 446.9: 89.5 %, above the 85 % floor
    // that applies with no committed run of this GPU.
    let (code, text) = bw_rd_verdict(&[], "table");
    assert_eq!(code, Some(0), "{text}");
    assert!(
        text.contains("Verdict for pcieperf fake GPU (no hardware) (engine sm, Gen5 x16"),
        "{text}"
    );
    assert!(text.contains("): normal\n"), "{text}");
    let h2d = text.lines().find(|l| l.starts_with("H2D")).unwrap();
    assert!(
        h2d.contains("400.0") && h2d.contains("89.5") && h2d.contains("none"),
        "{h2d}"
    );
    assert!(
        text.contains("note: no committed run of a pcieperf fake GPU (no hardware) on Gen5 x16 with engine sm"),
        "{text}"
    );
    assert!(text.contains("host buffer pages sampled"), "{text}");
    // Half as fast: low, with what run.json and check say (nothing wrong on this path).
    let (code, text) = bw_rd_verdict(&[("FAKE_CUDA_SPEED", "0.5")], "table");
    assert_eq!(code, Some(0), "{text}");
    assert!(text.contains("): low\n") && text.contains("44.8"), "{text}");
    // 1.2 times: 480 Gb/s through a 446.9 Gb/s link is a measurement problem.
    let (_, text) = bw_rd_verdict(&[("FAKE_CUDA_SPEED", "1.2")], "table");
    assert!(text.contains("): above the link\n") && text.contains("107.4"), "{text}");
}

#[test]
fn a_gpu_posing_as_the_committed_h100_is_judged_against_its_band() {
    let (code, text) = bw_rd_verdict(&[("FAKE_CUDA_NAME", "NVIDIA H100 80GB HBM3")], "table");
    assert_eq!(code, Some(0), "{text}");
    // The committed quick-sm run's H2D headline: 64 B in its largest window, 92.3 % of the model.
    let h2d = text.lines().find(|l| l.starts_with("H2D")).unwrap();
    assert!(
        h2d.contains("92.3") && h2d.contains("h100-80gb-hbm3-vm/quick-sm (own headline)"),
        "{h2d}"
    );
    assert!(
        text.contains("): normal\n") && !text.contains("note: no committed run"),
        "{text}"
    );
    let (_, text) = bw_rd_verdict(
        &[("FAKE_CUDA_NAME", "NVIDIA H100 80GB HBM3"), ("FAKE_CUDA_SPEED", "0.9")],
        "table",
    );
    // 80.6 % is under 0.9 x 92.3 % = 83.1 %: low against the band, though near the floor.
    assert!(text.contains("): low\n") && text.contains("80.6"), "{text}");
}

#[test]
fn a_gpu_suite_run_carries_the_verdict_in_json_and_csv() {
    for (format, check) in [
        ("json", "{\"verdict\":"),
        ("csv", "# verdict\ngpu,engine,link,verdict,causes,buffer,notes,figure,"),
    ] {
        let r = cuda_run(
            &[],
            &[
                "--only",
                "bw_dma_win_sweep_rd_rnd_64",
                "--samples",
                "300",
                "--format",
                format,
            ],
        );
        let run = r.succeeded();
        assert!(r.stdout.contains(check), "{}", r.stdout);
        if format == "json" {
            let last: Value = serde_json::from_str(r.stdout.lines().last().unwrap()).unwrap();
            assert_eq!(last["verdict"]["figures"][0]["figure"], "H2D");
            assert!(last["verdict"]["buffer"]
                .as_str()
                .unwrap()
                .starts_with("host buffer pages sampled"));
        }
        // run.json records where the buffer's pages are.
        let hb = &run["backend"]["description"]["device"]["host_buffer"];
        assert!(
            hb["pages"]["pages_sampled"].as_u64().unwrap() > 0 || hb["pages"]["error"].is_string(),
            "{hb}"
        );
    }
}
