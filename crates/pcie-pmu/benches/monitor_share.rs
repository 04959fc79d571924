//! The monitor's own share of a core on the simulated Yitian 710, without the simulation:
//! 18 root ports × 2 payload events (Rx and Tx multiplexed on each port's counter), sampled
//! every 100 ms by the library's [`Monitor`] as `pmu stat -I 100` does (read, wrap-safe
//! multiplex-scaled delta, one row per event, formatted as its live line), with workloads on
//! every port that has a device (storage I/O, NIC traffic). Time spent running the simulation
//! (`sleep`) is measured apart and left out.
//!
//! `cargo bench -p pcie-pmu --bench monitor_share [-- SECONDS]`

use pcie_pmu::monitor::{resolve_events, Monitor, Plan};
use pcie_pmu::sim::{HostWorkload, PmuHostProfile, SimHost};
use pcie_pmu::CounterSource;
use std::fmt::Write;
use std::time::{Duration, Instant};

fn main() {
    let secs: u64 = std::env::args().skip(1).find_map(|a| a.parse().ok()).unwrap_or(60);
    let profile = PmuHostProfile::load("yitian710-nvme").expect("built-in profile");
    // Every port with a device is busy: storage ports with fio-like jobs, NIC ports with
    // 50 Gb/s each way.
    let jobs: Vec<HostWorkload> = profile
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
            HostWorkload::parse(&profile, &spec).expect("valid workload")
        })
        .collect();
    let (sys, mut src) = SimHost::start(profile, &jobs, 1, false).expect("simulated host");
    let specs = ["dwc_rootport/rx_pcie_tlp_data_payload/,dwc_rootport/tx_pcie_tlp_data_payload/".to_string()];
    let plan = Plan::new(&sys, resolve_events(&sys, &specs).expect("events resolve")).expect("plans");
    let (counters, ports) = (plan.watches.len(), plan.ports.len());
    let mut mon = Monitor::open(&mut src, plan).expect("opens");
    mon.refresh(&mut src).expect("reads");
    let (mut monitor, mut simulation) = (Duration::ZERO, Duration::ZERO);
    let mut out = String::new();
    let mut bytes = 0.0;
    let step = Duration::from_millis(100);
    for tick in 1..=secs * 10 {
        let t = Instant::now();
        src.sleep(step).expect("simulates");
        simulation += t.elapsed();
        let t = Instant::now();
        out.clear();
        for r in mon.sample(&mut src, tick as f64 / 10.0, 0.1).expect("reads") {
            bytes += r.bytes.unwrap_or(0.0);
            let _ = writeln!(
                out,
                "{:>10.3}  {:<20}  {:<26}  {:>16}  {:>18.0}  {:>9.2}  {:>16.0}  {:>9.2}",
                r.time_s,
                r.pmu,
                r.event,
                r.raw,
                r.scaled.unwrap_or(0.0),
                r.running_pct,
                r.bytes.unwrap_or(0.0),
                r.gbps.unwrap_or(0.0)
            );
        }
        std::hint::black_box(&out);
        monitor += t.elapsed();
    }
    println!(
        "{counters} counters on {ports} root ports, read every 100 ms for {secs} s of simulated time ({:.1} GB counted)",
        bytes / 1e9
    );
    println!(
        "monitor: {:.3} s CPU = {:.4} % of one core; simulation (left out): {:.2} s CPU",
        monitor.as_secs_f64(),
        100.0 * monitor.as_secs_f64() / secs as f64,
        simulation.as_secs_f64()
    );
}
