//! The machine: device DMA engine, link, root complex, IOMMU and memory, advanced transaction by
//! transaction.
//!
//! Every resource is a FIFO server that remembers when it is next free, and every transaction
//! passes the resources in a fixed order, so each stage's event time is
//! `start = max(arrival, resource free)`, `free = start + occupancy`. Transactions are started in
//! time order (the earliest free DMA thread claims the next one), which makes this an exact
//! discrete-event simulation for FIFO resources without an event heap; the only approximation is
//! that a resource serves transactions in start order rather than strictly in arrival order when
//! their memory latencies overtake each other.

use crate::iommu::Iotlb;
use crate::llc::{LineState, Llc};
use crate::power::PowerStates;
use crate::profile::{DeviceProfile, HostProfile, Spread, Tail};
use crate::rng::Rng;
use crate::tlp_time::TlpTimes;
use crate::workload::{Addresses, CachePrep, Op, Workload, BUFFER_BYTES};
use pcie_model::{split_completions, split_read_requests, split_writes, LinkConfig};
use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

/// Picoseconds.
pub(crate) type Ps = u64;

const LINE: u64 = 64;

/// Nanoseconds to picoseconds. The cast saturates (and NaN gives 0), but profile ranges keep
/// every time at or below 1 s (PMU host) or 1 ms (DMA host and device), far inside `Ps`.
pub(crate) fn ps(ns: f64) -> Ps {
    // `x + 0.5` truncated: round half up without a libm call (all times are non-negative).
    (ns * 1000.0 + 0.5) as Ps
}

/// A resource serving one thing at a time, first come first served.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Server {
    pub(crate) free: Ps,
}

impl Server {
    /// Occupy the server from `arrival` (or when it frees) for `busy`; returns the start.
    pub(crate) fn serve(&mut self, arrival: Ps, busy: Ps) -> Ps {
        let start = arrival.max(self.free);
        self.free = start.saturating_add(busy);
        start
    }
}

/// Several identical servers (page walkers): each job takes the earliest free one.
#[derive(Debug, Clone)]
pub(crate) struct Pool {
    pub(crate) free: Vec<Ps>,
}

impl Pool {
    pub(crate) fn serve(&mut self, arrival: Ps, busy: Ps) -> Ps {
        let (i, &f) = self
            .free
            .iter()
            .enumerate()
            .min_by_key(|(_, f)| **f)
            .expect("pool is never empty");
        let start = arrival.max(f);
        self.free[i] = start.saturating_add(busy);
        start
    }
}

/// One direction of the link.
#[derive(Debug, Clone, Copy)]
struct Wire {
    server: Server,
    /// Picoseconds per byte at the capacity left for packets.
    ps_per_byte: f64,
}

impl Wire {
    /// Send a packet taking `busy` from `ready`: returns when its last byte has left.
    fn send(&mut self, ready: Ps, busy: Ps) -> Ps {
        self.server.serve(ready, busy).saturating_add(busy)
    }

    /// DLLPs owed for traffic in the other direction take link time here. They are folded
    /// into the busy time as it stands (Acks and UpdateFCs are scheduled around TLPs), rather
    /// than queued behind the future moment they were earned at.
    fn owe(&mut self, busy: Ps) {
        self.server.free = self.server.free.saturating_add(busy);
    }
}

/// A latency distribution, tabulated: its inverse CDF at 1024 evenly spaced probabilities,
/// so a draw is one table lookup instead of a square root per line.
#[derive(Debug, Clone)]
pub(crate) struct Sampler {
    table: Box<[Ps; SAMPLER_STEPS]>,
}

const SAMPLER_STEPS: usize = 1024;

impl Sampler {
    /// Triangular between `min_ns` and `max_ns` with mode `mode_ns`.
    pub(crate) fn triangular(s: &Spread) -> Sampler {
        Sampler::triangular_max(s, 1)
    }

