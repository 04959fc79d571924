//! Physical layer: line rate after encoding, SKP ordered sets, and the flit container.

use crate::config::{LinkConfig, Mode};
use crate::generation::{Encoding, Generation};
use crate::units::Gbps;

/// A flit is 256 bytes on the wire ...
pub const FLIT_BYTES: f64 = 256.0;
/// ... of which 236 carry TLP bytes (the rest: 6 B DLP, 8 B CRC, 6 B FEC).
pub const FLIT_TLP_BYTES: f64 = 236.0;

/// 8b/10b: a 4-symbol SKP ordered set per lane at most every 1538 symbol times (SRNS).
const SKP_8B10B_SYMBOLS: f64 = 4.0;
const SKP_8B10B_INTERVAL: f64 = 1538.0;
/// 128b/130b: one 16-symbol SKP block per lane after at most 375 data blocks (SRNS) ...
const SKP_BLOCK_INTERVAL: f64 = 375.0;
const BLOCK_SYMBOLS: f64 = 16.0;
/// ... and the 4-byte EDS token that must end the data stream before it.
const EDS_BYTES: f64 = 4.0;

/// Line rate of the whole link in one direction after line encoding.
pub fn raw(cfg: &LinkConfig) -> Gbps {
    let efficiency = match (cfg.mode, cfg.gen.encoding()) {
        // pcie-model counts 242 of every 256 flit bytes (TLP + DLP) as the encoding.
        (Mode::PcieModel, Encoding::B1b1b) => 242.0 / 256.0,
        (_, e) => e.efficiency(),
    };
    raw_of(cfg.gen, cfg.lanes, efficiency)
}

fn raw_of(gen: Generation, lanes: u32, efficiency: f64) -> Gbps {
    Gbps(gen.gt_per_s() * efficiency * lanes as f64)
}

/// Fraction of symbol times not taken by SKP ordered sets (clock compensation).
pub fn skp_keep(cfg: &LinkConfig) -> f64 {
    match cfg.gen.encoding() {
        Encoding::B8b10b => 1.0 - SKP_8B10B_SYMBOLS / SKP_8B10B_INTERVAL,
        // 1b/1b flit mode schedules SKP at the same block interval (an assumption, see docs/model.md).
        Encoding::B128b130b | Encoding::B1b1b => {
            let data = SKP_BLOCK_INTERVAL * BLOCK_SYMBOLS - EDS_BYTES / cfg.lanes as f64;
            data / ((SKP_BLOCK_INTERVAL + 1.0) * BLOCK_SYMBOLS)
        }
    }
}

/// Bandwidth left in one direction for link-layer packets (TLPs, and DLLPs outside flit mode):
/// the raw rate minus SKP, and in flit mode minus the flit's DLP, CRC and FEC bytes.
pub fn packet_capacity(cfg: &LinkConfig) -> Gbps {
    let flit = if cfg.flit { FLIT_TLP_BYTES / FLIT_BYTES } else { 1.0 };
    Gbps(raw(cfg).0 * skp_keep(cfg) * flit)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{LinkParams, Mode};

    fn cfg(gen: Generation, lanes: u32) -> LinkConfig {
        LinkConfig::new(&LinkParams {
            gen,
            lanes,
            ..LinkParams::default()
        })
        .unwrap()
    }

    #[test]
    fn raw_rates_match_the_generation_table() {
        assert!((raw(&cfg(Generation::Gen3, 8)).0 - 63.0154).abs() < 1e-3);
        assert!((raw(&cfg(Generation::Gen1, 16)).0 - 32.0).abs() < 1e-9);
        assert!((raw(&cfg(Generation::Gen6, 16)).0 - 1024.0).abs() < 1e-9);
        // x16 per direction in GB/s: 15.75 (Gen3), 118 (Gen6 after flit overhead).
        assert!((raw(&cfg(Generation::Gen3, 16)).0 / 8.0 - 15.75).abs() < 0.01);
        let gen6 = cfg(Generation::Gen6, 16);
        assert!((raw(&gen6).0 * FLIT_TLP_BYTES / FLIT_BYTES / 8.0 - 118.0).abs() < 1e-9);
    }

    #[test]
    fn pcie_model_counts_gen6_as_242_of_256() {
        let p = LinkParams {
            gen: Generation::Gen6,
            lanes: 1,
            mode: Mode::PcieModel,
            ..LinkParams::default()
        };
        assert!((raw(&LinkConfig::new(&p).unwrap()).0 - 64.0 * 242.0 / 256.0).abs() < 1e-9);
    }

    #[test]
    fn skp_costs_about_a_quarter_percent() {
        for gen in [Generation::Gen2, Generation::Gen3, Generation::Gen6] {
            let loss = 1.0 - skp_keep(&cfg(gen, 8));
            assert!(loss > 0.0025 && loss < 0.0028, "{gen:?}: {loss}");
        }
    }
}
