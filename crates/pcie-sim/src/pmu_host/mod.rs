//! A host with per-root-port PCIe PMUs (a Yitian 710 by default) running storage and NIC
//! workloads.
//!
//! An event-driven simulation in picoseconds: fio-like jobs submit I/Os through the block
//! layer's scheduler ([`deadline`]) to the storage device behind a root port ([`storage`]:
//! doorbells, command and scatter-list reads, data chunk by chunk as the media produces or
//! takes it, completion entries, an MSI, reaping), and NICs move packets in batches ([`nic`]). Every TLP crosses the root port on a serialiser per direction ([`link`]), and each
//! port's DWC counters ([`bank`]) count the payload and TLPs as they cross, multiplexed as perf
//! does. Same profile, workloads and seed give the same counts.
//!
//! [`tree`] writes the host as root would see it in sysfs (PMUs, PCI functions, config space,
//! AER and traffic counters) through [`sysfs_writer`], for `pmu` and `check` on `--source sim`.

pub mod bank;
mod deadline;
mod events;
pub mod fault;
pub mod link;
mod nic;
pub mod profile;
mod storage;
#[cfg(unix)]
pub mod sysfs_writer;
#[cfg(unix)]
pub mod tree;
pub use storage::{IoStats, StorageStats};
pub mod workload;

use crate::distribution::Sampler;
use crate::rng::{mix_seed, Rng};
use crate::time::{ps, Ps};
use bank::{Bank, DllpRates, EventConfig, PortLink};
use events::Events;
use link::LinkDirection;
use pcie_model::{Generation, LinkConfig, LinkParams};
use profile::PmuHostProfile;
use std::collections::VecDeque;
use storage::{Io, Job, JobSet, Storage};
use workload::{HostWorkload, NicJob};

/// A root port, its trained link and what is behind it.
struct Port {
    link: Option<LinkConfig>,
    /// Rx: received by the root port (device to host); Tx: sent to the device.
    rx: LinkDirection,
    tx: LinkDirection,
    storage: Option<Storage>,
    lanes: u32,
    /// Each port draws from its own stream, so a workload on one port does not change another's.
    rng: Rng,
}

