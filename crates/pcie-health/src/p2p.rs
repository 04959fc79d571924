//! Peer-to-peer between devices below one switch: GPUs, NICs and NVMe drives that talk to each
//! other (GPUDirect P2P and RDMA, NVMe p2pdma) do so inside the switch unless Access Control
//! Services on the switch's downstream ports redirect their requests up to the root complex
//! (P2P Request Redirect: the kernel enables it on every port that has it when an IOMMU is on,
//! for isolation). Redirected, each transfer crosses the switch's upstream link twice, up and
//! back down, where it shares the link with both directions of the other pairs and with every
//! device's host traffic; the root complex's own peer forwarding is often slower still (the
//! model does not know it). Priced with the model: 4 KiB DMA writes both ways at once between
//! the pair, through the switch and through the root complex.

use crate::finding::{display_name, Finding, Kind, Severity};
use crate::path::chain;
use crate::read::Func;
use crate::report::{FunctionHealth, P2pPair};
use pcie_sysfs::{Acs, Bdf, PortType};

/// GPUs and accelerators, NICs (Ethernet, InfiniBand), NVMe drives: the devices that move data
/// to each other.
fn peer_kind(f: &Func) -> bool {
    let Some(c) = f.dev.class else { return false };
    matches!(c >> 16, 0x03 | 0x12) || matches!(c >> 8, 0x0200 | 0x0207 | 0x0108 | 0x0b40)
}

/// The slowest hop below `switch` on a function's path (its links inside the switch's reach).
fn below(f: &FunctionHealth, switch: Bdf) -> Option<f64> {
    let at = f.path.iter().position(|h| h.bdf == switch)?;
    f.path[at + 1..]
        .iter()
        .map(|h| h.available_gbps)
        .try_fold(f64::INFINITY, |m, g| g.map(|g| m.min(g)))
        .filter(|m| m.is_finite())
}

/// The pairs below each switch, and a finding per switch whose downstream ports redirect them.
pub(crate) fn pairs(
    funcs: &[Func],
    parents: &[Option<usize>],
    health: &[FunctionHealth],
) -> (Vec<P2pPair>, Vec<Finding>) {
    let peers: Vec<(usize, Vec<usize>)> = (0..funcs.len())
        .filter(|&i| !funcs[i].dev.is_bridge() && peer_kind(&funcs[i]))
        .map(|i| (i, chain(parents, i)))
        .collect();
    // Pairs share the top of their path: only devices below one root port are compared (a
    // host of thousands of drives has a few below each).
    let mut below_top: std::collections::BTreeMap<usize, Vec<&(usize, Vec<usize>)>> = Default::default();
    for p in &peers {
        below_top.entry(p.1[0]).or_default().push(p);
    }
    let mut out = Vec::new();
    for group in below_top.values() {
        for (x, p) in group.iter().enumerate() {
            for q in &group[x + 1..] {
                let ((a, ca), (b, cb)) = ((p.0, &p.1), (q.0, &q.1));
                let common = ca.iter().zip(cb).take_while(|(p, q)| p == q).count();
                // Both below one switch: their deepest common function is its upstream port.
                let Some(&s) = ca.get(common.wrapping_sub(1)).filter(|_| common > 0) else {
                    continue;
                };
                if common >= ca.len() || common >= cb.len() {
                    continue;
                }
                if funcs[s].cap.as_ref().map(|c| c.port_type) != Ok(PortType::UpstreamPort) {
                    continue;
                }
                let (da, db) = (&funcs[ca[common]], &funcs[cb[common]]);
                let unread = [da, db].iter().any(|p| p.cap.is_err() || p.has_aer.is_none());
                let redirected_by: Vec<Bdf> = [da, db]
                    .iter()
                    .filter(|p| p.acs.is_some_and(|x| x.enabled(Acs::REQUEST_REDIRECT)))
                    .map(|p| p.bdf())
                    .collect();
                let route = if !redirected_by.is_empty() {
                    "root_complex"
                } else if unread {
                    "unknown"
                } else {
                    "switch"
                };
                let switch = funcs[s].bdf();
                let (ha, hb) = (&health[a], &health[b]);
                let inside = below(ha, switch).zip(below(hb, switch)).map(|(p, q)| p.min(q));
                let uplink = ha.path.iter().find(|h| h.bdf == switch).and_then(|h| h.available_gbps);
                out.push(P2pPair {
                    a: funcs[a].bdf(),
                    b: funcs[b].bdf(),
                    switch,
                    route,
                    redirected_by,
                    switch_gbps: inside,
                    root_complex_gbps: inside.zip(uplink).map(|(i, u)| i.min(u / 2.0)),
                });
            }
        }
    }
    let mut findings = Vec::new();
    let mut switches: Vec<Bdf> = out
        .iter()
        .filter(|p| p.route == "root_complex")
        .map(|p| p.switch)
        .collect();
    switches.sort();
    switches.dedup();
    for s in switches {
        findings.push(redirected(funcs, health, &out, s));
    }
    (out, findings)
}

