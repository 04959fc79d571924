//! Targets for pcie-sim's parsers: DMA host and device profiles (a changed profile that loads
//! is simulated briefly and its latencies checked), PMU host profiles (a changed one runs a
//! short storage workload) and `--workload` specs on the Yitian 710.

use crate::{refused, text, FuzzTarget, Verdict};
use pcie_sim::pmu_host::profile::PmuHostProfile;
use pcie_sim::pmu_host::workload::HostWorkload;
use pcie_sim::pmu_host::PmuHost;
use pcie_sim::{CachePrep, DeviceProfile, HostProfile, Measured, Simulator, TestOp, Workload};
use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::sync::OnceLock;

const HOSTS: [&str; 4] = [
    include_str!("../../../../data/profiles/e5-2637v3.toml"),
    include_str!("../../../../data/profiles/e3-1226v3.toml"),
    include_str!("../../../../data/profiles/gen4-server.toml"),
    include_str!("../../../../data/profiles/gen5-server.toml"),
];
const DEVICES: [&str; 2] = [
    include_str!("../../../../data/profiles/nfp6000.toml"),
    include_str!("../../../../data/profiles/netfpga-sume.toml"),
];
const PMU_HOSTS: [&str; 4] = [
    include_str!("../../../../data/profiles/yitian710.toml"),
    include_str!("../../../../data/profiles/yitian710-narrow.toml"),
    include_str!("../../../../data/profiles/yitian710-nvme.toml"),
    include_str!("../../../../data/profiles/yitian710-degraded.toml"),
];

const PROFILE_TOKENS: [&str; 16] = [
    " = ", "\n", "[", "]", "{ ", " }", ", ", "_ns", "min_ns", "mode_ns", "max_ns", "prob", "1e12", "1e300", "nan",
    "inf",
];

/// A seed without its comments: they carry no values, and numbers in them would draw mutations
/// that change nothing.
fn uncommented(text: &str) -> String {
    text.lines()
        .filter(|l| !l.trim_start().starts_with('#'))
        .map(|l| l.split_once(" #").map_or(l, |(value, _)| value).trim_end())
        .collect::<Vec<_>>()
        .join("\n")
}

fn uncommented_seeds(texts: &[&str]) -> Vec<String> {
    texts.iter().map(|t| uncommented(t)).collect()
}

fn strs(seeds: &[String]) -> Vec<&str> {
    seeds.iter().map(String::as_str).collect()
}

/// Changed profiles that are simulated: one in this many, by a hash of their text. Building a
/// machine takes about 13 ms in a debug build, some forty times a profile's parsing; one in 16
/// keeps the short run's cost near its parsing, and the long run still simulates hundreds of
/// thousands.
const SIMULATE_ONE_IN: u64 = 16;

fn sampled(input: &[u8]) -> bool {
    let mut h = DefaultHasher::new();
    input.hash(&mut h);
    h.finish().is_multiple_of(SIMULATE_ONE_IN)
}

fn builtin_hosts() -> &'static [HostProfile] {
    static P: OnceLock<Vec<HostProfile>> = OnceLock::new();
    P.get_or_init(|| {
        pcie_sim::builtin_hosts()
            .into_iter()
            .map(|n| HostProfile::load(n).unwrap())
            .collect()
    })
}

fn builtin_device() -> &'static DeviceProfile {
    static P: OnceLock<DeviceProfile> = OnceLock::new();
    P.get_or_init(|| DeviceProfile::load("nfp6000").unwrap())
}

fn builtin_pmu_hosts() -> &'static [PmuHostProfile] {
    static P: OnceLock<Vec<PmuHostProfile>> = OnceLock::new();
    P.get_or_init(|| {
        pcie_sim::pmu_host::profile::builtin_pmu_hosts()
            .into_iter()
            .map(|n| PmuHostProfile::load(n).unwrap())
            .collect()
    })
}

