//! Link time of the TLPs the machine sends, tabulated: a run sends millions of TLPs of a few
//! shapes, and each shape's wire size and the acknowledgements it earns are fixed by the link.

use pcie_model::{reverse_dllp_bytes, LinkConfig, Tlp, TlpKind};

/// Picoseconds.
type Ps = u64;

/// Longest TLP payload PCIe allows.
const MAX_LEN: usize = 4096;
const KINDS: [TlpKind; 3] = [TlpKind::MWr, TlpKind::MRd, TlpKind::CplD];
/// A slot not filled yet: no TLP takes no time on the wire. Zero, so that the table is
/// allocated zeroed (lazily, by the OS) rather than written: every test builds one.
const UNSET: Ps = 0;

/// One TLP's cost on the link.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct TlpTime {
    /// Serialisation in its own direction.
    pub(crate) wire: Ps,
    /// Link time of the DLLPs (Acks, UpdateFCs) it earns in the other direction.
    pub(crate) dllps: Ps,
    /// Link time of its payload alone: how long after its header its last byte arrives.
    pub(crate) payload: Ps,
}

/// [`TlpTime`] by kind, first byte's offset in its DW and length, filled on first use.
#[derive(Debug, Clone)]
pub(crate) struct TlpTimes {
    link: LinkConfig,
    ps_per_byte: f64,
    dllp_per_byte: [f64; 3],
    /// (wire, dllps, payload) by kind, offset in the DW and length.
    table: Vec<[Ps; 3]>,
}

impl TlpTimes {
    /// Times on a link direction that carries packets at `ps_per_byte`.
    pub(crate) fn new(link: &LinkConfig, ps_per_byte: f64) -> TlpTimes {
        TlpTimes {
            link: link.clone(),
            ps_per_byte,
            dllp_per_byte: KINDS.map(|k| reverse_dllp_bytes(link, k, 1.0)),
            table: vec![[UNSET; 3]; KINDS.len() * 4 * (MAX_LEN + 1)],
        }
    }

    /// A memory write of `len` bytes at `addr`.
    #[inline]
    pub(crate) fn mwr(&mut self, addr: u64, len: u32) -> TlpTime {
        self.get(0, addr, len)
    }

    /// A memory read request for `len` bytes at `addr`.
    #[inline]
    pub(crate) fn mrd(&mut self, addr: u64, len: u32) -> TlpTime {
        self.get(1, addr, len)
    }

    /// A completion carrying `len` bytes for `addr`.
    #[inline]
    pub(crate) fn cpl(&mut self, addr: u64, len: u32) -> TlpTime {
        self.get(2, addr, len)
    }

    /// Inlined, the computation out of line: the command path asks for up to three TLPs'
    /// times per transaction.
    #[inline]
    fn get(&mut self, kind: usize, addr: u64, len: u32) -> TlpTime {
        let len = len as usize;
        if len > MAX_LEN {
            return self.compute(kind, addr, len as u32);
        }
        let i = (kind * 4 + (addr & 3) as usize) * (MAX_LEN + 1) + len;
        if self.table[i][0] == UNSET {
            let t = self.compute(kind, addr & 3, len as u32);
            self.table[i] = [t.wire, t.dllps, t.payload];
        }
        let [wire, dllps, payload] = self.table[i];
        TlpTime { wire, dllps, payload }
    }

    #[cold]
    fn compute(&self, kind: usize, addr: u64, len: u32) -> TlpTime {
        let tlp = match KINDS[kind] {
            TlpKind::CplD => Tlp::completion(addr, len),
            k => Tlp::request(&self.link, k, addr, len),
        };
        let bytes = tlp.wire_bytes(&self.link) as f64;
        TlpTime {
            wire: (bytes * self.ps_per_byte + 0.5) as Ps,
            dllps: (self.dllp_per_byte[kind] * bytes * self.ps_per_byte + 0.5) as Ps,
            payload: (len as f64 * self.ps_per_byte + 0.5) as Ps,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pcie_model::LinkParams;

    #[test]
    fn tabulated_times_match_the_model_for_every_alignment() {
        let link = LinkConfig::new(&LinkParams::default()).unwrap();
        let mut t = TlpTimes::new(&link, 127.0);
        for addr in [0u64, 1, 2, 3, 4096 + 2] {
            for len in [1u32, 3, 64, 255, 256, 4096] {
                let bytes = Tlp::request(&link, TlpKind::MWr, addr, len).wire_bytes(&link) as f64;
                let first = t.mwr(addr, len);
                assert_eq!(first.wire, (bytes * 127.0 + 0.5) as Ps, "MWr {addr} {len}");
                assert_eq!(t.mwr(addr, len), first, "the tabulated value is the computed one");
                let dllp = reverse_dllp_bytes(&link, TlpKind::MWr, 1.0);
                assert_eq!(first.dllps, (dllp * bytes * 127.0 + 0.5) as Ps);
                assert_eq!(first.payload, (len as f64 * 127.0 + 0.5) as Ps);
            }
        }
        let cpl = Tlp::completion(5, 250).wire_bytes(&link) as f64;
        assert_eq!(t.cpl(5, 250).wire, (cpl * 127.0 + 0.5) as Ps);
        assert!(
            t.mrd(0, 512).wire < t.mwr(0, 512).wire,
            "a read request carries no data"
        );
    }
}
