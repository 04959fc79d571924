//! The host parameters a fit may change: the simulator's own mechanisms, each with the groups
//! of pcie-bench's suite that identify it (from the hand calibration of the E5-2637 v3, see
//! docs/simulator.md; a table of another name identifies by its tests, which of those groups
//! hold tests like them) and its range, which is the one the profile loader checks.
//!
//! A profile is handled as its serde value, so a key is read and set by its dotted name and
//! every candidate goes back through the loader's checks ([`super::profile_toml`]).

use pcie_bench::params::{CacheState, Iommu, TestKind, TestParams};
use pcie_bench::suite::{Group, Suite};
use serde_json::Value;
use std::sync::OnceLock;

/// How a key's value is searched.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Scale {
    /// A time in ns, searched as it is.
    Linear,
    /// A whole number, searched on its logarithm (IO-TLB entries: 8, 16, 32, ...).
    Log2,
}

/// One fittable key.
#[derive(Debug, Clone, Copy)]
pub struct FitKey {
    /// Dotted name in the profile; a spread (`memory.dram`) moves as a whole, its mode named.
    pub name: &'static str,
    /// The mechanism, as the fit's messages and the written profile's comments name it.
    pub mechanism: &'static str,
    /// Bounds the loader allows (and the search keeps to).
    pub lo: f64,
    pub hi: f64,
    pub scale: Scale,
    /// The first step of its search where the value is 0 or small (in ns, or doublings for
    /// [`Scale::Log2`]); otherwise 30 % of the value.
    pub step: f64,
    /// Groups (result table bases, by prefix) that identify it ...
    pub groups: &'static [&'static str],
    /// ... and only when measured with the IOMMU on ...
    pub needs_iommu: bool,
    /// ... and of those groups' tests, these.
    pub tests: Tests,
}

/// Which tests of a key's groups identify it. A test of one 64 B line holds none of the
/// pipelines' per-line costs (the root complex asks for a read's lines, and a write's lines
/// pass the fabric, one after another), a test of more lines holds them all; searched on every
/// test, a latency key compensates per-line keys that are still off, which come later (a refit
/// from 30 % off pulled `write_commit_ns` and `llc_hit` to make up for `write_line_ns` and
/// `line_ns`, leaving LAT_WRRD 2 KB's CDF 0.25 away).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Tests {
    All,
    /// Read latency tests (LAT_RD, LAT_CMD_RD) of one line: a memory latency (a
    /// write-then-read's time also holds the write path: a DDIO line's latency would be pulled
    /// down by a too-short commit).
    OneLineReads,
    /// Latency tests of one line: the write path's fixed costs and the page walk (a 2 KB
    /// write's walk also waits for its TLPs' re-translations and per-line costs).
    OneLine,
    /// Bandwidth tests, and latency tests of more than one line: the pipelines' per-line and
    /// per-request costs, which add to a one-line test's latency only as a constant.
    ManyLines,
    /// Latency tests of a window the host warmed: whether it still finds its lines in the LLC
    /// once it outgrows it.
    HostWarmed,
    /// Latency tests of a window the device warmed: whether it still finds its lines in the
    /// DDIO share of the LLC once it outgrows it.
    DeviceWarmed,
    /// Of those, the ones that read (BW_RD, BW_RDWR, LAT_RD and LAT_CMD_RD of more than one
    /// line): the read pipeline's costs, searched before the write path's. A write-then-read's
    /// time also holds the write's per-line cost, and there a read key made up for a write key
    /// still off (a refit left line_ns 3.0 and write_line_ns 1.63, where 2.5 and 2.0 fit: the
    /// same 2 KB LAT_WRRD, a LAT_RD 2 KB CDF 0.15 away).
    ManyLineReads,
    /// BW_WR: the root port's UpdateFC timer. BW_RDWR does not identify it: while completions
    /// leave downstream the port returns posted credits with them at once (the E3-1226 v3 wrote
    /// 2 KB at 41 Gb/s beside its reads, at 17-40 Gb/s in BW_WR), so there the read keys decide.
    WriteBandwidth,
}

