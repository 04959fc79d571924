//! Profiles across their allowed ranges: every number's range is stated in its refusal, both
//! ends of every range load and simulate to finite results, and latencies grow with the
//! latencies a profile gives.

use pcie_sim::pmu_host::profile::PmuHostProfile;
use pcie_sim::pmu_host::workload::HostWorkload;
use pcie_sim::pmu_host::PmuHost;
use pcie_sim::{CachePrep, DeviceProfile, HostProfile, Measured, Simulator, TestOp, Workload};
use proptest::prelude::*;

const E5: &str = include_str!("../../../../data/profiles/e5-2637v3.toml");
const E3: &str = include_str!("../../../../data/profiles/e3-1226v3.toml");
const NFP: &str = include_str!("../../../../data/profiles/nfp6000.toml");
const YITIAN: &str = include_str!("../../../../data/profiles/yitian710.toml");

fn workload(op: TestOp, size: u32, prep: CachePrep, count: u64) -> Workload {
    Workload {
        op,
        size,
        window: 1 << 20,
        host_offset: 0,
        device_offset: 0,
        random: true,
        prep,
        count,
        remote_memory: true,
        remote_cpu: true,
        iommu_page: None,
    }
}

/// Minimum, median and maximum latency of a latency test, in nanoseconds.
fn latencies(sim: &Simulator, w: &Workload) -> (f64, f64, f64) {
    let Measured::Latency { mut cycles, .. } = sim.run(w, 7) else {
        panic!("a latency test measures latencies");
    };
    cycles.sort_unstable();
    let ns = |c: u32| c as f64 * sim.cycle_ps() / 1000.0;
    (
        ns(cycles[0]),
        ns(cycles[cycles.len() / 2]),
        ns(cycles[cycles.len() - 1]),
    )
}

/// The device's timestamp tick in ns: a latency is measured in whole ticks, less than a tick
/// from its true value either way, so of two runs whose samples start at other moments of the
/// tick the slower may measure up to two ticks less than its true lead.
fn tick_ns(sim: &Simulator) -> f64 {
    sim.cycle_ps() * sim.device.clock.tick_cycles as f64 / 1000.0
}

/// Every number of a TOML document: its dotted key (array entries as `name[i]`) and value.
fn numbers(t: &toml::Table, prefix: &str, out: &mut Vec<String>) {
    for (k, v) in t {
        let key = format!("{prefix}{k}");
        match v {
            toml::Value::Integer(_) | toml::Value::Float(_) => out.push(key),
            toml::Value::Table(inner) => numbers(inner, &format!("{key}."), out),
            toml::Value::Array(a) => {
                for (i, x) in a.iter().enumerate() {
                    if let toml::Value::Table(inner) = x {
                        numbers(inner, &format!("{key}[{i}]."), out);
                    }
                }
            }
            _ => {}
        }
    }
}

fn slot<'a>(t: &'a mut toml::Table, key: &str) -> &'a mut toml::Value {
    let (head, rest) = key.split_once('.').map_or((key, None), |(h, r)| (h, Some(r)));
    let value = match head.split_once('[') {
        Some((name, i)) => {
            let i: usize = i.trim_end_matches(']').parse().unwrap();
            &mut t.get_mut(name).unwrap().as_array_mut().unwrap()[i]
        }
        None => t.get_mut(head).unwrap(),
    };
    match rest {
        Some(r) => slot(value.as_table_mut().unwrap(), r),
        None => value,
    }
}

/// `text` with `key` set to `v`, and with `together` a spread's or tail's other bounds with it
/// (so that `min <= mode <= max` still holds).
fn with(text: &str, key: &str, v: toml::Value, together: bool) -> String {
    let mut t: toml::Table = text.parse().unwrap();
    let (table, leaf) = key.rsplit_once('.').unwrap_or(("", key));
    let group = ["min_ns", "mode_ns", "max_ns"];
    if together && group.contains(&leaf) {
        for g in group {
            if let Some(x) = slot(&mut t, table).as_table_mut().unwrap().get_mut(g) {
                *x = v.clone();
            }
        }
    } else {
        *slot(&mut t, key) = v;
    }
    t.iter().map(|(k, v)| format!("{k} = {}\n", inline(v))).collect()
}

