//! Result statistics exactly as pcie-bench's `stats.py` and control program compute them, plus
//! the 99th percentile pcie-bench lacks and a Kolmogorov–Smirnov distance for comparing CDFs.

use crate::backend::{BandwidthTotals, LatencySamples};
use serde::Serialize;

/// Latency figures in one unit (device cycles or nanoseconds).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Summary {
    /// Whole measurement loop divided by the sample count (pcie-bench's TAvg): includes the
    /// device's per-transaction overheads that the per-sample timestamps leave out.
    pub tavg: f64,
    pub avg: f64,
    pub median: f64,
    pub min: f64,
    pub max: f64,
    pub p95: f64,
    pub p99: f64,
    pub p999: f64,
}

impl Summary {
    fn scaled(&self, factor: f64) -> Summary {
        Summary {
            tavg: self.tavg * factor,
            avg: self.avg * factor,
            median: self.median * factor,
            min: self.min * factor,
            max: self.max * factor,
            p95: self.p95 * factor,
            p99: self.p99 * factor,
            p999: self.p999 * factor,
        }
    }
}

/// One latency result row: the same figures in cycles and in ns.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct LatencyStats {
    pub cycles: Summary,
    pub ns: Summary,
    /// Samples above 3 × the 95th percentile (compared in cycles).
    pub outliers: u64,
    pub samples: u64,
}

/// One point of pcie-bench's latency CDF.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct CdfPoint {
    pub cycles: u32,
    pub ns: f64,
    /// Fraction of samples at or below `cycles`.
    pub cdf: f64,
}

/// Latency samples sorted once; every statistic and the CDF are read from the sorted copy.
#[derive(Debug, Clone)]
pub struct SortedLatencies {
    sorted: Vec<u32>,
    cycle_ps: f64,
    total_cycles: u64,
}

impl SortedLatencies {
    /// `None` when there are no samples (pcie-bench's statistics are undefined then).
    pub fn new(samples: &LatencySamples) -> Option<SortedLatencies> {
        SortedLatencies::from_samples(samples.clone())
    }

    /// The same, sorting the samples in place: a run keeps no second copy of a 16 M-sample
    /// test (64 MB) while it writes the test's rows.
    pub fn from_samples(samples: LatencySamples) -> Option<SortedLatencies> {
        if samples.cycles.is_empty() {
            return None;
        }
        let mut sorted = samples.cycles;
        sorted.sort_unstable();
        Some(SortedLatencies {
            sorted,
            cycle_ps: samples.cycle_ps,
            total_cycles: samples.total_cycles,
        })
    }

    /// Nanoseconds per cycle.
    fn ns_per_cycle(&self) -> f64 {
        self.cycle_ps / 1000.0
    }

    /// pcie-bench's percentile (ActiveState recipe 511478): linear interpolation between the
    /// closest ranks at position (n − 1) · p / 100, `p` clamped to 0–100. In cycles.
    pub fn percentile(&self, p: f64) -> f64 {
        let s = &self.sorted;
        let p = if p.is_nan() { 0.0 } else { p.clamp(0.0, 100.0) };
        let idx = (s.len() - 1) as f64 * (p / 100.0);
        let (floor, ceil) = (idx.floor(), idx.ceil());
        if floor == ceil {
            return s[idx as usize] as f64;
        }
        s[floor as usize] as f64 * (ceil - idx) + s[ceil as usize] as f64 * (idx - floor)
    }

    /// Middle value; the mean of the two middle values for an even count. In cycles.
    pub fn median(&self) -> f64 {
        let s = &self.sorted;
        let half = s.len() / 2;
        if s.len().is_multiple_of(2) {
            (s[half - 1] as u64 + s[half] as u64) as f64 / 2.0
        } else {
            s[half] as f64
        }
    }

    pub fn stats(&self) -> LatencyStats {
        let s = &self.sorted;
        let n = s.len() as u64;
        let sum: u64 = s.iter().map(|&c| c as u64).sum();
        let p95 = self.percentile(95.0);
        let limit = 3.0 * p95;
        let outliers = (s.len() - s.partition_point(|&c| c as f64 <= limit)) as u64;
        let cycles = Summary {
            tavg: self.total_cycles as f64 / n as f64,
            avg: sum as f64 / n as f64,
            median: self.median(),
            min: s[0] as f64,
            max: s[s.len() - 1] as f64,
            p95,
            p99: self.percentile(99.0),
            p999: self.percentile(99.9),
        };
        LatencyStats {
            cycles,
            ns: cycles.scaled(self.ns_per_cycle()),
            outliers,
            samples: n,
        }
    }

