//! Typed units, so a bandwidth can never be mistaken for a byte count or a latency.

use serde::Serialize;
use std::fmt;

/// A byte count.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(transparent)]
pub struct Bytes(pub u64);

/// A bit rate in gigabits per second (10^9 bit/s), the unit every bandwidth is reported in.
#[derive(Debug, Clone, Copy, PartialEq, PartialOrd, Default, Serialize)]
#[serde(transparent)]
pub struct Gbps(pub f64);

/// A duration in picoseconds, the simulator's time unit; latencies enter the model in it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(transparent)]
pub struct Picos(pub u64);

impl Gbps {
    /// The rate at which `bytes` bytes are moved `per_sec` times a second.
    pub fn from_bytes_per_sec(bytes_per_sec: f64) -> Gbps {
        Gbps(bytes_per_sec * 8.0 / 1e9)
    }

    /// Bytes per second carried at this rate.
    pub fn bytes_per_sec(self) -> f64 {
        self.0 * 1e9 / 8.0
    }
}

impl Picos {
    /// A duration given in nanoseconds (rounded to the nearest picosecond).
    pub fn from_nanos(ns: f64) -> Picos {
        Picos((ns * 1000.0).round() as u64)
    }

    pub fn as_secs(self) -> f64 {
        self.0 as f64 * 1e-12
    }

    pub fn as_nanos(self) -> f64 {
        self.0 as f64 / 1000.0
    }
}

impl fmt::Display for Gbps {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:.2} Gb/s", self.0)
    }
}

impl fmt::Display for Bytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} B", self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gbps_round_trips_bytes_per_second() {
        let r = Gbps::from_bytes_per_sec(1e9);
        assert_eq!(r, Gbps(8.0));
        assert_eq!(r.bytes_per_sec(), 1e9);
    }

    #[test]
    fn picos_from_nanos() {
        assert_eq!(Picos::from_nanos(546.7), Picos(546_700));
        assert!((Picos(600_000).as_secs() - 600e-9).abs() < 1e-18);
        assert_eq!(Picos(1500).as_nanos(), 1.5);
    }
}
