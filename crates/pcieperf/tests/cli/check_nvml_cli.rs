//! `check` and `pmu serve` read every NVIDIA GPU through NVML: here a stand-in
//! `libnvidia-ml.so.1` (fake_driver/libnvml.rs, built with rustc and found through
//! LD_LIBRARY_PATH) reports the fixture server's GPU at 19:00.0: its link, replay counter and
//! PCIe byte counters, growing at set rates so a sampled check sees a replay finding and
//! traffic, and the exporter serves them beside the PCI functions' series.

use crate::common;

use common::{serve_with, stderr, stdout};
use pcie_health::fixture;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// The counters' starting values in the stand-in.
const REPLAYS: u64 = 7;
const TX_BYTES: u64 = 1_000_000;
const RX_BYTES: u64 = 2_000_000;
const GPU: &str = "0000:19:00.0";

/// The directory holding the stand-in `libnvidia-ml.so.1` (built once per test run).
fn nvml_dir() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| crate::common::build_stand_in("libnvml.rs", "fake-nvml", "libnvidia-ml.so.1"))
}

fn server(tag: &str) -> pcie_pmu::fixture::Tree {
    let t = pcie_pmu::fixture::Tree::new(tag);
    fixture::dual_socket_server(t.path()).unwrap();
    t
}

/// `pcieperf ARGS` with the stand-in NVML and `env`.
fn with_nvml(env: &[(&str, &str)], args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_pcieperf"))
        .args(args)
        .env("LD_LIBRARY_PATH", nvml_dir())
        .env("FAKE_NVML_GPUS", GPU)
        .envs(env.iter().copied())
        .output()
        .expect("runs")
}

fn json(o: &Output) -> Value {
    serde_json::from_str(&stdout(o)).unwrap_or_else(|e| panic!("{e}: {}", stderr(o)))
}

#[test]
fn check_reports_the_gpu_s_link_replays_and_pcie_bytes() {
    let t = server("check-nvml-totals");
    let root = t.path().to_str().unwrap();
    let r = json(&with_nvml(
        &[("FAKE_NVML_LINK", "4,8,5,16")],
        &["check", "--sysfs", root, "--nvml", "--format", "json"],
    ));
    let g = &r["gpus"][0];
    assert_eq!(g["bdf"], GPU);
    assert_eq!(g["name"], "NVIDIA H100 80GB HBM3");
    assert_eq!(
        [&g["current_gen"], &g["current_width"], &g["max_gen"], &g["max_width"]].map(|v| v.as_u64()),
        [Some(4), Some(8), Some(5), Some(16)]
    );
    assert_eq!(
        [&g["replays"], &g["tx_bytes"], &g["rx_bytes"]].map(|v| v.as_u64()),
        [Some(REPLAYS), Some(TX_BYTES), Some(RX_BYTES)]
    );
    assert!(g["replays_per_s"].is_null(), "no rate without sampling: {g}");
    // Gen4 x8 at 1e-12: 16e9 * 8 * 1e-12 replays per second.
    assert!((g["replay_limit_per_s"].as_f64().unwrap() - 0.128).abs() < 1e-9, "{g}");
    let table = stdout(&with_nvml(&[], &["check", "--sysfs", root, "--nvml"]));
    let section = table
        .split("\nNVIDIA GPUs (")
        .nth(1)
        .unwrap_or_else(|| panic!("{table}"));
    assert!(
        section.contains("0000:19:00.0  NVIDIA H100 80GB HBM3  Gen5 x16  Gen5 x16"),
        "{section}"
    );
    // Without --nvml a tree that is not this host's live one is not mixed with NVML's GPUs.
    let r = json(&with_nvml(&[], &["check", "--sysfs", root, "--format", "json"]));
    assert_eq!(r["gpus"], serde_json::json!([]));
}

