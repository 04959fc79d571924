//! What a link and its settings let 4 KiB DMAs carry, from pcie-model: writes through the
//! TLP/DLLP/flit efficiency of the link ([`pcie_model::stream`]), reads through the lower of
//! the link and the latency bound of the tags in flight ([`pcie_model::read_bound`]).
//!
//! The read round trip per request is pcie-bench's Broadwell Gen3 x8 host (lat_dma_sizes):
//! 546 ns for 64 B and about 19 ns for each further 64 B line (the root complex serves reads
//! line by line), so a 512 B request takes 679 ns.

use pcie_model::{read_bound, stream, Generation, LinkConfig, LinkParams, Op, Picos};
use std::cell::RefCell;
use std::collections::HashMap;

/// The transfer size every cost is priced at.
pub const DMA_BYTES: u32 = 4096;
/// The read round trip of a 64 B request and each further 64 B line, in ns.
pub const RTT_64B_NS: f64 = 546.0;
pub const RTT_PER_LINE_NS: f64 = 19.0;
/// The MPS a link is priced at when the function's is unknown (the common server setting),
/// and the MRRS (Device Control's value after reset, 512 B).
pub const DEFAULT_MPS: u32 = 256;
pub const DEFAULT_MRRS: u32 = 512;

/// A link's rate and width and the settings of the function using it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Setting {
    pub gts: f64,
    pub lanes: u32,
    pub mps: u32,
    pub mrrs: u32,
    pub tag_bits: u32,
}

/// `Gen4 x8`, or `20.0 GT/s x8` for a rate no generation uses.
pub fn rate_name(gts: Option<f64>, lanes: Option<u32>) -> String {
    let speed = match gts {
        Some(g) => Generation::from_gt_per_s(g).map_or(format!("{g:.1} GT/s"), |g| format!("Gen{g}")),
        None => "unknown speed".into(),
    };
    match lanes {
        Some(w) => format!("{speed} x{w}"),
        None => format!("{speed}, unknown width"),
    }
}

fn config(s: &Setting) -> Option<LinkConfig> {
    LinkConfig::new(&LinkParams {
        gen: Generation::from_gt_per_s(s.gts)?,
        lanes: s.lanes,
        mps: s.mps,
        mrrs: s.mrrs,
        tag_bits: s.tag_bits,
        ..LinkParams::default()
    })
    .ok()
}

/// The round trip of one read request of `bytes`.
pub fn read_rtt(bytes: u32) -> Picos {
    let lines = bytes.div_ceil(64).max(1) as f64;
    Picos::from_nanos(RTT_64B_NS + RTT_PER_LINE_NS * (lines - 1.0))
}

/// Payload Gb/s of a stream of 4 KiB DMA writes; `None` for a rate or width the model has no
/// link for (x12, an unknown speed).
pub fn writes(s: &Setting) -> Option<f64> {
    Some(stream(&config(s)?, Op::Wr, DMA_BYTES, 0).ok()?.payload.0)
}

/// Payload Gb/s of a stream of `size`-byte DMA reads: the link or the tags' latency bound,
/// whichever is lower.
pub fn reads(s: &Setting, size: u32) -> Option<f64> {
    let cfg = config(s)?;
    let request = size.min(cfg.mrrs);
    Some(read_bound(&cfg, size, 0, read_rtt(request), None).ok()?.bound.0)
}

/// Rate bits, lanes, MPS, MRRS, tag bits, and the read size (0 for writes).
type PriceKey = (u64, u32, u32, u32, u32, u32);

/// The model's figures, each computed once per setting and transfer: a host has a handful of
/// link settings but may have thousands of functions.
#[derive(Debug, Default)]
pub(crate) struct Prices {
    memo: RefCell<HashMap<PriceKey, Option<f64>>>,
}

impl Prices {
    fn get(&self, s: &Setting, size: u32, f: impl FnOnce() -> Option<f64>) -> Option<f64> {
        let key = (s.gts.to_bits(), s.lanes, s.mps, s.mrrs, s.tag_bits, size);
        if let Some(&v) = self.memo.borrow().get(&key) {
            return v;
        }
        let v = f();
        self.memo.borrow_mut().insert(key, v);
        v
    }

    pub fn writes(&self, s: &Setting) -> Option<f64> {
        self.get(s, 0, || writes(s))
    }

    pub fn reads(&self, s: &Setting, size: u32) -> Option<f64> {
        self.get(s, size, || reads(s, size))
    }
}

/// The share of `best` that `now` loses, in percent (0 when `now` is not lower).
pub fn lost_pct(now: f64, best: f64) -> f64 {
    if best > 0.0 && now < best {
        (best - now) / best * 100.0
    } else {
        0.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gen4x16() -> Setting {
        Setting {
            gts: 16.0,
            lanes: 16,
            mps: 256,
            mrrs: 512,
            tag_bits: 8,
        }
    }

    #[test]
    fn writes_are_the_models_stream() {
        let s = gen4x16();
        let cfg = config(&s).unwrap();
        assert_eq!(writes(&s), Some(stream(&cfg, Op::Wr, 4096, 0).unwrap().payload.0));
        assert_eq!(writes(&Setting { lanes: 12, ..s }), None);
        assert_eq!(writes(&Setting { gts: 20.0, ..s }), None);
        assert_eq!(rate_name(Some(16.0), Some(8)), "Gen4 x8");
        assert_eq!(rate_name(Some(20.0), None), "20.0 GT/s, unknown width");
    }

    #[test]
    fn few_tags_bound_reads_by_latency() {
        let s = gen4x16();
        // 32 tags of 128 B requests in 565 ns: 58 Gb/s, far below the link.
        let few = reads(
            &Setting {
                tag_bits: 5,
                mrrs: 128,
                ..s
            },
            4096,
        )
        .unwrap();
        assert!((few - 32.0 * 128.0 * 8.0 / 565.0).abs() < 1e-6, "{few}");
        let link = stream(&config(&s).unwrap(), Op::Rd, 4096, 0).unwrap().payload.0;
        assert_eq!(reads(&s, 4096), Some(link));
        assert_eq!(read_rtt(512), Picos::from_nanos(546.0 + 7.0 * 19.0));
        assert!((lost_pct(50.0, 200.0) - 75.0).abs() < 1e-12);
        assert_eq!(lost_pct(3.0, 2.0), 0.0);
    }
}