/// A value as inline TOML (the toml crate is built without its writer).
fn inline(v: &toml::Value) -> String {
    match v {
        toml::Value::String(s) => format!("{s:?}"),
        toml::Value::Integer(i) => i.to_string(),
        toml::Value::Float(f) => format!("{f:?}"),
        toml::Value::Boolean(b) => b.to_string(),
        toml::Value::Array(a) => format!("[{}]", a.iter().map(inline).collect::<Vec<_>>().join(", ")),
        toml::Value::Table(t) => {
            let kv: Vec<String> = t.iter().map(|(k, v)| format!("{k} = {}", inline(v))).collect();
            format!("{{ {} }}", kv.join(", "))
        }
        toml::Value::Datetime(d) => d.to_string(),
    }
}

/// The range a refusal states: "must be [...] between LO and HI", "more than 0 and at most HI"
/// or "one of A, B, ..." (first and last).
fn stated_range(message: &str) -> (f64, f64) {
    let num = |s: &str| -> f64 {
        let s = s.split_whitespace().next().unwrap().trim_end_matches(',');
        s.parse().unwrap_or_else(|_| panic!("{s:?} in {message:?}"))
    };
    if let Some(r) = message.split(" between ").nth(1) {
        let (lo, hi) = r.split_once(" and ").unwrap();
        (num(lo), num(hi))
    } else if let Some(r) = message.split("must be more than 0 and at most ").nth(1) {
        (1e-3, num(r))
    } else if let Some(r) = message.split("must be one of ").nth(1) {
        let all: Vec<&str> = r.split(", ").collect();
        (num(all[0]), num(all[all.len() - 1]))
    } else {
        panic!("no range stated: {message}")
    }
}

fn value_like(old: &toml::Value, v: f64) -> toml::Value {
    match old {
        toml::Value::Integer(_) => toml::Value::Integer(v as i64),
        _ => toml::Value::Float(v),
    }
}

/// Both ends of each key's range, one key at a time, in a profile otherwise as shipped:
/// `check` gets each variant's text.
fn each_extreme(text: &str, file: &str, refuse: impl Fn(&str) -> Option<String>, check: impl Fn(&str, &str)) {
    let table: toml::Table = text.parse().unwrap();
    let mut keys = Vec::new();
    numbers(&table, "", &mut keys);
    assert!(keys.len() > 20, "{file}: {keys:?}");
    for key in keys {
        let old = slot(&mut table.clone(), &key).clone();
        // The largest u32, and for 64-bit keys the largest TOML integer.
        let hostile: &[toml::Value] = match old {
            toml::Value::Integer(_) => &[toml::Value::Integer(u32::MAX as i64), toml::Value::Integer(i64::MAX)],
            _ => &[toml::Value::Float(1e300)],
        };
        let e = hostile
            .iter()
            .find_map(|h| refuse(&with(text, &key, h.clone(), false)))
            .unwrap_or_else(|| panic!("{file}: {key} = huge was accepted"));
        let leaf = key.rsplit('.').next().unwrap();
        assert!(e.starts_with(file) && e.contains(leaf), "{key}: {e}");
        let (lo, hi) = stated_range(&e);
        for (v, end) in [(lo, "min"), (hi, "max")] {
            check(
                &with(text, &key, value_like(&old, v), true),
                &format!("{key} = {v} ({end})"),
            );
        }
    }
}

