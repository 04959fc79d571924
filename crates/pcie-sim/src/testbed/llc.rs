//! The last-level cache as the device sees it: which 64 B lines of the DMA buffer are cached,
//! and by whom. Host writes can fill the whole LLC; DDIO may allocate device writes only into its
//! share. Both regions replace their oldest line first (FIFO, close to LRU for the random and
//! sequential patterns pcie-bench uses, and O(1)).

use std::collections::VecDeque;

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

/// A FIFO-replaced set of lines with a fixed capacity.
#[derive(Debug, Clone, PartialEq)]
struct Region {
    order: VecDeque<u32>,
    capacity: usize,
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
            order: VecDeque::with_capacity(capacity.min(1 << 20)),
            capacity: capacity.max(1),
        }
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

    #[inline]
    fn set_state(&mut self, line: u32, to: LineState) {
        let entry = &mut self.lines[line as usize];
        *entry = (*entry & !STATE) | to as u8;
    }

    /// Where a request that snoops or not finds `line`: one that does not snoop may not take
    /// a core's line and reads memory; a line the device wrote without snooping is found in
    /// the LLC only by a request that does not snoop either, a snooping one reads memory.
    #[inline]
    pub fn found(&self, line: u32, snoop: bool) -> LineState {
        FOUND[snoop as usize][(self.lines[line as usize] & (STATE | UNSNOOPED)) as usize]
    }

    fn insert(&mut self, line: u32, to: LineState) {
        let region = if to == LineState::Cpu {
            &mut self.cpu
        } else {
            &mut self.io
        };
        if region.order.len() == region.capacity {
            if let Some(old) = region.order.pop_front() {
                // The slot may have been reused by the other region since; only evict our own.
                // An evicted line is in memory as any other, its no-snoop mark gone with it
                // (only a line in the DDIO share uses it, and a device write sets it anew).
                let entry = &mut self.lines[old as usize];
                if *entry & STATE == to as u8 {
                    *entry = LineState::Memory as u8;
                }
            }
        }
        region.order.push_back(line);
        self.set_state(line, to);
    }

    /// A core writes the line (host warming): it is cached, owned by the core.
    pub fn cpu_write(&mut self, line: u32) {
        if self.state(line) != LineState::Cpu {
            self.insert(line, LineState::Cpu);
        }
    }

    /// The device writes the line: DDIO updates a cached line in place, or allocates it in
    /// the DDIO share. A line updated in place stays where the core left it, outside the DDIO
    /// share's replacement, so a long test keeps finding it in the LLC (LAT_WRRD HWarm at 64 MB,
    /// 16 M samples). A write that does not `snoop` may not take a core's line, so it allocates
    /// that one too, and leaves the line unsnooped. True when it had to allocate.
    #[inline]
    pub fn device_write(&mut self, line: u32, snoop: bool) -> bool {
        let entry = &mut self.lines[line as usize];
        *entry = (*entry & STATE) | if snoop { 0 } else { UNSNOOPED };
        match self.state(line) {
            LineState::Cpu if snoop => {
                self.set_state(line, LineState::Io);
                false
            }
            LineState::Io => false,
            LineState::Cpu | LineState::Memory => {
                self.insert(line, LineState::Io);
                true
            }
        }
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
}
