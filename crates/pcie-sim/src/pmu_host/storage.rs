//! Storage I/O on the simulated host: fio-like jobs, the host's doorbells and reaping, and a
//! storage device's command fetches, media and data movement (steps 1 to 6 in
//! simulator.md's "PMU host and storage models").

use super::deadline::Deadline;
use super::profile::{PauseSpec, StorageSpec};
use super::workload::{Rw, StorageJob};
use super::{Ev, HostCosts, PmuHost, Port, Slot};
use crate::distribution::Sampler;
use crate::queue::Pool;
use crate::rng::Rng;
use crate::time::Ps;
use pcie_model::{LinkConfig, TlpKind};
use std::collections::VecDeque;

/// A storage device's state.
pub(super) struct Storage {
    spec: StorageSpec,
    media: Pool,
    /// Command slots free in the device's queues; requests beyond them wait in the host's
    /// scheduler.
    slots: u32,
    waiting: Deadline,
    /// Requests the block layer may still allocate; jobs whose submission found none sleep in
    /// `blocked` (first come, first woken) with the I/O they were submitting.
    requests: u32,
    blocked: VecDeque<(usize, usize)>,
    read_latency: Sampler,
    write_latency: Sampler,
    /// Media time per byte of one channel.
    read_ps_per_byte: f64,
    write_ps_per_byte: f64,
    read_pause: Option<Pauses>,
    write_pause: Option<Pauses>,
    /// A SATA drive's command queue and flash programming behind its link (`program_mbps`).
    ncq: Option<Ncq>,
}

/// A drive whose one channel is its serial link (SATA): half duplex, one command's data at a
/// time (Linux never enables the non-zero buffer offsets that would let a drive interleave
/// commands' data), its flash programming behind it. Fetched commands wait in the drive's
/// queue (NCQ's 32 tags) and their data crosses in the order the drive took them: a read's
/// once its media has it, a write's once the drive's write buffer has room for it. The flash
/// programs the buffered data one command at a time, each program as soon as the previous
/// one (and any pause after it) is over and its data has begun to arrive.
struct Ncq {
    queue: VecDeque<Queued>,
    program_ps_per_byte: f64,
    /// The drive's write buffer (`write_buffer_bytes`), and the share of a write's data that
    /// fills it rather than passing on to the flash while it arrives (1 - program/link rate).
    buffer_bytes: f64,
    fill_share: f64,
    /// The programs taken on and not yet over: start, end (before any pause) and bytes.
    programs: VecDeque<(Ps, Ps, f64)>,
    /// When the flash finishes the program it has taken on (and any pause after it).
    program_free: Ps,
}

struct Queued {
    io: usize,
    write: bool,
    /// When a read's data is ready in the drive.
    ready: Ps,
}

impl Ncq {
    /// When command `q`, of `bytes`, can start moving its data.
    fn ready(&self, q: &Queued, bytes: f64) -> Ps {
        if !q.write {
            return q.ready;
        }
        // The data may start once the buffer will not overflow while it arrives: the bytes
        // the programs ahead have left, plus what this write adds faster than the flash
        // drains it, fit. The programs run back to back (pauses between them), so the bytes
        // left fall over time: find when they first leave room enough.
        let room = self.buffer_bytes - bytes * self.fill_share;
        let mut after = 0.0;
        for &(start, end, b) in self.programs.iter().rev() {
            if after + b > room {
                let share = ((room - after) / b).max(0.0);
                return end - (share * (end - start) as f64) as Ps;
            }
            after += b;
        }
        0
    }

    /// Forget the programs that are over by `t`.
    fn settle(&mut self, t: Ps) {
        while self.programs.front().is_some_and(|p| p.1 <= t) {
            self.programs.pop_front();
        }
    }
}

/// The media's background pauses of one kind: media bytes left before the next one.
struct Pauses {
    mean_bytes: f64,
    left: f64,
    pause: Sampler,
}

