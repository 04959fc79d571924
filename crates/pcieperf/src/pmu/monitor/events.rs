//! Which events to count and what they measure: `-e` text split and resolved (with perf's
//! `{a,b}` groups), the default payload events, bytes per count and metric from the catalogs,
//! and narrow unpolled counters.

use super::*;

/// One event of `-e` text and, when it was written inside `{...}`, which group (from 1).
#[derive(Debug, Clone, PartialEq)]
pub struct Piece {
    pub text: String,
    pub group: Option<usize>,
}

/// Split `-e` text at the commas that separate events, not those between an event's slashes;
/// events inside `{...}` belong to one group, as in `perf stat -e '{a,b}'`.
pub fn split_events(text: &str) -> Result<Vec<Piece>, String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let (mut slashes, mut groups) = (0, 0);
    let mut open: Option<usize> = None;
    // Just after a `}`: the group's last event is out, only a separator may follow.
    let mut closed = false;
    for c in text.chars() {
        let outside = slashes % 2 == 0;
        match c {
            '/' => {
                slashes += 1;
                cur.push(c);
            }
            '{' if outside && open.is_none() && cur.trim().is_empty() && !closed => {
                groups += 1;
                open = Some(groups);
            }
            '{' if outside => return Err("a group opens inside a group or an event; groups do not nest".into()),
            '}' if outside && open.is_some() => {
                end_piece(&mut out, &mut cur, open.take(), false)?;
                closed = true;
            }
            '}' if outside => return Err("'}' closes no group".into()),
            ',' if outside => {
                end_piece(&mut out, &mut cur, open, closed)?;
                closed = false;
                slashes = 0;
            }
            _ => cur.push(c),
        }
    }
    if open.is_some() {
        return Err("a group is not closed with '}'".into());
    }
    end_piece(&mut out, &mut cur, None, closed)?;
    Ok(out)
}

/// The event text in `cur` ends (at a separator, a `}` or the end); after a `}` it must be empty.
fn end_piece(out: &mut Vec<Piece>, cur: &mut String, group: Option<usize>, closed: bool) -> Result<(), String> {
    let text = std::mem::take(cur);
    let text = text.trim();
    match (closed, text.is_empty()) {
        (false, _) => out.push(Piece {
            text: text.to_string(),
            group,
        }),
        (true, true) => {}
        (true, false) => return Err(format!("{text:?} after a group: modifiers on groups are not supported")),
    }
    Ok(())
}

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

/// Resolve every `-e` spec (a PMU base name may give several events, one per PMU instance: a
/// group then becomes one group per instance, so each of its events must reach the same PMUs).
pub fn resolve_events(sys: &System, specs: &[String]) -> Result<Vec<Requested>, CliError> {
    let mut events = Vec::new();
    let mut groups = 0;
    for text in specs {
        let pieces = split_events(text).map_err(|e| usage(format!("-e {text:?}: {e}")))?;
        let mut first_pmus: Vec<(usize, Vec<String>)> = Vec::new();
        for piece in &pieces {
            if piece.text.is_empty() {
                return Err(usage(format!("-e {text:?}: empty event between commas")));
            }
            let resolved = sys.resolve_all(&piece.text)?;
            let group = match piece.group {
                None => None,
                Some(g) => {
                    let pmus: Vec<String> = resolved.iter().map(|r| r.pmu.clone()).collect();
                    match first_pmus.iter().find(|(k, _)| *k == g) {
                        Some((_, first)) if *first != pmus => {
                            return Err(usage(format!(
                                "-e {text:?}: the events of a group must be on the same PMUs: {} is on {}, the group's first event on {}",
                                piece.text,
                                pmus.join(", "),
                                first.join(", ")
                            )))
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
        }
        groups += pieces.iter().filter_map(|p| p.group).max().unwrap_or(0);
    }
    Ok(events)
}

/// The payload events (catalog metric `rx_bytes`/`tx_bytes` in bytes, no required parameter)
/// of every PCIe PMU: what the live commands count without `-e`.
pub fn payload_events(sys: &System, place: &str) -> Result<Vec<ResolvedEvent>, CliError> {
    let mut out = Vec::new();
    for v in sys.pcie_pmus()? {
        for e in &v.events {
            let payload = matches!(e.metric.as_deref(), Some("rx_bytes" | "tx_bytes"));
            if payload && e.unit.as_deref() == Some("bytes") && e.required_params.is_empty() {
                let spec = match e.origin {
                    pcie_pmu::catalog::Origin::Sysfs => format!("{}/{}/", v.pmu.name, e.name),
                    pcie_pmu::catalog::Origin::Catalog => format!("{}/{}/", v.pmu.name, e.encoding),
                };
                out.push(sys.resolve(&spec)?);
            }
        }
    }
    if out.is_empty() {
        return Err(usage(format!(
            "{place}: no PCIe PMU with rx_bytes/tx_bytes payload events here; name events with -e \
             (e.g. -e software/cpu-clock/), see `pcieperf pmu list`"
        )));
    }
    Ok(out)
}

/// Bytes per count of a payload event: the family catalog's value (which knows each kernel
/// variant's unit), else the kernel's `.scale` with a byte `.unit`; and the catalog's metric.
/// `views` are the system's [`System::pcie_pmus`].
pub fn payload(views: &[PcieView], ev: &ResolvedEvent) -> (Option<f64>, Option<String>) {
    if let Some(e) = catalog_event(views, ev) {
        let bpc = if e.unit.as_deref() == Some("bytes") {
            e.bytes_per_count
        } else {
            None
        };
        return (bpc, e.metric.clone());
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
pub(in crate::pmu) fn unpolled_width(ev: &ResolvedEvent) -> Option<u32> {
    ev.pmu.starts_with("pcie_bdf_").then_some(32)
}
