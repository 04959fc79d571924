//! `check --wake` end to end: a GPU woken through the stand-in CUDA driver (which raises the
//! fixture's link speed while it copies, as a GPU leaves its idle speed), no driver at all,
//! an NVMe drive whose namespace is a regular file (read for real; its link stays at Gen1: a
//! fault), bad targets; and AtomicOps and peer-to-peer routing from an `lspci -vvv` dump.

use crate::common::{pcieperf, refused, stderr, stdout};
use pcie_health::fixture::{self, link, root_port, Func};
use pcie_sysfs::PortType;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The fake GPU's address (fake_driver/libcuda.rs: domain c0de, bus c1) below a Gen5 x16 root
/// port, idle at Gen1; an NVMe drive 31:00.0 at Gen1 x4 of Gen4 whose namespace is
/// ROOT/dev/nvme0n1 (a regular file of 4 MiB).
fn host(tag: &str) -> (pcie_pmu::fixture::Tree, PathBuf) {
    let t = pcie_pmu::fixture::Tree::new(tag);
    let root = t.path();
    root_port("c0de:c0:01.0", 0, link(32.0, 16, 32.0, 16), 0xc1)
        .write(root, &[])
        .unwrap();
    Func::new("c0de:c1:00.0", 0x10de, 0x2330, 0x030200, PortType::Endpoint, 0)
        .link(link(2.5, 16, 32.0, 16))
        .driver("nvidia")
        .write(root, &["c0de:c0:01.0"])
        .unwrap();
    root_port("0000:30:02.0", 0, link(16.0, 4, 16.0, 4), 0x31)
        .write(root, &[])
        .unwrap();
    Func::new("0000:31:00.0", 0x144d, 0xa80a, 0x010802, PortType::Endpoint, 0)
        .link(link(2.5, 4, 16.0, 4))
        .driver("nvme")
        .write(root, &["0000:30:02.0"])
        .unwrap();
    fixture::block_device(root, "0000:31:00.0", "nvme0n1", 0, 0).unwrap();
    std::fs::create_dir_all(root.join("dev")).unwrap();
    std::fs::write(root.join("dev/nvme0n1"), vec![0u8; 4 << 20]).unwrap();
    fixture::numa_nodes(root, &["0-31"]).unwrap();
    let speed = pcie_sysfs::PciDevice::read(root, "c0de:c1:00.0".parse().unwrap())
        .unwrap()
        .dir()
        .join("current_link_speed");
    (t, speed)
}

fn with_driver(dir: &Path, env: &[(&str, &Path)], args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_pcieperf"))
        .args(args)
        .env("LD_LIBRARY_PATH", dir)
        .envs(env.iter().map(|(k, v)| (*k, *v)))
        .output()
        .expect("runs")
}

#[test]
fn a_gpu_woken_through_the_cuda_driver_trains_and_its_idle_speed_is_power_saving() {
    let (t, speed) = host("wake-gpu");
    let root = t.path().to_str().unwrap();
    let dir = crate::cuda_fake_cli::driver_dir();
    let o = with_driver(
        dir,
        &[("FAKE_CUDA_BUSY_LINK", &speed)],
        &["check", "--sysfs", root, "--wake", "c0de:c1:00.0", "--format", "json"],
    );
    // 3: the NVMe drive's slow link (not woken here) is a warning.
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    let w = &v["wake"][0];
    assert_eq!(
        (w["bdf"].as_str(), w["load"].as_str()),
        (Some("c0de:c1:00.0"), Some("cuda"))
    );
    assert_eq!(w["verdict"], "trains to Gen5 x16 under load", "{w}");
    assert_eq!(
        (w["idle_gts"].as_f64(), w["loaded_gts"].as_f64()),
        (Some(2.5), Some(32.0))
    );
    assert!(w["done"].as_str().unwrap().starts_with("copied "), "{w}");
    let f = v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["bdf"] == "c0de:c1:00.0")
        .unwrap();
    assert_eq!(
        (f["kind"].as_str(), f["severity"].as_str()),
        (Some("link_power_saving"), Some("info"))
    );
    assert!(
        f["message"].as_str().unwrap().ends_with("power saving, not a fault"),
        "{f}"
    );
    // The driver let go of the GPU: its link is idle again.
    assert_eq!(std::fs::read_to_string(&speed).unwrap(), "2.5 GT/s PCIe\n");

    // Without a driver: said, and the finding still asks for a check under load.
    let empty = crate::common::scratch_dir("wake-no-driver");
    let o = with_driver(&empty, &[], &["check", "--sysfs", root, "--wake", "c0de:c1:00.0"]);
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    let text = stdout(&o);
    assert!(
        text.contains("Under load (--wake")
            && text.contains("c0de:c1:00.0: not loaded (cuda): no NVIDIA driver found (libcuda.so.1)"),
        "{text}"
    );
}

