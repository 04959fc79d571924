//! The model counts a transfer's TLPs in closed form (head, whole pieces, tail). Here every TLP
//! is enumerated one by one, the plain way, and the traffic and throughput must be identical.

use pcie_model::{
    solve, split_completions, split_read_requests, split_writes, stream, stream_traffic, CplSplit, Dir, FlitMode, Flow,
    Generation, LinkConfig, LinkParams, Mode, Op, Tlp, TlpKind, Traffic, PAYLOAD_SIZES, WIDTHS,
};
use proptest::prelude::*;

/// One flow, summed TLP by TLP.
fn flow(cfg: &LinkConfig, what: &'static str, dir: Dir, tlps: Vec<Tlp>) -> Flow {
    let mut f = Flow {
        what,
        dir,
        kind: tlps[0].kind,
        tlps: 0.0,
        bytes: 0.0,
        payload: 0.0,
    };
    for t in tlps {
        f.tlps += 1.0;
        f.bytes += t.wire_bytes(cfg) as f64;
        if t.kind != TlpKind::MRd {
            f.payload += t.len as f64;
        }
    }
    f
}

/// pcie-model cuts the whole transfer from address 0 at MPS or RCB.
fn compat_completions(cfg: &LinkConfig, len: u32) -> Vec<(u64, u32)> {
    let cut = match cfg.cpl_split {
        CplSplit::Mps => cfg.mps,
        CplSplit::Rcb => cfg.rcb,
    };
    let mut pieces = Vec::new();
    let mut at = 0;
    while at < len {
        let next = ((at / cut + 1) * cut).min(len);
        pieces.push((at as u64, next - at));
        at = next;
    }
    pieces
}

fn reference(cfg: &LinkConfig, op: Op, size: u32, offset: u32) -> Traffic {
    let addr = offset as u64;
    let mut t = Traffic::default();
    if matches!(op, Op::Wr | Op::RdWr) {
        let tlps = split_writes(cfg, addr, size)
            .map(|(a, l)| Tlp::request(cfg, TlpKind::MWr, a, l))
            .collect();
        t.flows.push(flow(cfg, "DMA write", Dir::Up, tlps));
    }
    if matches!(op, Op::Rd | Op::RdWr) {
        let reqs = split_read_requests(cfg, addr, size)
            .map(|(a, l)| Tlp::request(cfg, TlpKind::MRd, a, l))
            .collect();
        t.flows.push(flow(cfg, "DMA read", Dir::Up, reqs));
        let cpls = match cfg.mode {
            Mode::PcieModel => compat_completions(cfg, size),
            Mode::Spec => split_read_requests(cfg, addr, size)
                .flat_map(|(a, l)| split_completions(cfg, a, l))
                .collect(),
        };
        let cpls = cpls.into_iter().map(|(a, l)| Tlp::completion(a, l)).collect();
        t.flows.push(flow(cfg, "DMA read", Dir::Down, cpls));
    }
    t
}

/// Any configuration `LinkConfig` accepts, and an offset it allows.
fn config() -> impl Strategy<Value = (LinkConfig, u32)> {
    (
        (0usize..7, 0usize..6, 0usize..6, 0usize..6, 0usize..4),
        (
            any::<bool>(),
            any::<bool>(),
            any::<bool>(),
            any::<bool>(),
            any::<bool>(),
        ),
        (0usize..6, 0u32..4096),
    )
        .prop_filter_map(
            "not a valid configuration",
            |((gen, w, mps, mrrs, rcb), (compat, by_rcb, a32, ecrc, flit_on), (align, offset))| {
                let mode = if compat { Mode::PcieModel } else { Mode::Spec };
                let cfg = LinkConfig::new(&LinkParams {
                    gen: Generation::ALL[gen],
                    lanes: WIDTHS[w],
                    flit: if flit_on { FlitMode::On } else { FlitMode::Auto },
                    mps: PAYLOAD_SIZES[mps],
                    mrrs: PAYLOAD_SIZES[mrrs],
                    rcb: [64, 128, 256, 512][rcb],
                    cpl_split: if by_rcb { CplSplit::Rcb } else { CplSplit::Mps },
                    addr_bits: if a32 { 32 } else { 64 },
                    ecrc,
                    tlp_align: [None, Some(4), Some(8), Some(16), Some(32), Some(64)][if compat { 0 } else { align }],
                    mode,
                    ..LinkParams::default()
                })
                .ok()?;
                Some((cfg, if compat { 0 } else { offset }))
            },
        )
}

fn size() -> impl Strategy<Value = u32> {
    prop_oneof![1u32..=9000, 1u32..=(4 << 20)]
}

proptest! {
    #[test]
    fn closed_form_equals_tlp_by_tlp((cfg, offset) in config(), op in (0usize..3).prop_map(|i| Op::ALL[i]), size in size()) {
        let expect = reference(&cfg, op, size, offset);
        prop_assert_eq!(&stream_traffic(&cfg, op, size, offset), &expect, "{}", cfg);
        prop_assert_eq!(stream(&cfg, op, size, offset).unwrap(), solve(&cfg, &expect, size as f64));
    }
}

#[test]
fn largest_transfer_equals_tlp_by_tlp() {
    for mode in [Mode::Spec, Mode::PcieModel] {
        let cfg = LinkConfig::new(&LinkParams {
            mps: 128,
            mrrs: 128,
            cpl_split: CplSplit::Rcb,
            mode,
            ..LinkParams::default()
        })
        .unwrap();
        let size = pcie_model::MAX_TRANSFER;
        for op in Op::ALL {
            assert_eq!(
                stream_traffic(&cfg, op, size, 0),
                reference(&cfg, op, size, 0),
                "{cfg} {op}"
            );
        }
    }
}
