//! The last-level cache as the device sees it: which 64 B lines of the DMA buffer are cached,
//! and by whom. Host writes can fill the whole LLC; DDIO may allocate device writes only into its
//! share. Both regions replace their oldest line first (FIFO, close to LRU for the random and
//! sequential patterns pcie-bench uses, and O(1)).

/// Where a line is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum LineState {
    /// Only in DRAM.
    Memory,
    /// In the LLC, last written by a core (host-warmed).
    Cpu,
    /// In the LLC's DDIO share, written by the device.
    Io,
}

/// The flag of a line last written without a snoop, beside its state's bits.
const UNSNOOPED: u8 = 4;
const STATE: u8 = 3;

/// The states by their bits.
const STATES: [LineState; 4] = [LineState::Memory, LineState::Cpu, LineState::Io, LineState::Memory];

/// [`Llc::found`] by whether the request snoops and a line's byte: a table, as every DMA asks.
const FOUND: [[LineState; 8]; 2] = [found_table(false), found_table(true)];

const fn found_table(snoop: bool) -> [LineState; 8] {
    let mut table = [LineState::Memory; 8];
    let mut bits = 0;
    while bits < 8 {
        table[bits] = match STATES[bits & STATE as usize] {
            LineState::Cpu if !snoop => LineState::Memory,
            LineState::Io if snoop && bits & UNSNOOPED as usize != 0 => LineState::Memory,
            state => state,
        };
        bits += 1;
    }
    table
}

/// Where a request that snoops or not finds a line whose byte is `entry` ([`Llc::found`]).
#[inline]
fn found_in(entry: u8, snoop: bool) -> LineState {
    FOUND[snoop as usize][(entry & (STATE | UNSNOOPED)) as usize]
}

/// `line`'s byte in `lines` says `to`, its no-snoop mark kept.
#[inline]
fn set_state(lines: &mut [u8], line: u32, to: LineState) {
    let entry = &mut lines[line as usize];
    *entry = (*entry & !STATE) | to as u8;
}

/// A FIFO-replaced set of lines with a fixed capacity: a ring, which fills from its start and
/// then replaces its oldest line in place (no queue to shrink and grow again: every DDIO
/// allocation of a large window's writes lands here).
#[derive(Debug, Clone)]
struct Region {
    /// The lines in the region, pushed until `capacity`. Reserved, not zeroed: a test builds
    /// two regions of up to the LLC's lines and may fill neither.
    ring: Vec<u32>,
    capacity: usize,
    /// Where the oldest line is once the ring is full.
    head: usize,
}

/// The LLC over a buffer of `lines` lines.
#[derive(Debug, Clone, PartialEq)]
pub struct Llc {
    /// Each line's [`LineState`] and, in [`UNSNOOPED`], whether a device line was last written
    /// by a request that did not snoop: only a request that does not snoop either finds it in
    /// the LLC. One byte, as a lookup reads both.
    lines: Vec<u8>,
    cpu: Region,
    io: Region,
}

impl Region {
    fn new(capacity: usize) -> Region {
        Region {
            ring: Vec::with_capacity(capacity.min(1 << 20)),
            capacity: capacity.max(1),
            head: 0,
        }
    }

    /// The lines held, oldest first.
    fn in_order(&self) -> impl Iterator<Item = u32> + '_ {
        let (newer, older) = self.ring.split_at(self.head);
        older.iter().chain(newer).copied()
    }

    /// `line` enters the region as `to`, the region's state, evicting its oldest line when
    /// full. `lines` is the LLC's state bytes ([`Llc::lines`]). Out of line: inlined into
    /// the write's walk, it changed how the compiler laid out the bandwidth loop's reads
    /// (BW_RD 2048 B 1,123 -> 1,228 instructions per DMA).
    #[inline(never)]
    fn insert(&mut self, lines: &mut [u8], line: u32, to: LineState) {
        if self.ring.len() < self.capacity {
            // A tail call: the full ring's path, which a long test takes, saves no registers
            // for the push's growth.
            return self.fill(lines, line, to);
        }
        let old = std::mem::replace(&mut self.ring[self.head], line);
        self.head += 1;
        if self.head == self.capacity {
            self.head = 0;
        }
        // The slot may have been reused by the other region since; only evict our own.
        // An evicted line is in memory as any other, its no-snoop mark gone with it
        // (only a line in the DDIO share uses it, and a device write sets it anew).
        let entry = &mut lines[old as usize];
        if *entry & STATE == to as u8 {
            *entry = LineState::Memory as u8;
        }
        set_state(lines, line, to);
    }

    /// [`Region::insert`] while the ring is not full yet.
    #[cold]
    #[inline(never)]
    fn fill(&mut self, lines: &mut [u8], line: u32, to: LineState) {
        self.ring.push(line);
        set_state(lines, line, to);
    }
}

