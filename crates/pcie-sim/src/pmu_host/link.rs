//! One direction of a root port's link: a serialiser that sends TLPs one after the other, and a
//! ledger of what has crossed the port by any moment, TLP by TLP.
//!
//! TLPs are sent in bursts of equal TLPs (a data chunk cut at MPS, a command read); a burst's
//! k-th TLP has crossed at `start + (k + 1) × tlp_ps`, so the payload that crossed by a moment is
//! worked out per burst, not per TLP, and is still exact to the TLP. The simulation issues
//! sends in the order it works them out, not in the order their TLPs are ready; each takes the
//! link's first idle time from its ready time on, a burst cut where it does not fit.

use crate::time::Ps;
use pcie_model::{LinkConfig, Tlp, TlpKind};

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

/// A TLP as the link sends it, by kind (index in [`KINDS`]) and length.
#[derive(Debug, Clone, Copy, Default)]
struct Shape {
    kind: usize,
    len: u32,
    wire: u64,
    /// 0: not worked out yet.
    tlp_ps: Ps,
    dw: u64,
}

/// Shapes remembered per direction.
const SHAPES: usize = 8;

/// A queue taken from the front and added to at or near the back, kept as one slice
/// (`items[head..]`): the searches from the back that sends make cost less than over a
/// `VecDeque`'s two slices.
#[derive(Debug, Clone)]
struct Window<T> {
    items: Vec<T>,
    head: usize,
}

impl<T> Window<T> {
    fn new() -> Window<T> {
        Window {
            items: Vec::new(),
            head: 0,
        }
    }

    fn live(&self) -> &[T] {
        &self.items[self.head..]
    }

    fn live_mut(&mut self) -> &mut [T] {
        &mut self.items[self.head..]
    }

    fn len(&self) -> usize {
        self.items.len() - self.head
    }

    fn push_back(&mut self, x: T) {
        self.items.push(x);
    }

    /// Before the `i`-th of the queue.
    fn insert(&mut self, i: usize, x: T) {
        self.items.insert(self.head + i, x);
    }

    fn remove(&mut self, i: usize) {
        self.items.remove(self.head + i);
    }

    /// Drops the first (there is one); the space taken ones held is given back once they are
    /// half the vector.
    fn pop_front(&mut self) {
        self.head += 1;
        if self.head == self.items.len() {
            self.items.clear();
            self.head = 0;
        } else if self.head >= 64 && 2 * self.head >= self.items.len() {
            self.items.drain(..self.head);
            self.head = 0;
        }
    }
}

/// Idle times too short for a send's TLPs that it passes before it goes after the last
/// reservation.
const MAX_GAPS: u32 = 16;

/// A link direction: a serialiser that fills the link's idle time, plus the ledger.
#[derive(Debug, Clone)]
pub struct LinkDirection {
    ps_per_byte: f64,
    /// When the direction is taken, `(start, end)` in time order: disjoint, touching ones
    /// merged, those over by the last ledger query dropped. A send fills the idle time from
    /// when its TLPs are ready, TLP by TLP, so one whose data is ready later (a read's
    /// completions, a descriptor fetch after the driver's doorbell) never holds the link idle
    /// for one issued after it but ready sooner.
    busy: Window<(Ps, Ps)>,
    /// Bursts not yet folded into `settled`, in time order (their times never overlap).
    pending: Window<Burst>,
    /// Where a send's TLPs go (start, count): kept between sends, not allocated for each.
    pieces: Vec<(Ps, u64)>,
    settled: Tally,
    shapes: [Shape; SHAPES],
    /// The shape replaced last.
    replace: usize,
    /// No ledger query may look before this moment (bursts before it were folded in).
    settled_at: Ps,
}

impl LinkDirection {
    /// A direction of `link` (its packet capacity sets the time per byte).
    pub fn new(link: &LinkConfig) -> LinkDirection {
        LinkDirection {
            ps_per_byte: 8000.0 / pcie_model::capacity(link).0,
            busy: Window::new(),
            pending: Window::new(),
            pieces: Vec::new(),
            settled: Tally::default(),
            shapes: [Shape::default(); SHAPES],
            replace: 0,
            settled_at: 0,
        }
    }