    /// The largest of `n` independent triangular draws (its CDF is the triangle's to the
    /// power `n`), so a completion waiting for the slowest of its lines costs one lookup.
    pub(crate) fn triangular_max(s: &Spread, n: u32) -> Sampler {
        let (a, c, b) = (s.min_ns, s.mode_ns, s.max_ns);
        let mut table = Box::new([0; SAMPLER_STEPS]);
        for (i, slot) in table.iter_mut().enumerate() {
            let u = ((i as f64 + 0.5) / SAMPLER_STEPS as f64).powf(1.0 / n as f64);
            let ns = if b <= a {
                a
            } else if u < (c - a) / (b - a) {
                a + (u * (b - a) * (c - a)).sqrt()
            } else {
                b - ((1.0 - u) * (b - a) * (b - c)).sqrt()
            };
            *slot = ps(ns);
        }
        Sampler { table }
    }

    pub(crate) fn draw(&self, rng: &mut Rng) -> Ps {
        self.table[(rng.next_u64() >> 54) as usize]
    }
}

pub(crate) fn draw_tail(rng: &mut Rng, t: &Tail) -> Ps {
    if rng.chance(t.prob) {
        ps(t.min_ns + rng.unit() * (t.max_ns - t.min_ns))
    } else {
        0
    }
}

/// Profile times converted to picoseconds once, so the per-transaction path does integer
/// arithmetic only.
#[derive(Debug, Clone, Copy)]
struct Costs {
    issue: Ps,
    complete: Ps,
    move_read: Ps,
    gather: Ps,
    move_write: Ps,
    wire: Ps,
    half_fixed: Ps,
    request: Ps,
    line: Ps,
    write_line: Ps,
    commit: Ps,
    /// `None`: no ownership term.
    own: Option<Ps>,
    own_line: Ps,
    allocate: Ps,
    walk: Ps,
    walk_busy: Ps,
    replay: Ps,
    read_dma: Ps,
    read_request: Ps,
    read_line: Ps,
    read_full_line: Ps,
    read_slow: Ps,
    write_dma: Ps,
    write_tlp: Ps,
    write_line_dev: Ps,
    write_slow: Ps,
    write_min: Ps,
    bus_dma: Ps,
    bus_line: Ps,
}

impl Costs {
    fn new(host: &HostProfile, dev: &DeviceProfile) -> Costs {
        let (rc, dma) = (&host.root_complex, &dev.dma);
        Costs {
            issue: ps(dma.issue_ns),
            complete: ps(dma.complete_ns),
            move_read: ps(dma.move_line_ns),
            gather: ps(dma.write_gather_ns),
            move_write: ps(dma.write_move_line_ns),
            wire: ps(host.link.wire_ns),
            half_fixed: ps(rc.fixed_ns) / 2,
            request: ps(rc.request_ns),
            line: ps(rc.line_ns),
            write_line: ps(rc.write_line_ns),
            commit: ps(rc.write_commit_ns),
            own: rc.write_own_ns.map(ps),
            own_line: ps(rc.write_own_line_ns),
            allocate: ps(host.memory.ddio_allocate_ns),
            walk: ps(host.iommu.walk_ns),
            walk_busy: ps(host.iommu.walk_busy_ns),
            replay: ps(host.iommu.replay_ns),
            read_dma: ps(dma.read_dma_ns),
            read_request: ps(dma.read_request_ns),
            read_line: ps(dma.read_line_ns),
            read_full_line: ps(dma.read_full_line_ns),
            read_slow: ps(dma.read_slow_ns),
            write_dma: ps(dma.write_dma_ns),
            write_tlp: ps(dma.write_tlp_ns),
            write_line_dev: ps(dma.write_line_ns),
            write_slow: ps(dma.write_slow_ns),
            write_min: ps(dma.write_min_ns),
            bus_dma: ps(dma.bus_dma_ns),
            bus_line: ps(dma.bus_line_ns),
        }
    }
}