#[test]
fn an_nvme_drive_that_stays_at_gen1_while_read_is_a_fault_in_every_format() {
    let (t, _) = host("wake-nvme");
    let root = t.path().to_str().unwrap();
    let args = |format: &'static str| ["check", "--sysfs", root, "--wake", "0000:31:00.0", "--format", format];
    let o = pcieperf(&args("json"));
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["wake"].as_array().unwrap().len(), 1);
    let w = &v["wake"][0];
    assert_eq!(
        (w["verdict"].as_str(), w["trains"].as_bool()),
        (Some("stays at Gen1 x4 under load"), Some(false))
    );
    let done = w["done"].as_str().unwrap();
    assert!(done.starts_with("read ") && done.contains("dev/nvme0n1"), "{done}");
    // The namespace is read, never written.
    assert_eq!(std::fs::read(t.path().join("dev/nvme0n1")).unwrap(), vec![0u8; 4 << 20]);
    let f = &v["findings"][0];
    assert_eq!(
        (f["kind"].as_str(), f["severity"].as_str()),
        (Some("link_speed_downgraded"), Some("warning"))
    );
    assert!(f["message"]
        .as_str()
        .unwrap()
        .contains("stays at Gen1 x4 under load: not power saving, a fault"));
    let o = pcieperf(&args("table"));
    assert!(
        stdout(&o).contains("  0000:31:00.0: stays at Gen1 x4 under load (read "),
        "{}",
        stdout(&o)
    );
    let o = pcieperf(&args("csv"));
    let csv = stdout(&o);
    assert!(
        csv.lines()
            .any(|l| l.starts_with("wake,,,,\"stays at Gen1 x4 under load (read ")),
        "{csv}"
    );
}

#[test]
fn bad_wake_targets_are_refused_by_name() {
    let (t, _) = host("wake-bad");
    let root = t.path().to_str().unwrap();
    let e = refused(&["check", "--sysfs", root, "--wake", "zz:1"]);
    assert!(e.contains("--wake \"zz:1\": expected a PCI address"), "{e}");
    let e = refused(&["check", "--sysfs", root, "--wake", "0000:99:00.0"]);
    assert!(
        e.contains("--wake 0000:99:00.0: no such PCI function in this tree"),
        "{e}"
    );
    let e = refused(&["check", "--lspci", "-", "--wake"]);
    assert!(e.contains("--wake"), "{e}");
}

