//! NIC traffic behind a root port (a ConnectX-5 by default): packets at a constant rate in each
//! direction, moved in batches as a driver with NAPI and doorbell batching moves them.
//!
//! Per batch of received packets the NIC writes the packets (cut at MPS), one completion entry
//! per packet and an interrupt; the driver then reposts the receive descriptors (a doorbell) and
//! the NIC reads them. Per batch of sent packets the driver rings a doorbell, the NIC reads the
//! send descriptors and then the packets, and writes their completions and an interrupt.
//! Within a batch, the packets' full MPS pieces cross before their remainders. Each direction
//! has a ring of descriptors: a received batch takes some until the driver has reposted them
//! and the NIC read them back, a sent batch until the NIC wrote its completions. On a link
//! that cannot keep up the rings run out: received packets are dropped (the NIC has nowhere to
//! put them), sent ones wait in the stack; neither is counted as moved.

use super::link::LinkDirection;
use super::profile::NicSpec;
use super::workload::NicJob;
use super::{HostCosts, Port};
use crate::time::Ps;
use pcie_model::{LinkConfig, TlpKind};
use std::collections::VecDeque;

/// One NIC workload.
pub(super) struct Flow {
    pub job: NicJob,
    pub port: usize,
    pub spec: NicSpec,
    pub stop: Option<Ps>,
    /// Packet bytes moved to and from the host (not those dropped, or held back by the stack,
    /// while the ring was full).
    pub rx_bytes: u64,
    pub tx_bytes: u64,
    /// When the descriptors of each batch on its way come back to the ring: a received batch's
    /// once the driver has reposted them and the NIC read them, a sent batch's once the NIC
    /// wrote its completions.
    pub rx_ring: VecDeque<Ps>,
    pub tx_ring: VecDeque<Ps>,
}

impl Flow {
    /// Time between batches at `gbps` (`None` when the direction is idle).
    pub fn every(&self, gbps: f64) -> Option<Ps> {
        (gbps > 0.0).then(|| (self.spec.batch as f64 * self.job.pkt as f64 * 8000.0 / gbps) as Ps)
    }

    fn packets(&self) -> u64 {
        self.spec.batch as u64
    }
}

/// Whether `ring` (the times its batches' descriptors come back) has no room at `t` for
/// another `batch` of packets among its `size` descriptors (one batch always has); forgets the
/// batches back by then.
fn ring_full(ring: &mut VecDeque<Ps>, t: Ps, batch: u64, size: u32) -> bool {
    while ring.front().is_some_and(|&back| back <= t) {
        ring.pop_front();
    }
    !ring.is_empty() && (ring.len() as u64 + 1) * batch > size as u64
}

/// Descriptors read with one request (cut at MRRS) after a doorbell reached the NIC at `at`:
/// returns when the completions have arrived.
fn read_descriptors(
    c: &HostCosts,
    l: &LinkConfig,
    rx: &mut LinkDirection,
    tx: &mut LinkDirection,
    at: Ps,
    bytes: u32,
    mem: Ps,
) -> Ps {
    let asked = rx.send_cut(l, at, TlpKind::MRd, bytes, l.mrrs, 1) + c.wire;
    tx.send_cut(l, asked + mem, TlpKind::CplD, bytes, l.mps, 1) + c.wire
}

/// A batch of packets received from the network at `t`.
pub(super) fn receive(f: &mut Flow, c: &HostCosts, l: &LinkConfig, port: &mut Port, t: Ps) {
    if ring_full(&mut f.rx_ring, t, f.spec.batch as u64, f.spec.ring) {
        return;
    }
    let (n, s) = (f.packets(), &f.spec);
    port.rx.send_cut(l, t, TlpKind::MWr, f.job.pkt, l.mps, n);
    port.rx.send(l, t, TlpKind::MWr, s.completion_bytes, n);
    let irq = port.rx.send(l, t, TlpKind::MWr, s.interrupt_bytes, 1) + c.wire;
    let handled = irq + c.reap.draw(&mut port.rng);
    let rung = port.tx.send(l, handled, TlpKind::MWr, s.doorbell_bytes, 1) + c.wire;
    let mem = c.memory_read.draw(&mut port.rng);
    f.rx_ring.push_back(read_descriptors(
        c,
        l,
        &mut port.rx,
        &mut port.tx,
        rung,
        s.rx_descriptor_bytes * n as u32,
        mem,
    ));
    f.rx_bytes += n * f.job.pkt as u64;
}

/// A batch of packets the driver hands to the NIC at `t`.
pub(super) fn transmit(f: &mut Flow, c: &HostCosts, l: &LinkConfig, port: &mut Port, t: Ps) {
    if ring_full(&mut f.tx_ring, t, f.spec.batch as u64, f.spec.ring) {
        return;
    }
    let (n, s) = (f.packets(), &f.spec);
    let rung = port.tx.send(l, t, TlpKind::MWr, s.doorbell_bytes, 1) + c.wire;
    let mem = c.memory_read.draw(&mut port.rng);
    let described = read_descriptors(
        c,
        l,
        &mut port.rx,
        &mut port.tx,
        rung,
        s.tx_descriptor_bytes * n as u32,
        mem,
    );
    let asked = port.rx.send_cut(l, described, TlpKind::MRd, f.job.pkt, l.mrrs, n) + c.wire;
    let sent = port.tx.send_cut(l, asked + mem, TlpKind::CplD, f.job.pkt, l.mps, n) + c.wire;
    f.tx_ring
        .push_back(port.rx.send(l, sent, TlpKind::MWr, s.completion_bytes, n));
    port.rx.send(l, sent, TlpKind::MWr, s.interrupt_bytes, 1);
    f.tx_bytes += n * f.job.pkt as u64;
}