/// An upper bound of the simulated time one transaction adds to a run, in nanoseconds: every
/// profile time weighted by the most times one transaction of the device's largest size can meet
/// it on its way through the machine, queueing behind earlier ones included (each resource is a
/// FIFO, so a transaction waits at most for the work earlier transactions put there, which their
/// own bounds count). A LAT_WRRD (write then read) or a command write-read is the longest kind.
pub(crate) fn transaction_bound_ns(host: &HostProfile, dev: &DeviceProfile, link: &LinkConfig) -> f64 {
    let (rc, m, io, d, c) = (&host.root_complex, &host.memory, &host.iommu, &dev.dma, &dev.cmd);
    let size = d.max_transfer as f64;
    // Lines, read requests, write TLPs and completions of an unaligned DMA of that size; a
    // piece of it may share its first and last line with its neighbours.
    let lines = size / LINE as f64 + 1.0;
    let requests = size / link.mrrs as f64 + 1.0;
    let tlps = size / link.mps as f64 + 1.0;
    let completions = lines + requests;
    let spans = lines + completions;
    // Read requests beyond the tags wait for an earlier request's round trip.
    let rounds = (requests / d.read_tags as f64).ceil();
    let wire_bytes = 4.0 * size + 64.0 * (requests + tlps + completions);
    let link_ns = 2.0 * wire_bytes * 8.0 / pcie_model::capacity(link).0;
    // A line is on one socket: at most one hop to reach it.
    let latency = m.llc_hit.max_ns.max(m.dram.max_ns).max(m.io_line.max_ns) + m.remote_ns;
    let own = rc.write_own_ns.map_or(0.0, |o| {
        o + spans * rc.write_own_line_ns + m.llc_hit.mode_ns.max(m.dram.mode_ns).max(m.io_line.mode_ns) + m.remote_ns
    });
    let walk = io.walk_ns + io.walk_busy_ns + m.dram_tail.max_ns;
    // A power state's exit for each DMA or command access (a write and a read at most); one
    // stall per read.
    let (exit, stall) = host.power.as_ref().map_or((0.0, 0.0), |p| {
        let exit = p.state.iter().map(|s| s.exit.max_ns).fold(0.0, f64::max);
        (exit, p.stall.max_ns)
    });
    let hiccup = m.dram_tail.max_ns.max(host.cpu.wake.max_ns) + stall;
    let fabric_line = rc.line_ns + m.remote_line_ns;
    // Without an ownership term the hop to a remote owner is the commit's.
    let commit =
        host.link.wire_ns + spans * (rc.write_line_ns + m.ddio_allocate_ns) + rc.write_commit_ns + m.remote_ns + own;
    let accept = d.issue_ns + d.bus_dma_ns + lines * d.bus_line_ns + d.jitter.max_ns;
    let write = accept
        + (d.write_dma_ns + tlps * d.write_tlp_ns + lines * d.write_line_ns + d.write_slow_ns).max(d.write_min_ns)
        + d.write_gather_ns
        + spans * d.write_move_line_ns
        + commit;
    let read = accept
        + d.read_dma_ns
        + requests * d.read_request_ns
        + lines * d.read_line_ns.max(d.read_full_line_ns)
        + d.read_slow_ns
        + rounds * (2.0 * host.link.wire_ns + rc.fixed_ns + latency)
        + requests * rc.request_ns
        + 2.0 * spans * fabric_line
        + spans * d.move_line_ns
        + hiccup;
    let dma = write
        + read
        + 2.0 * walk
        + (requests + tlps) * io.replay_ns
        + 2.0 * exit
        + d.complete_ns
        + d.worker_ns.max(d.loop_ns);
    let command = c.issue_ns
        + commit
        + 2.0 * host.link.wire_ns
        + rc.fixed_ns
        + rc.request_ns
        + 2.0 * fabric_line
        + latency
        + hiccup
        + 2.0 * (walk + io.replay_ns + exit)
        + c.complete_ns
        + c.loop_ns;
    dma.max(command) + link_ns
}