/// A few reads of 64 B from remote memory, one at a time: every latency must lie between the
/// round trip's least (wire both ways, the root complex, DRAM's fastest line, the remote hop)
/// and the simulator's bound of one transaction, give or take a timestamp tick.
fn simulate(sim: Result<Simulator, pcie_sim::ProfileError>) -> Verdict {
    let sim = match sim {
        Ok(s) => s,
        Err(e) => return refused(e.to_string()),
    };
    let w = Workload {
        remote_memory: true,
        remote_cpu: true,
        ..Workload::new(TestOp::LatRead, 64, 8192, CachePrep::Cold, 20)
    };
    let Measured::Latency { cycles, .. } = sim.run(&w, 1) else {
        return Verdict::Wrong("a latency test measured no latencies".into());
    };
    let h = &sim.host;
    let tick = sim.cycle_ps() * sim.device.clock.tick_cycles as f64 / 1000.0;
    let least = 2.0 * h.link.wire_ns + h.root_complex.fixed_ns + h.memory.dram.min_ns + h.memory.remote_ns - tick - 1.0;
    let most = sim.worst_transaction_ns() + tick;
    match cycles
        .iter()
        .map(|&c| c as f64 * sim.cycle_ps() / 1000.0)
        .find(|ns| !ns.is_finite() || *ns < least || *ns > most)
    {
        Some(ns) => Verdict::Wrong(format!(
            "LAT_RD 64 B from remote memory measured {ns} ns, outside {least} to {most} ns"
        )),
        None => Verdict::Accepted,
    }
}

fn host_profile(input: &[u8]) -> Verdict {
    match HostProfile::parse("fuzz.toml", &text(input)) {
        Err(e) => refused(e.to_string()),
        Ok(h) if builtin_hosts().contains(&h) || !sampled(input) => Verdict::Accepted,
        Ok(h) => simulate(Simulator::new(h, builtin_device().clone())),
    }
}

fn device_profile(input: &[u8]) -> Verdict {
    match DeviceProfile::parse("fuzz.toml", &text(input)) {
        Err(e) => refused(e.to_string()),
        Ok(d) if *builtin_device() == d || !sampled(input) => Verdict::Accepted,
        Ok(d) => simulate(Simulator::new(builtin_hosts()[0].clone(), d)),
    }
}

/// A changed profile runs 100 µs of a small storage job on its first storage port: the job
/// may not have moved more than it asked for.
fn pmu_host_profile(input: &[u8]) -> Verdict {
    let p = match PmuHostProfile::parse("fuzz.toml", &text(input)) {
        Err(e) => return refused(e.to_string()),
        Ok(p) if builtin_pmu_hosts().contains(&p) || !sampled(input) => return Verdict::Accepted,
        Ok(p) => p,
    };
    let storage = p
        .ports
        .iter()
        .find(|port| p.device_of(port).is_some_and(|d| d.storage.is_some()));
    let jobs: Vec<HostWorkload> = storage
        .map(|port| HostWorkload::parse(&p, &format!("port={},bs=64k,iodepth=2,size=1M", port.bdf)))
        .into_iter()
        .collect::<Result<_, _>>()
        .unwrap_or_default();
    let mut host = PmuHost::new(p, &jobs, 1);
    host.advance_to(100_000);
    match (0..jobs.len())
        .map(|i| host.workload_bytes(i))
        .find(|&(r, w)| r + w > 1 << 20)
    {
        Some((r, w)) => Verdict::Wrong(format!("a 1 MiB job moved {r} B read, {w} B written")),
        None => Verdict::Accepted,
    }
}

fn yitian() -> &'static PmuHostProfile {
    &builtin_pmu_hosts()[0]
}

/// An accepted spec holds only values its checks allow.
fn workload(input: &[u8]) -> Verdict {
    let sane_runtime = |r: Option<f64>| r.is_none_or(|s| s.is_finite() && s > 0.0 && s <= 86400.0);
    match HostWorkload::parse(yitian(), &text(input)) {
        Err(e) => refused(e.to_string()),
        Ok(HostWorkload::Storage(j))
            if !(512..=16 << 20).contains(&j.bs) || j.iodepth == 0 || j.numjobs == 0 || !sane_runtime(j.runtime) =>
        {
            Verdict::Wrong(format!("accepted {j:?}"))
        }
        Ok(HostWorkload::Nic(j))
            if !(0.0..=100.0).contains(&j.rx_gbps)
                || !(0.0..=100.0).contains(&j.tx_gbps)
                || !sane_runtime(j.runtime) =>
        {
            Verdict::Wrong(format!("accepted {j:?}"))
        }
        Ok(_) => Verdict::Accepted,
    }
}

