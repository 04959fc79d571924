//! Real perf_event_open on this host's `software` (and, when present, `msr`) PMU, through the
//! same discovery and resolution the CLI uses. Skipped with a message where perf_event_open is
//! not permitted or the PMU is missing. Software events never multiplex, so scaling under
//! multiplexing is tested with synthetic reads in `accumulate`'s unit tests.

#![cfg(target_os = "linux")]

use pcie_pmu::{Accumulator, CounterError, CounterSource, PerfEvents, System};
use std::time::{Duration, Instant};

fn system() -> Option<System> {
    match System::discover("/") {
        Ok(s) => Some(s),
        Err(e) => {
            eprintln!("skipped: no sysfs event_source here ({e})");
            None
        }
    }
}

fn skip(e: &CounterError) -> bool {
    let skip = e.is_permission() || matches!(e, CounterError::Rejected { errno, .. } if *errno == libc::ENOENT);
    if skip {
        eprintln!("skipped: perf_event_open not available: {e}");
    }
    skip
}

fn spin(d: Duration) {
    let t = Instant::now();
    let mut x = 0u64;
    while t.elapsed() < d {
        x = std::hint::black_box(x.wrapping_add(1));
    }
}

#[test]
fn software_cpu_clock_counts_time_on_the_target_cpu() {
    let Some(sys) = system() else { return };
    if !sys.pmus.iter().any(|p| p.name == "software") {
        eprintln!("skipped: no software PMU");
        return;
    }
    let ev = sys.resolve("software/cpu-clock/").unwrap();
    assert_eq!((ev.type_id, ev.config[0]), (1, 0));
    let mut src = PerfEvents::new();
    let id = match src.open(&ev) {
        Ok(id) => id,
        Err(e) if skip(&e) => return,
        Err(e) => panic!("{e}"),
    };
    let mut acc = Accumulator::default();
    assert!(acc.update(src.read(id).unwrap()).is_none());
    std::thread::sleep(Duration::from_millis(200));
    let d = acc.update(src.read(id).unwrap()).unwrap();
    // cpu-clock counts nanoseconds of the CPU's clock: about the 200 ms that passed.
    assert!(d.enabled_ns >= 190_000_000, "{d:?}");
    assert_eq!(d.running_pct(), 100.0, "software events do not multiplex: {d:?}");
    let scaled = d.scaled.unwrap();
    assert!(
        scaled > 0.5 * d.enabled_ns as f64 && scaled < 1.5 * d.enabled_ns as f64,
        "{d:?}"
    );
}

#[test]
fn task_clock_and_msr_tsc_count_monotonically() {
    let Some(sys) = system() else { return };
    let mut specs = vec!["software/task-clock/"];
    if sys.pmus.iter().any(|p| p.name == "msr" && p.event("tsc").is_some()) {
        specs.push("msr/tsc/");
    } else {
        eprintln!("msr PMU with tsc not present: counting software/task-clock/ only");
    }
    let mut src = PerfEvents::new();
    let mut counters = Vec::new();
    for s in &specs {
        let ev = sys.resolve(s).unwrap();
        match src.open(&ev) {
            Ok(id) => counters.push((s, id, Accumulator::default())),
            Err(e) if skip(&e) => return,
            Err(e) => panic!("{s}: {e}"),
        }
    }
    for (_, id, acc) in counters.iter_mut() {
        acc.update(src.read(*id).unwrap());
    }
    for _ in 0..3 {
        spin(Duration::from_millis(30));
        for (s, id, acc) in counters.iter_mut() {
            let d = acc.update(src.read(*id).unwrap()).unwrap();
            assert!(d.enabled_ns > 0, "{s}: {d:?}");
            assert!(d.scaled.is_some(), "{s}: {d:?}");
        }
    }
    for (s, _, acc) in &counters {
        let t = acc.total();
        assert!(t.enabled_ns >= 80_000_000, "{s}: {t:?}");
        if **s == "msr/tsc/" {
            // The TSC ticks at hundreds of MHz at least.
            assert!(t.raw as f64 > 0.05 * t.enabled_ns as f64, "{s}: {t:?}");
        }
    }
}

#[test]
fn a_config_the_pmu_rejects_names_event_and_pmu() {
    let Some(sys) = system() else { return };
    if !sys.pmus.iter().any(|p| p.name == "software") {
        return;
    }
    // PERF_COUNT_SW_MAX is 12: config 0x7777 is not a software event.
    let ev = sys.resolve("software/config=0x7777/").unwrap();
    match PerfEvents::new().open(&ev) {
        Ok(_) => panic!("the kernel accepted software config 0x7777"),
        Err(e) if e.is_permission() => eprintln!("skipped: {e}"),
        Err(e) => {
            let m = e.to_string();
            assert!(
                m.contains("software/config=0x7777/") && m.contains("PMU software"),
                "{m}"
            );
        }
    }
}

#[test]
fn a_group_counts_its_members_together() {
    let Some(sys) = system() else { return };
    if !sys.pmus.iter().any(|p| p.name == "software") {
        eprintln!("skipped: no software PMU");
        return;
    }
    let clock = sys.resolve("software/cpu-clock/").unwrap();
    // A member of another kind: added to a leader already running, it would never be scheduled
    // in the software context (which does not rotate), so the leader must start disabled.
    let task = sys.resolve("software/task-clock/").unwrap();
    let mut src = PerfEvents::new();
    let ids = match src.open_group(&[&clock, &task]) {
        Ok(ids) => ids,
        Err(e) if skip(&e) => return,
        Err(e) => panic!("{e}"),
    };
    assert_eq!(ids.len(), 2);
    std::thread::sleep(Duration::from_millis(100));
    let (l, m) = (src.read(ids[0]).unwrap(), src.read(ids[1]).unwrap());
    // Scheduled as one: both enabled and running all along, from the same moment.
    assert!(l.value > 0 && l.running == l.enabled, "{l:?}");
    assert!(m.value > 0 && m.running == m.enabled, "{m:?}");
    assert!(l.enabled.abs_diff(m.enabled) < 5_000_000, "{l:?} {m:?}");

    // Members really join the leader: the kernel refuses a member bound to another CPU,
    // which it accepts as an event of its own.
    if std::thread::available_parallelism().map_or(1, |n| n.get()) > 1 {
        let mut other_cpu = clock.clone();
        other_cpu.cpumask = vec![1];
        assert!(PerfEvents::new().open(&other_cpu).is_ok());
        let e = PerfEvents::new().open_group(&[&clock, &other_cpu]).unwrap_err();
        assert!(matches!(e, CounterError::Rejected { cpu: 1, .. }), "{e}");
    }
}
