//! `check --wake` on a fixture host: an NVMe drive whose namespace is a regular file (read for
//! real, through the built-in direct reader; a watcher thread stands for the drive's link,
//! raising it while the namespace is open), a GPU whose load the caller supplies, and devices
//! with no load. What is real: the reads, the re-reading of the link files while the device
//! works, the verdicts and the findings they amend; what is not: a device whose link speed
//! follows its load (the tests move the files).
#![cfg(target_os = "linux")]

use pcie_health::fixture::{self, link, root_port, Func};
use pcie_health::{check, wake, Kind, Options, Report, Severity, WakeOptions};
use pcie_sysfs::{Bdf, PortType};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

struct Tree(PathBuf);

impl Drop for Tree {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// NVMe 31:00.0 at Gen1 x4 of Gen4 (nvme0n1: an 8 MiB file at ROOT/dev/nvme0n1), a GPU 41:00.0
/// idle at Gen1 x16 of Gen5, a NIC 51:00.0 at Gen3 x8 of Gen4.
fn host(tag: &str) -> Tree {
    let root = std::env::temp_dir().join(format!("pcie-health-wake-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    std::fs::create_dir_all(root.join("dev")).unwrap();
    let nvme = link(2.5, 4, 16.0, 4);
    root_port("0000:30:02.0", 0, link(16.0, 4, 16.0, 4), 0x31)
        .write(&root, &[])
        .unwrap();
    Func::new("0000:31:00.0", 0x144d, 0xa80a, 0x010802, PortType::Endpoint, 0)
        .link(nvme)
        .driver("nvme")
        .write(&root, &["0000:30:02.0"])
        .unwrap();
    fixture::block_device(&root, "0000:31:00.0", "nvme0n1", 0, 0).unwrap();
    std::fs::write(root.join("dev/nvme0n1"), vec![0x5a; 8 << 20]).unwrap();
    root_port("0000:40:02.0", 0, link(32.0, 16, 32.0, 16), 0x41)
        .write(&root, &[])
        .unwrap();
    Func::new("0000:41:00.0", 0x10de, 0x2330, 0x030200, PortType::Endpoint, 0)
        .link(link(2.5, 16, 32.0, 16))
        .driver("nvidia")
        .write(&root, &["0000:40:02.0"])
        .unwrap();
    root_port("0000:50:02.0", 0, link(16.0, 8, 16.0, 8), 0x51)
        .write(&root, &[])
        .unwrap();
    Func::new("0000:51:00.0", 0x15b3, 0x101d, 0x020000, PortType::Endpoint, 0)
        .link(link(8.0, 8, 16.0, 8))
        .write(&root, &["0000:50:02.0"])
        .unwrap();
    fixture::numa_nodes(&root, &["0-31"]).unwrap();
    Tree(root)
}

fn speed_file(root: &Path, bdf: &str) -> PathBuf {
    pcie_sysfs::PciDevice::read(root, bdf.parse().unwrap())
        .unwrap()
        .dir()
        .join("current_link_speed")
}

fn put(p: &Path, text: &str) {
    let tmp = p.with_extension("tmp");
    std::fs::write(&tmp, text).unwrap();
    std::fs::rename(&tmp, p).unwrap();
}

/// Whether this process holds `file` open (the link's stand-in watches the drive's reads).
fn open_here(file: &Path) -> bool {
    std::fs::read_dir("/proc/self/fd")
        .into_iter()
        .flatten()
        .flatten()
        .any(|e| std::fs::read_link(e.path()).is_ok_and(|t| t == file))
}

fn bdf(s: &str) -> Bdf {
    s.parse().unwrap()
}

fn opts<'a>(targets: &[&str], gpu: Option<pcie_health::GpuLoad<'a>>) -> WakeOptions<'a> {
    WakeOptions {
        targets: targets.iter().map(|t| bdf(t)).collect(),
        duration: Duration::from_millis(300),
        gpu,
    }
}

fn finding<'a>(r: &'a Report, at: &str) -> &'a pcie_health::Finding {
    r.findings
        .iter()
        .find(|f| f.bdf == bdf(at) && matches!(f.kind, Kind::LinkPowerSaving | Kind::LinkSpeedDowngraded))
        .unwrap()
}

