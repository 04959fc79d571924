//! Properties the model must keep for every configuration.

use pcie_model::{raw, stream, CplSplit, FlitMode, Generation, LinkConfig, LinkParams, Op, PAYLOAD_SIZES, WIDTHS};
use proptest::prelude::*;

fn cfg(p: LinkParams) -> LinkConfig {
    LinkConfig::new(&p).unwrap()
}

fn gen_strategy() -> impl Strategy<Value = Generation> {
    (0usize..7).prop_map(|i| Generation::ALL[i])
}

fn params() -> impl Strategy<Value = LinkParams> {
    (
        gen_strategy(),
        0usize..6,
        0usize..6,
        0usize..6,
        any::<bool>(),
        any::<bool>(),
        any::<bool>(),
        any::<bool>(),
    )
        .prop_map(|(gen, w, mps, mrrs, a32, ecrc, by_rcb, flit)| LinkParams {
            gen,
            lanes: WIDTHS[w],
            mps: PAYLOAD_SIZES[mps],
            mrrs: PAYLOAD_SIZES[mrrs],
            addr_bits: if a32 { 32 } else { 64 },
            ecrc,
            cpl_split: if by_rcb { CplSplit::Rcb } else { CplSplit::Mps },
            flit: if flit { FlitMode::On } else { FlitMode::Auto },
            ..LinkParams::default()
        })
}

fn op_strategy() -> impl Strategy<Value = Op> {
    (0usize..3).prop_map(|i| Op::ALL[i])
}

proptest! {
    #[test]
    fn efficiency_never_exceeds_one(p in params(), op in op_strategy(), size in 1u32..=8192, offset in 0u32..64) {
        let c = cfg(p);
        let r = stream(&c, op, size, offset).unwrap();
        prop_assert!(r.payload.0 > 0.0);
        prop_assert!(r.payload.0 <= raw(&c).0);
        prop_assert!(r.up.utilisation <= 1.0 + 1e-12 && r.down.utilisation <= 1.0 + 1e-12);
    }

    #[test]
    fn bandwidth_grows_with_width(p in params(), op in op_strategy(), size in 1u32..=4096) {
        let mut last = 0.0;
        for lanes in WIDTHS {
            let bw = stream(&cfg(LinkParams { lanes, ..p.clone() }), op, size, 0).unwrap().payload.0;
            prop_assert!(bw > last, "x{lanes}: {bw} <= {last}");
            last = bw;
        }
    }

    #[test]
    fn bandwidth_grows_with_generation(p in params(), op in op_strategy(), size in 1u32..=4096) {
        let mut last = 0.0;
        for gen in Generation::ALL {
            let bw = stream(&cfg(LinkParams { gen, ..p.clone() }), op, size, 0).unwrap().payload.0;
            prop_assert!(bw > last, "Gen{gen}: {bw} <= {last}");
            last = bw;
        }
    }
}

/// Bandwidth at `size` and one byte more.
fn step(c: &LinkConfig, op: Op, size: u32) -> (f64, f64) {
    (
        stream(c, op, size, 0).unwrap().payload.0,
        stream(c, op, size + 1, 0).unwrap().payload.0,
    )
}

#[test]
fn writes_drop_just_after_every_mps_multiple() {
    for mps in [128, 256, 512] {
        let c = cfg(LinkParams {
            mps,
            mrrs: 4096,
            ..LinkParams::default()
        });
        for k in 1..(4096 / mps) {
            let (at, after) = step(&c, Op::Wr, k * mps);
            assert!(after < at * 0.997, "MPS {mps}, {} B: {at} -> {after}", k * mps);
        }
    }
}

#[test]
fn read_completions_drop_after_mps_or_rcb_multiples() {
    let by_mps = cfg(LinkParams {
        mrrs: 4096,
        ..LinkParams::default()
    });
    for k in 1..16 {
        let (at, after) = step(&by_mps, Op::Rd, k * 256);
        assert!(after < at * 0.997, "MPS cut, {} B: {at} -> {after}", k * 256);
    }
    let by_rcb = cfg(LinkParams {
        mrrs: 4096,
        cpl_split: CplSplit::Rcb,
        ..LinkParams::default()
    });
    for k in 1..64 {
        let (at, after) = step(&by_rcb, Op::Rd, k * 64);
        assert!(after < at * 0.997, "RCB cut, {} B: {at} -> {after}", k * 64);
    }
}

#[test]
fn flit_mode_wins_small_writes_and_loses_large_ones_at_the_same_raw_rate() {
    for gen in [Generation::Gen3, Generation::Gen4, Generation::Gen5] {
        let flit = cfg(LinkParams {
            gen,
            flit: FlitMode::On,
            ..LinkParams::default()
        });
        let legacy = cfg(LinkParams {
            gen,
            flit: FlitMode::Off,
            ..LinkParams::default()
        });
        assert_eq!(raw(&flit), raw(&legacy));
        let bw = |c: &LinkConfig, size| stream(c, Op::Wr, size, 0).unwrap().payload.0;
        assert!(bw(&flit, 64) > bw(&legacy, 64), "Gen{gen} 64 B");
        assert!(bw(&flit, 512) < bw(&legacy, 512), "Gen{gen} 512 B");
    }
}

#[test]
fn flit_efficiency_matches_the_reference_table() {
    // One MWr with a 64-bit address: 64 B -> 73.8 %, 512 B -> 89.4 % of the raw rate (before SKP).
    let c = cfg(LinkParams {
        gen: Generation::Gen6,
        mps: 512,
        ..LinkParams::default()
    });
    let skp_keep = 1.0 - 1.0 / 376.0;
    let eff = |size| stream(&c, Op::Wr, size, 0).unwrap().payload.0 / raw(&c).0 / skp_keep;
    assert!((eff(64) - 0.7375).abs() < 0.001, "{}", eff(64));
    assert!((eff(512) - 0.8939).abs() < 0.001, "{}", eff(512));
}
