//! The checks of one function, each finding priced with the model where it costs bandwidth.
//! Thresholds: a priced finding is a warning from [`WARN_LOST_PCT`] lost, information below;
//! MRRS and tag findings appear from [`MIN_LOST_PCT`] (below that the model sees no cost).

use crate::aer::{AerRates, CORRECTABLE_ERROR_PER_S, CORRECTABLE_WARN_PER_S};
use crate::cost::{lost_pct, rate_name, Prices, Setting, DEFAULT_MPS, DEFAULT_MRRS, DMA_BYTES};
use crate::demand::Demand;
use crate::finding::{display_name, Finding, Kind, Severity};
use crate::path;
use crate::read::Func;
use crate::report::{AerState, FunctionHealth, Hop, Tags, Traffic};
use crate::traffic::BUSY_PCT;
use pcie_sysfs::{PcieCapability, PortType};

/// Lost share of 4 KiB DMA bandwidth from which a priced finding is a warning.
pub const WARN_LOST_PCT: f64 = 5.0;
/// Lost share from which MRRS and tag findings are reported at all.
pub const MIN_LOST_PCT: f64 = 1.0;
/// The config-space checks, skipped together when config space is unreadable.
pub const CONFIG_CHECKS: [Kind; 4] = [
    Kind::MpsBelowPath,
    Kind::MrrsSmall,
    Kind::TagsLimited,
    Kind::AspmEnabled,
];
/// Why they are skipped without root.
pub const NEEDS_ROOT: &str = "config space past byte 64 is readable only by root";

/// What every function's checks share.
pub(crate) struct Host<'a> {
    pub funcs: &'a [Func],
    pub parents: Vec<Option<usize>>,
    /// Whether any function sits below each function (an empty slot's port trains no link).
    pub occupied: Vec<bool>,
    pub aspm_policy: Option<String>,
    pub numa_nodes: usize,
    pub rates: Option<Vec<AerRates>>,
    /// Each function's block and network traffic (pcie-health's traffic module).
    pub traffic: Vec<Option<Traffic>>,
    pub prices: Prices,
}

fn cost_severity(lost: f64) -> Severity {
    if lost >= WARN_LOST_PCT {
        Severity::Warning
    } else {
        Severity::Info
    }
}

fn pct(lost: f64) -> String {
    if lost < 9.95 {
        format!("\u{2212}{lost:.1} %")
    } else {
        format!("\u{2212}{lost:.0} %")
    }
}

/// Gb/s with three significant digits (`1.86`, `27.9`, `224`): enough that two figures a few
/// percent apart read apart.
pub(crate) fn gbps(x: f64) -> String {
    if x >= 99.95 {
        format!("{x:.0}")
    } else if x >= 9.995 {
        format!("{x:.1}")
    } else {
        format!("{x:.2}")
    }
}

/// Whether a function can master DMA, so that its NUMA node places memory it moves: not a
/// bridge, host bridge, memory controller or performance-counter function, nor a system
/// peripheral without a driver of its own (uncore: caching agents, QPI, address map, bound to
/// no driver or to an uncore/EDAC one). A system peripheral with its driver (Intel DSA's idxd)
/// and unknown classes count.
fn does_dma(class: Option<u32>, driver: Option<&str>) -> bool {
    match class.map(|c| c >> 16) {
        Some(0x05 | 0x06 | 0x11) => false,
        Some(0x08) => driver.is_some_and(|d| !d.contains("uncore") && !d.contains("edac")),
        _ => true,
    }
}

/// What the device on `f`'s link can use (crate::demand): what each function on the link can
/// use, summed; not known where any of them has no ceiling below its link. (What the device
/// could use beyond that is bounded by its own LnkCap, which the path's capability takes.)
fn demand_of(host: &Host, f: &Func) -> Option<Demand> {
    let b = f.bdf();
    crate::demand::of_link(
        host.funcs
            .iter()
            .filter(|g| {
                let c = g.bdf();
                (c.domain, c.bus, c.dev) == (b.domain, b.bus, b.dev) && !g.dev.is_bridge()
            })
            .map(|g| g.demand.as_ref()),
    )
}

/// The share lost from `best` to `now`, both capped at what the device can use (`demand`): a
/// loss the device's own traffic cannot feel is no loss.
fn felt_pct(now: f64, best: f64, demand: Option<&Demand>) -> f64 {
    match demand.map(|d| d.gbps) {
        Some(d) => lost_pct(now.min(d), best.min(d)),
        None => lost_pct(now, best),
    }
}