impl Tests {
    /// Whether `t` is one of them.
    pub fn take(self, t: &TestParams) -> bool {
        let lines = (t.host_offset as u64 % 64 + t.size as u64).div_ceil(64);
        match self {
            Tests::All => true,
            Tests::OneLineReads => matches!(t.kind, TestKind::LatRd | TestKind::LatCmdRd) && lines == 1,
            Tests::OneLine => t.kind.is_latency() && lines == 1,
            Tests::ManyLines => t.kind.is_bandwidth() || lines > 1,
            Tests::HostWarmed => t.kind.is_latency() && t.cache == CacheState::HWarm,
            Tests::DeviceWarmed => t.kind.is_latency() && t.cache == CacheState::DWarm,
            Tests::ManyLineReads => match t.kind {
                TestKind::BwRd | TestKind::BwRdWr => true,
                TestKind::LatRd | TestKind::LatCmdRd => lines > 1,
                _ => false,
            },
            Tests::WriteBandwidth => t.kind == TestKind::BwWr,
        }
    }
}

/// 1 ms, 100 µs and 10 µs: the loader's limits per event, per request and per line
/// (`pcie_sim::profile_file`).
const MAX_NS: f64 = 1e6;
const MAX_REQUEST_NS: f64 = 1e5;
const MAX_LINE_NS: f64 = 1e4;

