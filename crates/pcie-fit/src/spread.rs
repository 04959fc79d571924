//! What of a bandwidth measurement the fitted host cannot follow. The simulated host's rates
//! depend on a test's parameters only; a measurement that jumps between neighbouring rows (the
//! Xeon E3-1226 v3's BW_WR: 17.3, 10.7 and 18.0 Gb/s at 63, 64 and 65 B) holds a spread of the
//! host's state from one run to the next, which no mechanism of size or window can follow. The
//! report says how large it is: measured over fitted, row by row.

use super::score::GroupScore;
use pcie_bench::params::TestKind;
use serde::Serialize;

/// One test kind of one bandwidth group: measured over simulated, in the table's row order.
#[derive(Debug, Clone, Serialize)]
pub struct Spread {
    pub run: String,
    pub base: String,
    pub kind: TestKind,
    pub rows: usize,
    /// The median ratio (1: the fitted level is the measurement's) ...
    pub median_ratio: f64,
    /// ... the lowest and the highest, with their transfer sizes.
    pub lowest: (u32, f64),
    pub highest: (u32, f64),
    /// Rows more than 10 % off the fitted host.
    pub beyond_10pct: usize,
    /// The median change of the ratio from one row to the next, in percent: how far the
    /// measurement moves between neighbours beyond what the fitted host moves.
    pub neighbour_pct: f64,
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    match v.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

/// The spread of every bandwidth group and kind the fitted host was scored on.
pub fn spreads(after: &[GroupScore]) -> Vec<Spread> {
    let mut out = Vec::new();
    for g in after.iter().filter(|g| g.slices.iter().any(|s| s.bw.points > 0)) {
        let mut kinds: Vec<TestKind> = g.rows.iter().map(|r| r.key.test).collect();
        kinds.dedup();
        for kind in kinds {
            let rows: Vec<(u32, f64)> = g
                .rows
                .iter()
                .filter(|r| r.key.test == kind && r.sim > 0.0 && r.measured > 0.0)
                .map(|r| (r.key.size, r.measured / r.sim))
                .collect();
            let (Some(&lowest), Some(&highest)) = (
                rows.iter().min_by(|a, b| a.1.total_cmp(&b.1)),
                rows.iter().max_by(|a, b| a.1.total_cmp(&b.1)),
            ) else {
                continue;
            };
            let steps = rows
                .windows(2)
                .map(|w| ((w[1].1 / w[0].1).max(w[0].1 / w[1].1) - 1.0) * 100.0);
            out.push(Spread {
                run: g.run.clone(),
                base: g.base.clone(),
                kind,
                rows: rows.len(),
                median_ratio: median(rows.iter().map(|r| r.1).collect()),
                lowest,
                highest,
                beyond_10pct: rows.iter().filter(|r| (r.1 - 1.0).abs() > 0.1).count(),
                neighbour_pct: median(steps.collect()),
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::score::{RowScore, SliceErrors};
    use pcie_bench::compare::ErrorStats;
    use pcie_bench::params::{sample, CacheState, Iommu};

    fn group(rows: &[(u32, f64, f64)]) -> GroupScore {
        let e = ErrorStats {
            points: rows.len(),
            ..ErrorStats::default()
        };
        GroupScore {
            run: "r".into(),
            base: "bw_dma_sz_sweep".into(),
            iommu: Iommu::Off,
            slices: vec![SliceErrors {
                kind: TestKind::BwWr,
                cache: CacheState::HWarm,
                median: e,
                avg: e,
                min: e,
                p95: e,
                bw: e,
            }],
            cdfs: vec![],
            rows: rows
                .iter()
                .map(|&(size, sim, measured)| RowScore {
                    key: (&pcie_bench::params::TestParams {
                        size,
                        ..sample(TestKind::BwWr, 1)
                    })
                        .into(),
                    sim,
                    measured,
                })
                .collect(),
        }
    }

    #[test]
    fn a_measurement_that_jumps_between_neighbours_shows_its_spread() {
        // The E3's 63, 64 and 65 B writes against a host that writes them alike.
        let s = &spreads(&[group(&[(63, 10.0, 17.3), (64, 10.0, 10.7), (65, 10.0, 18.0)])])[0];
        assert_eq!((s.rows, s.beyond_10pct), (3, 2));
        assert_eq!(s.lowest.0, 64);
        assert!((s.lowest.1 - 1.07).abs() < 1e-9);
        assert_eq!(s.highest.0, 65);
        assert!((s.median_ratio - 1.73).abs() < 1e-9);
        // 17.3 -> 10.7 and 10.7 -> 18.0: 62 and 68 %.
        assert!((s.neighbour_pct - 65.0).abs() < 1.0, "{}", s.neighbour_pct);
        // A measurement the host follows has none.
        let s = &spreads(&[group(&[(64, 10.0, 10.1), (128, 20.0, 20.2)])])[0];
        assert_eq!(s.beyond_10pct, 0);
        assert!(s.neighbour_pct < 1e-9);
    }
}
