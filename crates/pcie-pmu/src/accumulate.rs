//! From successive counter reads to per-interval deltas and totals.
//!
//! * **Wrap:** a counter `width` bits wide (64 for what the kernel returns; 32 for a narrowed
//!   hardware counter read raw, as a simulator may) wraps modulo 2^width, so the delta between
//!   two reads is `(new - old) mod 2^width`; totals are accumulated in 64 bits. A counter that
//!   wraps more than once between two reads cannot be told apart: read often enough
//!   ([`max_interval_secs`]).
//! * **Multiplexing:** when the kernel time-shares a hardware counter, `running < enabled`; the
//!   interval's delta is scaled by `enabled / running` (the deltas of both times, as
//!   `perf stat -I` does) and the running share reported. `running == 0`: not counted.
//! * **Bytes:** a payload event's scaled count × bytes per count = bytes; over the interval's
//!   seconds, Gb/s.

use crate::counter::Reading;
use serde::Serialize;

/// `(new - old) mod 2^width`, for `width` in 1..=64.
pub fn wrap_delta(old: u64, new: u64, width: u32) -> u64 {
    let d = new.wrapping_sub(old);
    if width >= 64 {
        d
    } else {
        d & ((1u64 << width) - 1)
    }
}

/// One interval of one counter.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Delta {
    /// Raw count in the interval (wrap-corrected).
    pub raw: u64,
    /// Nanoseconds the event was enabled / actually counting in the interval.
    pub enabled_ns: u64,
    pub running_ns: u64,
    /// `raw × enabled / running`; `None` when the event did not run at all.
    pub scaled: Option<f64>,
}

impl Delta {
    /// Share of the enabled time the event was counting, in percent (100 without
    /// multiplexing; 0 when it never ran; 100 when no time passed).
    pub fn running_pct(&self) -> f64 {
        if self.enabled_ns == 0 {
            100.0
        } else {
            100.0 * self.running_ns as f64 / self.enabled_ns as f64
        }
    }

    /// Scale a raw delta by enabled/running.
    pub fn new(raw: u64, enabled_ns: u64, running_ns: u64) -> Delta {
        let scaled = if running_ns == 0 {
            if raw == 0 && enabled_ns == 0 {
                Some(0.0)
            } else {
                None
            }
        } else if running_ns >= enabled_ns {
            Some(raw as f64)
        } else {
            Some(raw as f64 * enabled_ns as f64 / running_ns as f64)
        };
        Delta {
            raw,
            enabled_ns,
            running_ns,
            scaled,
        }
    }

    /// Bytes for a payload event with `bytes_per_count`, and Gb/s over `secs`.
    pub fn bytes(&self, bytes_per_count: f64) -> Option<f64> {
        self.scaled.map(|s| s * bytes_per_count)
    }
}

/// Gigabits per second of `bytes` over `secs` (0 for an empty interval).
pub fn gbps(bytes: f64, secs: f64) -> f64 {
    if secs > 0.0 {
        bytes * 8.0 / secs / 1e9
    } else {
        0.0
    }
}

/// The longest read interval that cannot miss a wrap of a `width`-bit counter of
/// `bytes_per_count` at `bandwidth_gbps` (`None` for 64-bit counters or no traffic).
pub fn max_interval_secs(width: u32, bytes_per_count: f64, bandwidth_gbps: f64) -> Option<f64> {
    if width >= 64 || bandwidth_gbps <= 0.0 || bytes_per_count <= 0.0 {
        return None;
    }
    let counts_per_sec = bandwidth_gbps * 1e9 / 8.0 / bytes_per_count;
    Some((1u64 << width) as f64 / counts_per_sec)
}

/// Accumulates one counter's reads: per-interval deltas and 64-bit totals.
#[derive(Debug, Clone)]
pub struct Accumulator {
    width: u32,
    last: Option<Reading>,
    /// Sums over every interval since the first read.
    pub total_raw: u64,
    pub total_enabled_ns: u64,
    pub total_running_ns: u64,
    /// Sum of the intervals' scaled deltas (intervals that never ran add nothing).
    pub total_scaled: f64,
}

impl Default for Accumulator {
    fn default() -> Self {
        Accumulator::new(64)
    }
}

impl Accumulator {
    /// For a counter `width` bits wide (clamped to 1..=64).
    pub fn new(width: u32) -> Accumulator {
        Accumulator {
            width: width.clamp(1, 64),
            last: None,
            total_raw: 0,
            total_enabled_ns: 0,
            total_running_ns: 0,
            total_scaled: 0.0,
        }
    }

    pub fn width(&self) -> u32 {
        self.width
    }

    /// Take a read. The first one sets the baseline and yields `None`; every later one yields
    /// the interval's delta and adds it to the totals.
    pub fn update(&mut self, r: Reading) -> Option<Delta> {
        let prev = self.last.replace(r)?;
        let d = Delta::new(
            wrap_delta(prev.value, r.value, self.width),
            r.enabled.wrapping_sub(prev.enabled),
            r.running.wrapping_sub(prev.running),
        );
        self.total_raw = self.total_raw.wrapping_add(d.raw);
        self.total_enabled_ns = self.total_enabled_ns.wrapping_add(d.enabled_ns);
        self.total_running_ns = self.total_running_ns.wrapping_add(d.running_ns);
        self.total_scaled += d.scaled.unwrap_or(0.0);
        Some(d)
    }

