//! Which events to count and what they measure: event lists resolved (with perf's `{a,b}`
//! groups), the default payload events, bytes per count and metric from the catalogs,
//! and narrow unpolled counters.

use super::{MonitorError, MAX_EVENTS};
use crate::catalog::Origin;
use crate::event_spec::split_event_list;
use crate::{PcieView, PmuEvent, PmuMetric, ResolvedEvent, System};

/// An event to count and the group the user put it in with `{...}`.
#[derive(Debug, Clone)]
pub struct Requested {
    pub ev: ResolvedEvent,
    /// `{1}`, `{2}`, ... in the order the groups were written.
    pub group: Option<String>,
}

impl From<ResolvedEvent> for Requested {
    fn from(ev: ResolvedEvent) -> Requested {
        Requested { ev, group: None }
    }
}

/// Resolve every event list (a PMU base name may give several events, one per PMU instance: a
/// group then becomes one group per instance, so each of its events must reach the same PMUs).
pub fn resolve_events(sys: &System, specs: &[String]) -> Result<Vec<Requested>, MonitorError> {
    let mut events = Vec::new();
    let mut groups = 0;
    for text in specs {
        let pieces = split_event_list(text).map_err(|message| MonitorError::EventList {
            text: text.clone(),
            message,
        })?;
        let mut first_pmus: Vec<(usize, Vec<String>)> = Vec::new();
        for piece in &pieces {
            let resolved = sys.resolve_all(&piece.text)?;
            let group = match piece.group {
                None => None,
                Some(g) => {
                    let pmus: Vec<String> = resolved.iter().map(|r| r.pmu.clone()).collect();
                    match first_pmus.iter().find(|(k, _)| *k == g) {
                        Some((_, first)) if *first != pmus => {
                            return Err(MonitorError::GroupAcrossPmus {
                                text: text.clone(),
                                event: piece.text.clone(),
                                pmus,
                                first: first.clone(),
                            })
                        }
                        Some(_) => {}
                        None => first_pmus.push((g, pmus)),
                    }
                    Some(format!("{{{}}}", groups + g))
                }
            };
            events.extend(resolved.into_iter().map(|ev| Requested {
                ev,
                group: group.clone(),
            }));
            if events.len() > MAX_EVENTS {
                return Err(MonitorError::TooManyEvents);
            }
        }
        groups += pieces.iter().filter_map(|p| p.group).max().unwrap_or(0);
    }
    Ok(events)
}

/// The payload events (catalog metric `rx_bytes`/`tx_bytes` in bytes, no required parameter)
/// of every PCIe PMU: what the live commands count when no events are named.
pub fn payload_events(sys: &System) -> Result<Vec<ResolvedEvent>, MonitorError> {
    let mut out = Vec::new();
    for v in sys.pcie_pmus()? {
        for e in &v.events {
            let payload = e.metric.is_some_and(PmuMetric::is_payload);
            if payload && e.unit.as_deref() == Some("bytes") && e.required_params.is_empty() {
                let spec = match e.origin {
                    Origin::Sysfs => format!("{}/{}/", v.pmu.name, e.name),
                    Origin::Catalog => format!("{}/{}/", v.pmu.name, e.encoding),
                };
                out.push(sys.resolve(&spec)?);
            }
        }
    }
    if out.is_empty() {
        return Err(MonitorError::NoPayloadEvents);
    }
    Ok(out)
}

/// Bytes per count of a payload event: the family catalog's value (which knows each kernel
/// variant's unit), else the kernel's `.scale` with a byte `.unit`; and the catalog's metric.
/// `views` are the system's [`System::pcie_pmus`].
pub fn payload(views: &[PcieView], ev: &ResolvedEvent) -> (Option<f64>, Option<PmuMetric>) {
    if let Some(e) = catalog_event(views, ev) {
        let bpc = if e.unit.as_deref() == Some("bytes") {
            e.bytes_per_count
        } else {
            None
        };
        return (bpc, e.metric);
    }
    let mult = match ev.unit.as_deref() {
        Some("MiB") => Some(1048576.0),
        Some("KiB") => Some(1024.0),
        Some("B" | "Bytes" | "bytes") => Some(1.0),
        _ => None,
    };
    (mult.map(|m| m * ev.scale.unwrap_or(1.0)), None)
}

/// The annotated event a resolved one names, when its PMU is a PCIe PMU.
pub(super) fn catalog_event<'a>(views: &'a [PcieView], ev: &ResolvedEvent) -> Option<&'a PmuEvent> {
    let name = ev.event.as_ref()?;
    views
        .iter()
        .filter(|v| v.pmu.name == ev.pmu)
        .find_map(|v| v.events.iter().find(|e| e.name.eq_ignore_ascii_case(name)))
}

/// Bits of the hardware register behind an event whose driver does not poll it: the
/// pre-upstream DWC driver (`pcie_bdf_*`) reads only the low 32 bits of the payload counter,
/// so its values are accumulated modulo 2^32.
pub(super) fn unpolled_width(ev: &ResolvedEvent) -> Option<u32> {
    ev.pmu.starts_with("pcie_bdf_").then_some(32)
}
