//! The device's DMA engines: a DMA read (requests, tags, completions) and a DMA write (posted
//! TLPs, credits, commit).

use super::shape::Shape;
use super::{Dma, Machine, LINE};
use crate::rng::Rng;
use crate::testbed::costs::Costs;
use crate::testbed::llc::LineState;
use crate::time::Ps;

impl Machine<'_> {
    /// The DMA's shape ([`Shape`]): its TLPs and the engines' prices.
    #[inline]
    fn shape(&mut self, d: Dma) -> &Shape {
        self.shapes.get(d.addr, self.link, &self.costs, &mut self.tlp)
    }

    /// The read or write engine takes a DMA that keeps it `busy` and the internal bus
    /// `bus_busy`: returns when its first TLP may leave.
    #[inline]
    fn engine_accept(&mut self, rng: &mut Rng, t: Ps, write: bool, busy: Ps, bus_busy: Ps) -> Ps {
        let engine = if write {
            &mut self.write_engine
        } else {
            &mut self.read_engine
        };
        let start = engine.serve(t + self.costs.issue, busy);
        let moved = self.bus.serve(start, bus_busy);
        moved + self.jitter.draw(rng)
    }

    /// A DMA read issued at `t`. After a write to the same address its requests may not leave
    /// before the write's last TLP (`after`: PCIe ordering, reads do not pass posted writes) and
    /// its lines not be served before the write's commit (`not_before`). Returns when the
    /// device has all the data.
    #[inline(always)]
    pub(super) fn read<const BARE: bool>(&mut self, rng: &mut Rng, t: Ps, d: Dma, after: Ps, not_before: Ps) -> Ps {
        let shape = self.shape(d);
        let (busy, bus_busy, requests) = (shape.read_busy, shape.bus_busy, shape.requests);
        let start = self.engine_accept(rng, t, false, busy, bus_busy);
        let Costs { half_fixed, wire, .. } = self.costs;
        let mut device_done = start;
        let base = d.addr / LINE;
        let hiccup = self.read_hiccup::<BARE>(rng, self.found(base, true));
        // A DMA has at least one request and a request at least one completion: both loops
        // test at their end.
        let mut k = requests.0;
        loop {
            let r = self.shapes.requests[k as usize];
            // Wait for a free read tag.
            let tagged = start.max(self.tags.next_free()).max(after);
            let sent = self.up.send(tagged, r.mrd.wire);
            self.down.owe(r.mrd.dllps);
            let arrival = self.wake_first::<BARE>(rng, k == requests.0, sent + wire + half_fixed);
            let busy = r.fabric + self.hop_lines::<BARE>(base + r.first_line, r.lines);
            let translated = self.enter_fabric::<BARE>(rng, arrival, d.addr + r.offset, busy, 0).1;
            let translated = translated.max(not_before);
            let (mut ready, mut asked) = (translated, translated);
            let mut last_sent;
            // The RC asks for the request's lines back to back and memory serves them in
            // parallel: one latency, drawn for the request's last line, applies to all of them
            // (DRAM lines of one request share a row).
            let (latency, state) = self.line_latency_in(rng, base + r.first_line + r.lines - 1, true);
            let mut j = r.completions.0;
            loop {
                let c = self.shapes.completions[j as usize];
                asked += c.ask + self.hop_lines::<BARE>(base + c.first_line, c.lines);
                // Lines a core wrote are snooped in its caches line by line: a completion waits
                // for the slowest of its lines.
                let latency = if state == LineState::Cpu && c.lines > 1 {
                    self.slowest_cpu_line(rng, c.lines as usize)
                } else {
                    latency
                };
                ready = ready.max(asked + latency);
                last_sent = self.down.send(ready + half_fixed, c.wire);
                device_done = device_done.max(last_sent + wire) + c.moved;
                j += 1;
                if j == r.completions.1 {
                    break;
                }
            }
            // The completions leave one after another, so the last keeps the uncore busy
            // longest; their DLLPs upstream add up.
            self.rest::<BARE>(last_sent);
            self.reads_until = self.reads_until.max(last_sent);
            self.up.owe(r.cpl_dllps);
            // The tag is free once the request's last completion has arrived.
            self.tags.hold_until(last_sent + wire);
            k += 1;
            if k == requests.1 {
                break;
            }
        }
        device_done + hiccup
    }

    /// A DMA write. Returns (when the last TLP has left the device, when the host has
    /// committed the data).
    #[inline(always)]
    pub(super) fn write<const BARE: bool>(&mut self, rng: &mut Rng, t: Ps, d: Dma) -> (Ps, Ps) {
        let shape = self.shape(d);
        let (busy, bus_busy, gather, writes) = (shape.write_busy, shape.bus_busy, shape.gather, shape.writes);
        let start = self.engine_accept(rng, t, true, busy, bus_busy);
        let wire = self.costs.wire;
        // The engine gathers the DMA's data, then its TLPs leave back to back (at least one:
        // the loop tests at its end).
        let gathered = start + gather;
        let mut sent_last;
        let mut committed = start;
        let mut k = writes.0;
        loop {
            let w = self.shapes.writes[k as usize];
            let addr = d.addr + w.offset;
            // The credit, freed when the TLP that held it was processed, comes back in an
            // UpdateFC: at once while the port is sending completions, which it goes with, else
            // at the port's next UpdateFC tick (docs/simulator.md, "The E3's DMA writes").
            // Decided when the credit is needed, so that the reads started since count.
            let (freed, tick) = (self.posted.next_free(), self.costs.fc_update);
            let credit = if tick > 0 && freed >= self.reads_until {
                freed.next_multiple_of(tick)
            } else {
                freed
            };
            let sent = self.up.send(gathered.max(credit), w.mwr.wire);
            self.down.owe(w.mwr.dllps);
            let arrival = self.wake_first::<BARE>(rng, k == writes.0, sent + wire);
            // Ownership of the lines is granted after their memory latency: the LLC's if cached,
            // DRAM's if not (where the line was before this write). Lines not yet in the LLC
            // need a DDIO allocation (and evict an older IO line).
            let (slowest_own, allocated, hop) = self.own_lines(addr, w.len, true, 0);
            let busy = w.fabric + self.costs.allocate * allocated;
            // The port decodes the header, and the IOMMU starts a miss's walk, while the
            // payload is still arriving.
            let (accepted, translated) = self.enter_fabric::<BARE>(rng, arrival, addr, busy, w.mwr.payload);
            let processed = translated + busy;
            self.rest::<BARE>(processed);
            self.posted.hold_until(processed);
            sent_last = sent;
            committed = committed.max(self.visible(accepted, translated, busy, slowest_own, hop, true));
            k += 1;
            if k == writes.1 {
                break;
            }
        }
        (sent_last, committed)
    }
}
