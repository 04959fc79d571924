//! How long one full curve takes: sizes 1..=4096 B, write, read and read/write, in spec and
//! pcie-model mode. Run with `cargo bench -p pcie-model`; prints figures, asserts nothing.

use pcie_model::{stream, LinkConfig, LinkParams, Mode, Op};
use std::hint::black_box;
use std::time::Instant;

const RUNS: usize = 30;

fn curve(cfg: &LinkConfig) -> f64 {
    let mut sum = 0.0;
    for size in 1..=4096 {
        for op in Op::ALL {
            sum += stream(cfg, op, size, 0).unwrap().payload.0;
        }
    }
    sum
}

fn main() {
    for (name, mode) in [("spec", Mode::Spec), ("pcie-model", Mode::PcieModel)] {
        let cfg = LinkConfig::new(&LinkParams {
            mode,
            ..LinkParams::default()
        })
        .unwrap();
        black_box(curve(&cfg)); // warm up
        let mut times: Vec<f64> = (0..RUNS)
            .map(|_| {
                let t = Instant::now();
                black_box(curve(black_box(&cfg)));
                t.elapsed().as_secs_f64()
            })
            .collect();
        times.sort_by(f64::total_cmp);
        let median = times[RUNS / 2];
        println!(
            "{name:>10}: one curve (4096 sizes x 3 ops) in {:.2} ms median, {:.2} ms min over {RUNS} runs ({:.0} ns per point)",
            median * 1e3,
            times[0] * 1e3,
            median * 1e9 / (4096.0 * 3.0)
        );
    }
}
