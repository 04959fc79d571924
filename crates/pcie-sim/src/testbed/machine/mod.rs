//! The DMA test bed's machine: device DMA engine, link, root complex, IOMMU and memory,
//! advanced transaction by transaction.
//!
//! Every resource is a FIFO server that remembers when it is next free ([`crate::queue`]), and
//! every transaction passes the resources in a fixed order, so each stage's event time is
//! `start = max(arrival, resource free)`, `free = start + occupancy`. Transactions are started in
//! time order (the earliest free DMA thread claims the next one, kept in a heap of thread free
//! times), which makes this an exact discrete-event simulation for FIFO resources without a
//! general event queue; the only approximation is that a resource serves transactions in start
//! order rather than strictly in arrival order when their memory latencies overtake each other.
//! The PMU host simulator ([`crate::pmu_host`]), whose jobs wait on each other, keeps the event
//! loop keyed on time and sequence that the design describes.
//!
//! The machine's steps live beside it: [`memory`] (the fabric path, IOMMU, where a line is,
//! power states), [`dma`] (the DMA engines' reads and writes), [`command`] (the NFP's direct
//! command path) and [`run`] (the latency and bandwidth test loops).

mod command;
mod dma;
mod memory;
mod run;
mod shape;

pub use run::Measured;

use super::costs::Costs;
use super::iommu::Iotlb;
use super::llc::{LineState, Llc};
use super::power::PowerStates;
use super::profile::{DeviceProfile, HostProfile};
use super::tlp_time::TlpTimes;
use super::wire::Wire;
use super::workload::{CachePrep, TestOp, Workload, BUFFER_BYTES};
use super::LINE;
use crate::distribution::Sampler;
use crate::queue::{Pool, Server, Tokens};
use crate::rng::Rng;
use crate::time::{ps, Ps};
use pcie_model::LinkConfig;
use shape::Shapes;

/// How many pieces `[addr, addr + len)` is cut into at multiples of `boundary`, a power of two
/// (a line, MPS or MRRS): shifts, not divisions, as this runs for every DMA.
fn pieces(addr: u64, len: u32, boundary: u32) -> u64 {
    let shift = boundary.trailing_zeros();
    ((addr + len as u64 - 1) >> shift) - (addr >> shift) + 1
}

/// Touches per FIFO slot after which a thrashed FIFO (the DDIO share, the IO-TLB) holds the same
/// lines as after any longer thrash: a slot outlives one turnover only where the touch that
/// would have replaced it hit a line still held, and almost every touch misses (the DDIO share
/// is 2.5 % of the E5's buffer). Checked against the whole thrash in the tests below.
const FIFO_TURNOVER: u64 = 4;

/// Everything with state.
pub struct Machine<'a> {
    host: &'a HostProfile,
    dev: &'a DeviceProfile,
    link: &'a LinkConfig,
    rng: Rng,
    up: Wire,
    down: Wire,
    read_engine: Server,
    write_engine: Server,
    bus: Server,
    /// Release times of the read tags in use, oldest first.
    tags: Tokens,
    /// The root complex's path into the coherent fabric: read requests, the lines they fetch,
    /// posted writes and the IOMMU's page-walk reads all take their turn in it.
    fabric: Server,
    /// When the port frees the posted credits in use, oldest first.
    posted: Tokens,
    /// When the last completion of the reads simulated so far leaves the root complex: until
    /// then the port's transmitter is sending completions, and an UpdateFC goes with them at
    /// once rather than at the port's next UpdateFC tick (`root_complex.fc_update_ns`).
    reads_until: Ps,
    walkers: Pool,
    /// Translates again, one after another, the requests parked while their page was walked.
    replayer: Server,
    llc: Llc,
    iotlb: Option<Iotlb>,
    costs: Costs,
    /// The socket-link hop from the device's root complex to where a line is, by [`LineState`]
    /// in its declaration order: a core's line in the warming CPU's LLC, a DDIO line in the
    /// device socket's LLC, any other in its home memory. Zero where that is the device's socket.
    hop_by_state: [Ps; 3],
    /// What the remote socket's read pipeline adds per line fetched across the link, likewise;
    /// `None` where every line is on the device's socket.
    hop_line_by_state: Option<[Ps; 3]>,
    tlp: TlpTimes,
    /// The test's DMAs cut into TLPs, by offset in the page.
    shapes: Shapes,
    /// How long a posted write waits for ownership of a line, by where it finds it
    /// ([`LineState`], in its declaration order; [`Machine::own_lines`]).
    own_by_state: [Ps; 3],
    llc_hit: Sampler,
    /// `llc_hit_max[n - 1]`: the slowest of `n` lines a core wrote, built when first needed; a
    /// slot for every line count a completion can have (its payload is at most 4 KB).
    llc_hit_max: Vec<Option<Sampler>>,
    io_line: Sampler,
    /// Whether the command path's requests snoop the cores' caches: they do unless they carry
    /// No Snoop (`cmd.no_snoop`), and then still where the IOMMU translates them and forces
    /// snooping (`iommu.snoop_control`).
    cmd_snoops: bool,
    /// Which `cmd.window_bytes` window of the buffer the command path's BAR maps.
    cmd_window: Option<u64>,
    dram: Sampler,
    jitter: Sampler,
    /// The uncore's power states, when the host manages them.
    power: Option<PowerStates>,
}

