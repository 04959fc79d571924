//! How a transfer is cut into TLPs: writes at MPS, read requests at MRRS, completions at RCB
//! or MPS. No piece crosses a 4 KB boundary (every cut size divides 4096).
//!
//! The simulator walks the pieces one by one (`writes`, `read_requests`, `completions`). The
//! model only needs how many pieces of each shape there are, and a cut repeats: a head piece up
//! to the first cut, whole pieces of the cut size, a tail. So it counts them in [`Run`]s, in
//! constant time whatever the transfer size.

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

/// `count` consecutive pieces of `len` bytes, the first at `addr`. Whenever `count > 1`, `len`
/// is a cut size (a multiple of 4), so every piece of a run starts at the same offset in its
/// DW and occupies the link alike: the first stands for all of them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Run {
    pub addr: u64,
    pub len: u32,
    pub count: u64,
}

/// At most three runs: a head, whole pieces, a tail (empty runs are skipped).
#[derive(Debug, Clone)]
pub struct Runs(std::array::IntoIter<Run, 3>);

const NONE: Run = Run {
    addr: 0,
    len: 0,
    count: 0,
};

impl Runs {
    /// `head`, then `[at, end)` cut into as many whole `piece`-byte pieces as fit and the rest.
    fn new(head: Run, at: u64, end: u64, piece: u32) -> Runs {
        let whole = (end - at) / piece as u64;
        let tail_at = at + whole * piece as u64;
        let tail = Run {
            addr: tail_at,
            len: (end - tail_at) as u32,
            count: u64::from(end > tail_at),
        };
        let body = Run {
            addr: at,
            len: piece,
            count: whole,
        };
        Runs([head, body, tail].into_iter())
    }

    fn one(run: Run) -> Runs {
        Runs([run, NONE, NONE].into_iter())
    }
}

impl Iterator for Runs {
    type Item = Run;

    fn next(&mut self) -> Option<Run> {
        self.0.find(|r| r.count > 0)
    }
}

/// [`aligned_chunks`] as runs: the piece up to the first multiple of `boundary` (none when
/// `addr` is on one), whole `boundary`-sized pieces, the rest.
fn aligned_runs(addr: u64, len: u32, boundary: u32) -> Runs {
    let end = addr + len as u64;
    let low = boundary as u64 - 1;
    let head_end = if addr & low == 0 {
        addr
    } else {
        ((addr | low) + 1).min(end)
    };
    let head = Run {
        addr,
        len: (head_end - addr) as u32,
        count: u64::from(head_end > addr),
    };
    Runs::new(head, head_end, end, boundary)
}

/// [`writes`] as runs.
pub fn write_runs(cfg: &LinkConfig, addr: u64, len: u32) -> Runs {
    aligned_runs(addr, len, cfg.mps)
}

/// [`read_requests`] as runs.
pub fn read_request_runs(cfg: &LinkConfig, addr: u64, len: u32) -> Runs {
    aligned_runs(addr, len, cfg.mrrs)
}

/// All completions of a DMA read, as runs (a completion shape may appear in several, once per
/// request shape): per request in spec mode; pcie-model cuts the whole transfer (from address
/// 0) at MPS or RCB regardless of the requests.
pub fn read_completion_runs(cfg: &LinkConfig, addr: u64, len: u32) -> impl Iterator<Item = Run> + '_ {
    let requests = match cfg.mode {
        Mode::PcieModel => Runs::one(Run { addr: 0, len, count: 1 }),
        Mode::Spec => read_request_runs(cfg, addr, len),
    };
    // Requests of one run start a multiple of MRRS apart, and MRRS is a multiple of RCB: their
    // completions are cut alike.
    requests.flat_map(move |r| {
        completion_runs(cfg, r.addr, r.len).map(move |c| Run {
            count: c.count * r.count,
            ..c
        })
    })
}