/// LAT_WRRD of the largest size through the IOMMU to remote memory meets every time of the read
/// and write paths; no latency exceeds the longest transaction the time base allows.
fn simulate_extreme(sim: Simulator, what: &str) {
    let mut w = workload(TestOp::LatWriteRead, sim.device.dma.max_transfer, CachePrep::Cold, 20);
    w.iommu_page = Some(4096);
    let (lo, mid, hi) = latencies(&sim, &w);
    assert!(
        lo >= 0.0 && lo <= mid && mid <= hi && hi <= sim.worst_transaction_ns().min(4_294_967.0) + tick_ns(&sim),
        "{what}: {lo} {mid} {hi}"
    );
    if what.ends_with("(max)") {
        w.op = TestOp::BwReadWrite;
        let Measured::Bandwidth { bytes, time_cycles, .. } = sim.run(&w, 1) else {
            panic!("a bandwidth test measures bandwidth");
        };
        assert!(
            bytes > 0 && time_cycles > 0,
            "{what}: {bytes} B in {time_cycles} cycles"
        );
    }
}

#[test]
fn both_ends_of_every_dma_profile_range_simulate_to_finite_results() {
    let host = HostProfile::load("e5-2637v3").unwrap();
    let device = DeviceProfile::load("nfp6000").unwrap();
    each_extreme(
        E5,
        "h.toml",
        |t| HostProfile::parse("h.toml", t).err().map(|e| e.to_string()),
        |t, what| {
            let h = HostProfile::parse("h.toml", t).unwrap_or_else(|e| panic!("{what}: {e}"));
            simulate_extreme(
                Simulator::new(h, device.clone()).unwrap_or_else(|e| panic!("{what}: {e}")),
                what,
            );
        },
    );
    each_extreme(
        NFP,
        "d.toml",
        |t| DeviceProfile::parse("d.toml", t).err().map(|e| e.to_string()),
        |t, what| {
            let d = DeviceProfile::parse("d.toml", t).unwrap_or_else(|e| panic!("{what}: {e}"));
            simulate_extreme(
                Simulator::new(host.clone(), d).unwrap_or_else(|e| panic!("{what}: {e}")),
                what,
            );
        },
    );
}

#[test]
fn both_ends_of_every_power_state_range_simulate_to_finite_results() {
    // The E3 profile holds the [power] keys (and the E5's others, some changed): each at either
    // end simulates.
    let device = DeviceProfile::load("nfp6000").unwrap();
    each_extreme(
        E3,
        "h.toml",
        |t| HostProfile::parse("h.toml", t).err().map(|e| e.to_string()),
        |t, what| {
            let h = HostProfile::parse("h.toml", t).unwrap_or_else(|e| panic!("{what}: {e}"));
            match Simulator::new(h, device.clone()) {
                Ok(sim) => simulate_extreme(sim, what),
                // With the E3's 1 ms stall a key the E5 test takes to its largest may overflow
                // the time base; the pair is refused then, never run. The power keys always fit.
                Err(e) if !what.starts_with("power.") && e.to_string().contains("one transaction may take up to") => {}
                Err(e) => panic!("{what}: {e}"),
            }
        },
    );
}

#[test]
fn both_ends_of_every_pmu_host_profile_range_simulate() {
    each_extreme(
        YITIAN,
        "y.toml",
        |t| PmuHostProfile::parse("y.toml", t).err().map(|e| e.to_string()),
        |t, what| {
            let p = PmuHostProfile::parse("y.toml", t).unwrap_or_else(|e| panic!("{what}: {e}"));
            let jobs: Vec<HostWorkload> = ["port=00:02.0,rw=readwrite,bs=64k,iodepth=4", "port=b0:00.0,rx=10,tx=10"]
                .iter()
                .filter_map(|j| HostWorkload::parse(&p, j).ok())
                .collect();
            let mut h = PmuHost::new(p, &jobs, 1);
            h.advance_to(200_000);
            for i in 0..jobs.len() {
                let (r, w) = h.workload_bytes(i);
                assert!(r < 1 << 40 && w < 1 << 40, "{what}: {r} {w}");
            }
        },
    );
}

#[test]
fn a_remote_latency_beyond_the_time_base_is_refused_not_wrapped() {
    for (v, shown) in [
        ("1e12", "1e12"),
        ("1e300", "1e300"),
        ("-1.0", "-1"),
        ("nan", "NaN"),
        ("inf", "inf"),
    ] {
        let text = E5.replace("remote_ns = 106.0", &format!("remote_ns = {v}"));
        let e = HostProfile::parse("my.toml", &text).unwrap_err().to_string();
        assert_eq!(
            e,
            format!("my.toml: memory.remote_ns = {shown}: must be between 0 and 1000000 ns")
        );
    }
}

