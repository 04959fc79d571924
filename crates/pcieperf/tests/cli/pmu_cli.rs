//! `pcieperf pmu list` on fixture sysfs trees: outputs, exit codes and messages.

use crate::common;
use common::{ok, pcieperf, refused, stderr, stdout};

use pcie_pmu::fixture::{self, DwcVariant, Tree};

/// A Yitian-like host: two DWC root ports (one with a NIC), HiSilicon-free, plus cpu/msr/software.
fn host() -> Tree {
    let t = Tree::new("cli");
    fixture::common_pmus(&t);
    fixture::dwc_pmu(&t, "dwc_rootport_3018", 27, "0", DwcVariant::Upstream);
    fixture::dwc_pmu(&t, "dwc_rootport_13018", 28, "64", DwcVariant::Upstream);
    t.root_port("0000:30:03.0", "0");
    t.nic_below("0000:30:03.0", "0000:31:00.0");
    t.root_port("0001:30:03.0", "1");
    t
}

/// The event `ev` of PMU `pmu` in `pmu list --format json`.
fn event(list: &serde_json::Value, pmu: &str, ev: &str) -> serde_json::Value {
    list["pcie_pmus"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["name"] == pmu)
        .flat_map(|p| p["events"].as_array().unwrap())
        .find(|e| e["name"] == ev)
        .unwrap_or_else(|| panic!("{pmu}/{ev}"))
        .clone()
}

#[test]
fn table_is_a_tree_of_pmus_ports_devices_events_and_metrics() {
    let t = host();
    let root = t.path().to_str().unwrap();
    let out = ok(&["pmu", "list", "--sysfs", root]);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(
        lines[0],
        "dwc_rootport_3018  DesignWare PCIe root-port PMU (dwc_rootport, bdf16, lower_case)  type 27  cpu 0"
    );
    assert_eq!(
        lines[1],
        "  root port 0000:30:03.0  1ded:8000  class 060400  pcieport  32.0 GT/s PCIe x16  NUMA 0"
    );
    assert_eq!(
        lines[2],
        "    0000:31:00.0  15b3:1017  class 020000  mlx5_core  16.0 GT/s PCIe x8 (max 16.0 GT/s PCIe x16)  NUMA 0"
    );
    assert_eq!(lines[3], "  metrics:");
    assert!(
        out.contains("    rx_bytes          rx_pcie_tlp_data_payload\n"),
        "{out}"
    );
    assert!(out.contains("  events (43):"), "{out}");
    let rx = lines
        .iter()
        .find(|l| l.trim_start().starts_with("rx_pcie_tlp_data_payload "))
        .unwrap();
    assert!(
        rx.contains("eventid=0x21,type=0x0") && rx.contains("rx_bytes") && rx.contains("1 B/count"),
        "{rx}"
    );
    let lane = lines
        .iter()
        .find(|l| l.trim_start().starts_with("rx_memory_read "))
        .unwrap();
    assert!(lane.contains("needs lane=N"), "{lane}");
    assert!(out.contains("\ndwc_rootport_13018  "), "{out}");
    assert!(out.contains("  root port 0001:30:03.0  "), "{out}");
    assert!(!out.contains("msr"), "only PCIe PMUs are listed: {out}");
}

#[test]
fn csv_has_one_row_per_event_and_json_one_object_per_pmu() {
    let t = host();
    let root = t.path().to_str().unwrap();
    let csv = ok(&["pmu", "list", "--sysfs", root, "--format", "csv"]);
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(
        lines[0],
        "pmu,family,variant,type,cpumask,root_ports,event,encoding,origin,required_params,config,config1,config2,metric,unit,bytes_per_count,group,kernel_scale,kernel_unit,note"
    );
    assert_eq!(lines.len(), 1 + 2 * 43);
    let rx = lines
        .iter()
        .find(|l| l.starts_with("dwc_rootport_3018,") && l.contains(",rx_pcie_tlp_data_payload,"))
        .unwrap();
    assert_eq!(
        *rx,
        "dwc_rootport_3018,dwc,dwc_rootport;bdf16;lower_case,27,0,0000:30:03.0,rx_pcie_tlp_data_payload,\"eventid=0x21,type=0x0\",sysfs,,0x21,0x0,0x0,rx_bytes,bytes,1,,,,"
    );
    let lane = lines.iter().find(|l| l.contains(",rx_memory_read,")).unwrap();
    assert!(lane.contains(",sysfs,lane,,,,rx_tlps,count,"), "{lane}");

    let json = ok(&["pmu", "list", "--sysfs", root, "--format", "json"]);
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    let pmus = v["pcie_pmus"].as_array().unwrap();
    assert_eq!(pmus.len(), 2);
    assert!(pmus.iter().all(|p| p["events"].as_array().unwrap().len() == 43));
    let p = &pmus[1];
    assert_eq!(p["name"], "dwc_rootport_13018");
    assert_eq!(p["type"], 28);
    assert_eq!(p["cpumask"], serde_json::json!([64]));
    assert_eq!(p["root_ports"][0]["bdf"], "0001:30:03.0");
    assert_eq!(p["variant"], serde_json::json!(["dwc_rootport", "sbdf", "lower_case"]));
    let rx = event(&v, "dwc_rootport_13018", "rx_pcie_tlp_data_payload");
    assert_eq!(rx["config"], "0x21");
    assert_eq!(rx["metric"], "rx_bytes");
    assert_eq!(rx["bytes_per_count"], 1.0);
    let lane = event(&v, "dwc_rootport_3018", "tx_memory_write");
    assert_eq!(lane["required_params"], serde_json::json!(["lane"]));
    assert!(lane["config"].is_null());
}

