//! The per-transaction path's prices.

use super::profile::{DeviceProfile, HostProfile};
use crate::time::{ps, Ps};

/// Profile times converted to picoseconds once, so the per-transaction path does integer
/// arithmetic only.
#[derive(Debug, Clone, Copy)]
pub(super) struct Costs {
    pub(super) issue: Ps,
    pub(super) complete: Ps,
    pub(super) move_read: Ps,
    pub(super) gather: Ps,
    pub(super) move_write: Ps,
    pub(super) wire: Ps,
    pub(super) half_fixed: Ps,
    pub(super) request: Ps,
    pub(super) line: Ps,
    pub(super) write_line: Ps,
    /// The period of the root port's UpdateFC timer for posted credits, which it returns at
    /// its ticks while no completion is leaving downstream; 0 where it returns each at once.
    pub(super) fc_update: Ps,
    pub(super) commit: Ps,
    /// `None`: no ownership term.
    pub(super) own: Option<Ps>,
    pub(super) own_line: Ps,
    pub(super) own_snoop: Ps,
    pub(super) merge: Ps,
    pub(super) allocate: Ps,
    pub(super) walk: Ps,
    pub(super) walk_busy: Ps,
    pub(super) replay: Ps,
    pub(super) read_dma: Ps,
    pub(super) read_request: Ps,
    pub(super) read_line: Ps,
    pub(super) read_full_line: Ps,
    pub(super) read_slow: Ps,
    pub(super) write_dma: Ps,
    pub(super) write_tlp: Ps,
    pub(super) write_line_dev: Ps,
    pub(super) write_slow: Ps,
    pub(super) write_min: Ps,
    pub(super) bus_dma: Ps,
    pub(super) bus_line: Ps,
    /// The command path's ([`super::profile::DeviceProfile::cmd`]).
    pub(super) cmd: CmdCosts,
}

/// The command path's prices.
#[derive(Debug, Clone, Copy)]
pub(super) struct CmdCosts {
    pub(super) issue: Ps,
    pub(super) complete: Ps,
    pub(super) write: Ps,
    pub(super) word: Ps,
    pub(super) window_move: Ps,
    pub(super) window_wait: Ps,
    pub(super) write_own_memory: Ps,
}

impl Costs {
    pub(super) fn new(host: &HostProfile, dev: &DeviceProfile) -> Costs {
        let (rc, dma) = (&host.root_complex, &dev.dma);
        Costs {
            issue: ps(dma.issue_ns),
            complete: ps(dma.complete_ns),
            move_read: ps(dma.move_line_ns),
            gather: ps(dma.write_gather_ns),
            move_write: ps(dma.write_move_line_ns),
            wire: ps(host.link.wire_ns),
            half_fixed: ps(rc.fixed_ns) / 2,
            request: ps(rc.request_ns),
            line: ps(rc.line_ns),
            write_line: ps(rc.write_line_ns),
            fc_update: rc.fc_update_ns.map_or(0, ps),
            commit: ps(rc.write_commit_ns),
            own: rc.write_own_ns.map(ps),
            own_line: ps(rc.write_own_line_ns),
            own_snoop: ps(rc.write_snoop_ns),
            merge: ps(rc.write_merge_ns),
            allocate: ps(host.memory.ddio_allocate_ns),
            walk: ps(host.iommu.walk_ns),
            walk_busy: ps(host.iommu.walk_busy_ns),
            replay: ps(host.iommu.replay_ns),
            read_dma: ps(dma.read_dma_ns),
            read_request: ps(dma.read_request_ns),
            read_line: ps(dma.read_line_ns),
            read_full_line: ps(dma.read_full_line_ns),
            read_slow: ps(dma.read_slow_ns),
            write_dma: ps(dma.write_dma_ns),
            write_tlp: ps(dma.write_tlp_ns),
            write_line_dev: ps(dma.write_line_ns),
            write_slow: ps(dma.write_slow_ns),
            write_min: ps(dma.write_min_ns),
            bus_dma: ps(dma.bus_dma_ns),
            bus_line: ps(dma.bus_line_ns),
            cmd: CmdCosts {
                issue: ps(dev.cmd.issue_ns),
                complete: ps(dev.cmd.complete_ns),
                write: ps(dev.cmd.write_ns),
                word: ps(dev.cmd.word_ns),
                window_move: ps(dev.cmd.window_move_ns),
                window_wait: ps(dev.cmd.window_wait_ns),
                write_own_memory: ps(dev.cmd.write_own_memory_ns),
            },
        }
    }
}