#[test]
fn a_sampled_check_prices_replays_by_the_link_and_shows_gpu_traffic() {
    let t = server("check-nvml-rates");
    let root = t.path().to_str().unwrap();
    // 50 replays/s against Gen5 x16's 0.512/s; 1.25 GB/s TX (10 Gb/s), RX idle.
    let env = [("FAKE_NVML_RATES", "50,1250000000,0")];
    let args = ["check", "--sysfs", root, "--nvml", "-I", "100", "--duration", "0.5"];
    let o = with_nvml(&env, &[&args[..], &["--format", "json"]].concat());
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    let r = json(&o);
    let g = &r["gpus"][0];
    let rate = g["replays_per_s"].as_f64().unwrap();
    assert!((30.0..=60.0).contains(&rate), "{g}");
    let tx = g["tx_gbps"].as_f64().unwrap();
    assert!((7.0..=11.0).contains(&tx), "{g}");
    assert_eq!(g["rx_gbps"].as_f64(), Some(0.0));
    let finding = r["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["kind"] == "gpu_replays")
        .unwrap_or_else(|| panic!("{r}"));
    assert_eq!(
        (&finding["severity"], &finding["bdf"]),
        (&Value::from("warning"), &Value::from(GPU))
    );
    // The CSV carries a gpu record with the same figures.
    let csv = stdout(&with_nvml(&env, &[&args[..], &["--format", "csv"]].concat()));
    let mut reader = csv::Reader::from_reader(csv.as_bytes());
    let head = reader.headers().unwrap().clone();
    let col = |name: &str| {
        head.iter()
            .position(|h| h == name)
            .unwrap_or_else(|| panic!("{name}: {head:?}"))
    };
    let gpu = reader.records().map(Result::unwrap).find(|r| &r[0] == "gpu").unwrap();
    assert_eq!((&gpu[col("bdf")], &gpu[col("gpu_link")]), (GPU, "Gen5 x16"));
    assert!(gpu[col("gpu_tx_bytes")].parse::<u64>().unwrap() > TX_BYTES);
}

#[test]
fn nvml_s_failure_is_told_and_the_check_goes_on() {
    let t = server("check-nvml-fail");
    let root = t.path().to_str().unwrap();
    let env = [("FAKE_NVML_FAIL", "nvmlDeviceGetCount_v2:999")];
    let r = json(&with_nvml(
        &env,
        &["check", "--sysfs", root, "--nvml", "--format", "json"],
    ));
    assert_eq!(r["nvml"], "NVML: nvmlDeviceGetCount: error 999");
    assert!(!r["functions"].as_array().unwrap().is_empty());
    let table = stdout(&with_nvml(&env, &["check", "--sysfs", root, "--nvml"]));
    assert!(
        table.contains("NVIDIA GPUs not read: NVML: nvmlDeviceGetCount: error 999"),
        "{table}"
    );
    // One figure missing: the others are still there, the missing one named.
    let env = [("FAKE_NVML_FAIL", "nvmlDeviceGetPcieReplayCounter:3")];
    let r = json(&with_nvml(
        &env,
        &["check", "--sysfs", root, "--nvml", "--format", "json"],
    ));
    let g = &r["gpus"][0];
    assert!(
        g["replays"].is_null() && g["tx_bytes"].as_u64() == Some(TX_BYTES),
        "{g}"
    );
    assert_eq!(
        g["unread"][0],
        "replay counter: nvmlDeviceGetPcieReplayCounter: error 3"
    );
}

#[test]
fn the_exporter_serves_the_gpu_s_replays_and_pcie_bytes() {
    let t = server("serve-nvml");
    std::fs::create_dir_all(t.path().join("sys/bus/event_source/devices")).unwrap();
    std::fs::create_dir_all(t.path().join("proc")).unwrap();
    let dir = nvml_dir().to_str().unwrap();
    let env = [("LD_LIBRARY_PATH", dir), ("FAKE_NVML_GPUS", GPU)];
    let server = serve_with(&["--sysfs", t.path().to_str().unwrap(), "--nvml", "-I", "100"], &env);
    let deadline = Instant::now() + Duration::from_secs(20);
    let body = loop {
        let text = common::http_get(&server.addr, "/metrics", Duration::from_secs(10));
        if text.contains("pcieperf_gpu_pcie_replays_total") || Instant::now() > deadline {
            break text;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let labels = "segment=\"0000\",bus=\"19\",device=\"00\",function=\"0\"";
    for line in [
        format!("pcieperf_gpu_pcie_replays_total{{{labels}}} {REPLAYS}\n"),
        format!("pcieperf_pcidevice_payload_bytes_total{{{labels},direction=\"rx\"}} {TX_BYTES}\n"),
        format!("pcieperf_pcidevice_payload_bytes_total{{{labels},direction=\"tx\"}} {RX_BYTES}\n"),
        format!("pcieperf_gpu_current_link_width{{{labels}}} 16\n"),
        format!("pcieperf_gpu_info{{{labels},name=\"NVIDIA H100 80GB HBM3\"}} 1\n"),
    ] {
        assert!(body.contains(&line), "{line}in {body}");
    }
}
