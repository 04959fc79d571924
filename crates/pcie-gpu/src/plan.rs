//! What a test asks of the GPU, worked out on the host: the addresses it visits, how its
//! stores split into aligned pieces, the launch geometry, the copy engines' batches and the
//! latency loop's fixed cost. Pure functions, so the mapping is tested without a GPU.

use pcie_bench::params::{TestKind, TestParams};
use pcie_bench::runner::{test_seed, workload};
use pcie_sim::{Addresses, Rng};

/// Threads per block of the bandwidth kernel.
pub const BLOCK_THREADS: u32 = 256;
/// Blocks per SM of the bandwidth kernel: enough warps in flight to keep thousands of reads
/// outstanding (H100: 132 SMs x 8 x 256 = 270,336 threads), the way the NFP keeps its tags busy.
pub const BLOCKS_PER_SM: u32 = 8;
/// Copy engines' streams (`ce`): copies are spread over them round-robin, so several copy
/// engines work at once, as nvbandwidth does.
pub const CE_STREAMS: usize = 4;
/// Copies queued behind the gate at a time (`ce`): few enough (128 a stream) that the driver
/// queues them all without blocking while the gate holds the streams, so the events time the
/// copy engines' work and not the host's submission of it (2-4 us a copy).
pub const CE_BATCH: usize = 512;
/// Longest the gate holds its stream, in ns: far longer than queueing a batch takes (about
/// 2 ms); a gate opened by this timeout means the driver would not queue ahead, and the test
/// fails rather than time the host.
pub const GATE_TIMEOUT_NS: u64 = 1_000_000_000;

/// One kernel argument, by value, as the PTX entry declares it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arg {
    U32(u32),
    U64(u64),
}

/// A launch's arguments, named as the PTX entry names its parameters (ptx.rs checks the names
/// and their order against the text).
pub type Args<const N: usize> = [(&'static str, Arg); N];

/// Device addresses a test's kernels work on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Buffers {
    /// The host buffer as the GPU sees it.
    pub host: u64,
    /// The address table and its entries.
    pub table: u64,
    pub entries: u32,
    /// Latency: samples and totals; bandwidth: the sink.
    pub out: u64,
    pub totals: u64,
}

/// The latency kernel's arguments for test `t` (`kind` from [`latency_kind`]); `dry` runs
/// the loop without touching host memory, to measure its fixed cost.
pub fn latency_args(t: &TestParams, b: Buffers, kind: u32, use_clock: bool, dry: bool) -> Args<13> {
    let stores = Stores::split(t.host_offset, t.size);
    [
        ("buf", Arg::U64(b.host)),
        ("offs", Arg::U64(b.table)),
        ("table", Arg::U32(b.entries)),
        ("n", Arg::U32(t.count as u32)),
        ("size", Arg::U32(t.size)),
        ("head", Arg::U32(stores.head)),
        ("body", Arg::U32(stores.body)),
        ("kind", Arg::U32(kind)),
        ("clock", Arg::U32(use_clock as u32)),
        ("zero", Arg::U32(0)),
        ("dry", Arg::U32(dry as u32)),
        ("lat", Arg::U64(b.out)),
        ("totals", Arg::U64(b.totals)),
    ]
}

/// The bandwidth kernel's arguments for test `t` (`mode` from [`bandwidth_mode`]).
pub fn bandwidth_args(t: &TestParams, b: Buffers, mode: u32) -> Args<10> {
    let stores = Stores::split(t.host_offset, t.size);
    [
        ("buf", Arg::U64(b.host)),
        ("offs", Arg::U64(b.table)),
        ("table", Arg::U32(b.entries)),
        ("n", Arg::U32(t.count as u32)),
        ("size", Arg::U32(t.size)),
        ("head", Arg::U32(stores.head)),
        ("body", Arg::U32(stores.body)),
        ("lanes", Arg::U32(lanes(t.size))),
        ("mode", Arg::U32(mode)),
        ("sink", Arg::U64(b.out)),
    ]
}

/// Entries of the address table the kernels cycle through (8 MB of device memory): DMA i uses
/// entry i mod the table's length, so any count runs in bounded memory; random patterns repeat
/// after 1,048,576 DMAs.
pub const TABLE_MAX: u64 = 1 << 20;

/// Byte offsets into the host buffer of the test's first DMAs, in issue order (pcie-bench's
/// units: the same addresses the simulator visits for the same seed), at most [`TABLE_MAX`].
pub fn offsets(t: &TestParams, seed: u64) -> Vec<u64> {
    let mut addrs = Addresses::new(&workload(t));
    let mut rng = Rng::new(test_seed(seed, t));
    (0..t.count.min(TABLE_MAX)).map(|_| addrs.next(&mut rng)).collect()
}

/// How a DMA's stores split: `head` single bytes up to the first 16-byte boundary, `body`
/// bytes in aligned 16-byte stores, then the tail (under 16 bytes) in single bytes. The DMAs
/// start at `unit * k + host_offset` with units a multiple of 64 bytes, so the host offset
/// decides the alignment: a 65-byte DMA is four 16-byte stores and one byte, not 65 bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stores {
    pub head: u32,
    pub body: u32,
    pub tail: u32,
}

