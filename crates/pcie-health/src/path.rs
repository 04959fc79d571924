//! The path from a root port down to a function: each function's parent (its real sysfs
//! directory's parent, or the bridge whose bus range holds its bus), and the links on the
//! way. Between a switch's upstream and downstream ports there is no link, only the switch's
//! internal bus: a pair (port, function below) is a link unless the port is a switch upstream
//! port (from the capability's port type, or, without root, every other bridge counting from
//! the root port).

use crate::cost::{Prices, Setting};
use crate::read::Func;
use crate::report::{Hop, LinkEnd};
use pcie_sysfs::{Bdf, PortType};
use std::collections::HashMap;

/// The deepest a path is followed (PCIe allows far fewer switch levels).
const MAX_DEPTH: usize = 64;

/// Each function's parent function (by index), `None` on a root bus.
pub(crate) fn parents(funcs: &[Func]) -> Vec<Option<usize>> {
    let index: HashMap<Bdf, usize> = funcs.iter().enumerate().map(|(i, f)| (f.bdf(), i)).collect();
    let bridges: Vec<(usize, Bdf, u8, u8)> = funcs
        .iter()
        .enumerate()
        .filter_map(|(i, f)| {
            let (lo, hi) = (f.dev.secondary_bus?, f.dev.subordinate_bus?);
            (f.dev.is_bridge() && lo > f.bdf().bus && lo <= hi).then_some((i, f.bdf(), lo, hi))
        })
        .collect();
    funcs
        .iter()
        .enumerate()
        .map(|(i, f)| {
            if let Some(&p) = f.dev.upstream_bdf().and_then(|b| index.get(&b)) {
                return (p != i).then_some(p);
            }
            // Flat trees: the bridge with the narrowest bus range holding this bus.
            let b = f.bdf();
            bridges
                .iter()
                .filter(|&&(j, pb, lo, hi)| j != i && pb.domain == b.domain && (lo..=hi).contains(&b.bus))
                .max_by_key(|&&(_, _, lo, hi)| (lo, u8::MAX - hi))
                .map(|&(j, ..)| j)
        })
        .collect()
}

/// The functions from the top of the tree down to `i` (root port first, `i` last).
pub(crate) fn chain(parents: &[Option<usize>], i: usize) -> Vec<usize> {
    let mut out = vec![i];
    let mut at = i;
    while let Some(p) = parents[at] {
        if out.len() >= MAX_DEPTH || out.contains(&p) {
            break;
        }
        out.push(p);
        at = p;
    }
    out.reverse();
    out
}

fn min_opt<T: PartialOrd + Copy>(a: Option<T>, b: Option<T>) -> Option<T> {
    match (a, b) {
        (Some(x), Some(y)) => Some(if y < x { y } else { x }),
        (x, None) => x,
        (None, y) => y,
    }
}

pub(crate) fn priced(prices: &Prices, gts: Option<f64>, lanes: Option<u32>, mps: u32) -> Option<f64> {
    prices.writes(&Setting {
        gts: gts?,
        lanes: lanes?,
        mps,
        mrrs: 512,
        tag_bits: 8,
    })
}

/// Whether a function sits off a root bus (bus > 0 of its domain): a port above it exists,
/// so a tree without that port is a partial dump, not a virtual machine's root bus.
pub(crate) fn off_root_bus(f: &Func) -> bool {
    f.bdf().bus != 0
}

/// Whether the top of a path is a function with a link but no port above it in the tree: an
/// endpoint or a switch's upstream port on a root bus, as a virtual machine shows a device
/// passed through to it (the hypervisor's root port is not in the guest's tree). Its link is
/// then known from its own end only, as the kernel's `pcie_bandwidth_available` reads it.
fn link_without_port(top: &Func) -> bool {
    top.has_link()
        && match top.cap.as_ref().map(|c| c.port_type) {
            Ok(t) => matches!(
                t,
                PortType::Endpoint | PortType::LegacyEndpoint | PortType::UpstreamPort
            ),
            Err(_) => !top.dev.is_bridge(),
        }
}

fn hop(below: &Func, role: String, up: LinkEnd, prices: &Prices, mps: u32) -> Hop {
    let down = below.end();
    let current_gts = min_opt(up.current_gts, down.current_gts);
    let current_width = min_opt(up.current_width, down.current_width);
    let supported = min_opt(up.max_gts, down.max_gts);
    // A port trains its link to its Target Link Speed at most (Link Control 2): what the
    // link can reach counts it, and what both ends could do beyond it is a setting's cost.
    let capped = up.target_gts.filter(|&t| t > 0.0 && supported.is_some_and(|s| t < s));
    let capable_gts = capped.or(supported);
    let capable_width = min_opt(up.max_width, down.max_width);
    Hop {
        bdf: below.bdf(),
        role,
        available_gbps: priced(prices, current_gts, current_width, mps),
        capable_gbps: priced(prices, capable_gts, capable_width, mps),
        upstream: up,
        downstream: down,
        current_gts,
        current_width,
        capable_gts,
        capable_width,
        supported_gts: capped.and(supported),
    }
}

/// The links on the path `chain` (indices into `funcs`), root port first, priced at `mps`.
pub(crate) fn hops(funcs: &[Func], chain: &[usize], mps: u32, prices: &Prices) -> Vec<Hop> {
    let device = *chain.last().expect("a chain holds its function");
    let mut out = Vec::new();
    let top = &funcs[chain[0]];
    if link_without_port(top) {
        let whose = if chain[0] == device {
            "its own link"
        } else {
            "the switch's upstream link"
        };
        let role = if off_root_bus(top) {
            format!("{whose}; its port is not in this dump")
        } else {
            format!("{whose}; its port is not in this tree, as on a virtual machine's root bus")
        };
        out.push(hop(top, role, LinkEnd::default(), prices, mps));
    }
    for (k, pair) in chain.windows(2).enumerate() {
        let (port, below) = (&funcs[pair[0]], &funcs[pair[1]]);
        let internal = match port.cap.as_ref().map(|c| c.port_type) {
            Ok(PortType::UpstreamPort) => true,
            Ok(_) => false,
            Err(_) => k % 2 == 1,
        };
        if internal || !(port.has_link() || below.has_link()) {
            continue;
        }
        let role = if pair[1] == device {
            "its own link".to_string()
        } else if below.cap.as_ref().is_ok_and(|c| c.port_type == PortType::UpstreamPort) {
            "the switch's upstream link".to_string()
        } else {
            format!("the link above {}", below.bdf())
        };
        out.push(hop(below, role, port.end(), prices, mps));
    }
    out
}

/// The hop that limits the path: the lowest available bandwidth, nearest the device on a tie
/// (the kernel's `pcie_bandwidth_available` walks up from the device the same way).
pub(crate) fn limiting(hops: &[Hop]) -> Option<&Hop> {
    let mut best: Option<&Hop> = None;
    for h in hops.iter().rev() {
        let Some(a) = h.available_gbps else { continue };
        if best.is_none_or(|b| b.available_gbps.is_some_and(|ba| a < ba)) {
            best = Some(h);
        }
    }
    best
}
