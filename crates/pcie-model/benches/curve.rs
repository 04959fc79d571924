//! How fast the model evaluates transfer sizes. Run with `cargo bench -p pcie-model`; prints
//! figures, asserts nothing.
//!
//! - One full curve: sizes 1..=4096 B, write, read and read/write, in spec and pcie-model mode.
//! - Sizes per second at 64 B, 64 KiB and 16 MiB: one size evaluated is write, read and
//!   read/write at that size (three `stream` calls), as one row of `pcieperf model bw`.

use pcie_model::{stream, LinkConfig, LinkParams, Mode, Op};
use std::hint::black_box;
use std::time::Instant;

const RUNS: usize = 30;

fn config(mode: Mode) -> LinkConfig {
    LinkConfig::new(&LinkParams {
        mode,
        ..LinkParams::default()
    })
    .unwrap()
}

/// Write, read and read/write of one size.
fn one_size(cfg: &LinkConfig, size: u32) -> f64 {
    Op::ALL
        .iter()
        .map(|&op| stream(cfg, op, size, 0).unwrap().payload.0)
        .sum()
}

fn curve(cfg: &LinkConfig) -> f64 {
    (1..=4096).map(|size| one_size(cfg, size)).sum()
}

/// Median and minimum seconds of `RUNS` runs of `f`, after one to warm up.
fn time(mut f: impl FnMut() -> f64) -> (f64, f64) {
    black_box(f());
    let mut times: Vec<f64> = (0..RUNS)
        .map(|_| {
            let t = Instant::now();
            black_box(f());
            t.elapsed().as_secs_f64()
        })
        .collect();
    times.sort_by(f64::total_cmp);
    (times[RUNS / 2], times[0])
}

fn main() {
    for (name, mode) in [("spec", Mode::Spec), ("pcie-model", Mode::PcieModel)] {
        let cfg = config(mode);
        let (median, min) = time(|| curve(black_box(&cfg)));
        println!(
            "{name:>10}: one curve (4096 sizes x 3 ops) in {:.2} ms median, {:.2} ms min over {RUNS} runs ({:.0} ns per point)",
            median * 1e3,
            min * 1e3,
            median * 1e9 / (4096.0 * 3.0)
        );
    }
    const REPEAT: usize = 10_000;
    for (name, mode) in [("spec", Mode::Spec), ("pcie-model", Mode::PcieModel)] {
        let cfg = config(mode);
        for (label, size) in [("64 B", 64), ("64 KiB", 64 << 10), ("16 MiB", 16 << 20)] {
            let (median, min) = time(|| (0..REPEAT).map(|_| one_size(&cfg, black_box(size))).sum());
            println!(
                "{name:>10}: {label:>6}: {:.2} M sizes/s median, {:.2} M best (wr + rd + rdwr per size, {:.0} ns)",
                REPEAT as f64 / median / 1e6,
                REPEAT as f64 / min / 1e6,
                median * 1e9 / REPEAT as f64
            );
        }
    }
}