/// What a message adds where the device's demand capped the price.
fn demand_note(demand: Option<&Demand>, now: f64, best: f64) -> String {
    match demand {
        Some(d) if d.gbps < best => format!(
            "; {} is {} Gb/s, priced against that{}",
            d.basis,
            // Small ones in full: 0.048, not 0.05.
            if d.gbps < 0.1 {
                format!("{:.3}", d.gbps)
            } else {
                gbps(d.gbps)
            },
            if now >= d.gbps {
                ": its traffic cannot feel this"
            } else {
                ""
            }
        ),
        _ => String::new(),
    }
}

/// The tag sizes in use and possible, with the root port (`completer`) answering 10-bit tags.
fn tags(cap: &PcieCapability, root: Option<&PcieCapability>) -> Tags {
    let t10 = cap.tags10.unwrap_or_default();
    let enabled_bits = if t10.requester_enabled {
        10
    } else if cap.ext_tag_enabled {
        8
    } else {
        5
    };
    let completer = root.and_then(|r| r.tags10).is_some_and(|t| t.completer);
    let possible_bits = if t10.requester && completer {
        10
    } else if cap.ext_tag_supported {
        8
    } else {
        5
    };
    Tags {
        enabled_bits,
        possible_bits: possible_bits.max(enabled_bits),
    }
}

struct Subject<'a> {
    f: &'a Func,
    name: String,
    findings: Vec<Finding>,
    /// What the device on its link can use: kept with each finding priced against it.
    demand: Option<Demand>,
}

impl Subject<'_> {
    fn add(
        &mut self,
        severity: Severity,
        kind: Kind,
        limited_by: Option<pcie_sysfs::Bdf>,
        lost: Option<f64>,
        message: String,
    ) {
        self.findings.push(Finding {
            severity,
            kind,
            bdf: self.f.bdf(),
            limited_by,
            lost_pct: lost,
            message,
            demand: self.demand.clone().filter(|_| kind.priced_by_demand()),
        });
    }
}

