//! Transaction layer packets and the bytes each one occupies on the link.

use crate::config::{LinkConfig, Mode};
use serde::Serialize;

/// The TLP types DMA and NIC traffic is made of.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum TlpKind {
    /// Memory write (posted); `len` bytes of payload.
    MWr,
    /// Memory read request (non-posted); asks for `len` bytes, carries none.
    MRd,
    /// Completion with data; `len` bytes of payload.
    CplD,
}

/// Flow-control credit class, which decides who sends UpdateFC DLLPs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum FcClass {
    Posted,
    NonPosted,
    Completion,
}

/// One TLP: its type, the address its data starts at and its length.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tlp {
    pub kind: TlpKind,
    pub addr: u64,
    pub len: u32,
    /// 4-DW request header (64-bit address) rather than 3-DW.
    pub addr64: bool,
}

/// Per-TLP framing outside flit mode: STP (Gen3+: a 4 B token holding the sequence number;
/// Gen1/2: STP + 2 B sequence number + END) plus the 4 B LCRC.
const FRAMING_BYTES: u32 = 8;
const DW: u32 = 4;
/// pcie-model's generic header part; its MWr/MRd address part is 8 or 12 B, its CplD part 8 B.
const COMPAT_GENERIC_HDR: u32 = 4;

impl TlpKind {
    pub fn class(self) -> FcClass {
        match self {
            TlpKind::MWr => FcClass::Posted,
            TlpKind::MRd => FcClass::NonPosted,
            TlpKind::CplD => FcClass::Completion,
        }
    }
}

impl Tlp {
    /// A request (MWr or MRd) with the link's address width.
    pub fn request(cfg: &LinkConfig, kind: TlpKind, addr: u64, len: u32) -> Tlp {
        Tlp {
            kind,
            addr,
            len,
            addr64: cfg.addr_bits == 64,
        }
    }

    pub fn completion(addr: u64, len: u32) -> Tlp {
        Tlp {
            kind: TlpKind::CplD,
            addr,
            len,
            addr64: false,
        }
    }

    /// An MSI/MSI-X: a 4 B memory write. Its address (0xFEEx_xxxx) is below 4 GB, where the spec
    /// requires the 3-DW format; pcie-model uses the link's address width.
    pub fn msi(cfg: &LinkConfig) -> Tlp {
        let addr64 = cfg.mode == Mode::PcieModel && cfg.addr_bits == 64;
        Tlp {
            kind: TlpKind::MWr,
            addr: 0xFEE0_0000,
            len: 4,
            addr64,
        }
    }

    /// Bytes of payload on the wire: whole DWs, from the DW holding the first byte to the DW
    /// holding the last (byte enables mask the rest).
    fn data_bytes(&self) -> u32 {
        if self.kind == TlpKind::MRd {
            return 0;
        }
        let start = self.addr & !(DW as u64 - 1);
        let end = (self.addr + self.len as u64).next_multiple_of(DW as u64);
        (end - start) as u32
    }

    /// First or last DW only partly covered: byte enables that are not all ones.
    fn partial_dw(&self) -> bool {
        !self.addr.is_multiple_of(DW as u64) || !(self.addr + self.len as u64).is_multiple_of(DW as u64)
    }

    fn header_bytes(&self) -> u32 {
        match self.kind {
            TlpKind::MWr | TlpKind::MRd if self.addr64 => 4 * DW,
            _ => 3 * DW,
        }
    }

    /// Bytes this TLP occupies on the link, everything included except DLLPs and physical
    /// layer overhead (encoding, SKP, flit DLP/CRC/FEC).
    pub fn wire_bytes(&self, cfg: &LinkConfig) -> u32 {
        let digest = if cfg.ecrc { DW } else { 0 };
        if cfg.mode == Mode::PcieModel {
            let specific = match self.kind {
                TlpKind::MWr | TlpKind::MRd if self.addr64 => 12,
                _ => 8,
            };
            let data = if self.kind == TlpKind::MRd { 0 } else { self.len };
            return FRAMING_BYTES + COMPAT_GENERIC_HDR + specific + digest + data;
        }
        let body = self.header_bytes() + digest + self.data_bytes();
        if cfg.flit {
            // Flit mode: no per-TLP framing or LCRC; byte enables and the completion's low
            // address bits move to an OHC-A word when they are not implied.
            body + if self.partial_dw() { DW } else { 0 }
        } else {
            (FRAMING_BYTES + body).next_multiple_of(cfg.tlp_align)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::LinkParams;
    use crate::generation::Generation;

    fn cfg(f: impl FnOnce(&mut LinkParams)) -> LinkConfig {
        let mut p = LinkParams {
            tlp_align: Some(4),
            ..LinkParams::default()
        };
        f(&mut p);
        LinkConfig::new(&p).unwrap()
    }

    #[test]
    fn non_flit_sizes() {
        let c = cfg(|_| {});
        // MWr64: 8 framing + 16 header; CplD: 8 + 12; MRd carries no data.
        assert_eq!(Tlp::request(&c, TlpKind::MWr, 0, 256).wire_bytes(&c), 280);
        assert_eq!(Tlp::request(&c, TlpKind::MRd, 0, 512).wire_bytes(&c), 24);
        assert_eq!(Tlp::completion(0, 256).wire_bytes(&c), 276);
        let c32 = cfg(|p| p.addr_bits = 32);
        assert_eq!(Tlp::request(&c32, TlpKind::MWr, 0, 64).wire_bytes(&c32), 84);
        let ecrc = cfg(|p| p.ecrc = true);
        assert_eq!(Tlp::completion(0, 64).wire_bytes(&ecrc), 88);
    }

    #[test]
    fn payload_is_carried_in_whole_dwords() {
        let c = cfg(|_| {});
        assert_eq!(Tlp::request(&c, TlpKind::MWr, 0, 1).wire_bytes(&c), 28);
        // 4 bytes starting at byte 2 touch two DWs.
        assert_eq!(Tlp::request(&c, TlpKind::MWr, 2, 4).wire_bytes(&c), 32);
    }

    #[test]
    fn alignment_pads_to_the_datapath_granularity() {
        let c = cfg(|p| p.tlp_align = Some(16));
        assert_eq!(Tlp::request(&c, TlpKind::MWr, 0, 256).wire_bytes(&c), 288);
        assert_eq!(Tlp::request(&c, TlpKind::MRd, 0, 256).wire_bytes(&c), 32);
    }

    #[test]
    fn flit_mode_drops_framing_and_adds_ohc_for_partial_dwords() {
        let c = cfg(|p| p.gen = Generation::Gen6);
        assert_eq!(Tlp::request(&c, TlpKind::MWr, 0, 64).wire_bytes(&c), 80);
        assert_eq!(Tlp::request(&c, TlpKind::MWr, 1, 64).wire_bytes(&c), 16 + 68 + 4);
        assert_eq!(Tlp::completion(0, 64).wire_bytes(&c), 76);
    }

    #[test]
    fn pcie_model_sizes() {
        let c = cfg(|p| {
            p.mode = Mode::PcieModel;
            p.tlp_align = None
        });
        assert_eq!(Tlp::request(&c, TlpKind::MWr, 0, 1).wire_bytes(&c), 25);
        assert_eq!(Tlp::request(&c, TlpKind::MRd, 0, 1).wire_bytes(&c), 24);
        assert_eq!(Tlp::completion(0, 1).wire_bytes(&c), 21);
        assert_eq!(Tlp::msi(&c).wire_bytes(&c), 28);
        let spec = cfg(|_| {});
        assert_eq!(Tlp::msi(&spec).wire_bytes(&spec), 24);
    }
}