impl Pauses {
    fn new(p: &PauseSpec, rng: &mut Rng) -> Pauses {
        let mut x = Pauses {
            mean_bytes: p.every_mb * 1e6,
            left: 0.0,
            pause: Sampler::triangular(&p.pause),
        };
        x.left = x.next_gap(rng);
        x
    }

    /// Media bytes to the next pause: exponential, so pauses come as a Poisson process in
    /// the work done.
    fn next_gap(&self, rng: &mut Rng) -> f64 {
        -(1.0 - rng.unit()).ln() * self.mean_bytes
    }

    /// `bytes` more of media work; the pause it triggers, if any.
    fn work(&mut self, bytes: f64, rng: &mut Rng) -> Option<Ps> {
        self.left -= bytes;
        if self.left > 0.0 {
            return None;
        }
        self.left += self.next_gap(rng);
        Some(self.pause.draw(rng))
    }
}

impl Storage {
    pub(super) fn new(s: StorageSpec, rng: &mut Rng) -> Storage {
        Storage {
            read_pause: s.read_pause.as_ref().map(|p| Pauses::new(p, rng)),
            write_pause: s.write_pause.as_ref().map(|p| Pauses::new(p, rng)),
            media: Pool {
                free: vec![0; s.channels as usize],
            },
            slots: s.queues * s.queue_depth,
            waiting: Deadline::default(),
            requests: s.host_requests,
            blocked: VecDeque::new(),
            read_latency: Sampler::triangular(&s.read_latency),
            write_latency: Sampler::triangular(&s.write_latency),
            read_ps_per_byte: 1e6 * s.channels as f64 / s.read_mbps,
            write_ps_per_byte: 1e6 * s.channels as f64 / s.write_mbps,
            ncq: s.program_mbps.map(|p| Ncq {
                queue: VecDeque::new(),
                program_ps_per_byte: 1e6 / p,
                buffer_bytes: s.write_buffer_bytes.unwrap_or(0) as f64,
                fill_share: (1.0 - p / s.write_mbps).clamp(0.0, 1.0),
                programs: VecDeque::new(),
                program_free: 0,
            }),
            spec: s,
        }
    }
}

/// One direction of a storage workload as fio reports it: bytes and I/Os completed, and the
/// completion latency (submission to completion) of each I/O, accumulated with Welford's method.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct IoStats {
    pub bytes: u64,
    pub ios: u64,
    clat_mean_ns: f64,
    clat_m2: f64,
}

impl IoStats {
    fn add(&mut self, bytes: u64, clat_ns: f64) {
        self.bytes += bytes;
        self.ios += 1;
        let d = clat_ns - self.clat_mean_ns;
        self.clat_mean_ns += d / self.ios as f64;
        self.clat_m2 += d * (clat_ns - self.clat_mean_ns);
    }

    /// Mean completion latency in nanoseconds (0 without I/Os).
    pub fn clat_mean_ns(&self) -> f64 {
        self.clat_mean_ns
    }

    /// Sample standard deviation of the completion latency, as fio prints it.
    pub fn clat_stdev_ns(&self) -> f64 {
        if self.ios < 2 {
            0.0
        } else {
            (self.clat_m2 / (self.ios - 1) as f64).sqrt()
        }
    }
}

/// What fio reports for a storage workload (its jobs group-reported): each direction, and the
/// runtime from the start to the last completion.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct StorageStats {
    pub read: IoStats,
    pub write: IoStats,
    pub runtime_ns: u64,
}

/// One `--workload`: its jobs share these totals.
pub(super) struct JobSet {
    job: StorageJob,
    pub(super) port: usize,
    start: Ps,
    stop: Option<Ps>,
    /// I/Os reaped, as fio counts them.
    stats: StorageStats,
    /// I/Os issued and not yet reaped, over all jobs.
    outstanding: u32,
    /// Jobs still submitting.
    active: u32,
}

