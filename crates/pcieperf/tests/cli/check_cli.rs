//! `pcieperf check` and `pcieperf snapshot` end to end: exit statuses, the three formats,
//! costs equal to `model bw`'s figures, rates, offline snapshots read by `check` and `pmu list`.

mod common;

use common::{ok, pcieperf, refused, stderr, stdout};
use pcie_health::fixture;
use serde_json::Value;

fn server(tag: &str) -> pcie_pmu::fixture::Tree {
    let t = pcie_pmu::fixture::Tree::new(tag);
    fixture::dual_socket_server(t.path()).unwrap();
    t
}

/// Runs `check`, expects exit 3 (findings at warning or above), returns stdout.
fn findings(args: &[&str]) -> String {
    let o = pcieperf(args);
    assert_eq!(o.status.code(), Some(3), "{args:?}: {}", stderr(&o));
    stdout(&o)
}

fn model_writes(gen: &str, lanes: &str, mps: &str) -> f64 {
    let v: Value = serde_json::from_str(&ok(&[
        "model", "bw", "--gen", gen, "--lanes", lanes, "--mps", mps, "--sizes", "4096", "--op", "wr", "--format",
        "json",
    ]))
    .unwrap();
    v["rows"][0]["results"][0]["payload"].as_f64().unwrap()
}

#[test]
fn this_host_has_no_link_or_healthy_links() {
    let any_link = std::fs::read_dir("/sys/bus/pci/devices")
        .map(|d| d.flatten().any(|e| e.path().join("current_link_speed").exists()))
        .unwrap_or(false);
    let o = pcieperf(&["check"]);
    if !any_link {
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        assert!(stdout(&o).contains("No PCIe link to check"), "{}", stdout(&o));
    } else {
        assert!(matches!(o.status.code(), Some(0 | 3)), "{}", stderr(&o));
    }
}

#[test]
fn a_server_with_findings_exits_3_and_prices_them_as_model_bw() {
    let t = server("check-cli-server");
    let root = t.path().to_str().unwrap();
    let v: Value = serde_json::from_str(&findings(&["check", "--sysfs", root, "--format", "json"])).unwrap();
    let fs = v["findings"].as_array().unwrap();
    let gpu = fs.iter().find(|f| f["kind"] == "link_width_downgraded").unwrap();
    let (x8, x16) = (model_writes("4", "8", "256"), model_writes("4", "16", "256"));
    assert!((gpu["lost_pct"].as_f64().unwrap() - (x16 - x8) / x16 * 100.0).abs() < 1e-9);
    assert_eq!(
        (gpu["bdf"].as_str(), gpu["limited_by"].as_str()),
        (Some("0000:19:00.0"), Some("0000:17:00.0"))
    );
    let nvme = fs.iter().find(|f| f["kind"] == "mps_below_path").unwrap();
    let (m128, m256) = (model_writes("4", "4", "128"), model_writes("4", "4", "256"));
    assert!((nvme["lost_pct"].as_f64().unwrap() - (m256 - m128) / m256 * 100.0).abs() < 1e-9);
    let gpu_record = v["functions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["bdf"] == "0000:19:00.0")
        .unwrap();
    assert_eq!(gpu_record["available_gbps"].as_f64(), Some(x8));

    let table = findings(&["check", "--sysfs", root]);
    assert!(table.contains("warning   link_width_downgraded"), "{table}");
    assert!(table.contains("0000:19:00.0: 0000:17:00.0 (the switch's upstream link) Gen4 x8 of Gen4 x16 -> 0000:19:00.0 (its own link) Gen4 x16"), "{table}");
    let csv = findings(&["check", "--sysfs", root, "--format", "csv"]);
    let rows: Vec<&str> = csv.lines().collect();
    assert!(rows[0].starts_with("record,severity,kind,lost_pct,message,bdf,id,class,driver,port_type,link,limited_by,"));
    assert_eq!(rows.iter().filter(|r| r.starts_with("finding,")).count(), fs.len());
    assert_eq!(
        rows.iter().filter(|r| r.starts_with("function,")).count(),
        v["functions"].as_array().unwrap().len()
    );
    // Same input, same bytes.
    assert_eq!(csv, findings(&["check", "--sysfs", root, "--format", "csv"]));
}

#[test]
fn without_root_the_skipped_checks_are_named() {
    let t = server("check-cli-user");
    fixture::as_user(t.path()).unwrap();
    let out = findings(&["check", "--sysfs", t.path().to_str().unwrap()]);
    assert!(
        out.contains("functions (config space past byte 64 is readable only by root): mps_below_path, mrrs_small, tags_limited, aspm_enabled"),
        "{out}"
    );
}

#[test]
fn sampling_reports_rates() {
    let t = server("check-cli-rates");
    let root = t.path().to_str().unwrap();
    let v: Value = serde_json::from_str(&findings(&[
        "check",
        "--sysfs",
        root,
        "-I",
        "20",
        "--duration",
        "0.06",
        "--format",
        "json",
    ]))
    .unwrap();
    assert!(v["sampled_seconds"].as_f64().unwrap() >= 0.06);
    let nvme = v["functions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["bdf"] == "0000:31:00.0")
        .unwrap();
    assert_eq!(nvme["aer"]["rates"][0], serde_json::json!(["RxErr", 0.0]));
    // The counters did not move: no rate finding.
    assert!(!v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .any(|f| f["kind"] == "aer_correctable"));
    for (args, want) in [
        (
            vec!["-I", "0", "--duration", "1"],
            "-I 0: the interval must be at least 1 ms",
        ),
        (
            vec!["--duration", "-1"],
            "--duration -1: must be a positive number of seconds",
        ),
        (
            vec!["--duration", "nan"],
            "--duration NaN: must be a positive number of seconds",
        ),
    ] {
        let mut a = vec!["check", "--sysfs", root];
        a.extend(args);
        let e = refused(&a);
        assert!(e.contains(want), "{e}");
    }
    let e = refused(&["check", "--sysfs", "/nonexistent-root"]);
    assert!(e.contains("--sysfs /nonexistent-root: not a directory"), "{e}");
}

#[test]
fn a_snapshot_reads_offline_like_the_host() {
    let t = server("check-cli-snap-host");
    pcie_pmu::fixture::dwc_pmu(
        &t,
        "dwc_rootport_3018",
        27,
        "0",
        pcie_pmu::fixture::DwcVariant::Upstream,
    );
    t.attr(
        "proc/cpuinfo",
        "processor\t: 0\nvendor_id\t: GenuineIntel\ncpu family\t: 6\nmodel\t\t: 106\n",
    );
    let host = t.path().to_str().unwrap();
    let out = pcie_pmu::fixture::Tree::new("check-cli-snap-out");
    let snap = out.path().join("snap");
    let snap_s = snap.to_str().unwrap();
    let said = ok(&["snapshot", "--sysfs", host, "-o", snap_s]);
    assert!(said.contains(": 15 PCI functions, 1 PMUs, "), "{said}");
    let json = |root: &str| findings(&["check", "--sysfs", root, "--format", "json"]);
    assert_eq!(json(host), json(snap_s));
    let pmus = |root: &str| ok(&["pmu", "list", "--sysfs", root, "--format", "json"]);
    assert_eq!(pmus(host), pmus(snap_s));
    let e = refused(&["snapshot", "--sysfs", host, "-o", snap_s]);
    assert!(e.contains("exists and is not an empty directory"), "{e}");
}