#[test]
fn a_pair_whose_worst_transaction_overflows_the_time_base_is_refused() {
    // Each value is in range, but a 4 KB read in 128 B requests with one tag meets the
    // per-request times 33 times over.
    let device = NFP
        .replace("mrrs = 512", "mrrs = 128")
        .replace("read_tags = 22", "read_tags = 1")
        .replace("read_request_ns = 5.0", "read_request_ns = 100000.0")
        .replace("write_tlp_ns = 4.4", "write_tlp_ns = 100000.0");
    let d = DeviceProfile::parse("d.toml", &device).unwrap();
    let e = Simulator::new(HostProfile::load("e5-2637v3").unwrap(), d)
        .unwrap_err()
        .to_string();
    assert!(
        e.starts_with("e5-2637v3 + nfp6000: one transaction may take up to") && e.contains("4294967 ns"),
        "{e}"
    );
}

#[test]
#[should_panic(expected = "4294967297 transactions in one test: the simulator's clock holds at most 4294967296")]
fn a_test_of_more_transactions_than_the_time_base_holds_is_refused() {
    // The bound of one transaction covers MAX_TRANSACTIONS of them; one more is refused before
    // anything is simulated (the machine's times add without saturating).
    let sim = Simulator::load("e5-2637v3", "nfp6000").unwrap();
    let w = Workload::new(
        TestOp::BwRead,
        64,
        8192,
        CachePrep::HostWarm,
        pcie_sim::MAX_TRANSACTIONS + 1,
    );
    sim.run(&w, 1);
}

fn e5_with(key: &str, v: f64) -> Simulator {
    let h = HostProfile::parse("h.toml", &with(E5, key, toml::Value::Float(v), false)).unwrap();
    Simulator::new(h, DeviceProfile::load("nfp6000").unwrap()).unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn a_larger_remote_latency_never_lowers_a_remote_read(a in 0.0..1e6f64, b in 0.0..1e6f64) {
        let (a, b) = (a.min(b), a.max(b));
        // A window the LLC holds: every line is one a (remote) core wrote.
        let w = Workload { window: 8192, ..workload(TestOp::LatRead, 64, CachePrep::HostWarm, 50) };
        let (near, far) = (e5_with("memory.remote_ns", a), e5_with("memory.remote_ns", b));
        let (x, y) = (latencies(&near, &w), latencies(&far, &w));
        let tick = 2.0 * tick_ns(&near);
        prop_assert!(y.0 + tick >= x.0 && y.1 + tick >= x.1 && y.2 + tick >= x.2, "{a} -> {x:?}, {b} -> {y:?}");
        // A host-warmed line is in the warming core's socket, whatever its home memory: one hop.
        prop_assert!((y.1 - x.1 - (b - a)).abs() <= tick, "{a} -> {x:?}, {b} -> {y:?}");
    }

    #[test]
    fn a_larger_dram_latency_never_lowers_a_cold_read(shift in 0.0..9e5f64) {
        let base = HostProfile::load("e5-2637v3").unwrap();
        let mut slow = base.clone();
        slow.memory.dram.min_ns += shift;
        slow.memory.dram.mode_ns += shift;
        slow.memory.dram.max_ns += shift;
        let device = DeviceProfile::load("nfp6000").unwrap();
        let w = workload(TestOp::LatRead, 256, CachePrep::Cold, 50);
        let x = latencies(&Simulator::new(base, device.clone()).unwrap(), &w);
        let slow = Simulator::new(slow, device).unwrap();
        let y = latencies(&slow, &w);
        let tick = 2.0 * tick_ns(&slow);
        prop_assert!(y.0 + tick >= x.0 + shift && y.1 + tick >= x.1 + shift && y.2 + tick >= x.2 + shift,
            "+{shift}: {x:?} -> {y:?}");
        prop_assert!(y.2.is_finite() && y.2 < 1e7);
    }
}