/// One fio job (libaio): one CPU that issues I/Os until `iodepth` are in flight, then waits in
/// `io_getevents` for at least one completion and reaps every completion there is. An
/// `io_submit` that finds no block-layer request sleeps until one frees, and the job's
/// completions wait unreaped meanwhile: fio's clat runs from issue to reap.
pub(super) struct Job {
    set: usize,
    issued: u64,
    /// Where its next read and write start: fio's sequential offsets, one per direction,
    /// from the start of the file in every job.
    next_offset: [u64; 2],
    stopped: bool,
    /// Issued and not reaped.
    in_flight: u32,
    /// Completed and not reaped, oldest first (the completion ring).
    completed: VecDeque<usize>,
    /// Sleeping in `io_getevents` for a completion.
    reaping: bool,
}

pub(super) struct Io {
    job: usize,
    write: bool,
    /// Its offset in the file (the block layer sorts by it).
    offset: u64,
    /// When the job issued it (fio's clat starts here).
    submitted: Ps,
    data_start: Ps,
    /// When the media has taken all of a write's data.
    media_end: Ps,
}

impl JobSet {
    /// Stopped submitting and every I/O reaped.
    pub(super) fn finished(&self) -> bool {
        self.active == 0 && self.outstanding == 0
    }

    /// Bytes of reaped reads and writes.
    pub(super) fn bytes(&self) -> (u64, u64) {
        (self.stats.read.bytes, self.stats.write.bytes)
    }

    pub(super) fn stats(&self) -> StorageStats {
        self.stats
    }
}

impl PmuHost {
    /// The request enters the host's scheduler, which sends it (or an earlier one) to the
    /// device when a command slot is free.
    pub(super) fn doorbell(&mut self, io: usize, t: Ps) {
        let p = self.port_of(io);
        let (write, offset) = (self.ios[io].write, self.ios[io].offset);
        let s = self.ports[p].storage.as_mut().expect("jobs run on storage ports");
        s.waiting.insert(io, write, offset, t);
        self.dispatch(p, t);
    }

    /// The scheduler fills the device's free command slots.
    fn dispatch(&mut self, p: usize, t: Ps) {
        loop {
            let s = self.ports[p].storage.as_mut().expect("storage port");
            if s.slots == 0 {
                return;
            }
            let Some(io) = s.waiting.dispatch(t) else { return };
            s.slots -= 1;
            self.start_command(io, t);
        }
    }

    pub(super) fn add_storage(&mut self, job: &StorageJob, port: usize) {
        let set = self.sets.len();
        self.slots.push(Slot::Storage(set));
        self.sets.push(JobSet {
            job: job.clone(),
            port,
            start: self.now,
            stop: job.runtime.map(|s| self.now + (s * 1e12) as Ps),
            stats: StorageStats::default(),
            outstanding: 0,
            active: job.numjobs,
        });
        for _ in 0..job.numjobs {
            let j = self.jobs.len();
            self.jobs.push(Job {
                set,
                issued: 0,
                next_offset: [0, 0],
                stopped: false,
                in_flight: 0,
                completed: VecDeque::new(),
                reaping: false,
            });
            self.at(self.now, Ev::Submit(j));
        }
    }

    fn port_of(&self, io: usize) -> usize {
        self.sets[self.jobs[self.ios[io].job].set].port
    }

    /// The host's costs, and the link and port of an I/O's device.
    fn io_port(&mut self, io: usize) -> (&HostCosts, LinkConfig, &mut Port) {
        let p = self.port_of(io);
        let port = &mut self.ports[p];
        let l = port.link.clone().expect("storage ports have a link");
        (&self.costs, l, port)
    }