impl Stores {
    pub fn split(host_offset: u32, size: u32) -> Stores {
        let head = ((16 - host_offset % 16) % 16).min(size);
        let body = (size - head) / 16 * 16;
        Stores {
            head,
            body,
            tail: size - head - body,
        }
    }
}

/// Threads that move one DMA in the bandwidth kernel: one per 16-byte piece, rounded up to a
/// power of two so a group never straddles a warp, at most a warp.
pub fn lanes(size: u32) -> u32 {
    size.div_ceil(16).next_power_of_two().min(32)
}

/// Blocks of the bandwidth kernel for a GPU with `sms` multiprocessors.
pub fn bandwidth_blocks(sms: u32) -> u32 {
    sms.max(1) * BLOCKS_PER_SM
}

/// The bandwidth kernel's mode: 0 reads, 1 writes, 2 both (even DMAs read).
pub fn bandwidth_mode(kind: TestKind) -> Option<u32> {
    match kind {
        TestKind::BwRd => Some(0),
        TestKind::BwWr => Some(1),
        TestKind::BwRdWr => Some(2),
        _ => None,
    }
}

/// The latency kernel's kind: 0 LAT_RD, 1 LAT_WRRD.
pub fn latency_kind(kind: TestKind) -> Option<u32> {
    match kind {
        TestKind::LatRd => Some(0),
        TestKind::LatWrRd => Some(1),
        _ => None,
    }
}

/// Bytes and transactions pcie-bench counts for a bandwidth test of `count` DMAs: BW_RDWR counts
/// one direction, half of the DMAs.
pub fn bandwidth_totals(t: &TestParams) -> (u64, u64) {
    let dmas = match t.kind {
        TestKind::BwRdWr => t.count / 2,
        _ => t.count,
    };
    (dmas * t.size as u64, dmas)
}

/// The timer the latency kernel uses, from the probe's measurements: the SM clock when one of
/// its cycles is shorter than the global timer's smallest step (the usual case), else the
/// global timer. Returns (use the SM clock, picoseconds per tick).
pub fn choose_timer(globaltimer_step_ns: u64, probe_ns: u64, probe_cycles: u64) -> (bool, f64) {
    let clock_ps = if probe_cycles > 0 {
        probe_ns as f64 * 1000.0 / probe_cycles as f64
    } else {
        f64::INFINITY
    };
    let global_ps = globaltimer_step_ns.max(1) as f64 * 1000.0;
    if clock_ps < global_ps {
        (true, clock_ps)
    } else {
        (false, 1000.0)
    }
}

/// The latency loop's fixed cost in timer ticks, from a dry run's samples (the same loop, no
/// host access): their median, as pcie-bench subtracts its measured loop overhead.
pub fn overhead_ticks(dry: &[u32]) -> u32 {
    let mut v = dry.to_vec();
    v.sort_unstable();
    v.get(v.len() / 2).copied().unwrap_or(0)
}

/// Takes the fixed cost out of every sample (a sample below it, timer jitter, becomes 0).
pub fn subtract_overhead(samples: &mut [u32], overhead: u32) {
    for s in samples {
        *s = s.saturating_sub(overhead);
    }
}

/// Splits `n` copies into the gate's batches of at most [`CE_BATCH`]: (first copy, copies).
pub fn ce_batches(n: u64) -> impl Iterator<Item = (u64, usize)> {
    (0..n)
        .step_by(CE_BATCH)
        .map(move |first| (first, (n - first).min(CE_BATCH as u64) as usize))
}

