//! One finding of the link checks: how bad, what kind, which function, which hop limits it,
//! what the model says it costs, and a sentence for people.

use crate::demand::Demand;
use pcie_sysfs::Bdf;
use serde::Serialize;

/// How bad a finding is. `check` exits 3 when any finding is a warning or an error.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Info,
    Warning,
    Error,
}

impl Severity {
    pub fn name(self) -> &'static str {
        match self {
            Severity::Info => "info",
            Severity::Warning => "warning",
            Severity::Error => "error",
        }
    }
}

/// What a finding is about (its JSON name is the snake_case of the variant).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// A hop on the path trained below the speed both its ends can do.
    LinkSpeedDowngraded,
    /// A hop on the path trained narrower than both its ends can do.
    LinkWidthDowngraded,
    /// A hop held below the speed both its ends support by its port's Target Link Speed: a
    /// setting, not a fault of training.
    LinkSpeedCapped,
    /// A speed (never width) below the maximum while the device is idle or in a low-power
    /// state: likely power saving, to check again under load.
    LinkPowerSaving,
    /// A link file or register whose value means nothing (`cannot tell`).
    LinkUnknown,
    /// MPS in force below what the device and every hop above it support.
    MpsBelowPath,
    /// A Max Read Request Size that costs reads bandwidth.
    MrrsSmall,
    /// Fewer tags enabled than the device and its completer could use.
    TagsLimited,
    /// ASPM L0s or L1 enabled on a hop of the path.
    AspmEnabled,
    AerCorrectable,
    /// Non-fatal or fatal uncorrectable errors.
    AerUncorrectable,
    /// No NUMA node on a host with several.
    NumaUnknown,
    /// The device's DMAs are translated by the IOMMU (its group's type is `DMA` or `DMA-FQ`).
    IommuTranslated,
    /// Sampled payload (its block devices' and interfaces' counters) within [`crate::BUSY_PCT`]
    /// of what the model says its path carries: the link is the device's bottleneck.
    LinkBusy,
    /// AtomicOps from the device cannot reach the root complex: a port on the path does not
    /// route them, blocks them, or the root port does not complete them.
    AtomicsBlocked,
    /// ACS on a switch's downstream ports sends peer-to-peer traffic between devices below
    /// it up through the root complex, across the switch's upstream link twice.
    P2pRedirected,
    /// A link's speed or width changed several times a minute while watched, or dropped while
    /// its device was busy.
    LinkUnstable,
    /// An NVIDIA GPU replayed TLPs faster than its link would at the specification's bit error
    /// ratio ([`crate::gpu::replay_limit_per_s`]).
    GpuReplays,
}

impl Kind {
    pub const ALL: [Kind; 18] = [
        Kind::LinkSpeedDowngraded,
        Kind::LinkWidthDowngraded,
        Kind::LinkSpeedCapped,
        Kind::LinkPowerSaving,
        Kind::LinkUnknown,
        Kind::MpsBelowPath,
        Kind::MrrsSmall,
        Kind::TagsLimited,
        Kind::AspmEnabled,
        Kind::AerCorrectable,
        Kind::AerUncorrectable,
        Kind::NumaUnknown,
        Kind::IommuTranslated,
        Kind::LinkBusy,
        Kind::AtomicsBlocked,
        Kind::P2pRedirected,
        Kind::LinkUnstable,
        Kind::GpuReplays,
    ];

    /// Whether findings of this kind are priced against what the device can use (its demand).
    pub fn priced_by_demand(self) -> bool {
        matches!(
            self,
            Kind::LinkSpeedDowngraded
                | Kind::LinkSpeedCapped
                | Kind::LinkWidthDowngraded
                | Kind::LinkPowerSaving
                | Kind::MpsBelowPath
                | Kind::MrrsSmall
                | Kind::TagsLimited
        )
    }

