//! `pcieperf check` and `pcieperf snapshot` end to end: exit statuses, the three formats,
//! costs equal to `model bw`'s figures, rates, offline snapshots read by `check` and `pmu list`.

use crate::common;

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

/// An HD Audio controller at Gen1 x1 of Gen2 x1 moves at most 48 Mb/s: its link finding is
/// information (exit 0), and JSON and CSV carry the demand it was priced against.
#[test]
fn a_slow_link_an_audio_controller_cannot_feel_is_information() {
    use pcie_sysfs::PortType;
    let t = pcie_pmu::fixture::Tree::new("check-cli-demand");
    fixture::root_port("0000:00:1c.0", 0, fixture::link(8.0, 4, 8.0, 4), 2)
        .write(t.path(), &[])
        .unwrap();
    fixture::Func::new("0000:02:00.0", 0x8086, 0x0c0c, 0x040300, PortType::Endpoint, 0)
        .link(fixture::link(2.5, 1, 5.0, 1))
        .write(t.path(), &["0000:00:1c.0"])
        .unwrap();
    let root = t.path().to_str().unwrap();
    let v: Value = serde_json::from_str(&ok(&["check", "--sysfs", root, "--format", "json"])).unwrap();
    let f = v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["kind"] == "link_speed_downgraded")
        .unwrap();
    assert_eq!(
        (f["severity"].as_str(), f["lost_pct"].as_f64()),
        (Some("info"), Some(0.0))
    );
    assert_eq!(
        (f["demand"]["gbps"].as_f64(), f["demand"]["source"].as_str()),
        (Some(0.048), Some("class"))
    );
    let csv = ok(&["check", "--sysfs", root, "--format", "csv"]);
    let mut reader = csv::Reader::from_reader(csv.as_bytes());
    let heads = reader.headers().unwrap().clone();
    let at = |name: &str| heads.iter().position(|h| h == name).unwrap();
    let audio = reader
        .records()
        .map(Result::unwrap)
        .find(|r| &r[0] == "function" && &r[at("bdf")] == "0000:02:00.0")
        .unwrap();
    assert_eq!(audio[at("demand_gbps")].parse::<f64>().ok(), Some(0.048));
    assert_eq!(&audio[at("demand_source")], "class");
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
    // The table names only the error types that occurred: here none.
    let table = findings(&["check", "--sysfs", root, "-I", "20", "--duration", "0.06"]);
    assert!(
        table.contains("\nAER rates: no errors while watched (1 function with AER counters)\n"),
        "{table}"
    );
    assert!(!table.contains("0.00/s"), "{table}");
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
    fixture::block_device(t.path(), "0000:31:00.0", "nvme0n1", 2_000, 1_000).unwrap();
    let host = t.path().to_str().unwrap();
    let out = pcie_pmu::fixture::Tree::new("check-cli-snap-out");
    let snap = out.path().join("snap");
    let snap_s = snap.to_str().unwrap();
    let said = ok(&["snapshot", "--sysfs", host, "-o", snap_s]);
    assert!(
        said.contains(": 15 PCI functions, 1 PMUs, 1 block devices and interfaces, "),
        "{said}"
    );
    let json = |root: &str| findings(&["check", "--sysfs", root, "--format", "json"]);
    assert_eq!(json(host), json(snap_s));
    let pmus = |root: &str| ok(&["pmu", "list", "--sysfs", root, "--format", "json"]);
    assert_eq!(pmus(host), pmus(snap_s));
    let e = refused(&["snapshot", "--sysfs", host, "-o", snap_s]);
    assert!(e.contains("exists and is not empty"), "{e}");
}

