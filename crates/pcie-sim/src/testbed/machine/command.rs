//! The NFP's direct PCIe command interface: a read (after an optional write) issued from a BAR
//! window, bypassing the DMA engines.

use super::{pieces, Dma, Machine, LINE};
use crate::rng::Rng;
use crate::time::Ps;

impl Machine<'_> {
    /// The path reaches host memory through a BAR window (`cmd.window_bytes`); a command outside
    /// the window it maps first moves it there. Returns what the move costs before the timed
    /// section and what the command then waits in it ((0, 0) when the window stays).
    pub(super) fn move_window(&mut self, addr: u64) -> (Ps, Ps) {
        let bytes = self.dev.cmd.window_bytes;
        if bytes == 0 {
            return (0, 0);
        }
        let window = addr / bytes;
        if self.cmd_window == Some(window) {
            return (0, 0);
        }
        self.cmd_window = Some(window);
        (self.costs.cmd.window_move, self.costs.cmd.window_wait)
    }

    /// The NFP's direct command path: one PCIe read (after an optional write) of 4-64 B issued
    /// from a BAR window, bypassing the DMA engines. The write takes ownership of its lines like
    /// a DMA write (a sub-line write to a line in memory merges it first; a whole line in memory
    /// takes `cmd.write_own_memory_ns` longer) and leaves them in the LLC's DDIO share, where the
    /// read behind it finds them. Where the path does not snoop
    /// ([`Machine::cmd_snoops`]), both find a line a core holds in memory instead.
    pub(super) fn command(&mut self, rng: &mut Rng, t: Ps, d: Dma, write_first: bool) -> Ps {
        let c = self.costs;
        let issue = t + c.cmd.issue;
        let lines = pieces(d.addr, d.size, LINE as u32);
        let (start, not_before) = if write_first {
            let mwr = self.tlp.mwr(d.addr, d.size);
            let sent = self.up.send(issue + c.cmd.write, mwr.wire);
            let arrival = self.wake(rng, sent + c.wire);
            let (slowest_own, allocated, hop) = self.own_lines(d.addr, d.size, self.cmd_snoops, c.cmd.write_own_memory);
            let busy = c.write_line * lines + c.allocate * allocated;
            let (accepted, translated) = self.enter_fabric::<false>(rng, arrival, d.addr, busy, mwr.payload);
            // A No Snoop write learns whether it must snoop only from its translation (the
            // IOMMU's snoop control), so its commit cannot overlap a page walk.
            let commit_from = if self.dev.cmd.no_snoop { translated } else { accepted };
            (
                sent,
                self.visible(commit_from, translated, busy, slowest_own, hop, self.cmd_snoops),
            )
        } else {
            (issue, 0)
        };
        let sent = self.up.send(start, self.tlp.mrd(d.addr, d.size).wire);
        let first = d.addr / LINE;
        let arrival = self.wake(rng, sent + c.wire + c.half_fixed);
        let fetch = c.line * lines + self.hop_lines::<false>(first, lines);
        let translated = self.enter_fabric::<false>(rng, arrival, d.addr, c.request + fetch, 0).1;
        let asked = translated.max(not_before) + fetch;
        let slowest = (first..first + lines)
            .map(|l| self.line_latency_in(rng, l, self.cmd_snoops).0)
            .max()
            .unwrap_or(0);
        let ready = asked + slowest + self.read_hiccup::<false>(rng, self.found(first, self.cmd_snoops));
        let cpl = self.tlp.cpl(d.addr, d.size).wire;
        let sent = self.down.send(ready + c.half_fixed, cpl);
        self.rest::<false>(sent);
        let words = d.size.div_ceil(4) as u64;
        sent + c.wire + c.cmd.complete + words * c.cmd.word
    }
}