/// Where the i-th workload's state lives.
#[derive(Debug, Clone, Copy)]
enum Slot {
    Storage(usize),
    Nic(usize),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Ev {
    /// A job submits its next I/O (from its CPU, when free).
    Submit(usize),
    /// The host rings the device's doorbell for an I/O.
    Doorbell(usize),
    /// The device has read the command and scatter list.
    Fetched(usize),
    /// The device moves chunk `n` of an I/O's data.
    Chunk(usize, u32),
    /// The device posts the completion and interrupt.
    Complete(usize),
    /// The host's handler reaps the completion.
    Reap(usize),
    /// The job sees the I/O done.
    Done(usize),
    /// A serial drive's link may carry the next command's data (port index).
    Link(usize),
    /// A NIC flow receives or sends its next batch of packets.
    NicRx(usize),
    NicTx(usize),
}

/// How often (simulated time) the counters are brought up to date while events run: every
/// 1 ms, so that each link's ledger folds in what has crossed and forgets its reservations
/// that are over (a NIC at line rate makes some 500 reservations a millisecond and a send
/// finds its place from the end; a storage port some 25,000 bursts in 100 ms, which, kept,
/// spilled the ledger out of the caches).
const SETTLE_EVERY: Ps = 1_000_000_000;

/// The simulated host.
pub struct PmuHost {
    profile: PmuHostProfile,
    ports: Vec<Port>,
    bank: Bank,
    now: Ps,
    /// When the counters were last brought up to date.
    settled_at: Ps,
    queue: Events<Ev>,
    slots: Vec<Slot>,
    sets: Vec<JobSet>,
    flows: Vec<nic::Flow>,
    jobs: Vec<Job>,
    ios: Vec<Io>,
    free_ios: Vec<usize>,
    costs: HostCosts,
}

/// The host's side of every I/O, from the profile's `[host]`.
struct HostCosts {
    wire: Ps,
    memory_read: Sampler,
    submit: Sampler,
    reap: Sampler,
}

/// The link a port trains with its device: the lower generation and width of both, MPS the
/// smaller of both sides', MRRS the device's, unless the profile's faults say otherwise.
fn train(host: &PmuHostProfile, port: &profile::PortSpec) -> Option<LinkConfig> {
    let (gen, lanes) = host.trained(port)?;
    let (mps, mrrs) = host.device_control(port)?;
    LinkConfig::new(&LinkParams {
        gen: Generation::ALL[gen as usize - 1],
        lanes,
        mps,
        mrrs,
        rcb: host.host.rcb,
        ..LinkParams::default()
    })
    .ok()
}

impl PmuHost {
    /// A host running `workloads` from time 0 (each checked against the profile).
    pub fn new(profile: PmuHostProfile, workloads: &[HostWorkload], seed: u64) -> PmuHost {
        let ports: Vec<Port> = profile
            .ports
            .iter()
            .enumerate()
            .map(|(i, p)| {
                let link = train(&profile, p);
                let fallback = LinkConfig::new(&LinkParams::default()).expect("default link is valid");
                let l = link.as_ref().unwrap_or(&fallback);
                let mut rng = Rng::new(mix_seed(&[seed, i as u64]));
                let storage = profile
                    .device_of(p)
                    .and_then(|d| d.storage.clone())
                    .map(|s| Storage::new(s, &mut rng));
                Port {
                    rx: LinkDirection::new(l),
                    tx: LinkDirection::new(l),
                    link,
                    storage,
                    lanes: p.lanes,
                    rng,
                }
            })
            .collect();
        let mut h = PmuHost {
            bank: Bank::new(&profile.pmu, ports.len()),
            costs: HostCosts {
                wire: ps(profile.host.wire_ns),
                memory_read: Sampler::triangular(&profile.host.memory_read),
                submit: Sampler::triangular(&profile.host.submit),
                reap: Sampler::triangular(&profile.host.reap),
            },
            ports,
            now: 0,
            settled_at: 0,
            queue: Events::new(),
            slots: Vec::new(),
            sets: Vec::new(),
            flows: Vec::new(),
            jobs: Vec::new(),
            ios: Vec::new(),
            free_ios: Vec::new(),
            profile,
        };
        for w in workloads {
            let Some(port) = h.profile.ports.iter().position(|p| p.bdf == w.port()) else {
                continue;
            };
            match w {
                HostWorkload::Storage(j) => h.add_storage(j, port),
                HostWorkload::Nic(j) => h.add_nic(j, port),
            }
        }
        h
    }

    fn add_nic(&mut self, job: &NicJob, port: usize) {
        let Some(spec) = self
            .profile
            .device_of(&self.profile.ports[port])
            .and_then(|d| d.nic.clone())
        else {
            return;
        };
        let i = self.flows.len();
        self.slots.push(Slot::Nic(i));
        let f = nic::Flow {
            job: job.clone(),
            port,
            spec,
            stop: job.runtime.map(|s| self.now + (s * 1e12) as Ps),
            rx_bytes: 0,
            tx_bytes: 0,
            rx_ring: VecDeque::new(),
            tx_ring: VecDeque::new(),
        };
        let (rx, tx) = (f.every(job.rx_gbps), f.every(job.tx_gbps));
        self.flows.push(f);
        if let Some(e) = rx {
            self.at(self.now + e, Ev::NicRx(i));
        }
        if let Some(e) = tx {
            self.at(self.now + e, Ev::NicTx(i));
        }
    }

    pub fn profile(&self) -> &PmuHostProfile {
        &self.profile
    }

    /// The link port `i` trained to with its device (`None` for an empty port).
    pub fn link(&self, i: usize) -> Option<&LinkConfig> {
        self.ports[i].link.as_ref()
    }

    /// Simulated nanoseconds since the start.
    pub fn now_ns(&self) -> u64 {
        self.now / 1000
    }

    /// True when every workload has stopped and its I/Os have completed.
    pub fn workloads_done(&self) -> bool {
        (0..self.slots.len()).all(|i| self.workload_finished(i))
    }

