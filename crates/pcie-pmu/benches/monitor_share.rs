//! The monitor's own share of a core on the simulated Yitian 710, without the simulation:
//! 18 root ports × 2 payload events (Rx and Tx multiplexed on each port's counter), read every
//! 100 ms as `pmu stat -I 100` does (read, wrap-safe multiplex-scaled delta, one formatted row
//! per event), with workloads on every port that has a device (storage I/O, NIC traffic). Time spent
//! running the simulation (`sleep`) is measured apart and left out.
//!
//! `cargo bench -p pcie-pmu --bench monitor_share [-- SECONDS]`

use pcie_pmu::accumulate::gbps;
use pcie_pmu::sim::{PmuHostProfile, SimHost, Workload};
use pcie_pmu::{Accumulator, CounterSource};
use std::fmt::Write;
use std::time::{Duration, Instant};

fn main() {
    let secs: u64 = std::env::args().skip(1).find_map(|a| a.parse().ok()).unwrap_or(60);
    let profile = PmuHostProfile::load("yitian710-nvme").expect("built-in profile");
    // Every port with a device is busy: storage ports with fio-like jobs, NIC ports with
    // 50 Gb/s each way.
    let jobs: Vec<Workload> = profile
        .ports
        .iter()
        .filter_map(|p| profile.device_of(p).map(|d| (p, d)))
        .enumerate()
        .map(|(i, (p, d))| {
            let spec = if d.nic.is_some() {
                format!("port={},rx=50,tx=50", p.bdf)
            } else {
                let rw = ["read", "write", "readwrite"][i % 3];
                format!("port={},rw={rw},bs=128k,iodepth=32,numjobs=2", p.bdf)
            };
            Workload::parse(&profile, &spec).expect("valid workload")
        })
        .collect();
    let (sys, mut src) = SimHost::start(profile, &jobs, 1, false).expect("simulated host");
    let mut counters = Vec::new();
    for spec in [
        "dwc_rootport/rx_pcie_tlp_data_payload/",
        "dwc_rootport/tx_pcie_tlp_data_payload/",
    ] {
        for ev in sys.resolve_all(spec).expect("events resolve") {
            let id = src.open(&ev).expect("opens");
            counters.push((ev, id, Accumulator::new(64)));
        }
    }
    let (mut monitor, mut simulation) = (Duration::ZERO, Duration::ZERO);
    let mut out = String::new();
    let mut bytes = 0.0;
    let step = Duration::from_millis(100);
    for tick in 0..=secs * 10 {
        if tick > 0 {
            let t = Instant::now();
            src.sleep(step).expect("simulates");
            simulation += t.elapsed();
        }
        let t = Instant::now();
        out.clear();
        for (ev, id, acc) in counters.iter_mut() {
            if let Some(d) = acc.update(src.read(*id).expect("reads")) {
                let b = d.bytes(1.0).unwrap_or(0.0);
                bytes += b;
                let _ = writeln!(
                    out,
                    "{:>10.3}  {:<20}  {:<26}  {:>16}  {:>18.0}  {:>9.2}  {:>16.0}  {:>9.2}",
                    tick as f64 / 10.0,
                    ev.pmu,
                    ev.event.as_deref().unwrap_or(""),
                    d.raw,
                    d.scaled.unwrap_or(0.0),
                    d.running_pct(),
                    b,
                    gbps(b, 0.1)
                );
            }
        }
        std::hint::black_box(&out);
        monitor += t.elapsed();
    }
    println!(
        "{} counters on {} root ports, read every 100 ms for {secs} s of simulated time ({:.1} GB counted)",
        counters.len(),
        counters.len() / 2,
        bytes / 1e9
    );
    println!(
        "monitor: {:.3} s CPU = {:.4} % of one core; simulation (left out): {:.2} s CPU",
        monitor.as_secs_f64(),
        100.0 * monitor.as_secs_f64() / secs as f64,
        simulation.as_secs_f64()
    );
}
