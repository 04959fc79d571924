//! Targets for pcie-model: size lists, and link parameters driven into a bandwidth evaluation.

use crate::{refused, text, FuzzTarget, Verdict};
use pcie_model::{parse_sizes, raw, stream, LinkConfig, LinkParams, Op, MAX_SIZES};

/// `64,128`, `1..4096`, `64..2048:64`: what `--sizes` accepts, never more than MAX_SIZES points.
fn sizes(input: &[u8]) -> Verdict {
    match parse_sizes(&text(input)) {
        Ok(v) if v.is_empty() => Verdict::Wrong("accepted an empty size list".into()),
        Ok(v) if v.len() > MAX_SIZES => Verdict::Wrong(format!("{} sizes, above the {MAX_SIZES} limit", v.len())),
        Ok(_) => Verdict::Accepted,
        Err(e) => refused(e.to_string()),
    }
}

/// `key=value` words: a link (gen, lanes, flit, mps, mrrs, rcb, split, addr, ecrc, align, tags,
/// mode) and a transfer (op, size, offset). A link the model accepts must carry the transfer
/// at a finite, positive rate no higher than the link's raw rate.
fn link_stream(input: &[u8]) -> Verdict {
    let text = text(input);
    let mut p = LinkParams::default();
    let (mut op, mut size, mut offset) = (Op::Rd, 64u32, 0u32);
    for word in text.split_whitespace() {
        let Some((key, value)) = word.split_once('=') else {
            return refused(format!("{word:?}: not key=value"));
        };
        let bad = |e: &dyn std::fmt::Display| refused(format!("{key}={value}: {e}"));
        let number = |v: &str| v.parse::<u32>();
        let set = match key {
            "gen" => value.parse().map(|g| p.gen = g).map_err(|e| e.to_string()),
            "lanes" => number(value).map(|v| p.lanes = v).map_err(|e| e.to_string()),
            "flit" => value.parse().map(|v| p.flit = v).map_err(|e| e.to_string()),
            "mps" => number(value).map(|v| p.mps = v).map_err(|e| e.to_string()),
            "mrrs" => number(value).map(|v| p.mrrs = v).map_err(|e| e.to_string()),
            "rcb" => number(value).map(|v| p.rcb = v).map_err(|e| e.to_string()),
            "split" => value.parse().map(|v| p.cpl_split = v).map_err(|e| e.to_string()),
            "addr" => number(value).map(|v| p.addr_bits = v).map_err(|e| e.to_string()),
            "ecrc" => value.parse().map(|v| p.ecrc = v).map_err(|e| e.to_string()),
            "align" => number(value).map(|v| p.tlp_align = Some(v)).map_err(|e| e.to_string()),
            "tags" => number(value).map(|v| p.tag_bits = v).map_err(|e| e.to_string()),
            "mode" => value.parse().map(|v| p.mode = v).map_err(|e| e.to_string()),
            "op" => value.parse().map(|v| op = v).map_err(|e| e.to_string()),
            "size" => number(value).map(|v| size = v).map_err(|e| e.to_string()),
            "offset" => number(value).map(|v| offset = v).map_err(|e| e.to_string()),
            _ => Err("unknown key".to_string()),
        };
        if let Err(e) = set {
            return bad(&e);
        }
    }
    let cfg = match LinkConfig::new(&p) {
        Ok(c) => c,
        Err(e) => return refused(e.to_string()),
    };
    match stream(&cfg, op, size, offset) {
        Ok(t) => {
            let (rate, raw) = (t.payload.0, raw(&cfg).0);
            if !(rate.is_finite() && rate > 0.0 && rate <= raw * 1.000_001) {
                Verdict::Wrong(format!("{op:?} {size} B at {offset}: {rate} Gb/s on a {raw} Gb/s link"))
            } else {
                Verdict::Accepted
            }
        }
        Err(e) => refused(e.to_string()),
    }
}

pub fn targets() -> Vec<FuzzTarget> {
    vec![
        FuzzTarget::new(
            "sizes",
            &["64,128,256", "1..4096", "64..2048:64", "64..1518:2,9000", "1"],
            &["..", ":", ",", " "],
            sizes,
        ),
        FuzzTarget::new(
            "link-stream",
            &[
                "gen=3 lanes=8 mps=256 mrrs=512 rcb=64 op=rd size=64 offset=0",
                "gen=5 lanes=16 mps=512 mrrs=4096 op=wr size=4096 offset=4095 ecrc=true",
                "gen=6 lanes=4 flit=on mps=128 mrrs=128 op=rdwr size=1500 offset=2",
                "gen=3 lanes=8 mode=pcie-model mps=256 mrrs=512 op=rd size=2048",
                "gen=4 lanes=1 split=rcb rcb=128 addr=32 align=4 tags=10 op=rd size=16777216 offset=7",
            ],
            &[
                "gen=",
                "lanes=",
                "flit=",
                "mps=",
                "mrrs=",
                "rcb=",
                "split=",
                "addr=",
                "ecrc=",
                "align=",
                "tags=",
                "mode=",
                "op=",
                "size=",
                "offset=",
                " ",
                "gen7",
                "on",
                "off",
                "rcb",
                "pcie-model",
            ],
            link_stream,
        ),
    ]
}