/// How many pieces `[addr, addr + len)` is cut into at multiples of `boundary`, a power of two
/// (a line, MPS or MRRS): shifts, not divisions, as this runs for every DMA.
fn pieces(addr: u64, len: u32, boundary: u32) -> u64 {
    let shift = boundary.trailing_zeros();
    ((addr + len as u64 - 1) >> shift) - (addr >> shift) + 1
}

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
    tags: VecDeque<Ps>,
    /// The root complex's path into the coherent fabric: read requests, the lines they fetch,
    /// posted writes and the IOMMU's page-walk reads all take their turn in it.
    fabric: Server,
    /// Release times of the posted credits in use, oldest first.
    posted: VecDeque<Ps>,
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
    /// What the remote socket's read pipeline adds per line fetched across the link, likewise.
    hop_line_by_state: [Ps; 3],
    tlp: TlpTimes,
    /// [`Machine::own_latency`] by [`LineState`], in its declaration order.
    own_by_state: [Ps; 3],
    llc_hit: Sampler,
    /// `llc_hit_max[n - 1]`: the slowest of `n` lines a core wrote, built when first needed.
    llc_hit_max: Vec<Option<Sampler>>,
    io_line: Sampler,
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
    slow: bool,
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
        let hop_line_by_state = states.map(|s| if remote(s) { ps(host.memory.remote_line_ns) } else { 0 });
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
            tags: VecDeque::with_capacity(dev.dma.read_tags as usize),
            fabric: Server::default(),
            posted: VecDeque::with_capacity(host.root_complex.posted_credits as usize),
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
            own_by_state: states.map(|state| {
                let m = &host.memory;
                let typical = match state {
                    LineState::Cpu => ps(m.llc_hit.mode_ns),
                    LineState::Io => ps(m.io_line.mode_ns),
                    LineState::Memory => ps(m.dram.mode_ns),
                };
                typical + hop_by_state[state as usize]
            }),
            llc_hit: Sampler::triangular(&host.memory.llc_hit),
            llc_hit_max: Vec::new(),
            io_line: Sampler::triangular(&host.memory.io_line),
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
                let lines = window_lines.min((BUFFER_BYTES / LINE) as u32);
                let mut order: Vec<u32> = (0..lines).collect();
                // The LLC resists streams (adaptive insertion, not LRU): a window larger than
                // the LLC leaves a scattered share of its lines resident, not the last ones
                // written. Modelled as warming the lines in a random order.
                if lines as usize > self.llc.cpu_capacity() {
                    for i in (1..order.len()).rev() {
                        let j = self.rng.below(i as u64 + 1) as usize;
                        order.swap(i, j);
                    }
                }
                for l in order {
                    self.llc.cpu_write(l);
                }
            }
            CachePrep::DeviceWarm => {
                for l in 0..(w.window / LINE) as u32 {
                    self.device_touch(l as u64 * LINE);
                }
            }
            CachePrep::DeviceThrash => {
                let lines = BUFFER_BYTES / LINE;
                for _ in 0..lines * 2 {
                    let l = self.rng.below(lines);
                    self.device_touch(l * LINE);
                }
            }
        }
    }

    /// A device write outside the timed test (warming): caches and IO-TLB, no timing.
    fn device_touch(&mut self, addr: u64) {
        self.llc.device_write((addr / LINE) as u32);
        if let Some(t) = &mut self.iotlb {
            let p = t.page_of(addr);
            t.lookup(p);
        }
    }

    /// Enter the fabric path at `arrival` for `busy` (plus a page walk's share on an IO-TLB
    /// miss): returns (when the path accepted the request, when its address is translated).
    /// The path is taken once, up front, for everything the request will use, so it never waits
    /// on its own future. A miss's walk starts `early` before `arrival` (a write's header is
    /// decoded while its payload still arrives). A request for a page whose walk is still
    /// running is parked and translated again after it, behind the other parked requests.
    fn enter_fabric(&mut self, arrival: Ps, addr: u64, busy: Ps, early: Ps) -> (Ps, Ps) {
        let Some(tlb) = self.iotlb.as_mut() else {
            let accepted = self.fabric.serve(arrival, busy);
            return (accepted, accepted);
        };
        let page = tlb.page_of(addr);
        match tlb.lookup(page) {
            Some(ready) => {
                let accepted = self.fabric.serve(arrival, busy);
                if ready <= accepted {
                    return (accepted, accepted);
                }
                let replayed = self.replayer.serve(ready, self.costs.replay) + self.costs.replay;
                (accepted, replayed)
            }
            None => {
                let accepted = self.fabric.serve(arrival, busy + self.costs.walk_busy);
                // The walk reads the page table from memory, which has DRAM's rare hiccups.
                let walk = self.costs.walk + draw_tail(&mut self.rng, &self.host.memory.dram_tail);
                let done = self.walkers.serve(accepted.saturating_sub(early), walk) + walk;
                tlb.walked(page, done);
                (accepted, done)
            }
        }
    }

    /// Time for the memory system to deliver one line once the RC asks for it.
    fn line_latency(&mut self, line: u64) -> Ps {
        self.line_latency_in(line).0
    }

    /// Latency of the slowest of `n` lines a core wrote.
    fn slowest_cpu_line(&mut self, n: usize) -> Ps {
        if self.llc_hit_max.len() < n {
            self.llc_hit_max.resize_with(n, || None);
        }
        let spread = &self.host.memory.llc_hit;
        let sampler = self.llc_hit_max[n - 1].get_or_insert_with(|| Sampler::triangular_max(spread, n as u32));
        sampler.draw(&mut self.rng) + self.hop_by_state[LineState::Cpu as usize]
    }

    /// [`Machine::line_latency`] and where the line is.
    fn line_latency_in(&mut self, line: u64) -> (Ps, LineState) {
        let state = self.llc.state(line as u32);
        let base = match state {
            LineState::Cpu => self.llc_hit.draw(&mut self.rng),
            LineState::Io => self.io_line.draw(&mut self.rng),
            LineState::Memory => self.dram.draw(&mut self.rng),
        };
        (base + self.hop_by_state[state as usize], state)
    }

    /// The hop to where `line` is (its owner, for a write).
    fn hop(&self, line: u64) -> Ps {
        self.hop_by_state[self.llc.state(line as u32) as usize]
    }

    /// What the remote read pipeline adds to `lines` lines from `first` on (0 when all are on
    /// the device's socket).
    fn hop_lines(&self, first: u64, lines: u64) -> Ps {
        if self.hop_line_by_state == [0; 3] {
            return 0;
        }
        (first..first + lines)
            .map(|l| self.hop_line_by_state[self.llc.state(l as u32) as usize])
            .sum()
    }

    /// How long the memory system takes to grant a posted write ownership of `line`: the typical
    /// latency of where the line is (no data is read, so no DRAM hiccups).
    fn own_latency(&self, line: u64) -> Ps {
        self.own_by_state[self.llc.state(line as u32) as usize]
    }

    /// Rare delays that hit a whole read rather than each line: a DRAM hiccup (refresh, bank
    /// conflict) when the read starts in memory, a sleeping core's snoop when it starts on a
    /// line a core wrote. The measured tails are as long for 2 KB reads as for 64 B ones.
    fn read_hiccup(&mut self, first_line: u64) -> Ps {
        let hiccup = match self.llc.state(first_line as u32) {
            LineState::Cpu => draw_tail(&mut self.rng, &self.host.cpu.wake),
            LineState::Memory => draw_tail(&mut self.rng, &self.host.memory.dram_tail),
            LineState::Io => 0,
        };
        hiccup + self.power.as_mut().map_or(0, |p| p.stall(&mut self.rng))
    }

    /// A request reaches the uncore at `arrival`: when the uncore is awake to take it.
    fn wake(&mut self, arrival: Ps) -> Ps {
        match &mut self.power {
            Some(p) => p.wake(arrival, &mut self.rng),
            None => arrival,
        }
    }

    /// A DMA's requests (or TLPs) arrive back to back, so only the first, `i` = 0, may find the
    /// uncore in a power state: one exit per DMA.
    fn wake_first(&mut self, i: usize, arrival: Ps) -> Ps {
        if i == 0 {
            self.wake(arrival)
        } else {
            arrival
        }
    }

    /// The uncore has work until `t`.
    fn rest(&mut self, t: Ps) {
        if let Some(p) = &mut self.power {
            p.busy_until(t);
        }
    }

    /// The read or write engine takes a DMA: returns when its first TLP may leave.
    fn engine_accept(&mut self, t: Ps, d: Dma, write: bool, tlps: u64) -> Ps {
        let c = &self.costs;
        let lines = (d.size as u64).div_ceil(LINE);
        let (busy, engine) = if write {
            let busy =
                c.write_dma + c.write_tlp * tlps + c.write_line_dev * lines + if d.slow { c.write_slow } else { 0 };
            (busy.max(c.write_min), &mut self.write_engine)
        } else {
            // Requests touching every line of their MRRS-aligned block stream them faster.
            let block_lines = self.link.mrrs as u64 / LINE;
            let full_lines: u64 = split_read_requests(self.link, d.addr, d.size)
                .map(|(a, l)| pieces(a, l, LINE as u32))
                .filter(|&n| n == block_lines)
                .sum();
            let busy = c.read_dma
                + c.read_request * tlps
                + c.read_full_line * full_lines
                + c.read_line * (lines - full_lines)
                + if d.slow { c.read_slow } else { 0 };
            (busy, &mut self.read_engine)
        };
        let start = engine.serve(t + c.issue, busy);
        let moved = self.bus.serve(start, c.bus_dma + c.bus_line * lines);
        moved + self.jitter.draw(&mut self.rng)
    }

    /// Wait for a free read tag: returns when the request may be sent.
    fn claim_tag(&mut self, t: Ps) -> Ps {
        if self.tags.len() == self.dev.dma.read_tags as usize {
            t.max(self.tags.pop_front().unwrap_or(0))
        } else {
            t
        }
    }

    /// A DMA read issued at `t`. After a write to the same address its requests may not leave
    /// before the write's last TLP (`after`: PCIe ordering, reads do not pass posted writes) and
    /// its lines not be served before the write's commit (`not_before`). Returns when the
    /// device has all the data.
    fn read(&mut self, t: Ps, d: Dma, after: Ps, not_before: Ps) -> Ps {
        let requests = pieces(d.addr, d.size, self.link.mrrs);
        let start = self.engine_accept(t, d, false, requests);
        let Costs {
            move_read: move_ps,
            request: req_ps,
            line: line_ps,
            half_fixed,
            wire,
            ..
        } = self.costs;
        let mut device_done = start;
        let hiccup = self.read_hiccup(d.addr / LINE);
        for (i, (addr, len)) in split_read_requests(self.link, d.addr, d.size).enumerate() {
            let mrd = self.tlp.mrd(addr, len);
            let tagged = self.claim_tag(start).max(after);
            let sent = self.up.send(tagged, mrd.wire);
            self.down.owe(mrd.dllps);
            let arrival = self.wake_first(i, sent + wire + half_fixed);
            let lines = (addr + len as u64 - 1) / LINE - addr / LINE + 1;
            let busy = req_ps + line_ps * lines + self.hop_lines(addr / LINE, lines);
            let translated = self.enter_fabric(arrival, addr, busy, 0).1;
            let translated = translated.max(not_before);
            let mut ready = translated;
            let mut last_arrival = translated;
            let mut asked = translated;
            // The RC asks for the request's lines back to back and memory serves them in
            // parallel: one latency, drawn for the request's last line, applies to all of them
            // (DRAM lines of one request share a row).
            let (latency, state) = self.line_latency_in((addr + len as u64 - 1) / LINE);
            for (caddr, clen) in split_completions(self.link, addr, len) {
                let first = caddr / LINE;
                let last = (caddr + clen as u64 - 1) / LINE;
                asked += line_ps * (last - first + 1) + self.hop_lines(first, last - first + 1);
                // Lines a core wrote are snooped in its caches line by line: a completion waits
                // for the slowest of its lines.
                let latency = if state == LineState::Cpu && last > first {
                    self.slowest_cpu_line((last - first + 1) as usize)
                } else {
                    latency
                };
                ready = ready.max(asked + latency);
                let cpl = self.tlp.cpl(caddr, clen);
                let sent = self.down.send(ready + half_fixed, cpl.wire);
                self.rest(sent);
                self.up.owe(cpl.dllps);
                let arrived = sent + wire;
                last_arrival = arrived;
                device_done = device_done.max(arrived) + move_ps * (last - first + 1);
            }
            // The tag is free once the request's last completion has arrived.
            self.tags.push_back(last_arrival);
        }
        device_done + hiccup
    }

    /// A DMA write. Returns (when the last TLP has left the device, when the host has
    /// committed the data).
    fn write(&mut self, t: Ps, d: Dma) -> (Ps, Ps) {
        let tlps = pieces(d.addr, d.size, self.link.mps);
        let start = self.engine_accept(t, d, true, tlps);
        let Costs {
            move_write: move_ps,
            write_line: wline_ps,
            commit: commit_ps,
            wire,
            ..
        } = self.costs;
        let credits = self.host.root_complex.posted_credits as usize;
        // The engine gathers the DMA's data, then its TLPs leave back to back.
        let gathered = start + self.costs.gather + move_ps * pieces(d.addr, d.size, LINE as u32);
        let (mut sent_last, mut committed) = (start, start);
        for (i, (addr, len)) in split_writes(self.link, d.addr, d.size).enumerate() {
            let first = addr / LINE;
            let last = (addr + len as u64 - 1) / LINE;
            let credit = if self.posted.len() == credits {
                self.posted.pop_front().unwrap_or(0)
            } else {
                0
            };
            let mwr = self.tlp.mwr(addr, len);
            let sent = self.up.send(gathered.max(credit), mwr.wire);
            self.down.owe(mwr.dllps);
            let arrival = self.wake_first(i, sent + wire);
            // Ownership of the lines is granted after their memory latency: the LLC's if cached,
            // DRAM's if not (where the line was before this write). Lines not yet in the LLC
            // need a DDIO allocation (and evict an older IO line).
            let (mut slowest_own, mut allocated, mut hop) = (0, 0, 0);
            for (k, l) in (first..=last).enumerate() {
                hop = hop.max(self.hop(l));
                slowest_own = slowest_own.max(self.own_latency(l) + self.costs.own_line * k as u64);
                allocated += self.llc.device_write(l as u32) as u64;
            }
            let own = self.costs.own.map(|c| c + slowest_own);
            let busy = wline_ps * (last - first + 1) + self.costs.allocate * allocated;
            // The port decodes the header, and the IOMMU starts a miss's walk, while the
            // payload is still arriving.
            let payload = mwr.payload;
            let (accepted, translated) = self.enter_fabric(arrival, addr, busy, payload);
            let processed = translated + busy;
            self.rest(processed);
            self.posted.push_back(processed);
            sent_last = sent;
            // The commit pipeline runs from acceptance, in parallel with a page walk; ownership
            // can only be asked for once the address is translated. The hop to a remote owner
            // is ownership's, or the commit's where ownership is not modelled.
            let visible = match own {
                Some(o) => (accepted + busy + commit_ps).max(processed + o),
                None => accepted + busy + commit_ps + hop,
            };
            committed = committed.max(visible);
        }
        (sent_last, committed)
    }

    /// One transaction of `op` starting at `t`; returns when the device sees it complete.
    fn transaction(&mut self, op: Op, t: Ps, d: Dma, index: u64) -> Ps {
        let complete = self.costs.complete;
        match op {
            Op::LatRead | Op::BwRead => self.read(t, d, 0, 0) + complete,
            Op::BwWrite => self.write(t, d).0 + complete,
            Op::BwReadWrite if !index.is_multiple_of(2) => self.read(t, d, 0, 0) + complete,
            Op::BwReadWrite => self.write(t, d).0 + complete,
            Op::LatWriteRead => {
                // Both DMAs are queued at once; the engines overlap them as ordering allows.
                let (sent, committed) = self.write(t, d);
                self.read(t, d, sent, committed) + complete
            }
            Op::LatCmdRead => self.command(t, d, false),
            Op::LatCmdWriteRead => self.command(t, d, true),
        }
    }

    /// The NFP's direct command path: one PCIe read (after an optional write) issued from a
    /// BAR window, bypassing the DMA engines.
    fn command(&mut self, t: Ps, d: Dma, write_first: bool) -> Ps {
        let issue = t + ps(self.dev.cmd.issue_ns);
        let c = self.costs;
        let (start, not_before) = if write_first {
            let mwr = self.tlp.mwr(d.addr, d.size);
            let sent = self.up.send(issue, mwr.wire);
            let payload = mwr.payload;
            let own = c.own.map(|o| o + self.own_latency(d.addr / LINE));
            let hop = self.hop(d.addr / LINE);
            let arrival = self.wake(sent + c.wire);
            let (accepted, translated) = self.enter_fabric(arrival, d.addr, c.write_line, payload);
            self.llc.device_write((d.addr / LINE) as u32);
            let visible = match own {
                Some(o) => (accepted + c.write_line + c.commit).max(translated + c.write_line + o),
                None => accepted + c.write_line + c.commit + hop,
            };
            (sent, visible)
        } else {
            (issue, 0)
        };
        let sent = self.up.send(start, self.tlp.mrd(d.addr, d.size).wire);
        let line = d.addr / LINE;
        let arrival = self.wake(sent + c.wire + c.half_fixed);
        let translated = self
            .enter_fabric(arrival, d.addr, c.request + c.line + self.hop_lines(line, 1), 0)
            .1;
        let asked = translated.max(not_before) + c.line + self.hop_lines(line, 1);
        let ready = asked + self.line_latency(line) + self.read_hiccup(line);
        let cpl = self.tlp.cpl(d.addr, d.size).wire;
        let sent = self.down.send(ready + c.half_fixed, cpl);
        self.rest(sent);
        sent + c.wire + ps(self.dev.cmd.complete_ns)
    }
}