/// The record and findings of function `i`.
pub(crate) fn function(host: &Host, i: usize) -> (FunctionHealth, Vec<Finding>) {
    let f = &host.funcs[i];
    let chain = path::chain(&host.parents, i);
    let cap = f.cap.as_ref().ok();
    let mps = cap.map(|c| c.control.mps);
    let hops = path::hops(host.funcs, &chain, mps.unwrap_or(DEFAULT_MPS), &host.prices);
    let limiting = path::limiting(&hops).cloned();
    let capable_hop = hops.iter().filter(|h| h.capable_gbps.is_some()).min_by(|a, b| {
        a.capable_gbps
            .partial_cmp(&b.capable_gbps)
            .unwrap_or(std::cmp::Ordering::Equal)
    });
    let id = match (f.dev.vendor, f.dev.device) {
        (Some(v), Some(d)) => Some(format!("{v:04x}:{d:04x}")),
        _ => None,
    };
    let name = display_name(f.bdf(), id.as_deref());
    let need = demand_of(host, f);
    let demand = need.as_ref();
    let mut s = Subject {
        f,
        name,
        findings: Vec::new(),
        demand: need.clone(),
    };
    let is_bridge = f.dev.is_bridge();
    let chain_caps: Vec<_> = chain.iter().map(|&j| &host.funcs[j].cap).collect();
    let needs_root = chain_caps.iter().any(|c| c.as_ref().is_err_and(|e| e.needs_root()));
    let path_mps = chain_caps
        .iter()
        .map(|c| c.as_ref().ok().map(|c| c.control.mps_supported))
        .try_fold(u32::MAX, |m, x| x.map(|x| m.min(x)))
        .filter(|&m| m != u32::MAX);
    // The top port of the path sends writes and completions to every device below it at its own
    // MPS, so firmware and Linux's default and safe policies run a hierarchy at the smallest MPS
    // any device in it supports (only `pcie_bus_perf` keeps the ports higher, and caps MRRS
    // instead): a 128 B NIC behind a chipset switch holds its siblings at 128 B, no setting to raise.
    let hierarchy_mps = chain.first().filter(|_| chain.len() > 1).and_then(|&top| {
        (0..host.funcs.len())
            .filter(|&j| j != top && path::chain(&host.parents, j).first() == Some(&top))
            .filter_map(|j| host.funcs[j].cap.as_ref().ok().map(|c| c.control.mps_supported))
            .min()
    });
    let path_mps = path_mps.map(|m| hierarchy_mps.map_or(m, |h| m.min(h)));
    let root_cap = chain_caps
        .first()
        .and_then(|c| c.as_ref().ok())
        .filter(|c| c.port_type == PortType::RootPort);
    let tag_state = cap.map(|c| tags(c, root_cap));
    let cannot_tell = f.cannot_tell();
    let mut skipped = Vec::new();

    if !is_bridge && !hops.is_empty() {
        link_findings(
            &mut s,
            host,
            (limiting.as_ref(), capable_hop),
            mps.unwrap_or(DEFAULT_MPS),
            demand,
        );
        target_cap_finding(&mut s, host, &hops, mps.unwrap_or(DEFAULT_MPS), demand);
        if needs_root {
            skipped = CONFIG_CHECKS.iter().map(|k| k.name().to_string()).collect();
        } else if let Some(c) = cap {
            let rate = limiting.as_ref().and_then(|h| Some((h.current_gts?, h.current_width?)));
            // A virtual machine's device: the port above, whose MPS bounds the path, is unseen.
            // In a partial dump (off a root bus) that port is simply not pasted: no MPS finding.
            let port_hidden = hops.first().is_some_and(|h| h.upstream.bdf.is_none());
            let path_mps = if port_hidden && path::off_root_bus(f) {
                (None, false)
            } else {
                (path_mps, port_hidden)
            };
            settings_findings(&mut s, &host.prices, c, (rate, demand), path_mps, tag_state);
            aspm_finding(&mut s, host, &chain);
        }
        iommu_finding(&mut s);
    }
    // A port with nothing below it has no link to train: its "Unknown" speed and width 0 are
    // an empty slot, kept in the record but not a finding.
    let empty_slot = is_bridge && !host.occupied[i];
    if !cannot_tell.is_empty() && !empty_slot {
        let msg = format!("{}: {}", s.name, cannot_tell.join("; "));
        s.add(Severity::Info, Kind::LinkUnknown, None, None, msg);
    }
    // The link this function's AER receiver sits on: a port's is the link below it.
    let link = if is_bridge {
        host.parents
            .iter()
            .position(|p| *p == Some(i))
            .map(|c| host.funcs[c].bdf())
    } else {
        f.has_link().then(|| f.bdf())
    };
    let aer = aer_findings(&mut s, host.rates.as_ref().map(|r| &r[i]), link);
    let traffic = host.traffic[i]
        .clone()
        .map(|t| traffic_finding(&mut s, &host.prices, t, limiting.as_ref(), cap, tag_state));
    if !is_bridge && does_dma(f.dev.class, f.dev.driver.as_deref()) && host.numa_nodes > 1 && f.dev.numa_node.is_none()
    {
        let msg = format!(
            "{}: no NUMA node on a host with {} nodes: the kernel cannot place its memory and interrupts near it (firmware _PXM missing)",
            s.name, host.numa_nodes
        );
        s.add(Severity::Warning, Kind::NumaUnknown, None, None, msg);
    }
    let atomics = crate::atomics::route(host.funcs, &chain);
    s.findings.extend(
        atomics
            .as_ref()
            .and_then(|r| crate::atomics::finding(host.funcs, &chain, r)),
    );
    let record = FunctionHealth {
        bdf: f.bdf(),
        id,
        class: f.dev.class.map(|c| format!("{c:06x}")),
        driver: f.dev.driver.clone(),
        port_type: cap.map(|c| c.port_type.name()),
        is_bridge,
        numa_node: f.dev.numa_node,
        local_cpus: f.local_cpus.clone(),
        power_state: f.power_state.clone(),
        runtime_status: f.runtime_status.clone(),
        iommu_group_type: f.iommu_group_type.clone(),
        link: f.has_link().then(|| f.end()),
        limited_by: limiting.as_ref().map(|h| h.bdf),
        available_gbps: limiting.as_ref().and_then(|h| h.available_gbps),
        capable_gbps: capable_hop.and_then(|h| h.capable_gbps),
        demand_gbps: demand.map(|d| d.gbps),
        demand: need.clone(),
        path: hops,
        mps,
        mps_supported: cap.map(|c| c.control.mps_supported),
        path_mps,
        mrrs: cap.map(|c| c.control.mrrs),
        tags: tag_state,
        aspm: cap.and_then(|c| c.link).map(|l| l.aspm_enabled.name().to_string()),
        has_aer: f.has_aer,
        aer,
        traffic,
        cannot_tell,
        skipped,
        atomics,
    };
    (record, s.findings)
}