    /// The whole run as one delta: raw total with the run's enabled/running; `scaled` is the
    /// sum of the per-interval scaled deltas (which equals raw × enabled / running when the
    /// share was constant).
    pub fn total(&self) -> Delta {
        let mut d = Delta::new(self.total_raw, self.total_enabled_ns, self.total_running_ns);
        if d.scaled.is_some() {
            d.scaled = Some(self.total_scaled);
        }
        d
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(value: u64, enabled: u64, running: u64) -> Reading {
        Reading {
            value,
            enabled,
            running,
        }
    }

    #[test]
    fn wrap_deltas() {
        assert_eq!(wrap_delta(10, 25, 64), 15);
        assert_eq!(wrap_delta(u64::MAX - 4, 5, 64), 10);
        assert_eq!(wrap_delta(0xffff_fff0, 0x10, 32), 0x20);
        assert_eq!(wrap_delta(0x10, 0x10, 32), 0);
        assert_eq!(wrap_delta(3, 1, 2), 2);
    }

    #[test]
    fn a_32_bit_counter_wraps_and_the_total_stays_exact() {
        // 1 GB/s in 16-byte units read every second for 10 s: 62.5 M counts per interval on a
        // counter that starts near the top and wraps during the run.
        let step = 62_500_000u64;
        let mut acc = Accumulator::new(32);
        let mut raw_hw = 0xffff_0000u64;
        assert_eq!(acc.update(r(raw_hw, 0, 0)), None);
        let mut wraps = 0;
        for i in 1..=100u64 {
            let next = (raw_hw + step) & 0xffff_ffff;
            if next < raw_hw {
                wraps += 1;
            }
            raw_hw = next;
            let d = acc.update(r(raw_hw, i * 1_000_000_000, i * 1_000_000_000)).unwrap();
            assert_eq!(d.raw, step);
            assert_eq!(d.scaled, Some(step as f64));
            assert_eq!(d.running_pct(), 100.0);
        }
        assert!(wraps >= 1);
        assert_eq!(acc.total_raw, 100 * step);
        // Without the mask, a 64-bit accumulator would have seen a huge bogus delta.
        assert_eq!(Accumulator::new(64).width(), 64);
        let bytes = acc.total().bytes(16.0).unwrap();
        assert_eq!(bytes, 100.0 * step as f64 * 16.0);
        assert!((gbps(bytes, 100.0) - 8.0).abs() < 1e-9);
    }

    #[test]
    fn fifty_percent_multiplexing_scales_by_two() {
        // Two events share one counter: each runs half of every 100 ms interval.
        let mut acc = Accumulator::default();
        acc.update(r(0, 0, 0));
        let mut value = 0;
        for i in 1..=10u64 {
            value += 1_000; // counted while running; the true count is 2000 per interval
            let d = acc.update(r(value, i * 100_000_000, i * 50_000_000)).unwrap();
            assert_eq!(d.raw, 1_000);
            assert_eq!(d.scaled, Some(2_000.0));
            assert_eq!(d.running_pct(), 50.0);
        }
        let t = acc.total();
        assert_eq!(
            (t.raw, t.enabled_ns, t.running_ns),
            (10_000, 1_000_000_000, 500_000_000)
        );
        assert_eq!(t.scaled, Some(20_000.0));
        assert_eq!(t.running_pct(), 50.0);
    }

    #[test]
    fn an_interval_that_never_ran_is_not_counted() {
        let mut acc = Accumulator::default();
        acc.update(r(5, 10, 10));
        let d = acc.update(r(5, 110, 10)).unwrap();
        assert_eq!(d.scaled, None);
        assert_eq!(d.running_pct(), 0.0);
        let d = acc.update(r(15, 210, 110)).unwrap();
        assert_eq!(d.scaled, Some(10.0));
        assert_eq!(acc.total().scaled, Some(10.0));
        // An interval in which no time passed at all counts zero.
        assert_eq!(Delta::new(0, 0, 0).scaled, Some(0.0));
    }

    #[test]
    fn bytes_and_bandwidth() {
        let d = Delta::new(1_250_000_000, 1_000_000_000, 1_000_000_000);
        assert_eq!(d.bytes(1.0), Some(1.25e9));
        assert!((gbps(1.25e9, 1.0) - 10.0).abs() < 1e-12);
        assert_eq!(gbps(1.0, 0.0), 0.0);
        // A 32-bit counter of 16-byte units at 128 Gb/s wraps after about 4.3 s.
        let t = max_interval_secs(32, 16.0, 128.0).unwrap();
        assert!((t - 4.294967296).abs() < 1e-6, "{t}");
        assert_eq!(max_interval_secs(64, 16.0, 128.0), None);
    }
}
