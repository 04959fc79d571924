//! `pcieperf check --lspci` on pastes people posted (`data/real-hosts`): the exit status says
//! "look here" only where an expert would look, and the forms pastes come in read as dumps.

use crate::common;

use common::{pcieperf, stderr, stdout};
use serde_json::Value;

fn real_host(name: &str) -> String {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../data/real-hosts")
        .join(name)
        .to_str()
        .unwrap()
        .to_string()
}

fn check_json(name: &str) -> (Option<i32>, Value) {
    let file = real_host(name);
    let o = pcieperf(&["check", "--lspci", &file, "--format", "json"]);
    let v = serde_json::from_str(&stdout(&o)).unwrap_or_else(|e| panic!("{name}: {e}: {}", stderr(&o)));
    (o.status.code(), v)
}

/// A chipset slot's idle GPU below an x4 chipset link: power saving, exit 0, the figures in
/// three digits; the class of the header the poster's editor wrapped is kept.
#[test]
fn an_idle_gpu_on_a_chipset_slot_is_power_saving() {
    let (code, v) = check_json("rx560-x570-chipset-slot.txt");
    assert_eq!(code, Some(0));
    let f = &v["findings"][0];
    assert_eq!(
        (f["kind"].as_str(), f["severity"].as_str()),
        (Some("link_power_saving"), Some("info"))
    );
    let msg = f["message"].as_str().unwrap();
    assert!(msg.contains("7.09 Gb/s of 27.9"), "{msg}");
    let gpu = v["functions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["bdf"] == "0000:06:00.0")
        .unwrap();
    assert_eq!(gpu["class"], "030000");
}

/// An SBC's NVMe whose port is not in the paste: information, said so, exit 0.
#[test]
fn a_device_whose_port_is_not_pasted_is_information() {
    let (code, v) = check_json("visionfive2-xg6-nvme.txt");
    assert_eq!(code, Some(0));
    let f = &v["findings"][0];
    assert_eq!(f["kind"], "link_width_downgraded");
    assert_eq!(f["severity"], "info");
    assert!(f["message"].as_str().unwrap().contains("its port is not in this dump"));
    assert!(v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .all(|f| f["kind"] != "mps_below_path"));
}

/// pciutils 3.10 without pci.ids: `70:00.0 Class 0502: Device 8086:0ddb` keeps class and ids.
#[test]
fn a_numeric_header_keeps_class_and_ids() {
    let (code, v) = check_json("cxl-numeric-header-pciutils310.txt");
    assert_eq!(code, Some(0));
    let f = &v["functions"][0];
    assert_eq!(
        (f["class"].as_str(), f["id"].as_str()),
        (Some("050210"), Some("8086:0ddb"))
    );
}

/// A quoted-printable mail archive's paste reads as the dump (its `=3D` and soft breaks).
#[test]
fn a_quoted_printable_paste_reads_as_the_dump() {
    let (code, v) = check_json("titan-ridge-dock-mail-qp.txt");
    assert_eq!(code, Some(0));
    let f = &v["functions"][0];
    assert_eq!(f["bdf"], "0000:43:00.0");
    assert_eq!(
        (f["link"]["max_width"].as_u64(), f["link"]["current_width"].as_u64()),
        (Some(4), Some(4))
    );
}

/// Held-out pastes with faults: exit 3, each fault once at its link; a paste stripped of its
/// indentation still gives its link (information: its port is not in the paste), exit 0.
#[test]
fn held_out_faults_exit_3_at_their_link() {
    let warnings = |v: &Value| -> Vec<(String, String)> {
        v["findings"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|f| f["severity"] != "info")
            .map(|f| {
                (
                    f["kind"].as_str().unwrap().to_string(),
                    f["limited_by"].as_str().unwrap_or("").to_string(),
                )
            })
            .collect()
    };
    let (code, v) = check_json("held-out/aurora-r7-gtx1070-x8-double-spaced.txt");
    assert_eq!(code, Some(3));
    assert_eq!(
        warnings(&v),
        [("link_width_downgraded".to_string(), "0000:01:00.0".to_string())]
    );
    let (code, v) = check_json("held-out/mt7925-wifi-cmpltto-mail-wrapped.txt");
    assert_eq!(code, Some(3));
    assert_eq!(
        warnings(&v),
        [("aer_uncorrectable".to_string(), "0000:73:00.0".to_string())]
    );
    let (code, v) = check_json("held-out/qlogic-iba7322-stripped-indent.txt");
    assert_eq!(code, Some(0));
    let f = &v["findings"][0];
    assert_eq!(
        (f["kind"].as_str(), f["severity"].as_str()),
        (Some("link_width_downgraded"), Some("info"))
    );
    let hop = &v["functions"][0]["path"][0];
    assert_eq!(
        (hop["current_width"].as_u64(), hop["capable_width"].as_u64()),
        (Some(4), Some(8))
    );
}