/// Per-transaction context: where its device-side data lives.
#[derive(Debug, Clone, Copy)]
struct Dma {
    addr: u64,
    size: u32,
}

impl<'a> Machine<'a> {
    pub fn new(host: &'a HostProfile, dev: &'a DeviceProfile, link: &'a LinkConfig, w: &Workload, seed: u64) -> Self {
        let cap = pcie_model::capacity(link).0;
        let wire = Wire {
            server: Server::default(),
            ps_per_byte: 8000.0 / cap,
        };
        let llc_lines = (host.memory.llc_bytes / LINE) as usize;
        // Is the line in this state on the other socket?
        let remote = |state| match state {
            LineState::Memory => w.remote_memory,
            LineState::Cpu => w.remote_cpu,
            LineState::Io => false,
        };
        let states = [LineState::Memory, LineState::Cpu, LineState::Io];
        let hop_by_state = states.map(|s| if remote(s) { ps(host.memory.remote_ns) } else { 0 });
        let hop_line_by_state = Some(states.map(|s| if remote(s) { ps(host.memory.remote_line_ns) } else { 0 }))
            .filter(|hops| *hops != [0; 3]);
        let mut m = Machine {
            host,
            dev,
            link,
            rng: Rng::new(seed),
            up: wire,
            down: wire,
            read_engine: Server::default(),
            write_engine: Server::default(),
            bus: Server::default(),
            tags: Tokens::new(dev.dma.read_tags as usize),
            fabric: Server::default(),
            posted: Tokens::new(host.root_complex.posted_credits as usize),
            reads_until: 0,
            walkers: Pool {
                free: vec![0; host.iommu.walkers as usize],
            },
            replayer: Server::default(),
            llc: Llc::new((BUFFER_BYTES / LINE) as usize, llc_lines, host.memory.ddio_share),
            iotlb: w
                .iommu_page
                .map(|p| Iotlb::new(BUFFER_BYTES, p, host.iommu.iotlb_entries as usize)),
            costs: Costs::new(host, dev),
            hop_by_state,
            hop_line_by_state,
            tlp: TlpTimes::new(link, wire.ps_per_byte),
            shapes: Shapes::new(w.size, !w.device_offset.is_multiple_of(dev.dma.fast_align)),
            own_by_state: states.map(|state| {
                let m = &host.memory;
                // The LLC grants ownership of a core's line and of a DDIO one alike: io_line
                // is the shorter read of a DDIO line, not its ownership.
                let typical = match state {
                    LineState::Cpu | LineState::Io => {
                        ps(host.root_complex.write_own_llc_ns.unwrap_or(m.llc_hit.mode_ns))
                    }
                    LineState::Memory => ps(m.dram.mode_ns),
                };
                typical + hop_by_state[state as usize]
            }),
            llc_hit: Sampler::triangular(&host.memory.llc_hit),
            llc_hit_max: vec![None; (4096 / LINE + 1) as usize],
            io_line: Sampler::triangular(&host.memory.io_line),
            cmd_snoops: !dev.cmd.no_snoop || (w.iommu_page.is_some() && host.iommu.snoop_control),
            cmd_window: None,
            dram: Sampler::triangular(&host.memory.dram),
            jitter: Sampler::triangular(&dev.dma.jitter),
            power: host.power.as_ref().map(PowerStates::new),
        };
        m.prepare(w);
        m
    }

