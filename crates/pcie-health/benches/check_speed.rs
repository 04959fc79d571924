//! `cargo bench -p pcie-health --bench check_speed`: `check` on a 10,000-function host (2,500
//! root ports, each with a switch and a device below it, every function with link files, power
//! and AER files and a 4 KiB config space), written to a memory file system where there is
//! one. Prints the fastest and the median of several runs; the target is under 1 s.

use pcie_health::fixture::{self, Func};
use pcie_health::{check, Options};
use pcie_sysfs::PortType;
use std::time::Instant;

const BRANCHES: usize = 2_500;
const PER_DOMAIN: usize = 80;
const RUNS: usize = 7;

/// This process's CPU time (user + system) in seconds, from `/proc/self/stat` (clock ticks of
/// 1/100 s); 0 where there is no procfs. Wall time on a loaded machine says little.
fn cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .map_or("", |(_, r)| r)
        .split_whitespace()
        .collect();
    let ticks = |i: usize| fields.get(i).and_then(|f| f.parse::<f64>().ok()).unwrap_or(0.0);
    (ticks(11) + ticks(12)) / 100.0
}

fn main() {
    let shm = std::path::Path::new("/dev/shm");
    let base = if shm.is_dir() {
        shm.to_path_buf()
    } else {
        std::env::temp_dir()
    };
    let root = base.join(format!("pcie-health-bench-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    let written = Instant::now();
    fixture::numa_nodes(&root, &["0-31", "32-63"]).unwrap();
    let l = fixture::link(16.0, 16, 16.0, 16);
    for k in 0..BRANCHES {
        let (domain, i) = (k / PER_DOMAIN, k % PER_DOMAIN);
        let (numa, bus) = ((k % 2) as i32, 1 + 3 * i as u8);
        let rp = format!("{domain:04x}:00:{:02x}.{}", i / 8, i % 8);
        let (usp, dsp, ep) = (
            format!("{domain:04x}:{bus:02x}:00.0"),
            format!("{domain:04x}:{:02x}:00.0", bus + 1),
            format!("{domain:04x}:{:02x}:00.0", bus + 2),
        );
        fixture::root_port(&rp, numa, l, bus)
            .buses(bus, bus + 2)
            .write(&root, &[])
            .unwrap();
        Func::new(&usp, 0x1000, 0xc010, 0x060400, PortType::UpstreamPort, numa)
            .link(l)
            .buses(bus + 1, bus + 2)
            .write(&root, &[&rp])
            .unwrap();
        Func::new(&dsp, 0x1000, 0xc010, 0x060400, PortType::DownstreamPort, numa)
            .link(l)
            .buses(bus + 2, bus + 2)
            .write(&root, &[&rp, &usp])
            .unwrap();
        let dev = Func::new(&ep, 0x10de, 0x20b5, 0x030200, PortType::Endpoint, numa)
            .link(l)
            .config(|c| c.aer())
            .attr("local_cpulist", if numa == 0 { "0-31" } else { "32-63" });
        fixture::aer_correctable(dev, "BadDLLP", k as u64 % 3)
            .write(&root, &[&rp, &usp, &dsp])
            .unwrap();
    }
    let written = written.elapsed();
    let (mut times, mut cpu) = (Vec::new(), Vec::new());
    let mut functions = 0;
    for _ in 0..RUNS {
        let (t, c) = (Instant::now(), cpu_seconds());
        let r = check(&root, &Options::default()).unwrap();
        times.push(t.elapsed().as_secs_f64());
        cpu.push(cpu_seconds() - c);
        functions = r.functions.len();
    }
    times.sort_by(f64::total_cmp);
    cpu.sort_by(f64::total_cmp);
    println!(
        "check on {functions} functions ({BRANCHES} root port -> switch -> device paths), {RUNS} runs: \
         wall fastest {:.0} ms, median {:.0} ms; CPU (user+sys) fastest {:.0} ms, median {:.0} ms \
         (tree written in {:.1} s, at {})",
        times[0] * 1e3,
        times[RUNS / 2] * 1e3,
        cpu[0] * 1e3,
        cpu[RUNS / 2] * 1e3,
        written.as_secs_f64(),
        base.display()
    );
    std::fs::remove_dir_all(&root).unwrap();
}
