//! How a transfer is cut into TLPs: writes at MPS, read requests at MRRS, completions at RCB
//! or MPS. No piece crosses a 4 KB boundary (every cut size divides 4096).

use crate::config::{CplSplit, LinkConfig, Mode};

/// `(addr, len)` pieces of `[addr, addr + len)` cut at every multiple of `boundary`, a power
/// of two (as MPS, MRRS and RCB are): the next cut is found with a mask, not a division, since
/// the simulator cuts every DMA it runs.
pub fn aligned_chunks(addr: u64, len: u32, boundary: u32) -> impl Iterator<Item = (u64, u32)> {
    debug_assert!(boundary.is_power_of_two(), "{boundary}");
    let end = addr + len as u64;
    let low = boundary as u64 - 1;
    let mut at = addr;
    std::iter::from_fn(move || {
        if at >= end {
            return None;
        }
        let next = ((at | low) + 1).min(end);
        let piece = (at, (next - at) as u32);
        at = next;
        Some(piece)
    })
}

/// Memory write payloads of a DMA write.
pub fn writes(cfg: &LinkConfig, addr: u64, len: u32) -> impl Iterator<Item = (u64, u32)> {
    aligned_chunks(addr, len, cfg.mps)
}

/// Read requests of a DMA read.
pub fn read_requests(cfg: &LinkConfig, addr: u64, len: u32) -> impl Iterator<Item = (u64, u32)> {
    aligned_chunks(addr, len, cfg.mrrs)
}

/// All completions of a DMA read: per request in spec mode; pcie-model cuts the whole transfer
/// (from address 0) at MPS or RCB regardless of the requests.
pub fn read_completions(cfg: &LinkConfig, addr: u64, len: u32) -> Vec<(u64, u32)> {
    if cfg.mode == Mode::PcieModel {
        let cut = match cfg.cpl_split {
            CplSplit::Mps => cfg.mps,
            CplSplit::Rcb => cfg.rcb,
        };
        return aligned_chunks(0, len, cut).collect();
    }
    read_requests(cfg, addr, len)
        .flat_map(|(a, l)| completions(cfg, a, l))
        .collect()
}

/// Completions answering one read request: at RCB boundaries, or as large as MPS allows with
/// every completion but the last ending on an RCB boundary.
pub fn completions(cfg: &LinkConfig, addr: u64, len: u32) -> Completions {
    Completions {
        at: addr,
        end: addr + len as u64,
        rcb: cfg.rcb as u64,
        mps: cfg.mps as u64,
        split: cfg.cpl_split,
    }
}

/// Iterator over the `(addr, len)` completions of one read request (no allocation: the
/// simulator calls this for every request).
#[derive(Debug, Clone)]
pub struct Completions {
    at: u64,
    end: u64,
    rcb: u64,
    mps: u64,
    split: CplSplit,
}

impl Iterator for Completions {
    type Item = (u64, u32);

    fn next(&mut self) -> Option<(u64, u32)> {
        if self.at >= self.end {
            return None;
        }
        // RCB is a power of two: masks instead of divisions.
        let rcb_low = self.rcb - 1;
        let next = match self.split {
            CplSplit::Rcb => (self.at | rcb_low) + 1,
            CplSplit::Mps => match (self.at + self.mps) & !rcb_low {
                n if n > self.at => n,
                _ => self.at + self.mps, // RCB larger than MPS: MPS rules
            },
        }
        .min(self.end);
        let piece = (self.at, (next - self.at) as u32);
        self.at = next;
        Some(piece)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::LinkParams;
    use proptest::prelude::*;

    fn cfg(mps: u32, mrrs: u32, rcb: u32, cpl_split: CplSplit) -> LinkConfig {
        LinkConfig::new(&LinkParams {
            mps,
            mrrs,
            rcb,
            cpl_split,
            ..LinkParams::default()
        })
        .unwrap()
    }

    #[test]
    fn rcb_example_from_the_spec_notes() {
        // RCB 128: a 200 B read at 0x60 completes as 32 + 128 + 40 B.
        let c = cfg(256, 512, 128, CplSplit::Rcb);
        let lens: Vec<u32> = completions(&c, 0x60, 200).map(|p| p.1).collect();
        assert_eq!(lens, vec![32, 128, 40]);
    }

    #[test]
    fn mps_completions_end_on_rcb_boundaries() {
        let c = cfg(256, 4096, 64, CplSplit::Mps);
        let pieces: Vec<(u64, u32)> = completions(&c, 32, 600).collect();
        assert_eq!(pieces, vec![(32, 224), (256, 256), (512, 120)]);
    }

    #[test]
    fn completions_are_cut_per_request_in_spec_mode() {
        // MRRS 128 < MPS 256: every 128 B request gets its own completion.
        let c = cfg(256, 128, 64, CplSplit::Mps);
        assert_eq!(read_completions(&c, 0, 1024).len(), 8);
        let compat = LinkConfig::new(&LinkParams {
            mrrs: 128,
            mode: Mode::PcieModel,
            ..LinkParams::default()
        })
        .unwrap();
        assert_eq!(read_completions(&compat, 0, 1024).len(), 4);
    }

    #[test]
    fn writes_never_cross_mps_or_4k() {
        let c = cfg(512, 512, 64, CplSplit::Mps);
        let lens: Vec<u32> = writes(&c, 4000, 200).map(|p| p.1).collect();
        assert_eq!(lens, vec![96, 104]);
    }

    proptest! {
        #[test]
        fn pieces_tile_the_transfer(addr in 0u64..8192, len in 1u32..20000, mps_i in 0usize..6, rcb_i in 0usize..2, by_rcb: bool) {
            let mps = [128, 256, 512, 1024, 2048, 4096][mps_i];
            let split = if by_rcb { CplSplit::Rcb } else { CplSplit::Mps };
            let c = cfg(mps, mps, [64, 128][rcb_i], split);
            for pieces in [writes(&c, addr, len).collect::<Vec<_>>(), read_completions(&c, addr, len)] {
                let mut at = addr;
                for (a, l) in pieces {
                    prop_assert_eq!(a, at);
                    prop_assert!(l >= 1 && l <= mps);
                    prop_assert_eq!(a / 4096, (a + l as u64 - 1) / 4096, "crosses 4 KB");
                    at += l as u64;
                }
                prop_assert_eq!(at, addr + len as u64);
            }
        }
    }
}