/// One function of an `lspci -vvv -nn` dump: its header, and its Express capability with the
/// given AtomicOps lines (and ACS on downstream ports).
fn dump_function(
    header: &str,
    bus: Option<(u8, u8, u8)>,
    kind: &str,
    atomics: (&str, &str),
    acs: Option<&str>,
) -> String {
    let mut s = format!("{header}\n\tStatus: Cap+ 66MHz- UDF- FastB2B- ParErr- DEVSEL=fast\n");
    if let Some((p, sec, sub)) = bus {
        s += &format!("\tBus: primary={p:02x}, secondary={sec:02x}, subordinate={sub:02x}, sec-latency=0\n");
    }
    s += &format!(
        "\tCapabilities: [68] Express (v2) {kind}, MSI 00\n\t\tDevCap:\tMaxPayload 512 bytes, PhantFunc 0\n\t\t\tExtTag+ RBE+\n\
         \t\tDevCtl:\tCorrErr- NonFatalErr- FatalErr- UnsupReq-\n\t\t\tRlxdOrd+ ExtTag+ PhantFunc- AuxPwr- NoSnoop+\n\
         \t\t\tMaxPayload 256 bytes, MaxReadReq 512 bytes\n\t\tLnkCap:\tPort #0, Speed 16GT/s, Width x16, ASPM L1, Exit Latency L1 <4us\n\
         \t\tLnkCtl:\tASPM Disabled; RCB 64 bytes, Disabled- CommClk+\n\t\tLnkSta:\tSpeed 16GT/s, Width x16\n\
         \t\tDevCap2: Completion Timeout: Range ABCD, TimeoutDis+ NROPrPrP- LTR+\n\t\t\t 10BitTagComp+ 10BitTagReq- OBFF Not Supported, ExtFmt+ EETLPPrefix-\n\
         \t\t\t AtomicOpsCap: {}\n\t\tDevCtl2: Completion Timeout: 50us to 50ms, TimeoutDis- LTR- 10BitTagReq- OBFF Disabled,\n\t\t\t AtomicOpsCtl: {}\n",
        atomics.0, atomics.1
    );
    if let Some(ctl) = acs {
        s += &format!(
            "\tCapabilities: [220 v1] Access Control Services\n\t\tACSCap:\tSrcValid+ TransBlk+ ReqRedir+ CmpltRedir+ UpstreamFwd+ EgressCtrl- DirectTrans-\n\t\tACSCtl:\t{ctl}\n"
        );
    }
    s + "\n"
}