    /// The JSON and CSV name (`link_speed_downgraded`).
    pub fn name(self) -> &'static str {
        match self {
            Kind::LinkSpeedDowngraded => "link_speed_downgraded",
            Kind::LinkWidthDowngraded => "link_width_downgraded",
            Kind::LinkSpeedCapped => "link_speed_capped",
            Kind::LinkPowerSaving => "link_power_saving",
            Kind::LinkUnknown => "link_unknown",
            Kind::MpsBelowPath => "mps_below_path",
            Kind::MrrsSmall => "mrrs_small",
            Kind::TagsLimited => "tags_limited",
            Kind::AspmEnabled => "aspm_enabled",
            Kind::AerCorrectable => "aer_correctable",
            Kind::AerUncorrectable => "aer_uncorrectable",
            Kind::NumaUnknown => "numa_unknown",
            Kind::IommuTranslated => "iommu_translated",
            Kind::LinkBusy => "link_busy",
            Kind::AtomicsBlocked => "atomics_blocked",
            Kind::P2pRedirected => "p2p_redirected",
            Kind::LinkUnstable => "link_unstable",
            Kind::GpuReplays => "gpu_replays",
        }
    }
}

/// One finding. `lost_pct` is the model's loss for 4 KiB DMAs in the direction the finding
/// hurts (writes for link and MPS, reads for MRRS and tags); `None` where it costs no bandwidth
/// the model can price (ASPM, AER, NUMA).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Finding {
    pub severity: Severity,
    pub kind: Kind,
    pub bdf: Bdf,
    pub limited_by: Option<Bdf>,
    pub lost_pct: Option<f64>,
    pub message: String,
    /// What the device can use of its link, for the findings priced against it (link, MPS,
    /// MRRS, tags) where it is known: the figure, its source and its basis.
    pub demand: Option<Demand>,
}

/// One finding per link: the functions of one device (a GPU and its HDMI audio, a NIC's
/// ports) share its link, and the devices below a switch share its upstream link, so a link
/// finding each of them raises is one statement about the link; so are AER status bits latched
/// at both ends of one link (the port's receiver and the device's). `findings` sorted worst
/// first; the first of each (kind, link) stays and names the others.
pub(crate) fn one_per_link(findings: Vec<Finding>) -> Vec<Finding> {
    let link_kind = |k: Kind| {
        matches!(
            k,
            Kind::LinkWidthDowngraded
                | Kind::LinkSpeedDowngraded
                | Kind::LinkSpeedCapped
                | Kind::LinkPowerSaving
                | Kind::AerCorrectable
                | Kind::AerUncorrectable
        )
    };
    let key = |f: &Finding| {
        f.limited_by
            .filter(|_| link_kind(f.kind))
            .map(|b| (f.kind, b.domain, b.bus, b.dev))
    };
    let mut out: Vec<Finding> = Vec::with_capacity(findings.len());
    let mut others: Vec<Vec<Bdf>> = Vec::new();
    for f in findings {
        let Some(k) = key(&f) else {
            out.push(f);
            others.push(Vec::new());
            continue;
        };
        match out.iter().position(|g| key(g) == Some(k)) {
            Some(i) => others[i].push(f.bdf),
            None => {
                out.push(f);
                others.push(Vec::new());
            }
        }
    }
    for (f, o) in out.iter_mut().zip(others) {
        if !o.is_empty() {
            let names: Vec<String> = o.iter().map(Bdf::to_string).collect();
            let what = if matches!(f.kind, Kind::AerCorrectable | Kind::AerUncorrectable) {
                "the same link shows them at"
            } else {
                "the same link serves"
            };
            f.message.push_str(&format!("; {what} {}", names.join(", ")));
        }
    }
    out
}

/// How findings name a function: `0000:19:00.0 [10de:2330]`, the address alone without ids.
pub(crate) fn display_name(bdf: Bdf, id: Option<&str>) -> String {
    match id {
        Some(id) => format!("{bdf} [{id}]"),
        None => bdf.to_string(),
    }
}

/// Worst first: severity, then cost, then address and kind.
pub(crate) fn sort_findings(findings: &mut [Finding]) {
    findings.sort_by(|a, b| {
        b.severity
            .cmp(&a.severity)
            .then(b.lost_pct.unwrap_or(0.0).total_cmp(&a.lost_pct.unwrap_or(0.0)))
            .then(a.bdf.cmp(&b.bdf))
            .then(a.kind.cmp(&b.kind))
    });
}
