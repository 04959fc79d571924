//! `pcieperf check --source sim[:PROFILE]`: the simulated Yitian 710 is healthy, its degraded
//! variant shows each of its profile's faults as a finding (exit 3), and with `-I/--duration`
//! the simulated clock runs, so the SATA controller's 250 BadDLLP a second show as a rate.

use crate::common;
use common::{pcieperf, refused, stdout};

fn json(args: &[&str]) -> (serde_json::Value, Option<i32>) {
    let mut all = vec!["check", "--format", "json"];
    all.extend_from_slice(args);
    let o = pcieperf(&all);
    (serde_json::from_str(&stdout(&o)).expect("JSON"), o.status.code())
}

fn findings(v: &serde_json::Value) -> Vec<(String, String, String)> {
    v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            let s = |k: &str| f[k].as_str().unwrap_or("").to_string();
            (s("bdf"), s("kind"), s("severity"))
        })
        .collect()
}

#[test]
fn the_simulated_host_is_healthy_and_its_faults_are_found() {
    let (v, code) = json(&["--source", "sim"]);
    assert_eq!(code, Some(0), "{v}");
    assert!(findings(&v).iter().all(|(_, _, s)| s == "info"), "{:?}", findings(&v));
    let (v, code) = json(&["--source", "sim:yitian710-degraded"]);
    assert_eq!(code, Some(3));
    let f = findings(&v);
    for (bdf, kind, severity) in [
        ("0000:b1:00.0", "link_width_downgraded", "warning"),
        ("0000:b1:00.0", "mps_below_path", "warning"),
        ("0000:04:00.0", "link_speed_downgraded", "warning"),
        ("0000:04:00.0", "aer_correctable", "info"),
        ("0000:03:00.0", "aspm_enabled", "info"),
    ] {
        assert!(
            f.iter().any(|(b, k, s)| b == bdf && k == kind && s == severity),
            "no {kind} ({severity}) on {bdf}: {f:?}"
        );
    }
}

#[test]
fn sampling_a_simulated_host_sees_its_error_rate() {
    let (v, code) = json(&["--source", "sim:yitian710-degraded", "-I", "250", "--duration", "1"]);
    assert_eq!(code, Some(3));
    let sata = v["functions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["bdf"] == "0000:04:00.0")
        .unwrap();
    let rate = sata["aer"]["rates"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r[0] == "BadDLLP")
        .and_then(|r| r[1].as_f64())
        .unwrap();
    // 250 a second of simulated time, paced to the wall clock: a quarter-second interval
    // catches 62 or 63, and a late wake-up a few more.
    assert!((150.0..400.0).contains(&rate), "{rate}");
    assert!(
        findings(&v).contains(&("0000:04:00.0".into(), "aer_correctable".into(), "error".into())),
        "{:?}",
        findings(&v)
    );
    // The table lists the one type that occurred, not the other 26 at zero on 27 functions.
    let o = pcieperf(&[
        "check",
        "--source",
        "sim:yitian710-degraded",
        "-I",
        "250",
        "--duration",
        "0.5",
    ]);
    let table = stdout(&o);
    let at = table
        .find("\nAER rates (peak over one interval; the types that occurred, on 1 of ")
        .expect("AER rates");
    let lines: Vec<&str> = table[at + 1..].lines().take(3).collect();
    assert!(
        lines[1].starts_with("  0000:04:00.0: BadDLLP ") && lines[1].ends_with("/s"),
        "{table}"
    );
    assert_eq!(lines[2], "", "{table}");
}

#[test]
fn a_simulated_host_has_its_own_tree() {
    let e = refused(&["check", "--source", "sim", "--sysfs", "/tmp"]);
    assert!(e.contains("--sysfs /tmp: only with --source perf"), "{e}");
    let e = refused(&["check", "--source", "sim:pentium"]);
    assert!(e.contains("sim:pentium") && e.contains("yitian710-degraded"), "{e}");
}

/// The simulated host's devices as their drivers' classes show them: with `--workload`s, the
/// SATA disk and the ConnectX-5's interface count what moved, and `-I` gives their rates.
#[test]
fn a_simulated_hosts_workloads_show_as_its_devices_traffic() {
    let (v, code) = json(&[
        "--source",
        "sim",
        "--workload",
        "port=00:02.0,rw=read,bs=1M,iodepth=32",
        "--workload",
        "port=b0:00.0,rx=40,tx=10",
        "-I",
        "200",
        "--duration",
        "0.6",
    ]);
    assert_eq!(code, Some(0), "{v}");
    let traffic = |bdf: &str| {
        v["functions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["bdf"] == bdf)
            .unwrap()["traffic"]
            .clone()
    };
    let (sata, nic) = (traffic("0000:04:00.0"), traffic("0000:b1:00.0"));
    assert_eq!(
        (&sata["devices"], &nic["devices"]),
        (&serde_json::json!(["sda"]), &serde_json::json!(["eth0"]))
    );
    let rate = |t: &serde_json::Value, k: &str| t[k].as_f64().unwrap_or_else(|| panic!("{k}: {t}"));
    // Reads: the disk writes into host memory (upstream), about the SATA SSD's 560 MB/s.
    assert!((2.0..6.0).contains(&rate(&sata, "upstream_gbps")), "{sata}");
    assert_eq!(rate(&sata, "downstream_gbps"), 0.0);
    // The NIC's packets at its workload's rates, within what its x16 path carries.
    assert!((35.0..45.0).contains(&rate(&nic, "upstream_gbps")), "{nic}");
    assert!((8.0..12.0).contains(&rate(&nic, "downstream_gbps")), "{nic}");
    assert!(rate(&nic, "upstream_gbps") < rate(&nic, "upstream_capacity_gbps"));
    // The host's other functions have no block device or interface.
    assert!(traffic("0000:03:00.0").is_null());
    // The degraded host's ConnectX-5 (Gen3 x8, MPS 128) offered 90 Gb/s: its link runs full.
    let (v, code) = json(&[
        "--source",
        "sim:yitian710-degraded",
        "--workload",
        "port=b0:00.0,rx=90,tx=10",
        "-I",
        "200",
        "--duration",
        "0.6",
    ]);
    assert_eq!(code, Some(3), "its faults are warnings");
    let busy = findings(&v);
    assert!(
        busy.iter()
            .any(|(b, k, s)| b == "0000:b1:00.0" && k == "link_busy" && s == "info"),
        "{busy:?}"
    );
    let e = refused(&["check", "--workload", "port=00:02.0,rw=read"]);
    assert!(
        e.contains("--workload port=00:02.0,rw=read: only with --source sim"),
        "{e}"
    );
}