/// In dependency order: the read latencies first (every other latency builds on them), then
/// the write path, the IOMMU, the throughput limits, the tails.
pub const KEYS: &[FitKey] = &[
    FitKey {
        name: "memory.llc_hit",
        mechanism: "latency of a line a core holds (LLC hit)",
        lo: 0.0,
        hi: MAX_NS,
        scale: Scale::Linear,
        step: 10.0,
        groups: &["lat_dma_sizes", "lat_dma_sweep_rd", "lat_dma_details", "lat_dma_off_rd"],
        needs_iommu: false,
        tests: Tests::OneLineReads,
    },
    FitKey {
        name: "memory.dram",
        mechanism: "latency of a line in DRAM",
        lo: 0.0,
        hi: MAX_NS,
        scale: Scale::Linear,
        step: 10.0,
        groups: &[
            "lat_dma_sweep_rd",
            "lat_cmd_sweep_rd",
            "lat_dma_details",
            "lat_cmd_sizes",
            "lat_cmd_details",
        ],
        needs_iommu: false,
        tests: Tests::OneLineReads,
    },
    FitKey {
        name: "memory.io_line",
        mechanism: "latency of a line DDIO allocated for the device",
        lo: 0.0,
        hi: MAX_NS,
        scale: Scale::Linear,
        step: 10.0,
        groups: &["lat_cmd_sweep_rd", "lat_cmd_details"],
        needs_iommu: false,
        tests: Tests::OneLineReads,
    },
    FitKey {
        name: "memory.llc_bytes",
        mechanism: "LLC size",
        lo: 65536.0,
        hi: 1099511627776.0,
        scale: Scale::Log2,
        step: 0.5,
        groups: &["lat_dma_sweep", "lat_cmd_sweep"],
        needs_iommu: false,
        tests: Tests::HostWarmed,
    },
    FitKey {
        name: "memory.ddio_share",
        mechanism: "the LLC's share DDIO allocates device writes in",
        lo: 0.0,
        hi: 1.0,
        scale: Scale::Linear,
        step: 0.02,
        groups: &["lat_dma_sweep", "lat_cmd_sweep"],
        needs_iommu: false,
        tests: Tests::DeviceWarmed,
    },
    FitKey {
        name: "root_complex.write_commit_ns",
        mechanism: "posted write commit (a write visible to the read behind it)",
        lo: 0.0,
        hi: MAX_NS,
        scale: Scale::Linear,
        step: 10.0,
        groups: &[
            "lat_dma_sizes",
            "lat_dma_sweep_wrrd",
            "lat_dma_off_wrrd",
            "lat_cmd_sizes",
            "lat_cmd_sweep_wrrd",
            "lat_dma_details",
            "lat_cmd_details",
        ],
        needs_iommu: false,
        tests: Tests::OneLine,
    },
    FitKey {
        name: "root_complex.write_merge_ns",
        mechanism: "merge read of a partial line in DRAM",
        lo: 0.0,
        hi: MAX_NS,
        scale: Scale::Linear,
        step: 10.0,
        groups: &["lat_cmd_sweep_wrrd", "lat_cmd_off_wrrd", "lat_cmd_details"],
        needs_iommu: false,
        tests: Tests::All,
    },
    FitKey {
        name: "root_complex.write_own_llc_ns",
        mechanism: "write ownership of a line in the LLC",
        lo: 0.0,
        hi: MAX_NS,
        scale: Scale::Linear,
        step: 10.0,
        groups: &["lat_dma_sweep_wrrd", "lat_dma_details"],
        needs_iommu: true,
        tests: Tests::All,
    },
    FitKey {
        name: "iommu.walk_ns",
        mechanism: "IO-TLB miss page walk",
        lo: 1.0,
        hi: MAX_NS,
        scale: Scale::Linear,
        step: 10.0,
        groups: &["lat_dma_sweep", "lat_cmd_sweep", "lat_dma_details", "lat_cmd_details"],
        needs_iommu: true,
        tests: Tests::OneLine,
    },
    FitKey {
        name: "iommu.iotlb_entries",
        mechanism: "IO-TLB reach",
        lo: 1.0,
        hi: 65536.0,
        scale: Scale::Log2,
        step: 1.0,
        groups: &["lat_dma_sweep", "lat_cmd_sweep", "bw_dma_win_sweep"],
        needs_iommu: true,
        tests: Tests::All,
    },
    FitKey {
        name: "iommu.walk_busy_ns",
        mechanism: "page walk occupancy of the fabric path",
        lo: 0.0,
        hi: MAX_NS,
        scale: Scale::Linear,
        step: 5.0,
        groups: &["bw_dma_win_sweep_rd"],
        needs_iommu: true,
        tests: Tests::All,
    },
    FitKey {
        name: "root_complex.request_ns",
        mechanism: "read pipeline per request",
        lo: 0.01,
        hi: MAX_REQUEST_NS,
        scale: Scale::Linear,
        step: 1.0,
        groups: &[
            "bw_dma_sz_sweep",
            "bw_dma_win_sweep_rd",
            "bw_dma_off_rd",
            "lat_dma_details",
        ],
        needs_iommu: false,
        tests: Tests::ManyLineReads,
    },
    FitKey {
        name: "root_complex.line_ns",
        mechanism: "read pipeline per line",
        lo: 0.01,
        hi: MAX_LINE_NS,
        scale: Scale::Linear,
        step: 0.25,
        groups: &["bw_dma_sz_sweep", "bw_dma_win_sweep_rd", "lat_dma_details"],
        needs_iommu: false,
        tests: Tests::ManyLineReads,
    },
    FitKey {
        name: "root_complex.write_line_ns",
        mechanism: "posted write path per line",
        lo: 0.01,
        hi: MAX_LINE_NS,
        scale: Scale::Linear,
        step: 0.25,
        groups: &[
            "bw_dma_sz_sweep",
            "bw_dma_win_sweep_wr",
            "bw_dma_off_wr",
            "lat_dma_details",
        ],
        needs_iommu: false,
        tests: Tests::ManyLines,
    },
    FitKey {
        name: "root_complex.fc_update_ns",
        mechanism: "root port's UpdateFC timer (posted credits of writes alone)",
        lo: 1.0,
        hi: 45_000.0,
        scale: Scale::Linear,
        step: 50.0,
        groups: &["bw_dma_sz_sweep", "bw_dma_win_sweep_wr", "bw_dma_off_wr"],
        needs_iommu: false,
        tests: Tests::WriteBandwidth,
    },
    FitKey {
        name: "memory.dram_tail.prob",
        mechanism: "DRAM latency tail (refresh, bank conflicts)",
        lo: 0.0,
        hi: 1.0,
        scale: Scale::Linear,
        step: 0.01,
        groups: &["lat_dma_details", "lat_cmd_details"],
        needs_iommu: false,
        tests: Tests::All,
    },
    FitKey {
        name: "power.tick_ns",
        mechanism: "uncore power states (the controller's tick)",
        lo: 1.0,
        hi: MAX_NS,
        scale: Scale::Linear,
        step: 50.0,
        groups: &["lat_dma_sizes", "lat_dma_details", "lat_dma_sweep_rd"],
        needs_iommu: false,
        tests: Tests::All,
    },
];

/// Whether `test` of the measured table `base` (run with `iommu`) identifies `key`: for an
/// IOMMU mechanism only when measured with the IOMMU on; then, for a table named as one of
/// pcie-bench's ([`pcie_bench_table`]), when its name starts with one of this key's groups, as
/// the hand calibration chose; for a table of any other name (a custom suite's, a single
/// test's `lat_rd`), when the test is like those of one of this key's groups
/// ([`paper_groups_of`]); and in either case when it is one of the key's [`Tests`].
pub fn identifies(key: &FitKey, base: &str, iommu: Iommu, test: &TestParams) -> bool {
    let grouped = |g: &str| key.groups.iter().any(|k| g.starts_with(k));
    (!key.needs_iommu || iommu != Iommu::Off)
        && if pcie_bench_table(base) {
            grouped(base)
        } else {
            paper_groups_of(test).any(grouped)
        }
        && key.tests.take(test)
}

