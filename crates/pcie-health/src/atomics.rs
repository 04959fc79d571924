//! Can a device's AtomicOps reach the root complex? The kernel's `pci_enable_atomic_ops_to_root`
//! (amdgpu calls it; ROCm refuses a GPU without it: "PCI rejects atomics") walks from the
//! device up: every switch port (upstream and downstream) must route AtomicOps (Device
//! Capabilities 2 bit 6), no switch upstream port may block them on egress (Device Control 2
//! bit 7: its egress is toward the root), and the root port must complete 32- and 64-bit ones
//! (bits 7 and 8: the root complex executes them). This is the same walk, naming the first port
//! that stops them and the link it sits on.

use crate::finding::{display_name, Finding, Kind, Severity};
use crate::read::Func;
use crate::report::AtomicsRoute;
use pcie_sysfs::{AtomicOps, Bdf, ConfigSpaceError, PortType};

/// What one port does to AtomicOps going up through it.
enum Verdict {
    Passes,
    Blocks(String),
    Unknown(String),
}

fn port_verdict(port: &Func) -> Verdict {
    let kind = match &port.cap {
        Ok(c) => c.port_type,
        Err(ConfigSpaceError::NoPcieCapability) => {
            return Verdict::Blocks("is a conventional PCI bridge (no AtomicOps)".into())
        }
        Err(e) => return Verdict::Unknown(format!("registers unknown: {e}")),
    };
    let Some(a) = port.atomics else {
        return Verdict::Unknown(
            "Device Capabilities 2 unknown (a version-1 capability or a dump without DevCap2)".into(),
        );
    };
    let AtomicOps {
        routing,
        completer32,
        completer64,
        egress_blocked,
        ..
    } = a;
    let pm = |b: bool| if b { '+' } else { '-' };
    match kind {
        PortType::UpstreamPort | PortType::DownstreamPort if !routing => {
            Verdict::Blocks(format!("does not route AtomicOps (DevCap2 AtomicOpsCap: Routing-), as a {}", kind.name()))
        }
        PortType::UpstreamPort if egress_blocked => Verdict::Blocks(
            "blocks AtomicOps on egress toward the root (DevCtl2 AtomicOpsCtl: EgressBlck+)".into(),
        ),
        PortType::RootPort if !(completer32 && completer64) => Verdict::Blocks(format!(
            "does not complete 32- and 64-bit AtomicOps (DevCap2 AtomicOpsCap: 32bit{} 64bit{}): the root complex cannot execute them",
            pm(completer32),
            pm(completer64)
        )),
        _ => Verdict::Passes,
    }
}

/// The route of function `chain.last()`'s AtomicOps up `chain` (root port first); `None` for
/// functions that are not endpoints (bridges, functions without a PCI Express capability).
pub(crate) fn route(funcs: &[Func], chain: &[usize]) -> Option<AtomicsRoute> {
    let device = &funcs[*chain.last()?];
    let kind = device.cap.as_ref().ok()?.port_type;
    if !matches!(
        kind,
        PortType::Endpoint | PortType::LegacyEndpoint | PortType::IntegratedEndpoint
    ) {
        return None;
    }
    let requester_enabled = device.atomics.map(|a| a.requester_enabled);
    let answer = |reach_root, port: Option<Bdf>, reason: Option<String>| AtomicsRoute {
        reach_root,
        port,
        reason,
        requester_enabled,
    };
    if chain.len() == 1 && kind != PortType::IntegratedEndpoint {
        return Some(answer(
            None,
            None,
            Some("its port is not in this tree (as on a virtual machine's root bus): the host's path decides".into()),
        ));
    }
    let mut unknown = None;
    // From the device up, as the kernel walks: the first port that blocks is the answer.
    for &p in chain[..chain.len() - 1].iter().rev() {
        match port_verdict(&funcs[p]) {
            Verdict::Passes => {}
            Verdict::Blocks(why) => return Some(answer(Some(false), Some(funcs[p].bdf()), Some(why))),
            Verdict::Unknown(why) => {
                unknown.get_or_insert((funcs[p].bdf(), why));
            }
        }
    }
    Some(match unknown {
        Some((port, why)) => answer(None, Some(port), Some(why)),
        None => answer(Some(true), None, None),
    })
}

/// The link a blocking port stands on, both ends: a switch's upstream port's link above it,
/// any other port's link below it toward the device.
fn link_of(funcs: &[Func], chain: &[usize], port: Bdf) -> String {
    let Some(k) = chain.iter().position(|&i| funcs[i].bdf() == port) else {
        return port.to_string();
    };
    let up = funcs[chain[k]]
        .cap
        .as_ref()
        .is_ok_and(|c| c.port_type == PortType::UpstreamPort);
    match (up, k.checked_sub(1), chain.get(k + 1)) {
        (true, Some(above), _) => format!("{} \u{2194} {port}", funcs[chain[above]].bdf()),
        (false, _, Some(&below)) => format!("{port} \u{2194} {}", funcs[below].bdf()),
        _ => port.to_string(),
    }
}

/// A finding for a device whose AtomicOps cannot reach the root complex, where that matters:
/// a warning for AMD GPUs and accelerators (ROCm refuses them) and for a device whose driver
/// enabled AtomicOp requests anyway. Other devices (CUDA does not need PCIe atomics) keep the
/// route in their record only.
pub(crate) fn finding(funcs: &[Func], chain: &[usize], route: &AtomicsRoute) -> Option<Finding> {
    let (Some(false), Some(port)) = (route.reach_root, route.port) else {
        return None;
    };
    let f = &funcs[*chain.last()?];
    let class = f.dev.class.map(|c| c >> 16);
    let compute = matches!(class, Some(0x03 | 0x12)) || f.dev.class.is_some_and(|c| c >> 8 == 0x0b40);
    let amd = f.dev.vendor == Some(0x1002);
    let amd = amd && compute;
    if !amd && route.requester_enabled != Some(true) {
        return None;
    }
    let id = f.dev.vendor.zip(f.dev.device).map(|(v, d)| format!("{v:04x}:{d:04x}"));
    let consequence = if amd {
        "the kernel's pci_enable_atomic_ops_to_root fails, and ROCm refuses the GPU (\"PCI rejects atomics\")"
    } else {
        "yet its AtomicOp requests are enabled (DevCtl2 AtomicOpsCtl: ReqEn+): each one fails at that port"
    };
    let message = format!(
        "{}: its AtomicOps cannot reach the root complex: {port} {} (link {}); {consequence}. \
         Another slot (on the CPU's root ports), a switch or BIOS setting that routes AtomicOps, or a platform whose root ports complete them",
        display_name(f.bdf(), id.as_deref()),
        route.reason.as_deref().unwrap_or(""),
        link_of(funcs, chain, port),
    );
    Some(Finding {
        severity: Severity::Warning,
        kind: Kind::AtomicsBlocked,
        bdf: f.bdf(),
        limited_by: Some(port),
        lost_pct: None,
        demand: None,
        message,
    })
}
