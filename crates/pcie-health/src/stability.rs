//! Links watched over time (`-I MS --duration S`): each interval re-reads every link's speed
//! and width (the downstream function's `current_link_speed` and `current_link_width`) and
//! counts the changes. A link that changes several times a minute flaps (retraining each time:
//! it carries nothing while it retrains; a public report counted 1,415 changes in 2 minutes on
//! idle Blackwell GPUs); one that drops while the devices below it move data has a fault that
//! load brings out. Both are `link_unstable` warnings.

use crate::cost::rate_name;
use crate::finding::{display_name, Finding, Kind, Severity};
use crate::read::Func;
use crate::report::LinkChanges;
use pcie_sysfs::{LinkSpeed, LinkWidth, PortType, SysfsError};

/// Changes a minute (with at least this many changes) from which a link flaps.
pub const UNSTABLE_PER_MIN: f64 = 3.0;
/// Payload Gb/s (either direction, over one interval) below a link from which a drop in its
/// speed or width counts as a drop while busy.
pub const BUSY_DROP_GBPS: f64 = 1.0;

type Rate = (Option<f64>, Option<u32>);

struct Watched {
    /// The function whose files are read, and the port above (`None` on a root bus).
    func: usize,
    port: Option<usize>,
    last: Rate,
    lowest: Rate,
    highest: Rate,
    readings: u32,
    changes: u32,
    drops_while_busy: u32,
    busy_drop: Option<(f64, String)>,
}

/// The links of a host being watched.
pub(crate) struct Links {
    links: Vec<Watched>,
}

fn read(f: &Func) -> Result<Rate, SysfsError> {
    let files = f.dev.files()?;
    let speed = files
        .attr("current_link_speed")?
        .map(|t| LinkSpeed::parse(&t))
        .and_then(|s| s.gts());
    let width = files
        .attr("current_link_width")?
        .map(|t| LinkWidth::parse(&t))
        .and_then(|w| w.lanes());
    Ok((speed, width))
}

fn lower(a: Rate, b: Rate) -> bool {
    a.0.zip(b.0).is_some_and(|(x, y)| x < y) || a.1.zip(b.1).is_some_and(|(x, y)| x < y)
}

impl Links {
    /// Every link with link files, once: one function per device below each port (a GPU and
    /// its audio function share a link), none across a switch's internal bus.
    pub fn start(funcs: &[Func], parents: &[Option<usize>]) -> Links {
        let mut seen = std::collections::HashSet::new();
        let mut links = Vec::new();
        for (i, f) in funcs.iter().enumerate() {
            if f.files.current_speed.is_none() && f.files.current_width.is_none() {
                continue;
            }
            let port = parents[i];
            let internal = port.is_some_and(|p| {
                funcs[p]
                    .cap
                    .as_ref()
                    .is_ok_and(|c| c.port_type == PortType::UpstreamPort)
            });
            let b = f.bdf();
            if internal || !seen.insert((port, b.domain, b.bus, b.dev)) {
                continue;
            }
            let now = f.end();
            let rate = (now.current_gts, now.current_width);
            links.push(Watched {
                func: i,
                port,
                last: rate,
                lowest: rate,
                highest: rate,
                readings: 1,
                changes: 0,
                drops_while_busy: 0,
                busy_drop: None,
            });
        }
        Links { links }
    }

    /// Reads every link again; `below[p]` is the (up, down) Gb/s the functions below port `p`
    /// moved over the interval.
    pub fn interval(&mut self, funcs: &[Func], below: &[(f64, f64)]) -> Result<(), SysfsError> {
        for w in &mut self.links {
            let now = read(&funcs[w.func])?;
            w.readings += 1;
            if now != w.last {
                w.changes += 1;
                let moved = w.port.map_or(0.0, |p| below[p].0.max(below[p].1));
                if lower(now, w.last) && moved >= BUSY_DROP_GBPS {
                    w.drops_while_busy += 1;
                    let text = format!(
                        "dropped from {} to {} while its devices moved {moved:.1} Gb/s",
                        rate_name(w.last.0, w.last.1),
                        rate_name(now.0, now.1)
                    );
                    if w.busy_drop.as_ref().is_none_or(|(m, _)| moved > *m) {
                        w.busy_drop = Some((moved, text));
                    }
                }
            }
            if lower(now, w.lowest) {
                w.lowest = now;
            }
            if lower(w.highest, now) {
                w.highest = now;
            }
            w.last = now;
        }
        Ok(())
    }

    /// The links that changed, and a finding for each that flapped or dropped while busy.
    pub fn finish(self, funcs: &[Func], seconds: f64) -> (Vec<LinkChanges>, Vec<Finding>) {
        let mut out = Vec::new();
        let mut findings = Vec::new();
        for w in self.links.into_iter().filter(|w| w.changes > 0) {
            let f = &funcs[w.func];
            let id = f.dev.vendor.zip(f.dev.device).map(|(v, d)| format!("{v:04x}:{d:04x}"));
            let below = display_name(f.bdf(), id.as_deref());
            let link = match w.port {
                Some(p) => format!("{} \u{2194} {below}", funcs[p].bdf()),
                None => format!("{below}'s own link (its port is not in this tree)"),
            };
            let per_minute = w.changes as f64 * 60.0 / seconds.max(1e-9);
            let flaps = w.changes as f64 >= UNSTABLE_PER_MIN && per_minute >= UNSTABLE_PER_MIN;
            let range = format!(
                "between {} and {}",
                rate_name(w.lowest.0, w.lowest.1),
                rate_name(w.highest.0, w.highest.1)
            );
            let mut why = Vec::new();
            if flaps {
                why.push(format!(
                    "changed speed or width {} times in {seconds:.1} s ({per_minute:.0}/min, {range}): each change retrains the link, which carries nothing meanwhile; idle power management (a GPU driver's dynamic link speed) or a marginal signal",
                    w.changes
                ));
            }
            if let Some((_, drop)) = &w.busy_drop {
                why.push(format!(
                    "{drop} ({} such drops): a link that slows under load is a signal-integrity fault (reseat, riser, cable)",
                    w.drops_while_busy
                ));
            }
            if !why.is_empty() {
                findings.push(Finding {
                    severity: Severity::Warning,
                    kind: Kind::LinkUnstable,
                    bdf: f.bdf(),
                    limited_by: Some(f.bdf()),
                    lost_pct: None,
                    demand: None,
                    message: format!("the link {link} {}", why.join("; and ")),
                });
            }
            out.push(LinkChanges {
                bdf: f.bdf(),
                link,
                readings: w.readings,
                changes: w.changes,
                per_minute,
                lowest: w.lowest,
                highest: w.highest,
                drops_while_busy: w.drops_while_busy,
                busy_drop: w.busy_drop.map(|(_, t)| t),
            });
        }
        (out, findings)
    }
}