/// One finding for the redirected pairs below switch `s`, naming its upstream link.
fn redirected(funcs: &[Func], health: &[FunctionHealth], pairs: &[P2pPair], s: Bdf) -> Finding {
    let mine: Vec<&P2pPair> = pairs
        .iter()
        .filter(|p| p.switch == s && p.route == "root_complex")
        .collect();
    let name = |b: Bdf| {
        let h = health.iter().find(|h| h.bdf == b);
        display_name(b, h.and_then(|h| h.id.as_deref()))
    };
    let mut ports: Vec<Bdf> = mine.iter().flat_map(|p| p.redirected_by.iter().copied()).collect();
    ports.sort();
    ports.dedup();
    let listed: Vec<String> = mine.iter().map(|p| format!("{} \u{2194} {}", p.a, p.b)).collect();
    let hop = health
        .iter()
        .find(|h| h.bdf == mine[0].a)
        .and_then(|h| h.path.iter().find(|x| x.bdf == s));
    let link = match hop.and_then(|h| h.upstream.bdf) {
        Some(up) => format!("{up} \u{2194} {}", name(s)),
        None => format!("the link above {}", name(s)),
    };
    let rate = hop.map_or(String::new(), |h| {
        format!(" ({})", crate::cost::rate_name(h.current_gts, h.current_width))
    });
    let worst = mine
        .iter()
        .filter_map(|p| Some((p.switch_gbps?, p.root_complex_gbps?)))
        .min_by(|x, y| (x.1 / x.0).total_cmp(&(y.1 / y.0)));
    let lost = worst.map(|(i, r)| crate::cost::lost_pct(r, i));
    let price = worst.map_or(String::new(), |(i, r)| {
        format!(
            ": 4 KiB DMA writes both ways at once get at most {r:.1} Gb/s each of the {i:.1} a route inside the switch gives (\u{2212}{:.1} %), before the root complex's own peer forwarding (often slower) and the devices' host traffic, which shares the link",
            crate::cost::lost_pct(r, i)
        )
    });
    let redir: Vec<String> = ports.iter().map(|p| format!("{p} ({})", acs_text(funcs, *p))).collect();
    let message = format!(
        "peer-to-peer between {} below switch {} is redirected to the root complex by ACS on its downstream ports {}: each transfer crosses the switch's upstream link {link}{rate} up and back down{price}. \
         On bare metal where the devices need no isolation from each other: the BIOS's ACS option, or the kernel's pci=disable_acs_redir=PORT;...",
        listed.join(", "),
        name(s),
        redir.join(", "),
    );
    Finding {
        severity: Severity::Info,
        kind: Kind::P2pRedirected,
        bdf: s,
        limited_by: Some(s),
        lost_pct: lost,
        demand: None,
        message,
    }
}

fn acs_text(funcs: &[Func], port: Bdf) -> String {
    let acs = funcs.iter().find(|f| f.bdf() == port).and_then(|f| f.acs);
    acs.map_or(String::new(), |a| format!("ACSCtl {}", a.enabled_names().join(" ")))
}
