//! The events of a run with the root ports they watch and what each port's link can carry.

use super::events::{catalog_event, payload, unpolled_width, Requested};
use crate::accumulate::max_interval_secs;
use crate::counter::event_name;
use crate::{PciDevice, PmuError, PmuMetric, ResolvedEvent, System};
use pcie_model::{stream, Generation, LinkConfig, LinkParams, Op};
use serde::Serialize;

/// What a link can carry, from sysfs `current_link_speed` ("32.0 GT/s PCIe") and width.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct LinkModel {
    /// Raw rate after line encoding.
    pub raw_gbps: f64,
    /// Payload the model gives for streams of 4 KB DMA writes (device → host, Rx at the root
    /// port) and reads (completions host → device, Tx), MPS 256, MRRS 512.
    pub rx_gbps: f64,
    pub tx_gbps: f64,
}

impl LinkModel {
    pub fn of(speed: &str, lanes: u32) -> Option<LinkModel> {
        let gen = Generation::from_sysfs_speed(speed)?;
        let cfg = LinkConfig::new(&LinkParams {
            gen,
            lanes,
            ..LinkParams::default()
        })
        .ok()?;
        Some(LinkModel {
            raw_gbps: gen.gt_per_s() * gen.encoding().efficiency() * lanes as f64,
            rx_gbps: stream(&cfg, Op::Wr, 4096, 0).ok()?.payload.0,
            tx_gbps: stream(&cfg, Op::Rd, 4096, 0).ok()?.payload.0,
        })
    }

    fn of_port(p: &PciDevice) -> Option<LinkModel> {
        LinkModel::of(p.current_link_speed.as_deref()?, p.current_link_width?)
    }

    fn add(self, o: LinkModel) -> LinkModel {
        LinkModel {
            raw_gbps: self.raw_gbps + o.raw_gbps,
            rx_gbps: self.rx_gbps + o.rx_gbps,
            tx_gbps: self.tx_gbps + o.tx_gbps,
        }
    }
}

/// The root port(s) one PMU watches.
#[derive(Debug, Clone, PartialEq)]
pub struct Port {
    /// `0000:30:03.0`, or several joined with `+` when one PMU covers them.
    pub name: String,
    /// `32.0 GT/s PCIe x16` as sysfs shows it.
    pub link: Option<String>,
    /// Sum over the ports; `None` when a port's speed or width is unknown.
    pub model: Option<LinkModel>,
}

/// An event to count with what turns its counts into bytes and link shares.
#[derive(Debug, Clone)]
pub struct Watch {
    pub ev: ResolvedEvent,
    pub bytes_per_count: Option<f64>,
    pub metric: Option<PmuMetric>,
    /// Index into [`Plan::ports`] for PCIe PMUs that name their root ports.
    pub port: Option<usize>,
    /// The user's `{...}` group, or the catalog's: events of one group on one PMU are opened
    /// as one perf event group (HiSilicon's flux/time pairs must count together); a catalog
    /// group also needs the same filter terms.
    pub group: Option<String>,
    /// `group` is the user's.
    pub user_group: bool,
}

/// An event whose narrow, unpolled counter can wrap more than once between two reads when the
/// root port's link runs at its raw rate.
#[derive(Debug, Clone, PartialEq)]
pub struct WrapWarning {
    /// The event as messages name it (`pmu/event/`).
    pub event: String,
    /// Bits of the hardware counter.
    pub width: u32,
    pub bytes_per_count: f64,
    /// Seconds between wraps at `link_gbps`.
    pub wraps_every_s: f64,
    pub link_gbps: f64,
    /// The read interval asked for, in seconds.
    pub read_every_s: f64,
}

impl WrapWarning {
    /// A read interval that sees every wrap: half the wrap period, in whole milliseconds.
    pub fn safe_interval_ms(&self) -> f64 {
        (self.wraps_every_s * 500.0).floor().max(1.0)
    }
}

/// The events to count and the root ports they belong to.
#[derive(Debug, Clone, Default)]
pub struct Plan {
    pub watches: Vec<Watch>,
    pub ports: Vec<Port>,
}

impl Plan {
    pub fn new<R: Into<Requested>>(sys: &System, events: impl IntoIterator<Item = R>) -> Result<Plan, PmuError> {
        let views = sys.pcie_pmus()?;
        let mut plan = Plan::default();
        for requested in events {
            let Requested { ev, group: user } = requested.into();
            let (bytes_per_count, metric) = payload(&views, &ev);
            let rps = views
                .iter()
                .find(|v| v.pmu.name == ev.pmu)
                .map(|v| v.root_ports.as_slice())
                .unwrap_or_default();
            let port = (!rps.is_empty()).then(|| {
                let name = rps.iter().map(|r| r.bdf.to_string()).collect::<Vec<_>>().join("+");
                plan.ports.iter().position(|p| p.name == name).unwrap_or_else(|| {
                    let devs: Vec<&PciDevice> = rps.iter().filter_map(|r| r.port.as_ref()).collect();
                    let model = (devs.len() == rps.len())
                        .then(|| devs.iter().map(|d| LinkModel::of_port(d)).collect::<Option<Vec<_>>>())
                        .flatten()
                        .and_then(|m| m.into_iter().reduce(LinkModel::add));
                    let link = devs
                        .iter()
                        .filter_map(|d| d.link_summary())
                        .collect::<Vec<_>>()
                        .join(" + ");
                    plan.ports.push(Port {
                        name,
                        link: (!link.is_empty()).then_some(link),
                        model,
                    });
                    plan.ports.len() - 1
                })
            });
            let user_group = user.is_some();
            let group = user.or_else(|| catalog_event(&views, &ev).and_then(|e| e.group.clone()));
            plan.watches.push(Watch {
                ev,
                bytes_per_count,
                metric,
                port,
                group,
                user_group,
            });
        }
        Ok(plan)
    }

    /// Events whose narrow, unpolled counter can wrap more than once between reads
    /// `read_every` seconds apart when the root port's link runs at its raw rate.
    pub fn wrap_warnings(&self, read_every: f64) -> Vec<WrapWarning> {
        let mut out = Vec::new();
        for w in &self.watches {
            let (Some(width), Some(bpc)) = (unpolled_width(&w.ev), w.bytes_per_count) else {
                continue;
            };
            let Some(gbps) = w.port.and_then(|p| self.ports[p].model).map(|m| m.raw_gbps) else {
                continue;
            };
            if let Some(limit) = max_interval_secs(width, bpc, gbps) {
                if read_every > limit {
                    out.push(WrapWarning {
                        event: event_name(&w.ev),
                        width,
                        bytes_per_count: bpc,
                        wraps_every_s: limit,
                        link_gbps: gbps,
                        read_every_s: read_every,
                    });
                }
            }
        }
        out
    }
}
