//! One direction of a root port's link: a serialiser that sends TLPs one after the other, and a
//! ledger of what has crossed the port by any moment, TLP by TLP.
//!
//! TLPs are sent in bursts of equal TLPs (a data chunk cut at MPS, a command read); a burst's
//! k-th TLP has crossed at `start + (k + 1) × tlp_ps`, so the payload that crossed by a moment is
//! worked out per burst, not per TLP, and is still exact to the TLP.

use crate::queue::Server;
use crate::time::Ps;
use pcie_model::{LinkConfig, Tlp, TlpKind};
use std::collections::VecDeque;

/// TLP kinds counted separately (the DWC lane events).
pub const KINDS: [TlpKind; 3] = [TlpKind::MWr, TlpKind::MRd, TlpKind::CplD];

fn kind_index(k: TlpKind) -> usize {
    KINDS.iter().position(|x| *x == k).expect("every kind is listed")
}

/// What has crossed a port in one direction: payload in DWs, TLPs per kind, and link bytes
/// (all TLPs; posted and non-posted ones, which use flow-control credits the receiver returns).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Tally {
    pub payload_dw: u64,
    pub tlps: [u64; 3],
    pub wire_bytes: u64,
    pub credited_bytes: u64,
}

impl Tally {
    pub fn tlps_of(&self, k: TlpKind) -> u64 {
        self.tlps[kind_index(k)]
    }

    /// All TLPs.
    pub fn all_tlps(&self) -> u64 {
        self.tlps.iter().sum()
    }

    fn add(&mut self, b: &Burst, k: u64) {
        self.payload_dw += k * b.dw;
        self.tlps[b.kind] += k;
        self.wire_bytes += k * b.wire;
        if KINDS[b.kind] != TlpKind::CplD {
            self.credited_bytes += k * b.wire;
        }
    }
}

#[derive(Debug, Clone, Copy)]
struct Burst {
    start: Ps,
    tlp_ps: Ps,
    n: u64,
    dw: u64,
    /// Link bytes of one TLP.
    wire: u64,
    kind: usize,
}

impl Burst {
    fn end(&self) -> Ps {
        self.start + self.n * self.tlp_ps
    }

    /// TLPs of this burst that have crossed by `t`.
    fn crossed(&self, t: Ps) -> u64 {
        if t <= self.start {
            0
        } else {
            ((t - self.start) / self.tlp_ps).min(self.n)
        }
    }
}

/// A link direction: FIFO serialiser plus ledger.
#[derive(Debug, Clone)]
pub struct LinkDirection {
    server: Server,
    ps_per_byte: f64,
    pending: VecDeque<Burst>,
    settled: Tally,
    /// No ledger query may look before this moment (bursts before it were folded in).
    settled_at: Ps,
}

impl LinkDirection {
    /// A direction of `link` (its packet capacity sets the time per byte).
    pub fn new(link: &LinkConfig) -> LinkDirection {
        LinkDirection {
            server: Server::default(),
            ps_per_byte: 8000.0 / pcie_model::capacity(link).0,
            pending: VecDeque::new(),
            settled: Tally::default(),
            settled_at: 0,
        }
    }

    /// Send `n` TLPs of `kind` with `len` payload bytes each (requested bytes for MRd), ready at
    /// `ready`. Returns when the last one has left.
    pub fn send(&mut self, link: &LinkConfig, ready: Ps, kind: TlpKind, len: u32, n: u64) -> Ps {
        if n == 0 {
            return ready;
        }
        let tlp = match kind {
            TlpKind::CplD => Tlp::completion(0, len),
            _ => Tlp::request(link, kind, 0, len),
        };
        let wire = tlp.wire_bytes(link) as u64;
        let tlp_ps = ((wire as f64 * self.ps_per_byte + 0.5) as Ps).max(1);
        let start = self.server.serve(ready, n * tlp_ps);
        let dw = if kind == TlpKind::MRd {
            0
        } else {
            len.div_ceil(4) as u64
        };
        let b = Burst {
            start,
            tlp_ps,
            n,
            dw,
            wire,
            kind: kind_index(kind),
        };
        self.pending.push_back(b);
        b.end()
    }

    /// Send `times` transfers of `len` bytes, each cut into pieces of at most `piece` (writes at
    /// MPS, reads at MRRS, completions at MPS): one burst of the full pieces and one of the rests
    /// (within a batch of transfers the rests go last). Returns when the last TLP has left.
    pub fn send_cut(&mut self, link: &LinkConfig, ready: Ps, kind: TlpKind, len: u32, piece: u32, times: u64) -> Ps {
        let full = (len / piece) as u64 * times;
        let rest = len % piece;
        let end = self.send(link, ready, kind, piece, full);
        if rest > 0 {
            self.send(link, ready, kind, rest, times)
        } else {
            end
        }
    }

    /// Everything that has crossed by `t`. Queries must not go back in time.
    pub fn at(&mut self, t: Ps) -> Tally {
        debug_assert!(t >= self.settled_at, "ledger queried at {t} after {}", self.settled_at);
        while let Some(b) = self.pending.front().filter(|b| b.end() <= t).copied() {
            self.settled.add(&b, b.n);
            self.pending.pop_front();
        }
        self.settled_at = self.settled_at.max(t);
        let mut tally = self.settled;
        for b in self.pending.iter().take_while(|b| b.start < t) {
            tally.add(b, b.crossed(t));
        }
        tally
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pcie_model::{Generation, LinkParams};

    fn link() -> LinkConfig {
        LinkConfig::new(&LinkParams {
            gen: Generation::Gen3,
            lanes: 4,
            mps: 256,
            ..LinkParams::default()
        })
        .unwrap()
    }

    #[test]
    fn payload_crosses_tlp_by_tlp() {
        let l = link();
        let mut d = LinkDirection::new(&l);
        let end = d.send_cut(&l, 1000, TlpKind::MWr, 4096 + 100, 256, 1);
        // 16 full TLPs and one of 100 B (25 DW), back to back.
        assert_eq!(d.at(1000), Tally::default());
        let full = d.at(end);
        assert_eq!(full.payload_dw, (4096 + 100) / 4);
        assert_eq!(full.tlps_of(TlpKind::MWr), 17);
        // Half way through, a whole number of 256 B TLPs has crossed.
        let mut d = LinkDirection::new(&l);
        let end = d.send(&l, 0, TlpKind::MWr, 256, 16);
        let half = d.at(end / 2);
        assert_eq!(half.payload_dw % 64, 0);
        assert_eq!(half.tlps_of(TlpKind::MWr), 8);
        // Requests carry no payload but count as TLPs.
        d.send(&l, 0, TlpKind::MRd, 512, 3);
        let t = d.at(u64::MAX / 2);
        assert_eq!((t.payload_dw, t.tlps_of(TlpKind::MRd)), (1024, 3));
    }

    #[test]
    fn bursts_queue_behind_each_other() {
        let l = link();
        let mut d = LinkDirection::new(&l);
        let a = d.send(&l, 0, TlpKind::MWr, 256, 4);
        let b = d.send(&l, 0, TlpKind::MWr, 256, 4);
        assert_eq!(b, 2 * a, "the second burst waits for the first");
        assert_eq!(d.at(a).tlps_of(TlpKind::MWr), 4);
    }
}