    /// pcie-bench's CDF: cumulative fraction at each distinct value, with the first value
    /// repeated at fraction 0 so plotted sections start on the axis.
    pub fn cdf(&self) -> Vec<CdfPoint> {
        let s = &self.sorted;
        let n = s.len() as f64;
        let ns = self.ns_per_cycle();
        let mut points = vec![CdfPoint {
            cycles: s[0],
            ns: s[0] as f64 * ns,
            cdf: 0.0,
        }];
        let mut i = 0;
        while i < s.len() {
            let v = s[i];
            while i < s.len() && s[i] == v {
                i += 1;
            }
            points.push(CdfPoint {
                cycles: v,
                ns: v as f64 * ns,
                cdf: i as f64 / n,
            });
        }
        points
    }
}

/// One bandwidth result row.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct BandwidthStats {
    pub time_cycles: u64,
    pub time_ns: f64,
    pub bytes: u64,
    pub transactions: u64,
    /// 8 × bytes / ns (pcie-bench's "BW (GB/s)" column, which is really Gb/s).
    pub gbps: f64,
    pub trans_per_sec: f64,
}

impl BandwidthStats {
    /// `None` when no time passed (no rate can be formed).
    pub fn new(totals: &BandwidthTotals) -> Option<BandwidthStats> {
        let time_ns = totals.time_cycles as f64 * totals.cycle_ps / 1000.0;
        if time_ns <= 0.0 || !time_ns.is_finite() {
            return None;
        }
        Some(BandwidthStats {
            time_cycles: totals.time_cycles,
            time_ns,
            bytes: totals.bytes,
            transactions: totals.transactions,
            gbps: 8.0 * totals.bytes as f64 / time_ns,
            trans_per_sec: totals.transactions as f64 / (time_ns / 1e9),
        })
    }
}

/// What one finished test yielded, for display and JSON output.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Measurement {
    Latency(LatencyStats),
    Bandwidth(BandwidthStats),
}

/// Kolmogorov–Smirnov distance: the largest vertical gap between two CDFs given as
/// `(value, cumulative fraction)` step functions sorted by value. Each function is 0 before
/// its first point and takes the fraction of its last point at or below x, so pcie-bench's
/// repeated first point (fraction 0) is harmless.
pub fn ks_distance(a: &[(f64, f64)], b: &[(f64, f64)]) -> f64 {
    let (mut i, mut j) = (0, 0);
    let (mut fa, mut fb, mut d) = (0.0f64, 0.0f64, 0.0f64);
    loop {
        let x = a
            .get(i)
            .map_or(f64::INFINITY, |p| p.0)
            .min(b.get(j).map_or(f64::INFINITY, |p| p.0));
        if x == f64::INFINITY {
            return d;
        }
        // Values computed along different paths (cycles x 1e9 / Hz, or x ps / 1000) differ in
        // their last bits; closer than a millionth they are the same point.
        let x = x + x.abs() * 1e-9;
        while i < a.len() && a[i].0 <= x {
            fa = a[i].1;
            i += 1;
        }
        while j < b.len() && b[j].0 <= x {
            fb = b[j].1;
            j += 1;
        }
        d = d.max((fa - fb).abs());
    }
}

#[cfg(test)]
mod tests {

    #[test]
    fn ks_treats_nearly_equal_values_as_one_point() {
        let a = [(586.6666666666666, 0.3), (600.0, 1.0)];
        let b = [(704.0 * 833.333_333_333_333_4 / 1000.0, 0.3), (600.0000000000001, 1.0)];
        assert!(ks_distance(&a, &b) < 1e-12, "{}", ks_distance(&a, &b));
    }

    use super::*;

    fn sorted(cycles: &[u32], cycle_ps: f64, total_cycles: u64) -> SortedLatencies {
        SortedLatencies::new(&LatencySamples {
            cycles: cycles.to_vec(),
            cycle_ps,
            total_cycles,
        })
        .unwrap()
    }

