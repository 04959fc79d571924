//! The worst case of one transaction, which keeps the 64-bit picosecond clock from overflowing
//! (see [`crate::MAX_TRANSACTIONS`]).

use super::profile::{DeviceProfile, HostProfile};
use super::LINE;
use pcie_model::LinkConfig;

/// An upper bound of the simulated time one transaction adds to a run, in nanoseconds: every
/// profile time weighted by the most times one transaction of the device's largest size can meet
/// it on its way through the machine, queueing behind earlier ones included (each resource is a
/// FIFO, so a transaction waits at most for the work earlier transactions put there, which their
pub(crate) fn transaction_bound_ns(host: &HostProfile, dev: &DeviceProfile, link: &LinkConfig) -> f64 {
    let (rc, m, io, d, c) = (&host.root_complex, &host.memory, &host.iommu, &dev.dma, &dev.cmd);
    let size = d.max_transfer as f64;
    // Lines, read requests, write TLPs and completions of an unaligned DMA of that size; a
    // piece of it may share its first and last line with its neighbours.
    let lines = size / LINE as f64 + 1.0;
    let requests = size / link.mrrs as f64 + 1.0;
    let tlps = size / link.mps as f64 + 1.0;
    let completions = lines + requests;
    let spans = lines + completions;
    // Read requests beyond the tags wait for an earlier request's round trip.
    let rounds = (requests / d.read_tags as f64).ceil();
    let wire_bytes = 4.0 * size + 64.0 * (requests + tlps + completions);
    let link_ns = 2.0 * wire_bytes * 8.0 / pcie_model::capacity(link).0;
    // A line is on one socket: at most one hop to reach it.
    let latency = m.llc_hit.max_ns.max(m.dram.max_ns).max(m.io_line.max_ns) + m.remote_ns;
    let own = rc.write_own_ns.map_or(0.0, |o| {
        let llc = rc.write_own_llc_ns.unwrap_or(m.llc_hit.mode_ns);
        let typical = llc.max(m.dram.mode_ns);
        o + spans * rc.write_own_line_ns + typical + rc.write_merge_ns + m.remote_ns
    });
    let walk = io.walk_ns + io.walk_busy_ns + m.dram_tail.max_ns;
    // A power state's exit for each DMA or command access (a write and a read at most); one
    // stall per read.
    let (exit, stall) = host.power.as_ref().map_or((0.0, 0.0), |p| {
        let exit = p.state.iter().map(|s| s.exit.max_ns).fold(0.0, f64::max);
        (exit, p.stall.max_ns)
    });
    let hiccup = m.dram_tail.max_ns.max(host.cpu.wake.max_ns) + stall;
    let fabric_line = rc.line_ns + m.remote_line_ns;
    // Without an ownership term the hop to a remote owner is the commit's.
    // Each TLP's credit may come back an UpdateFC period late.
    let credits = tlps * rc.fc_update_ns.unwrap_or(0.0);
    let commit = host.link.wire_ns
        + credits
        + spans * (rc.write_line_ns + m.ddio_allocate_ns)
        + rc.write_commit_ns
        + m.remote_ns
        + own;
    let accept = d.issue_ns + d.bus_dma_ns + lines * d.bus_line_ns + d.jitter.max_ns;
    let write = accept
        + (d.write_dma_ns + tlps * d.write_tlp_ns + lines * d.write_line_ns + d.write_slow_ns).max(d.write_min_ns)
        + d.write_gather_ns
        + spans * d.write_move_line_ns
        + commit;
    let read = accept
        + d.read_dma_ns
        + requests * d.read_request_ns
        + lines * d.read_line_ns.max(d.read_full_line_ns)
        + d.read_slow_ns
        + rounds * (2.0 * host.link.wire_ns + rc.fixed_ns + latency)
        + requests * rc.request_ns
        + 2.0 * spans * fabric_line
        + spans * d.move_line_ns
        + hiccup;
    let dma = write
        + read
        + 2.0 * walk
        + (requests + tlps) * io.replay_ns
        + 2.0 * exit
        + d.complete_ns
        + d.worker_ns.max(d.loop_ns);
    let command = c.issue_ns
        + c.write_ns
        + commit
        + 2.0 * host.link.wire_ns
        + rc.fixed_ns
        + rc.request_ns
        + 2.0 * fabric_line
        + latency
        + hiccup
        + 2.0 * (walk + io.replay_ns + exit)
        + c.complete_ns
        + 16.0 * c.word_ns
        + c.window_move_ns
        + c.window_wait_ns
        + c.write_own_memory_ns
        + c.loop_ns;
    dma.max(command) + link_ns
}