/// Whether a table is named as pcie-bench's: one of its paper suite's tables, or starting with
/// one of the groups any key is identified by.
pub fn pcie_bench_table(base: &str) -> bool {
    paper().iter().any(|g| g.base == base) || KEYS.iter().flat_map(|k| k.groups).any(|g| base.starts_with(g))
}

/// pcie-bench's paper suite, the built-in one.
fn paper() -> &'static [Group] {
    static PAPER: OnceLock<Vec<Group>> = OnceLock::new();
    PAPER.get_or_init(|| Suite::builtin("paper").map(|s| s.groups().to_vec()).unwrap_or_default())
}

/// Windows up to this size are one kind of test: every line stays in the LLC and the IO-TLB,
/// whatever the exact size (pcie-bench's smallest sweep points, 1 KB to 64 KB).
const SMALL_WINDOW: u64 = 64 << 10;

/// The groups of pcie-bench's paper suite that hold a test like `test`: of its kind and cache
/// state, its size, window and offsets within the group's ranges (windows up to
/// [`SMALL_WINDOW`] count as one). The suite simulates the test's own parameters; this only
/// says which mechanisms it exercises, as the hand calibration found for those groups.
pub fn paper_groups_of(test: &TestParams) -> impl Iterator<Item = &'static str> + '_ {
    // Within the smallest and largest of `of`, which are 0 where it has none (offsets).
    fn within<T: Copy + Ord + Default>(v: T, of: impl Iterator<Item = T> + Clone) -> bool {
        let lo = of.clone().min().unwrap_or_default();
        let hi = of.max().unwrap_or_default();
        (lo..=hi).contains(&v)
    }
    let class = |w: u64| w.max(SMALL_WINDOW);
    paper()
        .iter()
        .filter(move |g| {
            g.tests.contains(&test.kind)
                && g.caches.contains(&test.cache)
                && within(test.size, g.sizes.iter().copied())
                && within(class(test.window), g.windows.iter().map(|&w| class(w)))
                && within(test.host_offset, g.host_offsets.iter().copied())
                && within(test.device_offset, g.device_offsets.iter().copied())
        })
        .map(|g| g.base.as_str())
}

/// The value at a dotted name, where the profile has it as a number; a spread reads as its
/// mode.
pub fn get(profile: &Value, name: &str) -> Option<f64> {
    let v = lookup(profile, name)?;
    match v {
        Value::Object(o) => o.get("mode_ns")?.as_f64(),
        v => v.as_f64(),
    }
}

/// Sets the dotted name to `value` (a spread moves whole so its mode lands there; its lower
/// end stops at 0). Returns false where the profile has no such number.
pub fn set(profile: &mut Value, name: &str, value: f64, scale: Scale) -> bool {
    let Some(v) = lookup_mut(profile, name) else {
        return false;
    };
    match v {
        Value::Object(o) => {
            let Some(mode) = o.get("mode_ns").and_then(Value::as_f64) else {
                return false;
            };
            let shift = value - mode;
            for k in ["min_ns", "mode_ns", "max_ns"] {
                if let Some(x) = o.get(k).and_then(Value::as_f64) {
                    o.insert(k.into(), number((x + shift).max(0.0)));
                }
            }
            true
        }
        Value::Number(n) if n.is_f64() => {
            *v = number(value);
            true
        }
        Value::Number(_) if scale == Scale::Log2 => {
            *v = Value::from(value.round() as u64);
            true
        }
        _ => false,
    }
}

/// A number rounded to 0.01 ns (or 1e-6 for a probability), so the written profile is short.
fn number(x: f64) -> Value {
    let q = if x.abs() < 1.0 { 1e6 } else { 100.0 };
    Value::from((x * q).round() / q)
}

fn lookup<'a>(v: &'a Value, name: &str) -> Option<&'a Value> {
    name.split('.').try_fold(v, |v, k| v.get(k)).filter(|v| !v.is_null())
}

fn lookup_mut<'a>(v: &'a mut Value, name: &str) -> Option<&'a mut Value> {
    name.split('.')
        .try_fold(v, |v, k| v.get_mut(k))
        .filter(|v| !v.is_null())
}