#[test]
fn other_families_list_with_their_units() {
    let t = Tree::new("cli-mixed");
    t.intel_cpu(143);
    fixture::intel_iio_pmus(&t, 0, 40, "3.814697266e-6", &["0000:00"]);
    fixture::hisi_pmu(&t, "hisi_pcie0_core0", 31, "0x30", None);
    fixture::marvell_pmu(&t, "mrvl_pcie_rc_pmu_8e0000000000", 51);
    fixture::nvidia_grace_pmu(&t, 0, 50);
    let root = t.path().to_str().unwrap();
    let json = ok(&["pmu", "list", "--sysfs", root, "--format", "json"]);
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    let find = |pmu: &str, ev: &str| event(&v, pmu, ev);
    let bw = find("uncore_iio_free_running_0", "bw_in_port0");
    assert_eq!(bw["bytes_per_count"], 32.0);
    assert!(bw["note"].as_str().unwrap().contains("under-report"));
    assert_eq!(bw["config"], "0x20ff");
    let iostat = find("uncore_iio_0", "inbound_read");
    assert_eq!(iostat["origin"], "catalog");
    assert_eq!(
        iostat["config"],
        format!("{:#x}", 0x83u64 | 0x4 << 8 | 0xf << 36 | 0x7 << 48)
    );
    let flux = find("hisi_pcie0_core0", "tx_cpl_flux");
    assert_eq!(flux["group"], find("hisi_pcie0_core0", "tx_cpl_time")["group"]);
    assert_eq!(
        find("mrvl_pcie_rc_pmu_8e0000000000", "ib_tlp_dwords_pr")["bytes_per_count"],
        4.0
    );
    assert_eq!(find("nvidia_pcie_pmu_0", "cycles")["config"], "0x100000000");
    let table = ok(&["pmu", "list", "--sysfs", root]);
    assert!(
        table.contains("hisi_pcie0_core0  HiSilicon PCIe core PMU  type 31  cpu 0"),
        "{table}"
    );
    assert!(
        table.contains("nvidia_pcie_pmu_0  NVIDIA PCIe PMU (grace)  type 50  cpu 0\n  root ports: not identified"),
        "{table}"
    );
}

#[test]
fn roots_that_are_not_sysfs_trees_exit_2() {
    let t = Tree::new("cli-bad");
    let missing = t.path().join("nope");
    let e = refused(&["pmu", "list", "--sysfs", missing.to_str().unwrap()]);
    assert_eq!(e, format!("error: --sysfs {}: no such directory\n", missing.display()));
    std::fs::remove_dir_all(t.path().join("sys")).unwrap();
    let e = refused(&["pmu", "list", "--sysfs", t.path().to_str().unwrap()]);
    assert!(
        e.starts_with(&format!(
            "error: --sysfs {}: no sys/bus/event_source/devices directory",
            t.path().display()
        )),
        "{e}"
    );
    let e = refused(&["pmu", "list", "--format", "xml"]);
    assert!(e.contains("xml"), "{e}");
}

#[test]
fn a_host_without_pcie_pmus_says_so() {
    let t = Tree::new("cli-none");
    fixture::common_pmus(&t);
    let out = ok(&["pmu", "list", "--sysfs", t.path().to_str().unwrap()]);
    assert_eq!(
        out,
        format!(
            "No PCIe PMUs under {} (3 other PMUs: cpu, msr, software).\n",
            t.path().display()
        )
    );
    let csv = ok(&["pmu", "list", "--sysfs", t.path().to_str().unwrap(), "--format", "csv"]);
    assert_eq!(csv.lines().count(), 1);
}

#[test]
fn a_corrupt_pmu_is_skipped_with_a_warning_naming_the_file() {
    let t = host();
    t.raw("sys/bus/event_source/devices/dwc_rootport_3018/type", "abc\n");
    let o = pcieperf(&["pmu", "list", "--sysfs", t.path().to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0));
    let err = stderr(&o);
    assert!(err.starts_with("warning: skipped a PMU: "), "{err}");
    assert!(
        err.contains("dwc_rootport_3018/type: \"abc\" is not a PMU type number"),
        "{err}"
    );
    let out = stdout(&o);
    assert!(
        out.starts_with("dwc_rootport_13018  ") && !out.contains("dwc_rootport_3018 "),
        "{out}"
    );
}