    /// Leave the caches as pcie-bench's warm/thrash steps do.
    fn prepare(&mut self, w: &Workload) {
        let window_lines = (w.window.next_multiple_of(4096) / LINE) as u32;
        match w.prep {
            CachePrep::Cold => {}
            CachePrep::HostWarm => {
                let lines = window_lines.min((BUFFER_BYTES / LINE) as u32) as usize;
                let keep = self.llc.cpu_capacity();
                if lines <= keep {
                    (0..lines as u32).for_each(|l| self.llc.cpu_write(l));
                    return;
                }
                // The LLC resists streams (adaptive insertion, not LRU): a window larger than
                // the LLC leaves a scattered share of its lines resident, not the last ones
                // written. Modelled as warming the lines in a random order (a Fisher-Yates
                // shuffle from the back), of which the last `keep` stay. The shuffle's first
                // `keep` steps fix those places; the other steps only draw, as the whole shuffle
                // would (a 64 MB window's warming was most of a short test's time).
                let mut order: Vec<u32> = (0..lines as u32).collect();
                for i in (lines - keep..lines).rev() {
                    let j = self.rng.below(i as u64 + 1) as usize;
                    order.swap(i, j);
                }
                self.rng.skip((lines - keep - 1) as u64);
                order[lines - keep..].iter().for_each(|&l| self.llc.cpu_write(l));
            }
            CachePrep::DeviceWarm => {
                // pcie-bench warms with command-path writes, which snoop as the path does. Each
                // line is written once, in order, so the DDIO share ends holding the last lines
                // it allocated and the IO-TLB the last pages: only those lines are written (the
                // others end in memory as they began), each page looked up once.
                let (lines, snoop) = ((w.window / LINE) as u32, self.cmd_snoops);
                let first_kept = lines.saturating_sub(self.llc.io_capacity() as u32);
                (first_kept..lines).for_each(|l| {
                    self.llc.device_write(l, snoop);
                });
                if let Some(t) = &mut self.iotlb {
                    if lines > 0 {
                        (0..=t.page_of((lines as u64 - 1) * LINE)).for_each(|p| {
                            t.lookup(p);
                        });
                    }
                }
            }
            CachePrep::DeviceThrash => {
                // pcie-bench thrashes with the routine that warms (command-path writes to
                // random lines; pciebench-nfp me/utils.c), so they snoop as the path does.
                let lines = BUFFER_BYTES / LINE;
                let touches = lines * 2;
                // Only the last touches decide what the DDIO share and the IO-TLB hold at the
                // end: each is a FIFO that a few times its capacity of touches fills with their
                // lines whatever it held before. The earlier touches are drawn, not made.
                let entries = self.iotlb.as_ref().map_or(0, Iotlb::entries);
                let decisive = (FIFO_TURNOVER * (self.llc.io_capacity() + entries) as u64).min(touches);
                self.rng.skip(touches - decisive);
                for _ in 0..decisive {
                    let l = self.rng.below(lines);
                    self.device_touch(l * LINE, self.cmd_snoops);
                }
            }
        }
    }

    /// A device write outside the timed test (warming), snooping or not: caches and IO-TLB, no
    /// timing.
    fn device_touch(&mut self, addr: u64, snoop: bool) {
        self.llc.device_write((addr / LINE) as u32, snoop);
        if let Some(t) = &mut self.iotlb {
            let p = t.page_of(addr);
            t.lookup(p);
        }
    }

