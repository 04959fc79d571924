//! The host side of a transaction: the root complex's fabric path and the IOMMU, how long a line
//! takes from where it is (LLC, memory, the other socket), and the uncore's power states.

use super::{Machine, LINE};
use crate::distribution::{draw_tail, Sampler};
use crate::rng::Rng;
use crate::testbed::llc::LineState;
use crate::time::Ps;

impl Machine<'_> {
    /// Enter the fabric path at `arrival` for `busy` (plus a page walk's share on an IO-TLB
    /// miss): returns (when the path accepted the request, when its address is translated).
    /// The path is taken once, up front, for everything the request will use, so it never waits
    /// on its own future. A miss's walk starts `early` before `arrival` (a write's header is
    /// decoded while its payload still arrives). A request for a page whose walk is still
    /// running is parked and translated again after it, behind the other parked requests.
    #[inline]
    pub(super) fn enter_fabric<const BARE: bool>(
        &mut self,
        rng: &mut Rng,
        arrival: Ps,
        addr: u64,
        busy: Ps,
        early: Ps,
    ) -> (Ps, Ps) {
        match self.iotlb {
            Some(_) if !BARE => self.enter_translated(rng, arrival, addr, busy, early),
            _ => self.enter_untranslated(arrival, busy),
        }
    }

    /// [`Machine::enter_fabric`] without an IOMMU: the address needs no translation.
    #[inline]
    fn enter_untranslated(&mut self, arrival: Ps, busy: Ps) -> (Ps, Ps) {
        let accepted = self.fabric.serve(arrival, busy);
        (accepted, accepted)
    }

    /// [`Machine::enter_fabric`] where the IOMMU translates: out of line, so that the path
    /// without it stays small enough to inline.
    #[inline(never)]
    fn enter_translated(&mut self, rng: &mut Rng, arrival: Ps, addr: u64, busy: Ps, early: Ps) -> (Ps, Ps) {
        let Some(tlb) = self.iotlb.as_mut() else {
            return self.enter_untranslated(arrival, busy);
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
                let walk = self.costs.walk + draw_tail(rng, &self.host.memory.dram_tail);
                let done = self.walkers.serve(accepted.saturating_sub(early), walk) + walk;
                tlb.walked(page, done);
                (accepted, done)
            }
        }
    }

    /// Where a request finds `line`. One that does not snoop (`snoop` false: a No Snoop request
    /// the root complex honours) may not take a line from a core's caches and gets memory's copy.
    /// A line a No Snoop write left in the DDIO share is found there only by a request that does
    /// not snoop either; a snooping one reads memory (E5-2637 v3 without the IOMMU, where
    /// pcie-bench's device warming is No Snoop command writes: LAT_RD 64 B DWarm 640 ns = Cold,
    /// 560 with the IOMMU's snoop control, while LAT_CMD_RD DWarm is 413 in both runs).
    #[inline]
    pub(super) fn found(&self, line: u64, snoop: bool) -> LineState {
        self.llc.found(line as u32, snoop)
    }

    /// Time for the memory system to deliver one line from `state` once the RC asks for it.
    #[inline]
    fn latency_from(&mut self, rng: &mut Rng, state: LineState) -> Ps {
        let base = match state {
            LineState::Cpu => self.llc_hit.draw(rng),
            LineState::Io => self.io_line.draw(rng),
            LineState::Memory => self.dram.draw(rng),
        };
        base + self.hop_by_state[state as usize]
    }

    /// Latency of the slowest of `n` lines a core wrote.
    #[inline]
    pub(super) fn slowest_cpu_line(&mut self, rng: &mut Rng, n: usize) -> Ps {
        let spread = &self.host.memory.llc_hit;
        let sampler = self.llc_hit_max[n - 1].get_or_insert_with(|| Sampler::triangular_max(spread, n as u32));
        sampler.draw(rng) + self.hop_by_state[LineState::Cpu as usize]
    }

    /// The latency of `line` for a read that snoops or not ([`Machine::found`]), and where the
    /// read found it.
    #[inline]
    pub(super) fn line_latency_in(&mut self, rng: &mut Rng, line: u64, snoop: bool) -> (Ps, LineState) {
        let state = self.found(line, snoop);
        (self.latency_from(rng, state), state)
    }

    /// What the remote read pipeline adds to `lines` lines from `first` on (0 when all are on
    /// the device's socket).
    #[inline]
    pub(super) fn hop_lines<const BARE: bool>(&self, first: u64, lines: u64) -> Ps {
        let Some(hops) = self.hop_line_by_state.filter(|_| !BARE) else {
            return 0;
        };
        (first..first + lines)
            .map(|l| hops[self.llc.state(l as u32) as usize])
            .sum()
    }

    /// A posted write of `[addr, addr + len)`, snooping or not ([`Machine::found`]), takes its
    /// lines from where it finds them and leaves them in the LLC as the device's: returns the
    /// slowest ownership grant (the k-th line's request leaves `own_line` × k after the first),
    /// how many lines DDIO had to allocate and the hop to the farthest owner. A whole line found
    /// in memory is granted `whole_from_memory` later (the command path's, not the DMA engines');
    /// a line covered in part and found in memory is first read to merge its bytes (`merge`),
    /// which covers that. Ownership takes the typical latency of where the line is
    /// (`own_by_state`: no data is read, so no DRAM hiccups).
    #[inline]
    pub(super) fn own_lines(&mut self, addr: u64, len: u32, snoop: bool, whole_from_memory: Ps) -> (Ps, u64, Ps) {
        let first = addr / LINE;
        let last = (addr + len as u64 - 1) / LINE - first;
        // Where a write finds every line in the DDIO share, left there by writes that snooped
        // as it does (a latency test's small window, from its second pass on), it leaves them
        // as they are and each line's ownership takes the same time, so the last line's is the
        // slowest: no loop over the lines.
        if self.llc.all_io(first as u32, last as u32 + 1, snoop) {
            let io = LineState::Io as usize;
            return (
                self.own_by_state[io] + self.costs.own_line * last,
                0,
                self.hop_by_state[io],
            );
        }
        self.own_lines_each(addr, len, snoop, whole_from_memory)
    }

    /// [`Machine::own_lines`] line by line.
    #[inline(never)]
    pub(super) fn own_lines_each(&mut self, addr: u64, len: u32, snoop: bool, whole_from_memory: Ps) -> (Ps, u64, Ps) {
        let end = addr + len as u64;
        let first = addr / LINE;
        let last = (end - 1) / LINE - first;
        // Only the first and the last line can be covered in part.
        let (head_part, tail_part) = (!addr.is_multiple_of(LINE), !end.is_multiple_of(LINE));
        // Ownership by where the write finds a line, whole or in part.
        let memory = LineState::Memory as usize;
        let (mut whole, mut part) = (self.own_by_state, self.own_by_state);
        whole[memory] += whole_from_memory;
        part[memory] += self.costs.merge;
        let (own_line, hops) = (self.costs.own_line, self.hop_by_state);
        let (mut slowest, mut hop) = (0, 0);
        let allocated = self
            .llc
            .device_write_lines(first as u32, last as u32 + 1, snoop, |k, state| {
                let own = if (k == 0 && head_part) || (k == last && tail_part) {
                    part[state as usize]
                } else {
                    whole[state as usize]
                };
                slowest = slowest.max(own + own_line * k);
                hop = hop.max(hops[state as usize]);
            });
        (slowest, allocated, hop)
    }

    /// When a posted write that the fabric path `accepted` at, whose address was `translated`
    /// at and which keeps the path `busy`, is visible to a read behind it: after the commit
    /// pipeline, which runs from `commit_from` (acceptance, in parallel with a page walk, where
    /// the write's handling does not depend on its translation), and after ownership
    /// (`slowest_own` of [`Machine::own_lines`]), which can only be asked for once translated
    /// and, for a write that does not `snoop`, skips the cores' snoop (`write_snoop_ns`).
    /// The hop to a remote owner is ownership's, or the commit's where ownership is not
    /// modelled.
    #[inline]
    pub(super) fn visible(
        &self,
        commit_from: Ps,
        translated: Ps,
        busy: Ps,
        slowest_own: Ps,
        hop: Ps,
        snoop: bool,
    ) -> Ps {
        let commit = commit_from + busy + self.costs.commit;
        match self.costs.own {
            Some(o) => {
                let o = if snoop {
                    o
                } else {
                    o.saturating_sub(self.costs.own_snoop)
                };
                commit.max(translated + busy + o + slowest_own)
            }
            None => commit + hop,
        }
    }

    /// Rare delays that hit a whole read rather than each line: a DRAM hiccup (refresh, bank
    /// conflict) when the read starts in memory, a sleeping core's snoop when it starts on a
    /// line a core wrote (`first`: where the read found its first line, [`Machine::found`]).
    /// The measured tails are as long for 2 KB reads as for 64 B ones.
    #[inline(always)]
    pub(super) fn read_hiccup<const BARE: bool>(&mut self, rng: &mut Rng, first: LineState) -> Ps {
        let hiccup = match first {
            LineState::Cpu => draw_tail(rng, &self.host.cpu.wake),
            LineState::Memory => draw_tail(rng, &self.host.memory.dram_tail),
            LineState::Io => 0,
        };
        let stall = match &mut self.power {
            Some(p) if !BARE => p.stall(rng),
            _ => 0,
        };
        hiccup + stall
    }

    /// A request reaches the uncore at `arrival`: when the uncore is awake to take it.
    #[inline]
    pub(super) fn wake(&mut self, rng: &mut Rng, arrival: Ps) -> Ps {
        match &mut self.power {
            Some(p) => p.wake(arrival, rng),
            None => arrival,
        }
    }

    /// A DMA's requests (or TLPs) arrive back to back, so only the `first` may find the uncore
    /// in a power state: one exit per DMA.
    #[inline]
    pub(super) fn wake_first<const BARE: bool>(&mut self, rng: &mut Rng, first: bool, arrival: Ps) -> Ps {
        if first && !BARE {
            self.wake(rng, arrival)
        } else {
            arrival
        }
    }

    /// The uncore has work until `t`.
    #[inline]
    pub(super) fn rest<const BARE: bool>(&mut self, t: Ps) {
        if let Some(p) = self.power.as_mut().filter(|_| !BARE) {
            p.busy_until(t);
        }
    }
}
