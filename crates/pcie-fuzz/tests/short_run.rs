//! The short fuzz run of the test suite: every target, 100,000 inputs, no failure.

use pcie_fuzz::{fuzz, targets, BoundedAlloc};
use std::time::Duration;

#[global_allocator]
static ALLOC: BoundedAlloc = BoundedAlloc;

#[test]
fn every_target_survives_100k_hostile_inputs() {
    let mut failures = Vec::new();
    for t in targets::all() {
        let r = fuzz(&t, 100_000, 20261125, Duration::from_secs(5));
        println!(
            "{:<16} {:>7} inputs, {:>7} accepted, {:>7} refused, {} failures, slowest {:?}, {:.1?}",
            r.target,
            r.tried,
            r.accepted,
            r.refused,
            r.failures.len(),
            r.slowest,
            r.elapsed
        );
        assert_eq!(r.tried, 100_000);
        assert!(
            r.accepted > 0,
            "{}: no mutant was ever accepted: the seeds are broken",
            r.target
        );
        failures.extend(r.failures.iter().map(|f| format!("{}: {f}", r.target)));
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