    /// Whether the host has none of the mechanisms a DMA's path checks for: no uncore power
    /// states, no line fetched across the socket link at a per-line cost, no IOMMU. The test
    /// loops are instantiated with `BARE` true for such a host, which drops those checks from
    /// every DMA's path (a step called with `BARE` false checks each, as any host needs).
    fn bare(&self) -> bool {
        self.power.is_none() && self.hop_line_by_state.is_none() && self.iotlb.is_none()
    }

    /// One transaction of `op` starting at `t`; returns when the device sees it complete.
    /// Always inlined: the test loops call it for every DMA, and it only picks the steps.
    /// `BARE` only where [`Machine::bare`].
    #[inline(always)]
    fn transaction<const BARE: bool>(&mut self, rng: &mut Rng, op: TestOp, t: Ps, d: Dma, index: u64) -> Ps {
        let complete = self.costs.complete;
        match op {
            TestOp::LatRead | TestOp::BwRead => self.read::<BARE>(rng, t, d, 0, 0) + complete,
            TestOp::BwWrite => self.write::<BARE>(rng, t, d).0 + complete,
            TestOp::BwReadWrite if !index.is_multiple_of(2) => self.read::<BARE>(rng, t, d, 0, 0) + complete,
            TestOp::BwReadWrite => self.write::<BARE>(rng, t, d).0 + complete,
            TestOp::LatWriteRead => {
                // Both DMAs are queued at once; the engines overlap them as ordering allows.
                let (sent, committed) = self.write::<BARE>(rng, t, d);
                self.read::<BARE>(rng, t, d, sent, committed) + complete
            }
            TestOp::LatCmdRead => self.command(rng, t, d, false),
            TestOp::LatCmdWriteRead => self.command(rng, t, d, true),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Simulator;

    fn warmed(window: u64) -> (Simulator, Workload) {
        let w = Workload {
            op: TestOp::LatRead,
            size: 64,
            window,
            host_offset: 0,
            device_offset: 0,
            random: true,
            prep: CachePrep::HostWarm,
            count: 1,
            remote_memory: false,
            remote_cpu: false,
            iommu_page: None,
        };
        (Simulator::load("e5-2637v3", "nfp6000").unwrap(), w)
    }

    /// The caches, IO-TLB and random stream the whole preparation leaves: every line warmed or
    /// thrashed, as pcie-bench's steps touch them.
    fn whole_preparation(m: &Machine, w: &Workload, seed: u64) -> (Llc, Option<Iotlb>, Rng) {
        let (h, lines) = (m.host, BUFFER_BYTES / LINE);
        let mut llc = Llc::new(
            lines as usize,
            (h.memory.llc_bytes / LINE) as usize,
            h.memory.ddio_share,
        );
        let mut tlb = w
            .iommu_page
            .map(|p| Iotlb::new(BUFFER_BYTES, p, h.iommu.iotlb_entries as usize));
        let mut rng = Rng::new(seed);
        let mut touch = |llc: &mut Llc, l: u64, snoop: bool| {
            llc.device_write(l as u32, snoop);
            if let Some(t) = &mut tlb {
                let p = t.page_of(l * LINE);
                t.lookup(p);
            }
        };
        match w.prep {
            CachePrep::HostWarm => {
                let mut order: Vec<u32> = (0..(w.window / LINE) as u32).collect();
                for i in (1..order.len()).rev() {
                    order.swap(i, rng.below(i as u64 + 1) as usize);
                }
                order.into_iter().for_each(|l| llc.cpu_write(l));
            }
            CachePrep::DeviceWarm => (0..w.window / LINE).for_each(|l| touch(&mut llc, l, m.cmd_snoops)),
            CachePrep::DeviceThrash => (0..2 * lines).for_each(|_| {
                let l = rng.below(lines);
                touch(&mut llc, l, m.cmd_snoops)
            }),
            CachePrep::Cold => {}
        }
        (llc, tlb, rng)
    }

    #[test]
    fn preparing_only_what_decides_the_end_leaves_the_state_of_the_whole_preparation() {
        for (host, iommu_page) in [
            ("e5-2637v3", None),
            ("e5-2637v3", Some(4096)),
            ("e3-1226v3", Some(4096)),
        ] {
            let s = Simulator::load(host, "nfp6000").unwrap();
            for (prep, window) in [
                (CachePrep::DeviceThrash, 8192),
                (CachePrep::DeviceWarm, 64 << 20),
                (CachePrep::DeviceWarm, 1 << 20),
                (CachePrep::HostWarm, 64 << 20),
            ] {
                let mut w = Workload::new(TestOp::BwRead, 64, window, prep, 1);
                w.iommu_page = iommu_page;
                for seed in 1..4 {
                    let mut m = Machine::new(&s.host, &s.device, &s.link, &w, seed);
                    let (llc, tlb, mut rng) = whole_preparation(&m, &w, seed);
                    let case = format!("{host} {iommu_page:?} {prep:?} {window} seed {seed}");
                    assert!(m.llc == llc, "{case}: the LLC differs");
                    assert_eq!(m.iotlb, tlb, "{case}");
                    assert_eq!(m.rng.next_u64(), rng.next_u64(), "{case}: the test's draws go on alike");
                }
            }
        }
    }

    #[test]
    fn a_write_over_lines_the_device_holds_owns_them_as_the_line_by_line_walk_does() {
        let s = Simulator::load("e5-2637v3", "nfp6000").unwrap();
        let w = Workload::new(TestOp::LatWriteRead, 2048, 8192, CachePrep::HostWarm, 1);
        let mut fast = Machine::new(&s.host, &s.device, &s.link, &w, 1);
        let mut each = Machine::new(&s.host, &s.device, &s.link, &w, 1);
        let mut rng = Rng::new(3);
        let mut held = 0;
        for _ in 0..5_000 {
            // A core writes a few lines now and then, which a write must then take over.
            if rng.below(4) == 0 {
                let l = rng.below(8192 / LINE) as u32;
                fast.llc.cpu_write(l);
                each.llc.cpu_write(l);
            }
            let (addr, len) = (rng.below(8192 - 512), 1 + rng.below(512) as u32);
            let (first, n) = (addr / LINE, pieces(addr, len, LINE as u32));
            // Mostly snooping writes (the DMA engines'), some without (the command path's).
            let snoop = rng.below(8) != 0;
            held += fast.llc.all_io(first as u32, n as u32, snoop) as u32;
            let whole_from_memory = rng.below(2) * 40_000;
            let got = fast.own_lines(addr, len, snoop, whole_from_memory);
            let want = each.own_lines_each(addr, len, snoop, whole_from_memory);
            assert_eq!(got, want, "{len} B at {addr}, snoop {snoop}");
        }
        // Both ways are taken often.
        assert!(
            (1_000..4_000).contains(&held),
            "{held} of 5000 writes over lines the device held"
        );
        assert!(fast.llc == each.llc);
    }

    #[test]
    fn a_host_warmed_window_beyond_the_llc_stays_resident_in_a_scattered_share() {
        let (s, w) = warmed(64 << 20);
        let m = Machine::new(&s.host, &s.device, &s.link, &w, 1);
        let lines = (w.window / LINE) as u32;
        let resident = (0..lines).filter(|&l| m.llc.state(l) == LineState::Cpu).count();
        let share = resident as f64 / lines as f64;
        let llc_share = s.host.memory.llc_bytes as f64 / w.window as f64;
        assert!(
            (share - llc_share).abs() < 0.01,
            "{share} of the window, LLC {llc_share}"
        );
        // Not the last 15 MB written: resident lines are spread over every 1 MB of the window.
        let per_mb = (lines / 64) as usize;
        for mb in 0..64 {
            let here = (mb * per_mb..(mb + 1) * per_mb)
                .filter(|&l| m.llc.state(l as u32) == LineState::Cpu)
                .count();
            assert!(here as f64 > 0.15 * per_mb as f64, "MB {mb}: {here} of {per_mb} lines");
        }
        let (s, w) = warmed(8 << 20);
        let m = Machine::new(&s.host, &s.device, &s.link, &w, 1);
        assert!((0..(w.window / LINE) as u32).all(|l| m.llc.state(l) == LineState::Cpu));
    }
}