#[test]
fn an_lspci_dump_shows_where_atomics_stop_and_which_gpus_acs_sends_through_the_root_complex() {
    let redirect = "SrcValid+ TransBlk- ReqRedir+ CmpltRedir+ UpstreamFwd+ EgressCtrl- DirectTrans-";
    let mut dump = dump_function(
        "00:01.1 PCI bridge [0604]: Advanced Micro Devices, Inc. [AMD] Starship/Matisse GPP Bridge [1022:1483]",
        Some((0, 1, 4)),
        "Root Port (Slot+)",
        ("Routing- 32bit+ 64bit+ 128bitCAS-", "ReqEn+ EgressBlck-"),
        None,
    );
    dump += &dump_function(
        "01:00.0 PCI bridge [0604]: Broadcom / LSI PEX890xx PCIe Gen 5 Switch [1000:c030] (rev b0)",
        Some((1, 2, 4)),
        "Upstream Port",
        ("Routing+ 32bit- 64bit- 128bitCAS-", "EgressBlck-"),
        None,
    );
    for (dp, bus, routing) in [("02:00.0", 3u8, "Routing-"), ("02:01.0", 4, "Routing+")] {
        dump += &dump_function(
            &format!("{dp} PCI bridge [0604]: Broadcom / LSI PEX890xx PCIe Gen 5 Switch [1000:c030] (rev b0)"),
            Some((2, bus, bus)),
            "Downstream Port (Slot+)",
            (&format!("{routing} 32bit- 64bit- 128bitCAS-"), "EgressBlck-"),
            Some(redirect),
        );
    }
    for bus in ["03", "04"] {
        dump += &dump_function(
            &format!("{bus}:00.0 VGA compatible controller [0300]: Advanced Micro Devices, Inc. [AMD/ATI] Navi 31 [Radeon Pro W7900] [1002:7448]"),
            None,
            "Legacy Endpoint",
            ("32bit- 64bit- 128bitCAS-", "ReqEn-"),
            None,
        );
    }
    let dir = crate::common::scratch_dir("wake-lspci");
    let file = dir.join("lspci.txt");
    std::fs::write(&file, &dump).unwrap();
    let o = pcieperf(&["check", "--lspci", file.to_str().unwrap(), "--format", "json"]);
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    let fs = v["findings"].as_array().unwrap();
    let atomics: Vec<&Value> = fs.iter().filter(|f| f["kind"] == "atomics_blocked").collect();
    assert_eq!(atomics.len(), 1, "{atomics:#?}");
    assert_eq!(
        (atomics[0]["bdf"].as_str(), atomics[0]["limited_by"].as_str()),
        (Some("0000:03:00.0"), Some("0000:02:00.0"))
    );
    let gpu4 = v["functions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["bdf"] == "0000:04:00.0")
        .unwrap();
    assert_eq!(gpu4["atomics"]["reach_root"], true);
    let pairs = v["p2p"].as_array().unwrap();
    assert_eq!(pairs.len(), 1, "{pairs:#?}");
    assert_eq!(
        (
            pairs[0]["a"].as_str(),
            pairs[0]["b"].as_str(),
            pairs[0]["route"].as_str()
        ),
        (Some("0000:03:00.0"), Some("0000:04:00.0"), Some("root_complex"))
    );
    let p2p = fs.iter().find(|f| f["kind"] == "p2p_redirected").unwrap();
    assert_eq!(p2p["lost_pct"].as_f64(), Some(50.0));
    assert!(
        p2p["message"]
            .as_str()
            .unwrap()
            .contains("0000:00:01.1 \u{2194} 0000:01:00.0 [1000:c030] (Gen4 x16)"),
        "{p2p}"
    );
    let table = stdout(&pcieperf(&["check", "--lspci", file.to_str().unwrap()]));
    assert!(table.contains("0000:03:00.0: with 0000:04:00.0 below switch 0000:01:00.0: through the root complex (ACS ReqRedir+ at 0000:02:00.0, 0000:02:01.0)"), "{table}");
}

#[test]
fn a_flapping_link_watched_with_i_is_reported_once_in_every_format() {
    let (t, speed) = host("watch-flap");
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let flipper = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            let start = std::time::Instant::now();
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let gen5 = (start.elapsed().as_millis() / 150) % 2 == 1;
                let tmp = speed.with_extension("tmp");
                std::fs::write(&tmp, if gen5 { "32.0 GT/s PCIe\n" } else { "2.5 GT/s PCIe\n" }).unwrap();
                std::fs::rename(&tmp, &speed).unwrap();
                std::thread::sleep(std::time::Duration::from_millis(3));
            }
        })
    };
    let root = t.path().to_str().unwrap();
    let json = pcieperf(&[
        "check",
        "--sysfs",
        root,
        "-I",
        "100",
        "--duration",
        "1.2",
        "--format",
        "json",
    ]);
    let table = pcieperf(&["check", "--sysfs", root, "-I", "100", "--duration", "1.2"]);
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    flipper.join().unwrap();
    let v: Value = serde_json::from_str(&stdout(&json)).unwrap();
    let changes = v["link_changes"].as_array().unwrap();
    assert_eq!(changes.len(), 1, "{changes:#?}");
    assert_eq!(changes[0]["link"], "c0de:c0:01.0 \u{2194} c0de:c1:00.0 [10de:2330]");
    assert!(changes[0]["changes"].as_u64().unwrap() >= 3, "{changes:#?}");
    let unstable: Vec<&Value> = v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["kind"] == "link_unstable")
        .collect();
    assert_eq!((unstable.len(), unstable[0]["severity"].as_str()), (1, Some("warning")));
    let text = stdout(&table);
    assert!(
        text.contains("Links whose speed or width changed while watched") && text.contains("  c0de:c1:00.0: "),
        "{text}"
    );
}