/// The pcie-bench host's `lspci -vvv` (as root), from its data directory.
#[test]
fn the_h100_vm_s_snapshot_prices_the_gpu_from_its_own_end() {
    // A real snapshot (scripts/gpu-check.sh on the project's lent machine): an H100 passed
    // through to a VM, on the guest's root bus with no port above it.
    let tarball = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../data/measured/h100-80gb-hbm3-vm/host/snapshot.tar.gz");
    let out = common::fresh_path("check-h100-vm");
    std::fs::create_dir_all(&out).unwrap();
    let tar = std::process::Command::new("tar")
        .arg("xzf")
        .arg(&tarball)
        .arg("-C")
        .arg(&out)
        .status()
        .unwrap();
    assert!(tar.success());
    let root = out.join("snapshot");
    let o = pcieperf(&["check", "--sysfs", root.to_str().unwrap(), "--format", "json"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["functions"].as_array().unwrap().len(), 7);
    assert_eq!(v["findings"].as_array().unwrap().len(), 0, "{}", v["findings"]);
    let gpu = v["functions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["id"] == "10de:2330")
        .unwrap();
    assert_eq!(
        (gpu["bdf"].as_str(), gpu["mps"].as_u64(), gpu["mrrs"].as_u64()),
        (Some("0000:00:06.0"), Some(256), Some(4096))
    );
    let hop = &gpu["path"][0];
    assert!(hop["upstream"]["bdf"].is_null(), "{hop}");
    assert_eq!(
        (hop["current_gts"].as_f64(), hop["current_width"].as_u64()),
        (Some(32.0), Some(16))
    );
    let gen5 = model_writes("5", "16", "256");
    for key in ["available_gbps", "capable_gbps"] {
        assert!((gpu[key].as_f64().unwrap() - gen5).abs() < 1e-9, "{key}: {gpu}");
    }
    assert_eq!(gpu["limited_by"], "0000:00:06.0");
    std::fs::remove_dir_all(&out).unwrap();
}

fn e5_lspci() -> std::path::PathBuf {
    common::reference("nfp6000-1.2GHz_hsw-Xeon-E5-2637v3_supermicro").join("sys-lspci.txt")
}

/// Gb/s as findings print them: three significant digits.
fn sig3(x: f64) -> String {
    if x >= 99.95 {
        format!("{x:.0}")
    } else if x >= 9.995 {
        format!("{x:.1}")
    } else {
        format!("{x:.2}")
    }
}

#[test]
fn an_lspci_dump_is_checked_like_the_host_it_came_from() {
    let file = e5_lspci();
    let file_s = file.to_str().unwrap();
    let json = ok(&["check", "--lspci", file_s, "--format", "json"]);
    let v: Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v["functions"].as_array().unwrap().len(), 91);
    let nfp = v["functions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["bdf"] == "0000:02:00.0")
        .unwrap();
    let gen3 = model_writes("3", "8", "256");
    assert!((nfp["available_gbps"].as_f64().unwrap() - gen3).abs() < 1e-9, "{nfp}");
    assert_eq!(nfp["driver"], "nfp-pciebench");
    // The table lists the 6 devices with a link or a finding and counts the 78 others
    // (uncore, the DMA engine's functions, USB, SATA); JSON has all 91.
    let table = ok(&["check", "--lspci", file_s]);
    let rows: Vec<&str> = table.lines().filter(|l| l.starts_with("0000:")).collect();
    let listed: Vec<&str> = rows.iter().map(|l| &l[..12]).collect();
    let want = [
        "0000:00:00.0",
        "0000:02:00.0",
        "0000:03:00.0",
        "0000:06:00.0",
        "0000:07:00.0",
        "0000:07:00.1",
    ];
    assert_eq!(listed, want, "{table}");
    assert!(
        table.contains("\n78 functions without a PCIe link or a finding are not listed"),
        "{table}"
    );
    // From stdin, and through a snapshot read with --sysfs: the same report.
    let piped = std::process::Command::new(env!("CARGO_BIN_EXE_pcieperf"))
        .args(["check", "--lspci", "-", "--format", "json"])
        .stdin(std::fs::File::open(&file).unwrap())
        .output()
        .unwrap();
    assert_eq!(stdout(&piped), json);
    let out = common::fresh_path("check-lspci-snap");
    let said = ok(&["snapshot", "--lspci", file_s, "-o", out.to_str().unwrap()]);
    assert!(said.contains(": 91 PCI functions from "), "{said}");
    assert_eq!(
        ok(&["check", "--sysfs", out.to_str().unwrap(), "--format", "json"]),
        json
    );
    std::fs::remove_dir_all(&out).unwrap();

    // The NFP's link retrained at Gen2 x4: a warning priced by the model, exit 3.
    let text = std::fs::read_to_string(&file).unwrap();
    let at = text.find("02:00.0 Ethernet").unwrap();
    let sta = at + text[at..].find("LnkSta:\tSpeed 8GT/s, Width x8").unwrap();
    let mut degraded = text.clone();
    degraded.replace_range(sta..sta + 29, "LnkSta:\tSpeed 5GT/s, Width x4");
    let dir = common::scratch_dir("check-lspci-degraded");
    let bad = dir.join("lspci.txt");
    std::fs::write(&bad, degraded).unwrap();
    let table = findings(&["check", "--lspci", bad.to_str().unwrap()]);
    let lost = (1.0 - model_writes("2", "4", "256") / gen3) * 100.0;
    let want = format!(
        "0000:02:00.0 runs Gen2 x4 (limited by 0000:02:00.0, its own link) where Gen3 x8 is possible: 4 KiB DMA writes {} Gb/s of {}",
        sig3(model_writes("2", "4", "256")),
        sig3(gen3)
    );
    assert!(table.contains(&want), "{want}\n{table}");
    assert!(table.contains(&format!("{lost:.1}")), "{lost}\n{table}");
    assert!(!table.contains("Target Link Speed"), "{table}");

    // Its root port's Target Link Speed set to 5 GT/s (firmware's or setpci's), both ends at
    // Gen2 x8: the link runs at what its port allows, so no speed fault; the setting is a
    // finding of its own, priced by the model.
    let port = text.find("00:02.0 PCI bridge").unwrap();
    let capped = text[..port].to_string()
        + &text[port..at]
            .replacen("LnkSta:\tSpeed 8GT/s", "LnkSta:\tSpeed 5GT/s", 1)
            .replacen("Target Link Speed: 8GT/s", "Target Link Speed: 5GT/s", 1)
        + &text[at..].replacen("LnkSta:\tSpeed 8GT/s", "LnkSta:\tSpeed 5GT/s", 1);
    std::fs::write(&bad, capped).unwrap();
    let table = findings(&["check", "--lspci", bad.to_str().unwrap()]);
    let want = format!(
        "0000:02:00.0: its own link is held at Gen2 x8 by 0000:00:02.0's Target Link Speed (Link Control 2) where both \
         ends support Gen3 x8: a firmware or setpci setting, not a training fault (raise it and retrain the link); 4 KiB \
         DMA writes {} Gb/s of {}",
        sig3(model_writes("2", "8", "256")),
        sig3(gen3)
    );
    assert!(table.contains(&want), "{want}\n{table}");
    assert!(table.contains("warning   link_speed_capped"), "{table}");
    assert!(!table.contains("link_speed_downgraded"), "{table}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn an_lspci_dump_without_root_or_of_something_else_is_named() {
    let dir = common::scratch_dir("check-lspci-bad");
    let text = std::fs::read_to_string(e5_lspci()).unwrap();
    let at = text.find("02:00.0 Ethernet").unwrap();
    let end = at + text[at..].find("\n\n").unwrap();
    let nfp = &text[at..end];
    let denied: String = nfp
        .lines()
        .filter(|l| !l.starts_with("\t\t"))
        .map(|l| {
            if l.starts_with("\tCapabilities:") {
                "\tCapabilities: <access denied>"
            } else {
                l
            }
        })
        .collect::<Vec<_>>()
        .join("\n");
    let file = dir.join("user.txt");
    std::fs::write(&file, denied).unwrap();
    let o = pcieperf(&["check", "--lspci", file.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        stderr(&o).contains(
            "lspci could not read the capabilities of 1 functions (it ran without root: run `sudo lspci -vvv`)"
        ),
        "{}",
        stderr(&o)
    );
    let junk = dir.join("junk.txt");
    std::fs::write(&junk, "Hello\n\u{0}\u{1}binary\n").unwrap();
    let e = refused(&["check", "--lspci", junk.to_str().unwrap()]);
    assert!(
        e.contains("junk.txt: no PCI function found: expected the output of `lspci -vvv`"),
        "{e}"
    );
    let e = refused(&["check", "--lspci", "/nonexistent.txt"]);
    assert!(e.contains("--lspci /nonexistent.txt: No such file"), "{e}");
    for other in [&["--sysfs", "/"][..], &["--duration", "1"]] {
        let mut a = vec!["check", "--lspci", junk.to_str().unwrap()];
        a.extend(other);
        let e = refused(&a);
        assert!(e.contains("cannot be used with"), "{e}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The payload block devices and interfaces count: a table section when watched (`-I`), and
/// every figure in CSV and JSON, the capacity up as `model bw`'s 4 KiB writes through the path.
#[test]
fn traffic_is_shown_watched_and_carried_in_csv_and_json() {
    let t = server("check-cli-traffic");
    fixture::block_device(t.path(), "0000:31:00.0", "nvme0n1", 2_000, 1_000).unwrap();
    fixture::net_interface(t.path(), "0000:4b:00.0", "eth0", 1_000_000, 500).unwrap();
    let root = t.path().to_str().unwrap();
    let table = findings(&["check", "--sysfs", root, "-I", "100", "--duration", "0.3"]);
    let section = table.split("\nTraffic (").nth(1).unwrap_or_else(|| panic!("{table}"));
    assert!(section.contains("0000:31:00.0  nvme0n1"), "{section}");
    assert!(section.contains("0000:4b:00.0  eth0"), "{section}");
    assert!(table.contains("AER and traffic counters watched for 0."), "{table}");
    let plain = findings(&["check", "--sysfs", root]);
    assert!(!plain.contains("\nTraffic ("), "totals alone are not shown: {plain}");

    let csv = findings(&["check", "--sysfs", root, "--format", "csv"]);
    let mut reader = csv::Reader::from_reader(csv.as_bytes());
    let head = reader.headers().unwrap().clone();
    let col = |name: &str| head.iter().position(|h| h == name).unwrap();
    let nvme = reader
        .records()
        .map(Result::unwrap)
        .find(|r| &r[0] == "function" && &r[col("bdf")] == "0000:31:00.0")
        .unwrap();
    assert_eq!(
        (
            &nvme[col("traffic_devices")],
            &nvme[col("upstream_bytes")],
            &nvme[col("downstream_bytes")]
        ),
        ("nvme0n1", "1024000", "512000")
    );
    let up: f64 = nvme[col("upstream_capacity_gbps")].parse().unwrap();
    assert!((up - model_writes("4", "4", "128")).abs() < 0.01, "{up}");
    assert_eq!(&nvme[col("upstream_gbps")], "", "not watched");

    let v: Value = serde_json::from_str(&findings(&["check", "--sysfs", root, "--format", "json"])).unwrap();
    let nic = v["functions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["bdf"] == "0000:4b:00.0")
        .unwrap();
    assert_eq!(nic["traffic"]["devices"], serde_json::json!(["eth0"]));
    assert_eq!(nic["traffic"]["upstream_bytes"], 1_000_000);
}