/// Regions are alike when they hold the same lines in the same order, wherever the ring
/// started.
impl PartialEq for Region {
    fn eq(&self, other: &Region) -> bool {
        self.capacity == other.capacity && self.ring.len() == other.ring.len() && self.in_order().eq(other.in_order())
    }
}

impl Llc {
    pub fn new(buffer_lines: usize, llc_lines: usize, ddio_share: f64) -> Llc {
        Llc {
            lines: vec![LineState::Memory as u8; buffer_lines],
            cpu: Region::new(llc_lines),
            io: Region::new((llc_lines as f64 * ddio_share) as usize),
        }
    }

    /// Lines the cores' share of the LLC holds.
    pub fn cpu_capacity(&self) -> usize {
        self.cpu.capacity
    }

    /// Lines the DDIO share holds.
    pub fn io_capacity(&self) -> usize {
        self.io.capacity
    }

    #[inline]
    pub fn state(&self, line: u32) -> LineState {
        STATES[(self.lines[line as usize] & STATE) as usize]
    }

    /// Whether the `n` lines from `first` on are all in the DDIO share, last written by a
    /// request that snooped as `snoop` says: a device write of them that snoops alike finds
    /// each there and leaves it as it was. One pass the compiler vectorises, without a branch
    /// per line.
    #[inline]
    pub fn all_io(&self, first: u32, n: u32, snoop: bool) -> bool {
        let held = LineState::Io as u8 | if snoop { 0 } else { UNSNOOPED };
        let run = &self.lines[first as usize..first as usize + n as usize];
        run.iter().fold(0, |other, &entry| other | (entry ^ held)) == 0
    }

    /// Where a request that snoops or not finds `line`: one that does not snoop may not take
    /// a core's line and reads memory; a line the device wrote without snooping is found in
    /// the LLC only by a request that does not snoop either, a snooping one reads memory.
    #[inline]
    pub fn found(&self, line: u32, snoop: bool) -> LineState {
        found_in(self.lines[line as usize], snoop)
    }

    fn insert(&mut self, line: u32, to: LineState) {
        let region = if to == LineState::Cpu {
            &mut self.cpu
        } else {
            &mut self.io
        };
        region.insert(&mut self.lines, line, to);
    }

    /// A core writes the line (host warming): it is cached, owned by the core.
    pub fn cpu_write(&mut self, line: u32) {
        if self.state(line) != LineState::Cpu {
            self.insert(line, LineState::Cpu);
        }
    }

    /// The device writes `n` lines from `first` on, one after another, as [`Llc::device_write`]
    /// each: `found(k, state)` is told where the write found the k-th ([`Llc::found`], before
    /// the write moved it). Returns how many it had to allocate. One bounds check for the run,
    /// not two per line: every DMA write's lines pass here.
    #[inline]
    pub fn device_write_lines(
        &mut self,
        first: u32,
        n: u32,
        snoop: bool,
        mut found: impl FnMut(u64, LineState),
    ) -> u64 {
        // Locals, not fields: the loop's stores then cannot move the buffer under it.
        let (lines, io) = (&mut self.lines[..], &mut self.io);
        let (first, end) = (first as usize, first as usize + n as usize);
        assert!(end <= lines.len(), "lines {first}..{end} outside the buffer");
        let flag = if snoop { 0 } else { UNSNOOPED };
        let mut allocated = 0;
        for line in first..end {
            let entry = lines[line];
            found((line - first) as u64, found_in(entry, snoop));
            let state = entry & STATE;
            // Where [`Llc::device_write`] leaves the line in place: a DDIO line, or a core's
            // that a snooping write takes over.
            if state == LineState::Io as u8 || (state == LineState::Cpu as u8 && snoop) {
                lines[line] = LineState::Io as u8 | flag;
            } else {
                lines[line] = state | flag;
                io.insert(lines, line as u32, LineState::Io);
                allocated += 1;
            }
        }
        allocated
    }