#[cfg(test)]
mod tests {
    use super::*;
    use pcie_sim::HostProfile;

    #[test]
    fn keys_read_and_set_by_dotted_name_and_spreads_move_whole() {
        let mut v = serde_json::to_value(HostProfile::load("e5-2637v3").unwrap()).unwrap();
        assert_eq!(get(&v, "memory.dram"), Some(208.0));
        assert!(set(&mut v, "memory.dram", 200.0, Scale::Linear));
        assert_eq!(v["memory"]["dram"]["min_ns"], 187.0);
        assert_eq!(v["memory"]["dram"]["max_ns"], 210.0);
        assert!(set(&mut v, "iommu.iotlb_entries", 127.6, Scale::Log2));
        assert_eq!(v["iommu"]["iotlb_entries"], 128);
        // The E5 has no power states: nothing to set.
        assert_eq!(get(&v, "power.tick_ns"), None);
        assert!(!set(&mut v, "power.tick_ns", 5.0, Scale::Linear));
        for k in KEYS {
            assert!(k.lo < k.hi, "{}", k.name);
        }
    }

    fn test(kind: TestKind, size: u32, window: u64, cache: CacheState) -> TestParams {
        TestParams {
            size,
            window,
            cache,
            ..pcie_bench::params::sample(kind, 1)
        }
    }

