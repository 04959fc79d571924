//! Ethernet line rate as the host sees it: payload bytes per second once preamble, SFD,
//! inter-frame gap and the (stripped) FCS are taken out.

use crate::config::Mode;
use crate::error::ConfigError;
use crate::units::Gbps;
use serde::Serialize;
use std::str::FromStr;

pub const ETH_SPEEDS: [u32; 6] = [10, 25, 40, 100, 200, 400];
/// Smallest and largest (jumbo) frame, FCS included.
pub const MIN_FRAME: u32 = 64;
pub const MAX_FRAME: u32 = 9216;
/// Preamble (7) + SFD (1) before a frame, inter-frame gap (12) after it.
const PREAMBLE_SFD: u32 = 8;
const IFG: u32 = 12;
const FCS: u32 = 4;
/// pcie-model counts a VLAN-tagged header and pads the payload to its 42 B minimum.
const COMPAT_VLAN_HDR: u32 = 18;
const COMPAT_MIN_PAYLOAD: u32 = 42;

/// An Ethernet link speed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Ethernet {
    pub gbps: u32,
}

impl FromStr for Ethernet {
    type Err = ConfigError;
    /// Accepts `40`, `40g`, `40G` and `40GbE`.
    fn from_str(s: &str) -> Result<Ethernet, ConfigError> {
        let digits = s.trim_end_matches("GbE").trim_end_matches(['g', 'G']);
        match digits.parse::<u32>() {
            Ok(g) if ETH_SPEEDS.contains(&g) => Ok(Ethernet { gbps: g }),
            _ => Err(ConfigError::one_of("eth", s, &ETH_SPEEDS)),
        }
    }
}

impl Ethernet {
    fn rate(self) -> f64 {
        self.gbps as f64
    }

    /// Host payload rate at line rate for frames of `frame` bytes (FCS included, then
    /// stripped by the NIC).
    pub fn host_rate(self, mode: Mode, frame: u32) -> Gbps {
        match mode {
            Mode::Spec => {
                let wire = frame.max(MIN_FRAME) + PREAMBLE_SFD + IFG;
                Gbps(self.rate() * (frame - FCS) as f64 / wire as f64)
            }
            // pcie-model's nic_bw.py passes the FCS-stripped size where eth.py expects a whole
            // frame, so header and FCS are taken out of it a second time.
            Mode::PcieModel => self.compat_bps(frame - FCS),
        }
    }

    /// The line a DMA of `size` bytes is compared with: frames whose FCS-stripped bytes are
    /// `size` (pcie-model: frames of `size` bytes). `None` below the minimum frame.
    pub fn line_for_transfer(self, mode: Mode, size: u32) -> Option<Gbps> {
        match mode {
            Mode::Spec => (size + FCS >= MIN_FRAME).then(|| self.host_rate(mode, size + FCS)),
            Mode::PcieModel => (size >= MIN_FRAME).then(|| self.compat_bps(size)),
        }
    }

    /// pcie-model's `eth.Cfg.bps_ex`.
    fn compat_bps(self, frame: u32) -> Gbps {
        let payload = frame.saturating_sub(COMPAT_VLAN_HDR + FCS).max(COMPAT_MIN_PAYLOAD);
        let wire = PREAMBLE_SFD + COMPAT_VLAN_HDR + payload + FCS + IFG;
        Gbps(self.rate() * frame as f64 / wire as f64)
    }
}

/// Check a frame size.
pub fn check_frame(frame: u32) -> Result<(), ConfigError> {
    if (MIN_FRAME..=MAX_FRAME).contains(&frame) {
        Ok(())
    } else {
        Err(ConfigError::new(
            "sizes",
            frame,
            format!("Ethernet frames are {MIN_FRAME} to {MAX_FRAME} bytes (FCS included)"),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const E40: Ethernet = Ethernet { gbps: 40 };

    #[test]
    fn forty_gig_at_64_byte_frames() {
        // 60 B delivered per 84 B on the wire.
        assert!((E40.host_rate(Mode::Spec, 64).0 - 40.0 * 60.0 / 84.0).abs() < 1e-12);
        assert!((E40.host_rate(Mode::PcieModel, 64).0 - 28.571).abs() < 1e-3);
        assert!((E40.host_rate(Mode::Spec, 1518).0 - 40.0 * 1514.0 / 1538.0).abs() < 1e-12);
    }

    #[test]
    fn pcie_model_ethernet_column() {
        // bw_calc.dat: "40G Ethernet BW" 30.48 at 64 B.
        assert!((E40.line_for_transfer(Mode::PcieModel, 64).unwrap().0 - 30.48).abs() < 0.005);
        assert!(E40.line_for_transfer(Mode::PcieModel, 63).is_none());
        assert!(E40.line_for_transfer(Mode::Spec, 59).is_none());
        assert!(E40.line_for_transfer(Mode::Spec, 60).is_some());
    }

    #[test]
    fn parses_speeds() {
        assert_eq!("100G".parse::<Ethernet>().unwrap().gbps, 100);
        assert_eq!("25GbE".parse::<Ethernet>().unwrap().gbps, 25);
        assert_eq!(
            "33".parse::<Ethernet>().unwrap_err().to_string(),
            "eth 33: must be one of 10, 25, 40, 100, 200, 400"
        );
        assert!(check_frame(63).is_err());
        assert!(check_frame(1518).is_ok());
    }
}
