//! The fuzz runs of the test suite: every target, no failure. The default run is a smoke run of
//! 3,000 inputs per target (seconds); the short run of 100,000 inputs per target (minutes) is
//! `#[ignore]`d and run by `.ci/run` with `cargo test --workspace --locked -- --ignored`, or alone
//! with `cargo test -p pcie-fuzz -- --ignored`. Both start from the same seed.

use pcie_fuzz::{fuzz, targets, BoundedAlloc};
use std::time::Duration;

#[global_allocator]
static ALLOC: BoundedAlloc = BoundedAlloc;

/// Feeds `inputs` mutated inputs to every target; fails on any failure, or on a target whose
/// mutants were all refused (its seeds are broken). The targets run on a thread with a main
/// thread's stack (8 MiB), as in the fuzz binary: a test thread's 2 MiB is too small for the
/// parsers' bounded recursion (TOML nesting) in an unoptimised build, and overflowed once.
fn every_target_survives(inputs: u64) {
    std::thread::Builder::new()
        .stack_size(8 << 20)
        .spawn(move || run_every_target(inputs))
        .expect("a thread for the fuzz run")
        .join()
        .unwrap_or_else(|e| std::panic::resume_unwind(e));
}

fn run_every_target(inputs: u64) {
    let mut failures = Vec::new();
    for t in targets::all() {
        let r = fuzz(&t, inputs, 20261125, Duration::from_secs(5));
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
        assert_eq!(r.tried, inputs);
        assert!(
            r.accepted > 0,
            "{}: no mutant was ever accepted: the seeds are broken",
            r.target
        );
        failures.extend(r.failures.iter().map(|f| format!("{}: {f}", r.target)));
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn every_target_survives_3k_hostile_inputs() {
    every_target_survives(3_000);
}

#[test]
#[ignore = "the short run: minutes; .ci/run runs it with --ignored"]
fn every_target_survives_100k_hostile_inputs() {
    every_target_survives(100_000);
}