    #[test]
    fn pcie_bench_statistics_by_hand() {
        // Unsorted on purpose; 10 samples.
        let s = sorted(&[7, 1, 10, 3, 2, 9, 4, 8, 6, 5], 2000.0, 150);
        let st = s.stats();
        assert_eq!(st.samples, 10);
        assert_eq!(st.cycles.tavg, 15.0);
        assert_eq!(st.cycles.avg, 5.5);
        assert_eq!(st.cycles.median, 5.5); // (5 + 6) / 2
        assert_eq!((st.cycles.min, st.cycles.max), (1.0, 10.0));
        // position 9 · 0.95 = 8.55: 9 · 0.45 + 10 · 0.55
        assert!((st.cycles.p95 - 9.55).abs() < 1e-12);
        // 9 · 0.99 = 8.91: 9 · 0.09 + 10 · 0.91
        assert!((st.cycles.p99 - 9.91).abs() < 1e-12);
        assert!((st.cycles.p999 - 9.991).abs() < 1e-12);
        assert_eq!(st.outliers, 0);
        // 2000 ps per cycle: every figure doubles in ns.
        assert_eq!(st.ns.median, 11.0);
        assert_eq!(st.ns.tavg, 30.0);
        assert!((st.ns.p95 - 19.1).abs() < 1e-12);
    }

    #[test]
    fn odd_count_median_and_exact_rank() {
        let s = sorted(&[30, 10, 20], 1000.0, 60);
        assert_eq!(s.median(), 20.0);
        // position 2 · 0.5 = 1 lands on a rank: no interpolation.
        assert_eq!(s.percentile(50.0), 20.0);
        assert_eq!(s.percentile(0.0), 10.0);
        assert_eq!(s.percentile(100.0), 30.0);
        assert_eq!(s.percentile(250.0), 30.0);
        assert_eq!(s.percentile(-1.0), 10.0);
    }

    #[test]
    fn outliers_are_above_three_times_p95() {
        // 100 samples of 10, one of 31 and one of 30: p95 = 10, limit 30 → only 31 counts.
        let mut v = vec![10u32; 100];
        v.push(31);
        v.push(30);
        let st = sorted(&v, 1000.0, 0).stats();
        assert_eq!(st.cycles.p95, 10.0);
        assert_eq!(st.outliers, 1);
    }

    #[test]
    fn cdf_repeats_first_point_at_zero() {
        let s = sorted(&[5, 3, 3, 8], 500.0, 0);
        let cdf = s.cdf();
        let got: Vec<(u32, f64, f64)> = cdf.iter().map(|p| (p.cycles, p.ns, p.cdf)).collect();
        assert_eq!(got, vec![(3, 1.5, 0.0), (3, 1.5, 0.5), (5, 2.5, 0.75), (8, 4.0, 1.0)]);
    }

    #[test]
    fn empty_samples_have_no_statistics() {
        assert!(SortedLatencies::new(&LatencySamples {
            cycles: vec![],
            cycle_ps: 1000.0,
            total_cycles: 0
        })
        .is_none());
    }

    #[test]
    fn bandwidth_is_gigabits_per_second() {
        // 1000 cycles of 1 ns moving 1000 bytes in 10 transactions: 8 Gb/s, 1e7 trans/s.
        let b = BandwidthStats::new(&BandwidthTotals {
            bytes: 1000,
            transactions: 10,
            time_cycles: 1000,
            cycle_ps: 1000.0,
        })
        .unwrap();
        assert_eq!(b.time_ns, 1000.0);
        assert_eq!(b.gbps, 8.0);
        assert_eq!(b.trans_per_sec, 1e7);
        // pcie-bench's own row: BW_DMA_RD 64 B, 172106144 cycles at 1.2 GHz.
        let b = BandwidthStats::new(&BandwidthTotals {
            bytes: 536_870_912,
            transactions: 8_388_608,
            time_cycles: 172_106_144,
            cycle_ps: 1e6 / 1200.0,
        })
        .unwrap();
        assert!((b.gbps - 29.946407695939087).abs() < 1e-9);
        assert!((b.trans_per_sec - 58489077.53113102).abs() < 1e-3);
        assert!(BandwidthStats::new(&BandwidthTotals {
            bytes: 1,
            transactions: 1,
            time_cycles: 0,
            cycle_ps: 1000.0
        })
        .is_none());
    }

    #[test]
    fn ks_distance_of_step_functions() {
        let a = [(1.0, 0.0), (1.0, 0.5), (2.0, 1.0)];
        assert_eq!(ks_distance(&a, &a), 0.0);
        // b jumps to 0.25 at 1, 1.0 at 3: at x = 2, a = 1.0 and b = 0.25.
        let b = [(1.0, 0.25), (3.0, 1.0)];
        assert_eq!(ks_distance(&a, &b), 0.75);
        assert_eq!(ks_distance(&b, &a), 0.75);
        // Disjoint supports: distance 1.
        assert_eq!(ks_distance(&[(1.0, 1.0)], &[(5.0, 1.0)]), 1.0);
        assert_eq!(ks_distance(&[], &[]), 0.0);
    }
}
