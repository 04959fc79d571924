//! Links watched with `-I`: a link whose speed flips back and forth is `link_unstable`, and
//! so is one whose width drops while its NVMe drive reads; a GPU and its audio function's
//! shared link is watched (and reported) once.

use pcie_health::fixture::{self, link, root_port, Func};
use pcie_health::{check, Kind, Options, Report, Severity};
use pcie_sysfs::PortType;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

struct Tree(PathBuf);

impl Drop for Tree {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Root port 30:02.0 -> NVMe 31:00.0 (Gen4 x4, with block device nvme0n1); root port
/// 40:02.0 -> GPU 41:00.0 and its audio function 41:00.1 (Gen4 x16).
fn host(tag: &str) -> (Tree, PathBuf) {
    let root = std::env::temp_dir().join(format!("pcie-health-stability-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    std::fs::create_dir_all(&root).unwrap();
    let x4 = link(16.0, 4, 16.0, 4);
    root_port("0000:30:02.0", 0, x4, 0x31).write(&root, &[]).unwrap();
    Func::new("0000:31:00.0", 0x144d, 0xa80a, 0x010802, PortType::Endpoint, 0)
        .link(x4)
        .driver("nvme")
        .write(&root, &["0000:30:02.0"])
        .unwrap();
    let stat = fixture::block_device(&root, "0000:31:00.0", "nvme0n1", 0, 0).unwrap();
    let x16 = link(16.0, 16, 16.0, 16);
    root_port("0000:40:02.0", 0, x16, 0x41).write(&root, &[]).unwrap();
    for (f, class) in [("0000:41:00.0", 0x030000), ("0000:41:00.1", 0x040300)] {
        Func::new(f, 0x10de, 0x2bb1, class, PortType::Endpoint, 0)
            .link(x16)
            .write(&root, &["0000:40:02.0"])
            .unwrap();
    }
    fixture::numa_nodes(&root, &["0-31"]).unwrap();
    (Tree(root), stat)
}

fn attr(root: &Path, bdf: &str, name: &str) -> PathBuf {
    let dev = pcie_sysfs::PciDevice::read(root, bdf.parse().unwrap()).unwrap();
    dev.dir().join(name)
}

/// Writes a file whole (renamed into place), as the kernel never shows one half written.
fn put(p: &Path, text: &str) {
    let tmp = p.with_extension("tmp");
    std::fs::write(&tmp, text).unwrap();
    std::fs::rename(&tmp, p).unwrap();
}

/// The check watched every 100 ms for 1 s while `step(elapsed)` changes the tree.
fn watched(t: &Tree, step: impl Fn(Duration) + Send + 'static) -> Report {
    let stop = Arc::new(AtomicBool::new(false));
    let mover = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            let start = Instant::now();
            while !stop.load(Ordering::Relaxed) {
                step(start.elapsed());
                std::thread::sleep(Duration::from_millis(5));
            }
        })
    };
    let sampling = pcie_health::Sampling {
        interval: Duration::from_millis(100),
        duration: Duration::from_secs(1),
    };
    let r = check(
        &t.0,
        &Options {
            sampling: Some(sampling),
            ..Options::default()
        },
    );
    stop.store(true, Ordering::Relaxed);
    mover.join().unwrap();
    r.unwrap()
}

#[test]
fn a_link_that_flips_speed_every_200_ms_flaps() {
    let (t, _) = host("flap");
    let speed = attr(&t.0, "0000:41:00.0", "current_link_speed");
    let r = watched(&t, move |e| {
        let gen1 = (e.as_millis() / 200) % 2 == 1;
        put(&speed, if gen1 { "2.5 GT/s PCIe\n" } else { "16.0 GT/s PCIe\n" });
    });
    let changes: Vec<_> = r.link_changes.iter().map(|c| (c.bdf.to_string(), c.changes)).collect();
    assert_eq!(
        changes.len(),
        1,
        "the GPU's link once, not its audio function's: {changes:?}"
    );
    let c = &r.link_changes[0];
    // Ten readings 100 ms apart of a speed that flips every 200 ms: about five changes.
    assert!((3..=7).contains(&c.changes), "{c:?}");
    assert_eq!((c.lowest, c.highest), ((Some(2.5), Some(16)), (Some(16.0), Some(16))));
    assert_eq!(c.link, "0000:40:02.0 \u{2194} 0000:41:00.0 [10de:2bb1]");
    let f: Vec<_> = r.findings.iter().filter(|f| f.kind == Kind::LinkUnstable).collect();
    assert_eq!(f.len(), 1, "{f:#?}");
    assert_eq!(f[0].severity, Severity::Warning);
    assert!(
        f[0].message
            .starts_with("the link 0000:40:02.0 \u{2194} 0000:41:00.0 [10de:2bb1] changed speed or width")
            && f[0].message.contains("between Gen1 x16 and Gen4 x16"),
        "{}",
        f[0].message
    );
    assert_eq!(c.drops_while_busy, 0);
}

#[test]
fn a_width_drop_while_the_drive_reads_is_a_fault_and_one_change_alone_is_not_flapping() {
    let (t, stat) = host("drop");
    let width = attr(&t.0, "0000:31:00.0", "current_link_width");
    // The drive reads 2 GB/s (3.9 M sectors a second) throughout; its link drops to x2 at 450 ms.
    let r = watched(&t, move |e| {
        let sectors = (e.as_secs_f64() * 3_906_250.0) as u64;
        let tmp = stat.with_extension("tmp");
        fixture::write_block_stat(&tmp, sectors, 0).unwrap();
        std::fs::rename(&tmp, &stat).unwrap();
        if e >= Duration::from_millis(450) {
            put(&width, "2\n");
        }
    });
    let c = &r.link_changes[0];
    assert_eq!((c.changes, c.drops_while_busy), (1, 1), "{c:?}");
    let f: Vec<_> = r.findings.iter().filter(|f| f.kind == Kind::LinkUnstable).collect();
    assert_eq!(f.len(), 1, "{f:#?}");
    assert!(
        f[0].message.contains(
            "0000:30:02.0 \u{2194} 0000:31:00.0 [144d:a80a] dropped from Gen4 x4 to Gen4 x2 while its devices moved"
        ),
        "{}",
        f[0].message
    );
    assert!(!f[0].message.contains("changed speed or width"), "{}", f[0].message);
    // Unwatched, nothing is re-read.
    let r = check(&t.0, &Options::default()).unwrap();
    assert!(r.link_changes.is_empty());
}