    fn key(name: &str) -> &'static FitKey {
        KEYS.iter().find(|k| k.name == name).unwrap()
    }

    #[test]
    fn iommu_mechanisms_need_a_run_with_the_iommu() {
        let (walk, t) = (
            key("iommu.walk_ns"),
            test(TestKind::LatRd, 64, 1 << 20, CacheState::HWarm),
        );
        assert!(!identifies(walk, "lat_dma_sweep_rd_rnd_64", Iommu::Off, &t));
        assert!(identifies(walk, "lat_dma_sweep_rd_rnd_64", Iommu::Pages4K, &t));
        assert!(!identifies(walk, "bw_dma_sz_sweep", Iommu::Pages4K, &t));
        assert!(identifies(walk, "my_lat_rd", Iommu::Pages4K, &t), "by its test");
    }

    #[test]
    fn a_table_of_another_name_identifies_by_its_tests() {
        let groups = |t: &TestParams| paper_groups_of(t).collect::<Vec<_>>();
        // pcie-bench's sweep point and its details' 64 MB point; not the sizes' 8 KB window.
        let far = test(TestKind::LatRd, 64, 64 << 20, CacheState::Cold);
        assert_eq!(groups(&far), ["lat_dma_sweep_rd_rnd_64", "lat_dma_details"]);
        // Windows up to 64 KB are one kind: 4 KB is where the sizes' 8 KB is.
        let near = test(TestKind::LatRd, 64, 4 << 10, CacheState::HWarm);
        assert_eq!(
            groups(&near),
            [
                "lat_dma_sizes",
                "lat_dma_sweep_rd_rnd_64",
                "lat_dma_off_rd",
                "lat_dma_details"
            ]
        );
        let odd = TestParams {
            host_offset: 70,
            ..near
        };
        assert!(!groups(&odd).contains(&"lat_dma_off_rd"), "offsets beyond the sweep's");
        let cmd = test(TestKind::LatCmdRd, 8, 4 << 10, CacheState::DThrash);
        assert!(
            groups(&cmd).iter().all(|g| g.starts_with("lat_cmd_sweep_rd")),
            "{:?}",
            groups(&cmd)
        );
        assert!(
            groups(&test(TestKind::BwRdWr, 64, 64 << 20, CacheState::Cold)).is_empty(),
            "no such test"
        );
        // A single test's table: the memory latencies its tests are of, and their Tests.
        let (dram, io_line) = (key("memory.dram"), key("memory.io_line"));
        assert!(identifies(dram, "lat_rd", Iommu::Off, &far));
        assert!(
            !identifies(io_line, "lat_rd", Iommu::Off, &far),
            "a DMA read, not a command"
        );
        assert!(
            !identifies(dram, "lat_rd", Iommu::Off, &TestParams { size: 128, ..far }),
            "two lines"
        );
        // A table named as pcie-bench's identifies by its name, whatever its tests.
        assert!(!identifies(dram, "lat_dma_sizes", Iommu::Off, &far));
        assert!(pcie_bench_table("lat_dma_sizes_byte_inc") && !pcie_bench_table("lat_rd"));
        // So is one that identifies no key by its name: its tests do not either.
        let off = TestParams {
            kind: TestKind::LatCmdRd,
            ..far
        };
        assert!(pcie_bench_table("lat_cmd_off_rd") && !identifies(dram, "lat_cmd_off_rd", Iommu::Off, &off));
        assert!(identifies(dram, "my_cmd", Iommu::Off, &off));
        // The built-in suites keep pcie-bench's names: their tables identify as they always did.
        for name in Suite::builtin_names() {
            let suite = Suite::builtin(name).unwrap();
            assert!(suite.bases().iter().all(|b| pcie_bench_table(b)), "{name}");
        }
    }

    #[test]
    fn one_line_tests_hold_no_per_line_cost_and_many_line_tests_all() {
        let t = |kind, size, host_offset| TestParams {
            kind,
            size,
            host_offset,
            ..pcie_bench::params::sample(kind, 1)
        };
        // 64 B at offset 0 is one line; at offset 1, or 65 B, two.
        assert!(Tests::OneLineReads.take(&t(TestKind::LatRd, 64, 0)));
        assert!(!Tests::OneLineReads.take(&t(TestKind::LatRd, 64, 1)));
        assert!(!Tests::OneLineReads.take(&t(TestKind::LatRd, 65, 0)));
        assert!(!Tests::OneLineReads.take(&t(TestKind::LatWrRd, 8, 0)));
        assert!(Tests::OneLineReads.take(&t(TestKind::LatCmdRd, 8, 0)));
        assert!(Tests::OneLine.take(&t(TestKind::LatWrRd, 8, 0)));
        assert!(!Tests::OneLine.take(&t(TestKind::LatWrRd, 128, 0)));
        assert!(!Tests::OneLine.take(&t(TestKind::BwWr, 64, 0)));
        assert!(Tests::ManyLines.take(&t(TestKind::LatWrRd, 2048, 0)));
        assert!(Tests::ManyLines.take(&t(TestKind::LatRd, 64, 1)));
        assert!(Tests::ManyLines.take(&t(TestKind::BwRd, 64, 0)));
        assert!(!Tests::ManyLines.take(&t(TestKind::LatRd, 64, 0)));
        // The read pipeline's keys: reads of more than one line, and read bandwidth.
        assert!(Tests::ManyLineReads.take(&t(TestKind::LatRd, 2048, 0)));
        assert!(Tests::ManyLineReads.take(&t(TestKind::BwRdWr, 64, 0)));
        assert!(!Tests::ManyLineReads.take(&t(TestKind::LatWrRd, 2048, 0)));
        assert!(!Tests::ManyLineReads.take(&t(TestKind::BwWr, 2048, 0)));
        assert!(!Tests::ManyLineReads.take(&t(TestKind::LatCmdRd, 8, 0)));
        // The UpdateFC timer: write bandwidth alone.
        assert!(Tests::WriteBandwidth.take(&t(TestKind::BwWr, 64, 0)));
        assert!(!Tests::WriteBandwidth.take(&t(TestKind::BwRdWr, 2048, 0)));
        assert!(!Tests::WriteBandwidth.take(&t(TestKind::LatWrRd, 2048, 0)));
        assert!([TestKind::LatRd, TestKind::BwWr]
            .iter()
            .all(|&k| Tests::All.take(&t(k, 64, 0))));
        // The LLC's size and its DDIO share: latencies of windows the host or the device warmed.
        let take = |tests: Tests, kind, cache| {
            tests.take(&TestParams {
                cache,
                ..t(kind, 64, 0)
            })
        };
        assert!(take(Tests::HostWarmed, TestKind::LatRd, CacheState::HWarm));
        assert!(!take(Tests::HostWarmed, TestKind::LatRd, CacheState::DWarm));
        assert!(take(Tests::DeviceWarmed, TestKind::LatCmdWrRd, CacheState::DWarm));
        assert!(!take(Tests::DeviceWarmed, TestKind::LatRd, CacheState::Cold));
        assert!(!take(Tests::HostWarmed, TestKind::BwRd, CacheState::HWarm));
        // An LLC's size is a whole number of bytes, searched on its logarithm.
        let mut v = serde_json::to_value(HostProfile::load("e5-2637v3").unwrap()).unwrap();
        assert!(set(&mut v, "memory.llc_bytes", 20_971_519.6, Scale::Log2));
        assert_eq!(v["memory"]["llc_bytes"], 20_971_520);
    }
}
