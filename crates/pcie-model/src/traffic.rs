//! Traffic: the TLPs one unit of work (a DMA, a packet) puts on each direction of the link.
//! Every number the model reports is derived from such a list, so it can be shown item by item.

use crate::config::LinkConfig;
use crate::split;
use crate::tlp::{FcClass, Tlp, TlpKind};
use serde::Serialize;

/// Link direction, named from the device: `Up` is device → host (the device transmits,
/// pcie-model's "TX"), `Down` is host → device ("RX").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Dir {
    Up,
    Down,
}

impl Dir {
    pub fn reverse(self) -> Dir {
        match self {
            Dir::Up => Dir::Down,
            Dir::Down => Dir::Up,
        }
    }
}

/// TLPs of one kind, for one purpose, in one direction, per unit of work.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Flow {
    pub what: &'static str,
    pub dir: Dir,
    pub kind: TlpKind,
    /// TLPs per unit (fractional when the work is batched over several units).
    pub tlps: f64,
    /// Link bytes per unit, framing and headers included.
    pub bytes: f64,
    /// Payload bytes per unit.
    pub payload: f64,
}

/// All flows of one unit of work.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(transparent)]
pub struct Traffic {
    pub flows: Vec<Flow>,
}

/// Who starts a transaction; that decides the direction of requests and completions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Initiator {
    Device,
    Host,
}

impl Initiator {
    fn request_dir(self) -> Dir {
        match self {
            Initiator::Device => Dir::Up,
            Initiator::Host => Dir::Down,
        }
    }
}

impl Traffic {
    /// A flow of `(TLP, count)` groups: each group is `count` TLPs occupying the link like the
    /// one given.
    fn add(
        &mut self,
        cfg: &LinkConfig,
        what: &'static str,
        dir: Dir,
        groups: impl IntoIterator<Item = (Tlp, u64)>,
        weight: f64,
    ) {
        let (mut kind, mut tlps, mut bytes, mut payload) = (TlpKind::MWr, 0, 0, 0);
        for (t, count) in groups {
            kind = t.kind;
            tlps += count;
            bytes += count * t.wire_bytes(cfg) as u64;
            if t.kind != TlpKind::MRd {
                payload += count * t.len as u64;
            }
        }
        let flow = Flow {
            what,
            dir,
            kind,
            tlps: weight * tlps as f64,
            bytes: weight * bytes as f64,
            payload: weight * payload as f64,
        };
        if flow.tlps > 0.0 {
            self.flows.push(flow);
        }
    }

    /// A memory write of `len` bytes at `addr`, `weight` times per unit.
    pub fn write(&mut self, cfg: &LinkConfig, what: &'static str, by: Initiator, addr: u64, len: u32, weight: f64) {
        let tlps = split::write_runs(cfg, addr, len).map(|r| (Tlp::request(cfg, TlpKind::MWr, r.addr, r.len), r.count));
        self.add(cfg, what, by.request_dir(), tlps, weight);
    }

    /// A memory read of `len` bytes at `addr`: requests one way, completions back.
    pub fn read(&mut self, cfg: &LinkConfig, what: &'static str, by: Initiator, addr: u64, len: u32, weight: f64) {
        let dir = by.request_dir();
        let reqs =
            split::read_request_runs(cfg, addr, len).map(|r| (Tlp::request(cfg, TlpKind::MRd, r.addr, r.len), r.count));
        self.add(cfg, what, dir, reqs, weight);
        let cpls = split::read_completion_runs(cfg, addr, len).map(|r| (Tlp::completion(r.addr, r.len), r.count));
        self.add(cfg, what, dir.reverse(), cpls, weight);
    }

    /// An MSI raised by the device.
    pub fn msi(&mut self, cfg: &LinkConfig, what: &'static str, weight: f64) {
        self.add(cfg, what, Dir::Up, [(Tlp::msi(cfg), 1)], weight);
    }

    /// Flows in one direction.
    pub fn in_dir(&self, dir: Dir) -> impl Iterator<Item = &Flow> {
        self.flows.iter().filter(move |f| f.dir == dir)
    }

    /// Drop what a filter rejects (used to reproduce pcie-model quirks).
    pub fn retain(&mut self, keep: impl FnMut(&Flow) -> bool) {
        self.flows.retain(keep);
    }

    pub fn tlp_bytes(&self, dir: Dir) -> f64 {
        self.in_dir(dir).map(|f| f.bytes).sum()
    }

    /// (TLPs, bytes) in one direction, optionally of one credit class.
    pub fn count(&self, dir: Dir, class: Option<FcClass>) -> (f64, f64) {
        self.in_dir(dir)
            .filter(|f| class.is_none_or(|c| f.kind.class() == c))
            .fold((0.0, 0.0), |(n, b), f| (n + f.tlps, b + f.bytes))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::LinkParams;

    #[test]
    fn device_read_sends_requests_up_and_completions_down() {
        let cfg = LinkConfig::new(&LinkParams {
            tlp_align: Some(4),
            ..LinkParams::default()
        })
        .unwrap();
        let mut t = Traffic::default();
        t.read(&cfg, "data", Initiator::Device, 0, 1024, 1.0);
        assert_eq!(t.count(Dir::Up, Some(FcClass::NonPosted)), (2.0, 48.0));
        assert_eq!(t.count(Dir::Down, Some(FcClass::Completion)), (4.0, 4.0 * 276.0));
        let mut h = Traffic::default();
        h.read(&cfg, "pointer", Initiator::Host, 0, 4, 0.5);
        assert_eq!(h.count(Dir::Down, None), (0.5, 12.0));
        assert_eq!(h.count(Dir::Up, None), (0.5, 12.0));
    }
}