    /// Job `j`'s CPU is free at `t`: it issues its next I/O, or waits for completions.
    pub(super) fn submit_io(&mut self, j: usize, t: Ps) {
        let set = &self.sets[self.jobs[j].set];
        let bs = set.job.bs as u64;
        let over_size = set.job.size.is_some_and(|s| self.jobs[j].issued + bs > s);
        let over_time = set.stop.is_some_and(|s| t >= s);
        let (rw, iodepth, port) = (set.job.rw, set.job.iodepth, set.port);
        if (over_size || over_time) && !self.jobs[j].stopped {
            self.jobs[j].stopped = true;
            self.sets[self.jobs[j].set].active -= 1;
        }
        let job = &self.jobs[j];
        if job.stopped || job.in_flight == iodepth {
            // io_getevents: reap what has completed, or sleep until something does.
            if job.completed.is_empty() {
                self.jobs[j].reaping = job.in_flight > 0;
            } else {
                self.reap_job(j, t);
            }
            return;
        }
        let write = match rw {
            Rw::Read => false,
            Rw::Write => true,
            Rw::ReadWrite => self.ports[port].rng.chance(0.5),
        };
        let rung = t + self.costs.submit.draw(&mut self.ports[port].rng);
        let job = &mut self.jobs[j];
        job.issued += bs;
        job.in_flight += 1;
        let offset = job.next_offset[write as usize];
        job.next_offset[write as usize] += bs;
        self.sets[job.set].outstanding += 1;
        let io = Io {
            job: j,
            write,
            offset,
            submitted: t,
            data_start: 0,
            media_end: 0,
        };
        let id = match self.free_ios.pop() {
            Some(i) => {
                self.ios[i] = io;
                i
            }
            None => {
                self.ios.push(io);
                self.ios.len() - 1
            }
        };
        let s = self.ports[port].storage.as_mut().expect("jobs run on storage ports");
        if s.requests == 0 {
            s.blocked.push_back((j, id));
        } else {
            s.requests -= 1;
            self.at(rung, Ev::Doorbell(id));
            self.at(rung, Ev::Submit(j));
        }
    }

    /// Job `j` reaps its oldest completion at `t` (fio's `iodepth_batch_complete_min` and
    /// `_max` are both 1 by default: one event per `io_getevents`) and goes on issuing.
    fn reap_job(&mut self, j: usize, t: Ps) {
        let job = &mut self.jobs[j];
        job.reaping = false;
        let io = job.completed.pop_front().expect("reaped only with a completion");
        job.in_flight -= 1;
        let set = &mut self.sets[job.set];
        let o = &self.ios[io];
        let dir = if o.write {
            &mut set.stats.write
        } else {
            &mut set.stats.read
        };
        dir.add(set.job.bs as u64, (t - o.submitted) as f64 / 1000.0);
        set.outstanding -= 1;
        set.stats.runtime_ns = (t - set.start) / 1000;
        self.free_ios.push(io);
        self.at(t, Ev::Submit(j));
    }

    /// Doorbells down; the device reads the command structures and the scatter list it needs.
    fn start_command(&mut self, io: usize, t: Ps) {
        let bs = self.sets[self.jobs[self.ios[io].job].set].job.bs;
        let (c, l, port) = self.io_port(io);
        let (wire, mem) = (c.wire, c.memory_read.draw(&mut port.rng));
        let s = &port.storage.as_ref().expect("storage port").spec;
        let mut at_dev = t;
        for &b in &s.doorbell_writes {
            at_dev = port.tx.send(&l, t, TlpKind::MWr, b, 1) + wire;
        }
        let entries = bs.div_ceil(s.sg_segment_bytes);
        let list = entries.saturating_sub(s.sg_inline) * s.sg_entry_bytes;
        let mut fetched = at_dev;
        let reads: Vec<u32> = s
            .command_reads
            .iter()
            .copied()
            .chain((list > 0).then_some(list))
            .collect();
        for b in reads {
            let asked = port.rx.send_cut(&l, at_dev, TlpKind::MRd, b, l.mrrs, 1) + wire;
            fetched = fetched.max(port.tx.send_cut(&l, asked + mem, TlpKind::CplD, b, l.mps, 1) + wire);
        }
        self.at(fetched, Ev::Fetched(io));
    }