/// [`completions`] of one request as runs (pcie-model: of the whole transfer).
fn completion_runs(cfg: &LinkConfig, addr: u64, len: u32) -> Runs {
    match (cfg.mode, cfg.cpl_split) {
        (Mode::PcieModel, CplSplit::Mps) => aligned_runs(addr, len, cfg.mps),
        (_, CplSplit::Rcb) => aligned_runs(addr, len, cfg.rcb),
        (Mode::Spec, CplSplit::Mps) => {
            // The first completion ends on an RCB boundary; from there every MPS step does too
            // (spec RCBs, 64 and 128, never exceed the smallest MPS, 128).
            debug_assert!(cfg.rcb <= cfg.mps, "RCB {} > MPS {}", cfg.rcb, cfg.mps);
            let first = completions(cfg, addr, len).next().map_or(0, |(_, l)| l);
            let head = Run {
                addr,
                len: first,
                count: u64::from(first > 0),
            };
            Runs::new(head, addr + first as u64, addr + len as u64, cfg.mps)
        }
    }
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

    /// The pieces runs stand for, in order.
    fn expand(runs: impl Iterator<Item = Run>) -> Vec<(u64, u32)> {
        runs.flat_map(|r| (0..r.count).map(move |i| (r.addr + i * r.len as u64, r.len)))
            .collect()
    }

    fn completion_count(c: &LinkConfig, addr: u64, len: u32) -> u64 {
        read_completion_runs(c, addr, len).map(|r| r.count).sum()
    }

    #[test]
    fn completions_are_cut_per_request_in_spec_mode() {
        // MRRS 128 < MPS 256: every 128 B request gets its own completion.
        let c = cfg(256, 128, 64, CplSplit::Mps);
        assert_eq!(completion_count(&c, 0, 1024), 8);
        let compat = LinkConfig::new(&LinkParams {
            mrrs: 128,
            mode: Mode::PcieModel,
            ..LinkParams::default()
        })
        .unwrap();
        assert_eq!(completion_count(&compat, 0, 1024), 4);
    }

    #[test]
    fn runs_count_head_whole_pieces_and_tail() {
        let c = cfg(256, 512, 64, CplSplit::Mps);
        let runs: Vec<Run> = write_runs(&c, 100, 1000).collect();
        let run = |addr, len, count| Run { addr, len, count };
        assert_eq!(runs, vec![run(100, 156, 1), run(256, 256, 3), run(1024, 76, 1)]);
        // 1 MiB of reads: 2048 requests of 512 B, each answered by a first 256 B completion and
        // one more.
        let cpls: Vec<Run> = read_completion_runs(&c, 0, 1 << 20).collect();
        assert_eq!(cpls, vec![run(0, 256, 2048), run(256, 256, 2048)]);
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
            let mut cpls = expand(read_completion_runs(&c, addr, len));
            cpls.sort_unstable();
            for pieces in [writes(&c, addr, len).collect::<Vec<_>>(), cpls] {
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

        #[test]
        fn runs_stand_for_the_pieces(addr in 0u64..8192, len in 1u32..40000, mps_i in 0usize..6, mrrs_i in 0usize..6, rcb_i in 0usize..4, by_rcb: bool, compat: bool) {
            let sizes = [128, 256, 512, 1024, 2048, 4096];
            let c = LinkConfig::new(&LinkParams {
                mps: sizes[mps_i],
                mrrs: sizes[mrrs_i],
                rcb: [64, 128, 256, 512][if compat { rcb_i } else { rcb_i % 2 }],
                cpl_split: if by_rcb { CplSplit::Rcb } else { CplSplit::Mps },
                mode: if compat { Mode::PcieModel } else { Mode::Spec },
                ..LinkParams::default()
            })
            .unwrap();
            prop_assert_eq!(expand(write_runs(&c, addr, len)), writes(&c, addr, len).collect::<Vec<_>>());
            prop_assert_eq!(expand(read_request_runs(&c, addr, len)), read_requests(&c, addr, len).collect::<Vec<_>>());
            if !compat {
                for (a, l) in read_requests(&c, addr, len) {
                    prop_assert_eq!(expand(completion_runs(&c, a, l)), completions(&c, a, l).collect::<Vec<_>>());
                }
            }
        }
    }
}
