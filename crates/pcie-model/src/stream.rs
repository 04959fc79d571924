//! Streaming DMA: a device repeating reads, writes or alternating reads and writes of one size.

use crate::config::{LinkConfig, Mode};
use crate::error::ConfigError;
use crate::throughput::{solve, Throughput};
use crate::traffic::{Initiator, Traffic};
use serde::Serialize;
use std::fmt;
use std::str::FromStr;

/// Largest transfer the model accepts (16 MiB); DMA transfers are far smaller.
pub const MAX_TRANSFER: u32 = 16 << 20;

/// A streaming DMA operation, as the device issues it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Op {
    /// Device writes host memory (pcie-bench BW_WR).
    Wr,
    /// Device reads host memory (BW_RD).
    Rd,
    /// One read and one write of the size per unit (BW_RDWR); bandwidth is per direction.
    RdWr,
}

impl Op {
    pub const ALL: [Op; 3] = [Op::Wr, Op::Rd, Op::RdWr];

    pub fn name(self) -> &'static str {
        match self {
            Op::Wr => "wr",
            Op::Rd => "rd",
            Op::RdWr => "rdwr",
        }
    }

    /// The name in headings and explanations.
    pub fn title(self) -> &'static str {
        match self {
            Op::Wr => "Write",
            Op::Rd => "Read",
            Op::RdWr => "Read/Write",
        }
    }
}

impl fmt::Display for Op {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Op {
    type Err = ConfigError;
    fn from_str(s: &str) -> Result<Op, ConfigError> {
        Op::ALL
            .into_iter()
            .find(|o| o.name() == s)
            .ok_or_else(|| ConfigError::one_of("op", s, &Op::ALL))
    }
}

/// Check a transfer size and its start offset (bytes past a 4 KB-aligned address).
pub fn check_transfer(cfg: &LinkConfig, size: u32, offset: u32) -> Result<(), ConfigError> {
    if size == 0 || size > MAX_TRANSFER {
        return Err(ConfigError::new(
            "sizes",
            size,
            format!("must be between 1 and {MAX_TRANSFER}"),
        ));
    }
    if offset >= 4096 {
        return Err(ConfigError::new("offset", offset, "must be between 0 and 4095"));
    }
    if offset != 0 && cfg.mode == Mode::PcieModel {
        return Err(ConfigError::new(
            "offset",
            offset,
            "pcie-model assumes aligned transfers; use 0 with --compat pcie-model",
        ));
    }
    Ok(())
}

/// The TLPs of one unit of `op`.
pub fn traffic(cfg: &LinkConfig, op: Op, size: u32, offset: u32) -> Traffic {
    let mut t = Traffic::default();
    let addr = offset as u64;
    if matches!(op, Op::Wr | Op::RdWr) {
        t.write(cfg, "DMA write", Initiator::Device, addr, size, 1.0);
    }
    if matches!(op, Op::Rd | Op::RdWr) {
        t.read(cfg, "DMA read", Initiator::Device, addr, size, 1.0);
    }
    t
}

/// Throughput of a stream of `op` transfers of `size` bytes starting `offset` bytes into a page.
pub fn stream(cfg: &LinkConfig, op: Op, size: u32, offset: u32) -> Result<Throughput, ConfigError> {
    check_transfer(cfg, size, offset)?;
    Ok(solve(cfg, &traffic(cfg, op, size, offset), size as f64))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::LinkParams;
    use crate::traffic::Dir;

    fn spec() -> LinkConfig {
        LinkConfig::new(&LinkParams::default()).unwrap()
    }

    #[test]
    fn reads_are_limited_by_completions_coming_down() {
        let r = stream(&spec(), Op::Rd, 2048, 0).unwrap();
        assert_eq!(r.bottleneck, Dir::Down);
        assert!(r.up.utilisation < 0.2);
    }

    #[test]
    fn offsets_add_tlps() {
        let aligned = stream(&spec(), Op::Wr, 256, 0).unwrap();
        let shifted = stream(&spec(), Op::Wr, 256, 32).unwrap();
        assert!(shifted.payload.0 < aligned.payload.0 * 0.95);
    }

    #[test]
    fn bad_transfers_are_refused() {
        assert_eq!(stream(&spec(), Op::Wr, 0, 0).unwrap_err().param, "sizes");
        assert_eq!(stream(&spec(), Op::Wr, 64, 4096).unwrap_err().param, "offset");
        let compat = LinkConfig::new(&LinkParams {
            mode: Mode::PcieModel,
            ..LinkParams::default()
        })
        .unwrap();
        assert_eq!(stream(&compat, Op::Rd, 64, 8).unwrap_err().param, "offset");
        assert_eq!(
            "copy".parse::<Op>().unwrap_err().to_string(),
            "op copy: must be one of wr, rd, rdwr"
        );
    }
}
