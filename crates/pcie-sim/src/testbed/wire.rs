//! One direction of the link: a serialiser whose busy time also carries the DLLPs owed.

use crate::queue::Server;
use crate::time::Ps;

/// One direction of the link.
#[derive(Debug, Clone, Copy)]
pub(super) struct Wire {
    pub(super) server: Server,
    /// Picoseconds per byte at the capacity left for packets.
    pub(super) ps_per_byte: f64,
}

impl Wire {
    /// Send a packet taking `busy` from `ready`: returns when its last byte has left.
    #[inline]
    pub(super) fn send(&mut self, ready: Ps, busy: Ps) -> Ps {
        self.server.serve(ready, busy) + busy
    }

    /// DLLPs owed for traffic in the other direction take link time here. They are folded
    /// into the busy time as it stands (Acks and UpdateFCs are scheduled around TLPs), rather
    /// than queued behind the future moment they were earned at.
    #[inline]
    pub(super) fn owe(&mut self, busy: Ps) {
        self.server.free += busy;
    }
}
