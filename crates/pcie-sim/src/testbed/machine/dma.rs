//! The device's DMA engines: a DMA read (requests, tags, completions) and a DMA write (posted
//! TLPs, credits, commit).

use super::shape::Shape;
use super::{Dma, Machine, LINE};
use crate::testbed::costs::Costs;
use crate::testbed::llc::LineState;
use crate::time::Ps;

impl Machine<'_> {
    /// The DMA's shape ([`Shape`]): its TLPs and the engines' prices.
    #[inline]
    fn shape(&mut self, d: Dma) -> Shape {
        self.shapes.get(d.addr, self.link, &self.costs, &mut self.tlp)
    }

    /// The read or write engine takes a DMA that keeps it `busy` and the internal bus
    /// `bus_busy`: returns when its first TLP may leave.
    #[inline]
    fn engine_accept(&mut self, t: Ps, write: bool, busy: Ps, bus_busy: Ps) -> Ps {
        let engine = if write {
            &mut self.write_engine
        } else {
            &mut self.read_engine
        };
        let start = engine.serve(t + self.costs.issue, busy);
        let moved = self.bus.serve(start, bus_busy);
        moved + self.jitter.draw(&mut self.rng)
    }

    /// A DMA read issued at `t`. After a write to the same address its requests may not leave
    /// before the write's last TLP (`after`: PCIe ordering, reads do not pass posted writes) and
    /// its lines not be served before the write's commit (`not_before`). Returns when the
    /// device has all the data.
    pub(super) fn read(&mut self, t: Ps, d: Dma, after: Ps, not_before: Ps) -> Ps {
        let shape = self.shape(d);
        let start = self.engine_accept(t, false, shape.read_busy, shape.bus_busy);
        let Costs {
            move_read: move_ps,
            request: req_ps,
            line: line_ps,
            half_fixed,
            wire,
            ..
        } = self.costs;
        let mut device_done = start;
        let base = d.addr / LINE;
        let hiccup = self.read_hiccup(self.found(base, true));
        for (i, k) in (shape.requests.0..shape.requests.1).enumerate() {
            let r = self.shapes.requests[k as usize];
            // Wait for a free read tag.
            let tagged = start.max(self.tags.next_free()).max(after);
            let sent = self.up.send(tagged, r.mrd.wire);
            self.down.owe(r.mrd.dllps);
            let arrival = self.wake_first(i, sent + wire + half_fixed);
            let busy = req_ps + line_ps * r.lines + self.hop_lines(base + r.first_line, r.lines);
            let translated = self.enter_fabric(arrival, d.addr + r.offset, busy, 0).1;
            let translated = translated.max(not_before);
            let mut ready = translated;
            let mut last_arrival = translated;
            let mut asked = translated;
            // The RC asks for the request's lines back to back and memory serves them in
            // parallel: one latency, drawn for the request's last line, applies to all of them
            // (DRAM lines of one request share a row).
            let (latency, state) = self.line_latency_in(base + r.first_line + r.lines - 1, true);
            for k in r.completions.0..r.completions.1 {
                let c = self.shapes.completions[k as usize];
                asked += line_ps * c.lines + self.hop_lines(base + c.first_line, c.lines);
                // Lines a core wrote are snooped in its caches line by line: a completion waits
                // for the slowest of its lines.
                let latency = if state == LineState::Cpu && c.lines > 1 {
                    self.slowest_cpu_line(c.lines as usize)
                } else {
                    latency
                };
                ready = ready.max(asked + latency);
                let sent = self.down.send(ready + half_fixed, c.cpl.wire);
                self.rest(sent);
                self.up.owe(c.cpl.dllps);
                let arrived = sent + wire;
                last_arrival = arrived;
                device_done = device_done.max(arrived) + move_ps * c.lines;
            }
            // The tag is free once the request's last completion has arrived.
            self.tags.hold_until(last_arrival);
        }
        device_done + hiccup
    }

    /// A DMA write. Returns (when the last TLP has left the device, when the host has
    /// committed the data).
    pub(super) fn write(&mut self, t: Ps, d: Dma) -> (Ps, Ps) {
        let shape = self.shape(d);
        let start = self.engine_accept(t, true, shape.write_busy, shape.bus_busy);
        let Costs {
            write_line: wline_ps,
            wire,
            ..
        } = self.costs;
        // The engine gathers the DMA's data, then its TLPs leave back to back.
        let gathered = start + shape.gather;
        let (mut sent_last, mut committed) = (start, start);
        for (i, k) in (shape.writes.0..shape.writes.1).enumerate() {
            let w = self.shapes.writes[k as usize];
            let addr = d.addr + w.offset;
            let credit = self.posted.next_free();
            let sent = self.up.send(gathered.max(credit), w.mwr.wire);
            self.down.owe(w.mwr.dllps);
            let arrival = self.wake_first(i, sent + wire);
            // Ownership of the lines is granted after their memory latency: the LLC's if cached,
            // DRAM's if not (where the line was before this write). Lines not yet in the LLC
            // need a DDIO allocation (and evict an older IO line).
            let (slowest_own, allocated, hop) = self.own_lines(addr, w.len, true, 0);
            let busy = wline_ps * w.lines + self.costs.allocate * allocated;
            // The port decodes the header, and the IOMMU starts a miss's walk, while the
            // payload is still arriving.
            let (accepted, translated) = self.enter_fabric(arrival, addr, busy, w.mwr.payload);
            let processed = translated + busy;
            self.rest(processed);
            self.posted.hold_until(processed);
            sent_last = sent;
            committed = committed.max(self.visible(accepted, translated, busy, slowest_own, hop, true));
        }
        (sent_last, committed)
    }
}
