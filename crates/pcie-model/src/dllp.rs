//! Data link layer packets outside flit mode: how often Ack and UpdateFC DLLPs are sent.
//!
//! The spec's Ack latency tables (Base spec r5.0 Tables 3-7/3-8/3-9) and UpdateFC guidance
//! tables (2-46/2-47/2-48) follow one formula, in symbol times:
//! `(MPS + 28) * AckFactor / width + InternalDelay`, rounded down.

use crate::config::LinkConfig;
use crate::generation::Generation;

/// A DLLP on the wire: 2 B framing + 4 B payload + 2 B CRC.
pub const DLLP_BYTES: f64 = 8.0;

/// AckFactor ×10 (so the arithmetic stays exact): more lanes, more TLPs per Ack.
fn ack_factor_x10(lanes: u32, mps: u32) -> u32 {
    match (lanes, mps <= 256) {
        (1..=4, true) => 14,
        (1..=4, false) => 10,
        (8, true) => 25,
        (8, false) => 10,
        (_, true) => 30,
        (_, false) => 20,
    }
}

fn internal_delay(gen: Generation) -> u32 {
    match gen {
        Generation::Gen1 => 19,
        Generation::Gen2 => 70,
        _ => 115,
    }
}

/// The spec's Ack latency limit in symbol times (also the UpdateFC interval it recommends).
pub fn ack_limit(gen: Generation, lanes: u32, mps: u32) -> u32 {
    let scaled = (mps + 28) * ack_factor_x10(lanes, mps) + internal_delay(gen) * 10 * lanes;
    scaled / (10 * lanes)
}

/// UpdateFC interval in symbol times; the guidance tables equal the Ack tables.
pub fn fc_update_interval(gen: Generation, lanes: u32, mps: u32) -> u32 {
    ack_limit(gen, lanes, mps)
}

/// Link bytes in one direction after which the receiver owes one Ack (or one UpdateFC per
/// credit type) in the other direction: the limit in symbol times times the lane count.
pub fn bytes_per_ack(cfg: &LinkConfig) -> f64 {
    ack_limit(cfg.gen, cfg.lanes, cfg.mps) as f64 * cfg.lanes as f64
}

/// See [`bytes_per_ack`].
pub fn bytes_per_fc_update(cfg: &LinkConfig) -> f64 {
    fc_update_interval(cfg.gen, cfg.lanes, cfg.mps) as f64 * cfg.lanes as f64
}

/// pcie-model's (Ack, UpdateFC) table cells: the spec formula plus its two typos, and the
/// Gen3 tables reused for every later generation (which the formula already does).
pub fn pcie_model_limits(gen: Generation, lanes: u32, mps: u32) -> (u32, u32) {
    let (mut ack, mut fc) = (ack_limit(gen, lanes, mps), fc_update_interval(gen, lanes, mps));
    match (gen, lanes, mps) {
        (Generation::Gen1, 32, 2048) => fc = 248,
        (Generation::Gen2, 32, 4096) => ack = 237,
        _ => {}
    }
    (ack, fc)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_spec_table_cells() {
        // Cells of the 8.0 GT/s table (r5.0 Table 3-9) and the 2.5 GT/s table.
        assert_eq!(ack_limit(Generation::Gen3, 8, 256), 203);
        assert_eq!(ack_limit(Generation::Gen3, 8, 128), 163);
        assert_eq!(ack_limit(Generation::Gen3, 8, 512), 182);
        assert_eq!(ack_limit(Generation::Gen3, 1, 4096), 4239);
        assert_eq!(ack_limit(Generation::Gen3, 32, 128), 129);
        assert_eq!(ack_limit(Generation::Gen1, 1, 128), 237);
        assert_eq!(ack_limit(Generation::Gen1, 32, 2048), 148);
        assert_eq!(ack_limit(Generation::Gen2, 32, 4096), 327);
        assert_eq!(ack_limit(Generation::Gen2, 16, 256), 123);
        assert_eq!(fc_update_interval(Generation::Gen5, 16, 1024), 246);
    }
}
