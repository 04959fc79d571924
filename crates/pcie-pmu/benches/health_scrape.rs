//! The exporter's link health on a 10,000-function tree: 1,250 root ports (Gen4 x16, 64 a PCI
//! domain), each with a seven-function device below it (one function in ten trained x8),
//! every function with link files, a 4 KiB config space with the PCIe and AER capabilities
//! and AER files. Times the check ([`pcie_health::check`], reading the tree and pricing its
//! findings), the exposition of its result ([`pcie_pmu::exposition::health`]), and both as
//! `pmu serve` refreshes them ([`pcie_pmu::exposition::check_health`]); prints the median and
//! the worst of the runs, in CPU time of the process (all its threads: the check reads a tree
//! this large on several) and in wall-clock time.
//!
//! `cargo bench -p pcie-pmu --bench health_scrape [-- RUNS]`

use pcie_health::fixture::{link, root_port, Func};
use pcie_pmu::exposition::{check_health, health};
use pcie_sysfs::PortType;
use std::path::Path;
use std::time::{Duration, Instant};

const PORTS: u32 = 1250;
const FUNCTIONS: u32 = 7;

fn tree(root: &Path) {
    for i in 0..PORTS {
        let (domain, k) = (i / 64, i % 64);
        let port = format!("{domain:04x}:00:{:02x}.{}", k % 32, k / 32);
        let bus = k as u8 + 1;
        root_port(&port, (domain % 2) as i32, link(16.0, 16, 16.0, 16), bus)
            .write(root, &[])
            .expect("writes");
        let width = if i % 10 == 0 { 8 } else { 16 };
        for f in 0..FUNCTIONS {
            let bdf = format!("{domain:04x}:{bus:02x}:00.{f}");
            Func::new(&bdf, 0x15b3, 0x101d, 0x020000, PortType::Endpoint, (domain % 2) as i32)
                .link(link(16.0, width, 16.0, 16))
                .config(|c| c.mps(512, 256).aer())
                .driver("mlx5_core")
                .write(root, &[&port])
                .expect("writes");
        }
    }
    pcie_health::fixture::numa_nodes(root, &["0-63", "64-127"]).expect("writes");
}

/// CPU time of this process, every thread's (the check reads a large tree on several).
fn cpu() -> Duration {
    let mut t = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `t` is a valid timespec for the call to fill.
    unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut t) };
    Duration::new(t.tv_sec as u64, t.tv_nsec as u32)
}

/// Runs `f`, adding its (CPU, wall) time to `into`.
fn timed<T>(into: &mut Vec<(Duration, Duration)>, f: impl FnOnce() -> T) -> T {
    let (c, w) = (cpu(), Instant::now());
    let out = f();
    into.push((cpu() - c, w.elapsed()));
    out
}

fn show(what: &str, v: &[(Duration, Duration)]) {
    let ms = |mut x: Vec<Duration>| {
        x.sort();
        (x[x.len() / 2].as_secs_f64() * 1e3, x[x.len() - 1].as_secs_f64() * 1e3)
    };
    let (c, w) = (ms(v.iter().map(|t| t.0).collect()), ms(v.iter().map(|t| t.1).collect()));
    println!(
        "{what}: CPU median {:.1} ms (worst {:.1}), wall median {:.1} ms (worst {:.1})",
        c.0, c.1, w.0, w.1
    );
}

fn main() {
    let runs: usize = std::env::args().skip(1).find_map(|a| a.parse().ok()).unwrap_or(7);
    let root = std::env::temp_dir().join(format!("pcie-pmu-health-scrape-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    let built = Instant::now();
    tree(&root);
    println!(
        "tree: {} functions written in {:.1} s",
        PORTS * (FUNCTIONS + 1),
        built.elapsed().as_secs_f64()
    );
    let (mut checks, mut renders, mut refreshes) = (Vec::new(), Vec::new(), Vec::new());
    let mut bytes = 0;
    for _ in 0..runs {
        let checked = timed(&mut checks, || {
            pcie_health::check(&root, &pcie_health::Options::default())
        });
        let r = checked.as_ref().expect("the tree checks");
        assert_eq!(r.functions.len() as u32, PORTS * (FUNCTIONS + 1));
        bytes = timed(&mut renders, || health(&checked, 0.0).len());
        let (text, err) = timed(&mut refreshes, || check_health(&root, false));
        assert!(err.is_none() && text.len() >= bytes);
    }
    show("check (read + findings)", &checks);
    show(&format!("exposition ({:.1} MB of text)", bytes as f64 / 1e6), &renders);
    show("refresh (both, as pmu serve does every -I)", &refreshes);
    let _ = std::fs::remove_dir_all(&root);
}