    /// True when workload `i` (in the order given) has stopped submitting and its I/Os have
    /// completed; a NIC workload when its runtime is over.
    pub fn workload_finished(&self, i: usize) -> bool {
        match self.slots[i] {
            Slot::Storage(s) => self.sets[s].finished(),
            Slot::Nic(f) => self.flows[f].stop.is_some_and(|s| self.now >= s),
        }
    }

    /// Bytes workload `i` moved to and from the host: a storage workload's completed reads and
    /// writes (fio's `io_bytes`), a NIC's received and sent packet bytes.
    pub fn workload_bytes(&self, i: usize) -> (u64, u64) {
        match self.slots[i] {
            Slot::Storage(s) => self.sets[s].bytes(),
            Slot::Nic(f) => (self.flows[f].rx_bytes, self.flows[f].tx_bytes),
        }
    }

    /// Bytes every workload on port `port` moved to and from the host (as
    /// [`PmuHost::workload_bytes`]): what its device's block device or network interface counts.
    pub fn port_bytes(&self, port: usize) -> (u64, u64) {
        (0..self.slots.len())
            .filter(|&i| match self.slots[i] {
                Slot::Storage(s) => self.sets[s].port == port,
                Slot::Nic(f) => self.flows[f].port == port,
            })
            .map(|i| self.workload_bytes(i))
            .fold((0, 0), |a, b| (a.0 + b.0, a.1 + b.1))
    }

    /// What fio would report for workload `i`, a storage workload: bytes, I/Os and completion
    /// latency per direction, and its runtime; `None` for a NIC workload.
    pub fn storage_stats(&self, i: usize) -> Option<StorageStats> {
        match self.slots[i] {
            Slot::Storage(s) => Some(self.sets[s].stats()),
            Slot::Nic(_) => None,
        }
    }

    fn at(&mut self, t: Ps, ev: Ev) {
        debug_assert!(t >= self.now, "event {ev:?} at {t} before now {}", self.now);
        self.queue.push(t, ev);
    }

    /// Run the simulation until `ns` nanoseconds (never backwards).
    pub fn advance_to(&mut self, ns: u64) {
        let t = ns.saturating_mul(1000).max(self.now);
        while let Some((te, ev)) = self.queue.pop_due(t) {
            self.now = te;
            // Every send from here on is ready at `te` or later: the counters can count up to
            // it (the counts add up the same in any steps).
            if te >= self.settled_at + SETTLE_EVERY {
                self.settle(te);
            }
            self.handle(ev);
        }
        self.now = t;
        self.settle(t);
    }

    /// Every port's counters up to `t`, which folds what has crossed into each link's ledger.
    fn settle(&mut self, t: Ps) {
        for (i, p) in self.ports.iter_mut().enumerate() {
            let link = p.link.as_ref().map(|l| PortLink {
                rx: &mut p.rx,
                tx: &mut p.tx,
                dllps: DllpRates::of(l),
            });
            self.bank.advance(i, t, link);
        }
        self.settled_at = t;
    }

    /// Open a counter on port `i` for a DWC `perf_event_attr.config`, at the current time.
    /// `Err` names what the hardware does not have.
    pub fn open(&mut self, i: usize, config: u64) -> Result<usize, String> {
        let p = &self.ports[i];
        let m = EventConfig::decode(self.profile.pmu.driver, config)
            .and_then(|c| c.measure(p.link.is_some(), p.lanes))
            .ok_or_else(|| format!("config {config:#x}: no such event or lane on this root port"))?;
        Ok(self.bank.open(i, m, self.now))
    }

    /// A counter's value, enabled and running nanoseconds now.
    pub fn read(&self, id: usize) -> (u64, u64, u64) {
        self.bank.read(id, self.now)
    }

    fn handle(&mut self, ev: Ev) {
        let t = self.now;
        match ev {
            Ev::Submit(j) => self.submit_io(j, t),
            Ev::Doorbell(io) => self.doorbell(io, t),
            Ev::Fetched(io) => self.fetched(io, t),
            Ev::Chunk(io, n) => self.chunk(io, n, t),
            Ev::Complete(io) => self.complete(io, t),
            Ev::Reap(io) => self.reap_io(io, t),
            Ev::Done(io) => self.done(io, t),
            Ev::Link(p) => self.link_turn(p, t),
            Ev::NicRx(f) | Ev::NicTx(f) => self.nic_batch(f, ev, t),
        }
    }

