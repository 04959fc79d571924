//! The NFP's direct PCIe command interface: a read (after an optional write) issued from a BAR
//! window, bypassing the DMA engines.

use super::{Dma, Machine, LINE};
use crate::time::{ps, Ps};

impl Machine<'_> {
    /// The NFP's direct command path: one PCIe read (after an optional write) issued from a
    /// BAR window, bypassing the DMA engines.
    pub(super) fn command(&mut self, t: Ps, d: Dma, write_first: bool) -> Ps {
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
