//! The device's DMA engines: a DMA read (requests, tags, completions) and a DMA write (posted
//! TLPs, credits, commit).

use super::{pieces, Dma, Machine, LINE};
use crate::testbed::costs::Costs;
use crate::testbed::llc::LineState;
use crate::time::Ps;
use pcie_model::{split_completions, split_read_requests, split_writes};

impl Machine<'_> {
    /// The read or write engine takes a DMA: returns when its first TLP may leave.
    pub(super) fn engine_accept(&mut self, t: Ps, d: Dma, write: bool, tlps: u64) -> Ps {
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
    pub(super) fn claim_tag(&mut self, t: Ps) -> Ps {
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
    pub(super) fn read(&mut self, t: Ps, d: Dma, after: Ps, not_before: Ps) -> Ps {
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
        let hiccup = self.read_hiccup(d.addr / LINE, true);
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
            let (latency, state) = self.line_latency_in((addr + len as u64 - 1) / LINE, true);
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
    pub(super) fn write(&mut self, t: Ps, d: Dma) -> (Ps, Ps) {
        let tlps = pieces(d.addr, d.size, self.link.mps);
        let start = self.engine_accept(t, d, true, tlps);
        let Costs {
            move_write: move_ps,
            write_line: wline_ps,
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
            let (slowest_own, allocated, hop) = self.own_lines(addr, len, true, 0);
            let busy = wline_ps * (last - first + 1) + self.costs.allocate * allocated;
            // The port decodes the header, and the IOMMU starts a miss's walk, while the
            // payload is still arriving.
            let payload = mwr.payload;
            let (accepted, translated) = self.enter_fabric(arrival, addr, busy, payload);
            let processed = translated + busy;
            self.rest(processed);
            self.posted.push_back(processed);
            sent_last = sent;
            committed = committed.max(self.visible(accepted, translated, busy, slowest_own, hop, true));
        }
        (sent_last, committed)
    }
}