    /// Send `n` TLPs of `kind` with `len` payload bytes each (requested bytes for MRd), ready at
    /// `ready`: each in the first idle time from then (never before the last ledger query).
    /// Returns when the last one has left. `link` is the one the direction was made for.
    pub fn send(&mut self, link: &LinkConfig, ready: Ps, kind: TlpKind, len: u32, n: u64) -> Ps {
        if n == 0 {
            return ready;
        }
        let Shape {
            kind, wire, tlp_ps, dw, ..
        } = self.shape(link, kind, len);
        // Where the TLPs go: the idle times from `ready` on (after a reservation that holds
        // it), what fits of them in each; after MAX_GAPS idle times too short for one TLP,
        // after the last reservation. The reservations ahead of `ready` are few (sends placed
        // ahead in time), so they are found from the end.
        let mut at = ready.max(self.settled_at);
        let b = |start, n| Burst {
            start,
            tlp_ps,
            n,
            dw,
            wire,
            kind,
        };
        // Mostly nothing is reserved past `at`: the TLPs go at the end, back to back.
        match self.busy.live_mut().last_mut() {
            Some(last) if last.1 <= at => {
                let burst = b(at, n);
                if last.1 == at {
                    last.1 = burst.end();
                } else {
                    self.busy.push_back((at, burst.end()));
                }
                self.pending.push_back(burst);
                return burst.end();
            }
            None => {
                let burst = b(at, n);
                self.busy.push_back((at, burst.end()));
                self.pending.push_back(burst);
                return burst.end();
            }
            Some(_) => {}
        }
        let ahead = self.busy.live().iter().rev().take_while(|r| r.1 > at).count();
        let first = self.busy.len() - ahead;
        let mut pieces = std::mem::take(&mut self.pieces);
        pieces.clear();
        let (mut left, mut gaps) = (n, 0);
        for &(s, e) in &self.busy.live()[first..] {
            let fit = (s.saturating_sub(at) / tlp_ps).min(left);
            if fit > 0 {
                pieces.push((at, fit));
                left -= fit;
            } else if s > at {
                gaps += 1;
            }
            if left == 0 || gaps == MAX_GAPS {
                break;
            }
            at = at.max(e);
        }
        if left > 0 {
            let tail = self.busy.live().last().map_or(at, |r| r.1.max(at));
            pieces.push((if gaps == MAX_GAPS { tail } else { at }, left));
        }
        let mut end = ready;
        for &(start, n) in &pieces {
            let b = b(start, n);
            end = b.end();
            self.reserve(start, end);
            // After the bursts that start sooner: almost always at the end, so counted from it.
            let later = self.pending.live().iter().rev().take_while(|p| p.start > start).count();
            self.pending.insert(self.pending.len() - later, b);
        }
        self.pieces = pieces;
        end
    }

    /// A TLP's link bytes, time and payload, from the last ones worked out (a workload sends
    /// a few shapes over and over) or from the model.
    fn shape(&mut self, link: &LinkConfig, kind: TlpKind, len: u32) -> Shape {
        let kind = kind_index(kind);
        if let Some(s) = self
            .shapes
            .iter()
            .find(|s| s.len == len && s.kind == kind && s.tlp_ps > 0)
        {
            return *s;
        }
        // Lengths are mostly multiples of 8: looked up by value, the oldest replaced.
        self.replace = (self.replace + 1) % SHAPES;
        let slot = &mut self.shapes[self.replace];
        let tlp = match KINDS[kind] {
            TlpKind::CplD => Tlp::completion(0, len),
            k => Tlp::request(link, k, 0, len),
        };
        let wire = tlp.wire_bytes(link) as u64;
        *slot = Shape {
            kind,
            len,
            wire,
            tlp_ps: ((wire as f64 * self.ps_per_byte + 0.5) as Ps).max(1),
            dw: if KINDS[kind] == TlpKind::MRd {
                0
            } else {
                len.div_ceil(4) as u64
            },
        };
        *slot
    }

    /// Forgets the reservations over by `t`: every send from now on is ready at `t` or later.
    fn forget_before(&mut self, t: Ps) {
        while self.busy.live().first().is_some_and(|r| r.1 <= t) {
            self.busy.pop_front();
        }
    }

    /// Takes `[start, end)`, merged with the reservations it touches.
    fn reserve(&mut self, start: Ps, end: Ps) {
        let busy = self.busy.live_mut();
        let after = busy.iter().rev().take_while(|r| r.0 > start).count();
        let i = busy.len() - after;
        let joins_next = busy.get(i).is_some_and(|r| r.0 == end);
        match (i.checked_sub(1).filter(|&p| busy[p].1 == start), joins_next) {
            (Some(p), true) => {
                busy[p].1 = busy[i].1;
                self.busy.remove(i);
            }
            (Some(p), false) => busy[p].1 = end,
            (None, true) => busy[i].0 = start,
            (None, false) => self.busy.insert(i, (start, end)),
        }
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
        while let Some(b) = self.pending.live().first().filter(|b| b.end() <= t).copied() {
            self.settled.add(&b, b.n);
            self.pending.pop_front();
        }
        self.settled_at = self.settled_at.max(t);
        self.forget_before(self.settled_at);
        let mut tally = self.settled;
        for b in self.pending.live().iter().take_while(|b| b.start < t) {
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

    #[test]
    fn a_send_ready_sooner_fills_the_idle_time_before_one_ready_later() {
        let l = link();
        let mut d = LinkDirection::new(&l);
        let tlp = d.send(&l, 0, TlpKind::MWr, 256, 1);
        // Issued first, ready at 10 TLP times: the link is idle before it.
        let late = d.send(&l, 10 * tlp, TlpKind::MWr, 256, 4);
        assert_eq!(late, 14 * tlp);
        // Issued after it, ready at once: 9 TLPs fill the idle time, the rest follow the late
        // burst.
        let soon = d.send(&l, tlp, TlpKind::MWr, 256, 12);
        assert_eq!(soon, 17 * tlp);
        assert_eq!(d.at(10 * tlp).tlps_of(TlpKind::MWr), 10, "busy from the start");
        assert_eq!(d.at(14 * tlp).tlps_of(TlpKind::MWr), 14);
        assert_eq!(d.at(17 * tlp).tlps_of(TlpKind::MWr), 17);
        // Nothing goes before the last query.
        assert_eq!(d.send(&l, 0, TlpKind::MWr, 256, 1), 18 * tlp);
    }
}
