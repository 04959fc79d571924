//! Where a bandwidth test's simulation may stop. pcie-bench times millions of DMAs per bandwidth
//! point (8,388,608 in the paper's suite) so that its clock's resolution and the host's rare
//! delays average out; once the simulated machine is in its steady state, each further block of
//! DMAs takes the same time within the noise of the random latencies, and simulating all of them
//! only refines the last digits. The test is simulated block by block ([`BLOCK`] DMAs) after a
//! warm-up of two passes over its window (the caches and the IO-TLB reach the state the rest of
//! the run sees); when the blocks' mean duration is known within [`TOLERANCE`] (95 % confidence,
//! batch means) and shows no trend, the remaining DMAs are accounted at that mean.
//! `Simulator::run_every` simulates every DMA instead.

use super::workload::Workload;
use crate::time::Ps;

/// DMAs per block: far more than are in flight at once (DMA threads × read tags), so that
/// neighbouring blocks' durations are nearly independent samples of the rate. Even, so a
/// BW_RDWR block holds as many reads as writes.
pub(crate) const BLOCK: u64 = 8192;

/// The rate is known once its 95 % confidence interval is within this share of it: a tenth
/// of a percent, below the digits pcie-bench's figures are compared at.
const TOLERANCE: f64 = 1e-3;

/// Fewest blocks whose spread is trusted.
const MIN_BLOCKS: usize = 16;

/// The blocks of one bandwidth test seen so far.
pub(crate) struct Steady {
    /// DMAs before the first block that counts.
    warm: u64,
    /// The run's end at the last block boundary after the warm-up.
    last_end: Option<Ps>,
    /// Each counted block's duration, in picoseconds.
    durations: Vec<f64>,
}

impl Steady {
    pub(crate) fn new(w: &Workload) -> Steady {
        let pass = w.units().1;
        Steady {
            warm: (2 * pass).max(2 * BLOCK).next_multiple_of(BLOCK),
            last_end: None,
            durations: Vec::new(),
        }
    }

    /// `done` DMAs have been simulated and the last of them ends at `end`: the mean time per
    /// DMA from here on once the steady state is known, `None` while it is not.
    #[inline]
    pub(crate) fn observe(&mut self, done: u64, end: Ps) -> Option<f64> {
        if !done.is_multiple_of(BLOCK) || done < self.warm {
            return None;
        }
        if let Some(last) = self.last_end.replace(end) {
            self.durations.push(end.saturating_sub(last) as f64);
        }
        self.known().map(|per_block| per_block / BLOCK as f64)
    }

    /// The mean block duration when it is known within the tolerance and the first and second
    /// halves of the blocks agree within twice it (no trend left from the warm-up).
    fn known(&self) -> Option<f64> {
        let n = self.durations.len();
        if n < MIN_BLOCKS {
            return None;
        }
        let mean = |d: &[f64]| d.iter().sum::<f64>() / d.len() as f64;
        let m = mean(&self.durations);
        let var = self.durations.iter().map(|d| (d - m).powi(2)).sum::<f64>() / (n - 1) as f64;
        let half_width = 1.96 * (var / n as f64).sqrt();
        let (first, second) = self.durations.split_at(n / 2);
        let trend = (mean(first) - mean(second)).abs();
        (half_width <= TOLERANCE * m && trend <= 2.0 * TOLERANCE * m).then_some(m)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testbed::{CachePrep, TestOp};

    fn steady(window: u64) -> Steady {
        Steady::new(&Workload::new(TestOp::BwRead, 64, window, CachePrep::Cold, 1 << 23))
    }

    /// Feeds blocks of the given durations; returns after how many blocks the rate was known.
    fn known_after(s: &mut Steady, blocks: impl Iterator<Item = u64>) -> Option<(u64, f64)> {
        let mut end = 0;
        for (k, d) in blocks.enumerate() {
            end += d;
            let done = (k as u64 + 1) * BLOCK;
            if let Some(per) = s.observe(done, end) {
                return Some((done, per));
            }
        }
        None
    }

    #[test]
    fn a_steady_rate_is_known_after_the_warm_up_and_the_fewest_blocks() {
        let mut s = steady(8192);
        let (done, per) = known_after(&mut s, std::iter::repeat(8192 * 1000)).unwrap();
        // Two warm-up blocks, then a boundary, then MIN_BLOCKS durations.
        assert_eq!(done, (2 + MIN_BLOCKS as u64) * BLOCK);
        assert_eq!(per, 1000.0);
        // A 64 MB window is warmed by two passes of its 64 B units first.
        let mut s = steady(64 << 20);
        let (done, _) = known_after(&mut s, std::iter::repeat(8192 * 1000)).unwrap();
        assert_eq!(done, 2 * (1 << 20) + MIN_BLOCKS as u64 * BLOCK);
    }

    #[test]
    fn noise_and_trends_keep_it_simulating() {
        // Blocks alternating ±1 %: the mean's interval shrinks as 1/sqrt(n), under 0.1 % only
        // after about 400 blocks.
        let mut s = steady(8192);
        let noisy = (0..).map(|k| if k % 2 == 0 { 990_000 } else { 1_010_000 });
        let (done, per) = known_after(&mut s, noisy).unwrap();
        let blocks = done / BLOCK - 3;
        assert!((380..=420).contains(&blocks), "{blocks} blocks");
        assert!((per * BLOCK as f64 / 1e6 - 1.0).abs() < 1e-3);
        // A rate still drifting by 0.1 % per block never settles.
        let mut s = steady(8192);
        let drifting = (0..2000).map(|k| (1e6 * (1.0 + 1e-3 * k as f64)) as u64);
        assert_eq!(known_after(&mut s, drifting), None);
    }
}