/// A test of the given shape, 1000 transactions, for the unit tests.
#[cfg(test)]
pub(crate) fn test(
    kind: TestKind,
    size: u32,
    host_offset: u32,
    window: u64,
    pattern: pcie_bench::params::Pattern,
) -> TestParams {
    TestParams {
        kind,
        size,
        window,
        host_offset,
        device_offset: 0,
        pattern,
        cache: pcie_bench::params::CacheState::HWarm,
        count: 1000,
        numa: pcie_bench::params::Numa::default(),
        iommu: pcie_bench::params::Iommu::Off,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pcie_bench::params::Pattern;

    #[test]
    fn sequential_offsets_walk_the_window_in_units_and_wrap() {
        let t = test(TestKind::LatRd, 64, 0, 8192, Pattern::Seq);
        let o = offsets(&t, 1);
        assert_eq!(o.len(), 1000);
        assert_eq!(&o[..3], &[0, 64, 128]);
        assert_eq!(o[128], 0, "8 KB holds 128 units of 64 B");
        // 100 B at offset 8: units of 128 B, each starting 8 bytes in.
        let t = test(TestKind::BwRd, 100, 8, 8192, Pattern::Seq);
        assert_eq!(&offsets(&t, 1)[..3], &[8, 136, 264]);
    }

    #[test]
    fn random_offsets_stay_in_the_window_never_cross_a_page_and_follow_the_seed() {
        let t = test(TestKind::LatRd, 2000, 60, 1 << 20, Pattern::Rand);
        let o = offsets(&t, 7);
        assert!(o.iter().all(|&a| a + 2000 <= 1 << 20));
        assert!(
            o.iter().all(|&a| a / 4096 == (a + 1999) / 4096),
            "no DMA crosses a 4 KB page"
        );
        assert!(o.iter().all(|&a| a % 64 == 60));
        assert_eq!(o, offsets(&t, 7));
        assert_ne!(o, offsets(&t, 8));
        let distinct: std::collections::BTreeSet<_> = o.iter().collect();
        assert!(distinct.len() > 100, "random units spread over the window");
    }

    #[test]
    fn copies_larger_than_a_page_tile_the_window() {
        let t = test(TestKind::BwRd, 2 << 20, 0, 64 << 20, Pattern::Seq);
        let o = offsets(&t, 1);
        assert_eq!(&o[..3], &[0, 2 << 20, 4 << 20]);
        assert_eq!(o[32], 0, "64 MiB holds 32 copies of 2 MiB");
        let t = test(TestKind::BwWr, 2 << 20, 0, 64 << 20, Pattern::Rand);
        assert!(offsets(&t, 1)
            .iter()
            .all(|&a| a % (2 << 20) == 0 && a + (2 << 20) <= 64 << 20));
    }

    #[test]
    fn the_table_is_bounded_whatever_the_count() {
        let mut t = test(TestKind::BwRd, 64, 0, 8192, Pattern::Rand);
        t.count = u32::MAX as u64;
        assert_eq!(offsets(&t, 1).len() as u64, TABLE_MAX);
    }

    #[test]
    fn odd_sizes_keep_wide_stores_and_a_narrow_tail() {
        let split = |off, size| {
            let s = Stores::split(off, size);
            (s.head, s.body, s.tail)
        };
        assert_eq!(split(0, 64), (0, 64, 0));
        assert_eq!(split(0, 65), (0, 64, 1), "four 16-byte stores and one byte");
        assert_eq!(split(0, 129), (0, 128, 1));
        assert_eq!(split(0, 257), (0, 256, 1));
        assert_eq!(split(0, 1025), (0, 1024, 1));
        assert_eq!(split(32, 2048), (0, 2048, 0));
        assert_eq!(split(1, 64), (15, 48, 1));
        assert_eq!(split(4, 68), (12, 48, 8));
        assert_eq!(split(63, 8), (1, 0, 7));
        assert_eq!(split(8, 8), (8, 0, 0), "a DMA inside the first 16 bytes is all head");
        assert_eq!(split(0, 15), (0, 0, 15));
        for off in 0..64 {
            for size in 1..=300 {
                let s = Stores::split(off, size);
                assert_eq!(s.head + s.body + s.tail, size, "{off} {size}");
                assert!(
                    s.head < 16 && s.tail < 16 && s.body.is_multiple_of(16),
                    "{off} {size}: {s:?}"
                );
                assert!(
                    s.body == 0 || (off + s.head).is_multiple_of(16),
                    "the body is 16-byte aligned"
                );
            }
        }
    }

    #[test]
    fn every_dma_starts_at_the_host_offset_s_alignment() {
        // The kernels split each DMA by the host offset alone: every start must share it mod 16.
        for (size, off, pattern) in [
            (65, 0, Pattern::Rand),
            (129, 4, Pattern::Seq),
            (2048, 63, Pattern::Rand),
        ] {
            let t = test(TestKind::BwWr, size, off, 1 << 20, pattern);
            assert!(offsets(&t, 3).iter().all(|a| a % 16 == off as u64 % 16), "{size} {off}");
        }
    }

    #[test]
    fn the_fixed_cost_is_the_dry_median_and_comes_off_every_sample() {
        assert_eq!(overhead_ticks(&[260, 250, 900, 251, 249]), 251);
        assert_eq!(overhead_ticks(&[]), 0);
        let mut s = [2900, 2600, 240, 251];
        subtract_overhead(&mut s, 251);
        assert_eq!(s, [2649, 2349, 0, 0]);
    }

    #[test]
    fn copies_go_in_bounded_batches() {
        let b: Vec<_> = ce_batches(1100).collect();
        assert_eq!(b, [(0, 512), (512, 512), (1024, 76)]);
        assert_eq!(ce_batches(200_000).map(|(_, n)| n as u64).sum::<u64>(), 200_000);
        assert!(ce_batches(200_000).all(|(_, n)| n <= CE_BATCH));
        assert_eq!(ce_batches(0).count(), 0);
    }

    #[test]
    fn lanes_are_a_power_of_two_up_to_a_warp() {
        assert_eq!(lanes(1), 1);
        assert_eq!(lanes(16), 1);
        assert_eq!(lanes(17), 2);
        assert_eq!(lanes(64), 4);
        assert_eq!(lanes(100), 8);
        assert_eq!(lanes(512), 32);
        assert_eq!(lanes(4096), 32);
        for size in 1..=4096 {
            let l = lanes(size);
            assert!(l.is_power_of_two() && 32 % l == 0, "{size}: {l}");
        }
    }

    #[test]
    fn geometry_and_modes() {
        assert_eq!(bandwidth_blocks(132), 1056);
        assert_eq!(bandwidth_blocks(0), BLOCKS_PER_SM);
        assert_eq!(bandwidth_mode(TestKind::BwRdWr), Some(2));
        assert_eq!(bandwidth_mode(TestKind::LatRd), None);
        assert_eq!(latency_kind(TestKind::LatWrRd), Some(1));
        assert_eq!(latency_kind(TestKind::LatCmdRd), None);
        let t = test(TestKind::BwRdWr, 64, 0, 8192, Pattern::Seq);
        assert_eq!(bandwidth_totals(&t), (500 * 64, 500));
    }

    #[test]
    fn arguments_carry_the_test() {
        let t = test(TestKind::LatWrRd, 68, 4, 8192, Pattern::Rand);
        let b = Buffers {
            host: 0x7000_0000,
            table: 0x1000,
            entries: 1000,
            out: 0x2000,
            totals: 0x3000,
        };
        let a = latency_args(&t, b, 1, true, false);
        let get = |name| a.iter().find(|(n, _)| *n == name).unwrap().1;
        assert_eq!(get("n"), Arg::U32(1000));
        assert_eq!(get("size"), Arg::U32(68));
        assert_eq!((get("head"), get("body")), (Arg::U32(12), Arg::U32(48)));
        assert_eq!(get("kind"), Arg::U32(1));
        assert_eq!(get("clock"), Arg::U32(1));
        assert_eq!(get("zero"), Arg::U32(0), "the dependency trick needs a run-time zero");
        assert_eq!(get("dry"), Arg::U32(0));
        assert_eq!(latency_args(&t, b, 1, true, true)[10], ("dry", Arg::U32(1)));
        let t = test(TestKind::BwRdWr, 100, 0, 8192, Pattern::Seq);
        let a = bandwidth_args(&t, b, 2);
        assert_eq!((a[5], a[6]), (("head", Arg::U32(0)), ("body", Arg::U32(96))));
        assert_eq!(a[7], ("lanes", Arg::U32(8)));
        assert_eq!(a[8], ("mode", Arg::U32(2)));
        assert_eq!(a[9], ("sink", Arg::U64(0x2000)));
    }

    #[test]
    fn the_finer_timer_wins() {
        // H100-like: globaltimer steps of 32 ns, SM clock 1.98 GHz.
        let (clock, ps) = choose_timer(32, 2_000_000, 3_960_000);
        assert!(clock);
        assert!((ps - 505.05).abs() < 0.01, "{ps}");
        // A global timer finer than the clock (or a clock that did not tick): the global timer.
        assert_eq!(choose_timer(1, 2_000_000, 1_000_000), (false, 1000.0));
        assert_eq!(choose_timer(32, 2_000_000, 0), (false, 1000.0));
    }
}