    /// The device writes the line: DDIO updates a cached line in place, or allocates it in
    /// the DDIO share. A line updated in place stays where the core left it, outside the DDIO
    /// share's replacement, so a long test keeps finding it in the LLC (LAT_WRRD HWarm at 64 MB,
    /// 16 M samples). A write that does not `snoop` may not take a core's line, so it allocates
    /// that one too, and leaves the line unsnooped. True when it had to allocate.
    #[inline]
    pub fn device_write(&mut self, line: u32, snoop: bool) -> bool {
        self.device_write_lines(line, 1, snoop, |_, _| {}) == 1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_writes_beyond_capacity_keep_the_last_lines() {
        let mut c = Llc::new(1000, 100, 0.1);
        for l in 0..300 {
            c.cpu_write(l);
        }
        assert_eq!(c.state(199), LineState::Memory);
        assert_eq!(c.state(200), LineState::Cpu);
        assert_eq!(c.state(299), LineState::Cpu);
    }

    #[test]
    fn ddio_allocates_only_into_its_share() {
        let mut c = Llc::new(1000, 100, 0.1);
        for l in 0..50 {
            c.device_write(l, true);
        }
        let io = (0..50).filter(|&l| c.state(l) == LineState::Io).count();
        assert_eq!(io, 10);
        c.cpu_write(500);
        assert!(
            !c.device_write(500, true),
            "a snooping write takes the core's line in place"
        );
        assert_eq!(c.state(500), LineState::Io);
        c.cpu_write(501);
        assert!(c.device_write(501, false), "a No Snoop write allocates");
        assert_eq!(c.state(501), LineState::Io);
        c.cpu_write(502);
        use LineState::{Cpu, Io, Memory};
        for (line, snoop, found, why) in [
            (501, false, Io, "a No Snoop read finds a No Snoop write's line"),
            (501, true, Memory, "a snooping read does not"),
            (500, true, Io, "a snooping write's line is found by a snooping read"),
            (502, true, Cpu, "a snooping read finds a core's line"),
            (502, false, Memory, "a No Snoop read does not"),
            (503, true, Memory, "a line in no cache"),
        ] {
            assert_eq!(c.found(line, snoop), found, "line {line}, snoop {snoop}: {why}");
        }
        assert!(!c.device_write(501, true));
        assert_eq!(c.found(501, true), Io, "a snooping write makes the line coherent again");
        for l in 600..700 {
            c.device_write(l, true);
        }
        assert_eq!(
            c.state(500),
            LineState::Io,
            "a line updated in place is not the DDIO share's to evict"
        );
        assert_eq!(c.state(501), LineState::Memory, "an allocated one is");
    }

    /// A device write of one line, as the LLC took them before runs: where it found the line,
    /// and whether it allocated.
    fn written_alone(c: &mut Llc, line: u32, snoop: bool) -> (LineState, bool) {
        let found = c.found(line, snoop);
        let entry = &mut c.lines[line as usize];
        *entry = (*entry & STATE) | if snoop { 0 } else { UNSNOOPED };
        let allocated = match c.state(line) {
            LineState::Cpu if snoop => {
                c.lines[line as usize] = LineState::Io as u8;
                false
            }
            LineState::Io => false,
            LineState::Cpu | LineState::Memory => {
                c.insert(line, LineState::Io);
                true
            }
        };
        (found, allocated)
    }

    #[test]
    fn a_run_of_device_writes_finds_and_leaves_each_line_as_writes_one_at_a_time() {
        use crate::rng::Rng;
        let mut rng = Rng::new(7);
        // Small shares, so that runs allocate, evict and meet lines of every state and flag.
        let (mut run, mut single) = (Llc::new(512, 64, 0.25), Llc::new(512, 64, 0.25));
        let mut io_runs = 0;
        for _ in 0..20_000 {
            let (first, n) = (rng.below(480) as u32, 1 + rng.below(32) as u32);
            let snoop = rng.below(4) != 0;
            if rng.below(3) == 0 {
                for l in first..first + n {
                    run.cpu_write(l);
                    single.cpu_write(l);
                }
                continue;
            }
            let held = LineState::Io as u8 | if snoop { 0 } else { UNSNOOPED };
            let all_io = (first..first + n).all(|l| single.lines[l as usize] == held);
            assert_eq!(run.all_io(first, n, snoop), all_io, "lines {first}+{n}, snoop {snoop}");
            io_runs += all_io as u32;
            let mut found = Vec::new();
            let allocated = run.device_write_lines(first, n, snoop, |k, state| found.push((k, state)));
            let mut expected = Vec::new();
            let mut expected_allocated = 0;
            for (k, l) in (first..first + n).enumerate() {
                let (found, allocated) = written_alone(&mut single, l, snoop);
                expected.push((k as u64, found));
                expected_allocated += allocated as u64;
            }
            assert_eq!(
                (found, allocated),
                (expected, expected_allocated),
                "lines {first}+{n}, snoop {snoop}"
            );
            assert!(run == single, "lines {first}+{n}, snoop {snoop}: the caches differ");
        }
        assert!(io_runs > 100, "{io_runs} runs all in the DDIO share");
    }
}