#[test]
fn an_nvme_drive_read_directly_trains_to_its_best_and_its_finding_says_power_saving() {
    let t = host("nvme");
    let mut r = check(&t.0, &Options::default()).unwrap();
    assert_eq!(finding(&r, "0000:31:00.0").severity, Severity::Warning);
    // The drive's link: Gen4 while its namespace is open, Gen1 otherwise.
    let (speed, ns) = (speed_file(&t.0, "0000:31:00.0"), t.0.join("dev/nvme0n1"));
    let stop = Arc::new(AtomicBool::new(false));
    let watcher = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                put(
                    &speed,
                    if open_here(&ns) {
                        "16.0 GT/s PCIe\n"
                    } else {
                        "2.5 GT/s PCIe\n"
                    },
                );
                std::thread::sleep(Duration::from_millis(2));
            }
        })
    };
    wake(&t.0, &mut r, &opts(&[], None)).unwrap();
    stop.store(true, Ordering::Relaxed);
    watcher.join().unwrap();
    // Default targets: the devices with a slow link at a lower speed (the NVMe drive, the GPU
    // and the NIC), each answered.
    let woken: Vec<(String, &str)> = r.wake.iter().map(|w| (w.bdf.to_string(), w.load)).collect();
    assert_eq!(
        woken,
        [
            ("0000:31:00.0".to_string(), "nvme"),
            ("0000:41:00.0".into(), "cuda"),
            ("0000:51:00.0".into(), "none")
        ]
    );
    let w = &r.wake[0];
    assert_eq!(w.trains, Some(true), "{w:?}");
    assert_eq!((w.loaded_gts, w.loaded_width), (Some(16.0), Some(4)));
    assert_eq!(w.verdict, "trains to Gen4 x4 under load");
    let done = w.done.as_deref().unwrap();
    assert!(done.starts_with("read ") && done.contains("dev/nvme0n1"), "{done}");
    let f = finding(&r, "0000:31:00.0");
    assert_eq!((f.kind, f.severity), (Kind::LinkPowerSaving, Severity::Info));
    assert!(
        f.message
            .ends_with("it trains to Gen4 x4 under load: power saving, not a fault"),
        "{}",
        f.message
    );
    // No GPU load in this call: said, and its finding left as it was.
    let gpu = &r.wake[1];
    assert_eq!(
        (gpu.trains, gpu.verdict.as_str()),
        (None, "not loaded (cuda): this build loads no GPU driver")
    );
    assert_eq!(finding(&r, "0000:41:00.0").kind, Kind::LinkPowerSaving);
    assert!(r.wake[2]
        .verdict
        .starts_with("no built-in load for this device (class 020000): run its own workload"));
}

#[test]
fn a_link_that_stays_slow_under_load_is_a_fault() {
    let t = host("stays");
    let mut r = check(&t.0, &Options::default()).unwrap();
    let before = finding(&r, "0000:41:00.0").clone();
    assert_eq!((before.kind, before.severity), (Kind::LinkPowerSaving, Severity::Info));
    // The GPU's load ran, and its link stayed at Gen1.
    let gpu = |b: Bdf, d: Duration| -> Result<String, String> {
        assert_eq!(b, bdf("0000:41:00.0"));
        std::thread::sleep(d);
        Ok("copied 4.0 GiB".into())
    };
    wake(&t.0, &mut r, &opts(&["0000:41:00.0", "0000:31:00.0"], Some(&gpu))).unwrap();
    let w = &r.wake[0];
    assert_eq!(
        (w.trains, w.verdict.as_str()),
        (Some(false), "stays at Gen1 x16 under load")
    );
    let f = finding(&r, "0000:41:00.0");
    assert_eq!((f.kind, f.severity), (Kind::LinkSpeedDowngraded, Severity::Warning));
    assert!(
        f.message
            .ends_with("--wake (copied 4.0 GiB): it stays at Gen1 x16 under load: not power saving, a fault"),
        "{}",
        f.message
    );
    // The warning sorts first now.
    assert_eq!(r.findings[0].bdf, bdf("0000:41:00.0"));
    // The drive read for real and stayed at Gen1 too.
    assert_eq!(r.wake[1].verdict, "stays at Gen1 x4 under load");
    assert!(r.needs_attention());
}

#[test]
fn a_gpu_that_trains_and_what_cannot_be_woken() {
    let t = host("gpu");
    let mut r = check(&t.0, &Options::default()).unwrap();
    let speed = speed_file(&t.0, "0000:41:00.0");
    let gpu = move |_: Bdf, d: Duration| -> Result<String, String> {
        put(&speed, "32.0 GT/s PCIe\n");
        std::thread::sleep(d);
        put(&speed, "2.5 GT/s PCIe\n");
        Ok("copied".into())
    };
    wake(&t.0, &mut r, &opts(&["0000:41:00.0"], Some(&gpu))).unwrap();
    assert_eq!(r.wake[0].verdict, "trains to Gen5 x16 under load");
    assert_eq!(finding(&r, "0000:41:00.0").severity, Severity::Info);
    // A driver that cannot load: said, the finding unchanged.
    let mut r = check(&t.0, &Options::default()).unwrap();
    let none = |_: Bdf, _: Duration| -> Result<String, String> { Err("no NVIDIA driver found".into()) };
    wake(&t.0, &mut r, &opts(&["0000:41:00.0"], Some(&none))).unwrap();
    assert_eq!(r.wake[0].error.as_deref(), Some("no NVIDIA driver found"));
    assert!(finding(&r, "0000:41:00.0").message.ends_with("check again under load"));
    // A function not in the tree.
    let e = wake(&t.0, &mut r, &opts(&["0000:99:00.0"], None)).unwrap_err();
    assert_eq!(e, "0000:99:00.0: no such PCI function in this tree");
    // A FIFO where the namespace should be is refused without being opened.
    let ns = t.0.join("dev/nvme0n1");
    std::fs::remove_file(&ns).unwrap();
    let made = std::process::Command::new("mkfifo").arg(&ns).status().unwrap();
    assert!(made.success());
    let mut r = check(&t.0, &Options::default()).unwrap();
    wake(&t.0, &mut r, &opts(&["0000:31:00.0"], None)).unwrap();
    assert_eq!(
        r.wake[0].error.as_deref(),
        Some(format!("{}: not a block device", ns.display()).as_str())
    );
}