/// What a run measured, in device timestamp terms.
#[derive(Debug, Clone, PartialEq)]
pub enum Measured {
    Latency {
        cycles: Vec<u32>,
        total_cycles: u64,
    },
    Bandwidth {
        bytes: u64,
        transactions: u64,
        time_cycles: u64,
    },
}

impl Machine<'_> {
    fn cycle_ps(&self) -> f64 {
        1e6 / self.dev.clock.mhz
    }

    fn dma(&self, addr: u64, w: &Workload) -> Dma {
        Dma {
            addr,
            size: w.size,
            slow: !w.device_offset.is_multiple_of(self.dev.dma.fast_align),
        }
    }

    /// Latency test: one transaction at a time, each timed by the device's timestamp counter.
    pub fn run_latency(&mut self, w: &Workload) -> Measured {
        let tick_ps = self.cycle_ps() * self.dev.clock.tick_cycles as f64;
        let tick_cycles = self.dev.clock.tick_cycles;
        let stamp = |t: Ps| (t as f64 / tick_ps) as u64;
        let loop_ps = ps(if w.op == Op::LatCmdRead || w.op == Op::LatCmdWriteRead {
            self.dev.cmd.loop_ns
        } else {
            self.dev.dma.loop_ns
        });
        let mut addrs = Addresses::new(w);
        let mut cycles = Vec::with_capacity(w.count as usize);
        // Start at a random phase of the timestamp counter.
        let first = self.rng.below(tick_ps as u64);
        let mut now = first;
        for i in 0..w.count {
            let addr = addrs.next(&mut self.rng);
            let d = self.dma(addr, w);
            let done = self.transaction(w.op, now, d, i);
            cycles.push(((stamp(done) - stamp(now)) * tick_cycles as u64) as u32);
            now = done + loop_ps;
        }
        let total_cycles = (stamp(now) - stamp(first)) * tick_cycles as u64;
        Measured::Latency { cycles, total_cycles }
    }

    /// Bandwidth test: every DMA thread keeps one DMA outstanding; the earliest free thread
    /// claims the next transaction.
    pub fn run_bandwidth(&mut self, w: &Workload) -> Measured {
        let worker_ps = ps(self.dev.dma.worker_ns);
        let mut addrs = Addresses::new(w);
        let mut threads: BinaryHeap<Reverse<Ps>> = (0..self.dev.dma.workers).map(|_| Reverse(0)).collect();
        let mut end = 0;
        for i in 0..w.count {
            // The earliest free thread claims transaction i; its slot is reused in place.
            let mut earliest = threads.peek_mut().expect("at least one thread");
            let Reverse(free) = *earliest;
            let addr = addrs.next(&mut self.rng);
            let d = self.dma(addr, w);
            let done = self.transaction(w.op, free + worker_ps, d, i);
            end = end.max(done);
            *earliest = Reverse(done);
        }
        let counted = if w.op == Op::BwReadWrite { w.count / 2 } else { w.count };
        Measured::Bandwidth {
            bytes: counted * w.size as u64,
            transactions: counted,
            time_cycles: (end as f64 / self.cycle_ps() + 0.5) as u64,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Simulator;

    fn warmed(window: u64) -> (Simulator, Workload) {
        let w = Workload {
            op: Op::LatRead,
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