    fn nic_batch(&mut self, i: usize, ev: Ev, t: Ps) {
        let f = &mut self.flows[i];
        if f.stop.is_some_and(|s| t >= s) {
            return;
        }
        let port = &mut self.ports[f.port];
        let l = port.link.clone().expect("NIC ports have a link");
        let every = if ev == Ev::NicRx(i) {
            nic::receive(f, &self.costs, &l, port, t);
            f.every(f.job.rx_gbps)
        } else {
            nic::transmit(f, &self.costs, &l, port, t);
            f.every(f.job.tx_gbps)
        };
        if let Some(e) = every {
            self.at(t + e, ev);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn host(jobs: &[&str]) -> PmuHost {
        let p = profile::PmuHostProfile::load("yitian710-nvme").unwrap();
        let jobs: Vec<HostWorkload> = jobs.iter().map(|j| HostWorkload::parse(&p, j).unwrap()).collect();
        PmuHost::new(p, &jobs, 7)
    }

    fn port(h: &PmuHost, bdf: &str) -> usize {
        h.profile().ports.iter().position(|p| p.bdf == bdf).unwrap()
    }

    #[test]
    fn a_read_workload_moves_its_bytes_upstream_at_the_media_rate() {
        let mut h = host(&["port=00:02.0,rw=read,bs=1M,iodepth=32,numjobs=1,runtime=1s"]);
        let p = port(&h, "0000:00:02.0");
        let rx = h.open(p, 0x21).unwrap();
        let tx = h.open(p, 0x20).unwrap();
        h.advance_to(3_000_000_000);
        assert!(h.workloads_done());
        let (read, written) = h.workload_bytes(0);
        assert_eq!(written, 0);
        // About 1 s at 560 MB/s, whole 1 MiB I/Os.
        assert!(
            read % (1 << 20) == 0 && (450e6..600e6).contains(&(read as f64)),
            "{read}"
        );
        // Both payload events share the counter: each ran about half the time.
        let (rx_v, en, run) = h.read(rx);
        assert_eq!(en, 3_000_000_000);
        assert!((run as f64 / en as f64 - 0.5).abs() < 0.01, "{run} of {en}");
        assert!(
            rx_v > 0 && rx_v % 16 == 0,
            "upstream payload is in bytes, counted in 16 B units"
        );
        let (tx_v, _, _) = h.read(tx);
        assert!(tx_v < rx_v / 1000, "reads send little downstream: {tx_v}");
    }

    #[test]
    fn one_event_counts_every_payload_byte_and_the_protocol_overhead() {
        let mut h = host(&["port=00:02.0,rw=write,bs=1M,iodepth=4,numjobs=1,size=16M"]);
        let p = port(&h, "0000:00:02.0");
        let tx = h.open(p, 0x20).unwrap();
        let mrd = h.open(p, 0x1070c).unwrap();
        h.advance_to(2_000_000_000);
        assert!(h.workloads_done());
        assert_eq!(h.workload_bytes(0), (0, 16 << 20));
        let (tx_v, en, run) = h.read(tx);
        assert_eq!(en, run, "alone on the time-based counter");
        // Per 1 MiB write: PxSACT + PxCI doorbells (8 B), command header + CFIS + one PRD
        // (68 B), PxIS + IS clears (8 B) = 84 B on top of the data.
        assert_eq!(tx_v, 16 * ((1 << 20) + 84));
        // Read requests: 2048 of 512 B for the data, three command reads, none for reaping.
        assert_eq!(h.read(mrd).0, 16 * (2048 + 3));
    }

    #[test]
    fn a_nic_moves_packets_descriptors_and_completions() {
        let mut h = host(&["port=30:03.0,rx=40,pkt=1500,runtime=100ms"]);
        let p = port(&h, "0000:30:03.0");
        let rx = h.open(p, 0x21).unwrap();
        let tx = h.open(p, 0x10707).unwrap(); // tx_completion_with_data, lane 0
        h.advance_to(200_000_000);
        assert!(h.workloads_done());
        // A batch of 64 packets every 64 × 1500 B × 8 / 40 Gb/s = 19.2 µs, 100 ms long.
        let batches = 100_000_000 / 19_200;
        assert_eq!(h.workload_bytes(0), (batches * 64 * 1500, 0));
        // Upstream: the packets, a 64 B completion each and a 4 B MSI-X per batch.
        assert_eq!(h.read(rx).0, batches * (64 * (1500 + 64) + 4));
        // Downstream completions: the 64 receive descriptors (1 KiB) of each batch, cut at MPS.
        assert_eq!(h.read(tx).0, batches * 2);
    }

    #[test]
    fn a_nic_offered_more_than_its_link_carries_counts_what_crossed_and_keeps_a_ring_at_most() {
        // The degraded host's ConnectX-5 trained Gen3 x8 with MPS 128: 90 Gb/s received and
        // 10 sent are more than its link carries.
        let p = profile::PmuHostProfile::load("yitian710-degraded").unwrap();
        let jobs = [HostWorkload::parse(&p, "port=b0:00.0,rx=90,tx=10").unwrap()];
        let mut h = PmuHost::new(p, &jobs, 7);
        let i = port(&h, "0000:b0:00.0");
        let payload = h.open(i, 0x21).unwrap();
        let capacity = pcie_model::capacity(h.link(i).unwrap()).0;
        h.advance_to(100_000_000);
        let (rx, tx) = h.port_bytes(i);
        let gbps = |bytes: u64| bytes as f64 * 8.0 / 0.1 / 1e9;
        // Only what crossed is counted: within the link's packet capacity, and what crossed
        // the port (the payload event sees the packets and their completions) holds it.
        assert!(gbps(rx) < capacity && gbps(rx) > 10.0, "{} of {capacity}", gbps(rx));
        assert!(
            h.read(payload).0 as f64 >= rx as f64,
            "the port saw every counted packet"
        );
        assert!(
            gbps(tx) > 5.0,
            "sending goes on beside a full receive ring: {}",
            gbps(tx)
        );
        // At most a ring (1024 packets) of each direction waits for the link.
        let f = &h.flows[0];
        assert!(f.rx_ring.len() * 64 <= 1024 && f.tx_ring.len() * 64 <= 1024);
    }

    #[test]
    fn dllps_follow_the_spec_rates() {
        // Lane events on the lane counter take turns; count each in a run of its own.
        let count = |config: u64| {
            let mut h = host(&["port=00:02.0,rw=read,bs=1M,iodepth=4,size=16M"]);
            let id = h.open(port(&h, "0000:00:02.0"), config).unwrap();
            h.advance_to(1_000_000_000);
            h.read(id).0
        };
        let (data_tlps, acks_sent, fcs_sent) = (count(0x1070b), count(0x10600), count(0x10601));
        // Gen3 x2, MPS 256: an Ack every 313 symbol times x 2 lanes = 626 link bytes, and a
        // 256 B memory write takes 280 on the link: 0.45 Acks per data TLP.
        let per_tlp = acks_sent as f64 / data_tlps as f64;
        assert!((0.44..0.46).contains(&per_tlp), "{acks_sent} Acks for {data_tlps} TLPs");
        assert!(fcs_sent > 0 && fcs_sent <= data_tlps, "{fcs_sent}");
        // Downstream the root port sends few TLPs, so it receives few Acks.
        assert!(count(0x10602) < acks_sent / 100);
    }

    #[test]
    fn same_seed_same_counts() {
        let run = || {
            let mut h = host(&["port=00:01.0,rw=readwrite,bs=128k,iodepth=16,numjobs=2,runtime=50ms"]);
            let p = port(&h, "0000:00:01.0");
            let id = h.open(p, 0x21).unwrap();
            h.advance_to(100_000_000);
            (h.read(id), h.workload_bytes(0))
        };
        assert_eq!(run(), run());
    }

    #[test]
    fn counts_are_the_same_read_in_any_steps() {
        // The host brings its counters up to date every millisecond while events run, and at
        // every read: multiplexed payload events and a lane event, on a storage port and a NIC
        // port, read once at the end or every 0.37 ms, give the same values.
        let run = |step: u64| {
            let mut h = host(&[
                "port=00:01.0,rw=readwrite,bs=128k,iodepth=16,numjobs=2,runtime=20ms",
                "port=30:03.0,rx=60,tx=20,runtime=20ms",
            ]);
            let ids: Vec<usize> = ["0000:00:01.0", "0000:30:03.0"]
                .iter()
                .flat_map(|bdf| {
                    let p = port(&h, bdf);
                    [0x21, 0x20, 0x1070b].map(|config| h.open(p, config).unwrap())
                })
                .collect();
            let mut ns = 0;
            while ns < 30_000_000 {
                ns = (ns + step).min(30_000_000);
                h.advance_to(ns);
            }
            ids.iter().map(|&id| h.read(id)).collect::<Vec<_>>()
        };
        let once = run(30_000_000);
        assert!(once.iter().all(|&(v, _, _)| v > 0), "{once:?}");
        assert_eq!(once, run(370_000));
    }
}

#[cfg(test)]
mod study {
    //! The seed study's fio runs on its SATA disk (issue 12), through the whole mechanism:
    //! fio's job loop, the block layer's requests, NCQ, the link, the media and its pauses.
    use super::*;

    struct Run {
        stats: StorageStats,
        /// The PMU's bytes for the event asked, scaled by enabled / running as perf does.
        pmu_bytes: f64,
    }

    /// fio `bs=1M iodepth=64 numjobs=4 runtime=20s` behind 00:02.0 while the port's PMU counts
    /// `event`, alone or sharing the counter with the other direction's payload.
    fn fio(profile: &str, rw: &str, event: u64, shared: bool, seed: u64) -> Run {
        let p = profile::PmuHostProfile::load(profile).unwrap();
        let spec = format!("port=00:02.0,rw={rw},bs=1M,iodepth=64,numjobs=4,runtime=20s");
        let job = HostWorkload::parse(&p, &spec).unwrap();
        let mut h = PmuHost::new(p, &[job], seed);
        let port = h.profile().ports.iter().position(|p| p.bdf == "0000:00:02.0").unwrap();
        let id = h.open(port, event).unwrap();
        if shared {
            h.open(port, event ^ 1).unwrap();
        }
        let mut t = 0;
        while !h.workloads_done() {
            t += 100_000_000;
            h.advance_to(t);
        }
        let (v, en, run) = h.read(id);
        Run {
            stats: h.storage_stats(0).unwrap(),
            pmu_bytes: v as f64 * en as f64 / run as f64,
        }
    }

    fn error_pct(r: &Run, write: bool) -> f64 {
        let d = if write { r.stats.write } else { r.stats.read };
        100.0 * (r.pmu_bytes - d.bytes as f64) / d.bytes as f64
    }

    fn within(what: &str, got: f64, want: f64, pct: f64) {
        assert!(
            (got / want - 1.0).abs() * 100.0 <= pct,
            "{what}: {got:.1}, the study {want} (more than {pct} % apart)"
        );
    }

    #[test]
    fn the_studys_fio_runs_come_out_as_measured() {
        // read: 517 MiB/s, 10.2 GiB, clat 484 +- 41 ms; write: 216 MiB/s, 4393 MiB, clat
        // 1146 +- 196 ms (issue 12). Averaged over three seeds: where the writes' pauses fall
        // differs from seed to seed (the reads come out the same for every seed).
        for (rw, event, mib_s, mib, clat, stdev) in [
            ("read", 0x21, 517.0, 10.2 * 1024.0, 484.0, 41.0),
            ("write", 0x20, 216.0, 4393.0, 1146.0, 196.0),
        ] {
            let write = rw == "write";
            let runs: Vec<Run> = (1..=3).map(|seed| fio("yitian710", rw, event, false, seed)).collect();
            let mean = |f: &dyn Fn(&IoStats, f64) -> f64| -> f64 {
                let v = runs.iter().map(|r| {
                    let d = if write { r.stats.write } else { r.stats.read };
                    f(&d, r.stats.runtime_ns as f64 / 1e9)
                });
                v.sum::<f64>() / runs.len() as f64
            };
            let got_mib = |d: &IoStats| d.bytes as f64 / 1048576.0;
            within(&format!("{rw} MiB/s"), mean(&|d, secs| got_mib(d) / secs), mib_s, 5.0);
            within(&format!("{rw} MiB"), mean(&|d, _| got_mib(d)), mib, 5.0);
            within(
                &format!("{rw} clat avg"),
                mean(&|d, _| d.clat_mean_ns() / 1e6),
                clat,
                5.0,
            );
            within(
                &format!("{rw} clat stdev"),
                mean(&|d, _| d.clat_stdev_ns() / 1e6),
                stdev,
                10.0,
            );
            for r in &runs {
                // Alone on the counter, the PMU sees the data and the few bytes of each command.
                let e = error_pct(r, write);
                assert!((0.0..0.01).contains(&e), "{rw}: single-event error {e} %");
            }
        }
    }

    /// Each direction of fio's mixed run over `seeds` (shared counter): MiB/s, MiB and clat
    /// mean, averaged, with every run's multiplexed PMU error.
    fn mixed(profile: &str, seeds: std::ops::RangeInclusive<u64>) -> ([[f64; 3]; 2], Vec<f64>) {
        let mut sums = [[0.0; 3]; 2];
        let mut errors = Vec::new();
        let n = seeds.clone().count() as f64;
        for seed in seeds {
            let rx = fio(profile, "readwrite", 0x21, true, seed);
            let tx = fio(profile, "readwrite", 0x20, true, seed);
            assert_eq!(rx.stats, tx.stats, "the counted event does not change the run");
            let secs = rx.stats.runtime_ns as f64 / 1e9;
            for (sum, d) in sums.iter_mut().zip([rx.stats.read, rx.stats.write]) {
                let mib = d.bytes as f64 / 1048576.0;
                for (x, v) in sum.iter_mut().zip([mib / secs, mib, d.clat_mean_ns() / 1e6]) {
                    *x += v / n;
                }
            }
            errors.extend([error_pct(&rx, false), error_pct(&tx, true)]);
        }
        (sums, errors)
    }

    #[test]
    fn a_mixed_run_moves_what_the_studys_did_and_errs_as_little() {
        // The study's `--rw=readwrite` run (issue 39): read 161 MiB/s, 3249 MiB, clat 710.83
        // ms; write 168 MiB/s, 3393 MiB, clat 803.25 ms. The block layer (mq-deadline) sends
        // the drive reads and writes in batches of 16, the drive moves its commands' data in
        // the order it took them and its 2 MiB buffer lets the link take the next write's
        // data while the flash programs: fio's 50/50 mix moves about 2 MiB per 6 ms.
        let ([read, write], errors) = mixed("yitian710", 1..=4);
        for (what, got, study) in [
            ("read", read, [161.0, 3249.0, 710.83]),
            ("write", write, [168.0, 3393.0, 803.25]),
        ] {
            within(&format!("readwrite {what} MiB/s"), got[0], study[0], 5.0);
            within(&format!("readwrite {what} MiB"), got[1], study[1], 5.0);
            within(&format!("readwrite {what} clat avg"), got[2], study[2], 10.0);
        }
        // Reads pass the writes in the host's scheduler, not in the drive: they wait less.
        assert!(read[2] < write[2] && write[2] < 1.25 * read[2], "{read:?} {write:?}");
        // The multiplexed error is what the turns see, a few tenths of a percent (the study's
        // mixed run: -0.67 % rx, -0.52 % tx); issue 5's limit on every run.
        for e in &errors {
            assert!(e.abs() < 1.0, "multiplexed error {e} %: {errors:?}");
        }
        let rms = (errors.iter().map(|e| e * e).sum::<f64>() / errors.len() as f64).sqrt();
        assert!(
            (0.1..1.0).contains(&rms),
            "multiplexed errors' root mean square {rms} %"
        );
        // Same seed, same run.
        let again = fio("yitian710", "readwrite", 0x21, true, 1);
        let first = fio("yitian710", "readwrite", 0x21, true, 1);
        assert_eq!((again.stats, again.pmu_bytes), (first.stats, first.pmu_bytes));
    }

    #[test]
    fn the_write_buffer_sets_how_far_a_mixed_run_overlaps_programs_and_reads() {
        // Without room for a second write the mixed run is close to the link and the flash
        // taking turns (a read at the link's rate, a write at the flash's, the pauses): fio's
        // 16-request batches leave the flash idle while the reads cross. The buffer lets the
        // flash program on into the reads' batch.
        let p = profile::PmuHostProfile::load("yitian710").unwrap();
        let s = p.devices.iter().find_map(|d| d.storage.clone()).unwrap();
        let pause = s.write_pause.as_ref().unwrap();
        let (lo, mode, hi) = (pause.pause.min_ns, pause.pause.mode_ns, pause.pause.max_ns);
        let mib = 1048576.0;
        let pause_s = (lo + mode + hi) / 3.0 / 1e9 * mib / (pause.every_mb * 1e6);
        let turns = 2.0 / (mib / (s.read_mbps * 1e6) + mib / (s.program_mbps.unwrap() * 1e6) + pause_s);
        let dir = std::env::temp_dir().join(format!("pcie-sim-buffer-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("no-buffer.toml");
        let text = include_str!("../../../../data/profiles/yitian710.toml");
        std::fs::write(
            &file,
            text.replace("write_buffer_bytes = 2097152", "write_buffer_bytes = 0"),
        )
        .unwrap();
        let total = |r: [[f64; 3]; 2]| r[0][0] + r[1][0];
        let (none, _) = mixed(file.to_str().unwrap(), 1..=4);
        std::fs::remove_dir_all(&dir).unwrap();
        let (buffered, _) = mixed("yitian710", 1..=4);
        within("mixed MiB/s without a buffer", total(none), turns, 5.0);
        assert!(total(buffered) > 1.05 * total(none), "{buffered:?} {none:?}");
    }

    #[test]
    fn multiplexed_errors_come_from_the_rotation_and_the_bursts() {
        let errors = |profile: &str, rw: &str| -> Vec<f64> {
            let event = if rw == "read" { 0x21 } else { 0x20 };
            (1..=4)
                .map(|seed| error_pct(&fio(profile, rw, event, true, seed), rw == "write"))
                .collect()
        };
        let (reads, writes) = (errors("yitian710", "read"), errors("yitian710", "write"));
        // Each rotation leaves 5 config accesses (10 us) of a 4 ms turn uncounted: about
        // -0.25 %, a few tenths of a percent as real multiplexed runs show.
        for e in &reads {
            assert!((-0.5..-0.05).contains(e), "{reads:?}");
        }
        for e in &writes {
            assert!(e.abs() < 0.67, "the study's largest error: {writes:?}");
        }
        assert!(writes.iter().sum::<f64>() < 0.0, "{writes:?}");
        // The reads stream at the link's pace; a write's data crosses the link in 1.9 ms of
        // each 3.4 ms program and garbage-collection pauses stop the writes, so they come in
        // bursts, and where a burst falls in the turns scatters their error.
        let spread =
            |v: &[f64]| v.iter().cloned().fold(f64::MIN, f64::max) - v.iter().cloned().fold(f64::MAX, f64::min);
        assert!(spread(&writes) > 10.0 * spread(&reads), "{reads:?} {writes:?}");
    }

    #[test]
    fn without_the_counter_switch_a_smooth_stream_errs_little() {
        let dir = std::env::temp_dir().join(format!("pcie-sim-mux-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("instant-switch.toml");
        std::fs::write(&file, "inherit = \"yitian710\"\n[pmu]\nconfig_access_ns = 0.0\n").unwrap();
        let r = fio(file.to_str().unwrap(), "read", 0x21, true, 1);
        std::fs::remove_dir_all(&dir).unwrap();
        let e = error_pct(&r, false);
        assert!(e.abs() < 0.02, "{e}");
    }
}