    pub(super) fn fetched(&mut self, io: usize, t: Ps) {
        let write = self.ios[io].write;
        let p = self.port_of(io);
        let port = &mut self.ports[p];
        let s = port.storage.as_mut().expect("storage port");
        if let Some(n) = s.ncq.as_mut() {
            let ready = if write {
                t
            } else {
                t + s.read_latency.draw(&mut port.rng)
            };
            n.queue.push_back(Queued { io, write, ready });
            self.at(t, Ev::Link(p));
            return;
        }
        let data_start = if write {
            t
        } else {
            t + s.read_latency.draw(&mut port.rng)
        };
        self.move_data(io, data_start);
    }

    /// A serial link's turn at `t` (free, or the next command may have become ready): it
    /// starts carrying the oldest queued command's data, or waits until that can move.
    pub(super) fn link_turn(&mut self, p: usize, t: Ps) {
        let s = self.ports[p].storage.as_mut().expect("storage port");
        let n = s.ncq.as_mut().expect("link turns on serial drives");
        if s.media.free.iter().all(|&f| f > t) {
            return; // busy: the transfer's end has its own turn
        }
        n.settle(t);
        let Some(q) = n.queue.front() else { return };
        let bs = self.sets[self.jobs[self.ios[q.io].job].set].job.bs as f64;
        let ready = n.ready(q, bs);
        if ready <= t {
            let io = q.io;
            n.queue.pop_front();
            self.move_data(io, t);
        } else {
            self.at(ready, Ev::Link(p));
        }
    }

    /// The media (or the serial link) takes on `io`'s data from `ready`: its chunks are
    /// scheduled, and the media pauses if this work brings on a pause.
    fn move_data(&mut self, io: usize, ready: Ps) {
        let write = self.ios[io].write;
        let bs = self.sets[self.jobs[self.ios[io].job].set].job.bs as f64;
        let p = self.port_of(io);
        let port = &mut self.ports[p];
        let rng = &mut port.rng;
        let s = port.storage.as_mut().expect("storage port");
        let per = if write { s.write_ps_per_byte } else { s.read_ps_per_byte };
        let data_start = s.media.serve(ready, (bs * per) as Ps);
        let pauses = if write { &mut s.write_pause } else { &mut s.read_pause };
        let pause = pauses.as_mut().and_then(|p| p.work(bs, rng));
        match s.ncq.as_mut() {
            Some(n) if write => {
                let start = data_start.max(n.program_free);
                let end = start + (bs * n.program_ps_per_byte) as Ps;
                n.programs.push_back((start, end, bs));
                n.program_free = end + pause.unwrap_or(0);
                self.ios[io].media_end = end;
            }
            _ => {
                self.ios[io].media_end = data_start + (bs * per) as Ps;
                if let Some(pause) = pause {
                    // Every channel stops once the work it has taken on is done.
                    let end = s.media.free.iter().copied().max().unwrap_or(ready) + pause;
                    s.media.free.iter_mut().for_each(|f| *f = end);
                }
            }
        }
        if s.ncq.is_some() {
            // The link's next turn: when a channel frees (now, if one is free already).
            let free = s.media.free.iter().copied().min().unwrap_or(ready).max(ready);
            self.at(free, Ev::Link(p));
        }
        self.ios[io].data_start = data_start;
        let first = self.chunk_time(io, 0);
        self.at(first, Ev::Chunk(io, 0));
    }

    /// When chunk `n` moves: a read's chunk once the media has produced it, a write's when
    /// the media is ready to take it.
    fn chunk_time(&self, io: usize, n: u32) -> Ps {
        let o = &self.ios[io];
        let set = &self.sets[self.jobs[o.job].set];
        let s = self.ports[set.port].storage.as_ref().expect("storage port");
        let chunk = s.spec.chunk_bytes as u64;
        let (bytes, per) = if o.write {
            (n as u64 * chunk, s.write_ps_per_byte)
        } else {
            (((n as u64 + 1) * chunk).min(set.job.bs as u64), s.read_ps_per_byte)
        };
        o.data_start + (bytes as f64 * per) as Ps
    }