pub fn targets() -> Vec<FuzzTarget> {
    let (hosts, devices, pmu_hosts) = (
        uncommented_seeds(&HOSTS),
        uncommented_seeds(&DEVICES),
        uncommented_seeds(&PMU_HOSTS),
    );
    vec![
        FuzzTarget::new(
            "host-profile",
            &strs(&hosts),
            &[
                &PROFILE_TOKENS[..],
                &["remote_ns", "wire_ns", "walkers", "llc_bytes", "[memory]", "[iommu]"],
            ]
            .concat(),
            host_profile,
        ),
        FuzzTarget::new(
            "device-profile",
            &strs(&devices),
            &[
                &PROFILE_TOKENS[..],
                &["mhz", "tick_cycles", "read_tags", "max_transfer", "[dma]", "[clock]"],
            ]
            .concat(),
            device_profile,
        ),
        FuzzTarget::new(
            "pmu-host-profile",
            &strs(&pmu_hosts),
            &[
                &PROFILE_TOKENS[..],
                &[
                    "inherit = \"yitian710\"\n",
                    "[[port]]",
                    "[[device]]",
                    "[device.storage]",
                    "read_mbps",
                    // Every key a profile may leave out (the test below checks the loader's).
                    "device_bdf",
                    "[[port.function]]",
                    "[[rciep]]",
                    "[device.nic]",
                    "program_mbps",
                    "write_buffer_bytes",
                    "read_pause",
                    "write_pause",
                    "[[fault]]",
                    "link_gen",
                    "link_lanes",
                    "mps",
                    "mrrs",
                    "aspm",
                    "aer_correctable_per_s",
                    "aer_correctable_kind",
                ],
            ]
            .concat(),
            pmu_host_profile,
        ),
        FuzzTarget::new(
            "workload",
            &[
                "port=00:02.0,rw=read,bs=1M,iodepth=32,numjobs=1,runtime=1s",
                "port=0000:00:01.0,rw=readwrite,bs=128k,iodepth=16,numjobs=2,size=64M",
                "port=30:03.0,rx=40,tx=10,pkt=1500,runtime=100ms",
            ],
            &[
                "port=", "rw=", "bs=", "iodepth=", "numjobs=", "runtime=", "size=", "rx=", "tx=", "pkt=", ",", ":",
                "storage:", "k", "M", "G", "T", "ms", "us", "s", "h",
            ],
            workload,
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A step to a table inside a profile: a key, or an index in an array of tables.
    #[derive(Clone, Debug)]
    enum Step {
        Key(String),
        Index(usize),
    }

    /// The table at `path`; a step into an array of tables is its key, then the index.
    fn table_at<'a>(t: &'a mut toml::Table, path: &[Step]) -> &'a mut toml::Table {
        let Some((Step::Key(k), rest)) = path.split_first() else {
            assert!(path.is_empty(), "an index without its array's key: {path:?}");
            return t;
        };
        let mut v = t.get_mut(k).unwrap_or_else(|| panic!("no {k}"));
        let rest = match rest {
            [Step::Index(i), rest @ ..] => {
                v = &mut v.as_array_mut().expect("an array of tables")[*i];
                rest
            }
            _ => rest,
        };
        table_at(v.as_table_mut().expect("a table"), rest)
    }

    /// Paths of every table in `t`, arrays of tables and inline tables included.
    fn tables(t: &toml::Table, path: Vec<Step>, out: &mut Vec<Vec<Step>>) {
        out.push(path.clone());
        for (k, v) in t {
            let key = [path.clone(), vec![Step::Key(k.clone())]].concat();
            match v {
                toml::Value::Table(inner) => tables(inner, key, out),
                toml::Value::Array(items) => {
                    for (i, item) in items.iter().enumerate() {
                        if let toml::Value::Table(inner) = item {
                            tables(inner, [key.clone(), vec![Step::Index(i)]].concat(), out);
                        }
                    }
                }
                _ => {}
            }
        }
    }

    /// Whether the loader's deserialisation takes `t` (its checks of values come after).
    fn loads(t: &toml::Table) -> Result<(), String> {
        t.clone()
            .try_into::<PmuHostProfile>()
            .map(|_| ())
            .map_err(|e| e.to_string())
    }

    /// The keys the loader takes in the table at `path`: serde lists them when it refuses an
    /// unknown one.
    fn loader_keys(profile: &toml::Table, path: &[Step]) -> Vec<String> {
        let mut t = profile.clone();
        table_at(&mut t, path).insert("zz_not_a_key".into(), toml::Value::Integer(1));
        let e = loads(&t).expect_err("an unknown key is refused");
        let (_, expected) = e
            .split_once("unknown field `zz_not_a_key`, expected")
            .unwrap_or_else(|| panic!("{path:?}: {e}"));
        // The message goes on with the table's name on a line of its own.
        let expected = expected.lines().next().unwrap_or("");
        expected.split('`').skip(1).step_by(2).map(String::from).collect()
    }

    /// The key a dictionary token spells: `[[port.function]]` is `function`, `inherit = ...` is
    /// `inherit`.
    fn token_key(token: &str) -> &str {
        let t = token.split('=').next().unwrap_or("").trim();
        t.trim_matches(|c| c == '[' || c == ']')
            .rsplit('.')
            .next()
            .unwrap_or("")
    }

    /// Whether `seed` gives `key` a value or a table: `key = ` or `[...key]`, after a character
    /// that cannot be part of a key.
    fn spells(seed: &str, key: &str) -> bool {
        [format!("{key} ="), format!("{key}]")].iter().any(|form| {
            seed.match_indices(form.as_str()).any(|(i, _)| {
                let before = seed[..i].chars().next_back();
                before.is_none_or(|c| !(c.is_ascii_alphanumeric() || c == '_' || c == '-'))
            })
        })
    }

    /// The Yitian 710 with the degraded profile's `[[fault]]` tables: a table of every kind.
    fn every_kind_of_table() -> toml::Table {
        let mut t: toml::Table = toml::from_str(PMU_HOSTS[0]).unwrap();
        let faults: toml::Table = toml::from_str(PMU_HOSTS[3]).unwrap();
        t.insert("fault".into(), faults["fault"].clone());
        loads(&t).expect("the Yitian 710 with faults deserialises");
        t
    }

    /// The fuzz can write every key of a PMU host profile: a key some table may leave out is in
    /// the dictionary (so mutants add it where it was not), and every other key is in a seed.
    #[test]
    fn the_pmu_host_profile_dictionary_has_every_key_a_profile_may_leave_out() {
        let target = targets().into_iter().find(|t| t.name == "pmu-host-profile").unwrap();
        let in_dictionary = |k: &str| target.dictionary.iter().any(|d| token_key(d) == k);
        let seeds: Vec<String> = target.seeds.iter().map(|s| String::from_utf8_lossy(s).into()).collect();
        let profile = every_kind_of_table();
        let mut paths = Vec::new();
        tables(&profile, Vec::new(), &mut paths);
        // Each key missing from the dictionary, with the first table it was missed in.
        let mut missing = std::collections::BTreeMap::new();
        for path in &paths {
            let mut t = profile.clone();
            let present: Vec<String> = table_at(&mut t, path).keys().cloned().collect();
            for key in loader_keys(&profile, path) {
                let optional = !present.contains(&key) || {
                    let mut without = profile.clone();
                    table_at(&mut without, path).remove(&key);
                    loads(&without).is_ok()
                };
                let in_seed = seeds.iter().any(|s| spells(s, &key));
                if !in_dictionary(&key) && (optional || !in_seed) {
                    missing.entry(key).or_insert_with(|| format!("{path:?}"));
                }
            }
        }
        assert!(
            missing.is_empty(),
            "not in the dictionary (key: first table): {missing:#?}"
        );
    }
}
