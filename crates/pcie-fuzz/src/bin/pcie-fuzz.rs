//! `pcie-fuzz [--inputs N] [--seed S] [--limit-ms MS] [TARGET...]`: fuzz every target (or the
//! named ones) and print inputs tried and failures per target (progress on stderr every million
//! inputs); exit 1 when any target failed.

use pcie_fuzz::{fuzz_with_progress, targets, BoundedAlloc};
use std::process::ExitCode;
use std::time::Duration;

#[global_allocator]
static ALLOC: BoundedAlloc = BoundedAlloc;

fn value(args: &mut impl Iterator<Item = String>, flag: &str) -> Result<u64, String> {
    let v = args.next().ok_or(format!("{flag}: needs a value"))?;
    v.replace('_', "")
        .parse()
        .map_err(|_| format!("{flag} {v}: must be a whole number"))
}

fn main() -> ExitCode {
    let (mut inputs, mut seed, mut limit_ms, mut names) = (1_000_000u64, 1u64, 2_000u64, Vec::new());
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let parsed = match a.as_str() {
            "--inputs" => value(&mut args, "--inputs").map(|v| inputs = v),
            "--seed" => value(&mut args, "--seed").map(|v| seed = v),
            "--limit-ms" => value(&mut args, "--limit-ms").map(|v| limit_ms = v),
            "-h" | "--help" => {
                println!("usage: pcie-fuzz [--inputs N] [--seed S] [--limit-ms MS] [TARGET...]");
                return ExitCode::SUCCESS;
            }
            name => {
                names.push(name.to_string());
                Ok(())
            }
        };
        if let Err(e) = parsed {
            eprintln!("pcie-fuzz: {e}");
            return ExitCode::from(2);
        }
    }
    let all = targets::all();
    if let Some(bad) = names.iter().find(|n| all.iter().all(|t| t.name != n.as_str())) {
        let known: Vec<&str> = all.iter().map(|t| t.name).collect();
        eprintln!("pcie-fuzz: unknown target {bad:?}; targets: {}", known.join(", "));
        return ExitCode::from(2);
    }
    println!(
        "{:<16} {:>12} {:>12} {:>12} {:>9} {:>14} {:>10}",
        "target", "inputs", "accepted", "refused", "failures", "slowest CPU µs", "inputs/s"
    );
    let mut failed = false;
    for t in all
        .iter()
        .filter(|t| names.is_empty() || names.iter().any(|n| n == t.name))
    {
        let r = fuzz_with_progress(t, inputs, seed, Duration::from_millis(limit_ms), |r| {
            eprintln!(
                "{}: {} inputs, {} failures, {:.0} s",
                r.target,
                r.tried,
                r.failures.len(),
                r.elapsed.as_secs_f64()
            )
        });
        println!(
            "{:<16} {:>12} {:>12} {:>12} {:>9} {:>14} {:>10.0}",
            r.target,
            r.tried,
            r.accepted,
            r.refused,
            r.failures.len(),
            r.slowest.as_micros(),
            r.tried as f64 / r.elapsed.as_secs_f64()
        );
        for f in &r.failures {
            println!("  FAIL {f}");
        }
        failed |= !r.failures.is_empty();
    }
    if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}