    pub(super) fn chunk(&mut self, io: usize, n: u32, t: Ps) {
        let (write, media_end) = (self.ios[io].write, self.ios[io].media_end);
        let bs = self.sets[self.jobs[self.ios[io].job].set].job.bs;
        let (c, l, port) = self.io_port(io);
        let (wire, mem) = (c.wire, c.memory_read.draw(&mut port.rng));
        let s = port.storage.as_ref().expect("storage port");
        let chunk = s.spec.chunk_bytes;
        let bytes = chunk.min(bs - n * chunk);
        let last = (n + 1) * chunk >= bs;
        let moved = if write {
            let asked = port.rx.send_cut(&l, t, TlpKind::MRd, bytes, l.mrrs, 1) + wire;
            port.tx.send_cut(&l, asked + mem, TlpKind::CplD, bytes, l.mps, 1) + wire
        } else {
            port.rx.send_cut(&l, t, TlpKind::MWr, bytes, l.mps, 1)
        };
        if !last {
            let next = self.chunk_time(io, n + 1);
            self.at(next, Ev::Chunk(io, n + 1));
            return;
        }
        let done = if write {
            let lat = s.write_latency.draw(&mut port.rng);
            moved.max(media_end) + lat
        } else {
            moved
        };
        self.at(done, Ev::Complete(io));
    }

    /// The device writes its completion entries and the interrupt (after the data: posted
    /// writes stay in order).
    pub(super) fn complete(&mut self, io: usize, t: Ps) {
        let (c, l, port) = self.io_port(io);
        let wire = c.wire;
        let s = &port.storage.as_ref().expect("storage port").spec;
        let mut end = t;
        for &b in s
            .completion_writes
            .iter()
            .chain((s.interrupt_bytes > 0).then_some(&s.interrupt_bytes))
        {
            end = port.rx.send(&l, t, TlpKind::MWr, b, 1);
        }
        let handled = end + wire + c.reap.draw(&mut port.rng);
        self.at(handled, Ev::Reap(io));
    }

    /// The host acknowledges the completion: register writes, and register reads answered by
    /// the device.
    pub(super) fn reap_io(&mut self, io: usize, t: Ps) {
        let (c, l, port) = self.io_port(io);
        let wire = c.wire;
        let s = &port.storage.as_ref().expect("storage port").spec;
        let mut done = t;
        for &b in &s.reap_writes {
            port.tx.send(&l, t, TlpKind::MWr, b, 1);
        }
        for &b in &s.reap_reads {
            let asked = port.tx.send(&l, t, TlpKind::MRd, b, 1) + wire;
            done = done.max(port.rx.send(&l, asked, TlpKind::CplD, b, 1) + wire);
        }
        self.at(done, Ev::Done(io));
    }

    /// The kernel has completed `io` at `t`: its request and device slot free (for the next
    /// waiting request, and the job sleeping longest for one), and its job sees it.
    pub(super) fn done(&mut self, io: usize, t: Ps) {
        let j = self.ios[io].job;
        let port = self.sets[self.jobs[j].set].port;
        let s = self.ports[port].storage.as_mut().expect("storage port");
        s.slots += 1;
        if !s.waiting.is_empty() {
            self.dispatch(port, t);
        }
        let s = self.ports[port].storage.as_mut().expect("storage port");
        match s.blocked.pop_front() {
            Some((woken, pending)) => {
                // The sleeping io_submit takes the request and returns.
                let rung = t + self.costs.submit.draw(&mut self.ports[port].rng);
                self.at(rung, Ev::Doorbell(pending));
                self.at(rung, Ev::Submit(woken));
            }
            None => s.requests += 1,
        }
        self.jobs[j].completed.push_back(io);
        if self.jobs[j].reaping {
            self.reap_job(j, t);
        }
    }
}
