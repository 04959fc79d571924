//! Simulated time: integer picoseconds, so both simulators add and compare times exactly.

/// Picoseconds.
pub(crate) type Ps = u64;

/// Nanoseconds to picoseconds. The cast saturates (and NaN gives 0), but profile ranges keep
/// every time at or below 1 s (PMU host) or 1 ms (DMA host and device), far inside `Ps`.
pub(crate) fn ps(ns: f64) -> Ps {
    // `x + 0.5` truncated: round half up without a libm call (all times are non-negative).
    (ns * 1000.0 + 0.5) as Ps
}