/// Whether a display controller shares the link whose downstream end is `bdf` (a GPU and its
/// HDMI audio function): the link idles with the GPU.
fn display_on_link(host: &Host, bdf: pcie_sysfs::Bdf) -> bool {
    host.funcs.iter().any(|g| {
        let b = g.bdf();
        (b.domain, b.bus, b.dev) == (bdf.domain, bdf.bus, bdf.dev) && g.dev.class.is_some_and(|c| c >> 16 == 0x03)
    })
}

fn link_findings(
    s: &mut Subject,
    host: &Host,
    (limiting, capable): (Option<&Hop>, Option<&Hop>),
    mps: u32,
    demand: Option<&Demand>,
) {
    let (Some(l), Some(c)) = (limiting, capable) else {
        return;
    };
    let (Some(mut avail), Some(cap)) = (l.available_gbps, c.capable_gbps) else {
        return;
    };
    if avail >= cap * (1.0 - 1e-9) {
        return;
    }
    let width_lost = matches!((l.current_width, l.capable_width), (Some(w), Some(m)) if w < m);
    let speed_lost = matches!((l.current_gts, l.capable_gts), (Some(g), Some(m)) if g < m);
    let idle = s.f.low_power() || display_on_link(host, l.bdf);
    // An idle device's speed drop is power saving: its width finding prices the width alone.
    let width_only = width_lost && speed_lost && idle;
    if width_only {
        if let Some(w) = path::priced(&host.prices, l.capable_gts, l.current_width, mps) {
            avail = w;
        }
    }
    let lost = felt_pct(avail, cap, demand);
    // A link whose port is not in a partial dump is seen from one end: the port may allow no
    // more, so the loss is what the device's end shows, not a fault found.
    let one_end = l.upstream.bdf.is_none() && path::off_root_bus(s.f);
    let severity = if one_end { Severity::Info } else { cost_severity(lost) };
    let (kind, severity) = if width_lost {
        (Kind::LinkWidthDowngraded, severity)
    } else if idle {
        (Kind::LinkPowerSaving, Severity::Info)
    } else {
        (Kind::LinkSpeedDowngraded, severity)
    };
    let now = if width_only {
        format!(
            "{} (width priced alone, at {}; the speed is likely power saving)",
            rate_name(l.current_gts, l.current_width),
            rate_name(l.capable_gts, l.current_width)
        )
    } else {
        rate_name(l.current_gts, l.current_width)
    };
    let mut msg = format!(
        "{} runs {} (limited by {}, {}) where {} is possible: {} KiB DMA writes {} Gb/s of {} ({})",
        s.name,
        now,
        l.bdf,
        l.role,
        rate_name(c.capable_gts, c.capable_width),
        DMA_BYTES / 1024,
        gbps(avail),
        gbps(cap),
        pct(lost)
    );
    msg.push_str(&demand_note(demand, avail, cap));
    if one_end {
        msg.push_str("; that port may allow no more: a dump with its record can tell");
    }
    if kind == Kind::LinkPowerSaving {
        msg.push_str(&format!(
            "; likely power saving ({}): check again under load",
            s.f.power_state
                .iter()
                .chain(&s.f.runtime_status)
                .cloned()
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    s.add(severity, kind, Some(l.bdf), Some(lost), msg);
}

/// A link on the path that its port's Target Link Speed holds below what both its ends
/// support: a setting (firmware's, or setpci's), not a training fault. Priced as what the
/// path would carry at the supported speed against what it carries capped (another hop may
/// bound the path anyway: then it costs nothing).
fn target_cap_finding(s: &mut Subject, host: &Host, hops: &[Hop], mps: u32, demand: Option<&Demand>) {
    let Some(h) = hops.iter().filter(|h| h.supported_gts.is_some()).min_by(|a, b| {
        a.capable_gbps
            .unwrap_or(f64::MAX)
            .total_cmp(&b.capable_gbps.unwrap_or(f64::MAX))
    }) else {
        return;
    };
    let path_now = hops.iter().filter_map(|h| h.capable_gbps).fold(f64::MAX, f64::min);
    let uncapped = |k: &Hop| match k.supported_gts {
        Some(g) => path::priced(&host.prices, Some(g), k.capable_width, mps),
        None => k.capable_gbps,
    };
    let path_free = hops.iter().filter_map(uncapped).fold(f64::MAX, f64::min);
    if path_now == f64::MAX || path_free == f64::MAX {
        return;
    }
    let lost = felt_pct(path_now, path_free, demand);
    let (Some(port), Some(t)) = (h.upstream.bdf, h.capable_gts) else {
        return;
    };
    let link = if h.bdf == s.f.bdf() {
        h.role.clone()
    } else {
        format!("{} ({})", h.role, h.bdf)
    };
    let mut msg = format!(
        "{}: {link} is held at {} by {port}'s Target Link Speed (Link Control 2) where both ends support {}: \
         a firmware or setpci setting, not a training fault (raise it and retrain the link); {} KiB DMA writes \
         {} Gb/s of {} ({})",
        s.name,
        rate_name(Some(t), h.capable_width),
        rate_name(h.supported_gts, h.capable_width),
        DMA_BYTES / 1024,
        gbps(path_now),
        gbps(path_free),
        pct(lost)
    );
    msg.push_str(&demand_note(demand, path_now, path_free));
    s.add(cost_severity(lost), Kind::LinkSpeedCapped, Some(h.bdf), Some(lost), msg);
}

/// The traffic's capacities through the path as it runs (see [`Traffic`]) and, where it was
/// sampled, a `link_busy` finding for a direction whose busiest interval came within
/// [`BUSY_PCT`] of its capacity.
fn traffic_finding(
    s: &mut Subject,
    prices: &Prices,
    mut t: Traffic,
    limiting: Option<&Hop>,
    cap: Option<&PcieCapability>,
    tags: Option<Tags>,
) -> Traffic {
    let rate = limiting.and_then(|h| Some((h.current_gts?, h.current_width?)));
    let reads = rate.and_then(|(gts, lanes)| {
        let setting = Setting {
            gts,
            lanes,
            mps: cap.map_or(DEFAULT_MPS, |c| c.control.mps),
            mrrs: cap.map_or(DEFAULT_MRRS, |c| c.control.mrrs),
            tag_bits: tags.map_or(8, |t| t.enabled_bits),
        };
        prices.reads(&setting, DMA_BYTES)
    });
    t.upstream_capacity_gbps = limiting.and_then(|h| h.available_gbps);
    t.downstream_capacity_gbps = reads;
    let directions = [
        (
            t.upstream_peak_gbps,
            t.upstream_capacity_gbps,
            "device to host",
            "4 KiB DMA writes",
        ),
        (
            t.downstream_peak_gbps,
            t.downstream_capacity_gbps,
            "host to device",
            "4 KiB DMA reads",
        ),
    ];
    for (peak, capacity, way, what) in directions {
        let (Some(p), Some(c)) = (peak, capacity.filter(|&c| c > 0.0)) else {
            continue;
        };
        let share = p / c * 100.0;
        if share >= BUSY_PCT {
            let msg = format!(
                "{} ({}): {p:.1} Gb/s {way} at its busiest interval, {share:.0} % of what the model gives {what} through its path ({c:.1} Gb/s at {}): the link is the device's bottleneck",
                s.name,
                t.devices.join(", "),
                rate_name(rate.map(|r| r.0), rate.map(|r| r.1))
            );
            s.add(Severity::Info, Kind::LinkBusy, limiting.map(|h| h.bdf), None, msg);
        }
    }
    t
}

fn settings_findings(
    s: &mut Subject,
    prices: &Prices,
    c: &PcieCapability,
    (rate, demand): (Option<(f64, u32)>, Option<&Demand>),
    (path_mps, port_hidden): (Option<u32>, bool),
    tags: Option<Tags>,
) {
    let setting = |mps, mrrs, tag_bits| {
        rate.map(|(gts, lanes)| Setting {
            gts,
            lanes,
            mps,
            mrrs,
            tag_bits,
        })
    };
    let (mps, mrrs) = (c.control.mps, c.control.mrrs);
    let bits = tags.map_or(8, |t| t.enabled_bits);
    let tag_bits = |b: u32| if b == 5 || b == 8 || b == 10 { b } else { 8 };
    if let Some(best) = path_mps.filter(|&p| mps < p) {
        let now = setting(mps, mrrs, tag_bits(bits)).and_then(|x| prices.writes(&x));
        let could = setting(best, mrrs, tag_bits(bits)).and_then(|x| prices.writes(&x));
        let lost = now.zip(could).map(|(n, b)| felt_pct(n, b, demand));
        let figures = now.zip(could).map_or(String::new(), |(n, b)| {
            format!(
                ": 4 KiB DMA writes {} Gb/s of {} ({}){}",
                gbps(n),
                gbps(b),
                pct(felt_pct(n, b, demand)),
                demand_note(demand, n, b)
            )
        });
        if port_hidden {
            // The host's root port may allow less: information, not a setting to raise blindly.
            let msg = format!(
                "{} MPS {mps} B where it supports {best} B; the port above it is not in this tree (a virtual \
                 machine's root bus), so whether the path allows {best} B is the host's to tell{figures}",
                s.name
            );
            s.add(Severity::Info, Kind::MpsBelowPath, None, lost, msg);
        } else {
            let msg = format!(
                "{} MPS {mps} B where it, every port above it and every device below its root port support {best} B{figures}",
                s.name
            );
            s.add(cost_severity(lost.unwrap_or(0.0)), Kind::MpsBelowPath, None, lost, msg);
        }
    }
    let reads_at = |mrrs, b| setting(mps, mrrs, tag_bits(b));
    if let (Some(now), Some(best)) = (
        reads_at(mrrs, bits).and_then(|x| prices.reads(&x, DMA_BYTES)),
        reads_at(4096, bits).and_then(|x| prices.reads(&x, DMA_BYTES)),
    ) {
        let lost = felt_pct(now, best, demand);
        if lost >= MIN_LOST_PCT {
            let msg = format!(
                "{} MRRS {mrrs} B: with {bits}-bit tags, 4 KiB DMA reads {} Gb/s of {} at MRRS 4096 ({}){}",
                s.name,
                gbps(now),
                gbps(best),
                pct(lost),
                demand_note(demand, now, best)
            );
            s.add(cost_severity(lost), Kind::MrrsSmall, None, Some(lost), msg);
        }
    }
    let Some(t) = tags.filter(|t| t.enabled_bits < t.possible_bits) else {
        return;
    };
    let read = |b, size| reads_at(mrrs, b).and_then(|x| prices.reads(&x, size));
    if let (Some(n4), Some(b4), Some(n64), Some(b64)) = (
        read(t.enabled_bits, DMA_BYTES),
        read(t.possible_bits, DMA_BYTES),
        read(t.enabled_bits, 64),
        read(t.possible_bits, 64),
    ) {
        let (lost, lost64) = (felt_pct(n4, b4, demand), felt_pct(n64, b64, demand));
        if lost.max(lost64) >= MIN_LOST_PCT {
            let msg = format!(
                "{} uses {}-bit tags where {}-bit are possible: 4 KiB DMA reads {} Gb/s of {} ({}), 64 B reads {} of {} ({})",
                s.name,
                t.enabled_bits,
                t.possible_bits,
                gbps(n4),
                gbps(b4),
                pct(lost),
                gbps(n64),
                gbps(b64),
                pct(lost64)
            );
            s.add(cost_severity(lost), Kind::TagsLimited, None, Some(lost), msg);
        }
    }
}

/// ASPM takes effect on a link only in the states both its ends enable: each (port, function
/// below) pair of the path is one link, named by its port.
fn aspm_finding(s: &mut Subject, host: &Host, chain: &[usize]) {
    let on: Vec<(pcie_sysfs::Bdf, &'static str)> = chain
        .windows(2)
        .filter_map(|pair| {
            let (up, down) = (&host.funcs[pair[0]], &host.funcs[pair[1]]);
            let a = up.cap.as_ref().ok()?.link?.aspm_enabled;
            let b = down.cap.as_ref().ok()?.link?.aspm_enabled;
            let both = pcie_sysfs::Aspm {
                l0s: a.l0s && b.l0s,
                l1: a.l1 && b.l1,
            };
            both.any().then(|| (up.bdf(), both.name()))
        })
        .collect();
    let Some(&(first, _)) = on.first() else { return };
    let at: Vec<String> = on.iter().map(|(b, a)| format!("{a} on the link below {b}")).collect();
    let policy = host.aspm_policy.as_deref().unwrap_or("unknown");
    let msg = format!(
        "{}: ASPM enabled on its path ({}; kernel policy {policy}): each exit from a low-power state adds latency on a busy link",
        s.name,
        at.join(", ")
    );
    s.add(Severity::Info, Kind::AspmEnabled, Some(first), None, msg);
}

/// A device whose DMAs the IOMMU translates: what pcie-bench measured that costs, and the ways
/// out. Information: translation is usually chosen (isolation, VFIO, a hypervisor).
fn iommu_finding(s: &mut Subject) {
    let Some(t) = s.f.iommu_group_type.as_deref().filter(|t| t.starts_with("DMA")) else {
        return;
    };
    let msg = format!(
        "{}: its DMAs are translated by the IOMMU (group type {t}): beyond the IO-TLB's reach each \
         waits for a page walk (pcie-bench, 4 KB IO pages: 64 B reads at ~10 of 26 Gb/s, +250 ns); \
         huge-page DMA buffers, or iommu=pt where isolation is not needed, avoid it",
        s.name
    );
    s.add(Severity::Info, Kind::IommuTranslated, None, None, msg);
}

fn aer_findings(s: &mut Subject, rates: Option<&AerRates>, link: Option<pcie_sysfs::Bdf>) -> AerState {
    let a = &s.f.aer;
    let total =
        |f: &Option<Result<pcie_sysfs::AerCounts, String>>| f.as_ref().and_then(|r| r.as_ref().ok()).map(|c| c.total);
    let by_type: Vec<(String, u64)> = [&a.correctable, &a.nonfatal, &a.fatal]
        .into_iter()
        .filter_map(|f| f.as_ref().and_then(|r| r.as_ref().ok()))
        .flat_map(|c| c.types.iter().filter(|(_, n)| *n > 0).cloned())
        .collect();
    let rp = a.rootport.unwrap_or_default();
    let state = AerState {
        correctable: total(&a.correctable),
        nonfatal: total(&a.nonfatal),
        fatal: total(&a.fatal),
        rootport_correctable: rp[0],
        rootport_nonfatal: rp[1],
        rootport_fatal: rp[2],
        by_type,
        rates: rates.map(|r| r.peak.clone()).unwrap_or_default(),
        status_correctable: s.f.aer_status.map(|st| st.correctable_names()).unwrap_or_default(),
        status_uncorrectable: s.f.aer_status.map(|st| st.uncorrectable_names()).unwrap_or_default(),
    };
    let list = |v: &[(String, u64)]| v.iter().map(|(n, c)| format!("{n} {c}")).collect::<Vec<_>>().join(", ");
    let (nonfatal, fatal) = (state.nonfatal.unwrap_or(0), state.fatal.unwrap_or(0));
    match rates {
        Some(r) if r.uncorrectable_new > 0 => {
            let msg = format!("{}: {} uncorrectable errors while sampled", s.name, r.uncorrectable_new);
            s.add(Severity::Error, Kind::AerUncorrectable, None, None, msg);
        }
        _ if nonfatal + fatal > 0 => {
            let severity = if fatal > 0 { Severity::Error } else { Severity::Warning };
            let msg = format!(
                "{}: {nonfatal} non-fatal and {fatal} fatal uncorrectable errors since boot",
                s.name
            );
            s.add(severity, Kind::AerUncorrectable, None, None, msg);
        }
        _ => {}
    }
    match rates {
        Some(r) if r.correctable_peak > 0.0 => {
            let severity = if r.correctable_peak >= CORRECTABLE_ERROR_PER_S {
                Severity::Error
            } else if r.correctable_peak >= CORRECTABLE_WARN_PER_S {
                Severity::Warning
            } else {
                Severity::Info
            };
            let busy: Vec<String> = r
                .peak
                .iter()
                .filter(|(_, x)| *x > 0.0)
                .map(|(n, x)| format!("{n} {x:.1}/s"))
                .collect();
            let msg = format!(
                "{}: correctable errors at up to {:.1}/s ({}): each is a replayed TLP",
                s.name,
                r.correctable_peak,
                busy.join(", ")
            );
            s.add(severity, Kind::AerCorrectable, None, None, msg);
        }
        None if state.correctable.unwrap_or(0) > 0 => {
            let cor_types: Vec<(String, u64)> = a
                .correctable
                .as_ref()
                .and_then(|r| r.as_ref().ok())
                .map(|c| c.types.iter().filter(|(_, n)| *n > 0).cloned().collect())
                .unwrap_or_default();
            let msg = format!(
                "{}: {} correctable errors since boot ({}): run with -I MS --duration S for their rate",
                s.name,
                state.correctable.unwrap_or(0),
                list(&cor_types)
            );
            s.add(Severity::Info, Kind::AerCorrectable, None, None, msg);
        }
        _ => {}
    }
    status_findings(s, &state, link);
    state
}

/// Where no counter file exists (kernels before 4.17, firmware-first AER, an lspci dump), the
/// AER status registers still show which error types happened since they were last cleared.
/// `link`: the link the function's receiver sits on (its own, or for a port the one below it),
/// named by its downstream end: bits latched at both ends of one link are one finding, the
/// correctable ones and the uncorrectable ones each.
fn status_findings(s: &mut Subject, state: &AerState, link: Option<pcie_sysfs::Bdf>) {
    let sticky = "sticky status bits, set since they were last cleared; no counter says how many";
    if state.correctable.is_none() && !state.status_correctable.is_empty() {
        // The kernel's name for Advisory Non-Fatal reads like an uncorrectable error.
        let note = if state.status_correctable.contains(&"NonFatalErr") {
            ". NonFatalErr is Advisory Non-Fatal: an uncorrectable error the device handled as \
             correctable (often an Unsupported Request or an unexpected completion)"
        } else {
            ""
        };
        let msg = format!(
            "{}: AER status shows correctable errors ({}): {sticky}{note}",
            s.name,
            state.status_correctable.join(", ")
        );
        s.add(Severity::Info, Kind::AerCorrectable, link, None, msg);
    }
    let uncorrectable = &state.status_uncorrectable;
    if state.nonfatal.is_none() && state.fatal.is_none() && !uncorrectable.is_empty() {
        // An Unsupported Request alone is what probing an absent function or BAR leaves.
        let (severity, note) = if uncorrectable.as_slice() == ["UnsupReq"] {
            (
                Severity::Info,
                " (an Unsupported Request alone is often a probe, not a fault)",
            )
        } else {
            (Severity::Warning, "")
        };
        let msg = format!(
            "{}: AER status shows uncorrectable errors ({}){note}: {sticky}",
            s.name,
            uncorrectable.join(", ")
        );
        s.add(severity, Kind::AerUncorrectable, link, None, msg);
    }
}

/// The link below `port` when it carries two or more functions' traffic (`shared`, sampled):
/// a `link_busy` finding at the link when their summed busiest interval comes within
/// [`BUSY_PCT`] of what the model gives it, and no one of them alone does (that one's own
/// finding already names the link). The capacity is the link's as it runs: 4 KiB DMA writes
/// up at the devices' MPS; 4 KiB reads down at MRRS 512 with 10-bit tags, so that the link
/// and not one device's tags bounds them.
pub(crate) fn shared_link(
    host: &Host,
    functions: &[FunctionHealth],
    port: usize,
    shared: &crate::traffic::Shared,
) -> Vec<Finding> {
    let port_bdf = host.funcs[port].bdf();
    let Some((hop, mps)) = shared.functions.iter().find_map(|&i| {
        let hop = functions[i].path.iter().find(|h| h.upstream.bdf == Some(port_bdf))?;
        Some((hop, functions[i].mps.unwrap_or(DEFAULT_MPS)))
    }) else {
        return Vec::new();
    };
    let (Some(gts), Some(lanes)) = (hop.current_gts, hop.current_width) else {
        return Vec::new();
    };
    let setting = |mrrs, tag_bits| Setting {
        gts,
        lanes,
        mps,
        mrrs,
        tag_bits,
    };
    let capacity = [
        host.prices.writes(&setting(DEFAULT_MRRS, 8)),
        host.prices.reads(&setting(DEFAULT_MRRS, 10), DMA_BYTES),
    ];
    let own = |i: usize, up: bool| {
        let t = functions[i].traffic.as_ref();
        t.and_then(|t| {
            if up {
                t.upstream_peak_gbps
            } else {
                t.downstream_peak_gbps
            }
        })
        .unwrap_or(0.0)
    };
    let id = functions
        .iter()
        .find(|f| f.bdf == hop.bdf)
        .and_then(|f| f.id.as_deref());
    let below = display_name(hop.bdf, id);
    let ways = [
        (shared.peak.0, capacity[0], true, "device to host", "4 KiB DMA writes"),
        (shared.peak.1, capacity[1], false, "host to device", "4 KiB DMA reads"),
    ];
    let mut out = Vec::new();
    for (peak, capacity, up, way, what) in ways {
        let Some(c) = capacity.filter(|&c| c > 0.0) else {
            continue;
        };
        let alone = shared.functions.iter().map(|&i| own(i, up)).fold(0.0, f64::max);
        let share = peak / c * 100.0;
        if share < BUSY_PCT || alone / c * 100.0 >= BUSY_PCT {
            continue;
        }
        out.push(Finding {
            severity: Severity::Info,
            kind: Kind::LinkBusy,
            bdf: hop.bdf,
            limited_by: Some(hop.bdf),
            lost_pct: None,
            demand: None,
            message: format!(
                "the link above {below} ({}) is shared by {} functions below {port_bdf} ({}): together {peak:.1} Gb/s {way} at their busiest interval, {share:.0} % of what the model gives {what} through it ({c:.1} Gb/s at {}), where the most any one of them moved was {alone:.1}: the shared link is their bottleneck",
                hop.role,
                shared.functions.len(),
                shared.devices.join(", "),
                rate_name(Some(gts), Some(lanes)),
            ),
        });
    }
    out
}
